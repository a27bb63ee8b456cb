"""The rows the per-partition pass reads (:mod:`auditor.spark.partition_pass`): which kinds, the batch
columns as slotted rows, the loss rows, and the KRaft metadata rows of one partition."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.kafka.kraft import BROKER_RESOURCE, TIMELINE_CONFIGS, TOPIC_RESOURCE

Row = dict[str, Any]


INPUT_KINDS = ("replica", "epoch", "digest", "batch", "record")
"""The kinds of rows Spark groups per partition (the metadata rows come from :func:`metadata_index`)."""


def present(value: Any) -> Any:
    """``value`` without its null struct fields, at every depth: a rule sees (and its evidence shows) only
    what a row holds."""
    if isinstance(value, dict):
        return {k: present(v) for k, v in value.items() if v is not None}
    return value


BATCH_FIELDS = (
    "broker",
    "segment",
    "position",
    "base_offset",
    "last_offset",
    "crc",
    "leader_epoch",
    "valid",
    "records_count",
    "size",
    "max_timestamp",
    "sig",
    "attributes",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "control_type",
    "held",
)
"""The batch row fields the pass reads (``compare.batch_columns``). ``held``: a row the pass compares (of a
chunk where the replicas are not unanimous, or every row of a small input); the others are transactional or
control batches the pass only walks for their transactions' states (``pass_loss.walk_batches``)."""


class BatchRow:
    """One batch row, compact (a slot per field: a partition's held rows are kept at once), read as
    ``b.field`` (what ``auditor.kafka.transactions`` reads) or ``b["field"]``."""

    __slots__ = BATCH_FIELDS

    def __init__(self, row: Mapping[str, Any]) -> None:
        get = row.get
        self.broker, self.segment, self.position = get("broker"), get("segment"), get("position")
        self.base_offset, self.last_offset, self.crc = get("base_offset"), get("last_offset"), get("crc")
        self.leader_epoch, self.valid, self.records_count = (
            get("leader_epoch"),
            get("valid"),
            get("records_count"),
        )
        self.size, self.max_timestamp, self.sig = get("size"), get("max_timestamp"), get("sig")
        self.attributes, self.producer_id = get("attributes"), get("producer_id")
        self.producer_epoch, self.base_sequence = get("producer_epoch"), get("base_sequence")
        self.is_transactional, self.is_control = get("is_transactional"), get("is_control")
        self.control_type, self.held = get("control_type"), get("held", True)

    @classmethod
    def of(cls, values: tuple) -> BatchRow:
        """A row from its values in :data:`BATCH_FIELDS` order."""
        b = cls.__new__(cls)
        (b.broker, b.segment, b.position, b.base_offset, b.last_offset, b.crc, b.leader_epoch, b.valid,
         b.records_count, b.size, b.max_timestamp, b.sig, b.attributes, b.producer_id, b.producer_epoch,
         b.base_sequence, b.is_transactional, b.is_control, b.control_type, b.held) = values  # fmt: skip
        return b

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


class Lost:
    """A follower batch that differs from a leader's (:func:`lost_batches`): the batch and what the
    comparison concluded; ``lost["field"]`` reads either."""

    __slots__ = (
        "b",
        "replica",
        "leader",
        "leader_source",
        "txn_state",
        "txn_first",
        "committed_hw",
        "start",
        "below_hw",
        "above_hw",
    )

    def __init__(self, b: BatchRow, replica: Row, leader: int, leader_source: str, state: tuple, chw: int,
                 start: int, below_hw: bool, above_hw: bool) -> None:  # fmt: skip
        self.b, self.replica, self.leader, self.leader_source = b, replica, leader, leader_source
        self.txn_state, self.txn_first = state
        self.committed_hw, self.start, self.below_hw, self.above_hw = chw, start, below_hw, above_hw

    def __getitem__(self, name: str) -> Any:
        if name in Lost.__slots__:
            return getattr(self, name)
        if name in ("cluster", "topic", "partition", "log_dir"):
            return self.replica.get(name)
        return getattr(self.b, name)


def metadata_index(metadata: Iterable[Row]) -> dict:
    """The KRaft rows each partition's rules see, indexed: its partition records by (cluster, topic,
    partition), the configs of ``kraft.TIMELINE_CONFIGS`` by (cluster, topic) for topics and by cluster for
    brokers (repeated for every partition of the cluster; they are few)."""
    parts: dict[tuple, list[Row]] = {}
    topics: dict[tuple, list[Row]] = {}
    brokers: dict[str, list[Row]] = {}
    for r in metadata:
        if r.get("partition") is not None:
            parts.setdefault((r["cluster"], r["topic"], r["partition"]), []).append(r)
        elif r.get("record_type") == "CONFIG_RECORD" and r.get("config_name") in TIMELINE_CONFIGS:
            if r.get("config_resource_type") == TOPIC_RESOURCE:
                topics.setdefault((r["cluster"], r["topic"]), []).append(r)
            elif r.get("config_resource_type") == BROKER_RESOURCE:
                brokers.setdefault(r["cluster"], []).append(r)
    return {"parts": parts, "topics": topics, "brokers": brokers}


def metadata_for(index: Mapping, cluster: str, topic: str, partition: int) -> list[Row]:
    """The metadata rows of one partition (without ``cluster``; a config row carries the partition's topic
    and partition number)."""
    out = [dict(r) for r in index["parts"].get((cluster, topic, partition), ())]
    for r in (*index["topics"].get((cluster, topic), ()), *index["brokers"].get(cluster, ())):
        out.append(dict(r, topic=topic, partition=partition))
    for r in out:
        r.pop("cluster", None)
    return out
