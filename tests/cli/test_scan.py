"""End-to-end ``kafka-auditor scan``: exit codes, formats and --output, selection, usage errors, no
traceback on
garbage, and evidence safety (nothing in the scanned tree changes and nothing is created)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from auditor.report.model import SCHEMA_VERSION
from tests.rules.builder import standard, truncate

EXE = [sys.executable, "-m", "auditor.cli"]
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env=full_env, cwd=REPO, timeout=120)


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    ld, _ = standard(tmp_path / "broker-1")
    return ld.write()


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A crash-consistent copy with a torn tail (warning) and the high watermark above the LEO (error)."""
    ld, p = standard(tmp_path / "broker-2", node_id=2, clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 9)
    return ld.root


def tree_state(root: Path) -> dict[str, tuple]:
    state = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        if p.is_symlink():
            state[str(p.relative_to(root))] = ("link", os.readlink(p), st.st_mtime_ns)
        elif p.is_dir():
            state[str(p.relative_to(root))] = ("dir", st.st_mtime_ns, st.st_mode)
        else:
            state[str(p.relative_to(root))] = (
                hashlib.sha256(p.read_bytes()).hexdigest(),
                st.st_size,
                st.st_mtime_ns,
                st.st_mode,
            )
    return state


def test_clean_exits_0(clean):
    res = run("scan", str(clean))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "exit 0: no findings" in res.stdout
    assert res.stderr == ""  # no progress bar when stderr is not a terminal


def test_findings_exit_1_and_thresholds(broken):
    assert run("scan", str(broken)).returncode == 1
    assert run("scan", str(broken), "--exit-zero").returncode == 0
    assert run("scan", str(broken), "--fail-on", "critical").returncode == 0
    assert run("scan", str(broken), "--fail-on", "never").returncode == 0
    assert run("scan", str(broken), "--ignore", "KA4").returncode == 0  # the error is the HW check
    assert run("scan", str(broken), "--ignore", "KA4", "--fail-on", "warning").returncode == 1
    assert run("scan", str(broken), "--select", "segment.torn-tail", "--fail-on", "warning").returncode == 1
    assert run("scan", str(broken), "--select", "KA5").returncode == 0


def test_json_output_file(broken, tmp_path):
    out = tmp_path / "report.json"
    res = run("scan", str(broken), "--format", "json", "--output", str(out))
    assert res.returncode == 1 and res.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["schemaVersion"] == SCHEMA_VERSION and doc["exitCode"] == 1
    assert {"KA102", "KA401", "KA405"} <= {f["code"] for f in doc["findings"]}
    assert not list(tmp_path.glob(".kafka-auditor-*"))  # the temporary file was renamed
    # timestamps in reports are ISO-8601 UTC strings (the data contract): the run started before the report
    started, generated = (doc["stats"]["startedAt"], doc["generatedAt"])
    assert isinstance(started, str) and started.endswith("Z")
    assert datetime.fromisoformat(started) <= datetime.fromisoformat(generated)
    assert datetime.fromisoformat(started).utcoffset() == timedelta(0)


@pytest.mark.parametrize("fmt", ["jsonl", "sarif", "junit", "html", "prometheus", "text"])
def test_formats_on_stdout(broken, fmt):
    res = run("scan", str(broken), "--format", fmt)
    assert res.returncode == 1, res.stderr
    assert res.stdout.strip()
    if fmt == "sarif":
        from tests.report.test_sarif import check_github_sarif, validate_sarif

        doc = json.loads(res.stdout)
        assert doc["version"] == "2.1.0"
        validate_sarif(doc)
        check_github_sarif(doc)


@pytest.mark.parametrize(
    "args",
    [
        ["scan"],
        ["scan", "/nonexistent/log/dir"],
        ["scan", "--bogus", "x"],
        ["scan", "--format", "yaml", "x"],
        ["scan", "--select", "KA9", "{clean}"],
        ["scan", "--ignore", "nonsense.rule", "{clean}"],
        ["scan", "--jobs", "-1", "{clean}"],
        ["scan", "{clean}/orders-0"],
        ["scan", "{clean}/meta.properties"],
        ["scan", "{clean}", "--output", "{clean}/report.json"],
        ["scan", "--explain", "KA999"],
    ],
)
def test_usage_errors_exit_2(clean, args):
    res = run(*[a.format(clean=clean) for a in args])
    assert res.returncode == 2, (args, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert not (clean / "report.json").exists()


def test_unreadable_input_exits_2(clean):
    os.symlink(clean / "nowhere", clean / "orders-0" / "00000000000000000099.log")
    res = run("scan", str(clean), "--format", "json")
    assert res.returncode == 2
    doc = json.loads(res.stdout)
    assert "KA001" in {f["code"] for f in doc["findings"]} and doc["exitCode"] == 2
    assert run("scan", str(clean), "--exit-zero").returncode == 2
    assert run("scan", str(clean), "--ignore", "KA001").returncode == 2  # unreadable input is never hidden


def test_list_rules_and_explain():
    res = run("scan", "--list-rules")
    assert res.returncode == 0 and "| KA101 | `segment.crc-mismatch` | critical |" in res.stdout
    res = run("scan", "--explain", "KA401")
    assert res.returncode == 0 and "What to do:" in res.stdout and "high watermark" in res.stdout


def test_garbage_never_gives_a_traceback(tmp_path):
    root = tmp_path / "broker-9"
    part = root / "junk-0"
    part.mkdir(parents=True)
    rnd = bytes((i * 7919 + 13) % 251 for i in range(5000))
    for name in (
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "00000000000000000000.txnindex",
        "00000000000000000000.snapshot",
        "leader-epoch-checkpoint",
        "partition.metadata",
    ):
        (part / name).write_bytes(rnd)
    for name in (
        "meta.properties",
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        ".kafka_cleanshutdown",
    ):
        (root / name).write_bytes(rnd[:200])
    res = run("scan", str(root), "--format", "json")
    assert res.returncode in (1, 2), res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    codes = {f["code"] for f in json.loads(res.stdout)["findings"]}
    assert "KA002" not in codes, "a check crashed on garbage"
    assert {"KA301", "KA302", "KA303", "KA304"} <= codes


def test_scanning_never_writes_to_the_evidence(clean, broken, tmp_path):
    before = {d: tree_state(d) for d in (clean, broken)}
    for fmt in ("text", "json", "sarif", "junit", "html", "prometheus", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        res = run("scan", str(clean), str(broken), "--format", fmt, "--output", str(out), "--jobs", "2")
        assert res.returncode == 1, res.stderr
    res = run("scan", str(tmp_path), "--jobs", "1")  # the parent directory: both log dirs discovered
    assert res.returncode == 1
    after = {d: tree_state(d) for d in (clean, broken)}
    assert after == before
