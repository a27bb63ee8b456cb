"""The same audit on a real Spark standalone cluster (master + one worker on 127.0.0.1, started from the
pyspark installation) gives the same findings as local mode. The audit runs in a subprocess: the test
session's own SparkSession is a local one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.sim_audit import of_cluster

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(tmp: Path) -> dict[str, str]:
    import pyspark

    from auditor.spark.session import resolve_java

    env = dict(os.environ)
    choice = resolve_java()
    if choice.java_home:
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


def _wait(predicate, timeout: float, what: str, procs) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a Spark daemon exited with {p.returncode}")
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(what)


@contextmanager
def standalone_cluster(tmp: Path):
    env = spark_env(tmp)
    spark_class = Path(env["SPARK_HOME"]) / "bin" / "spark-class"
    port, ui, worker_ui = free_port(), free_port(), free_port()
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        for name, args in (
            (
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
            ),
            (
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(worker_ui),
                    "--work-dir",
                    str(tmp / "work"),
                ],
            ),
        ):
            log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed in finally
            logs.append(log)
            procs.append(
                subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT, env=env)
            )
            if name == "master":
                _wait(
                    lambda: socket.create_connection(("127.0.0.1", port), 1).close() is None,
                    60,
                    "master",
                    procs,
                )

        def registered() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as resp:
                return any(w["state"] == "ALIVE" for w in json.load(resp).get("workers", []))

        _wait(registered, 60, "worker registration", procs)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for p in reversed(procs):  # only the two daemons this test started, by their own process ids
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=15)
        for log in logs:
            log.close()


def _key(f: dict) -> tuple:
    return (
        f["code"],
        f["severity"],
        f["topic"],
        f["partition"],
        f["broker"],
        f["offsetStart"],
        f["offsetEnd"],
        f["epoch"],
        f["message"],
    )


_TWO_AUDITS = """
import json, sys
from pyspark import SparkContext
from auditor.cli import main
from auditor.spark.audit import run_audit
from auditor.spark.inputs import discover
from auditor.spark.session import get_spark

master, relative, absolute = sys.argv[1:]
sys.argv[1:] = ["audit", relative, "--master", master, "--format", "json"]
sys.argv += ["--output", "rel-report.json", "--export-lost", "rel-lost"]
code = None
try:
    main()
except SystemExit as exc:
    code = exc.code
first = SparkContext._active_spark_context.applicationId
spark = get_spark(master)  # the CLI's session, still running: the second audit is in the same application
second = [f.to_dict() for f in run_audit(spark, discover([absolute])).findings]
doc = {"exit": code, "apps": [first, spark.sparkContext.applicationId], "second": second}
print(json.dumps(doc, default=str))
"""


def test_standalone_cluster_gives_identical_findings(sim_audit, tmp_path):
    lab = "unclean-election-1"
    root = sim_audit.root / lab
    with standalone_cluster(tmp_path) as (master, env):
        # one driver process, two audits in one Spark application (a notebook, the benchmark): the CLI's, then
        # another on its session; ``ship_code`` sends the packages once per application, not again under
        # another path ("already registered with a different path").
        # The CLI's has a relative ROOT, --output and --export-lost (issue 8): the driver resolves them before
        # shipping, since the executors run in the worker's own directory; the findings must equal the local
        # audit's
        twice = subprocess.run(
            [sys.executable, "-c", _TWO_AUDITS, master, os.path.relpath(root, tmp_path), str(root)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert twice.returncode == 0, twice.stderr[-3000:]
    done = json.loads(twice.stdout.strip().splitlines()[-1])
    assert done["exit"] == 1, twice.stderr[-3000:]
    first_app, second_app = done["apps"]
    assert first_app == second_app and first_app.startswith("app-"), done["apps"]
    local = sorted(_key(f.to_dict()) for f in of_cluster(sim_audit.result.findings, lab))
    expected = sorted(k[3] for k in sim_audit.exported if k[0] == lab)
    doc = json.loads((tmp_path / "rel-report.json").read_text())
    first, second = len(doc["findings"]), len(done["second"])
    assert first == second == len(of_cluster(sim_audit.result.findings, lab)) > 0
    assert sorted(_key(f) for f in doc["findings"]) == local
    assert sorted(_key(f) for f in done["second"]) == local
    lines = (tmp_path / "rel-lost" / "lost-records.jsonl").read_text().splitlines()
    assert [json.loads(line)["offset"] for line in lines] == expected
