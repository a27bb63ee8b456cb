"""The consequences of an incident (issue 10) found by ``audit`` equal the simulator's ground truth.

The consumer-group and transaction scenarios (``group-commit-lost-range``, ``txn-marker-lost``,
``offsets-commit-lost``) are audited in the shared Spark run of ``tests/conftest.py`` (``sim_audit``)
with every other scenario. Compared: the transaction-aware loss (KA710 record counts, the export carrying
committed data records only), lost markers (KA712), hanging transactions (KA713: offsets, last stable offset,
high watermark, where the marker is; KA714 where the coordinator no longer tracks it), the groups' commits
(KA720 above the log end offset, KA721 inside a lost range with the consumed and skipped counts, KA723 a
commit only a truncating ``__consumer_offsets`` replica holds), and, for every scenario, exactly the
consequence codes its ground truth expects.
"""

from __future__ import annotations

import pytest

from tests.support.sim_audit import SIM_RUNS, label, of_cluster

pytestmark = pytest.mark.spark

CONSEQUENCE_CODES = {"KA710", "KA712", "KA713", "KA714", "KA720", "KA721", "KA722", "KA723"}
GROUP_CODES = {"KA720", "KA721", "KA722", "KA723"}
TXN = label("txn-marker-lost", 1)
GROUPS = label("group-commit-lost-range", 1)
OFFSETS = label("offsets-commit-lost", 1)


def _part(truth: dict, topic: str, partition: int) -> dict:
    return next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (topic, partition))


def _codes(findings, codes=CONSEQUENCE_CODES) -> list:
    return [f for f in findings if f.code in codes]


@pytest.mark.parametrize("lab", [label(name, seed) for name, seed in SIM_RUNS])
def test_consequence_codes_equal_the_truth(sim_audit, lab):
    """Every scenario: the consequence codes found are exactly those the ground truth expects (the older
    scenarios: KA710 where records were lost, nothing else)."""
    truth = sim_audit.truths[lab]
    found = {f.code for f in _codes(of_cluster(sim_audit.result.findings, lab))}
    assert found == set(truth["expected_codes"]) & CONSEQUENCE_CODES  # identity codes: test_identity_audit


def test_transaction_aware_loss_and_export(sim_audit):
    truth = sim_audit.truths[TXN]
    p = _part(truth, "t0", 0)
    ef = p["expected_findings"]
    assert ef["truncation_loss"] and ef["truncation_loss_excluded"] and ef["lost_markers"]
    findings = of_cluster(sim_audit.result.findings, TXN, "t0", 0)
    lost = [f for f in findings if f.code == "KA710"]
    assert sum(f.evidence["records"] for f in lost) == len(ef["truncation_loss"])
    exported = {k[3]: row for k, row in sim_audit.exported.items() if k[:3] == (TXN, "t0", 0)}
    assert sorted(exported) == [x["offset"] for x in ef["truncation_loss"]]
    for x in ef["truncation_loss"]:
        row = exported[x["offset"]]
        assert (row["key"], row["value"], row["leaderEpoch"]) == (x["key"], x["value"], x["epoch"])
    excluded = {x["offset"] for x in ef["truncation_loss_excluded"]} | {
        m["offset"] for m in ef["lost_markers"]
    }
    assert not excluded & set(exported)


def test_lost_markers(sim_audit):
    p = _part(sim_audit.truths[TXN], "t0", 0)
    expected = {
        (m["broker"], m["offset"], m["marker"], m["producer_id"], m["producer_epoch"])
        for m in p["expected_findings"]["lost_markers"]
    }
    findings = [f for f in of_cluster(sim_audit.result.findings, TXN, "t0", 0) if f.code == "KA712"]
    found = {
        (f.broker, m["offset"], m["marker"], m["producerId"], m["producerEpoch"])
        for f in findings
        for m in f.evidence["listed"]
    }
    assert found == expected
    assert sum(f.evidence["markers"] for f in findings) == len(expected)


def test_hanging_transaction(sim_audit):
    p = _part(sim_audit.truths[TXN], "t0", 0)
    (hang,) = p["hanging_transactions"]
    assert hang["expected_codes"] == ["KA713", "KA714"]
    assert hang["last_stable_offset"] == hang["first_offset"] < hang["high_watermark"]
    findings = of_cluster(sim_audit.result.findings, TXN, "t0", 0)
    for code in ("KA713", "KA714"):
        (f,) = [f for f in findings if f.code == code]
        assert (f.broker, f.offset_start, f.offset_end) == (
            hang["leader"],
            hang["first_offset"],
            hang["last_offset"],
        )
        ev = f.evidence
        assert (ev["producerId"], ev["producerEpoch"]) == (hang["producer_id"], hang["producer_epoch"])
        assert (ev["lastStableOffset"], ev["highWatermark"], ev["logEndOffset"]) == (
            hang["last_stable_offset"],
            hang["high_watermark"],
            hang["log_end_offset"],
        )
        assert {(m["broker"], m["offset"], m["marker"]) for m in ev["markersElsewhere"]} == {
            (m["broker"], m["offset"], m["marker"]) for m in hang["markers_elsewhere"]
        }
        coord = hang["coordinator"]
        assert (ev["coordinator"]["transactionalId"], ev["coordinator"]["state"]) == (
            coord["transactional_id"],
            coord["state"],
        )
        assert ev["coordinator"]["partition"] == coord["partition"]


def _group_findings(sim_audit, lab: str, group: str) -> list:
    return [
        f
        for f in of_cluster(sim_audit.result.findings, lab)
        if f.code in GROUP_CODES and f.evidence.get("group") == group
    ]


@pytest.mark.parametrize("lab", [GROUPS, OFFSETS])
def test_group_consequences(sim_audit, lab):
    truth = sim_audit.truths[lab]
    kinds = set()
    for g in truth["groups"]:
        found = _group_findings(sim_audit, lab, g["group"])
        expected_codes = set()
        for tp in g["partitions"]:
            for c in tp["consequences"]:
                kinds.add(c["kind"])
                if c["code"] is None:
                    continue
                expected_codes.add(c["code"])
                mine = [
                    f
                    for f in found
                    if f.code == c["code"]
                    and (f.evidence.get("dataTopic", f.topic), f.evidence.get("dataPartition", f.partition))
                    == (tp["topic"], tp["partition"])
                ]
                assert len(mine) == 1, (g["group"], c)
                f = mine[0]
                if c["kind"] == "in-lost-range":
                    assert (f.offset_start, f.offset_end) == (c["first_gone_offset"], c["last_gone_offset"])
                    assert f.evidence["committedOffset"] == c["committed_offset"]
                    assert f.evidence["records"] == c["consumed_gone"]
                    assert f.evidence["skipped"] == c["skipped"]
                elif c["kind"] == "above-leo":
                    assert f.evidence["committedOffset"] == c["committed_offset"]
                    assert f.evidence["leaderLogEndOffset"] == c["log_end_offset"]
                    assert f.evidence["rereadEarliest"] == c["log_end_offset"] - c["log_start_offset"]
                else:  # commit-lost
                    assert f.topic == "__consumer_offsets" and f.partition == g["offsets_partition"]
                    assert f.broker in c["brokers"]
                    assert (f.offset_start, f.evidence["committedOffset"]) == (
                        c["record_offset"],
                        c["lost_offset"],
                    )
                    assert f.evidence["leaderCommittedOffset"] == c["committed_offset"]
                    assert f.evidence["records"] == c["re_read"]
        assert {f.code for f in found} == expected_codes, g["group"]
    expected_kinds = {GROUPS: {"ok", "in-lost-range", "above-leo"}, OFFSETS: {"ok", "commit-lost"}}[lab]
    assert kinds == expected_kinds
