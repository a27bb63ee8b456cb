"""The per-partition rules (``auditor.spark.partition_rules.evaluate``) on hand-made inputs (what each Spark
group receives).

KA630 (replica lag) and KA691 (incomplete replica) in the cross-replica rules
(``auditor.spark.partition_rules``, no Spark): what is derived, and what is not, from a replica whose log
could not be read completely."""

from __future__ import annotations

import json

from auditor.kafka.kraft import PartitionState
from auditor.rules.registry import REGISTRY
from auditor.rules.replica.lag import REPLICA_LAG_TIME_MAX_MS
from auditor.rules.replica.model import Replica, choose_leader
from auditor.spark.partition_rules import (
    PartitionInput,
    cluster_findings,
    evaluate,
    lag_finding,
    loss_finding,
)
from tests.rules.replica.builders import partition_record, replica
from tests.rules.replica.cases_loss import lost_run


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


def _div(a: int, b: int, offset: int) -> dict:
    return {"a": a, "b": b, "offset": offset, "lo": 0, "hi": offset + 1, "mode": "batch", "detail": {}}


def test_unknown_leo_skips_the_checks_that_need_it():
    follower = replica(2, 200, 300, unreadable_from=200, unreadable_to=None, unreadable="x.log: I/O error")
    out = evaluate(PartitionInput(replicas=[replica(1, 300, 300), follower], caches={1: [(0, 0, 0)]}))
    assert codes(out) == [("KA691", 2)]  # no KA701 (HW 300 > 200), no lag
    assert out.lags == [] and out.zones == []
    (f,) = out.findings
    assert f["severity"] == "error" and f["offset_start"] == 200 and f["offset_end"] is None
    assert "log end offset is unknown (at least 200)" in f["message"] and "x.log: I/O error" in f["message"]
    summary = {s["broker"]: s for s in out.summary}
    assert summary[2]["leo_known"] is False and summary[2]["truncation_offset"] is None


def test_leader_with_unknown_leo_gets_no_hw_or_loss_zone():
    leader = replica(1, 100, 300, latest_epoch=3, unreadable_from=100, unreadable_to=None, unreadable="d")
    out = evaluate(PartitionInput(replicas=[leader, replica(2, 300, 300, latest_epoch=2)]))
    assert codes(out) == [("KA691", 1)]  # no KA702 (HW 300 > leader's lower bound 100)
    (zone,) = out.zones  # the follower is longer: Spark looks there, outside the leader's span
    assert (zone["from"], zone["leader_unreadable_from"], zone["leader_unreadable_to"]) == (100, 100, None)


def test_middle_hole_keeps_the_known_leo_checks():
    follower = replica(2, 250, 300, unreadable_from=100, unreadable_to=200, unreadable="d")
    out = evaluate(PartitionInput(replicas=[replica(1, 300, 300), follower]))
    assert codes(out) == [("KA691", 2), ("KA701", 2)]
    assert out.findings[0]["offset_end"] == 199
    (lag,) = out.lags  # its LEO is known: it lags from 250
    assert (lag["from"], lag["to"], lag["in_isr"]) == (250, 300, None)


def test_lag_rows_only_for_prefix_followers():
    reps = [
        replica(1, 300, 300, 1),
        replica(2, 250, 250, 1),
        replica(3, 200, 200, 1),
        replica(4, 300, 300, 1),
    ]
    caches = {1: [(0, 0, 0), (1, 1, 220)]}
    out = evaluate(PartitionInput(replicas=reps, caches=caches, divergences=[_div(1, 3, 150)]))
    assert [(g["broker"], g["from"], g["epoch"]) for g in out.lags] == [(2, 250, 1)]


def _row(**kw) -> dict:
    base = {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": 2,
        "log_dir": "/d/2",
        "leader": 1,
        "leader_source": "kraft",
        "from": 250,
        "to": 300,
        "epoch": 1,
        "in_isr": None,
        "isr": None,
        "records": 50,
        "bytes": 5000,
        "batches": 5,
        "first_timestamp": 1000,
        "last_timestamp": 2000,
    }
    return {**base, **kw}


def test_lag_severity():
    assert lag_finding(_row())["severity"] == "info"
    assert lag_finding(_row(in_isr=True, isr=[1, 2]))["severity"] == "info"
    out = lag_finding(_row(in_isr=False, isr=[1]))
    assert out["severity"] == "warning" and "out of the ISR" in out["message"]
    assert json.loads(out["evidence"])["isr"] == [1]
    slow = lag_finding(_row(last_timestamp=1000 + REPLICA_LAG_TIME_MAX_MS + 1))
    assert slow["severity"] == "warning"
    assert lag_finding(_row(last_timestamp=1000 + REPLICA_LAG_TIME_MAX_MS))["severity"] == "info"
    f = lag_finding(_row())
    assert f["log_dir"] == "/d/2" and f["cluster"] == "c"
    assert (f["records"], f["bytes"], f["offset_start"], f["offset_end"], f["peer"]) == (
        50,
        5000,
        250,
        299,
        1,
    )
    assert "nothing is lost" in f["message"] and "from leader epoch 1" in f["message"]


def test_loss_findings_keep_the_spark_layout():
    """KA710/KA711 rows as ``compare.audit`` built them in Spark SQL, severities from the registry."""
    f = loss_finding(lost_run("committed", 200, 299, 300))
    assert (f["code"], f["severity"]) == ("KA710", REGISTRY["KA710"].severity.label) == ("KA710", "critical")
    assert (f["broker"], f["peer"], f["log_dir"], f["offset_start"], f["offset_end"]) == (
        2,
        1,
        "/d/2",
        200,
        299,
    )
    assert (f["epoch"], f["records"], f["bytes"]) == (1, 100, 1000)
    assert f["message"] == (
        "100 committed records (offsets 200..299; 1000 bytes in 2 batches; high watermark 300 was "
        "checkpointed by a replica holding them) are on broker 2 but absent from or different on the "
        "current leader 1 (kraft): they are lost when broker 2 truncates"
    )
    evidence = json.loads(f["evidence"])
    assert evidence == {"epochs": [1], "leaderSource": "kraft", "committedHighWatermark": 300, "batches": 2}
    tail = loss_finding(dict(lost_run("uncommitted", 250, 299, 250), epochs=[1, 2]))
    assert (tail["code"], tail["severity"], tail["epoch"]) == ("KA711", "warning", None)
    assert tail["message"].startswith(
        "50 records (offsets 250..299) on broker 2 were acknowledged only by the old leader "
        "(leader epoch 1, 2), never committed: above the high watermark of every replica holding them, "
        "possible only with acks=0/1"
    )


def test_inferred_leaders_once_per_cluster():
    """KA623 once per cluster whose partitions all have an inferred leader; ``__cluster_metadata`` aside."""
    rows = [
        {"cluster": "a", "topic": "t", "leader_source": "inferred"},
        {"cluster": "a", "topic": "u", "leader_source": "inferred"},
        {"cluster": "a", "topic": "__cluster_metadata", "leader_source": "inferred"},
        {"cluster": "b", "topic": "t", "leader_source": "inferred"},
        {"cluster": "b", "topic": "u", "leader_source": "kraft"},
    ]
    (f,) = cluster_findings(rows)
    assert (f["code"], f["cluster"], f["severity"], f["topic"], f["evidence"]) == (
        "KA623",
        "a",
        "info",
        None,
        "{}",
    )


def test_offline_partitions_fold_into_one_finding_per_cluster():
    """KA621 after a full shutdown: one finding per cluster, worded by its rule, severity from the registry,
    the first 20 partitions in the message and all of them in the evidence."""
    from auditor.spark.partition_pass import cluster_rows

    summary = [
        {
            "cluster": "c",
            "topic": "t",
            "partition": p,
            "broker": b,
            "leader": 1 + p % 3,
            "leader_source": "kraft-last-known",
            "kraft_leader_epoch": 4,
        }
        for p in reversed(range(25))
        for b in (1, 2, 3)  # one summary row per replica: one entry per partition
    ]
    summary.append({"cluster": "c", "topic": "u", "partition": 0, "leader": 1, "leader_source": "kraft"})
    found = [{"cluster": "c", "code": "KA620", "topic": "u", "partition": 0}]
    kept, (row,) = cluster_rows(found, summary)
    assert kept == found
    assert (row["code"], row["severity"], row["cluster"], row["topic"]) == ("KA621", "info", "c", None)
    assert row["message"].startswith("25 partition(s) have no leader") and row["message"].endswith("5 more")
    evidence = json.loads(row["evidence"])["partitions"]
    assert len(evidence) == 25
    assert evidence[0] == {"topic": "t", "partition": 0, "lastKnownLeader": 1, "epoch": 4}
