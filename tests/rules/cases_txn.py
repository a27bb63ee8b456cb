"""Fire/silent cases of the transaction rules of ``audit`` (lost markers, hanging transactions).

A case returns an object with ``finding_rows()`` (``rows.FINDING`` dicts of the rules of its scope), the
way ``tests.rules.test_rules`` runs every audit case without Spark."""

from __future__ import annotations

CODES: list[str] = []
"""The rule codes whose fixtures live here (added to ``cases.ALL_CODES``)."""
