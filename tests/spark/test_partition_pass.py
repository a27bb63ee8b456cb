"""Pieces of the per-partition pass (``auditor.spark.partition_pass``) the scenarios do not single out."""

from __future__ import annotations

from auditor.spark.pass_divergence import digest_of, epoch_ranges
from auditor.spark.pass_rows import BATCH_FIELDS, BatchRow


def _row(i: int) -> dict:
    return {name: i * 100 + n for n, name in enumerate(BATCH_FIELDS)}


def test_a_batch_row_from_values_equals_one_from_a_mapping():
    row = _row(3)
    a, b = BatchRow(row), BatchRow.of(tuple(row[name] for name in BATCH_FIELDS))
    values = list(row.values())
    assert [getattr(a, n) for n in BATCH_FIELDS] == [getattr(b, n) for n in BATCH_FIELDS] == values
    assert a["sig"] == row["sig"]


def test_epoch_ranges_of_chunk_digests_equal_those_of_the_batches():
    """What Spark's digest gives per chunk, summed per leader epoch, equals the ranges of the batch rows
    themselves (what the driver computes for a small input)."""
    batches = [
        {"broker": 1, "leader_epoch": e, "base_offset": o, "last_offset": o + 1, "records_count": 2,
         "size": 80, "max_timestamp": 1000 + o}
        for e, o in ((0, 0), (0, 2), (0, 4), (1, 6), (1, 8))
    ]  # fmt: skip
    chunks = [digest_of(batches[:2]), digest_of(batches[2:4]), digest_of(batches[4:])]
    assert epoch_ranges([d for c in chunks for d in c]) == epoch_ranges(digest_of(batches))
    (e0, e1) = epoch_ranges(digest_of(batches))
    assert (e0["epoch"], e0["first"], e0["last"], e0["records"], e0["batches"]) == (0, 0, 5, 6, 3)
    assert (e1["first_timestamp"], e1["last_timestamp"]) == (1006, 1008)
