"""The columns of the table of partition replicas (``--partitions`` in text; the HTML page's table), as
(key of a partition row, header): one list per command, shared by the CLI and the renderers."""

from __future__ import annotations

SCAN_COLUMNS: list[tuple[str, str]] = [
    ("broker", "broker"),
    ("directory", "partition"),
    ("segments", "segments"),
    ("logStartOffset", "log start"),
    ("logEndOffset", "LEO"),
    ("highWatermark", "HW"),
    ("recoveryPoint", "recovery pt"),
    ("latestEpoch", "epoch"),
    ("findings", "findings"),
]
"""``scan``: one row per partition replica."""

AUDIT_COLUMNS: list[tuple[str, str]] = [
    ("partitionKey", "partition"),
    ("broker", "broker"),
    ("role", "role"),
    ("logEndOffset", "LEO"),
    ("highWatermark", "HW"),
    ("logStartOffset", "log start"),
    ("latestEpoch", "epoch"),
    ("divergence", "diverges at"),
    ("truncationOffset", "truncates to"),
    ("lostRecords", "lost"),
    ("lagRecords", "behind"),
    ("unreadableFrom", "unreadable from"),
]
"""``audit``: one row per partition replica, the cross-replica results beside it."""
