"""Benchmark: the small-input audit, ``kafka-auditor audit`` of the ``make demo`` cluster (issue 13, Deliver
items 1 and 4).

Input: ``kafka-auditor simulate unclean-election --seed 7`` (the cluster of ``make demo``: 4 log dirs, 7
replicas), written once under ``--demo DIR`` and reused.

Measured, in one run of this script:

* as a user sees it: wall seconds of a fresh ``kafka-auditor audit CLUSTER -f json -o FILE --exit-zero
  --no-progress`` process (the console script of this venv, JVM start included), ``--runs`` times, and
  as many runs of the baseline, interleaved with them: the same command with the small-input settings and
  the class-data-sharing archive off (``KAFKA_AUDITOR_SMALL_INPUT_BYTES=0 KAFKA_AUDITOR_CDS=off``: the
  audit as it ran before them); the median, min and max of each and the speed-up. ``--export-lost`` adds
  the ``make demo`` export to every run. The first run of a machine writes the archive (once).
* inside one fresh Python process (a child of this script, doing what the CLI does, step by step), the
  seconds of each phase:

  - Python start + imports: from just before the parent starts the child to the end of the child's imports
    (``auditor.cli`` and what the CLI loads before Spark: no pyspark, pyarrow or pandas yet);
  - discovering the inputs; importing pyspark and the audit's Spark modules (``auditor.spark.compare``,
    pyarrow, pandas: the CLI does it when it starts Spark and the audit); JVM launch (pyspark's
    ``launch_gateway``, timed by wrapping it); Spark session (the rest of ``get_spark``);
  - every stage ``run_audit`` reports to the progress display given as ``stages=`` (extracting, identifying
    the replicas, comparing them, the per-partition results, exporting), each with the Spark jobs that
    finished in it;
  - building and writing the JSON report (the CLI's ``ReportOptions.write``).

  Spark jobs, stages and tasks of each phase come from ``SparkContext.statusTracker()``: a job group is set
  around the audit, ``getJobIdsForGroup`` gives its jobs, ``getJobInfo``/``getStageInfo`` their stages and
  task counts (stages skipped because their shuffle output was already there are counted apart). No
  SparkListener, no UI.

Also printed: the CPU seconds of the child's JVM and Python (less sensitive to other load than wall
seconds). Checked: the child's report has as many findings as every CLI run's (baseline runs included). No
assertion on timings.

Usage: python bench/bench_small_audit.py [--runs 5] [--demo DIR] [--master local[2]] [--export-lost]
       [--previous DIR] [--record]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUP = "bench-small-audit"


def _cli() -> list[str]:
    """The ``kafka-auditor`` console script next to this Python (else ``python -m auditor.cli``)."""
    script = Path(sys.executable).with_name("kafka-auditor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "auditor.cli"]


def demo_cluster(demo: Path) -> Path:
    """The ``make demo`` cluster under ``demo`` (simulated once, reused)."""
    cluster = demo / "cluster"
    if not cluster.exists():
        demo.mkdir(parents=True, exist_ok=True)
        tmp = demo / "cluster.tmp"
        subprocess.run(
            [*_cli(), "simulate", "unclean-election", "--out", str(tmp), "--seed", "7"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        os.replace(tmp, cluster)
    return cluster


def findings_in(report: Path) -> int:
    return len(json.loads(report.read_text())["findings"])


BASELINE_ENV = {"KAFKA_AUDITOR_SMALL_INPUT_BYTES": "0", "KAFKA_AUDITOR_CDS": "off"}
"""The baseline: the same command with the small-input settings and the class-data-sharing archive off (the
audit as it ran before them: every input treated as large)."""


def cli_runs(args: argparse.Namespace, cluster: Path, tmp: Path) -> dict[str, tuple[list[float], list[int]]]:
    """Wall seconds and findings of ``--runs`` fresh ``kafka-auditor audit`` processes as installed and as
    many with :data:`BASELINE_ENV` (and, with ``--previous DIR``, of the code tree DIR: an earlier commit's
    ``auditor`` and ``parsers`` first on ``PYTHONPATH``), interleaved (the machine's load hits all)."""
    variants: list[tuple[str, dict]] = [("default", {}), ("baseline", BASELINE_ENV)]
    if args.previous:
        variants.append(("previous", {"PYTHONPATH": str(args.previous.resolve())}))
    out: dict[str, tuple[list[float], list[int]]] = {name: ([], []) for name, _ in variants}
    for i in range(args.runs):
        for name, extra in variants:
            seconds, found = cli_run(args, cluster, tmp, f"{name}-{i}", extra)
            out[name][0].append(seconds)
            out[name][1].append(found)
    return out


def cli_run(args: argparse.Namespace, cluster: Path, tmp: Path, name: str, extra: dict) -> tuple[float, int]:
    """One fresh ``kafka-auditor audit`` process: its wall seconds and findings."""
    report = tmp / f"cli-{name}.json"
    cmd = [
        *_cli(),
        "audit",
        str(cluster.resolve()),
        "-f",
        "json",
        "-o",
        str(report.resolve()),
        "--exit-zero",
        "--no-progress",
    ]
    if args.master:
        cmd += ["--master", args.master]
    if args.export_lost:
        cmd += ["--export-lost", str((tmp / f"lost-{name}").resolve())]
    t0 = time.perf_counter()
    # another code tree runs in its own directory: Spark's Python workers import from their working
    # directory first (``python -m pyspark.daemon``), the CLI from PYTHONPATH
    cwd = extra.get("PYTHONPATH")
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **extra}, cwd=cwd)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"kafka-auditor audit failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}"
        )
    return seconds, findings_in(report)


# ------------------------------------------------------------------------------------- the child process


class Jobs:
    """Spark jobs of the job group, attributed to whichever phase saw them finish first."""

    def __init__(self, spark) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.seen: set[int] = set()

    def new(self) -> list[int]:
        ids = set(self.tracker.getJobIdsForGroup(GROUP)) - self.seen
        self.seen |= ids
        return sorted(ids)

    def counts(self, job_ids: list[int]) -> dict[str, int]:
        """Jobs, stages run, stages skipped, tasks run."""
        run, skipped, tasks = set(), set(), 0
        for j in job_ids:
            info = self.tracker.getJobInfo(j)
            for s in info.stageIds if info is not None else ():
                stage = self.tracker.getStageInfo(s)
                if stage is None or stage.numCompletedTasks == 0 and stage.numTasks > 0:
                    skipped.add(s)
                elif s not in run:
                    run.add(s)
                    tasks += stage.numCompletedTasks
        return {"jobs": len(job_ids), "stages": len(run), "skipped": len(skipped - run), "tasks": tasks}


class JobStages:
    """A progress display for ``run_audit(stages=...)`` recording each stage's wall seconds and the Spark jobs
    that finished in it."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.phases: list[tuple[str, float, list[int]]] = []

    @contextlib.contextmanager
    def stage(self, name: str, total: float | None = None, unit: str = "", *, poll: bool = False):
        t0 = time.perf_counter()
        try:
            yield None
        finally:
            self.phases.append((f"audit: {name}", time.perf_counter() - t0, self.jobs.new()))


def child(args: argparse.Namespace) -> None:
    """The audit in this (fresh) process, phase by phase; the figures to ``--child-out`` as JSON."""
    import auditor.cli  # noqa: F401 - what the console script loads first
    from auditor.cli.audit import build_report
    from auditor.cli.report_options import ReportOptions
    from auditor.rules.registry import AUDIT_SCOPES
    from auditor.spark.inputs import PARQUET_WEIGHT, check_inputs, discover, input_bytes
    from auditor.spark.session import default_master, get_spark

    phases: list[tuple[str, float, list[int]]] = []
    phases.append(("Python start + imports", time.time() - float(os.environ["BENCH_T0"]), []))

    def timed(name: str, fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        phases.append((name, time.perf_counter() - t0, []))
        return out

    def import_spark():
        # the CLI imports these when it starts Spark and when run_audit starts (pyspark, pyarrow, pandas)
        import pyspark.context
        import pyspark.sql  # noqa: F401

        from auditor.spark import audit, compare

        return pyspark.context, compare, audit.run_audit

    inputs = timed("discovering the inputs", discover, [args.cluster])
    problems = inputs.problems or check_inputs(inputs)
    if problems:
        raise SystemExit(f"bad input: {problems}")
    context, compare, run_audit = timed("import pyspark and the audit's Spark modules", import_spark)

    launch = {"seconds": 0.0}
    original_launch = context.launch_gateway

    def launch_gateway(*a, **kw):
        t0 = time.perf_counter()
        try:
            return original_launch(*a, **kw)
        finally:
            launch["seconds"] += time.perf_counter() - t0

    context.launch_gateway = launch_gateway
    t0 = time.perf_counter()
    size = input_bytes(inputs, PARQUET_WEIGHT)  # as the CLI computes it
    spark = get_spark(args.master or default_master(), log_level="ERROR", input_bytes=size)
    started = time.perf_counter() - t0
    context.launch_gateway = original_launch
    phases.append(("JVM launch (launch_gateway)", launch["seconds"], []))
    phases.append(("Spark session (rest of get_spark)", started - launch["seconds"], []))

    sc = spark.sparkContext
    sc.setJobGroup(GROUP, "the audit of bench_small_audit.py", interruptOnCancel=False)
    jobs = Jobs(spark)

    # each stage of run_audit (extraction, identity, comparisons, per-partition results, export): its wall
    # seconds and the Spark jobs that finished in it
    stages = JobStages(jobs)
    result = run_audit(
        spark,
        inputs,
        stages=stages,
        export_lost=str(Path(args.child_out).parent / "lost") if args.export_lost else None,
    )
    phases += stages.phases
    import typer

    report_file = Path(args.child_out).with_name("child-report.json")
    options = ReportOptions(fmt="json", output=report_file, exit_zero=True, scopes=AUDIT_SCOPES)
    t0 = time.perf_counter()
    with contextlib.suppress(typer.Exit):  # write() ends with the report's exit code
        options.write(build_report(result, options.selection(), inputs, options), None)
    phases.append(("building and writing the JSON report", time.perf_counter() - t0, jobs.new()))

    total = jobs.counts(sorted(jobs.seen))
    cpu = {"jvm": _cpu_seconds(sc._gateway.proc.pid), "python": time.process_time()}
    out = {
        "phases": [[name, s, jobs.counts(ids)] for name, s, ids in phases],
        "total": total,
        "cpu": cpu,
        "findings": findings_in(report_file),
        "end": time.time(),
        "master": sc.master,
    }
    Path(args.child_out).write_text(json.dumps(out))
    spark.stop()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_child(args: argparse.Namespace, cluster: Path, tmp: Path) -> dict:
    out = tmp / "child.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-out", str(out), "--cluster", str(cluster)]
    if args.master:
        cmd += ["--master", args.master]
    if args.export_lost:
        cmd.append("--export-lost")
    env = dict(os.environ)
    t0 = time.time()
    env["BENCH_T0"] = repr(t0)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(
            f"the in-process audit failed (exit {proc.returncode}): {proc.stderr.strip()[-3000:]}"
        )
    res = json.loads(out.read_text())
    res["wall"] = wall
    return res


def _counts(c: dict[str, int]) -> str:
    if not c["jobs"]:
        return ""
    skipped = f" (+{c['skipped']} skipped)" if c["skipped"] else ""
    return f"{c['jobs']:4d} {c['stages']:6d}{skipped:<14} {c['tasks']:5d}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Usage:" + __doc__.split("Usage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5, help="fresh CLI processes timed (default 5)")
    parser.add_argument(
        "--demo",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kafka-auditor-bench-demo",
        help="where the demo cluster is simulated (reused; default: $TMPDIR/kafka-auditor-bench-demo)",
    )
    parser.add_argument("--master", default=None, help="Spark master (default: the CLI's, local[*])")
    parser.add_argument("--export-lost", action="store_true", help="also --export-lost, as make demo does")
    parser.add_argument(
        "--previous", type=Path, default=None, help="also time this code tree (an older commit)"
    )
    parser.add_argument("--record", action="store_true", help="write the result row of docs/performance.md")
    parser.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cluster", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_out:
        child(args)
        return

    t0 = time.perf_counter()
    cluster = demo_cluster(args.demo.resolve())
    dirs = sorted(p.name for p in cluster.iterdir() if p.is_dir())
    print(f"input: {cluster} ({len(dirs)} dirs; {time.perf_counter() - t0:.1f} s to simulate or find)")
    print(f"machine: {os.cpu_count()} cores; master: {args.master or 'the CLI default (local[*])'}")
    with tempfile.TemporaryDirectory(prefix="bench-small-audit-") as name:
        tmp = Path(name)
        res = run_child(args, cluster, tmp)
        runs = cli_runs(args, cluster, tmp)

    print(f"\nkafka-auditor audit, fresh processes, {args.runs} of each, interleaved (wall s, JVM start in):")
    for name, label in (
        ("default", "as installed"),
        ("baseline", "baseline: small-input settings and CDS off"),
    ):
        seconds = runs[name][0]
        print(
            f"  {label:<44} median {statistics.median(seconds):6.2f} s  min {min(seconds):6.2f} s  "
            f"max {max(seconds):6.2f} s  [{', '.join(f'{s:.2f}' for s in seconds)}]"
        )
    ratio = statistics.median(runs["baseline"][0]) / statistics.median(runs["default"][0])
    print(f"  speed-up over the baseline (medians): {ratio:.2f}x")
    previous = ""
    if args.previous:
        seconds = runs["previous"][0]
        prev_ratio = statistics.median(seconds) / statistics.median(runs["default"][0])
        print(
            f"  previous design ({args.previous}): median {statistics.median(seconds):6.2f} s  min "
            f"{min(seconds):6.2f} s  max {max(seconds):6.2f} s: this design {prev_ratio:.2f}x faster"
        )
        median = statistics.median(seconds)
        previous = f"; the previous design (`--previous`) {median:.2f} s in the same run = {prev_ratio:.2f}x"
    findings = [n for _s, found in runs.values() for n in found]
    print(f"\none process, phase by phase ({res['master']}):")
    print(f"  {'phase':<62} {'seconds':>8}  {'jobs':>4} {'stages':>6}{'':<14} {'tasks':>5}")
    for phase, s, counts in res["phases"]:
        print(f"  {phase:<62} {s:8.2f}  {_counts(counts)}")
    total_s = sum(s for _p, s, _c in res["phases"])
    t = res["total"]
    print(f"  {'sum of the phases':<62} {total_s:8.2f}  {_counts(t)}")
    print(f"  {'wall (the child process, start to exit)':<62} {res['wall']:8.2f}")
    cpu = res["cpu"]
    print(
        f"  CPU seconds of the child: JVM {cpu['jvm']:.2f} + Python {cpu['python']:.2f} = "
        f"{cpu['jvm'] + cpu['python']:.2f} (less sensitive to the machine's other load than wall seconds)"
    )
    same = all(n == res["findings"] for n in findings)
    print(
        f"\nSpark: {t['jobs']} jobs, {t['stages']} stages run (+{t['skipped']} skipped), {t['tasks']} tasks; "
        f"findings: {res['findings']} in one process, {sorted(set(findings))} from the CLI: "
        f"{'same' if same else 'DIFFERENT'}"
    )
    if not same:
        sys.exit(1)
    if args.record:
        from record import record

        phases = ", ".join(f"{name} {s:.2f} s" for name, s, _c in res["phases"] if s >= 0.05)
        record(
            "bench_small_audit",
            f"`audit` of the `make demo` cluster ({len(dirs)} log dirs, the incident case), fresh processes, "
            "JVM start included",
            f"python bench/bench_small_audit.py --runs {args.runs}"
            + (" --previous DIR" if args.previous else "")
            + " --record",
            f"median **{statistics.median(runs['default'][0]):.2f} s** as installed against "
            f"{statistics.median(runs['baseline'][0]):.2f} s for the baseline (small-input settings and "
            f"class-data sharing off, interleaved) = {ratio:.2f}x{previous}; Spark: {t['jobs']} jobs, "
            f"{t['stages']} stages, {t['tasks']} tasks; one process phase by phase: {phases}",
        )


if __name__ == "__main__":
    main()
