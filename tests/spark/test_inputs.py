"""Audit inputs checked on the driver before Spark starts: the ``--master`` URL (syntax as Spark 3.5 accepts
it, a TCP probe of the cluster), absolute input paths, and inputs that are copies of one log dir or one
broker. No SparkSession here, except the one subprocess test of a master that never answers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.observe.extract import extract_log_dir
from auditor.spark.inputs import check_inputs, discover
from auditor.spark.master import MasterError, parse_master, probe
from parsers.dirfiles import format_meta_properties
from tests.rules.builder import CLUSTER_ID, LogDir, standard

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------------------------------ --master


@pytest.mark.parametrize(
    ("url", "kind", "endpoints"),
    [
        ("local", "local", ()),
        ("local[4]", "local", ()),
        ("local[*]", "local", ()),
        ("local[2,3]", "local", ()),
        ("local[*, 4]", "local", ()),
        ("local-cluster[2,1,1024]", "local-cluster", ()),
        ("yarn", "yarn", ()),
        ("spark://10.0.0.5:7077", "spark", (("10.0.0.5", 7077),)),
        ("spark://m1:7077,m2:7078", "spark", (("m1", 7077), ("m2", 7078))),
        ("spark://[::1]:7077", "spark", (("::1", 7077),)),
        ("k8s://https://api.example:6443", "k8s", (("api.example", 6443),)),
        ("k8s://api.example", "k8s", (("api.example", 443),)),
        ("k8s://http://127.0.0.1:8001/", "k8s", (("127.0.0.1", 8001),)),
        ("mesos://zk1:5050", "mesos", (("zk1", 5050),)),
        ("mesos://zk://zk1:2181,zk2:2181/mesos", "mesos", ()),
    ],
)
def test_master_urls_spark_accepts(url, kind, endpoints):
    master = parse_master(url)
    assert (master.kind, master.endpoints) == (kind, endpoints)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "empty"),
        (" local", "blanks"),
        ("bogus", "not a Spark master URL"),
        ("local[0]", "0 threads"),
        ("local[x]", "not a Spark master URL"),
        ("spark://host", "has no port"),
        ("spark://host:0", "out of range"),
        ("spark://host:70000", "out of range"),
        ("spark://host:7077/path", "not host:port"),
        ("spark://user@host:7077", "not host:port"),
        ("spark://h1:7077,", "not host:port"),
        ("k8s://ftp://host", "http(s)"),
        ("http://host:7077", "unknown scheme"),
    ],
)
def test_master_urls_spark_refuses(url, why):
    with pytest.raises(MasterError, match=why.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_master(url)
    assert "\n" not in str(info.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_probe_names_the_endpoint_nobody_listens_on():
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(
        MasterError, match=rf"cannot reach the cluster \(127\.0\.0\.1:{port}: Connection refused"
    ):
        probe(parse_master(f"spark://127.0.0.1:{port}"), timeout=2)
    assert time.monotonic() - started < 2


def test_probe_passes_when_one_master_listens():
    """Standalone HA: one reachable master of two is enough."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        probe(parse_master(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}"), timeout=2)


def test_probe_of_local_and_yarn_does_nothing():
    for url in ("local[*]", "yarn"):
        probe(parse_master(url), timeout=0.01)


@pytest.mark.spark
def test_master_that_never_answers_is_a_one_line_error(tmp_path):
    """A port that accepts connections but never speaks Spark's RPC: Spark would retry its registration for
    60 s and fail with a Java stack; the audit gives up after KAFKA_AUDITOR_MASTER_TIMEOUT, in one line."""
    ld, _ = standard(tmp_path / "broker-1")
    ld.write()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        url = f"spark://127.0.0.1:{server.getsockname()[1]}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_AUDITOR_MASTER_TIMEOUT": "4"}
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "audit", str(ld.root), "--master", url],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        seconds = time.monotonic() - started
    assert run.returncode == 2, run.stderr[-2000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("kafka-auditor:")]
    assert errors == [
        f"kafka-auditor: error: --master {url}: the master accepted the connection but no Spark session "
        "started within 4 s; check that it is a Spark master and its log (or raise "
        "KAFKA_AUDITOR_MASTER_TIMEOUT)"
    ]
    assert "\tat " not in run.stderr and "Traceback" not in run.stderr
    assert seconds < 30


# ------------------------------------------------------------------------------------------ paths


def test_relative_roots_become_absolute(tmp_path, monkeypatch):
    ld, _ = standard(tmp_path / "cluster" / "broker-1")
    ld.write()
    monkeypatch.chdir(tmp_path)
    found = discover(["cluster"])
    assert [s.path for s in found.sources] == [str(tmp_path / "cluster" / "broker-1")]
    assert not found.problems


def test_a_root_given_twice_is_one_input(tmp_path, monkeypatch):
    ld, _ = standard(tmp_path / "cluster" / "broker-1")
    ld.write()
    monkeypatch.chdir(tmp_path)
    found = discover(["cluster", tmp_path / "cluster", "cluster/broker-1"])
    assert [s.path for s in found.sources] == [str(ld.root)]
    assert check_inputs(found) == []


def test_symlinked_root_keeps_its_name(tmp_path, monkeypatch):
    """abspath, not realpath: the log dir is shipped under the name the operator gave."""
    ld, _ = standard(tmp_path / "evidence" / "broker-1")
    ld.write()
    (tmp_path / "mnt").symlink_to(tmp_path / "evidence", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    assert [s.path for s in discover(["mnt"]).sources] == [str(tmp_path / "mnt" / "broker-1")]


def test_unlistable_root_is_a_problem_not_a_traceback(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any directory")
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    locked.chmod(0)
    try:
        found = discover([locked / "inner"])
    finally:
        locked.chmod(0o755)
    assert found.problems and "Permission denied" in found.problems[0]


# ------------------------------------------------------------------------------------------ identities


def _zookeeper(ld: LogDir) -> LogDir:
    ld.meta_override = format_meta_properties(0, ld.node_id, CLUSTER_ID)
    return ld


def _check(*roots: Path) -> list[str]:
    found = discover(list(roots))
    assert not found.problems
    return check_inputs(found)


def test_copies_of_one_log_dir_are_refused(tmp_path):
    a, _ = standard(tmp_path / "before" / "broker-1")
    a.write()
    shutil.copytree(a.root, tmp_path / "after" / "broker-1")
    problems = _check(tmp_path / "before", tmp_path / "after")
    assert len(problems) == 1
    assert problems[0].startswith(
        f"{tmp_path}/before/broker-1 and {tmp_path}/after/broker-1 are copies of one log dir (node 1, "
        "directory.id "
    )
    assert "separate runs" in problems[0]


def test_copies_of_one_zookeeper_broker_are_refused(tmp_path):
    """No directory.id: the same node holding the same partition twice."""
    for name in ("before", "after"):
        _zookeeper(standard(tmp_path / name / "broker-1", metadata=False)[0]).write()
    (problem,) = _check(tmp_path / "before", tmp_path / "after")
    assert "both hold replicas of node 1 (1 partitions, e.g. orders-0)" in problem


def test_jbod_dirs_and_distinct_brokers_are_accepted(tmp_path):
    a, _ = standard(tmp_path / "b1-disk-a", dir_salt="a")
    a.write()
    b = LogDir(tmp_path / "b1-disk-b", dir_salt="b", metadata=False)
    b.part("payments").data(2)
    b.write()
    c, _ = standard(tmp_path / "b2", node_id=2, metadata=False)
    c.write()
    assert _check(a.root, b.root, c.root) == []


def test_a_copy_with_its_own_cluster_label_is_another_cluster(tmp_path):
    """Labels (as the test fixtures give one per scenario) separate clusters: no collision."""
    a, _ = standard(tmp_path / "x" / "broker-1")
    a.write()
    shutil.copytree(a.root, tmp_path / "y" / "broker-1")
    found = discover([tmp_path / "x"], label="x")
    found.sources += discover([tmp_path / "y"], label="y").sources
    assert check_inputs(found) == []


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        (b"", "no node.id or broker.id"),
        (b"#\n#only comments\n", "no node.id or broker.id"),
        (b"version=1\ncluster.id=" + CLUSTER_ID.encode() + b"\n", "Failed to find node.id"),
        (b"version=7\n", "Unknown meta.properties version number 7"),
    ],
)
def test_log_dir_naming_no_broker_is_refused(tmp_path, meta, why):
    ld, _ = standard(tmp_path / "broker-1")
    ld.meta_override = meta
    ld.write()
    (problem,) = _check(ld.root)
    assert problem == (f"{ld.root}/meta.properties: {why}: cannot tell which broker this log dir belongs to")


def test_fifo_meta_properties_is_refused_without_blocking(tmp_path):
    ld, _ = standard(tmp_path / "broker-1")
    ld.write()
    (ld.root / "meta.properties").unlink()
    os.mkfifo(ld.root / "meta.properties")
    (ld.root / "replication-offset-checkpoint").touch()  # still recognised as a log dir
    (problem,) = _check(ld.root)
    assert "meta.properties: is a FIFO (named pipe), not a regular file" in problem


def test_parquet_extract_copies_are_refused(tmp_path):
    a, _ = standard(tmp_path / "broker-1")
    a.write()
    b, _ = standard(tmp_path / "broker-2", node_id=2, metadata=False)
    b.write()
    extract_log_dir(a.root, tmp_path / "b1")
    extract_log_dir(b.root, tmp_path / "b2")
    shutil.copytree(tmp_path / "b1", tmp_path / "b1-again")
    assert _check(tmp_path / "b1", tmp_path / "b2") == []
    (problem,) = _check(tmp_path / "b1", tmp_path / "b1-again")
    assert problem.startswith(f"{tmp_path}/b1 and {tmp_path}/b1-again both hold replicas of node 1")
    assert "e.g. orders-0" in problem
    (problem,) = _check(a.root, tmp_path / "b1")  # a log dir and its own extract
    assert "both hold replicas of node 1" in problem


def test_parquet_that_is_not_an_extract_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "other.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    (problem,) = _check(tmp_path / "other.parquet")
    assert problem == f"{tmp_path}/other.parquet: not an extract of `kafka-auditor extract` (no replica rows)"
    (problem,) = _check(tmp_path / "junk.parquet")
    assert problem.startswith(f"{tmp_path}/junk.parquet: not a readable Parquet extract: ")
    ld, _ = standard(tmp_path / "broker-1")
    ld.write()
    extract_log_dir(ld.root, tmp_path / "b1")
    (problem,) = _check(tmp_path / "b1" / "batch.parquet")  # one table of an extract, not the extract
    table, directory = tmp_path / "b1" / "batch.parquet", tmp_path / "b1"
    assert problem == f"{table}: one table of an extract: give the directory {directory}"


AGAIN = "extract it again with `kafka-auditor extract LOGDIR --out DIR`"


def test_extracts_of_an_earlier_layout_or_version_are_refused_with_one_line(tmp_path):
    """An extract of schema version 2 (one Parquet file, ``kind`` and a struct column per kind) and a
    directory one of whose files has another version or is missing: one line each, naming the file and
    saying to extract again; nothing else of those inputs is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from auditor.observe import rows
    from auditor.observe.extract import extract_tables

    ld, _ = standard(tmp_path / "broker-1")
    ld.write()
    tables = extract_tables(ld.root)
    old = pa.concat_tables(rows.wrap(kind, t.cast(rows.TABLES[kind])) for kind, t in tables.items())
    version = b"kafka-auditor.schema-version"
    pq.write_table(old.replace_schema_metadata({version: b"2"}), tmp_path / "v2.parquet")
    extract_log_dir(ld.root, tmp_path / "b1")
    shutil.copytree(tmp_path / "b1", tmp_path / "b1-partial")
    partial = tmp_path / "b1-partial"
    (partial / "commit.parquet").unlink()
    epoch = tmp_path / "b1" / "epoch.parquet"
    pq.write_table(pq.read_table(epoch).replace_schema_metadata({version: b"3"}), epoch)
    assert _check(tmp_path / "v2.parquet", tmp_path / "b1", partial) == [
        f"{tmp_path}/v2.parquet: an extract in the earlier single-file layout (schema version 2; this "
        f"kafka-auditor reads directories of version {rows.SCHEMA_VERSION}): {AGAIN}",
        f"{epoch}: schema version 3, this kafka-auditor reads version {rows.SCHEMA_VERSION}; {AGAIN}",
        f"{partial}/commit.parquet: missing: {partial} is not a whole extract; {AGAIN}",
    ]


# ------------------------------------------------------------------------------------------ Spark errors


class Py4JJavaError(Exception):
    """Stands in for py4j's: the message is py4j's shape (call, Java exception line, Java stack)."""


Py4JJavaError.__module__ = "py4j.protocol"
JAVA_ERROR = (
    "An error occurred while calling o42.getOrCreate.\n"
    ": java.lang.IllegalStateException: boom\n"
    "\tat org.apache.spark.SparkContext.<init>(SparkContext.scala:1)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
)


def _audit_with(monkeypatch, tmp_path, target: str, error: BaseException | None = None):
    from typer.testing import CliRunner

    from auditor.cli import app

    ld, _ = standard(tmp_path / "broker-1")
    ld.write()

    def fail(*_args, **_kw):
        raise error if error is not None else Py4JJavaError(JAVA_ERROR)

    if target == "session":
        monkeypatch.setattr("auditor.spark.session.get_spark", fail)
    else:
        monkeypatch.setattr("auditor.spark.session.get_spark", lambda *a, **k: object())
        monkeypatch.setattr("auditor.spark.audit.run_audit", fail)
    return CliRunner().invoke(app, ["audit", str(ld.root), "--master", "local[2]"])


@pytest.mark.parametrize(
    ("target", "line"),
    [
        ("session", "cannot start Spark on --master local[2]: Py4JJavaError: An error occurred while"),
        ("job", "the Spark job failed: Py4JJavaError: An error occurred while"),
    ],
)
def test_java_errors_are_one_line(monkeypatch, tmp_path, target, line):
    result = _audit_with(monkeypatch, tmp_path, target)
    assert result.exit_code == 2
    (only,) = result.stderr.splitlines()
    assert only.startswith(f"kafka-auditor: error: {line}") and "IllegalStateException: boom" in only
    assert "\tat " not in result.output


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        Py4JJavaError("java.lang.OutOfMemoryError: Java heap space"),
    ],
)
def test_a_jvm_out_of_memory_is_one_line_with_the_setting_to_raise(monkeypatch, tmp_path, error):
    """The JVM killed by an OutOfMemoryError (py4j then meets a closed connection): one line naming the
    cause and the setting, never "internal error: ConnectionRefusedError"."""
    monkeypatch.setenv("KAFKA_AUDITOR_DRIVER_MEMORY", "3g")
    result = _audit_with(monkeypatch, tmp_path, "job", error)
    assert result.exit_code == 2
    (only,) = result.stderr.splitlines()
    assert only.startswith("kafka-auditor: error: the Spark job failed"), only
    assert "memory" in only and "KAFKA_AUDITOR_DRIVER_MEMORY (now 3g" in only
