"""Group coordinator rows (``rows.COMMIT``) of a ``__consumer_offsets`` replica."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from auditor.layout.tasks import PartitionTask
from auditor.observe import rows


def offset_commit_rows(
    task: PartitionTask, part_dir: Path, valid_batches: list[tuple[int, int, int]]
) -> pa.Table:
    """One ``rows.COMMIT`` row per group coordinator record of the replica's valid batches."""
    return rows.COMMIT.empty_table()
