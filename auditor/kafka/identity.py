"""Which replica is which, the way Kafka tells: one statement for ``scan``, ``audit``, ``timeline``,
``groups`` and ``report``.

A replica is (cluster, topic ID, partition, broker, log dir). Its topic ID is the one of its
``partition.metadata`` (KIP-516); the KRaft metadata log gives, per topic name, the current topic ID
(``TopicRecord``, forgotten by ``RemoveTopicRecord``), and per partition the replica set, ISR, ELR and
directory assignment (``PartitionRecord``/``PartitionChangeRecord``, KIP-858). Kafka itself, at a broker's
start, treats a log whose topic ID is not the current one, or whose partition is not assigned to the broker,
as a stray log and renames it ``-stray`` (``LogManager`` with KRaft, KAFKA-14616); a ``-future`` log is the
target of an intra-broker move (``AlterReplicaLogDirs``, KIP-113) and replaces the live one once it caught up;
a ``-delete`` log is awaiting asynchronous deletion (``LogManager.asyncDelete``).

Only replicas of the current incarnation on a broker of the replica set are compared with each other; every
other one is *set apart* with the reason (:data:`OLD_INCARNATION`, :data:`UNASSIGNED`, :data:`FUTURE`,
:data:`DELETED_DIR`, :data:`OTHER_INCARNATION`), reported once and never compared, counted as loss, nor
offered as a leader. Without KRaft metadata the topic IDs still keep incarnations apart: the replicas of a
topic that most brokers hold under one topic ID are compared, the others set apart
(:data:`OTHER_INCARNATION`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.kafka.kraft import PartitionState, replay_partitions
from auditor.kafka.topics import METADATA_TOPIC

CURRENT = "current"
"""The current incarnation on a broker of the replica set (or nothing says otherwise): compared."""
OLD_INCARNATION = "old-incarnation"
"""Its topic ID is not the current one of its name: the topic was deleted, or deleted and re-created."""
UNASSIGNED = "unassigned"
"""The current topic ID, but the broker is not in the partition's replica set (moved away while down)."""
OTHER_INCARNATION = "other-incarnation"
"""No KRaft metadata among the inputs: another topic ID than the one most replicas of the topic hold."""
FUTURE = "future"
"""A ``-future`` directory: the target of an intra-broker move."""
DELETED_DIR = "delete"
"""A ``-delete`` directory: a deleted replica awaiting removal."""
STRAY_DIR = "stray"
"""A ``-stray`` directory: Kafka already set it apart at the broker's last start."""

RESERVED_DIRECTORIES = {
    "AAAAAAAAAAAAAAAAAAAAAA": "UNASSIGNED",
    "AAAAAAAAAAAAAAAAAAAAAQ": "LOST",
    "AAAAAAAAAAAAAAAAAAAAAg": "MIGRATING",
}
"""``DirectoryId``'s reserved values: a ``directories`` entry that names no real log dir."""


@dataclass(frozen=True)
class MetadataPoint:
    """Where a record stands in the KRaft metadata log: its ``offset`` (None: read from a snapshot) and its
    batch's append ``timestamp`` (ms)."""

    offset: int | None = None
    timestamp: int | None = None

    @property
    def known(self) -> bool:
        return self.offset is not None or self.timestamp is not None


@dataclass(frozen=True)
class Incarnation:
    """One topic ID of a topic name in the KRaft metadata: when it was created and, if so, removed (its
    ``TopicRecord`` and ``RemoveTopicRecord``)."""

    topic: str
    topic_id: str
    created_at: MetadataPoint = MetadataPoint()
    removed_at: MetadataPoint = MetadataPoint()

    @property
    def removed(self) -> bool:
        return self.removed_at.known


@dataclass
class ClusterIdentity:
    """What a cluster's KRaft metadata says about topic IDs and replica sets (``source``: the node whose
    metadata log was replayed, the one that reached furthest; None: no metadata among the inputs)."""

    cluster: str | None
    source: int | None = None
    end_offset: int | None = None
    current: dict[str, str] = field(default_factory=dict)  # topic name -> current topic ID
    incarnations: dict[str, Incarnation] = field(default_factory=dict)  # topic ID -> incarnation
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)

    @property
    def has_metadata(self) -> bool:
        return self.source is not None

    def created_after(self, topic: str, timestamp: int | None) -> bool:
        """The current incarnation of ``topic`` was created after ``timestamp`` (ms), or the topic is gone:
        a commit or record of that time belongs to an earlier incarnation."""
        if timestamp is None or not self.has_metadata:
            return False
        current = self.current.get(topic)
        if current is None:
            return any(i.topic == topic for i in self.incarnations.values())
        inc = self.incarnations.get(current)
        created = inc.created_at.timestamp if inc is not None else None
        return created is not None and timestamp < created


def cluster_identities(metadata: Iterable[Mapping[str, Any]]) -> dict[str | None, ClusterIdentity]:
    """One :class:`ClusterIdentity` per cluster of the KRaft metadata rows (``rows.METADATA`` dicts of any
    nodes), replayed from the node whose metadata log ends furthest (then holds most rows)."""
    by_node: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in metadata:
        by_node.setdefault((row.get("cluster"), row.get("node")), []).append(row)
    best: dict[str | None, tuple[tuple, list]] = {}
    for (cluster, node), rows_ in by_node.items():
        rank = (max(r.get("end_offset") or -1 for r in rows_), len(rows_), -(node or 0))
        if cluster not in best or rank > best[cluster][0]:
            best[cluster] = (rank, rows_)
    out: dict[str | None, ClusterIdentity] = {}
    for cluster, (rank, rows_) in best.items():
        ordered = sorted(rows_, key=lambda r: r["seq"])
        ident = ClusterIdentity(cluster, ordered[0].get("node") if ordered else None, rank[0])
        _replay_topics(ident, ordered)
        ident.partitions = replay_partitions(ordered)
        out[cluster] = ident
    return out


def _replay_topics(ident: ClusterIdentity, ordered: list[Mapping[str, Any]]) -> None:
    for r in ordered:
        kind = r.get("record_type")
        tid = r.get("topic_id")
        if kind == "TOPIC_RECORD" and r.get("topic") and tid:
            old = ident.incarnations.get(tid)
            if old is None or r.get("offset", -1) >= 0:
                offset = r.get("offset") if (r.get("offset") or -1) >= 0 else None
                ident.incarnations[tid] = Incarnation(
                    r["topic"], tid, MetadataPoint(offset, r.get("timestamp"))
                )
            ident.current[r["topic"]] = tid
        elif kind == "REMOVE_TOPIC_RECORD" and tid:
            inc = ident.incarnations.get(tid)
            name = inc.topic if inc is not None else r.get("topic")
            if name is not None:
                created_at = inc.created_at if inc else MetadataPoint()
                removed_at = MetadataPoint(r.get("offset"), r.get("timestamp"))
                ident.incarnations[tid] = Incarnation(name, tid, created_at, removed_at)
                if ident.current.get(name) == tid:
                    del ident.current[name]


@dataclass(frozen=True)
class ReplicaIdentity:
    """The verdict on one replica: ``status`` (:data:`CURRENT` or why it is set apart) and what proves it."""

    status: str
    reason: str = ""
    topic_id: str | None = None
    current_topic_id: str | None = None
    replicas: tuple[int, ...] | None = None  # the current replica set (KRaft), None: unknown
    removed: Incarnation | None = None  # the metadata's record of this topic ID, when it was deleted
    checked: bool = True  # False: no KRaft metadata, the replica set could not be checked

    @property
    def compared(self) -> bool:
        return self.status == CURRENT


def identify(
    topic: str,
    partition: int,
    broker: int | None,
    topic_id: str | None,
    dir_kind: str | None,
    ident: ClusterIdentity | None,
    majority_topic_id: str | None = None,
) -> ReplicaIdentity:
    """Kafka's verdict on one replica directory: see the module docstring. ``majority_topic_id``: without
    KRaft metadata, the topic ID most brokers hold the topic under (:func:`majority_topic_ids`)."""
    kind = dir_kind or "live"
    has_md = ident is not None and ident.has_metadata
    current = ident.current.get(topic) if has_md else None
    state = ident.partitions.get((topic, partition)) if has_md else None
    replicas = tuple(state.replicas) if state is not None and state.topic_id == current else None
    base = {"topic_id": topic_id, "current_topic_id": current, "replicas": replicas, "checked": has_md}
    if topic == METADATA_TOPIC:
        return ReplicaIdentity(CURRENT, **base)
    if kind == "future":
        return ReplicaIdentity(FUTURE, "the target of an intra-broker log dir move (-future)", **base)
    if kind == "delete":
        return ReplicaIdentity(DELETED_DIR, "a deleted replica awaiting removal (-delete)", **base)
    if has_md and topic_id is not None and topic_id != current:
        removed = ident.incarnations.get(topic_id)
        what = (
            f"topic ID {topic_id} is not the current topic ID {current} of {topic}"
            if current is not None
            else f"topic {topic} (topic ID {topic_id}) no longer exists in the KRaft metadata"
        )
        return ReplicaIdentity(OLD_INCARNATION, what, removed=removed, **base)
    if has_md and topic_id is None and current is None and _ever_existed(ident, topic):
        removed = _last_incarnation(ident, topic)
        return ReplicaIdentity(
            OLD_INCARNATION, f"topic {topic} no longer exists in the KRaft metadata", removed=removed, **base
        )
    if replicas is not None and broker is not None and broker not in replicas:
        return ReplicaIdentity(
            UNASSIGNED,
            f"broker {broker} is not in the replica set {list(replicas)} of {topic}-{partition}",
            **base,
        )
    if kind == "stray":
        return ReplicaIdentity(UNASSIGNED, "Kafka set it apart at the broker's last start (-stray)", **base)
    other = majority_topic_id is not None and topic_id is not None and topic_id != majority_topic_id
    if not has_md and other:
        return ReplicaIdentity(
            OTHER_INCARNATION,
            f"topic ID {topic_id} differs from {majority_topic_id}, the one most replicas of {topic} hold",
            **{**base, "current_topic_id": majority_topic_id},
        )
    return ReplicaIdentity(CURRENT, **base)


def _ever_existed(ident: ClusterIdentity, topic: str) -> bool:
    return any(i.topic == topic for i in ident.incarnations.values())


def _last_incarnation(ident: ClusterIdentity, topic: str) -> Incarnation | None:
    removed = [i for i in ident.incarnations.values() if i.topic == topic and i.removed]
    return max(removed, key=lambda i: (i.removed_at.offset or -1, i.removed_at.timestamp or -1), default=None)


def majority_topic_ids(replicas: Iterable[Mapping[str, Any]]) -> dict[tuple[str | None, str], str]:
    """(cluster, topic) -> the topic ID held by the most brokers (ties: the most replicas, then the highest
    log end offset, then the ID), over the live replica rows that carry one: without KRaft metadata, the
    incarnation the audit compares."""
    votes: dict[tuple[str | None, str], dict[str, list]] = {}
    for r in replicas:
        tid = r.get("topic_id")
        if tid is None or (r.get("dir_kind") or "live") != "live":
            continue
        v = votes.setdefault((r.get("cluster"), r["topic"]), {}).setdefault(tid, [set(), 0, -1])
        v[0].add(r.get("broker"))
        v[1] += 1
        v[2] = max(v[2], int(r.get("leo") or -1))
    return {
        key: max(ids, key=lambda t: (len(ids[t][0]), ids[t][1], ids[t][2], t)) for key, ids in votes.items()
    }


def identify_rows(
    replicas: Iterable[Mapping[str, Any]],
    metadata: Iterable[Mapping[str, Any]],
    idents: Mapping[str | None, ClusterIdentity] | None = None,
) -> list[tuple[Mapping[str, Any], ReplicaIdentity]]:
    """Every replica row (``rows.REPLICA`` dicts) with its :class:`ReplicaIdentity`, judged against the KRaft
    metadata rows of its cluster (``idents``: their :func:`cluster_identities`, when the caller has them)."""
    replicas = list(replicas)
    idents = cluster_identities(metadata) if idents is None else idents
    majority = majority_topic_ids(replicas)
    return [
        (
            r,
            identify(
                r["topic"],
                int(r["partition"]),
                r.get("broker"),
                r.get("topic_id"),
                r.get("dir_kind"),
                idents.get(r.get("cluster")),
                majority.get((r.get("cluster"), r["topic"])),
            ),
        )
        for r in replicas
    ]


def directory_mismatch(
    state: PartitionState | None, broker: int | None, directory_id: str | None
) -> str | None:
    """The directory ID the KRaft metadata assigns ``broker``'s replica (KIP-858) when it names a real log dir
    other than ``directory_id`` (where the replica really is); None when they agree or cannot be told."""
    if state is None or broker is None or directory_id is None or not state.directories:
        return None
    if broker not in state.replicas or len(state.directories) != len(state.replicas):
        return None
    assigned = state.directories[state.replicas.index(broker)]
    if assigned in RESERVED_DIRECTORIES or assigned == directory_id:
        return None
    return assigned


CHECKPOINTED_KINDS = {
    "replication-offset-checkpoint": ("live",),
    "recovery-point-offset-checkpoint": ("live", "future"),
    "log-start-offset-checkpoint": ("live", "future"),
    "cleaner-offset-checkpoint": ("live",),
}
"""Which partition directories a log dir's checkpoint entry for (topic, partition) describes: the high
watermarks are the ``ReplicaManager``'s live logs only, ``LogManager`` checkpoints the recovery points and log
start offsets of the live and the ``-future`` logs of that log dir; a ``-delete`` or ``-stray`` log has none
(an entry of the same partition belongs to a live log beside it)."""


def checkpointed(dir_kind: str | None, checkpoint: str) -> bool:
    """The entry of ``checkpoint`` (a file name) for a partition describes its directory of ``dir_kind``."""
    return (dir_kind or "live") in CHECKPOINTED_KINDS.get(checkpoint, ("live",))
