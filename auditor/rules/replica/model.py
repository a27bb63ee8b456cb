"""The typed per-partition inputs of the cross-replica rules (KA6xx/KA7xx), derived ONCE per partition
before any rule runs: the replicas, the reference (current) leader, the KRaft view of the partition, the
leader-epoch caches and epoch ranges, the first divergent offset of every replica pair and Kafka's
follower truncation points. The rows Spark counts after the rules (lag rows, lost runs) and the per-cluster
leader sources have their own small types.

A replica is *incomplete* when some of its batches could not be read (``unreadable_from`` ..
``unreadable_to`` of its extract row: an unreadable segment, or a segment that is not the last and stops
early). Nothing is derived from what could not be read: a replica whose span runs to the end of its log has
an unknown log end offset (``leo`` is then only a lower bound) and the rules that need it skip it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.kafka.epochs import follower_truncation, loaded_cache
from auditor.kafka.hw import clamp_high_watermark
from auditor.kafka.kraft import PartitionState, config_events, replay_partitions
from auditor.kafka.timeline import node_rows, reference_node
from auditor.kafka.topics import METADATA_TOPIC
from auditor.rules.forward import Forward
from auditor.rules.registry import Violation
from auditor.rules.replica.rows import FromRow


def partition_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``cluster``, ``topic`` and ``partition`` of a row of the extract, as keyword arguments."""
    return {"cluster": row["cluster"], "topic": row["topic"], "partition": int(row["partition"])}


@dataclass(frozen=True)
class Replica(FromRow):
    """One partition replica (a ``rows.REPLICA`` row of the extract)."""

    cluster: str
    topic: str
    partition: int
    broker: int
    log_dir: str | None
    leo: int
    log_start: int
    hw: int | None = None
    latest_epoch: int | None = None
    unreadable_from: int | None = None
    unreadable_to: int | None = None
    unreadable: str | None = None
    error: str | None = None

    @classmethod
    def given(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        return {"cluster": row.get("cluster"), "error": row.get("error") or None}

    @property
    def leo_known(self) -> bool:
        """The log end offset is known: no unreadable span runs to the end of the log."""
        return self.unreadable_from is None or self.unreadable_to is not None

    @property
    def hole(self) -> tuple[int, int | None] | None:
        """The unreadable span ``[from, to)`` (``to`` None: to the end of the log), or None."""
        return None if self.unreadable_from is None else (self.unreadable_from, self.unreadable_to)

    def overlaps_hole(self, first: int, last: int) -> bool:
        """Offsets ``first..last`` (inclusive) touch the unreadable span."""
        span = self.hole
        return span is not None and last >= span[0] and (span[1] is None or first < span[1])


@dataclass(frozen=True)
class EpochRange(FromRow):
    """The batches of one replica written in one leader epoch: offsets, records, bytes, batches, and the
    lowest and highest batch max timestamp among them (None when not collected)."""

    epoch: int
    first: int
    last: int
    records: int
    bytes: int
    batches: int
    first_timestamp: int | None = None
    last_timestamp: int | None = None


@dataclass(frozen=True)
class Divergence(FromRow):
    """The first offset where replicas ``a < b`` differ inside their common range ``[lo, hi)``."""

    a: int
    b: int
    lo: int
    hi: int
    offset: int
    mode: str | None = None
    detail: Any = None  # what each side holds at ``offset`` (the ``divergence.detail`` struct)


@dataclass(frozen=True)
class FollowerTruncation:
    """Where Kafka's follower fetcher truncates a follower (OffsetsForLeaderEpoch against the leader)."""

    offset: int
    fallback: str | None
    steps: list
    leader_cache: list[tuple[int, int]]
    follower_cache: list[tuple[int, int]]


@dataclass
class PartitionReplicas:
    """Everything the per-partition rules see of one partition (scope ``replicas``)."""

    replicas: list[Replica]  # by broker id
    leader: Replica
    leader_source: str  # kraft | kraft-last-known | inferred | inferred-kraft-leader-absent
    kraft: PartitionState | None = None
    configs: list[dict] = field(default_factory=list)  # kraft.config_events of the same metadata replica
    caches: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # broker -> (epoch, start)
    ranges: dict[int, list[EpochRange]] = field(default_factory=dict)
    divergences: dict[tuple[int, int], Divergence] = field(default_factory=dict)
    truncations: dict[int, FollowerTruncation] = field(default_factory=dict)

    cluster = Forward[str]("leader.cluster")
    topic = Forward[str]("leader.topic")
    partition = Forward[int]("leader.partition")

    @property
    def is_metadata(self) -> bool:
        """``__cluster_metadata``: replicated by KRaft, not by the ISR protocol; only compared."""
        return self.topic == METADATA_TOPIC

    @property
    def followers(self) -> list[Replica]:
        return [r for r in self.replicas if r.broker != self.leader.broker]

    def replica(self, broker: int) -> Replica | None:
        return next((r for r in self.replicas if r.broker == broker), None)

    def divergence(self, x: int, y: int) -> Divergence | None:
        """The first divergence of the pair ``{x, y}``, if they differ."""
        return self.divergences.get((min(x, y), max(x, y)))

    def against_leader(self, r: Replica, message: str, first: int, last: int, **kw) -> Violation:
        """A violation of follower ``r`` about its offsets ``first..last``, the current leader as peer."""
        return Violation(
            message, broker=r.broker, peer=self.leader.broker, offset_start=first, offset_end=last, **kw
        )


class FollowerSpan:
    """Offsets of a follower counted against the leader by Spark (a lag row, a lost run)."""

    broker: int
    log_dir: str | None
    leader: int
    records: int
    bytes: int

    def about(self, message: str, first: int, last: int, epoch: int | None, **kw) -> Violation:
        """A violation about the follower's offsets ``first..last``, the leader as peer."""
        return Violation(
            message,
            broker=self.broker,
            log_dir=self.log_dir,
            peer=self.leader,
            offset_start=first,
            offset_end=last,
            epoch=epoch,
            **kw,
        )

    def violation(self, message: str, first: int, last: int, epoch: int | None, **kw) -> Violation:
        """:meth:`about`, with the records and bytes counted there."""
        return self.about(message, first, last, epoch, records=self.records, bytes=self.bytes, **kw)


@dataclass(frozen=True)
class LagRow(FollowerSpan, FromRow):
    """A follower whose log is a prefix of the leader's, counted by Spark: the leader's records, bytes and
    batches in ``[start, end)`` (the follower's and the leader's log end offsets) and their timestamps."""

    cluster: str
    topic: str
    partition: int
    broker: int
    log_dir: str | None
    leader: int
    leader_source: str
    start: int
    end: int
    epoch: int | None
    in_isr: bool | None
    isr: list[int] | None
    records: int
    bytes: int
    batches: int
    first_timestamp: int | None
    last_timestamp: int | None

    @classmethod
    def given(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        counts = {k: int(row.get(k) or 0) for k in ("records", "bytes", "batches")}  # none counted: null
        return {"start": int(row["from"]), "end": int(row["to"]), **counts}


@dataclass(frozen=True)
class LostRun(FollowerSpan, FromRow):
    """A run of consecutive follower batches the leader lacks or holds differently (``lost_runs``):
    ``committed`` records below ``committed_hw`` or the ``uncommitted`` rest: the records counted run
    ``lo..hi``, the whole truncated span (markers and aborted data included) ``span_lo..span_hi``.

    ``records`` counts the data records a consumer would have read (plain data and data of transactions
    committed in the follower's own log); the data of aborted and of still open transactions and the
    COMMIT/ABORT markers in the run are counted apart (``aborted_records``, ``open_records``, ``markers``,
    ``commit_markers``), and ``lost_markers`` lists the first :data:`LOST_MARKERS_LISTED` markers
    (``LostMarker``) in offset order."""

    kind: str
    cluster: str
    topic: str
    partition: int
    broker: int
    leader: int
    log_dir: str | None
    lo: int
    hi: int
    epochs: list[int]
    records: int
    bytes: int
    batches: int
    committed_hw: int
    leader_source: str
    aborted_records: int = 0
    open_records: int = 0
    markers: int = 0
    commit_markers: int = 0
    lost_markers: tuple[LostMarker, ...] = ()
    producer_ids: tuple[int, ...] = ()  # the first PRODUCERS_LISTED producer ids of its data batches
    first_timestamp: int | None = None  # the lowest and highest max timestamp of its data batches (ms)
    last_timestamp: int | None = None
    span_lo: int | None = None  # the whole truncated span (None: ``lo..hi``)
    span_hi: int | None = None

    @property
    def span(self) -> tuple[int, int]:
        """The whole truncated span (markers, aborted and open data included)."""
        return (
            self.lo if self.span_lo is None else self.span_lo,
            self.hi if self.span_hi is None else self.span_hi,
        )

    @property
    def abort_markers(self) -> int:
        return self.markers - self.commit_markers

    @property
    def not_counted(self) -> str:
        """What else the run truncates, in words ("" when nothing): "10 aborted records and 4 transaction
        markers also truncated, not counted"."""
        parts = []
        if self.aborted_records:
            parts.append(f"{self.aborted_records} aborted records")
        if self.open_records:
            parts.append(f"{self.open_records} records of open transactions")
        if self.markers:
            parts.append(f"{self.markers} transaction markers")
        if not parts:
            return ""
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{listed} also truncated, not counted"

    @classmethod
    def given(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        return {"lost_markers": tuple(LostMarker.from_row(m) for m in row.get("lost_markers") or ())}


LOST_MARKERS_LISTED = 100
"""A lost run lists at most this many of its COMMIT/ABORT markers (``lost_runs``); it counts all."""
PRODUCERS_LISTED = 20
"""A lost run lists at most this many producer ids of its data batches."""


@dataclass(frozen=True)
class LostMarker(FromRow):
    """A COMMIT/ABORT marker in a lost run: its offset, the producer id and epoch, and the first offset of
    the data of its transaction in the follower's log (the marker's own offset when it has none there)."""

    offset: int
    marker: str  # COMMIT or ABORT
    producer_id: int
    producer_epoch: int
    first_offset: int
    epoch: int  # partition leader epoch of the marker batch

    @classmethod
    def given(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        return {"marker": str(row["marker"])}


@dataclass(frozen=True)
class ClusterLeaders:
    """How the reference leader of each partition of a cluster was chosen (``leader_source`` values of its
    partitions other than ``__cluster_metadata``) and its offline partitions, sorted."""

    cluster: str
    leader_sources: frozenset[str]
    offline: tuple[OfflinePartition, ...] = ()


@dataclass(frozen=True)
class OfflinePartition:
    """A partition with no leader in the KRaft metadata (``leader_source`` ``kraft-last-known``): its last
    known leader (the reference replica) and leader epoch."""

    topic: str
    partition: int
    leader: int | None
    epoch: int | None


# ------------------------------------------------------------------------------------------ derivation


def kraft_view(metadata: Iterable[Mapping[str, Any]], topic: str, partition: int) -> PartitionState | None:
    """The partition as the most complete metadata log among the nodes that have it (highest end offset,
    then lowest node id) describes it, replayed by ``kraft.replay_partitions``."""
    metadata = list(metadata)
    if not metadata:
        return None
    chosen = node_rows(metadata, reference_node(metadata))
    return replay_partitions(chosen).get((topic, partition))


def kraft_configs(metadata: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The config changes (``kraft.config_events``) in the metadata replica :func:`kraft_view` uses."""
    metadata = list(metadata)
    return config_events(node_rows(metadata, reference_node(metadata))) if metadata else []


def choose_leader(replicas: list[Replica], kraft: PartitionState | None) -> tuple[Replica, str]:
    """The reference replica: the KRaft leader (or last known leader when it is -1) if present among the
    inputs, else the replica with the highest latest epoch, then the highest log end offset, then the lowest
    broker id."""
    by_broker = {r.broker: r for r in replicas}
    if kraft is not None:
        choice = kraft.leader if kraft.leader >= 0 else kraft.last_known_leader
        if choice in by_broker:
            return by_broker[choice], "kraft" if kraft.leader >= 0 else "kraft-last-known"

    def hint(r: Replica) -> tuple:
        return (r.latest_epoch if r.latest_epoch is not None else -1, r.leo, -r.broker)

    leader = max(replicas, key=hint)
    return leader, "inferred" if kraft is None else "inferred-kraft-leader-absent"


def truncation_points(part: PartitionReplicas) -> dict[int, FollowerTruncation]:
    """Kafka's truncation point of every follower whose and whose leader's log end offsets are known
    (``AbstractFetcherThread.truncateToEpochEndOffsets`` over the two loaded caches, KIP-101/KIP-279)."""
    leader = part.leader
    if not leader.leo_known:
        return {}
    l_cache = loaded_cache(part.caches.get(leader.broker, []), leader.log_start, leader.leo)
    out = {}
    for r in part.followers:
        if not r.leo_known:
            continue  # OffsetsForLeaderEpoch needs both log end offsets
        f_cache = loaded_cache(part.caches.get(r.broker, []), r.log_start, r.leo)
        hw = clamp_high_watermark(r.hw, r.log_start, r.leo)
        t = follower_truncation(l_cache, leader.leo, f_cache, r.leo, hw)
        out[r.broker] = FollowerTruncation(t.offset, t.fallback, t.steps, l_cache, f_cache)
    return out


def partition_replicas(
    replica_rows: Iterable[Mapping[str, Any]],
    caches: Mapping[int, Iterable[tuple[int, int, int]]] | None = None,
    ranges: Mapping[int, Iterable[Mapping[str, Any]]] | None = None,
    divergences: Iterable[Mapping[str, Any]] = (),
    metadata: Iterable[Mapping[str, Any]] = (),
) -> PartitionReplicas | None:
    """Derive the input of the per-partition rules from the rows Spark groups by partition: replica rows,
    leader-epoch cache rows ``broker -> (ordinal, epoch, start offset)``, epoch ranges of the batches, pair
    divergences and the KRaft metadata rows about the partition. None without replicas."""
    replicas = sorted((Replica.from_row(r) for r in replica_rows), key=lambda r: r.broker)
    if not replicas:
        return None
    metadata = list(metadata)
    first = replicas[0]
    is_meta = first.topic == METADATA_TOPIC
    kraft = None if is_meta else kraft_view(metadata, first.topic, first.partition)
    leader, source = choose_leader(replicas, kraft)
    part = PartitionReplicas(
        replicas=replicas,
        leader=leader,
        leader_source=source,
        kraft=kraft,
        configs=[] if is_meta else kraft_configs(metadata),
        caches={int(b): [(int(e), int(s)) for _o, e, s in sorted(c)] for b, c in (caches or {}).items()},
        ranges={int(b): [EpochRange.from_row(g) for g in rs] for b, rs in (ranges or {}).items()},
        divergences={(d.a, d.b): d for d in map(Divergence.from_row, divergences)},
    )
    if not is_meta:
        part.truncations = truncation_points(part)
    return part
