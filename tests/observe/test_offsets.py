"""Commit rows (``rows.COMMIT``) of generated ``__consumer_offsets`` replicas, through the extraction."""

from __future__ import annotations

from auditor.kafka.groups import latest_commits
from auditor.observe.extract import extract_tables
from tests.rules.builder import T0, Batch, LogDir, flip
from tests.support.groups import (
    Records,
    classic_group,
    commit_record,
    consumer_join,
    consumer_leave,
    consumer_record,
    group_metadata,
    group_tombstone,
    offset_tombstone,
    offsets_part,
)


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


TOPIC_ID = "JhDLizgWSga6dDKcLH5WFQ"


def test_group_records_of_both_protocols_are_never_offset_commits(tmp_path):
    ld = LogDir(tmp_path / "b1")
    offsets_part(ld, "billing").add(
        Records(specs=[classic_group("billing", 3, {"m-1": [("orders", 0), ("orders", 2)], "m-2": []})]),
        Records(specs=consumer_join("billing", "jCzgEC6nReO32M8qi0xG9Q", "orders", TOPIC_ID, [0, 1, 2])),
        Records(specs=[commit_record("billing", "orders", 1, 7)]),
        Records(specs=consumer_leave("billing", "jCzgEC6nReO32M8qi0xG9Q", 2)),
    )
    ld.write()
    rows = _rows(ld.root)
    assert [r["record_type"] for r in rows] == [2, 5, 4, 3, 7, 6, 8, 1, 8, 7, 5, 4, 3]
    assert all(r["group"] == "billing" and not r["error"] for r in rows)
    assert [r["offset"] for r in rows if r["commit_topic"] is not None] == [7]  # only the commit
    classic = rows[0]
    assert (classic["protocol_type"], classic["generation"], classic["protocol_name"]) == (
        "consumer",
        3,
        "range",
    )
    assert (classic["group_leader"], classic["state_timestamp"]) == ("m-1", T0)
    m1, m2 = classic["members"]
    assert (m1["member_id"], m1["client_id"], m1["session_timeout_ms"], m1["classic"]) == (
        "m-1",
        "client-m-1",
        45000,
        True,
    )
    assert [(a["topic"], a["partition"]) for a in m1["assignment"]] == [("orders", 0), ("orders", 2)]
    assert m1["subscribed_topic_names"] == ["orders"] and m2["assignment"] == []
    member, topics, epoch, target, assignment_epoch, current = rows[1:7]
    (meta,) = member["members"]
    assert member["member_id"] == meta["member_id"] == "jCzgEC6nReO32M8qi0xG9Q"
    assert (meta["client_id"], meta["subscribed_topic_names"], meta["classic"]) == (
        "console-consumer",
        ["orders"],
        False,
    )
    assert meta["rebalance_timeout_ms"] == 300000 and meta["subscribed_topic_regex"] == ""
    assert topics["subscribed_topics"] == [{"topic_id": TOPIC_ID, "topic": "orders", "num_partitions": 3}]
    assert (epoch["group_epoch"], assignment_epoch["assignment_epoch"]) == (1, 1)
    expected = [{"topic": None, "topic_id": TOPIC_ID, "partition": p} for p in range(3)]
    assert target["assigned_partitions"] == expected and target["member_id"] == member["member_id"]
    assert (current["member_epoch"], current["previous_member_epoch"], current["member_state"]) == (1, 0, 0)
    assert current["assigned_partitions"] == expected and current["partitions_pending_revocation"] == []
    tombstones = rows[8:11]
    assert all(r["tombstone"] and r["member_id"] == member["member_id"] for r in tombstones)
    assert rows[-1]["group_epoch"] == 2 and rows[-2]["subscribed_topics"] == []
    assert {k: c.offset for k, c in latest_commits(rows).items()} == {("billing", "orders", 1): 7}


def test_unknown_group_value_version_is_an_error(tmp_path):
    ld = LogDir(tmp_path / "b1")
    key, _ = consumer_record(3, "billing", {"epoch": 1})
    offsets_part(ld, "billing").add(Records(specs=[(key, b"\x00\x07\x00")]))
    ld.write()
    (row,) = _rows(ld.root)
    assert row["record_type"] == 3 and row["group"] == "billing"
    assert row["error"].endswith(": record at offset 0: record type 3: value version 7 is not known")
    assert "byte 0" in row["error"] and "__consumer_offsets-" in row["error"]
