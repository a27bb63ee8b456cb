"""``audit`` refuses inputs it cannot audit before Spark starts: exit 2, one line per reason, within 2 s (a
Spark session alone takes longer), no traceback and no Java stack. Each case is a real CLI subprocess, run
with a ``pyspark`` that cannot be imported: reaching Spark at all would change the error."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT
from tests.rules.builder import standard

PRECHECK_SECONDS = 2.0
"""On an idle machine; scaled by the load average per CPU when the machine is busier than that."""
PRECHECK_RSS_MB = 250


def _time_limit() -> float:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return PRECHECK_SECONDS * max(1.0, os.getloadavg()[0] / cpus)


def _without_spark(tmp: Path) -> dict[str, str]:
    """PYTHONPATH where ``import pyspark`` and ``import py4j`` fail."""
    poison = tmp / "no-spark"
    for name in ("pyspark", "py4j"):
        (poison / name).mkdir(parents=True)
        (poison / name / "__init__.py").write_text(f"raise ImportError('{name} imported by a pre-check')\n")
    return {"PYTHONPATH": f"{poison}{os.pathsep}{ROOT}"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _broker(tmp: Path, name: str = "broker-1", **kw) -> Path:
    ld, _ = standard(tmp / name, **kw)
    ld.write()
    return ld.root


def missing_path(tmp: Path) -> tuple[list[str], str]:
    return [str(tmp / "nope")], f"{tmp}/nope: no such file or directory"


def nothing_kafka_and_a_fifo_named_parquet(tmp: Path) -> tuple[list[str], str]:
    (tmp / "root").mkdir()
    (tmp / "root" / "notes.txt").write_text("not kafka")
    os.mkfifo(tmp / "root" / "broker-1.parquet")
    return [str(tmp / "root")], f"{tmp}/root: no Kafka log directory or extract found"


def empty_meta_properties(tmp: Path) -> tuple[list[str], str]:
    root = _broker(tmp)
    (root / "meta.properties").write_bytes(b"")
    return [str(root)], (
        f"{root}/meta.properties: no node.id or broker.id: cannot tell which broker this log dir belongs to"
    )


def before_and_after_copies(tmp: Path) -> tuple[list[str], str]:
    root = _broker(tmp / "before")
    shutil.copytree(root, tmp / "after" / "broker-1")
    return [str(tmp / "before"), str(tmp / "after")], (
        f"{tmp}/before/broker-1 and {tmp}/after/broker-1 are copies of one log dir (node 1, directory.id "
    )


def earlier_single_file_extract(tmp: Path) -> tuple[list[str], str]:
    """An extract of schema version 2 (one Parquet file: ``kind`` and a struct column per kind) beside a
    log dir: refused by its footer, naming it and saying to extract again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds = pa.struct([("cluster", pa.string()), ("broker", pa.int32())])
    old = pa.table(
        {"kind": pa.array([], pa.string()), "batch": pa.array([], kinds), "replica": pa.array([], kinds)}
    )
    pq.write_table(old.replace_schema_metadata({b"kafka-auditor.schema-version": b"2"}), tmp / "b2.parquet")
    return [str(_broker(tmp)), str(tmp / "b2.parquet")], (
        f"{tmp}/b2.parquet: an extract in the earlier single-file layout (schema version 2; this "
        "kafka-auditor reads directories of version 4): extract it again with `kafka-auditor extract LOGDIR "
        "--out DIR`"
    )


def malformed_master(tmp: Path) -> tuple[list[str], str]:
    return [str(_broker(tmp)), "--master", "spark://127.0.0.1"], (
        "--master spark://127.0.0.1: '127.0.0.1' has no port (e.g. 127.0.0.1:7077)"
    )


def unreachable_master(tmp: Path) -> tuple[list[str], str]:
    port = _closed_port()
    url = f"spark://127.0.0.1:{port}"
    return [str(_broker(tmp)), "--master", url], (
        f"--master {url}: cannot reach the cluster (127.0.0.1:{port}: Connection refused)"
    )


@pytest.mark.parametrize(
    "case",
    [
        missing_path,
        nothing_kafka_and_a_fifo_named_parquet,
        empty_meta_properties,
        before_and_after_copies,
        earlier_single_file_extract,
        malformed_master,
        unreachable_master,
    ],
)
def test_audit_refuses_before_spark(case, tmp_path, bounded):
    args, reason = case(tmp_path)
    run = bounded(["audit", *args], timeout=30, env=_without_spark(tmp_path))
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kafka-auditor: error: {reason}"), run.stderr
    limit = _time_limit()
    assert run.seconds < limit, f"{run.seconds:.2f} s (limit {limit:.1f} s): the refusal must come first"
    assert run.peak_rss_mb < PRECHECK_RSS_MB
