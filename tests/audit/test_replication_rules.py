"""The per-partition rules (``auditor.spark.partition_rules.evaluate``) on hand-made inputs (what each Spark
group receives)."""

from __future__ import annotations

from auditor.kafka.kraft import PartitionState
from auditor.rules.replica.model import Replica, choose_leader
from auditor.spark.partition_rules import PartitionInput, evaluate
from tests.rules.cases_replica import partition_record, replica


def codes(out) -> list[tuple[str, int]]:
    return sorted((f["code"], f["broker"]) for f in out.findings)


def test_unclean_election_case():
    inp = PartitionInput(
        replicas=[replica(1, 1300, 1300, 2), replica(2, 1000, 0, 0), replica(3, 1500, 1500, 0)],
        caches={1: [(0, 0, 0), (1, 2, 1000)], 2: [(0, 0, 0)], 3: [(0, 0, 0)]},
        divergences=[{"a": 1, "b": 3, "offset": 1000, "lo": 0, "hi": 1300, "mode": "batch", "detail": {}}],
    )
    out = evaluate(inp)
    assert codes(out) == [("KA601", 1), ("KA702", 3), ("KA704", 3)]
    assert out.zones == [
        {
            "broker": 3,
            "leader": 1,
            "leader_source": "inferred",
            "from": 1000,
            "leader_unreadable_from": None,
            "leader_unreadable_to": None,
        }
    ]
    summary = {s["broker"]: s for s in out.summary}
    assert summary[3]["truncation_offset"] == 1000 and summary[2]["truncation_offset"] == 1000
    assert summary[1]["is_leader"] and summary[3]["divergence"] == 1000


def _kraft(leader: int, last_known: int) -> PartitionState:
    return PartitionState("t", 0, leader=leader, last_known_leader=last_known)


def test_leader_choice():
    rows = (replica(1, 100, 100, 1), replica(2, 120, 100, 1), replica(3, 90, 90, 2))
    rs = [Replica.from_row(r) for r in rows]
    assert choose_leader(rs, None)[0].broker == 3
    assert choose_leader(rs, _kraft(2, 2)) == (rs[1], "kraft")
    assert choose_leader(rs, _kraft(-1, 1)) == (rs[0], "kraft-last-known")
    leader, source = choose_leader(rs, _kraft(7, 7))
    assert (leader.broker, source) == (3, "inferred-kraft-leader-absent")


def test_high_watermark_rules():
    inp = PartitionInput(
        replicas=[replica(1, 100, 120, 1), replica(2, 100, 110, 0), replica(3, 100, 5, 0, log_start=10)]
    )
    out = evaluate(inp)
    assert codes(out) == [("KA701", 1), ("KA701", 2), ("KA702", 2), ("KA703", 3)]
    above = next(f for f in out.findings if f["code"] == "KA701" and f["broker"] == 1)
    assert (above["offset_start"], above["offset_end"]) == (100, 119)


def test_epoch_history_rules():
    inp = PartitionInput(
        replicas=[replica(1, 300, 300, 2), replica(2, 300, 300, 2), replica(3, 250, 250, 1)],
        caches={
            1: [(0, 0, 0), (1, 2, 200)],
            2: [(0, 0, 0), (1, 2, 210), (2, 3, 300)],  # (3, 300) at the LEO is benign
            3: [(0, 0, 0), (1, 1, 150)],
        },
        ranges={
            1: [{"epoch": 0, "first": 0, "last": 199, "records": 200, "bytes": 1, "batches": 1}],
            3: [{"epoch": 1, "first": 150, "last": 249, "records": 100, "bytes": 9, "batches": 2}],
        },
    )
    out = evaluate(inp)
    starts = [f for f in out.findings if f["code"] == "KA603"]
    assert [(f["epoch"], f["broker"]) for f in starts] == [(2, 2)]
    (unknown,) = [f for f in out.findings if f["code"] == "KA604"]
    assert (unknown["broker"], unknown["epoch"], unknown["records"]) == (3, 1, 100)


def test_epoch_truncation_mismatch_is_reported():
    """A follower whose cache does not describe its log: Kafka would keep divergent data."""
    inp = PartitionInput(
        replicas=[replica(1, 200, 200, 1), replica(2, 200, 150, 1)],
        caches={1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 0, 0), (1, 1, 100)]},
        divergences=[{"a": 1, "b": 2, "offset": 120, "lo": 0, "hi": 200, "mode": "batch", "detail": {}}],
        metadata=[partition_record(1, [1, 2], [1, 2])],
    )
    out = evaluate(inp)
    (mismatch,) = [f for f in out.findings if f["code"] == "KA602"]
    assert (mismatch["broker"], mismatch["severity"]) == (2, "error")
    assert (mismatch["offset_start"], mismatch["offset_end"]) == (120, 200)


def test_metadata_partition_gets_divergence_only():
    rs = [dict(replica(b, leo), topic="__cluster_metadata") for b, leo in ((1, 50), (100, 60))]
    out = evaluate(PartitionInput(replicas=rs))
    assert out.findings == [] and out.zones == []


def test_severity_overrides():
    """KA601 is a warning above both high watermarks, KA602 info when Kafka truncates below the divergence;
    every other finding has the registry's severity."""
    from auditor.rules.registry import REGISTRY

    inp = PartitionInput(
        replicas=[replica(1, 300, 250), replica(2, 300, 250)],
        divergences=[{"a": 1, "b": 2, "offset": 280, "lo": 0, "hi": 300, "mode": "batch", "detail": None}],
    )
    found = {f["code"]: f["severity"] for f in evaluate(inp).findings}
    assert found == {"KA601": "warning", "KA602": "info"}
    committed = evaluate(
        PartitionInput(replicas=inp.replicas, divergences=[dict(inp.divergences[0], offset=200)])
    )
    assert {f["code"]: f["severity"] for f in committed.findings}["KA601"] == REGISTRY["KA601"].severity.label
