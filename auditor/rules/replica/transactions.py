"""KA712-KA714: transactions a truncation breaks (lost markers, hanging transactions)."""

from __future__ import annotations
