"""``--baseline`` / ``--write-baseline`` of every reporting command: a baseline written from a run suppresses
that run's findings (counted in ``stats.suppressed`` and the Prometheus gauge), the file is written
atomically with the umask's mode, and a missing or invalid baseline is one error line, exit 2."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding, Severity
from auditor.report.baseline import BaselineError, baseline_document, read_baseline, write_baseline
from tests.rules.builder import standard, truncate


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "120"})


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A crash-consistent copy with a torn tail: findings at warning and error."""
    ld, p = standard(tmp_path / "logs" / "broker-2", node_id=2, clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 9)
    return ld.root


def test_every_reporting_command_takes_the_baseline_options():
    group = typer.main.get_command(app)
    for command in ("scan", "audit", "report"):
        names = {p.name for p in group.commands[command].params}
        assert {"baseline", "write_baseline"} <= names, command


def test_a_written_baseline_suppresses_the_findings_of_its_run(broken, tmp_path):
    base = tmp_path / "baseline.json"
    first = run("scan", str(broken), "--format", "json", "--write-baseline", str(base))
    assert first.exit_code == 1, first.output
    found = json.loads(first.stdout)["findings"]
    assert found
    doc = json.loads(base.read_text())
    assert doc["tool"] == "kafka-auditor" and doc["version"] == 1
    assert {e["fingerprint"] for e in doc["fingerprints"]} == {f["fingerprint"] for f in found}
    assert all(set(e) == {"fingerprint", "code", "message"} for e in doc["fingerprints"])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(base.stat().st_mode) == 0o666 & ~umask
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kafka-auditor-")]  # no temporary left

    second = run("scan", str(broken), "--format", "json", "--baseline", str(base))
    assert second.exit_code == 0, second.output
    report = json.loads(second.stdout)
    assert report["findings"] == [] and report["stats"]["suppressed"] == len(found)

    prom = run("scan", str(broken), "--format", "prometheus", "--baseline", str(base))
    assert prom.exit_code == 0
    assert (
        f'kafka_auditor_findings_suppressed{{command="scan",reason="baseline"}} {len(found)}' in prom.stdout
    )


def test_a_partial_baseline_keeps_the_other_findings(broken, tmp_path):
    first = json.loads(run("scan", str(broken), "--format", "json").stdout)["findings"]
    keep, *rest = first
    base = tmp_path / "partial.json"
    base.write_text(
        json.dumps(
            {
                "tool": "kafka-auditor",
                "version": 1,
                "fingerprints": [{"fingerprint": f["fingerprint"]} for f in rest],
            }
        )
    )
    res = run("scan", str(broken), "--format", "json", "--baseline", str(base))
    doc = json.loads(res.stdout)
    assert [f["fingerprint"] for f in doc["findings"]] == [keep["fingerprint"]]
    assert doc["stats"]["suppressed"] == len(rest)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read the baseline"),
        (
            b'{"tool": "kafka-auditor",\n "version": 1,\n "fingerprints": [}',
            "line 3 column 19 (byte offset 59)",
        ),
        (b'{"tool": "other", "version": 1, "fingerprints": []}', "not a baseline"),
        (b'{"tool": "kafka-auditor", "version": 7, "fingerprints": []}', "version 7"),
        (b'{"tool": "kafka-auditor", "version": 1, "fingerprints": [{"code": "KA101"}]}', "fingerprints[0]"),
        (b"\xff\xfe", "not UTF-8 at byte offset 0"),
    ],
)
def test_an_unusable_baseline_is_one_line_and_exit_2(broken, tmp_path, content, expected):
    base = tmp_path / "bad.json"
    if content is not None:
        base.write_bytes(content)
    res = run("scan", str(broken), "--baseline", str(base))
    assert res.exit_code == 2
    [line] = res.stderr.splitlines()
    assert line.startswith(f"kafka-auditor: error: --baseline {base}: ") and expected in line, line


def test_write_baseline_is_refused_inside_the_evidence(broken):
    inside = broken / "baseline.json"
    res = run("scan", str(broken), "--write-baseline", str(inside))
    assert res.exit_code == 2 and "--write-baseline" in res.stderr and not inside.exists()


def test_baseline_round_trip_and_size_limit(tmp_path, monkeypatch):
    findings = [
        Finding(
            code="KA801",
            severity=Severity.ERROR,
            message="m",
            topic="t",
            partition=p,
            time="2026-01-01T00:00:00Z",
        )
        for p in (0, 1, 1)
    ]
    path = tmp_path / "b.json"
    write_baseline(path, findings)
    assert read_baseline(path) == {f.fingerprint() for f in findings}
    assert len(baseline_document(findings)["fingerprints"]) == 2  # one entry per fingerprint
    monkeypatch.setattr("auditor.report.baseline.MAX_BASELINE_BYTES", 10)
    with pytest.raises(BaselineError, match="more than a baseline may hold"):
        read_baseline(path)
