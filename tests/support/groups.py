"""Small ``__consumer_offsets`` replicas for the group tests, written with the project's builders
(``tests.rules.builder``) and the group coordinator encoders of ``parsers.consumer_offsets``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from auditor.kafka.groups import partition_for
from auditor.kafka.topics import OFFSETS_TOPIC
from parsers.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    encode_consumer_protocol,
    encode_offsets_key,
    encode_offsets_value,
)
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


def classic_group(
    group: str, generation: int, members: dict[str, list[tuple[str, int]]]
) -> tuple[bytes, bytes]:
    """A classic consumer group's GroupMetadataValue (version 3): ``members`` maps member id to the
    partitions the leader assigned it (encoded as ConsumerProtocolAssignment v0, subscriptions v0)."""
    rows = []
    for member_id, tps in members.items():
        topics = sorted({t for t, _ in tps})
        subscription = encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, 0, {"topics": topics})
        assignment = encode_consumer_protocol(
            CONSUMER_PROTOCOL_ASSIGNMENT,
            0,
            {
                "assignedPartitions": [
                    {"topic": t, "partitions": [p for u, p in tps if u == t]} for t in topics
                ]
            },
        )
        rows.append(
            {
                "memberId": member_id,
                "clientId": f"client-{member_id}",
                "clientHost": "/10.0.0.1",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 45000,
                "subscription": subscription,
                "assignment": assignment,
            }
        )
    value = {
        "protocolType": "consumer",
        "generation": generation,
        "protocol": "range" if members else None,
        "leader": next(iter(members), None),
        "currentStateTimestamp": T0,
        "members": rows,
    }
    return encode_offsets_key(2, {"group": group}), encode_offsets_value(2, 3, value)


def consumer_record(record_type: int, group: str, value: dict | None, member: str | None = None):
    """A KIP-848 consumer group record (types 3-8, value version 0; ``value`` None: its tombstone)."""
    key = {"groupId": group} if member is None else {"groupId": group, "memberId": member}
    raw = None if value is None else encode_offsets_value(record_type, 0, value)
    return encode_offsets_key(record_type, key), raw


def consumer_join(group: str, member: str, topic: str, topic_id: str, partitions: list[int], epoch: int = 1):
    """What Kafka 4.0 writes when the only member of a KIP-848 group joins (one heartbeat): its subscription,
    the subscribed topic, the group epoch, its target assignment, the assignment epoch and its current
    assignment (member epoch ``epoch``, STABLE)."""
    assignment = [{"topicId": topic_id, "partitions": partitions}]
    metadata = {
        "instanceId": None,
        "rackId": None,
        "clientId": "console-consumer",
        "clientHost": "/127.0.0.1",
        "subscribedTopicNames": [topic],
        "subscribedTopicRegex": "",
        "rebalanceTimeoutMs": 300000,
        "serverAssignor": None,
    }
    topics = [
        {"topicId": topic_id, "topicName": topic, "numPartitions": len(partitions), "partitionMetadata": []}
    ]
    current = {
        "memberEpoch": epoch,
        "previousMemberEpoch": epoch - 1,
        "state": 0,
        "assignedPartitions": assignment,
        "partitionsPendingRevocation": [],
    }
    return [
        consumer_record(5, group, metadata, member),
        consumer_record(4, group, {"topics": topics}),
        consumer_record(3, group, {"epoch": epoch}),
        consumer_record(7, group, {"topicPartitions": assignment}, member),
        consumer_record(6, group, {"assignmentEpoch": epoch}),
        consumer_record(8, group, current, member),
    ]


def consumer_leave(group: str, member: str, epoch: int):
    """The member leaves: its assignment, target and subscription are tombstoned, the group epoch bumped."""
    return [
        consumer_record(8, group, None, member),
        consumer_record(7, group, None, member),
        consumer_record(5, group, None, member),
        consumer_record(4, group, {"topics": []}),
        consumer_record(3, group, {"epoch": epoch}),
    ]


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
