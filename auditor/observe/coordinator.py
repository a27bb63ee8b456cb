"""Transaction coordinator rows (``rows.TXN_STATE``) of a ``__transaction_state`` replica."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from auditor.layout.tasks import PartitionTask
from auditor.observe import rows


def transaction_state_rows(
    task: PartitionTask, part_dir: Path, valid_batches: list[tuple[int, int, int]]
) -> pa.Table:
    """One ``rows.TXN_STATE`` row per transaction coordinator record of the replica's valid batches."""
    return rows.TXN_STATE.empty_table()
