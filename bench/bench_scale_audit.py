"""Benchmark: ``audit`` of raw log directories at a production broker's shape (the audit at fleet scale).

Data: ``simulate <scenario> --scale`` (one-record batches; ``--partitions`` per broker, ``--batches`` per
partition), 3 brokers. Measured in one run, printed separately:
  * in this process, ``run_audit`` on a fresh local session (``--master``, default ``local[2]``): wall seconds
    per phase (the audit's own stages), and Spark's jobs, stages and tasks of the whole audit (from the status
    tracker), the batch rows per second;
  * the CLI (``kafka-auditor audit DIR -f json``) in its own process tree, as a user runs it: wall seconds
    and the peak resident memory of the tree (Python and the JVM, sampled every 0.2 s from /proc);
  * baseline: the same CLI audit of the cluster at a tenth of the batches, in the same run, both on the
    large-input path (``KAFKA_AUDITOR_SMALL_INPUT_BYTES=0``): the ratio of the two peaks says whether memory
    grows with the input (bounded by design: it should not).
Findings are checked against the ground truth (KA710 record counts per partition). No assertion on timings.

Usage: python bench/bench_scale_audit.py [--partitions 4] [--batches 420000] [--scenario unclean-election]
       [--master local[2]] [--data DIR] [--previous DIR] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (/proc)."""
    return sum(tree_rss_by_kind(pid).values())


def tree_rss_by_kind(pid: int) -> dict[str, int]:
    """Resident bytes of ``pid`` and its descendants (/proc), the JVM's (``java``) apart from the rest."""
    children: dict[int, list[int]] = {}
    rss: dict[int, tuple[str, int]] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    text = fh.read()
            except OSError:
                continue
            name, fields = text[text.find("(") + 1 : text.rfind(")")], text.rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = ("java" if name == "java" else "python and the rest", int(fields[21]) * page)
    total: dict[str, int] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in rss:
            kind, size = rss[p]
            total[kind] = total.get(kind, 0) + size
        todo += children.get(p, [])
    return total


PEAKS: dict[str, int] = {}
"""The peak resident bytes by kind (:func:`tree_rss_by_kind`) of the last :func:`cli_audit`."""


def cli_audit(cluster: Path | list[Path], out: Path, code: Path | None = None) -> tuple[float, int, dict]:
    """The CLI audit of ``cluster`` (a folder, or several roots) in its own process tree: wall seconds, peak
    RSS, the JSON report. ``code``: another code tree (an older commit) first on ``PYTHONPATH``."""
    roots = [str(r) for r in (cluster if isinstance(cluster, list) else [cluster])]
    exe = Path(sys.executable).with_name("kafka-auditor")
    started = time.monotonic()
    env = dict(os.environ, KAFKA_AUDITOR_SMALL_INPUT_BYTES="0")  # both sizes on the large-input path
    if code is not None:
        env["PYTHONPATH"] = str(code.resolve())
    # another code tree runs in its own directory: Spark's Python workers import from their working
    # directory first (``python -m pyspark.daemon``), the CLI from PYTHONPATH
    proc = subprocess.Popen(
        [str(exe), "audit", *(str(Path(r).resolve()) for r in roots), "-f", "json", "-o", str(out.resolve()),
         "--exit-zero"],
        env=env,
        cwd=code.resolve() if code is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = [0]
    done = threading.Event()

    PEAKS.clear()

    def sample() -> None:
        while not done.wait(0.2):
            kinds = tree_rss_by_kind(proc.pid)
            peak[0] = max(peak[0], sum(kinds.values()))
            for kind, size in kinds.items():
                PEAKS[kind] = max(PEAKS.get(kind, 0), size)

    threading.Thread(target=sample, daemon=True).start()
    _out, err = proc.communicate()
    done.set()
    if proc.returncode != 0:
        raise SystemExit(f"audit failed: {err.strip()[-500:]}")
    return time.monotonic() - started, peak[0], json.loads(out.read_text())


def previous_loss(data: Path, code: Path | None, cluster, peak: int, report: dict) -> str:
    """With ``code`` (``--previous``), the CLI audit of ``cluster`` by that code tree beside this one's (peak
    ``peak``, ``report``), printed; the recorded row's words ("" without it). A previous design that fails
    is said to, with its error."""
    if code is None:
        return ""
    try:
        prev_s, prev_rss, prev_report = cli_audit(cluster, data / "previous.json", code)
    except SystemExit as e:  # the design before may not finish: say how
        print(f"previous design ({code}): failed: {e}")
        return f"; the previous design (`--previous`) failed: {str(e)[:120]}"
    same = loss_by_partition(prev_report) == loss_by_partition(report)
    kinds = ", ".join(f"{kind} {size / 2**20:.0f} MiB" for kind, size in sorted(PEAKS.items()))
    print(f"previous design ({code}): CLI {prev_s:.1f} s, peak RSS {prev_rss / 2**20:.0f} MiB ({kinds}; "
          f"x{prev_rss / max(peak, 1):.2f} of this design's); the same loss: {same}")  # fmt: skip
    return (
        f"; the previous design (`--previous`) {prev_s:.1f} s, {prev_rss / 2**20:.0f} MiB ({kinds}; "
        f"x{prev_rss / max(peak, 1):.2f})"
    )


def against_tenth(wall: float, peak: int, base_s: float, base_rss: int) -> str:
    """A recorded result's head: the CLI audit's wall seconds and peak RSS against those of the same audit
    at a tenth of the batches."""
    return (
        f"CLI **{wall:.1f} s**, peak RSS **{peak / 2**20:.0f} MiB** (JVM and Python) against "
        f"{base_s:.1f} s and {base_rss / 2**20:.0f} MiB for a tenth of the batches (memory "
        f"x{peak / max(base_rss, 1):.2f} for x10 the input)"
    )


def simulate(scenario: str, out: Path, partitions: int, batches: int) -> dict:
    from auditor.simulate import run_scenario
    from auditor.simulate.config import SimOptions

    if not (out / "ground-truth.json").exists():
        run_scenario(scenario, out, SimOptions(scale=True, partitions=partitions, records=batches, brokers=3))
    return json.loads((out / "ground-truth.json").read_text())


def loss_by_partition(report: dict) -> dict[tuple[str, int], int]:
    """Committed records lost (KA710 ``records``) per (topic, partition) of a JSON report."""
    found: dict[tuple[str, int], int] = {}
    for f in report["findings"]:
        if f["code"] == "KA710":
            key = (f["topic"], f["partition"])
            found[key] = found.get(key, 0) + f["evidence"]["records"]
    return found


def check(truth: dict, report: dict) -> bool:
    lost = {
        (p["topic"], p["partition"]): sum(x["records"] for x in p["expected_findings"]["truncation_loss"])
        for p in truth["partitions"]
    }
    found = loss_by_partition(report)
    expected = {k: v for k, v in lost.items() if v}
    print(f"findings equal the ground truth: {found == expected}")
    return found == expected


def in_process(cluster: Path, master: str) -> dict:
    """``run_audit`` on a fresh session: per-phase seconds, jobs, stages, tasks."""
    from auditor.report.progress import Stages
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.session import get_spark

    started = time.monotonic()
    spark = get_spark(master)
    print(f"Spark start-up: {time.monotonic() - started:.1f} s")
    inputs = discover([str(cluster)])
    stages = Stages(enabled=False)
    t0 = time.monotonic()
    result = run_audit(spark, inputs, stages=stages)
    wall = time.monotonic() - t0
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(None)
    stage_ids = {s for j in jobs for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])}
    tasks = sum((info.numTasks if (info := tracker.getStageInfo(s)) is not None else 0) for s in stage_ids)
    for name, seconds in stages.timings:
        print(f"  {seconds:7.1f} s  {name}")
    print(f"audit (in process): {wall:.1f} s wall; {len(jobs)} jobs, {len(stage_ids)} stages, {tasks} tasks; "
          f"{len(result.findings)} findings")  # fmt: skip
    spark.stop()
    phases = ", ".join(f"{name.split(' (')[0]} {seconds:.1f} s" for name, seconds in stages.timings)
    return {"wall": wall, "jobs": len(jobs), "stages": len(stage_ids), "tasks": tasks, "phases": phases}


def run_arguments(ap: argparse.ArgumentParser, partitions: int, batches: int) -> None:
    """The options every CLI-audit benchmark takes: its size (``--partitions``, ``--batches``, with these
    defaults), where the data is kept, an earlier code tree, --record."""
    ap.add_argument("--partitions", type=int, default=partitions)
    ap.add_argument("--batches", type=int, default=batches)
    ap.add_argument("--data", type=Path, default=None, help="keep the generated data here (reused)")
    ap.add_argument(
        "--previous", type=Path, default=None, help="also audit with this code tree (older commit)"
    )
    ap.add_argument("--record", action="store_true", help="write the result row of docs/performance.md")


def recorded_command(script: str, args: argparse.Namespace) -> str:
    """The command a recorded row states: the script, ``--previous DIR`` when it was given, ``--record``."""
    return f"python bench/{script}" + (" --previous DIR" if args.previous else "") + " --record"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_arguments(ap, partitions=4, batches=420_000)
    ap.add_argument("--scenario", default="unclean-election")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    data = args.data or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    big = data / f"{args.scenario}-{args.partitions}x{args.batches}"
    small = data / f"{args.scenario}-{args.partitions}x{args.batches // 10}"
    t0 = time.monotonic()
    truth = simulate(args.scenario, big, args.partitions, args.batches)
    simulate(args.scenario, small, args.partitions, args.batches // 10)
    size = sum(f.stat().st_size for f in big.rglob("*.log"))
    print(f"data: {big} ({size / 2**20:.0f} MiB of segments), simulated in {time.monotonic() - t0:.1f} s")
    base_s, base_rss, _ = cli_audit(small, data / "small.json")
    wall, peak, report = cli_audit(big, data / "big.json")
    print(f"baseline (a tenth of the batches): CLI {base_s:.1f} s, peak RSS {base_rss / 2**20:.0f} MiB")
    print(f"CLI audit: {wall:.1f} s wall, peak RSS {peak / 2**20:.0f} MiB "
          f"(x{peak / max(base_rss, 1):.2f} of the baseline's for x10 the batches), "
          f"{size / 2**20 / wall:.1f} MiB/s of segments")  # fmt: skip
    ok = check(truth, report)
    previous = ""
    if args.previous:
        prev_s, prev_rss, prev_report = cli_audit(big, data / "previous.json", args.previous)
        same = len(prev_report["findings"]) == len(report["findings"])
        print(f"previous design ({args.previous}): CLI {prev_s:.1f} s, peak RSS {prev_rss / 2**20:.0f} MiB; "
              f"this design {prev_s / wall:.2f}x as fast; as many findings: {same}")  # fmt: skip
        previous = (
            f"; the previous design (`--previous`) {prev_s:.1f} s, {prev_rss / 2**20:.0f} MiB "
            f"(this design {prev_s / wall:.2f}x as fast, x{peak / max(prev_rss, 1):.2f} the memory)"
        )
    figures = {}
    if args.master:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        figures = in_process(big, args.master)
    if args.record:
        from record import record

        spark = (
            f"; in one process {figures['wall']:.1f} s: {figures['jobs']} jobs, {figures['stages']} stages, "
            f"{figures['tasks']} tasks ({figures['phases']})"
            if figures
            else ""
        )
        record(
            "bench_scale_audit",
            f"`audit` of raw log dirs at a production broker's shape: `simulate {args.scenario} --scale`, "
            f"3 brokers x {args.partitions} partitions, {size / 2**20:.0f} MiB of one-record batches "
            "(over 1 M batches per broker at the default size), the CLI's own process tree",
            recorded_command("bench_scale_audit.py", args),
            f"{against_tenth(wall, peak, base_s, base_rss)}{previous}{spark}; findings equal the "
            f"ground truth: {ok}",
        )


if __name__ == "__main__":
    main()
