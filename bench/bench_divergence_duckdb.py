"""Benchmark: the audit's cross-replica divergence comparison on Spark against an independent DuckDB
implementation, on the same Parquet extracts (issue 13, Deliver items 2 and 4).

Data: the extracts of ``bench/bench_audit.py`` (its generator, imported): 3 brokers x 200 partitions x
50,000 batches = 30 M batch rows, one extract directory per broker (a flat Parquet file per kind). Every 50th
partition has a divergence (broker 3 kept 10,000 batches of an older epoch, a fifth of the batches when a
partition has no more than 10,000), every 40th a lagging follower.

Measured, each in the same run of this script, on the same files:

* Spark (``--master``, default ``local[2]``; ``--cores 1,2`` runs ``local[1]`` and ``local[2]`` side by side,
  ``--standalone 2`` also a standalone master with two one-core workers on 127.0.0.1). Each master runs in
  two fresh Python processes (so that "first run" is the first action of a new JVM, what a CLI user sees):
  one runs the full audit (``run_audit``) twice, the other the divergence comparison alone twice (the same
  code as the audit: chunk digests, candidate chunks, rows of the candidate chunks read through the
  audit's pushed-down predicate, and the per-partition pass's divergence step: ``compare.divergence_frame``,
  collected). Spark's
  start-up is printed apart and not in these times. The class-data-sharing archive of large inputs
  (``auditor.spark.tuning``) is put in place first, by one untimed run when it is missing, as a machine's
  first audit leaves it.
* DuckDB (2 threads: ``SET threads=2``), two queries over the same extracts read straight from Parquet,
  each run twice in a fresh in-memory connection:

  - pairwise: every replica pair (brokers a < b) of a partition, the batches of each side inside the pair's
    common range ``[max(log start), min(log end))`` full-outer-joined on base offset; the first base offset
    where one side lacks the batch or last offset, CRC or partition leader epoch differ;
  - two-pass: group the batches by (partition, base offset) first and keep only the offsets where the
    replicas are not unanimous (a replica lacks the batch, or last offset / CRC / leader epoch differ);
    then the same pairwise join, restricted to the rows at those offsets.

  As the audit does: only ``live`` batches; the pair's divergent offset is ``max(first base offset, lo)``;
  compacted partitions with record rows are compared record by record by the audit and left out here (the
  benchmark data has none), compacted ones without record rows start above both cleaner offsets; batches
  touching a replica's unreadable span are skipped.

Checked: both DuckDB answers, the Spark divergence comparison and the full audit's KA601 findings hold the
same divergent pairs (cluster, topic, partition, broker a, broker b) with the same first offset.

Printed: seconds and batch rows/s of the first run and warm (the best of the later runs in the same process
or connection, ``--runs``, default 3: a JVM still compiles the job's code during its second run), every
run's seconds, the ratios
audit / DuckDB two-pass (full audit; divergence comparison) first run and warm, and the same per master
with the speed-up over one core. No assertion on timings.

Usage: python bench/bench_divergence_duckdb.py [--partitions 200] [--batches 50000] [--data DIR]
       [--previous DIR] [--record] [--master local[2]] [--cores 1,2] [--standalone 2] [--driver-memory 2g]
Quick check: python bench/bench_divergence_duckdb.py --partitions 8 --batches 2000 (partition 7 diverges)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_audit import batch_row_count, generate  # noqa: E402 - the bench dir is on sys.path first

Pair = tuple[str, str, int, int, int]  # cluster, topic, partition, broker a, broker b (a < b)

# ----------------------------------------------------------------------------------------------- DuckDB

_BATCHES = """
CREATE OR REPLACE TEMP VIEW batches AS
SELECT cluster, topic, "partition" AS p, broker, base_offset AS base, last_offset AS last, crc,
       partition_leader_epoch AS ple
FROM read_parquet({batch}) WHERE live
"""

_REPLICAS = """
CREATE OR REPLACE TEMP VIEW replicas AS
SELECT cluster, topic, "partition" AS p, broker, log_start, leo, cleaner_offset,
       coalesce(compacted, false) AS compacted, coalesce(has_records, false) AS has_records,
       unreadable_from AS u_from, unreadable_to AS u_to
FROM read_parquet({replica})
"""

# every replica pair (a < b) compared batch by batch, with its common range [lo, hi) (replica_pairs)
_PAIRS = """
CREATE OR REPLACE TEMP VIEW pairs AS
SELECT * FROM (
  SELECT a.cluster, a.topic, a.p, a.broker AS ba, b.broker AS bb,
         CASE WHEN (a.compacted OR b.compacted)
              THEN greatest(a.log_start, b.log_start,
                            coalesce(a.cleaner_offset, 0), coalesce(b.cleaner_offset, 0))
              ELSE greatest(a.log_start, b.log_start) END AS lo,
         least(a.leo, b.leo) AS hi,
         a.u_from AS ua_from, a.u_to AS ua_to, b.u_from AS ub_from, b.u_to AS ub_to
  FROM replicas a JOIN replicas b ON a.cluster = b.cluster AND a.topic = b.topic AND a.p = b.p
  WHERE a.broker < b.broker AND NOT ((a.compacted OR b.compacted) AND a.has_records AND b.has_records)
) WHERE lo < hi
"""


def _side(source: str, broker: str) -> str:
    """The rows of ``source`` held by one member (``broker``: ba or bb) of each pair, inside the pair's
    common range and outside both members' unreadable spans."""
    return f"""
  SELECT q.cluster, q.topic, q.p, q.ba, q.bb, q.lo, x.base, x.last, x.crc, x.ple
  FROM pairs q JOIN {source} x
    ON x.cluster = q.cluster AND x.topic = q.topic AND x.p = q.p AND x.broker = q.{broker}
  WHERE x.base < q.hi AND x.last >= q.lo
    AND NOT coalesce(x.last >= q.ua_from AND (q.ua_to IS NULL OR x.base < q.ua_to), false)
    AND NOT coalesce(x.last >= q.ub_from AND (q.ub_to IS NULL OR x.base < q.ub_to), false)"""


def _first_divergence(source: str) -> str:
    """Per pair, the first offset where the two sides differ, from the rows of ``source``."""
    return f"""
SELECT cluster, topic, p, ba, bb, greatest(min(base), any_value(lo)) AS "offset" FROM (
  SELECT coalesce(xa.cluster, xb.cluster) AS cluster, coalesce(xa.topic, xb.topic) AS topic,
         coalesce(xa.p, xb.p) AS p, coalesce(xa.ba, xb.ba) AS ba, coalesce(xa.bb, xb.bb) AS bb,
         coalesce(xa.lo, xb.lo) AS lo, coalesce(xa.base, xb.base) AS base
  FROM ({_side(source, "ba")}) xa
  FULL OUTER JOIN ({_side(source, "bb")}) xb
    ON xa.cluster = xb.cluster AND xa.topic = xb.topic AND xa.p = xb.p AND xa.ba = xb.ba AND xa.bb = xb.bb
       AND xa.base = xb.base
  WHERE xa.base IS NULL OR xb.base IS NULL
     OR xa.last IS DISTINCT FROM xb.last OR xa.crc IS DISTINCT FROM xb.crc OR xa.ple IS DISTINCT FROM xb.ple
) GROUP BY cluster, topic, p, ba, bb
"""


PAIRWISE = _first_divergence("batches")
"""The straightforward query: every batch of every pair joined with the other side's."""

TWO_PASS = """
WITH n AS (SELECT cluster, topic, p, count(*) AS replicas FROM replicas GROUP BY ALL),
split AS (
  SELECT g.cluster, g.topic, g.p, g.base FROM (
    SELECT cluster, topic, p, base, count(*) AS c,
           min(last) AS l0, max(last) AS l1, min(crc) AS c0, max(crc) AS c1, min(ple) AS e0, max(ple) AS e1
    FROM batches GROUP BY cluster, topic, p, base
  ) g JOIN n USING (cluster, topic, p)
  WHERE g.c < n.replicas OR g.l0 <> g.l1 OR g.c0 <> g.c1 OR g.e0 <> g.e1
),
disputed AS (
  SELECT x.* FROM batches x SEMI JOIN split s ON x.cluster = s.cluster AND x.topic = s.topic AND x.p = s.p
                                          AND x.base = s.base
)
""" + _first_divergence("disputed")
"""The two-pass query: offsets where the replicas are not unanimous first, then the pairs on those rows."""


def duckdb_connect(files: list[Path], threads: int):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads={threads}")

    def listed(kind: str) -> str:
        return "[" + ", ".join("'" + str(f / f"{kind}.parquet").replace("'", "''") + "'" for f in files) + "]"

    for view in (_BATCHES, _REPLICAS, _PAIRS):
        con.execute(view.format(batch=listed("batch"), replica=listed("replica")))
    return con


def duckdb_run(con, query: str) -> dict[Pair, int]:
    return {(c, t, int(p), int(a), int(b)): int(o) for c, t, p, a, b, o in con.execute(query).fetchall()}


def run_duckdb(files: list[Path], threads: int, runs: int = 3) -> dict[str, dict]:
    """Each query ``runs`` times in a fresh connection: seconds of the first run and warm (the best of the
    later ones), every run's seconds, and the answer."""
    out = {}
    for name, query in (("pairwise", PAIRWISE), ("two-pass", TWO_PASS)):
        con = duckdb_connect(files, threads)
        times, answers = [], []
        for _run in range(runs):
            t0 = time.perf_counter()
            answers.append(duckdb_run(con, query))
            times.append(time.perf_counter() - t0)
        con.close()
        out[name] = {
            "first": times[0],
            "warm": min(times[1:]),
            "runs": times,
            "pairs": answers[-1],
            "stable": all(a == answers[0] for a in answers),
        }
    return out


# ------------------------------------------------------------------------------------------------ Spark


def spark_divergence(spark, inputs) -> dict[Pair, int]:
    """The audit's divergence comparison alone (as ``bench_audit.py`` runs it), collected."""
    from auditor.spark import compare
    from auditor.spark.audit import _small_input_settings
    from auditor.spark.extract import load

    with _small_input_settings(spark, inputs):
        tables = load(spark, inputs)
        found = compare.divergence_frame(tables)
        rows_ = found.select("cluster", "topic", "partition", "a", "b", "offset").collect()
    return {(r[0], r[1], int(r[2]), int(r[3]), int(r[4])): int(r[5]) for r in rows_}


def audit_pairs(result) -> dict[Pair, int]:
    """The divergent pairs of an audit: its KA601 findings (broker a < peer b)."""
    out = {}
    for f in result.findings:
        if f.code != "KA601":
            continue
        a, b = sorted((f.broker, f.related[0]["broker"]))
        out[(f.evidence.get("cluster") or "", f.topic, f.partition, a, b)] = f.offset_start
    return out


def spark_child(args: argparse.Namespace) -> None:
    """One fresh process on one master: ``--child audit`` (the full audit) or ``--child divergence``
    (the divergence comparison), each ``--runs`` times; the figures go to ``--child-out`` as JSON."""
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.session import get_spark

    files = sorted(p for p in args.data.glob("broker-*") if p.is_dir())
    conf = {}
    if args.driver_memory:
        conf["spark.driver.memory"] = args.driver_memory
    if args.executor_memory:
        conf["spark.executor.memory"] = args.executor_memory
    t0 = time.perf_counter()
    spark = get_spark(args.master, extra_conf=conf or None)
    startup = time.perf_counter() - t0
    inputs = discover(files)
    times, answers, extra = [], [], {}
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    for run in range(args.runs):
        group = f"bench-{run}"
        sc.setJobGroup(group, group)
        t0 = time.perf_counter()
        if args.child == "audit":
            result = run_audit(spark, inputs)
            times.append(time.perf_counter() - t0)
            answers.append(audit_pairs(result))
            extra["findings"] = len(result.findings)
        else:
            answers.append(spark_divergence(spark, inputs))
            times.append(time.perf_counter() - t0)
        jobs = tracker.getJobIdsForGroup(group)
        stages = [tracker.getStageInfo(s) for j in jobs for s in tracker.getJobInfo(j).stageIds]
        extra["spark"] = {
            "jobs": len(jobs),
            "stages": len(stages),
            "tasks": sum(s.numCompletedTasks for s in stages if s is not None),
        }
    out = {
        "startup": startup,
        "master": spark.sparkContext.master,
        "first": times[0],
        "warm": min(times[1:]),
        "runs": times,
        "stable": all(a == answers[0] for a in answers),
        "pairs": [[*k, v] for k, v in sorted(answers[-1].items())],
        **extra,
    }
    spark.stop()
    args.child_out.write_text(json.dumps(out))


def run_spark(args: argparse.Namespace, master: str, kind: str, env: dict[str, str] | None = None) -> dict:
    """``spark_child`` in a fresh Python process; its figures (pairs as a dict)."""
    with tempfile.TemporaryDirectory(prefix="bench-div-") as tmp:
        out = Path(tmp) / "out.json"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            "--child-out",
            str(out),
            "--data",
            str(Path(args.data).resolve()),
            "--master",
            master,
            "--runs",
            str(args.runs),
        ]
        if args.driver_memory:
            cmd += ["--driver-memory", args.driver_memory]
        if args.executor_memory:
            cmd += ["--executor-memory", args.executor_memory]
        # the fleet path on every master, whatever the data's size (small data would take the small-input
        # path on local masters only: auditor.spark.tuning)
        child_env = {**(env if env is not None else os.environ), "KAFKA_AUDITOR_SMALL_INPUT_BYTES": "0"}
        # another code tree runs in its own directory: Spark's Python workers import from their working
        # directory first (``python -m pyspark.daemon``), the driver from PYTHONPATH
        cwd = env["PYTHONPATH"] if env is not None and "PYTHONPATH" in env else None
        proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True, cwd=cwd)
        if proc.returncode != 0 or not out.exists():
            lines = (proc.stderr or "").strip().splitlines()
            why = [ln for ln in lines if "Error" in ln or "Exception" in ln][:6] or lines[-10:]
            tail = "\n".join(why)
            raise RuntimeError(f"Spark {kind} run on {master} failed (exit {proc.returncode}):\n{tail}")
        res = json.loads(out.read_text())
    res["pairs"] = {tuple(p[:5]): p[5] for p in res["pairs"]}
    return res


def _class_archive(args: argparse.Namespace) -> None:
    """Put the class-data-sharing archive of large inputs in place (``auditor.spark.tuning``) with one untimed
    run when it is missing, so that every first run is what a machine's later audits see (the first audit
    on a machine writes it); prints which."""
    from auditor.spark import tuning
    from auditor.spark.session import resolve_java

    master = _masters(args)[0]
    choice = resolve_java()
    if not master.startswith("local"):
        return  # archives are a local session's
    if not tuning.cds_enabled() or not tuning.can_share_classes(choice.java_home, choice.version):
        print("class-data sharing: off or not possible with this Java (no archive in the first runs)")
        return
    archive = tuning.archive_path(choice.java_home, small=False)
    if not archive.is_file():  # the child's warm figure needs a second run
        run_spark(argparse.Namespace(**{**vars(args), "runs": 2}), master, "audit")
    state = "in place" if archive.is_file() else "missing (its build failed)"
    print(f"class-data archive of large inputs: {state} ({archive})", flush=True)


# ----------------------------------------------------------------------------- standalone master (optional)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_env(tmp: Path) -> dict[str, str]:
    import pyspark

    from auditor.spark.session import resolve_java

    env = dict(os.environ)
    choice = resolve_java()
    env["JAVA_HOME"] = choice.java_home
    env["PATH"] = str(Path(choice.java_home) / "bin") + os.pathsep + env.get("PATH", "")
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@contextlib.contextmanager
def standalone(workers: int, memory: str):
    """A Spark standalone master and ``workers`` workers of one core each on 127.0.0.1 (as the test suite's
    ``tests/e2e/test_spark_cluster.py`` starts one); stopped, by their own process ids, on exit."""
    with tempfile.TemporaryDirectory(prefix="bench-standalone-") as name:
        tmp = Path(name)
        env = _spark_env(tmp)
        spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
        port, ui = _free_port(), _free_port()
        procs: list[subprocess.Popen] = []
        logs = []

        def start(args: list[str], log_name: str) -> None:
            log = open(tmp / log_name, "w")  # noqa: SIM115 - closed in finally
            logs.append(log)
            procs.append(
                subprocess.Popen([spark_class, *args], stdout=log, stderr=subprocess.STDOUT, env=env)
            )

        def alive_workers() -> int:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as resp:
                return sum(w["state"] == "ALIVE" for w in json.load(resp).get("workers", []))

        def wait(predicate, what: str) -> None:
            deadline = time.time() + 90
            while time.time() < deadline:
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"{what}: a Spark daemon exited (logs in {tmp})")
                with contextlib.suppress(OSError):
                    if predicate():
                        return
                time.sleep(0.5)
            raise TimeoutError(what)

        try:
            master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
            start([*master, "--webui-port", str(ui)], "master.log")
            wait(lambda: socket.create_connection(("127.0.0.1", port), 1).close() is None, "master")
            for i in range(workers):
                start(
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        f"spark://127.0.0.1:{port}",
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        memory,
                        "--webui-port",
                        str(_free_port()),
                        "--work-dir",
                        str(tmp / f"work-{i}"),
                    ],
                    f"worker-{i}.log",
                )
            wait(lambda: alive_workers() >= workers, "worker registration")
            yield f"spark://127.0.0.1:{port}", env
        finally:
            for p in reversed(procs):  # only the daemons started here, by their own process ids
                if p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait(timeout=15)
            for log in logs:
                log.close()


# ------------------------------------------------------------------------------------------------- main


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds / 1e6:6.2f} M rows/s"


def _line(name: str, first: float, warm: float, rows: int, runs: list[float] | None = None) -> str:
    every = f"   (runs: {', '.join(f'{t:.2f}' for t in runs)} s)" if runs else ""
    timed = f"first {first:7.2f} s {_rate(rows, first)}   warm {warm:7.2f} s {_rate(rows, warm)}"
    return f"  {name:<38} {timed}{every}"


def _masters(args: argparse.Namespace) -> list[str]:
    if args.cores:
        return [f"local[{int(c)}]" for c in args.cores.split(",") if c.strip()]
    return [args.master]


def _record(args, rows: int, two: dict, run: tuple, previous: dict | None, ok: bool) -> None:
    """The row of docs/performance.md for the first master's run."""
    from record import record

    master, audit, div = run
    sp = audit.get("spark", {})
    prev = ""
    if previous:
        prev = (
            f"; the previous design (`--previous`) {previous['first']:.1f} s first, {previous['warm']:.1f} s "
            f"warm = {previous['first'] / audit['first']:.2f}x / "
            f"{previous['warm'] / audit['warm']:.2f}x slower"
        )
    record(
        "bench_divergence_duckdb",
        f"`audit` from Parquet extracts, {rows:,} batch rows ({args.partitions} partitions x 3 brokers x "
        f"{args.batches:,} batches), {master}, against a two-pass DuckDB query on {args.threads} threads",
        "python bench/bench_divergence_duckdb.py" + (" --previous DIR" if previous else "") + " --record",
        f"warm: the best of runs 2-{args.runs} in one process; "
        f"DuckDB two-pass {two['first']:.1f} s first, **{two['warm']:.1f} s** warm; the full audit "
        f"{audit['first']:.1f} s first, {audit['warm']:.1f} s warm = **{audit['warm'] / two['warm']:.2f}x** "
        f"DuckDB warm ({audit['first'] / two['first']:.2f}x first; {sp.get('jobs')} jobs, {sp.get('stages')} "
        f"stages, {sp.get('tasks')} tasks); the divergence comparison alone {div['first']:.1f} s first, "
        f"{div['warm']:.1f} s warm = **{div['warm'] / two['warm']:.2f}x** (runs: "
        f"{', '.join(f'{t:.1f}' for t in div.get('runs', []))} s){prev}; every answer agrees: {ok}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Usage:" + __doc__.split("Usage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partitions", type=int, default=200, help="partitions (default 200)")
    parser.add_argument(
        "--batches", type=int, default=50_000, help="batches per replica (default 50000; above 10000)"
    )
    parser.add_argument("--data", type=Path, default=None, help="keep the generated extracts here (reused)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument(
        "--cores",
        default=None,
        help="comma-separated local core counts run side by side (e.g. 1,2); overrides --master",
    )
    parser.add_argument(
        "--standalone",
        type=int,
        default=0,
        metavar="N",
        help="also run on a standalone master with N one-core workers on 127.0.0.1 (default 0: not run)",
    )
    parser.add_argument("--worker-memory", default="2g", help="memory of each standalone worker (default 2g)")
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory (default: Spark's, 1g)")
    parser.add_argument("--executor-memory", default=None, help="spark.executor.memory (standalone workers)")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads (default 2)")
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of each engine in one process (default 3; warm: the best after the first)",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        default=None,
        help="also run the full audit of this code tree (an older commit)",
    )
    parser.add_argument("--record", action="store_true", help="write the result row of docs/performance.md")
    parser.add_argument("--child", choices=("audit", "divergence"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spark_child(args)
        return

    args.data = (
        args.data or Path(tempfile.gettempdir()) / f"kafka-auditor-bench-{args.partitions}x{args.batches}"
    ).resolve()
    t0 = time.perf_counter()
    files = generate(args.data, args.partitions, args.batches)
    rows = batch_row_count(files)
    size = sum(p.stat().st_size for f in files for p in f.iterdir())
    print(
        f"data: {len(files)} extracts, {rows:,} batch rows, {size / 1e6:.0f} MB "
        f"({time.perf_counter() - t0:.1f} s to generate or find) in {args.data}"
    )
    import duckdb

    print(f"machine: {os.cpu_count()} cores; DuckDB {duckdb.__version__}, {args.threads} threads")

    duck = run_duckdb(files, args.threads, args.runs)
    print(f"DuckDB (each query {args.runs} times in a fresh connection, reading the Parquet extracts):")
    for name in ("pairwise", "two-pass"):
        d = duck[name]
        print(
            _line(name, d["first"], d["warm"], rows, d["runs"]) + f"   {len(d['pairs'])} divergent pairs",
            flush=True,
        )
    two = duck["two-pass"]

    reference = two["pairs"]
    ok = duck["pairwise"]["pairs"] == reference and duck["pairwise"]["stable"] and two["stable"]
    runs: list[tuple[str, dict, dict]] = []

    def measure(label: str, url: str, env: dict[str, str] | None) -> None:
        """Both Spark children on one master, printed at once; a failure is printed and skipped."""
        nonlocal ok
        try:
            audit, div = run_spark(args, url, "audit", env), run_spark(args, url, "divergence", env)
        except RuntimeError as exc:
            ok = False
            print(f"Spark {label}: FAILED: {exc}", flush=True)
            return
        runs.append((label, audit, div))
        print(f"Spark {label} (start-up {audit['startup']:.1f} s, not counted):")
        print(
            _line("full audit (run_audit)", audit["first"], audit["warm"], rows, audit.get("runs"))
            + f"   {audit['findings']} findings"
        )
        print(_line("divergence comparison alone", div["first"], div["warm"], rows, div.get("runs")))
        agree_div = div["pairs"] == reference and div["stable"]
        agree_audit = audit["pairs"] == reference and audit["stable"]
        ok = ok and agree_div and agree_audit
        print(
            f"  same divergent pairs and first offsets as DuckDB: divergence comparison {agree_div}, "
            f"audit KA601 {agree_audit}"
        )
        print(
            f"  audit / DuckDB two-pass:      first {audit['first'] / two['first']:5.2f}x   "
            f"warm {audit['warm'] / two['warm']:5.2f}x"
        )
        print(
            f"  divergence / DuckDB two-pass: first {div['first'] / two['first']:5.2f}x   "
            f"warm {div['warm'] / two['warm']:5.2f}x",
            flush=True,
        )

    _class_archive(args)
    for master in _masters(args):
        measure(master, master, None)
    previous = None
    if args.previous:
        master = _masters(args)[0]
        env = {**os.environ, "PYTHONPATH": str(args.previous.resolve())}
        try:
            previous = run_spark(args, master, "audit", env)
        except RuntimeError as exc:
            print(f"previous design ({args.previous}): FAILED: {exc}", flush=True)
        else:
            print(f"previous design ({args.previous}), {master}:")
            print(_line("full audit (run_audit)", previous["first"], previous["warm"], rows))
            if runs:
                audit = runs[0][1]
                print(
                    f"  this design faster: first {previous['first'] / audit['first']:.2f}x, warm "
                    f"{previous['warm'] / audit['warm']:.2f}x; same pairs: {previous['pairs'] == reference}"
                )
    if args.standalone:
        try:
            with standalone(args.standalone, args.worker_memory) as (url, env):
                measure(f"standalone {args.standalone}x1 core", url, env)
        except (TimeoutError, OSError, RuntimeError) as exc:
            print(f"standalone master: not run ({exc})")
    print(
        f"DuckDB pairwise / two-pass: first {duck['pairwise']['first'] / two['first']:.2f}x, "
        f"warm {duck['pairwise']['warm'] / two['warm']:.2f}x"
    )
    if len(runs) > 1 and runs[0][1]["warm"] > 0:
        print("side by side (seconds; speed-up of the warm runs over the first row):")
        heads = [("audit first", 12), ("audit warm", 11), ("div first", 10), ("div warm", 9)]
        heads += [("audit x", 8), ("div x", 7)]
        print(f"  {'master':<26}" + "".join(f" {h:>{w}}" for h, w in heads))
        base_audit, base_div = runs[0][1]["warm"], runs[0][2]["warm"]
        for master, audit, div in runs:
            print(
                f"  {master:<26} {audit['first']:12.2f} {audit['warm']:11.2f} {div['first']:10.2f} "
                f"{div['warm']:9.2f} {base_audit / audit['warm']:7.2f}x {base_div / div['warm']:6.2f}x"
            )
    print(f"every answer agrees (pairs and offsets): {ok}; {len(reference)} divergent pairs")
    if args.record and runs:
        _record(args, rows, two, runs[0], previous, ok)
    if not ok:
        for name in ("pairwise", "two-pass"):
            print(f"  DuckDB {name}: {sorted(duck[name]['pairs'].items())[:10]}")
        for master, audit, div in runs:
            print(f"  Spark {master} divergence: {sorted(div['pairs'].items())[:10]}")
            print(f"  Spark {master} audit: {sorted(audit['pairs'].items())[:10]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
