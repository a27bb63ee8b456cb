"""Commit rows (``rows.COMMIT``) of generated ``__consumer_offsets`` replicas, through the extraction."""

from __future__ import annotations

from auditor.kafka.groups import latest_commits
from auditor.observe.extract import extract_tables
from tests.groups.fixture import (
    Records,
    commit_record,
    group_metadata,
    group_tombstone,
    offset_tombstone,
    offsets_part,
)
from tests.rules.builder import T0, Batch, LogDir, flip


def _rows(root):
    return sorted(
        extract_tables(root)["commit"].to_pylist(), key=lambda r: (r["offset"] is None, r["offset"])
    )


def test_commit_rows_decode_every_record_kind(tmp_path):
    ld = LogDir(tmp_path / "b1")
    p = offsets_part(ld, "billing")
    p.add(
        Records(
            specs=[
                group_metadata("billing"),
                commit_record("billing", "orders", 0, 11, version=1, metadata="m1"),
                commit_record("billing", "orders", 1, 22, epoch=4),
            ]
        ),
        Records(specs=[offset_tombstone("billing", "orders", 1), group_tombstone("billing")]),
        Records(specs=[commit_record("billing", "orders", 2, 50)], transactional=True, producer_id=9),
        Batch(marker="COMMIT", producer_id=9),
        Records(specs=[commit_record("billing", "orders", 2, 60)], transactional=True, producer_id=10),
        Batch(marker="ABORT", producer_id=10),
        Records(specs=[commit_record("billing", "orders", 3, 70)], transactional=True, producer_id=11),
        Records(specs=[(b"\x00", b"junk")]),
    )
    ld.write()
    rows = _rows(ld.root)
    by_offset = {r["offset"]: r for r in rows}
    assert [r["record_type"] for r in rows] == [2, 1, 1, 1, 2, 1, 1, 1, None]
    assert all(r["live"] for r in rows) and all(r["group"] == "billing" for r in rows[:-1])
    v1, v3 = by_offset[1], by_offset[2]
    assert (v1["committed_offset"], v1["commit_metadata"], v1["value_version"]) == (11, "m1", 1)
    assert v1["expire_timestamp"] == T0 + 86_400_000 and v1["committed_leader_epoch"] == -1
    assert (v3["committed_offset"], v3["committed_leader_epoch"], v3["commit_timestamp"]) == (22, 4, T0)
    assert by_offset[3]["tombstone"] and by_offset[3]["committed_offset"] is None
    assert by_offset[4]["tombstone"] and by_offset[4]["record_type"] == 2
    assert [by_offset[o]["txn_state"] for o in (5, 7, 9)] == ["committed", "aborted", "open"]
    assert by_offset[5]["is_transactional"] and by_offset[5]["producer_id"] == 9
    broken = rows[-1]
    assert broken["error"] and "byte" in broken["error"] and str(p.path) in broken["error"]
    replay = latest_commits(rows)
    assert {k[2]: c.offset for k, c in replay.items()} == {0: 11, 2: 50}


def test_batches_recovery_cuts_are_not_live(tmp_path):
    ld = LogDir(tmp_path / "b1", clean=False)
    p = offsets_part(ld, "billing")
    p.recovery_point = 0
    p.add(
        Records(specs=[commit_record("billing", "orders", 0, 10)]),
        Records(specs=[commit_record("billing", "orders", 0, 20)]),
        Records(specs=[commit_record("billing", "orders", 0, 30)]),
    )
    ld.write()
    second = p.written[1]
    flip(p.seg_path(0), second.position + 70)  # a record byte: the CRC no longer matches
    rows = _rows(ld.root)
    assert [(r["offset"], r["live"]) for r in rows] == [(0, True), (2, False)]
    assert {k: c.offset for k, c in latest_commits(rows).items()} == {("billing", "orders", 0): 10}
