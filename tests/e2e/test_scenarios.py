"""For every simulator scenario (and several random seeds) the audit's findings equal ``ground-truth.json``:
divergence offsets per replica pair, high-watermark violations, committed records lost (offsets, holders,
keys and values of the export), divergent uncommitted tails, Kafka's epoch truncation points, and nothing
else above info."""

from __future__ import annotations

import pytest

from auditor.simulate.truth.oracles import epoch_truncation_offset, normalised_cache
from tests.support.sim_audit import PARQUET_TWINS, SIM_RUNS, label, of_cluster

pytestmark = pytest.mark.spark

HW_KINDS = {
    "hw_above_leo": "KA701",
    "hw_below_log_start": "KA703",
    "hw_above_leader_leo": "KA702",
    "follower_hw_above_leader_hw": "KA704",
}
COMPARED = {"KA601", "KA630", "KA701", "KA702", "KA703", "KA704", "KA710", "KA711"}
LABELS = [label(name, seed) for name, seed in SIM_RUNS]


def _partitions(sim_audit, lab):
    truth = sim_audit.truths[lab]
    for p in truth["partitions"]:
        findings = of_cluster(sim_audit.result.findings, lab, p["topic"], p["partition"])
        replicas = [
            r
            for r in sim_audit.result.replicas
            if (r["cluster"], r["topic"], r["partition"]) == (lab, p["topic"], p["partition"])
        ]
        yield p, findings, replicas


def _lost_offsets(findings) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for f in findings:
        if f.code == "KA710":
            for offset in range(f.offset_start, f.offset_end + 1):
                out.setdefault(offset, []).append(f.broker)
    return {o: sorted(h) for o, h in out.items()}


@pytest.mark.parametrize("lab", LABELS)
def test_divergence_per_pair(sim_audit, lab):
    for p, findings, _ in _partitions(sim_audit, lab):
        expected = {
            tuple(d["replicas"]): d["first_divergent_offset"]
            for d in p["divergence"]
            if d["first_divergent_offset"] is not None
        }
        found = {(f.broker, f.related[0]["broker"]): f.offset_start for f in findings if f.code == "KA601"}
        assert found == expected, (p["topic"], p["partition"])


@pytest.mark.parametrize("lab", LABELS)
def test_high_watermark_violations(sim_audit, lab):
    for p, findings, _ in _partitions(sim_audit, lab):
        expected = {
            (HW_KINDS[v["kind"]], v["broker"], v["high_watermark"])
            for v in p["expected_findings"]["hw_violations"]
        }
        found = {
            (f.code, f.broker, f.evidence["highWatermark"]) for f in findings if f.code in HW_KINDS.values()
        }
        assert found == expected


@pytest.mark.parametrize("lab", LABELS)
def test_truncation_loss_and_export(sim_audit, lab):
    for p, findings, _ in _partitions(sim_audit, lab):
        ef = p["expected_findings"]
        truth_loss = ef["truncation_loss"]
        # on transactional partitions a KA710 run spans aborted records and markers it does not count
        transactional = bool(ef["truncation_loss_excluded"] or ef["lost_markers"])
        if transactional:
            assert sum(f.evidence["records"] for f in findings if f.code == "KA710") == len(truth_loss)
        else:
            assert _lost_offsets(findings) == {x["offset"]: sorted(x["holders"]) for x in truth_loss}
        for x in truth_loss:
            row = sim_audit.exported[(lab, p["topic"], p["partition"], x["offset"])]
            assert (row["key"], row["value"], row["leaderEpoch"]) == (x["key"], x["value"], x["epoch"])
            assert row["holders"] == sorted(x["holders"])
        for f in findings:
            if f.code in ("KA710", "KA711") and not transactional:  # not compacted: offsets are dense
                assert f.evidence["records"] == f.offset_end - f.offset_start + 1
        exported = {k for k in sim_audit.exported if k[:3] == (lab, p["topic"], p["partition"])}
        assert len(exported) == len(truth_loss)


@pytest.mark.parametrize("lab", LABELS)
def test_divergent_uncommitted_tails(sim_audit, lab):
    for p, findings, _ in _partitions(sim_audit, lab):
        expected = {
            (u["broker"], u["first_offset"], u["last_offset"])
            for u in p["expected_findings"]["divergent_uncommitted"]
        }
        found = {(f.broker, f.offset_start, f.offset_end) for f in findings if f.code == "KA711"}
        assert found == expected


@pytest.mark.parametrize("lab", LABELS)
def test_reference_leader_and_epoch_truncation(sim_audit, lab):
    """The reference is the KRaft leader; when it is -1 the last known leader (the ground truth infers one
    instead, so the expected truncation points are recomputed for our reference with the simulator's own
    implementation of the OffsetsForLeaderEpoch loop)."""
    for p, _findings, replicas in _partitions(sim_audit, lab):
        leader = next(r for r in replicas if r["is_leader"])
        if p["reference"]["source"] == "metadata":
            assert (leader["broker"], leader["leader_source"]) == (p["reference"]["broker"], "kraft")
        else:
            last_known = [h["leader"] for h in p["leader_history"] if h["leader"] >= 0][-1]
            assert (leader["broker"], leader["leader_source"]) == (last_known, "kraft-last-known")
        state = {int(b): s["disk"] for b, s in p["replica_state"].items()}
        ref = state[leader["broker"]]
        ref_cache = normalised_cache(ref["leader_epoch_checkpoint"], ref["recovered_log_end_offset"])
        for r in replicas:
            if r["is_leader"]:
                continue
            d = state[r["broker"]]
            leo = d["recovered_log_end_offset"]
            hw = min(max(d["high_watermark_checkpoint"] or 0, d["log_start_offset"]), leo)
            cache = normalised_cache(d["leader_epoch_checkpoint"], leo)
            expected = epoch_truncation_offset(ref_cache, ref["recovered_log_end_offset"], cache, leo, hw)
            assert r["truncation_offset"] == expected, r["broker"]
        if leader["broker"] == p["reference"]["broker"]:
            assert {(e["follower"], e["truncation_offset"]) for e in p["epoch_truncation"]} == {
                (r["broker"], r["truncation_offset"]) for r in replicas if not r["is_leader"]
            }


@pytest.mark.parametrize("lab", LABELS)
def test_nothing_else_above_info(sim_audit, lab):
    truth = sim_audit.truths[lab]
    unclean = {
        (p["topic"], p["partition"])
        for p in truth["partitions"]
        if any(h["unclean"] for h in p["leader_history"])
    }
    for f in of_cluster(sim_audit.result.findings, lab):
        if f.code in COMPARED or f.code in truth["expected_codes"] or f.severity.label == "info":
            continue
        if f.code == "KA620":
            assert (f.topic, f.partition) in unclean
            continue
        if f.code == "KA624":  # the simulator accepted acks=0/1 writes in that epoch with min.insync >= 2
            topic = next(t for t in truth["topics"] if t["name"] == f.topic)
            p = next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (f.topic, f.partition))
            assert topic["min_insync_replicas"] >= 2, f.message
            assert any(
                w["epoch"] == f.epoch
                and w["acks"] in ("0", "1")
                and w["control"] is None
                and w["first_offset"] <= f.offset_end
                and w["last_offset"] >= f.offset_start
                for w in p["writes"]
            ), f.message
            continue
        if f.code == "KA602":  # only where Kafka's truncation point really misses the divergence
            p = next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (f.topic, f.partition))
            div = {tuple(d["replicas"]): d["first_divergent_offset"] for d in p["divergence"]}
            pair = tuple(sorted((f.broker, f.related[0]["broker"])))
            assert div[pair] is not None and div[pair] != f.evidence["truncationOffset"]
            continue
        raise AssertionError(f"unexpected {f.code} {f.severity.label}: {f.message}")
    if lab.startswith("clean-"):
        assert [f for f in of_cluster(sim_audit.result.findings, lab) if f.severity.label != "info"] == []
    for p in truth["partitions"]:
        assert (p["topic"], p["partition"]) in unclean or not [
            f
            for f in of_cluster(sim_audit.result.findings, lab, p["topic"], p["partition"])
            if f.code == "KA620"
        ]


def _key(f):
    return (
        f.code,
        f.severity.label,
        f.topic,
        f.partition,
        f.broker,
        f.offset_start,
        f.offset_end,
        f.epoch,
        f.message,
    )


@pytest.mark.parametrize("lab", PARQUET_TWINS)
def test_parquet_extracts_give_the_same_findings(sim_audit, lab):
    raw = sorted(_key(f) for f in of_cluster(sim_audit.result.findings, lab))
    parquet = sorted(_key(f) for f in of_cluster(sim_audit.result.findings, f"{lab}@parquet"))
    assert raw and parquet == raw


def test_unclean_election_story(sim_audit):
    """The headline case, spelled out: broker 1 keeps epoch-0 data past the start of epoch 2."""
    lab = label("unclean-election", 1)
    truth = next(iter(sim_audit.truths[lab]["partitions"]))
    findings = of_cluster(sim_audit.result.findings, lab, truth["topic"], truth["partition"])
    lost = [f for f in findings if f.code == "KA710"]
    assert lost and all(f.severity.label == "critical" for f in lost)
    assert {f.code for f in findings} >= {"KA601", "KA620", "KA702", "KA710"}


@pytest.mark.parametrize("lab", LABELS)
def test_replica_lag(sim_audit, lab):
    """KA630 exactly for the followers whose loaded log (after recovery) is a prefix of the reference
    leader's and shorter, from their LEO to the leader's; a warning at least when the final ISR leaves them
    out."""
    for p, findings, replicas in _partitions(sim_audit, lab):
        leader = str(p["reference"]["broker"])
        state = p["replica_state"]
        leader_leo = state[leader]["disk"]["recovered_log_end_offset"]
        diverged = {tuple(d["replicas"]) for d in p["divergence"] if d["first_divergent_offset"] is not None}
        expected = {}
        for broker, rs in state.items():
            pair = tuple(sorted((int(broker), int(leader))))
            leo = rs["disk"]["recovered_log_end_offset"]
            if broker != leader and leo < leader_leo and pair not in diverged:
                expected[int(broker)] = (leo, leader_leo - 1)
        lags = {f.broker: f for f in findings if f.code == "KA630"}
        assert {b: (f.offset_start, f.offset_end) for b, f in lags.items()} == expected, p["topic"]
        for broker, f in lags.items():
            assert f.related[0]["broker"] == int(leader)
            if broker not in p["final"]["isr"] and p["reference"]["source"] == "metadata":
                assert f.severity.label == "warning"
        assert all(r["lost_records"] == 0 for r in replicas if r["broker"] in lags)
