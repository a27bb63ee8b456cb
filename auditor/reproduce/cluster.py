"""The live cluster, through confluent-kafka (librdkafka): its metadata and topic configs (AdminClient), a
partition read from an offset up to its high watermark (a Consumer that never joins a group nor commits),
and the idempotent producer (``enable.idempotence=true``, ``acks=all``).

confluent-kafka is the ``reproduce`` extra: it is imported here only, when a :class:`Cluster` is made. Every
blocking call waits in slices of :data:`SLICE` seconds, so Ctrl-C is served at once; librdkafka's own log
goes to the ``kafka_auditor.librdkafka`` logger (silent unless a handler is added), never to stderr.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from auditor.errors import not_installed
from auditor.reproduce.records import ReproduceError

EXTRA = "confluent_kafka"
INSTALL = "pip install 'kafka-auditor[reproduce]'"
SLICE = 0.5
"""Seconds of one wait inside librdkafka (a Python signal handler runs between two)."""

OWN_SETTINGS = frozenset(
    {
        "bootstrap.servers",
        "metadata.broker.list",
        "enable.idempotence",
        "acks",
        "request.required.acks",
        "transactional.id",
        "group.id",
        "enable.auto.commit",
        "isolation.level",
        "enable.partition.eof",
        "logger",
        "error_cb",
    }
)
"""Client settings ``--config`` cannot change: the command's guarantees rest on them."""

CONSUMER_GROUP = "kafka-auditor-reproduce"
"""The group.id librdkafka requires of a consumer; the command only assigns partitions, it never joins the
group nor commits offsets."""

log = logging.getLogger("kafka_auditor.librdkafka")
log.addHandler(logging.NullHandler())
log.propagate = False


def require_client(command: str = "reproduce") -> None:
    """A :class:`ReproduceError` naming the extra when confluent-kafka is not installed."""
    if not_installed(EXTRA):
        raise ReproduceError(f"`{command}` needs confluent-kafka: {INSTALL}")


def client_settings(pairs: list[str]) -> dict[str, str]:
    """``--config KEY=VALUE`` pairs as a dict of librdkafka settings; a malformed pair or one of
    :data:`OWN_SETTINGS` is a :class:`ReproduceError`."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ReproduceError(f"--config {pair!r}: give KEY=VALUE (a librdkafka setting)")
        if name in OWN_SETTINGS:
            raise ReproduceError(f"--config {name}: set by the command itself, it cannot be changed")
        out[name] = value
    return out


class Cluster:
    """The clients of one ``reproduce`` run. ``source``: the input file, named in every error line."""

    def __init__(self, bootstrap: str, settings: dict[str, str], timeout: float, source: str) -> None:
        require_client()
        import confluent_kafka
        from confluent_kafka.admin import AdminClient

        self._kafka = confluent_kafka
        self.bootstrap, self.timeout, self.source = bootstrap, timeout, source
        self.last_error: str | None = None
        self._base = {
            "bootstrap.servers": bootstrap,
            "client.id": "kafka-auditor-reproduce",
            "logger": log,
            "error_cb": self._on_error,
            **settings,
        }
        self._consumer: Any = None
        self._producer: Any = None
        try:
            self._admin = AdminClient(dict(self._base))
        except (confluent_kafka.KafkaException, ValueError, TypeError) as exc:
            raise ReproduceError(f"cannot make a Kafka client: {_reason(exc)}") from None

    def _on_error(self, error: Any) -> None:
        self.last_error = error.str()

    def close(self) -> None:
        """Close the consumer (the producer was flushed by :meth:`produce`)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------- metadata

    def topics(self) -> dict[str, int | None]:
        """Each topic of the cluster and its partition count (None: the broker answered with an error for
        it); unreachable within the timeout is a :class:`ReproduceError`."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                metadata = self._admin.list_topics(timeout=SLICE)
                break
            except self._kafka.KafkaException as exc:
                self._admin.poll(0)  # serve error_cb: the connection's own error names the cause
                if time.monotonic() >= deadline:
                    why = self.last_error or _reason(exc)
                    raise ReproduceError(
                        f"{self.source}: cannot reach --bootstrap-server {self.bootstrap} within "
                        f"{self.timeout:g} s ({why})"
                    ) from None
        return {
            name: (None if t.error is not None else len(t.partitions)) for name, t in metadata.topics.items()
        }

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """The configuration (name -> value) of each of ``topics``, as the brokers apply it."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics]
        if not resources:
            return {}
        futures = self._admin.describe_configs(resources, request_timeout=self.timeout)
        out = {}
        for resource, future in futures.items():
            try:
                entries = _wait(future, self.timeout)
            except concurrent.futures.TimeoutError:
                raise ReproduceError(
                    f"{self.source}: no answer from {self.bootstrap} within {self.timeout:g} s describing "
                    f"topic '{resource.name}'"
                ) from None
            except self._kafka.KafkaException as exc:
                raise ReproduceError(
                    f"{self.source}: cannot describe topic '{resource.name}' on {self.bootstrap}: "
                    f"{_reason(exc)}"
                ) from None
            out[resource.name] = {name: entry.value for name, entry in entries.items()}
        return out

    # --------------------------------------------------------------------------------------- consumer

    def _reader(self) -> Any:
        if self._consumer is None:
            settings = {
                **self._base,
                "group.id": CONSUMER_GROUP,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                # every record up to the high watermark: records produced again are not transactional,
                # and an open transaction must not hide them (read_committed stops at the last stable offset)
                "isolation.level": "read_uncommitted",
            }
            self._consumer = self._kafka.Consumer(settings)
        return self._consumer

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """The partition's log start offset and high watermark on its current leader."""
        tp = self._kafka.TopicPartition(topic, partition)
        try:
            low, high = self._reader().get_watermark_offsets(tp, timeout=self.timeout, cached=False)
        except self._kafka.KafkaException as exc:
            raise ReproduceError(
                f"{self.source}: cannot read the offsets of {topic}-{partition}: {_reason(exc)}"
            ) from None
        return low, high

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        """The first offset whose timestamp is ``timestamp`` or later (Kafka's offsetsForTimes), None when
        no record is that recent."""
        tp = self._kafka.TopicPartition(topic, partition, timestamp)
        try:
            (found,) = self._reader().offsets_for_times([tp], timeout=self.timeout)
        except self._kafka.KafkaException as exc:
            raise ReproduceError(
                f"{self.source}: cannot look up offsets by time in {topic}-{partition}: {_reason(exc)}"
            ) from None
        if found.error is not None:
            raise ReproduceError(
                f"{self.source}: cannot look up offsets by time in {topic}-{partition}: {found.error.str()}"
            )
        return None if found.offset < 0 else found.offset

    def scan(
        self, topic: str, partition: int, start: int, end: int
    ) -> Iterator[tuple[int, bytes | None, list[tuple[str, bytes | None]]]]:
        """Offset, key and headers of each record of the partition from ``start`` up to ``end`` (exclusive,
        the high watermark read before), one at a time; no record for the timeout is a
        :class:`ReproduceError`."""
        if start >= end:
            return
        kafka = self._kafka
        consumer = self._reader()
        consumer.assign([kafka.TopicPartition(topic, partition, start)])
        try:
            idle_until = time.monotonic() + self.timeout
            while True:
                message = consumer.poll(SLICE)
                if message is None:
                    if time.monotonic() >= idle_until:
                        why = f" ({self.last_error})" if self.last_error else ""
                        raise ReproduceError(
                            f"{self.source}: no record of {topic}-{partition} within {self.timeout:g} s "
                            f"while reading offsets {start}..{end - 1}{why}"
                        )
                    continue
                idle_until = time.monotonic() + self.timeout
                error = message.error()
                if error is not None:
                    if error.code() == kafka.KafkaError._PARTITION_EOF:
                        return
                    raise ReproduceError(f"{self.source}: cannot read {topic}-{partition}: {error.str()}")
                if message.offset() >= end:
                    return
                yield message.offset(), message.key(), message.headers() or []
                if message.offset() >= end - 1:
                    return
        finally:
            consumer.unassign()

    # --------------------------------------------------------------------------------------- producer

    def produce(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
        timestamp: int | None,
        done: Callable[[str | None, int], None],
    ) -> None:
        """Queue one record for the idempotent producer; ``done(error, offset)`` is called once the broker
        acknowledged it (``error`` None, ``offset`` where it landed) or it failed."""
        if self._producer is None:
            settings = {**self._base, "enable.idempotence": True, "acks": "all"}
            self._producer = self._kafka.Producer(settings)
        producer = self._producer

        def delivered(error: Any, message: Any) -> None:
            done(None if error is None else error.str(), -1 if error is not None else message.offset())

        when = timestamp if timestamp is not None and timestamp > 0 else 0  # 0: the producer's clock
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=key,
                    partition=partition,
                    headers=headers,
                    timestamp=when,
                    on_delivery=delivered,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(SLICE)
        producer.poll(0)

    def flush(self) -> None:
        """Wait until every queued record is acknowledged or failed (its ``done`` called)."""
        if self._producer is not None:
            while self._producer.flush(SLICE) > 0:
                pass


def _wait(future: Any, timeout: float) -> Any:
    """``future.result()``, waited for in slices (Ctrl-C is served between two)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return future.result(timeout=SLICE)
        except concurrent.futures.TimeoutError:
            if time.monotonic() >= deadline:
                raise


def _reason(exc: BaseException) -> str:
    """librdkafka's words for ``exc`` (a KafkaException holds a KafkaError)."""
    first = exc.args[0] if exc.args else exc
    text = first.str() if hasattr(first, "str") else str(first)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
