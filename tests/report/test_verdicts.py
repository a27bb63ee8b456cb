"""The answer first (``auditor.report.verdicts``): the verdict leads the text report, reads whole at 80 and at
200 columns, is in the JSON report (and its schema), and an audit of one replica of a three-replica partition
says what was not checked and exits non-zero."""

from __future__ import annotations

import json
import re

import pytest

from auditor.findings import Finding, Severity
from auditor.report.verdicts import audit_verdicts, verdict_lines

pytestmark = pytest.mark.spark


def _text(unclean_audit, width: int) -> str:
    res = unclean_audit.again("--format", "text", env={"COLUMNS": str(width)})
    return res.output


@pytest.mark.parametrize("width", [80, 200])
def test_the_verdict_comes_first_and_reads_whole(unclean_audit, width):
    text = _text(unclean_audit, width)
    assert max(len(line) for line in text.splitlines()) <= width
    head, _, rest = text.partition("Findings: ")
    assert rest, text
    verdict = head[head.index("Verdict") :]
    # every number of the verdict whole: the loss, its offsets, bytes, the brokers, each step's number
    flat = " ".join(verdict.split())
    assert "t0-0: DIVERGED (critical): 250 committed records lost (offsets 500..749, 22874 bytes)" in flat
    assert "still held by broker(s) 1" in flat
    assert "current leader broker 2" in flat and "(electing it loses 250 committed records)" in flat
    for n, words in (
        (1, "Do not restart broker(s) 1"),
        (2, "Export them: kafka-auditor audit"),
        (3, "Produce"),
    ):
        assert f"{n}. {words}" in flat
    assert "--export-lost ./lost-t0-0" in flat
    # the records exported there are produced again by `reproduce` (a dry run first)
    assert "kafka-auditor reproduce ./lost-t0-0/lost-records.jsonl --bootstrap-server HOST:PORT" in flat
    assert re.search(r"\d+ other partition\(s\): consistent", flat)


def test_the_json_report_has_the_verdicts(unclean_audit):
    doc = json.loads((unclean_audit.out / "report.json").read_text())
    (v,) = [v for v in doc["verdicts"] if v["topic"] == "t0" and v["partition"] == 0]
    assert (v["state"], v["severity"]) == ("diverged", "critical")
    assert v["committedLost"] == {"records": 250, "offsets": [[500, 749]], "brokers": [1], "bytes": 22874}
    assert v["leaders"]["current"]["broker"] == 2 and v["leaders"]["kafkaChoice"]["broker"] == 2
    assert v["nextSteps"][0].startswith("Do not restart broker(s) 1")
    # the audit exported the records (--export-lost OUT/lost): the step names that file, no export step
    jsonl = unclean_audit.out / "lost" / "lost-records.jsonl"
    assert jsonl.is_file()
    assert v["nextSteps"][1].endswith(f"kafka-auditor reproduce {jsonl} --bootstrap-server HOST:PORT")
    assert not any(step.startswith("Export them") for step in v["nextSteps"])
    fingerprints = {f["fingerprint"] for f in doc["findings"]}
    assert set(v["findings"]) <= fingerprints
    assert doc["stats"]["consistentPartitions"] >= 1


def test_one_replica_of_three_is_not_checked_and_exits_non_zero(spark, tmp_path):
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path / "ule"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    out = tmp_path / "report.json"
    args = ["audit", str(root / "broker-1"), str(root / "controller-100"), "-f", "json", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output
    doc = json.loads(out.read_text())
    (missing,) = [f for f in doc["findings"] if f["code"] == "KA611" and f["partition"] == 0]
    assert missing["severity"] == "error" and missing["evidence"]["missing"] == [2, 3]
    (v,) = [v for v in doc["verdicts"] if v["partition"] == 0]
    assert v["state"] == "not checked" and v["replicasCompared"] == 1
    assert any("nothing was compared" in why for why in v["notChecked"])
    assert any("Audit the replicas of broker(s) 2, 3 too" in step for step in v["nextSteps"])


def _finding(code: str, severity: Severity, **kw) -> Finding:
    return Finding(code=code, name=code, severity=severity, message=code, **kw)


def test_least_committed_loss_is_named_apart_from_kafkas_choice():
    """Kafka's choice (the election rules' first candidate) loses more committed records than another
    candidate: the verdict names both, and the next steps say how to make the other one lead."""
    findings = [
        _finding("KA710", Severity.CRITICAL, topic="t", partition=0, broker=3, offset_start=10, offset_end=19,
                 evidence={"records": 10, "bytes": 100}),
    ]  # fmt: skip
    rows = [
        {"topic": "t", "partition": 0, "broker": b, "role": "leader" if b == 1 else "follower"}
        for b in (1, 3)
    ]
    election = {
        "topic": "t",
        "partition": 0,
        "recommended": 1,
        "leastLoss": 3,
        "candidates": [
            {"broker": 1, "rank": 1, "committedRecordsLost": 10, "recordsLost": 10, "bytesLost": 100},
            {"broker": 3, "rank": 2, "committedRecordsLost": 2, "recordsLost": 5, "bytesLost": 20},
        ],
    }
    (v,), consistent = audit_verdicts(findings, rows, [election], ["/data/b1", "/data/b3"])
    assert consistent == 0
    assert v["leaders"]["kafkaChoice"]["broker"] == 1 and v["leaders"]["leastLoss"]["broker"] == 3
    text = "\n".join(verdict_lines([v], consistent))
    assert "current leader broker 1 = Kafka's choice (electing it loses 10 committed records)" in text
    assert "least committed loss broker 3 (electing it loses 2 committed records)" in text
    assert any("kafka-leader-election.sh" in s and '"replicas":[3,...]' in s for s in v["nextSteps"])


def test_one_fact_is_one_primary_finding_with_the_others_linked(unclean_audit):
    """KA702, KA704 and KA601 about the offsets broker 1 loses link to the KA710 that counts them; every
    finding keeps its code, severity and fingerprint (--select, counts and exit codes work per code)."""
    doc = json.loads((unclean_audit.out / "report.json").read_text())
    mine = [f for f in doc["findings"] if f["topic"] == "t0" and f["partition"] == 0 and f.get("broker") == 1]
    (loss,) = [f for f in mine if f["code"] == "KA710"]
    linked = {r["code"] for r in loss["related"] if "fingerprint" in r}
    assert {"KA601", "KA702", "KA704"} <= linked
    for f in mine:
        if f["code"] in ("KA702", "KA704", "KA601"):
            assert {"fingerprint": loss["fingerprint"], "code": "KA710", "primary": True} in f["related"]
    text = _text(unclean_audit, 120)
    assert "↳ same offsets as KA710: high watermark 750 of broker 1" in " ".join(text.split())


def test_sarif_and_junit_carry_the_verdicts(unclean_audit, tmp_path):
    import xml.etree.ElementTree as ET

    sarif = unclean_audit.again("--format", "sarif")
    run = json.loads(sarif.output)["runs"][0]
    (v,) = [v for v in run["properties"]["verdicts"] if v["topic"] == "t0" and v["partition"] == 0]
    assert v["committedLost"]["records"] == 250
    junit = unclean_audit.again("--format", "junit")
    suite = ET.fromstring(junit.output).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    head = props["kafka-auditor.verdict.1"]
    assert head.startswith("t0-0: DIVERGED (critical): 250 committed records lost")


def test_the_reproduce_step_names_the_export_or_the_directory_to_export_to():
    """Without an export the steps export to ./lost-TOPIC-PARTITION then reproduce from it; with one they
    reproduce from the file the audit wrote (quoted for a shell)."""
    findings = [
        _finding("KA710", Severity.CRITICAL, topic="t", partition=0, broker=3, offset_start=10, offset_end=19,
                 evidence={"records": 10, "bytes": 100}),
    ]  # fmt: skip
    rows = [
        {"topic": "t", "partition": 0, "broker": b, "role": "leader" if b == 1 else "follower"}
        for b in (1, 3)
    ]
    (v,), _ = audit_verdicts(findings, rows, [], ["/data/b1", "/data/b3"])
    export, produce = v["nextSteps"][1:3]
    assert export == "Export them: kafka-auditor audit /data/b1 /data/b3 --export-lost ./lost-t-0"
    command = "kafka-auditor reproduce ./lost-t-0/lost-records.jsonl --bootstrap-server HOST:PORT"
    assert produce.endswith(command)
    (v,), _ = audit_verdicts(findings, rows, [], ["/data/b1", "/data/b3"], "/out/the lost/lost-records.jsonl")
    assert v["nextSteps"][1].endswith(
        "kafka-auditor reproduce '/out/the lost/lost-records.jsonl' --bootstrap-server HOST:PORT"
    )
    assert "run this dry run, then again with --execute" in v["nextSteps"][1]
