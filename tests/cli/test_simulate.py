"""End-to-end `kafka-auditor simulate`: listing, writing, ground truth, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from auditor.simulate import SCENARIOS


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_list_describes_every_scenario():
    res = run("simulate", "--list")
    assert res.returncode == 0
    for name in SCENARIOS:
        assert any(line.startswith(name + " ") for line in res.stdout.splitlines()), name
    required = {
        "clean",
        "follower-crash",
        "hw-truncation-loss",
        "epoch-truncation-safe",
        "unclean-election",
        "acks1-leader-crash",
        "torn-tail",
        "corrupt-batch",
        "stale-index",
        "hw-ahead-of-log",
        "random",
    }
    assert required <= set(SCENARIOS)


def test_writes_broker_dirs_and_ground_truth_that_dump_reads(tmp_path: Path):
    out = tmp_path / "cluster"
    res = run("simulate", "hw-truncation-loss", "--out", str(out), "--seed", "3", "--records", "50")
    assert res.returncode == 0, res.stderr
    truth = json.loads((out / "ground-truth.json").read_text())
    assert truth["version"] == 2 and truth["scenario"] == "hw-truncation-loss"
    lost = [r["offset"] for p in truth["partitions"] for r in p["committed_lost"]]
    assert lost == [1]
    segments = sorted(out.glob("broker-*/*-0/*.log"))
    assert segments
    res = run("dump", "--deep", *map(str, segments))
    assert res.returncode == 0, res.stderr


def test_errors_exit_2_without_traceback(tmp_path: Path):
    for args in (
        ["simulate", "no-such-scenario", "--out", str(tmp_path / "x")],
        ["simulate", "clean"],
        ["simulate", "clean", "--out", str(tmp_path / "y"), "--compression", "brotli"],
        ["simulate"],
    ):
        res = run(*args)
        assert res.returncode == 2, args
        assert "Traceback" not in res.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("evidence")
    res = run("simulate", "clean", "--out", str(busy))
    assert res.returncode == 2 and (busy / "keep.txt").read_text() == "evidence"
