"""Consumer groups as Kafka's group coordinator keeps them in ``__consumer_offsets``.

* A group lives in one partition of the offsets topic: ``Utils.abs(groupId.hashCode()) %
  offsets.topic.num.partitions`` (``GroupCoordinatorService.partitionFor``); ``Utils.abs`` maps
  ``Integer.MIN_VALUE`` to 0, unlike ``Math.abs``. The partition count is the one the topic was created with
  (``offsets.topic.num.partitions``, 50 by default): the KRaft metadata says how many it has.
* When a broker becomes the leader of an offsets partition it replays the partition's log in offset order
  (``GroupMetadataManager.loadGroupsAndOffsets`` / ``CoordinatorLoaderImpl``): an offset commit
  (key type 0 or 1) replaces the group's committed offset of that topic-partition, an offset tombstone (null
  value) deletes it. Offset commits written by a transactional producer (``TxnOffsetCommit``) stay pending
  until the producer's COMMIT marker follows in the log and are dropped by an ABORT; they take effect at the
  position of their own record. A group metadata tombstone (type 2 key, null value) removes the group's
  metadata only: offsets without a group are loaded into an empty group. Deleting a group
  (``DeleteGroups``, offset expiration) writes a tombstone for every offset of it next to the group tombstone.
* A consumer resumes from the committed offset; the leader epoch stored with it (KIP-320, value version 3+)
  is the epoch of the last record consumed, which the consumer validates with OffsetsForLeaderEpoch.

References: KIP-98, KIP-320, KIP-848, ``GroupMetadataManager``, ``OffsetMetadataManager``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from auditor.kafka.coordinator import coordinator_partition
from auditor.kafka.kraft import PartitionState, replay_partitions
from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.kafka.transactions import COMMITTED, PLAIN

DEFAULT_OFFSETS_PARTITIONS = 50
"""``offsets.topic.num.partitions`` default."""

OFFSET_COMMIT_TYPES = frozenset({0, 1})
"""Key types of offset commits (0: the pre-0.10 layout, 1: current); both share OffsetCommitKey."""
GROUP_METADATA_TYPE = 2


def partition_for(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group`` (its coordinator is that partition's
    leader): ``Utils.abs(group.hashCode()) % partitions``."""
    if partitions <= 0:
        raise ValueError(f"the offsets topic needs at least one partition, not {partitions}")
    return coordinator_partition(group, partitions)


def offsets_partitions(metadata: Iterable[Mapping[str, Any]]) -> int | None:
    """Partitions of ``__consumer_offsets`` in the KRaft metadata rows (``rows.METADATA`` dicts), replayed
    from the most complete node (highest metadata end offset); None when the metadata names none (the
    caller then assumes :data:`DEFAULT_OFFSETS_PARTITIONS`)."""
    count = sum(1 for topic, _ in metadata_partitions(metadata) if topic == OFFSETS_TOPIC)
    return count or None


def metadata_partitions(metadata: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], PartitionState]:
    """The partitions' KRaft state replayed from the most complete node's metadata rows (highest metadata
    end offset, then most rows); empty without metadata."""
    by_node: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in metadata:
        by_node.setdefault((row.get("cluster"), row.get("node")), []).append(row)
    if not by_node:
        return {}
    best = max(by_node.values(), key=lambda rs: (max(r.get("end_offset") or -1 for r in rs), len(rs)))
    return replay_partitions(sorted(best, key=lambda r: r["seq"]))


@dataclass(frozen=True)
class Commit:
    """The committed offset of one (group, topic, partition) as the coordinator loads it from one replica."""

    group: str
    topic: str
    partition: int
    offset: int  # the committed offset: the next record the group reads
    leader_epoch: int  # -1: none (value versions below 3, or the consumer knew none)
    metadata: str | None
    commit_timestamp: int
    expire_timestamp: int
    record_offset: int  # where the commit record sits in the offsets partition
    transactional: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def same_commit(self, other: Commit | None) -> bool:
        """The same committed position (offset, leader epoch, metadata)."""
        return other is not None and (self.offset, self.leader_epoch, self.metadata) == (
            other.offset,
            other.leader_epoch,
            other.metadata,
        )


def _counts(row: Mapping[str, Any]) -> bool:
    """A row the coordinator applies: live, decoded, and not transactional-but-uncommitted."""
    if row.get("live") is False or row.get("error") or row.get("record_type") is None:
        return False
    state = row.get("txn_state")
    return state in (None, PLAIN, COMMITTED)


def _replayed(rows_: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted((r for r in rows_ if _counts(r) and r.get("offset") is not None), key=lambda r: r["offset"])


def latest_commits(rows_: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], Commit]:
    """Replay ONE replica's ``rows.COMMIT`` rows the way the coordinator loads them: the committed offset per
    (group, topic, partition). Offset commits upsert, offset tombstones delete; group tombstones leave the
    offsets (Kafka writes offset tombstones when it deletes a group); transactional commits count once
    their transaction is committed (``txn_state``); records recovery cuts (``live`` false) never count."""
    out: dict[tuple[str, str, int], Commit] = {}
    for row in _replayed(rows_):
        if int(row["record_type"]) not in OFFSET_COMMIT_TYPES:
            continue
        key = (row["group"], row["commit_topic"], int(row["commit_partition"]))
        if row.get("tombstone"):
            out.pop(key, None)
            continue
        if row.get("committed_offset") is None:
            continue
        out[key] = Commit(
            group=key[0],
            topic=key[1],
            partition=key[2],
            offset=int(row["committed_offset"]),
            leader_epoch=_int(row.get("committed_leader_epoch"), -1),
            metadata=row.get("commit_metadata"),
            commit_timestamp=_int(row.get("commit_timestamp"), -1),
            expire_timestamp=_int(row.get("expire_timestamp"), -1),
            record_offset=int(row["offset"]),
            transactional=bool(row.get("is_transactional")),
        )
    return out


def group_metadata_state(rows_: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Per group, what the last group metadata record of one replica says: ``present`` (a classic group's
    GroupMetadataValue, or a KIP-848 ConsumerGroupMetadataValue) or ``deleted`` (its tombstone)."""
    out: dict[str, str] = {}
    for row in _replayed(rows_):
        if int(row["record_type"]) not in (GROUP_METADATA_TYPE, 3):
            continue
        out[row["group"]] = "deleted" if row.get("tombstone") else "present"
    return out


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)
