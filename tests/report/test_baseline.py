"""``--baseline`` / ``--write-baseline`` of every reporting command: a baseline written from a run suppresses
that run's findings (counted in ``stats.suppressed`` and the Prometheus gauge), the file is written
atomically with the umask's mode, and a missing or invalid baseline is one error line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import replace
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
    assert doc["tool"] == "kafka-auditor" and doc["version"] == 2
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
                "version": 2,
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
        (b'{"tool": "kafka-auditor", "version": 2, "fingerprints": [{"code": "KA101"}]}', "fingerprints[0]"),
        (b'{"tool": "kafka-auditor", "version": 1, "fingerprints": []}', "write it again"),
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


# ------------------------------------------------------------------------- fingerprints from stable identity


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    """A simulated 3-broker cluster with a corrupt batch (findings at byte positions of segments)."""
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path_factory.mktemp("sim") / "corrupt-batch"
    run_scenario("corrupt-batch", root, SimOptions(seed=2))
    return root


def _brokers(root: Path) -> list[str]:
    return [str(p) for p in sorted(root.iterdir()) if p.is_dir()]


def test_copied_evidence_keeps_every_fingerprint_and_the_baseline(simulated, tmp_path):
    base = tmp_path / "baseline.json"
    first = run(
        "scan", *_brokers(simulated), "--format", "json", "--no-progress", "--write-baseline", str(base)
    )
    assert first.exit_code in (0, 1), first.output
    found = json.loads(first.stdout)["findings"]
    assert len(found) >= 3 and any(f["position"] is not None for f in found)

    copy = tmp_path / "elsewhere" / "ticket-17" / "evidence"
    shutil.copytree(simulated, copy)
    again = json.loads(run("scan", *_brokers(copy), "--format", "json", "--no-progress").stdout)["findings"]
    assert {f["logDir"] for f in again}.isdisjoint({f["logDir"] for f in found})  # other absolute paths
    assert [(f["code"], f["fingerprint"]) for f in again] == [(f["code"], f["fingerprint"]) for f in found]

    suppressed = run("scan", *_brokers(copy), "--format", "json", "--no-progress", "--baseline", str(base))
    assert suppressed.exit_code == 0, suppressed.output
    doc = json.loads(suppressed.stdout)
    assert doc["findings"] == [] and doc["stats"]["suppressed"] == len(found)


def _finding(**kw) -> Finding:
    return Finding(code="KA405", severity=Severity.WARNING, message="m", **kw)


def test_fingerprint_ignores_where_the_evidence_lies():
    here = _finding(broker=1, log_dir="/srv/a/broker-1", file="/srv/a/broker-1/t-0/00000000000000000000.log")
    there = _finding(
        broker=1, log_dir="/mnt/x/y/broker-1/", file="/mnt/x/y/broker-1/t-0/00000000000000000000.log"
    )
    relative = _finding(broker=1, log_dir="broker-1", file="broker-1/t-0/00000000000000000000.log")
    assert here.fingerprint() == there.fingerprint() == relative.fingerprint()
    assert "/srv" not in json.dumps(here.identity()) and "t-0/00000000000000000000.log" in here.identity()
    # the message is not identity; everything else is
    assert (
        _finding(broker=1, log_dir="/l/b").fingerprint()
        == replace(_finding(broker=1, log_dir="/l/b"), message="other words").fingerprint()
    )


def test_fingerprint_tells_apart_what_kafka_tells_apart():
    f = _finding(broker=1, log_dir="/d/kafka-logs-1", file="/d/kafka-logs-1/.kafka_cleanshutdown", position=3)
    variants = [
        replace(f, code="KA406"),
        replace(f, broker=2),
        replace(f, broker=None),  # the broker unknown: the log dir's base name stands for it
        replace(f, topic="t", partition=0),
        replace(f, partition=1),
        replace(f, file="/d/kafka-logs-1/meta.properties"),
        replace(f, file="/elsewhere/.kafka_cleanshutdown"),  # outside the log dir: its base name only
        replace(f, position=4),
        replace(f, offset_start=1),
        replace(f, offset_end=1),
        replace(f, epoch=1),
        replace(f, time="2026-01-01T00:00:00Z"),
        replace(f, evidence={"cluster": "other"}),
        replace(f, evidence={"peer": 3}),
        replace(f, related=[{"broker": 3, "topic": "t", "partition": 0}]),
    ]
    prints = [f.fingerprint(), *(v.fingerprint() for v in variants)]
    assert len(set(prints)) == len(prints) - 2  # all distinct but the two pairs below
    assert variants[6].fingerprint() == f.fingerprint()  # ... which has the same base name
    assert variants[-1].fingerprint() == variants[-2].fingerprint()  # related replica = peer


def test_the_broker_id_names_the_log_dir():
    """A scan on the broker host and one of a copy under another name agree; the base name counts only
    when the broker id is unknown. The documented JBOD limit: a same-code finding in the root files of two
    log dirs of one broker has one fingerprint (their partitions' files still differ)."""
    on_host = _finding(
        broker=1, log_dir="/var/lib/kafka/data", file="/var/lib/kafka/data/t-0/00000000000000000000.log"
    )
    segment = "t-0/00000000000000000000.log"
    copy = replace(on_host, log_dir="/evidence/broker-1", file=f"/evidence/broker-1/{segment}")
    assert on_host.fingerprint() == copy.fingerprint()
    assert replace(on_host, broker=None).fingerprint() != replace(copy, broker=None).fingerprint()
    root = _finding(broker=1, log_dir="/d/kafka-logs-1", file="/d/kafka-logs-1/.kafka_cleanshutdown")
    jbod = replace(root, log_dir="/d/kafka-logs-2", file="/d/kafka-logs-2/.kafka_cleanshutdown")
    assert jbod.fingerprint() == root.fingerprint()  # the limit
    other_partition = replace(jbod, topic="u", partition=1, file="/d/kafka-logs-2/u-1/0.log")
    assert other_partition.fingerprint() != replace(root, topic="t", partition=0).fingerprint()


def test_the_two_divergence_findings_of_one_partition_differ_by_peer():
    """KA601 of brokers 1-2 and 1-3 (one partition, one offset): two findings, two fingerprints."""
    row = {
        "code": "KA601",
        "severity": "error",
        "message": "replicas diverge",
        "broker": 1,
        "log_dir": "/c/broker-1",
        "topic": "t0",
        "partition": 0,
        "offset_start": 500,
        "cluster": "c1",
        "evidence": "{}",
    }
    one_two, one_three = Finding.from_row({**row, "peer": 2}), Finding.from_row({**row, "peer": 3})
    assert one_two.fingerprint() != one_three.fingerprint()
    assert Finding.from_dict(one_two.to_dict()).fingerprint() == one_two.fingerprint()


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_the_people_s_formats_say_how_many_findings_the_baseline_suppressed(broken, tmp_path, fmt):
    base = tmp_path / "all.json"
    first = run("scan", str(broken), "--format", "json", "--write-baseline", str(base))
    total = len(json.loads(first.stdout)["findings"])
    assert total > 0
    res = run("scan", str(broken), "--format", fmt, "--baseline", str(base))
    assert f"{total} more suppressed by --baseline" in res.stdout
    plain = run("scan", str(broken), "--format", fmt)
    assert "suppressed by --baseline" not in plain.stdout
