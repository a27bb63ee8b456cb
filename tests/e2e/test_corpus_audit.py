"""The audit on real Kafka 4.0 directories matches what each corpus README says happened."""

from __future__ import annotations

import pytest

from tests.support.sim_audit import of_cluster

pytestmark = [pytest.mark.spark, pytest.mark.corpus]


def _above_info(findings):
    return [f for f in findings if f.severity.label != "info"]


def test_clean_cluster_has_nothing_above_info(corpus_audit):
    assert _above_info(of_cluster(corpus_audit.findings, "clean")) == []


def test_clean_benign_cases_were_compared(corpus_audit):
    """compacted-0 (replicas compacted independently: 26 offsets only on brokers 2/3 below the cleaner offset
    2896) is compared record by record; __cluster_metadata replicas starting at snapshots compare on their
    common range; trailing leader-epoch entries at the LEO are ignored."""
    pairs = {
        (r["topic"], r["a"], r["b"]): r for r in corpus_audit.frames.rows["pair"] if r["cluster"] == "clean"
    }
    assert {pairs[("compacted", a, b)]["mode"] for a, b in ((1, 2), (1, 3), (2, 3))} == {"record"}
    meta = pairs[("__cluster_metadata", 2, 3)]
    assert (meta["lo"], meta["mode"]) == (251, "batch")
    replicas = {(r["topic"], r["broker"]): r for r in corpus_audit.replicas if r["cluster"] == "clean"}
    assert replicas[("compacted", 2)]["latest_epoch"] == 1 and replicas[("compacted", 3)]["latest_epoch"] == 2
    assert all(r["divergence"] is None and r["lost_records"] == 0 for r in replicas.values())


def test_unclean_election_before_old_leader_restart(corpus_audit):
    findings = of_cluster(corpus_audit.findings, "ule-before", "ule", 0)
    by_code: dict[str, list] = {}
    for f in findings:
        by_code.setdefault(f.code, []).append(f)
    assert {f.code for f in _above_info(findings)} == {"KA601", "KA620", "KA630", "KA702", "KA704", "KA710"}
    # broker-2 (SIGKILLed, fenced) is 300 records behind the new leader, out of its ISR: lag, not loss
    (lag,) = by_code["KA630"]
    assert (lag.broker, lag.offset_start, lag.offset_end, lag.evidence["records"]) == (2, 1000, 1299, 300)
    assert lag.severity.label == "warning" and lag.evidence["inIsr"] is False and lag.epoch == 2
    (div,) = by_code["KA601"]
    assert (div.broker, div.related[0]["broker"], div.offset_start) == (1, 3, 1000)
    (hw,) = by_code["KA702"]
    assert (hw.broker, hw.evidence["highWatermark"], hw.evidence["leaderLogEndOffset"]) == (3, 1500, 1300)
    (lost,) = by_code["KA710"]
    assert (lost.broker, lost.offset_start, lost.offset_end, lost.evidence["records"]) == (3, 1000, 1499, 500)
    assert lost.severity.label == "critical" and lost.evidence["epochs"] == [0]
    (unclean,) = by_code["KA620"]
    assert unclean.broker == 1 and unclean.evidence["leaderRecoveryState"] == 1
    assert unclean.evidence["previousIsr"] == [3]
    replicas = {
        r["broker"]: r for r in corpus_audit.replicas if (r["cluster"], r["topic"]) == ("ule-before", "ule")
    }
    assert replicas[1]["is_leader"] and replicas[1]["leader_source"] == "kraft"
    # broker-2 is merely behind: a prefix of both others, nothing lost, Kafka truncates it nowhere
    assert (replicas[2]["leo"], replicas[2]["divergence"], replicas[2]["lost_records"]) == (1000, None, 0)
    assert replicas[2]["truncation_offset"] == 1000
    assert (replicas[3]["divergence"], replicas[3]["truncation_offset"], replicas[3]["lost_records"]) == (
        1000,
        1000,
        500,
    )
    timeline = corpus_audit.timelines[("ule-before", "ule", 0)]
    assert {(e["broker"], e["epoch"], e["first"], e["last"]) for e in timeline} == {
        (1, 0, 0, 999),
        (1, 2, 1000, 1299),
        (2, 0, 0, 999),
        (3, 0, 0, 1499),
    }


def test_after_old_leader_rejoined_is_consistent(corpus_audit):
    findings = of_cluster(corpus_audit.findings, "ule-after")
    # only the metadata evidence of the earlier unclean election remains
    assert [(f.code, f.topic) for f in _above_info(findings)] == [("KA620", "ule")]
    replicas = [r for r in corpus_audit.replicas if (r["cluster"], r["topic"]) == ("ule-after", "ule")]
    assert {(r["leo"], r["hw"], r["divergence"], r["lost_records"]) for r in replicas} == {
        (1500, 1500, None, 0)
    }


def test_single_node_has_nothing_above_info(corpus_audit):
    assert _above_info(of_cluster(corpus_audit.findings, "single-node")) == []


def test_offline_partitions_are_one_info_finding_per_cluster(corpus_audit):
    offline = [f for f in corpus_audit.findings if f.code == "KA621"]
    assert len(offline) == len({f.evidence["cluster"] for f in offline})
    clean = next(f for f in offline if f.evidence["cluster"] == "clean")
    assert len(clean.evidence["partitions"]) == 23
