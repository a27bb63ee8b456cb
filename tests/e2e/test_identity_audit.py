"""``audit`` sets replicas apart by Kafka's identity exactly as the simulator's ground truth says: one KA605
per old-incarnation replica (live or ``-stray`` directory), one KA607 per ``-future`` directory, one KA608 per
``-delete`` directory, one KA610 per replica whose KRaft directory assignment names another log dir, nothing
else of KA605-KA610 on any scenario, and no comparison finding on the re-created topic. ``scan`` and ``audit``
agree on which directories hold an old incarnation. The scenarios are audited once in the shared
``sim_audit`` run (``tests/conftest.py``); one more goes through the CLI's JSON report."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.scan import scan
from auditor.simulate import SimOptions, run_scenario
from tests.support.sim_audit import SIM_RUNS, label, of_cluster

pytestmark = pytest.mark.spark

IDENTITY_CODES = ("KA605", "KA606", "KA607", "KA608", "KA609", "KA610")
COMPARISON_CODES = {"KA601", "KA602", "KA701", "KA702", "KA703", "KA704", "KA710", "KA711", "KA721"}
IDENTITY_SCENARIOS = ("recreated-topic", "recreated-topic-restarted", "jbod-move")
LABELS = [label(name, seed) for name, seed in SIM_RUNS]


def expected(truth: dict) -> set[tuple]:
    """(code, broker, topic, partition, directory) of every identity finding the ground truth calls for."""
    out = set()
    for key in ("incarnations", "deleted_replicas", "moves"):
        for e in truth.get(key, []):
            out |= {(code, e["broker"], e["topic"], e["partition"], e["dir"]) for code in e["expected_codes"]}
    for m in truth.get("directory_mismatches", []):
        name = f"{m['topic']}-{m['partition']}"
        out |= {(code, m["broker"], m["topic"], m["partition"], name) for code in m["expected_codes"]}
    return out


def found(findings) -> set[tuple]:
    return {
        (f.code, f.broker, f.topic, f.partition, f.evidence.get("directory"))
        for f in findings
        if f.code in IDENTITY_CODES
    }


@pytest.mark.parametrize("lab", LABELS)
def test_identity_findings_equal_the_truth(sim_audit, lab):
    truth = sim_audit.truths[lab]
    assert found(of_cluster(sim_audit.result.findings, lab)) == expected(truth)


def test_the_identity_scenarios_are_audited():
    assert {name for name, _seed in SIM_RUNS} >= set(IDENTITY_SCENARIOS)


@pytest.mark.parametrize("name", IDENTITY_SCENARIOS)
def test_evidence_of_each_replica_set_apart(sim_audit, name):
    lab = label(name, 1)
    truth = sim_audit.truths[lab]
    by_dir = {
        (f.code, f.broker, f.evidence.get("directory")): f
        for f in of_cluster(sim_audit.result.findings, lab)
        if f.code in IDENTITY_CODES
    }
    for key in ("incarnations", "deleted_replicas"):
        for e in truth[key]:
            f = by_dir[(e["expected_codes"][0], e["broker"], e["dir"])]
            ev = f.evidence
            assert (ev["topicId"], ev["currentTopicId"], ev["dirKind"]) == (
                e["topic_id"],
                e["current_topic_id"],
                e["dir_kind"],
            )
            assert (ev["logStartOffset"], ev["logEndOffset"], ev["records"], ev["bytes"]) == (
                e["log_start_offset"],
                e["log_end_offset"],
                e["records"],
                e["bytes"],
            )
            if key == "incarnations":
                assert (ev["removedAtMetadataOffset"], ev["removedTimestamp"]) == (
                    e["remove_topic_offset"],
                    e["remove_topic_timestamp"],
                )
                assert ev.get("highWatermark") == e["high_watermark_checkpoint"]
    for m in truth["moves"]:
        ev = by_dir[("KA607", m["broker"], m["dir"])].evidence
        assert (ev["logEndOffset"], ev["liveLogEndOffset"], ev["topicId"]) == (
            m["future_log_end_offset"],
            m["log_end_offset"],
            m["topic_id"],
        )
    for m in truth["directory_mismatches"]:
        ev = by_dir[("KA610", m["broker"], f"{m['topic']}-{m['partition']}")].evidence
        assert (ev["assignedDirectory"], ev["directoryId"]) == (m["assigned_directory_id"], m["directory_id"])


@pytest.mark.parametrize("name", IDENTITY_SCENARIOS)
def test_no_comparison_finding_on_the_current_replicas(sim_audit, name):
    lab = label(name, 1)
    findings = of_cluster(sim_audit.result.findings, lab, "t0")
    assert [(f.code, f.broker, f.partition) for f in findings if f.code in COMPARISON_CODES] == []
    assert [f.code for f in of_cluster(sim_audit.result.findings, lab) if f.code in {"KA720", "KA723"}] == []


@pytest.mark.parametrize("name", ("recreated-topic", "recreated-topic-restarted"))
def test_scan_and_audit_agree_on_old_incarnations(sim_audit, name):
    lab = label(name, 1)
    audited = {
        (f.broker, f.topic, f.partition, f.evidence["directory"])
        for f in of_cluster(sim_audit.result.findings, lab)
        if f.code == "KA605"
    }
    scanned = set()
    for f in scan([sim_audit.root / lab], jobs=1).findings:
        if f.code == "KA510":  # on partition.metadata of a directory still named <topic>-<partition>
            scanned.add((f.broker, f.topic, f.partition, f"{f.topic}-{f.partition}"))
        elif f.code == "KA508":  # on the -stray directory
            scanned.add((f.broker, f.topic, f.partition, f.file.rstrip("/").rsplit("/", 1)[-1]))
    assert audited == scanned and len(audited) == len(sim_audit.truths[lab]["incarnations"])


def test_cli_json_report_of_a_restarted_broker(spark, tmp_path):
    """``kafka-auditor audit DIR -f json`` on ``recreated-topic-restarted`` (another seed and more
    partitions): the report's KA605 findings are the ground truth's old-incarnation replicas."""
    root = tmp_path / "cluster"
    truth = run_scenario("recreated-topic-restarted", root, SimOptions(seed=4, partitions=4, records=200))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["audit", str(root), "--format", "json", "--output", str(out)])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(out.read_text())
    old = {
        (f["broker"], f["topic"], f["partition"], f["evidence"]["directory"], f["evidence"]["topicId"])
        for f in doc["findings"]
        if f["code"] == "KA605"
    }
    assert old == {
        (e["broker"], e["topic"], e["partition"], e["dir"], e["topic_id"]) for e in truth["incarnations"]
    }
    assert len(old) == 4
    assert not [f for f in doc["findings"] if f["code"] in COMPARISON_CODES and f["topic"] == "t0"]
