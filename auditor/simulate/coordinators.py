"""The group and transaction coordinators of a simulated cluster, and the consumers that commit offsets.

* ``__consumer_offsets`` (compacted, ``--offsets-partitions`` partitions, replicated like any partition): the
  group coordinator of group G is the leader of partition ``abs(hashCode(G)) % partitions`` (Java's
  ``String.hashCode``, Kafka's ``Utils.abs``); every OffsetCommit request becomes one batch of OffsetCommit
  records (key type 1: group, topic, partition; value version 3: offset, leader epoch, metadata, commit
  timestamp) appended with acks=all by that leader.
* A consumer reads a partition from its group's position up to the leader's high watermark (read_uncommitted)
  and commits the next offset to read with the leader epoch of the last record it consumed, as Kafka's
  consumer does (KIP-320).
* Groups commit as classic "simple" groups (offset commits only), except those of :data:`GROUP_PROTOCOLS`,
  whose consumer runs with ``group.protocol=consumer`` (KIP-848): before it reads, its first
  ConsumerGroupHeartbeat joins the group, and the coordinator appends one batch, in the order Kafka 4.0's
  ``GroupMetadataManager.consumerGroupHeartbeat`` writes them: the member's subscription
  (ConsumerGroupMemberMetadata), the subscribed topics (ConsumerGroupPartitionMetadata), group epoch 1
  (ConsumerGroupMetadata), the member's target assignment, every partition of its topic (the only member;
  ConsumerGroupTargetAssignmentMember), assignment epoch 1 (ConsumerGroupTargetAssignmentMetadata) and the
  member's current assignment (ConsumerGroupCurrentMemberAssignment: member epoch 1, previous 0, STABLE).
* ``__transaction_state`` (compacted): the transaction coordinator of transactional id T leads partition
  ``abs(hashCode(T)) % partitions`` and writes one TransactionLog record per state change: Ongoing when a
  partition joins the transaction (AddPartitionsToTxn), PrepareCommit/PrepareAbort at EndTxn, then (after the
  markers were written to every partition of the transaction) CompleteCommit/CompleteAbort.

The hash is computed here, not imported from :mod:`auditor.kafka`: the simulator is the oracle the auditor is
checked against.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from auditor.simulate.log import SimRecord
from auditor.simulate.model import tp_fields
from parsers.consumer_offsets import encode_offsets_key, encode_offsets_value
from parsers.transaction_state import encode_txn_key, encode_txn_value

TP = tuple[str, int]
Cluster = Any
"""An ``auditor.simulate.cluster.Cluster`` (not imported: the cluster package imports this one)."""

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
OFFSET_COMMIT_KEY_TYPE = 1
OFFSET_COMMIT_VALUE_VERSION = 3
CLASSIC, CONSUMER = "classic", "consumer"
GROUP_PROTOCOLS: dict[str, str] = {"safe-app": CONSUMER}
"""Groups whose consumers use the KIP-848 consumer protocol (the others: classic): safe-app, the group of
``group-commit-lost-range`` that commits inside its replicated phase A, so the scenario's findings stay those
of its classic groups."""
REBALANCE_TIMEOUT_MS = 300000  # max.poll.interval.ms
TRANSACTION_TIMEOUT_MS = 60000

# TransactionState ids as the transaction log stores them
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT = 0, 1, 2, 3, 4, 5
STATE_NAMES = {
    EMPTY: "Empty",
    ONGOING: "Ongoing",
    PREPARE_COMMIT: "PrepareCommit",
    PREPARE_ABORT: "PrepareAbort",
    COMPLETE_COMMIT: "CompleteCommit",
    COMPLETE_ABORT: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as an int32."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition of the internal topic whose leader coordinates ``key`` (a group id or transactional
    id): ``Utils.abs(key.hashCode()) % partitions`` (``Utils.abs`` maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass
class CoordinatorRecord:
    """What one coordinator record says (kept next to its bytes so the ground truth need not decode)."""

    kind: str  # "offset-commit" | "consumer-group" | "transaction"
    key: dict
    value: dict | None


@dataclass
class Commit:
    """One offset commit of one group for one partition, as the consumer sent it."""

    group: str
    tp: TP
    offset: int
    leader_epoch: int
    metadata: str
    commit_ms: int
    offsets_partition: int
    write: Any = None  # the cluster's Write of the commit record
    batch_id: int | None = None
    consumed: list[tuple[int, int, int]] = field(default_factory=list)
    """(offset, batch id, record index) of every record this consumer read since its previous commit."""

    @property
    def status(self) -> str:
        """What the coordinator's append came to: acked, pending, failed or rejected."""
        return "failed" if self.write is None else self.write.status


@dataclass
class ConsumerGroupMember:
    """The one member of a KIP-848 consumer group, as its join wrote it."""

    group: str
    member_id: str
    client_id: str
    topic: str
    partitions: list[int]
    group_epoch: int
    member_epoch: int
    offsets_partition: int
    write: Any = None  # the cluster's Write of the join batch

    @property
    def status(self) -> str:
        return "failed" if self.write is None else self.write.status


def member_id_for(group: str) -> str:
    """The member id a KIP-848 consumer of ``group`` generates (a Uuid in Kafka's base64url text; 4.0
    consumers choose it themselves), derived from the group so that the cluster's random stream is
    untouched."""
    raw = bytearray(hashlib.blake2b(group.encode(), digest_size=16).digest())
    raw[0] &= 0x7F  # Uuid.toString of a leading '-' is avoided, as Kafka's Uuid.randomUuid does
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


class GroupCoordinator:
    def __init__(self, cluster: Cluster, partitions: int) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self.commits: list[Commit] = []
        self.position: dict[tuple[str, TP], int] = {}
        self.protocols: dict[str, str] = dict(GROUP_PROTOCOLS)
        self.members: dict[str, ConsumerGroupMember] = {}

    def protocol_of(self, group: str) -> str:
        return self.protocols.get(group, CLASSIC)

    def join(self, group: str, topic: str) -> ConsumerGroupMember:
        """A KIP-848 consumer of ``group`` subscribing to ``topic`` sends its first heartbeat: one batch of
        the six consumer group records (see the module docstring), appended with acks=all."""
        c = self.cluster
        part = self.partition_for(group)
        spec = c.topics[topic]
        partitions = list(range(spec.partitions))
        member_id = member_id_for(group)
        member = ConsumerGroupMember(group, member_id, f"consumer-{group}-1", topic, partitions, 1, 1, part)
        assignment = [{"topicId": spec.topic_id, "partitions": partitions}]
        subscription = {
            "instanceId": None,
            "rackId": None,
            "clientId": member.client_id,
            "clientHost": "/127.0.0.1",
            "subscribedTopicNames": [topic],
            "subscribedTopicRegex": "",  # what Kafka 4.0 writes without a regex
            "rebalanceTimeoutMs": REBALANCE_TIMEOUT_MS,
            "serverAssignor": None,
        }
        topics = [
            {
                "topicId": spec.topic_id,
                "topicName": topic,
                "numPartitions": spec.partitions,
                "partitionMetadata": [],
            }
        ]
        current = {
            "memberEpoch": member.member_epoch,
            "previousMemberEpoch": 0,
            "state": 0,  # MemberState.STABLE
            "assignedPartitions": assignment,
            "partitionsPendingRevocation": [],
        }
        group_key, member_key = {"groupId": group}, {"groupId": group, "memberId": member_id}
        records = [
            (5, member_key, subscription),
            (4, group_key, {"topics": topics}),
            (3, group_key, {"epoch": member.group_epoch}),
            (7, member_key, {"topicPartitions": assignment}),
            (6, group_key, {"assignmentEpoch": member.group_epoch}),
            (8, member_key, current),
        ]
        now = c.wall_ms
        sim = [
            SimRecord(encode_offsets_key(t, key), encode_offsets_value(t, 0, value), now)
            for t, key, value in records
        ]
        write = c.produce(OFFSETS_TOPIC, part, len(sim), acks="all", records=sim)
        if write.batch is not None:
            c.coordinator_records[write.batch.batch_id] = [
                CoordinatorRecord("consumer-group", {"type": t, **key}, value) for t, key, value in records
            ]
        member.write = write
        self.members[group] = member
        c._event(
            "consumer-group-join",
            group=group,
            member_id=member_id,
            topic=topic,
            group_epoch=member.group_epoch,
            offsets_partition=part,
            status=write.status,
        )
        return member

    def partition_for(self, group: str) -> int:
        return coordinator_partition(group, self.partitions)

    def consume_and_commit(
        self, group: str, tp: TP, *, upto: int | None = None, metadata: str = ""
    ) -> Commit | None:
        """A consumer of ``group`` reads ``tp`` from its position to ``upto`` (exclusive; at most the
        leader's high watermark) and commits the offset after the last record it read. None: nothing read."""
        c = self.cluster
        if self.protocol_of(group) == CONSUMER and group not in self.members:
            self.join(group, tp[0])
        leader = c.leader_replica(tp)
        if leader is None:
            return None
        start = self.position.get((group, tp), 0)
        end = leader.hw if upto is None else min(upto, leader.hw)
        consumed: list[tuple[int, int, int]] = []
        last_epoch = -1
        for b in leader.log.read(start, 1 << 62) if start < end else []:
            if b.base_offset >= end:
                break
            if b.control is not None:
                continue
            for k in range(len(b.records)):
                off = b.base_offset + k
                if start <= off < end:
                    consumed.append((off, b.batch_id, k))
                    last_epoch = b.epoch
        if not consumed:
            return None
        offset = consumed[-1][0] + 1
        commit = self.commit(group, tp, offset, last_epoch, metadata)
        commit.consumed = consumed
        self.position[(group, tp)] = offset
        return commit

    def commit(self, group: str, tp: TP, offset: int, leader_epoch: int, metadata: str = "") -> Commit:
        """OffsetCommit: one record appended with acks=all by the leader of the group's offsets partition."""
        c = self.cluster
        part = self.partition_for(group)
        commit = Commit(group, tp, offset, leader_epoch, metadata, c.wall_ms, part)
        self.commits.append(commit)
        key = {"group": group, **tp_fields(tp)}
        value = {
            "offset": offset,
            "leaderEpoch": leader_epoch,
            "metadata": metadata,
            "commitTimestamp": commit.commit_ms,
        }
        record = SimRecord(
            encode_offsets_key(OFFSET_COMMIT_KEY_TYPE, key),
            encode_offsets_value(OFFSET_COMMIT_KEY_TYPE, OFFSET_COMMIT_VALUE_VERSION, value),
            commit.commit_ms,
        )
        write = c.produce(OFFSETS_TOPIC, part, 1, acks="all", records=[record])
        if write.batch is not None:
            commit.batch_id = write.batch.batch_id
            c.coordinator_records[write.batch.batch_id] = [CoordinatorRecord("offset-commit", key, value)]
        commit.write = write
        c._event(
            "offset-commit",
            group=group,
            **tp_fields(tp),
            offset=offset,
            leader_epoch=leader_epoch,
            offsets_partition=part,
            status=write.status,
        )
        return commit


class TransactionCoordinator:
    def __init__(self, cluster: Cluster, partitions: int) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self.log: list[dict] = []

    def partition_for(self, transactional_id: str) -> int:
        return coordinator_partition(transactional_id, self.partitions)

    def _write(self, prod: dict, state: int, partitions: dict[str, list[int]]) -> None:
        """One TransactionLog record (value version 0) appended with acks=all by the coordinator."""
        c = self.cluster
        tid = prod["transactional_id"]
        part = self.partition_for(tid)
        now = c.wall_ms
        if prod.get("txn_started_ms") is None:
            prod["txn_started_ms"] = now
        pairs = [(t, p) for t, ps in sorted(partitions.items()) for p in sorted(ps)]
        value = {
            "producerId": prod["pid"],
            "producerEpoch": prod["epoch"],
            "transactionTimeoutMs": TRANSACTION_TIMEOUT_MS,
            "transactionStatus": state,
            "transactionPartitions": pairs,
            "transactionLastUpdateTimestampMs": now,
            "transactionStartTimestampMs": prod["txn_started_ms"],
        }
        key = {"transactionalId": tid}
        raw = encode_txn_value(
            producer_id=prod["pid"],
            producer_epoch=prod["epoch"],
            timeout_ms=TRANSACTION_TIMEOUT_MS,
            state=state,
            partitions=pairs,
            last_update_timestamp=now,
            start_timestamp=prod["txn_started_ms"],
        )
        record = SimRecord(encode_txn_key(tid), raw, now)
        write = c.produce(TRANSACTION_STATE_TOPIC, part, 1, acks="all", records=[record])
        if write.batch is not None:
            c.coordinator_records[write.batch.batch_id] = [CoordinatorRecord("transaction", key, value)]
        self.log.append(
            {
                "transactional_id": tid,
                "producer_id": prod["pid"],
                "producer_epoch": prod["epoch"],
                "state": STATE_NAMES[state],
                "partition": part,
                "transaction_partitions": [list(x) for x in pairs],
                "write": write,
                "time_ms": c.now,
            }
        )

    def _partitions(self, prod: dict, extra: TP | None = None) -> dict[str, list[int]]:
        ps = sorted(prod["open"]) + ([extra[1]] if extra is not None else [])
        return {prod["topic"]: sorted(set(ps))} if ps else {}

    def add_partition(self, prod: dict, tp: TP) -> None:
        if not prod["open"]:
            prod["txn_started_ms"] = self.cluster.wall_ms
        self._write(prod, ONGOING, self._partitions(prod, tp))

    def prepare(self, prod: dict, commit: bool) -> None:
        self._write(prod, PREPARE_COMMIT if commit else PREPARE_ABORT, self._partitions(prod))

    def complete(self, prod: dict, commit: bool) -> None:
        self._write(prod, COMPLETE_COMMIT if commit else COMPLETE_ABORT, {})
        prod["txn_started_ms"] = None


class Coordinators:
    """Both coordinators of a cluster (see ``Cluster.add_coordinators``)."""

    def __init__(self, cluster: Cluster, offsets_partitions: int, txn_partitions: int) -> None:
        self.groups = GroupCoordinator(cluster, offsets_partitions)
        self.transactions = TransactionCoordinator(cluster, txn_partitions)
