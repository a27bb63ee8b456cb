"""Transaction-aware loss accounting (KA710/KA711 counts, KA712 lost markers) and ``--export-lost``.

One audit (the session's Spark, digest chunks of 8 offsets so that the prefix both replicas share is not a
candidate chunk) over two inputs:

* ``gen``: a generated cluster (``tests.rules.builder``). Broker 1 leads in epoch 1 from offset 10; broker 2
  (epoch 0, high watermark = its log end offset 25) holds from 10 on: aborted data of producer 8 (10-11),
  committed data of producer 9 (12-14), the COMMIT of producer 7 whose data 5-6 both replicas hold (15),
  plain data (16-17), the ABORT of producer 8 (18), more data of producer 9 (19-20) and its COMMIT (21),
  and an open transaction of producer 10 (22-24): 7 committed records lost (12-14, 16-17, 19-20), 2 aborted
  and 3 open records and 3 markers truncated, not counted.
* ``txn0``: a copy of the corpus' ``clean/`` (brokers and controller: the ``txn-0`` replicas, the
  controller's metadata log and the checkpoints) whose current leader of ``txn-0`` (broker 3: the last
  leader the KRaft metadata names) is truncated at offset 163 (segment ``163`` emptied, its indexes and the
  producer snapshot above the new log end removed, its leader-epoch cache ``0 0, 1 163``: leader of epoch
  1 from offset 163; high watermark and recovery point 163: a leader's high watermark cannot exceed its log
  end offset). Brokers 1 and 2 still hold 163-185: aborted 163-167, ABORT 168, committed 169-171, COMMIT
  172, committed 173-178, COMMIT 179, aborted 180-184, ABORT 185: 9 committed records lost, 10 aborted
  records and 4 markers not counted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.rules.builder import Batch, LogDir


def _generated(root: Path) -> Path:
    def prefix(p) -> None:
        p.data(1, records=5)  # 0-4
        p.add(Batch(records=2, producer_id=7, transactional=True))  # 5-6, committed at 15 on broker 2
        p.data(1, records=3)  # 7-9

    leader = LogDir(root / "broker-1", node_id=1)
    p = leader.part("pay")
    prefix(p)
    p.data(1, records=3, epoch=1)  # 10-12: the new leader's own data
    follower = LogDir(root / "broker-2", node_id=2)
    f = follower.part("pay")
    prefix(f)
    f.add(
        Batch(records=2, producer_id=8, transactional=True),  # 10-11 aborted
        Batch(records=3, producer_id=9, transactional=True),  # 12-14 committed
        Batch(marker="COMMIT", producer_id=7),  # 15
        Batch(records=2),  # 16-17 plain
        Batch(marker="ABORT", producer_id=8),  # 18
        Batch(records=2, producer_id=9, transactional=True),  # 19-20 committed
        Batch(marker="COMMIT", producer_id=9),  # 21
        Batch(records=3, producer_id=10, transactional=True),  # 22-24 open
    )
    leader.write()
    follower.write()
    return root


def _truncated_txn0(corpus: Path, root: Path) -> Path:
    src = corpus / "clean"
    for node in ("broker-1", "broker-2", "broker-3", "controller-100"):
        dst = root / node
        dst.mkdir(parents=True)
        for item in (src / node).iterdir():
            if item.is_file():
                shutil.copyfile(item, dst / item.name)
            elif item.name == "txn-0" or (item.name == "__cluster_metadata-0" and node == "controller-100"):
                shutil.copytree(item, dst / item.name, copy_function=shutil.copyfile)
    part = root / "broker-3" / "txn-0"
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        (part / f"{163:020d}{suffix}").write_bytes(b"")
    (part / f"{186:020d}.snapshot").unlink()
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 163\n")
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        ckpt = root / "broker-3" / name
        text = ckpt.read_text()
        assert "\ntxn 0 186\n" in text
        ckpt.write_text(text.replace("\ntxn 0 186\n", "\ntxn 0 163\n"))
    return root


@pytest.fixture
def txn_audit(consequences_audit):
    """The clusters ``gen`` and (with the corpus) ``txn0`` of the one consequences audit
    (``tests.support.consequences``, ``chunk_bits=3``, with ``--export-lost``)."""
    return consequences_audit.result, consequences_audit.exported, consequences_audit.exported_table


def _findings(result, cluster: str, code: str) -> list:
    return sorted(
        (f for f in result.findings if f.code == code and f.evidence.get("cluster") == cluster),
        key=lambda f: f.broker,
    )


def _runs(result, cluster: str) -> list[dict]:
    return sorted((r for r in result.loss if r["cluster"] == cluster), key=lambda r: (r["broker"], r["lo"]))


def test_generated_loss_counts_committed_data_only(txn_audit):
    result, _, _ = txn_audit
    (run,) = _runs(result, "gen")
    # lo..hi: the records counted (the exported offsets); the truncated span, markers included, apart
    assert (run["kind"], run["broker"], run["leader"], run["lo"], run["hi"]) == ("committed", 2, 1, 12, 20)
    assert (run["span_lo"], run["span_hi"]) == (10, 24)
    assert (run["records"], run["aborted_records"], run["open_records"]) == (7, 2, 3)
    assert (run["markers"], run["commit_markers"], run["batches"]) == (3, 2, 8)
    (ka710,) = _findings(result, "gen", "KA710")
    assert ka710.message.startswith("7 committed records (offsets 12..20;")
    assert ka710.evidence["truncatedOffsets"] == [10, 24]
    assert ka710.message.endswith(
        "; 2 aborted records, 3 records of open transactions and 3 transaction markers also truncated, "
        "not counted (offsets 10..24 truncated in all)"
    )
    assert ka710.evidence["records"] == 7
    assert (ka710.evidence["abortedRecords"], ka710.evidence["openRecords"]) == (2, 3)
    assert not _findings(result, "gen", "KA711")
    replica = next(r for r in result.replicas if (r["cluster"], r["topic"], r["broker"]) == ("gen", "pay", 2))
    assert replica["lost_records"] == 7


def test_generated_lost_markers_name_their_transactions(txn_audit):
    result, _, _ = txn_audit
    (ka712,) = _findings(result, "gen", "KA712")
    assert (ka712.broker, ka712.evidence["peer"], ka712.offset_start, ka712.offset_end) == (2, 1, 15, 21)
    assert [
        (m["offset"], m["marker"], m["producerId"], m["producerEpoch"], m["firstOffset"])
        for m in ka712.evidence["listed"]
    ] == [
        (15, "COMMIT", 7, 0, 5),  # its data 5-6 lies in a chunk both replicas share: read from the full log
        (18, "ABORT", 8, 0, 10),
        (21, "COMMIT", 9, 0, 12),
    ]
    assert ka712.message.startswith("3 transaction markers (2 COMMIT, 1 ABORT) on broker 2 in offsets 10..24")
    assert "COMMIT at 15 (producer id 7 epoch 0, data from 5)" in ka712.message


def test_generated_export_holds_the_committed_data_records_only(txn_audit):
    _, exported, table = txn_audit
    rows = exported["gen"]
    assert [d["offset"] for d in rows] == [12, 13, 14, 16, 17, 19, 20]
    by_offset = {d["offset"]: d for d in rows}
    assert {(d["producerId"], d["isTransactional"]) for o, d in by_offset.items() if o in (12, 19)} == {
        (9, True)
    }
    plain = by_offset[16]
    assert (plain["producerId"], plain["producerEpoch"], plain["baseSequence"]) == (-1, -1, -1)
    assert plain["isTransactional"] is False
    assert by_offset[13]["baseSequence"] == 0 and by_offset[13]["producerEpoch"] == 0
    assert {d["timestampType"] for d in rows} == {"CreateTime"}
    assert {d["holders"] == [2] and d["key"].startswith("k") for d in rows} == {True}
    parquet = sorted((r for r in table if r["cluster"] == "gen"), key=lambda r: r["offset"])
    names = ("offset", "producerId", "producerEpoch", "baseSequence", "isTransactional", "timestampType")
    assert [tuple(r[n] for n in names) for r in parquet] == [tuple(d[n] for n in names) for d in rows]
    assert {r["timestampType"] for r in parquet} == {"CreateTime"}
    assert [round(r["timestamp"].timestamp() * 1000) for r in parquet] == [d["timestamp"] for d in rows]


@pytest.fixture
def corpus_case(txn_audit):
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return txn_audit


def test_corpus_truncated_txn0_loses_9_committed_records(corpus_case):
    result, _, _ = corpus_case
    runs = [r for r in _runs(result, "txn0") if r["topic"] == "txn"]
    assert [(r["broker"], r["leader"], r["kind"], r["lo"], r["hi"]) for r in runs] == [
        (1, 3, "committed", 169, 178),
        (2, 3, "committed", 169, 178),
    ]
    assert {(r["span_lo"], r["span_hi"]) for r in runs} == {(163, 185)}
    for r in runs:
        assert (r["records"], r["aborted_records"], r["open_records"], r["markers"]) == (9, 10, 0, 4)
    ka710 = _findings(result, "txn0", "KA710")
    assert [(f.broker, f.topic, f.partition, f.evidence["records"]) for f in ka710] == [
        (1, "txn", 0, 9),
        (2, "txn", 0, 9),
    ]
    assert ka710[0].message.startswith("9 committed records (offsets 169..178;")
    assert ka710[0].message.endswith(
        "; 10 aborted records and 4 transaction markers also truncated, not counted (offsets 163..185 "
        "truncated in all)"
    )
    ka712 = _findings(result, "txn0", "KA712")
    assert [f.broker for f in ka712] == [1, 2]
    assert [
        (m["offset"], m["marker"], m["producerId"], m["firstOffset"]) for m in ka712[0].evidence["listed"]
    ] == [
        (168, "ABORT", 0, 163),
        (172, "COMMIT", 0, 169),
        (179, "COMMIT", 0, 173),
        (185, "ABORT", 0, 180),
    ]


def test_corpus_truncated_txn0_exports_exactly_the_committed_records(corpus_case):
    _, exported, table = corpus_case
    rows = exported["txn0"]
    expected = [169, 170, 171, *range(173, 179)]
    assert [d["offset"] for d in rows] == expected
    assert {(d["topic"], d["partition"], d["producerId"], d["isTransactional"]) for d in rows} == {
        ("txn", 0, 0, True)
    }
    assert {tuple(d["holders"]) for d in rows} == {(1, 2)}
    assert [d["baseSequence"] for d in rows] == [142] * 3 + [145] * 6
    assert rows[0]["value"].startswith("txn-0000272|")
    assert sorted(r["offset"] for r in table if r["cluster"] == "txn0") == expected


def test_a_batch_below_a_replicas_own_zone_start_is_not_its_loss():
    """Candidate 3 (log end 20) lacks every batch of brokers 1 and 2; broker 1's log starts at 100
    (DeleteRecords, its older batches still on disk), so its zone starts there while broker 2's starts at
    20: broker 1's batches below 100 are none of its loss (they once counted with negative records), the
    one across 100 counts from 100, and broker 2 loses everything from 20."""
    from auditor.spark.pass_loss import lost_batches
    from auditor.spark.pass_rows import BatchRow

    def batch(broker: int, base: int, last: int) -> BatchRow:
        return BatchRow({"broker": broker, "base_offset": base, "last_offset": last, "records_count":
                         last - base + 1, "size": 100, "sig": base, "is_transactional": False,
                         "is_control": False})  # fmt: skip

    logs = {b: [batch(b, o, o + 29) for o in range(0, 150, 30)] for b in (1, 2)}
    replicas = {1: {"hw": 150}, 2: {"hw": 150}, 3: {"hw": 20}}
    zones = [
        {"broker": 1, "leader": 3, "leader_source": "candidate", "from": 100,
         "leader_unreadable_from": None, "leader_unreadable_to": None},
        {"broker": 2, "leader": 3, "leader_source": "candidate", "from": 20,
         "leader_unreadable_from": None, "leader_unreadable_to": None},
    ]  # fmt: skip
    lost = list(lost_batches(logs, replicas, zones, {}))
    by_broker = {b: [(x.b.base_offset, x.start) for x in lost if x.b.broker == b] for b in (1, 2)}
    assert by_broker[1] == [(90, 100), (120, 120)]
    assert by_broker[2] == [(0, 20), (30, 30), (60, 60), (90, 90), (120, 120)]
