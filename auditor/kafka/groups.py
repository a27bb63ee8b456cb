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
* Groups of two protocols live side by side (``GroupMetadataManager.replay``). A *classic* group is what its
  last GroupMetadataValue (type 2) says: Empty without members, Stable with them (the loader's choice; the
  rebalance states are never stored); a tombstone removes it (Dead). An offset commit of a group that does
  not exist creates a "simple" classic group (Empty, no protocol type). A *consumer* group (KIP-848) is
  built from six record types: ConsumerGroupMetadata (3, the group epoch), ConsumerGroupPartitionMetadata
  (4, the subscribed topics' ids and names), ConsumerGroupMemberMetadata (5, a member's subscription),
  ConsumerGroupTargetAssignmentMetadata (6, the assignment epoch), ConsumerGroupTargetAssignmentMember (7,
  a member's target partitions) and ConsumerGroupCurrentMemberAssignment (8, a member's epoch, state and
  partitions); a consumer group record replaces a simple classic group. Its state is derived as
  ``ConsumerGroup.maybeUpdateGroupState`` does: Empty without members, Assigning while the group epoch is
  above the assignment epoch, Reconciling while a member is not STABLE at the assignment epoch, else
  Stable; the tombstone of its metadata (written last when the group is deleted) removes it (Dead).

References: KIP-98, KIP-320, KIP-848, ``GroupMetadataManager``, ``OffsetMetadataManager``, ``ConsumerGroup``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
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
CONSUMER_GROUP_METADATA_TYPE = 3
CONSUMER_GROUP_PARTITION_METADATA_TYPE = 4
CONSUMER_GROUP_MEMBER_METADATA_TYPE = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE = 8
CONSUMER_GROUP_TYPES = frozenset(range(3, 9))
"""Key types of the KIP-848 consumer group records (type 16, a resolved regular expression, changes no state
shown here; 9-15 are share groups)."""

CLASSIC = "classic"
CONSUMER = "consumer"
"""The group protocols (``GroupType``): classic (JoinGroup/SyncGroup) and consumer (KIP-848)."""

MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS"}
"""``MemberState`` values of ConsumerGroupCurrentMemberAssignmentValue.State (others: UNKNOWN)."""
LEAVE_GROUP_MEMBER_EPOCH = -1


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


@dataclass(frozen=True)
class GroupMember:
    """One member of a group as the coordinator loads it. Partitions are ``(topic, partition)``; a KIP-848
    assignment names topics by id, resolved to names when the group's subscription metadata or the caller's
    map knows them (else the id stands)."""

    member_id: str
    protocol: str  # classic | consumer (a KIP-848 member that joined with the classic protocol: classic)
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    session_timeout_ms: int | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int | None = None  # consumer: MemberEpoch (-1: left, its assignment tombstoned)
    previous_member_epoch: int | None = None
    member_state: str | None = None  # consumer: MemberState name
    assigned_partitions: tuple[tuple[str, int], ...] | None = None  # classic: the leader's assignment
    target_partitions: tuple[tuple[str, int], ...] | None = None  # consumer: its target assignment
    partitions_pending_revocation: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GroupState:
    """A group as the coordinator loads it from one replica of its offsets partition.

    ``state``: Empty, Stable or Dead (classic); Empty, Assigning, Reconciling, Stable or Dead (consumer).
    ``record_offset``: the last group record (not offset commit) applied, None for a simple group.
    ``problems``: records Kafka's loader would refuse (it fails loading the partition on them)."""

    group: str
    protocol: str
    state: str
    protocol_type: str | None = None  # classic: protocolType (None: a simple group)
    generation: int | None = None  # classic
    protocol_name: str | None = None  # classic: the chosen assignor
    leader: str | None = None  # classic: the leader's member id
    state_timestamp: int | None = None  # classic: currentStateTimestamp
    group_epoch: int | None = None  # consumer
    assignment_epoch: int | None = None  # consumer: the target assignment epoch
    members: tuple[GroupMember, ...] = ()
    record_offset: int | None = None
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Consumer:
    """A KIP-848 consumer group being replayed."""

    epoch: int = 0
    assignment_epoch: int = 0
    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name (subscription metadata)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class _Group:
    protocol: str
    classic: Mapping[str, Any] | None = None  # the GroupMetadata row (None: a simple group)
    consumer: _Consumer | None = None
    dead: bool = False
    record_offset: int | None = None
    problems: list[str] = field(default_factory=list)


def group_states(
    rows_: Iterable[Mapping[str, Any]], topic_names: Mapping[str, str] | None = None
) -> dict[str, GroupState]:
    """Replay ONE replica's ``rows.COMMIT`` rows as ``GroupMetadataManager.replay`` does: every group's
    protocol, state and members (see the module docstring). A group whose last record removed it is kept
    as Dead. ``topic_names`` (topic id -> name, e.g. from the KRaft metadata) resolves KIP-848 assignments
    the group's own subscription metadata does not name."""
    groups: dict[str, _Group] = {}
    for row in _replayed(rows_):
        kind, name = int(row["record_type"]), row.get("group")
        if name is None:
            continue
        g = groups.get(name)
        if kind in OFFSET_COMMIT_TYPES:
            if not row.get("tombstone") and (g is None or g.dead):
                groups[name] = _Group(CLASSIC)  # OffsetMetadataManager.replay: a simple classic group
            continue
        if kind == GROUP_METADATA_TYPE:
            if row.get("tombstone"):
                if g is not None:
                    g.dead, g.record_offset = True, int(row["offset"])
            else:
                groups[name] = _Group(CLASSIC, classic=row, record_offset=int(row["offset"]))
            continue
        if kind not in CONSUMER_GROUP_TYPES:
            continue
        if g is None or g.dead or g.consumer is None:
            tomb = bool(row.get("tombstone"))
            if g is not None and not g.dead and g.classic is not None:
                g.problems.append(
                    f"record at offset {row['offset']}: a consumer group record of type {kind} for a classic "
                    "group (Kafka's loader fails on it: the group is not a consumer group)"
                )
                if tomb:
                    continue
            elif tomb and (g is None or g.dead):
                continue  # a tombstone of a group that does not exist is ignored
            # a new consumer group; it replaces a simple classic group (offsets only)
            g = groups[name] = _Group(CONSUMER, consumer=_Consumer(), problems=g.problems if g else [])
        g.record_offset = int(row["offset"])
        _replay_consumer(g, kind, row)
    return {name: _state(name, g, topic_names or {}) for name, g in sorted(groups.items())}


def _replay_consumer(g: _Group, kind: int, row: Mapping[str, Any]) -> None:
    c = g.consumer
    assert c is not None
    tomb = bool(row.get("tombstone"))
    member_id = row.get("member_id")
    if kind == CONSUMER_GROUP_METADATA_TYPE:
        if tomb:
            g.dead = True
        else:
            c.epoch = int(row["group_epoch"])
    elif kind == CONSUMER_GROUP_PARTITION_METADATA_TYPE:
        c.topics = {} if tomb else {t["topic_id"]: t["topic"] for t in row.get("subscribed_topics") or []}
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE:
        c.assignment_epoch = -1 if tomb else int(row["assignment_epoch"])
    elif member_id is None:
        return
    elif kind == CONSUMER_GROUP_MEMBER_METADATA_TYPE:
        if tomb:
            c.members.pop(member_id, None)
        else:
            (member,) = row.get("members") or [{}]
            c.members.setdefault(member_id, _new_member()).update(metadata=member)
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE:
        if tomb:
            c.target.pop(member_id, None)
        else:
            c.target[member_id] = list(row.get("assigned_partitions") or [])
    elif kind == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE:
        if tomb:
            if member_id in c.members:
                c.members[member_id].update(
                    epoch=LEAVE_GROUP_MEMBER_EPOCH, previous=LEAVE_GROUP_MEMBER_EPOCH, assigned=[], pending=[]
                )
        else:
            c.members.setdefault(member_id, _new_member()).update(
                epoch=int(row["member_epoch"]),
                previous=int(row["previous_member_epoch"]),
                state=int(row["member_state"]),
                assigned=list(row.get("assigned_partitions") or []),
                pending=list(row.get("partitions_pending_revocation") or []),
            )


def _new_member() -> dict[str, Any]:
    """``ConsumerGroupMember.Builder``'s defaults: epoch 0, previous epoch -1, STABLE, nothing assigned."""
    return {"metadata": {}, "epoch": 0, "previous": -1, "state": 0, "assigned": [], "pending": []}


def _state(name: str, g: _Group, topic_names: Mapping[str, str]) -> GroupState:
    common = {"record_offset": g.record_offset, "problems": tuple(g.problems)}
    if g.protocol == CLASSIC:
        row = g.classic
        if row is None:
            return GroupState(name, CLASSIC, "Dead" if g.dead else "Empty", **common)
        members = tuple(_classic_member(m) for m in row.get("members") or [])
        return GroupState(
            name,
            CLASSIC,
            "Dead" if g.dead else ("Stable" if members else "Empty"),
            protocol_type=row.get("protocol_type"),
            generation=row.get("generation"),
            protocol_name=row.get("protocol_name"),
            leader=row.get("group_leader"),
            state_timestamp=row.get("state_timestamp"),
            members=() if g.dead else members,
            **common,
        )
    c = g.consumer
    assert c is not None
    names = {**topic_names, **c.topics}

    def tps(items: list[dict[str, Any]]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted((names.get(i["topic_id"], i["topic_id"]), int(i["partition"])) for i in items))

    members = tuple(
        _consumer_member(mid, m, tps(m["assigned"]), tps(c.target.get(mid, [])), tps(m["pending"]))
        for mid, m in sorted(c.members.items())
    )
    if g.dead:
        state = "Dead"
    elif not members:
        state = "Empty"
    elif c.epoch > c.assignment_epoch:
        state = "Assigning"
    elif any(m.member_state != "STABLE" or m.member_epoch != c.assignment_epoch for m in members):
        state = "Reconciling"
    else:
        state = "Stable"
    return GroupState(
        name,
        CONSUMER,
        state,
        group_epoch=c.epoch,
        assignment_epoch=c.assignment_epoch,
        members=members,
        **common,
    )


def _classic_member(m: Mapping[str, Any]) -> GroupMember:
    assignment = m.get("assignment")
    topics = m.get("subscribed_topic_names")
    return GroupMember(
        member_id=m["member_id"],
        protocol=CLASSIC,
        group_instance_id=m.get("group_instance_id"),
        client_id=m.get("client_id") or "",
        client_host=m.get("client_host") or "",
        rebalance_timeout_ms=_int(m.get("rebalance_timeout_ms"), -1),
        session_timeout_ms=m.get("session_timeout_ms"),
        subscribed_topic_names=tuple(topics) if topics is not None else None,
        assigned_partitions=(
            tuple(sorted((a["topic"], int(a["partition"])) for a in assignment))
            if assignment is not None
            else None
        ),
    )


def _consumer_member(
    member_id: str, m: Mapping[str, Any], assigned: tuple, target: tuple, pending: tuple
) -> GroupMember:
    meta = m["metadata"]
    topics = meta.get("subscribed_topic_names")
    return GroupMember(
        member_id=member_id,
        protocol=CLASSIC if meta.get("classic") else CONSUMER,
        group_instance_id=meta.get("group_instance_id"),
        client_id=meta.get("client_id") or "",
        client_host=meta.get("client_host") or "",
        rack_id=meta.get("rack_id"),
        rebalance_timeout_ms=_int(meta.get("rebalance_timeout_ms"), -1),
        session_timeout_ms=meta.get("session_timeout_ms"),
        subscribed_topic_names=tuple(topics) if topics is not None else None,
        subscribed_topic_regex=meta.get("subscribed_topic_regex"),
        server_assignor=meta.get("server_assignor"),
        member_epoch=m["epoch"],
        previous_member_epoch=m["previous"],
        member_state=MEMBER_STATES.get(m["state"], "UNKNOWN"),
        assigned_partitions=assigned,
        target_partitions=target,
        partitions_pending_revocation=pending,
    )


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
