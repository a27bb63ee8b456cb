"""The audit at a production broker's shape: a simulated unclean election of 3 brokers holding over a million
batches each, audited end to end by the CLI in its own process (its own JVM, the default settings a user
gets), with the findings checked against the ground truth and the peak resident memory of the whole
process tree (Python and the JVM) held under :data:`RSS_BOUND`. The time is printed, not asserted (speed is
stated by ``bench/``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

PARTITIONS, BATCHES = 4, 420_000
"""Per broker: 4 partitions; the unclean-election scale scenario's replicas hold about 0.65 x ``BATCHES``
(brokers 2 and 3) to 0.75 x ``BATCHES`` (broker 1) one-record batches per partition: over 1 M each."""
RSS_BOUND = 4 << 30
"""Peak RSS of the audit's process tree: the driver JVM's heap (``KAFKA_AUDITOR_DRIVER_MEMORY``, 2 GiB by
default, which Spark fills before it spills) plus the JVM's own memory and the Python driver and workers
(about 1.4 GiB measured); bounded by design, not by the input (about 3 x 90 MB of segments here:
``bench/bench_scale_audit.py`` compares the peak with a tenth of the batches)."""


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        p = int(entry)
        children.setdefault(int(fields[1]), []).append(p)
        rss[p] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run ``cmd``; its result, wall seconds and the peak RSS of its process tree (sampled every 0.2 s)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=900)
    done.set()
    sampler.join()
    seconds = time.monotonic() - started
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), seconds, peak[0]


@pytest.fixture(scope="module")
def big_cluster(tmp_path_factory) -> Path:
    from auditor.simulate import run_scenario
    from auditor.simulate.config import SimOptions

    out = tmp_path_factory.mktemp("scale") / "cluster"
    run_scenario(
        "unclean-election", out, SimOptions(scale=True, partitions=PARTITIONS, records=BATCHES, brokers=3)
    )
    return out


def test_audit_of_three_brokers_of_a_million_batches(big_cluster, tmp_path):
    truth = json.loads((big_cluster / "ground-truth.json").read_text())
    report = tmp_path / "audit.json"
    exe = Path(sys.executable).with_name("kafka-auditor")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_AUDITOR_")}
    res, seconds, peak = run_measured(
        [str(exe), "audit", str(big_cluster), "-f", "json", "-o", str(report), "--exit-zero"], env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    d = json.loads(report.read_text())
    print(f"\naudit of {d['stats']}: {seconds:.1f} s wall, peak RSS {peak / 2**20:.0f} MiB")
    assert peak < RSS_BOUND, f"peak RSS {peak / 2**20:.0f} MiB"
    # the ground truth: every partition's committed loss on broker 1 (KA710) and nothing else above info
    lost = {
        (p["topic"], p["partition"]): sum(x["records"] for x in p["expected_findings"]["truncation_loss"])
        for p in truth["partitions"]
    }
    found: dict[tuple, int] = {}
    for f in d["findings"]:
        if f["code"] == "KA710":
            key = (f["topic"], f["partition"])
            found[key] = found.get(key, 0) + int(f["evidence"]["records"])
    assert found == {k: v for k, v in lost.items() if v}
    codes = {f["code"] for f in d["findings"] if f["severity"] != "info"}
    assert codes <= {"KA601", "KA620", "KA702", "KA704", "KA710"}, codes
