"""Hanging transactions (KA713) and transactions the coordinator forgot (KA714) on real log dirs, audited with
Spark: a 2-broker cluster written by ``tests.rules.builder`` with a ``__transaction_state`` partition.

* ``pay-0``: the leader (broker 1, epoch 1) holds producer 9's data at offsets 8..13 but not its COMMIT
  marker, which broker 2 holds at offset 14 (the leader's epoch 1 overwrote it): KA713 with the last stable
  offset frozen at 8 while the high watermark is 23; the coordinator says CompleteCommit: KA714 too;
* ``forgot-0``: producer 13's transaction is open on both replicas, the coordinator says CompleteAbort: KA714
  only (no marker anywhere: not hanging by KA713's definition);
* ``ongoing-0``: producer 11's transaction is open and the coordinator says Ongoing for that producer id,
  epoch and partition: silent (an ordinary transaction in flight).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parsers.record_batch import RecordSpec, build_batch
from parsers.transaction_state import encode_txn_key, encode_txn_value
from tests.rules.builder import T0, Batch, LogDir

pytestmark = pytest.mark.spark

COORDINATOR = [
    ("tx-pay", 9, "CompleteCommit", []),
    ("tx-ongoing", 11, "Ongoing", [("ongoing", 0)]),
    ("tx-forgot", 13, "CompleteAbort", []),
]


def write_coordinator(ld: LogDir, states=COORDINATOR) -> None:
    """``__transaction_state-0``: one record per transactional id (written after ``ld.write()``)."""
    part = next(p for p in ld.parts if p.topic == "__transaction_state")
    specs = [
        RecordSpec(
            encode_txn_key(tid),
            encode_txn_value(
                producer_id=pid,
                producer_epoch=0,
                timeout_ms=60000,
                state=state,
                partitions=partitions,
                last_update_timestamp=T0 + i,
                start_timestamp=T0,
            ),
            T0 + i,
            offset_delta=i,
        )
        for i, (tid, pid, state, partitions) in enumerate(states)
    ]
    part.seg_path(0).write_bytes(build_batch(specs, base_offset=0, partition_leader_epoch=0))


def write_broker(root: Path, node: int, coordinator: bool = True) -> Path:
    ld = LogDir(root / f"broker-{node}", node_id=node)
    pay = ld.part("pay")
    pay.data(2).add(Batch(1, producer_id=7, transactional=True), Batch(marker="COMMIT", producer_id=7))
    pay.data(2, producer_id=9, transactional=True)  # offsets 8..13
    if node == 1:  # the new leader: epoch 1 from offset 14, no marker of producer 9
        pay.data(3, epoch=1)
    else:  # the old leader: producer 9's COMMIT at 14, then data; truncated to 14 when it follows
        pay.add(Batch(marker="COMMIT", producer_id=9)).data(1)
        pay.hw = 17
    ld.part("forgot").data(1).data(2, producer_id=13, transactional=True)
    ld.part("ongoing").data(1).add(Batch(2, producer_id=11, transactional=True))
    if coordinator:
        ld.part("__transaction_state").data(1, records=len(COORDINATOR))
    ld.write()
    if coordinator:
        write_coordinator(ld)
    return ld.root


@pytest.fixture
def hanging(consequences_audit):
    """The clusters ``hang`` (with ``__transaction_state``) and ``nocoord`` (without) of the one consequences
    audit (``tests.support.consequences``; built by :func:`write_broker`)."""
    return consequences_audit.result


def _codes(result, topic: str, cluster: str = "hang") -> dict[str, list]:
    out: dict[str, list] = {}
    for f in result.findings:
        if f.topic == topic and f.code in ("KA713", "KA714") and f.evidence.get("cluster") == cluster:
            out.setdefault(f.code, []).append(f)
    return out


def _txn(result, topic: str, cluster: str = "hang") -> dict:
    (t,) = [t for t in result.transactions if t["topic"] == topic and t["cluster"] == cluster]
    return t


def test_marker_only_on_the_follower_hangs(hanging):
    t = _txn(hanging, "pay")
    assert (t["leader"], t["producer_id"], t["producer_epoch"]) == (1, 9, 0)
    assert (t["first_offset"], t["last_offset"], t["records"], t["batches"]) == (8, 13, 6, 2)
    assert (t["high_watermark"], t["log_end_offset"], t["last_stable_offset"]) == (23, 23, 8)
    assert t["markers_elsewhere"] == [{"broker": 2, "offset": 14, "marker": "COMMIT", "producer_epoch": 0}]
    (f,) = _codes(hanging, "pay")["KA713"]
    assert (f.broker, f.offset_start, f.offset_end) == (1, 8, 13)
    assert (f.evidence["peer"], f.evidence["records"]) == (2, 6)
    assert "frozen at 8 while the high watermark is 23" in f.message
    assert "read_committed consumers stop at 8 (15 offsets, 6 records" in f.message
    assert "broker 2 held its COMMIT marker at offset 14" in f.message
    assert "--topic pay --partition 0 --start-offset 8" in f.message
    assert f.evidence["lastStableOffset"] == 8 and f.evidence["highWatermark"] == 23
    assert "CompleteCommit" in f.evidence["coordinatorView"]


def test_coordinator_complete_while_open_is_ka714(hanging):
    (f,) = _codes(hanging, "pay")["KA714"]
    assert "CompleteCommit" in f.message and "tx-pay" in f.message
    forgot = _codes(hanging, "forgot")
    assert list(forgot) == ["KA714"], forgot
    (f,) = forgot["KA714"]
    assert "CompleteAbort" in f.message and f.offset_start == 3
    t = _txn(hanging, "forgot")
    assert t["markers_elsewhere"] == [] and t["last_stable_offset"] == 3 and t["findings"] == ["KA714"]
    assert t["coordinator"]["transactional_id"] == "tx-forgot"


def test_ongoing_transaction_is_silent(hanging):
    assert _codes(hanging, "ongoing") == {}
    t = _txn(hanging, "ongoing")
    assert (t["first_offset"], t["records"], t["last_stable_offset"], t["findings"]) == (3, 2, 3, [])
    assert t["coordinator"]["state"] == "Ongoing"


def test_findings_are_in_the_saved_frame(hanging):
    saved = hanging.frames.saveable()["findings"]
    rows = saved.where("code in ('KA713', 'KA714') and cluster = 'hang'").collect()
    assert sorted((r["topic"], r["code"]) for r in rows) == [
        ("forgot", "KA714"),
        ("pay", "KA713"),
        ("pay", "KA714"),
    ]
    assert json.loads(rows[0]["evidence"])["abort"].startswith("kafka-transactions.sh")


def test_without_coordinator_replicas_the_view_is_unavailable(hanging):
    assert _codes(hanging, "forgot", "nocoord") == {}
    (f,) = _codes(hanging, "pay", "nocoord")["KA713"]
    assert list(_codes(hanging, "pay", "nocoord")) == ["KA713"]
    assert "coordinator view unavailable" in f.message
    assert _txn(hanging, "pay", "nocoord")["coordinator"] == {"status": "unavailable"}


@pytest.mark.corpus
def test_corpus_clean_has_no_hanging_transaction(corpus_audit):
    codes = ("KA713", "KA714")
    assert [
        f for f in corpus_audit.findings if f.code in codes and f.evidence.get("cluster") == "clean"
    ] == []
    assert [t for t in corpus_audit.transactions if t["cluster"] == "clean" and t["findings"]] == []
