"""KA605-KA611: replicas set apart by Kafka's identity (``auditor.kafka.identity``) before any comparison:
old incarnations of a topic, replicas on brokers outside the replica set, ``-future`` and ``-delete``
directories, the KRaft directory assignment, clusters whose replica sets could not be checked, and replicas
the replica set names that are not among the inputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from auditor.findings import Severity
from auditor.kafka.identity import (
    DELETED_DIR,
    FUTURE,
    OLD_INCARNATION,
    OTHER_INCARNATION,
    STRAY_DIR,
    UNASSIGNED,
    ReplicaIdentity,
)
from auditor.rules.registry import Violation, rule


@dataclass(frozen=True)
class ReplicaFacts:
    """One replica directory with its identity verdict and what it holds (a ``rows.REPLICA`` row)."""

    cluster: str | None
    topic: str
    partition: int
    broker: int | None
    log_dir: str | None
    identity: ReplicaIdentity
    row: dict[str, Any]
    live_leo: int | None = None  # -future: the log end offset of the live replica it copies (same broker)
    live_log_dir: str | None = None
    assigned_directory: str | None = None  # KIP-858: the directory ID the metadata names instead of its own

    @property
    def dir_name(self) -> str:
        return self.row.get("dir_name") or f"{self.topic}-{self.partition}"

    @property
    def dir_kind(self) -> str:
        return self.row.get("dir_kind") or "live"

    def held(self) -> tuple[int | None, int | None, int, int]:
        """(first offset, last offset, records, bytes) of the log Kafka would load from it."""
        start = self.row.get("log_start")
        leo = self.row.get("leo")
        last = leo - 1 if leo is not None and start is not None and leo > start else None
        return start, last, int(self.row.get("record_count") or 0), int(self.row.get("bytes") or 0)

    def holds(self) -> str:
        start, last, records, nbytes = self.held()
        if last is None:
            return "an empty log"
        return f"offsets {start}..{last} ({records} records, {nbytes} bytes)"

    def violation(self, message: str, **kw: Any) -> Violation:
        start, last, records, nbytes = self.held()
        ident = self.identity
        evidence = {
            "directory": self.dir_name,
            "dirKind": self.dir_kind,
            "topicId": ident.topic_id,
            "currentTopicId": ident.current_topic_id,
            "replicaSet": list(ident.replicas) if ident.replicas is not None else None,
            "logStartOffset": self.row.get("log_start"),
            "logEndOffset": self.row.get("leo"),
            "highWatermark": self.row.get("hw"),
            "status": ident.status,
            "reason": ident.reason,
            **kw.pop("evidence", {}),
        }
        if ident.removed is not None:
            evidence["removedAtMetadataOffset"] = ident.removed.removed_at.offset
            evidence["removedTimestamp"] = ident.removed.removed_at.timestamp
        return Violation(
            message,
            broker=self.broker,
            log_dir=self.log_dir,
            offset_start=start if last is not None else None,
            offset_end=last,
            records=records,
            bytes=nbytes,
            evidence={k: v for k, v in evidence.items() if v is not None},
            **kw,
        )


@dataclass(frozen=True)
class ClusterCoverage:
    """A cluster of ``audit``: whether KRaft metadata was among its inputs, and its replicas."""

    cluster: str | None
    has_metadata: bool
    replicas: int
    other_incarnations: int = 0


def _next_start(f: ReplicaFacts) -> str:
    if f.dir_kind == STRAY_DIR:
        return "Kafka already renamed it -stray at the broker's last start: it is no longer served"
    return (
        f"on broker {f.broker}'s next start Kafka renames it {f.dir_name}.<id>-stray (Kafka 3.7+ with "
        "KRaft; earlier versions delete it) and stops serving it"
    )


@rule(
    "KA605",
    "replication.old-incarnation",
    Severity.WARNING,
    "A replica belongs to an old incarnation of its topic (another topic ID): not compared",
    scope="identity",
)
def old_incarnation(f: ReplicaFacts) -> Iterator[Violation]:
    """
    What it finds: a partition replica whose ``partition.metadata`` topic ID is not the current topic ID of
    its topic name in the KRaft metadata among the inputs (the topic was deleted, or deleted and re-created
    while the broker was down); without KRaft metadata, a topic ID other than the one most replicas of the
    topic hold. It says what the replica holds (offsets, records, bytes) and when the metadata removed its
    topic ID.
    Why it matters: topic IDs (KIP-516) tell a topic from a deleted topic of the same name. The replica's
    records are not the current topic's: it is never compared with the current replicas, never counted as
    loss and never a leader candidate. On the broker's next start Kafka (3.7+, KRaft) renames it ``-stray``
    and stops serving it (InconsistentTopicIdException otherwise).
    What to do: nothing for the current topic. If the deleted topic's records are still needed, copy them
    (``kafka-auditor dump``) before deleting the directory; consumer group commits made on it are commits
    of a deleted incarnation.
    References: KIP-516, KAFKA-14616, ``LogManager`` stray logs, ``UnifiedLog.assignTopicId``.
    """
    ident = f.identity
    if ident.status not in (OLD_INCARNATION, OTHER_INCARNATION):
        return
    if ident.status == OTHER_INCARNATION:
        yield f.violation(
            f"broker {f.broker} holds {f.holds()} of {f.topic}-{f.partition} under {ident.reason}; no KRaft "
            "metadata among the inputs to tell which incarnation is current: it is compared with neither",
        )
        return
    when = ""
    if ident.removed is not None and ident.removed.removed:
        when = f" (removed at metadata offset {ident.removed.removed_at.offset})"
    yield f.violation(
        f"broker {f.broker} holds an old incarnation of {f.topic}-{f.partition}: {ident.reason}{when}; it "
        f"holds {f.holds()}, not compared with the current replicas; {_next_start(f)}",
    )


@rule(
    "KA606",
    "replication.unassigned-replica",
    Severity.WARNING,
    "A replica is on a broker outside the partition's replica set: not compared",
    scope="identity",
)
def unassigned_replica(f: ReplicaFacts) -> Iterator[Violation]:
    """
    What it finds: a replica of the current topic ID on a broker that is not in the partition's current
    replica set in the KRaft metadata (``PartitionRecord.replicas``, changed by ``PartitionChangeRecord``),
    or a ``-stray`` directory Kafka already set apart.
    Why it matters: the partition was reassigned away from the broker (or the broker was down when it was);
    Kafka treats the log as stray at the broker's next start. Comparing it with the current replicas would
    report divergence and loss that are only the end of its assignment.
    What to do: check that the reassignment completed; delete the directory once its records are not needed.
    References: KIP-455, KAFKA-14616, ``LogManager`` stray logs.
    """
    if f.identity.status != UNASSIGNED:
        return
    yield f.violation(
        f"broker {f.broker}'s {f.dir_name} is not a current replica: {f.identity.reason}; it holds "
        f"{f.holds()}, not compared with the current replicas",
    )


@rule(
    "KA607",
    "replication.log-dir-move",
    Severity.INFO,
    "An intra-broker log dir move is in progress (-future directory)",
    scope="identity",
)
def log_dir_move(f: ReplicaFacts) -> Iterator[Violation]:
    """
    What it finds: a ``topic-partition.<id>-future`` directory: the copy an intra-broker move
    (AlterReplicaLogDirs: ``kafka-reassign-partitions.sh`` with ``log_dirs``) is making in another log dir of
    the same broker, with how far it got (its log end offset against the live replica's).
    Why it matters: the future log is neither a separate replica nor the current one; the broker's
    ReplicaAlterLogDirsThread copies the live log into it and swaps them once it caught up. After a restart
    Kafka loads it and resumes the move (KAFKA-16082 lost data in that swap in 3.7).
    What to do: nothing while the move progresses; if it is stuck, cancel it (``kafka-reassign-partitions.sh
    --cancel``) or let it finish before removing the log dir.
    References: KIP-113, KIP-858, KAFKA-9087, KAFKA-16082.
    """
    if f.identity.status != FUTURE:
        return
    leo = f.row.get("leo")
    if f.live_leo is None:
        against = "the live replica of this broker is not among the inputs"
    else:
        done = f"{leo}/{f.live_leo}" if leo is not None else "unknown"
        against = f"copied up to offset {leo} of the live replica's log end offset {f.live_leo} ({done})"
        if f.live_log_dir is not None:
            against += f" in {f.live_log_dir}"
    yield f.violation(
        f"broker {f.broker} is moving {f.topic}-{f.partition} into {f.log_dir} ({f.dir_name}): {against}; "
        "Kafka resumes the copy at the next start and swaps the logs once it caught up",
        evidence={"liveLogEndOffset": f.live_leo, "liveLogDir": f.live_log_dir},
    )


@rule(
    "KA608",
    "replication.deleted-replica",
    Severity.INFO,
    "A deleted replica awaits removal (-delete directory): not compared",
    scope="identity",
)
def deleted_replica(f: ReplicaFacts) -> Iterator[Violation]:
    """
    What it finds: a ``topic-partition.<id>-delete`` directory: a replica Kafka deleted (its topic deleted,
    or the partition moved away) and renamed for asynchronous removal after ``file.delete.delay.ms``.
    Why it matters: it is no longer a replica and is never compared; it may hold the only copy of records
    deleted with their topic.
    What to do: nothing in normal operation; copy what is needed before Kafka removes it.
    References: ``LogManager.asyncDelete``, ``file.delete.delay.ms``, KIP-516.
    """
    if f.identity.status != DELETED_DIR:
        return
    yield f.violation(
        f"broker {f.broker}'s {f.dir_name} is a deleted replica awaiting removal; it holds {f.holds()}",
    )


@rule(
    "KA610",
    "replication.directory-assignment",
    Severity.WARNING,
    "The KRaft metadata assigns a replica to another log dir than the one holding it",
    scope="identity",
)
def directory_assignment(f: ReplicaFacts) -> Iterator[Violation]:
    """
    What it finds: a current replica whose log dir's ``directory.id`` (``meta.properties``) differs from the
    directory the KRaft metadata assigns it (``PartitionRecord.directories``, KIP-858); reserved directory
    IDs (UNASSIGNED, LOST, MIGRATING) are not compared.
    Why it matters: with JBOD in KRaft the controller uses the assignment to tell which replicas a failed
    log dir takes offline; a stale assignment makes it offline the wrong replicas or none.
    What to do: check for an interrupted log dir move (KA607) or a disk swapped by hand; the broker
    re-sends AssignReplicasToDirs when it starts.
    References: KIP-858, ``AssignmentsManager``, ``DirectoryId``.
    """
    if f.assigned_directory is None or not f.identity.compared:
        return
    yield f.violation(
        f"the KRaft metadata assigns broker {f.broker}'s replica of {f.topic}-{f.partition} to directory "
        f"{f.assigned_directory}, but it is in {f.log_dir} (directory.id {f.row.get('directory_id')})",
        evidence={"assignedDirectory": f.assigned_directory, "directoryId": f.row.get("directory_id")},
    )


@rule(
    "KA609",
    "replication.replica-set-unchecked",
    Severity.WARNING,
    "No KRaft metadata among the inputs: replica sets and incarnations were not checked",
    scope="coverage",
)
def replica_set_unchecked(c: ClusterCoverage) -> Iterator[Violation]:
    """
    What it finds: a cluster of the audit without a ``__cluster_metadata-0`` among its inputs (or a
    ZooKeeper-era cluster): the current topic IDs and the partitions' replica sets are unknown.
    Why it matters: replicas are compared by their ``partition.metadata`` topic IDs only (an old
    incarnation held by most replicas would be taken for the current one), a replica the partition no longer
    has is compared as if it were one, and a replica missing from the inputs goes unnoticed.
    What to do: add a controller's or a broker's log dir holding ``__cluster_metadata-0`` to the inputs.
    References: KIP-516, KIP-500, KIP-631.
    """
    if c.has_metadata or not c.replicas:
        return
    apart = (
        f"; {c.other_incarnations} replicas of another topic ID were set apart (KA605)"
        if c.other_incarnations
        else ""
    )
    yield Violation(
        f"cluster {c.cluster or '(unnamed)'}: no KRaft metadata among the inputs: the replica sets and "
        f"current topic IDs of its {c.replicas} replicas could not be checked; replicas are compared by "
        f"their partition.metadata topic ID{apart}",
        evidence={"replicas": c.replicas},
    )


@dataclass(frozen=True)
class PartitionCoverage:
    """One partition of the current incarnation: its KRaft replica set and the brokers among the inputs that
    hold a compared replica of it."""

    cluster: str | None
    topic: str
    partition: int
    replicas: tuple[int, ...]
    present: tuple[int, ...]

    @property
    def missing(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.present)


@rule(
    "KA611",
    "replication.replica-missing",
    Severity.WARNING,
    "A replica the partition's replica set names is not among the inputs: not compared",
    scope="replica-set",
)
def replica_missing(p: PartitionCoverage) -> Iterator[Violation]:
    """
    What it finds: a partition some of whose replicas are among the inputs while a broker of its current
    replica set in the KRaft metadata (``PartitionRecord.replicas``) has none there. An error when fewer than
    two replicas are left to compare: divergence, high watermarks and loss were not checked at all.
    Why it matters: divergence and loss are found by comparing replicas; a replica that is not in the inputs
    may hold the data the others lack (or lack what they hold), and after an unclean election it is often
    the very replica that holds the committed records the new leader does not have.
    What to do: add the missing broker's log dirs (or their extracts) to the inputs and audit again.
    References: KIP-966 (eligible leader replicas), ``PartitionRecord``, ``ReplicaManager``.
    """
    missing = p.missing
    if not missing or not p.present:
        return
    compared = len(p.present)
    verdict = (
        "nothing was compared: divergence, high watermarks and loss were not checked"
        if compared < 2
        else f"divergence and loss were checked between brokers {list(p.present)} only"
    )
    yield Violation(
        f"{p.topic}-{p.partition}: the replica set {list(p.replicas)} names broker(s) "
        f"{', '.join(map(str, missing))}, whose replica is not among the inputs; {verdict}",
        severity=Severity.ERROR if compared < 2 else None,
        topic=p.topic,
        partition=p.partition,
        broker=missing[0],
        log_dir=None,
        evidence={"replicas": list(p.replicas), "present": list(p.present), "missing": list(missing)},
    )
