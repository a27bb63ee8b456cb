"""Small ``__consumer_offsets`` replicas for the group tests, written with the project's builders
(``tests.rules.builder``) and the group coordinator encoders of ``parsers.consumer_offsets``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from auditor.kafka.groups import partition_for
from auditor.kafka.topics import OFFSETS_TOPIC
from parsers.consumer_offsets import encode_offsets_key, encode_offsets_value
from parsers.record_batch import RecordSpec, build_batch
from tests.rules.builder import T0, Batch, LogDir, Part

PARTITIONS = 50
"""The builder's KRaft metadata has no PartitionRecord: the offsets topic counts as the default 50."""


def commit_record(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    epoch: int = -1,
    version: int = 3,
    metadata: str = "",
    ts: int = T0,
) -> tuple[bytes, bytes]:
    """An offset commit (key type 1) at value ``version`` (1 carries an expire timestamp, 3+ the epoch)."""
    value = {"offset": offset, "metadata": metadata, "commitTimestamp": ts}
    if version >= 3:
        value["leaderEpoch"] = epoch
    if version == 1:
        value["expireTimestamp"] = ts + 86_400_000
    key = encode_offsets_key(1, {"group": group, "topic": topic, "partition": partition})
    return key, encode_offsets_value(1, version, value)


def offset_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    return encode_offsets_key(1, {"group": group, "topic": topic, "partition": partition}), None


def group_metadata(group: str) -> tuple[bytes, bytes]:
    value = {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": "m", "members": []}
    return encode_offsets_key(2, {"group": group}), encode_offsets_value(2, 3, value)


def group_tombstone(group: str) -> tuple[bytes, None]:
    return encode_offsets_key(2, {"group": group}), None


@dataclass
class Records(Batch):
    """A batch of explicit (key, value) records (``records`` follows their number)."""

    specs: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.records = len(self.specs)


class RecordsPart(Part):
    """A builder partition whose :class:`Records` batches carry the given keys and values."""

    def _encode(self, b: Batch, base: int, ts: int) -> tuple[bytes, int]:
        if not isinstance(b, Records):
            return super()._encode(b, base, ts)
        raw = build_batch(
            [RecordSpec(k, v, ts + i) for i, (k, v) in enumerate(b.specs)],
            base_offset=base,
            partition_leader_epoch=b.epoch,
            transactional=b.transactional,
            producer_id=b.producer_id,
            producer_epoch=0 if b.producer_id >= 0 else -1,
            base_sequence=0 if b.producer_id >= 0 else -1,
        )
        return raw, base + len(b.specs) - 1


def offsets_part(ld: LogDir, group: str, partitions: int = PARTITIONS) -> RecordsPart:
    """The ``__consumer_offsets`` partition directory of ``group`` in ``ld``."""
    p = RecordsPart(ld, OFFSETS_TOPIC, partition_for(group, partitions))
    p.topic_id = None
    ld.parts.append(p)
    return p


def lost_commit_cluster(root: Path) -> dict[str, Path]:
    """Two brokers after an unclean election on ``orders-0``: broker 1 (the old leader) holds offsets 0..19
    in epoch 0, broker 2 (the new leader) 0..9 of them and 10..14 in epoch 1. Group ``g-lost`` committed
    offset 18 (epoch 0) while broker 1 led, group ``g-fine`` offset 5; both brokers hold both offsets
    partitions."""
    dirs = {}
    for node in (1, 2):
        ld = LogDir(root / f"broker-{node}", node_id=node)
        part = ld.part("orders", 0)
        part.data(2, records=5)
        if node == 1:
            part.data(2, records=5)
        else:
            part.add(Batch(records=5, epoch=1))
        offsets_part(ld, "g-lost").add(
            Records(specs=[group_metadata("g-lost"), commit_record("g-lost", "orders", 0, 18, epoch=0)])
        )
        offsets_part(ld, "g-fine").add(Records(specs=[commit_record("g-fine", "orders", 0, 5, epoch=0)]))
        ld.write()
        dirs[f"broker-{node}"] = ld.root
    return dirs
