"""A partly unreadable replica through the real CLI (issue 8, item 3; here rather than in ``tests/hostile``
because it runs a Spark audit): one middle segment of the old leader of a simulated
unclean election replaced by a FIFO. Neither command blocks on it; ``scan`` and ``audit`` agree on the
replica's log end offset; ``audit`` names the file (KA691), exits 2, and derives no divergence,
high-watermark or loss finding from the unreadable offsets: the committed loss is the simulator's ground
truth, as without the FIFO.
"""

from __future__ import annotations

import faulthandler
import json
import os

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate import SimOptions, run_scenario
from tests.hostile.conftest import run_bounded

AUDIT_SECONDS = 300

SEGMENT = "00000000000000000181.log"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("replica") / "ule"
    truth = run_scenario("unclean-election", root, SimOptions(seed=7))
    part = root / "broker-1" / "t0-0"
    if not (part / SEGMENT).is_file() or not (part / "00000000000000000360.log").is_file():
        pytest.skip("the simulator no longer rolls broker 1's t0-0 at offset 181 with seed 7")
    (part / SEGMENT).unlink()
    os.mkfifo(part / SEGMENT)
    return root, truth


def test_scan_and_audit_agree_on_an_incomplete_replica(cluster, spark, tmp_path):
    root, truth = cluster
    scan = run_bounded(["scan", str(root / "broker-1"), "--format", "json"], timeout=60)
    assert scan.returncode in (1, 2), scan.stderr
    assert scan.seconds < 30 and scan.peak_rss_mb < 300, (scan.seconds, scan.peak_rss_mb)
    scanned = next(p for p in json.loads(scan.stdout)["partitions"] if p["topic"] == "t0")

    # the audit runs in-process on the session's SparkSession (a second JVM would cost ~20 s); should an
    # executor ever block on the FIFO, faulthandler ends the test run instead of letting it hang
    out = tmp_path / "audit.json"
    faulthandler.dump_traceback_later(AUDIT_SECONDS, exit=True)
    try:
        audit = CliRunner().invoke(app, ["audit", str(root), "--format", "json", "--output", str(out)])
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert audit.exit_code == 2, audit.output
    report = json.loads(out.read_text())
    replica = next(p for p in report["partitions"] if p["topic"] == "t0" and p["broker"] == 1)
    assert replica["logEndOffset"] == scanned["logEndOffset"] == 750
    marks = (replica["unreadableFrom"], replica["unreadableTo"], replica["logEndOffsetKnown"])
    assert marks == (181, 360, True)

    t0 = [f for f in report["findings"] if f.get("topic") == "t0"]
    (incomplete,) = [f for f in t0 if f["code"] == "KA691"]
    assert SEGMENT in incomplete["message"] and "FIFO" in incomplete["message"]
    assert not [f for f in t0 if f["code"] == "KA701"]
    lost = [f for f in t0 if f["code"] == "KA710"]
    assert [(f["broker"], f["offsetStart"]) for f in lost] == [(1, 500)]
    assert replica["lostRecords"] == len(truth["partitions"][0]["committed_lost"]) == 250
    assert replica["divergence"] == 500
    assert any("incomplete from offset 181" in e for e in report.get("errors", []))
