"""Every renderer on the same report: JSON (schemaVersion), JSON Lines, SARIF 2.1.0, JUnit XML, HTML,
Prometheus textfile and the Rich terminal report (plain when piped or NO_COLOR, colour only when asked)."""

from __future__ import annotations

import io
import json
import re
from xml.etree import ElementTree as ET

import pytest

from auditor.findings import Severity
from auditor.report import FORMATS, SCHEMA_VERSION, Report, exit_code, render
from auditor.rules.registry import select_rules
from auditor.scan import SCAN_SCOPES, scan
from tests.rules.builder import standard, truncate

ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Report:
    root = tmp_path_factory.mktemp("report")
    ld, p = standard(root / "broker-1", clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 7)
    (ld.root / "notes.txt").write_text("x")
    ld2, _ = standard(root / "broker-2", node_id=2)
    ld2.write()
    result = scan([ld.root, ld2.root], jobs=1)
    selection = select_rules(scopes=SCAN_SCOPES)
    return Report(
        command="scan",
        findings=result.findings,
        rules=selection.rules(),
        partitions=result.partitions,
        inputs=result.logdirs,
        stats=result.stats,
        partition_columns=[("broker", "broker"), ("directory", "partition"), ("logEndOffset", "LEO")],
    )


def _render(report: Report, fmt: str, **kw) -> str:
    out = io.StringIO()
    render(report, fmt, out, **kw)
    return out.getvalue()


def test_fixture_has_findings_of_several_severities(report):
    sev = {f.severity for f in report.findings}
    assert {Severity.ERROR, Severity.WARNING, Severity.INFO} <= sev
    assert report.exit_code == 1


def test_json(report):
    doc = json.loads(_render(report, "json"))
    assert doc["schemaVersion"] == SCHEMA_VERSION
    assert doc["tool"]["name"] == "kafka-auditor" and doc["command"] == "scan"
    assert doc["exitCode"] == 1 and doc["failOn"] == "error"
    assert doc["summary"]["total"] == len(report.findings) == len(doc["findings"])
    assert sum(doc["summary"]["bySeverity"].values()) == len(report.findings)
    first = doc["findings"][0]
    for key in (
        "code",
        "name",
        "severity",
        "message",
        "broker",
        "logDir",
        "topic",
        "partition",
        "file",
        "position",
        "offsetStart",
        "offsetEnd",
        "epoch",
        "evidence",
        "fingerprint",
    ):
        assert key in first
    assert {p["broker"] for p in doc["partitions"]} == {1, 2}
    torn = next(f for f in doc["findings"] if f["code"] == "KA102")
    assert torn["evidence"]["trailingBytes"] > 0 and "expected" in torn["evidence"]


def test_jsonl(report):
    lines = _render(report, "jsonl").splitlines()
    assert len(lines) == len(report.findings)
    rows = [json.loads(line) for line in lines]
    assert all(r["schemaVersion"] == SCHEMA_VERSION for r in rows)
    assert [r["code"] for r in rows] == [f.code for f in report.findings]


def test_sarif(report):
    from tests.report.test_sarif import check_github_sarif, validate_sarif

    doc = json.loads(_render(report, "sarif"))
    validate_sarif(doc)
    check_github_sarif(doc)
    assert doc["version"] == "2.1.0" and "sarif" in doc["$schema"]
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for r in rules:
        assert r["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
        assert r["shortDescription"]["text"] and r["help"]["markdown"]
    bases = run["originalUriBaseIds"]
    assert len(run["results"]) == len(report.findings)
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("note", "warning", "error")
        assert res["partialFingerprints"]
        for loc in res["locations"]:
            art = loc.get("physicalLocation", {}).get("artifactLocation")
            if art and "uriBaseId" in art:
                assert art["uriBaseId"] in bases and not art["uri"].startswith("/")
    torn = next(r for r in run["results"] if r["ruleId"] == "KA102")
    assert torn["locations"][0]["physicalLocation"]["region"]["byteOffset"] >= 0
    assert torn["locations"][0]["logicalLocations"][0]["name"] == "orders-0"
    assert run["invocations"][0]["exitCode"] == 1


def test_junit(report):
    root = ET.fromstring(_render(report, "junit"))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 2
    failures = root.findall(".//failure")
    assert failures and int(root.get("failures")) == len(failures)
    assert any("KA401" in (f.text or "") for f in failures)  # error: fails the case
    assert any("KA102" in (o.text or "") for o in root.iter("system-out"))  # warning: reported, not failing
    cases = {(tc.get("classname"), tc.get("name")) for tc in root.iter("testcase")}
    assert ("kafka-auditor.scan.broker-1.orders-0", "KA401 partition.hw-above-leo") in cases
    assert ("kafka-auditor.scan.broker-1", "KA501 inventory.unknown-file") in cases
    assert int(root.get("tests")) == len(list(root.iter("testcase"))) == len(cases)


def test_html(report):
    page = _render(report, "html")
    assert (
        page.lstrip().lower().startswith("<!doctype html")
        and "<title>kafka-auditor scan report</title>" in page
    )
    assert "KA102" in page and "segment.torn-tail" in page


def test_prometheus(report):
    text = _render(report, "prometheus")
    sample = re.compile(r'^[a-z_]+(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? -?[0-9.e+]+$')
    for line in text.splitlines():
        assert line.startswith("# ") or sample.match(line), line
    assert 'kafka_auditor_findings_by_severity{command="scan",severity="error"}' in text
    assert "kafka_auditor_exit_code" in text


def test_terminal_plain_when_piped_and_colour_on_request(report, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    plain = _render(report, "text")
    assert not ANSI.search(plain)
    assert "Findings: " in plain and "KA102" in plain and "exit 1" in plain
    assert max(len(line) for line in plain.splitlines()) <= 100
    coloured = _render(report, "text", color=True)
    assert ANSI.search(coloured)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(_render(report, "text"))


def test_every_format_is_rendered(report):
    for fmt in FORMATS:
        assert _render(report, fmt)
    with pytest.raises(ValueError):
        _render(report, "yaml")


def test_exit_code_contract():
    from auditor.findings import Finding

    err = [Finding("KA401", Severity.ERROR, "m")]
    warn = [Finding("KA102", Severity.WARNING, "m")]
    assert exit_code([], Severity.ERROR) == 0
    assert exit_code(err, Severity.ERROR) == 1
    assert exit_code(warn, Severity.ERROR) == 0
    assert exit_code(warn, Severity.WARNING) == 1
    assert exit_code(err, Severity.CRITICAL) == 0
    assert exit_code(err, None) == 0
    assert exit_code(err, Severity.ERROR, exit_zero=True) == 0
    assert exit_code([], Severity.ERROR, incomplete=True) == 2
    assert exit_code(err, Severity.ERROR, exit_zero=True, incomplete=True) == 2
