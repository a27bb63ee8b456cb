"""Fire/silent fixtures of scan rules added for hostile inputs (records)."""

from __future__ import annotations

CODES: list[str] = []
"""The scan rule codes whose fixtures live here (added to ``cases.ALL_CODES``)."""
