"""Which replica to elect leader of a partition, and what electing each one would cost (KIP-966 unclean
recovery, KAFKA-10751 "estimate the amount of data loss during an unclean leader election").

* The **candidates** are the partition's replicas whose log was read (a replica's log end offset is known).
* The **recommendation** is KIP-966's unclean-recovery choice: the highest *last leader epoch* (the latest
  epoch of the replica's leader-epoch cache, else the highest partitionLeaderEpoch of its batches), then the
  highest log end offset, then the lowest broker id (:func:`order_key`).
* The **cost** of electing candidate C: every other replica R truncates to the point where its log stops
  matching C's (the first offset where they differ inside their common range; when R's log merely extends
  C's, C's log end offset) and loses its data records from there on (:func:`truncation_start`; control
  batches such as COMMIT/ABORT markers are counted apart). Those below the highest high watermark
  checkpointed by a replica holding the same batch were committed: the committed notion of KA710,
  transaction-aware (only plain and committed data, :data:`VISIBLE_TO_READ_COMMITTED` of
  :mod:`auditor.kafka.transactions`, count as committed records; aborted data, open transactions and
  markers do not) (:func:`replica_cost`).
* Kafka does not truncate to the real divergence but to the offset of its epoch-based truncation
  (OffsetsForLeaderEpoch, :func:`auditor.kafka.epochs.follower_truncation`). Where that offset lies above the
  real divergence, R keeps records that differ from C's at the same offsets: they are not truncated but
  diverge silently (:func:`epoch_check`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from auditor.kafka.epochs import UNDEFINED, Cache, follower_truncation, latest_epoch
from auditor.kafka.transactions import CONTROL, MARKER, PLAIN, VISIBLE_TO_READ_COMMITTED

CONTROL_STATES = frozenset({MARKER, CONTROL})
"""Batch states (``transactions.classify``) holding control records, not data: counted as markers."""


@dataclass(frozen=True)
class Candidate:
    """A replica as an election candidate (and as the follower of another candidate)."""

    broker: int
    leo: int
    log_start: int = 0
    hw: int | None = None  # replication-offset-checkpoint (None: no entry)
    cache: Cache = ()  # leader-epoch cache as loaded: (epoch, start offset)
    max_batch_epoch: int | None = None  # highest partitionLeaderEpoch of its batches

    @property
    def last_epoch(self) -> int:
        """The last leader epoch: the latest epoch of its cache, else the highest of its batches (-1)."""
        if self.cache:
            return latest_epoch(self.cache)
        return UNDEFINED if self.max_batch_epoch is None else int(self.max_batch_epoch)


def order_key(c: Candidate) -> tuple[int, int, int]:
    """The recommendation order: highest last leader epoch, then highest log end offset, then lowest broker
    id (smallest key first)."""
    return (-c.last_epoch, -c.leo, c.broker)


def ranked(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates, recommended first."""
    return sorted(candidates, key=order_key)


def recommendation(candidates: Iterable[Candidate]) -> Candidate | None:
    """KIP-966's choice among ``candidates`` (None when there is none)."""
    order = ranked(candidates)
    return order[0] if order else None


def why(candidates: Sequence[Candidate]) -> str:
    """Why the first of :func:`ranked` wins: the ordering key that separated it from each runner-up."""
    order = ranked(candidates)
    if not order:
        return "no readable replica"
    best = order[0]
    if len(order) == 1:
        return f"broker {best.broker} is the only readable replica"
    parts = []
    for other in order[1:]:
        if other.last_epoch != best.last_epoch:
            parts.append(
                f"higher last leader epoch than broker {other.broker} "
                f"({best.last_epoch} > {other.last_epoch})"
            )
        elif other.leo != best.leo:
            parts.append(
                f"same last leader epoch {best.last_epoch} as broker {other.broker}, higher log end offset "
                f"({best.leo} > {other.leo})"
            )
        else:
            parts.append(
                f"same last leader epoch {best.last_epoch} and log end offset {best.leo} as broker "
                f"{other.broker}, lower broker id"
            )
    return f"broker {best.broker}: " + "; ".join(parts)


def truncation_start(candidate: Candidate, replica: Candidate, first_difference: int | None) -> int | None:
    """Where ``replica``'s log stops matching ``candidate``'s: ``first_difference`` (the first offset where
    the two differ inside their common range, None when they agree there), else the candidate's log end
    offset when the replica's log extends past it (not below the replica's log start); None when the
    replica's log is a prefix of the candidate's (it loses nothing)."""
    if first_difference is not None:
        return int(first_difference)
    if replica.leo > candidate.leo:
        return max(candidate.leo, replica.log_start)
    return None


@dataclass(frozen=True)
class EpochCheck:
    """Kafka's epoch-based truncation of ``replica`` under leader ``candidate`` vs the real divergence."""

    truncation_offset: int  # where OffsetsForLeaderEpoch truncates the replica
    fallback: str | None  # "high-watermark" when the candidate's cache cannot answer
    silent_from: int | None = (
        None  # records of the replica that differ but are kept: [silent_from, silent_to]
    )
    silent_to: int | None = None

    @property
    def diverges_silently(self) -> bool:
        return self.silent_from is not None


def epoch_check(candidate: Candidate, replica: Candidate, start: int | None) -> EpochCheck:
    """Kafka's truncation point for ``replica`` following ``candidate`` and, when it lies above the real
    divergence ``start`` (:func:`truncation_start`), the range the replica keeps although it differs."""
    t = follower_truncation(
        list(candidate.cache),
        candidate.leo,
        list(replica.cache),
        replica.leo,
        replica.hw if replica.hw is not None else replica.log_start,
    )
    offset = int(t.offset)
    if start is not None and offset > start:
        return EpochCheck(offset, t.fallback, start, min(offset, replica.leo) - 1)
    return EpochCheck(offset, t.fallback)


# ------------------------------------------------------------------------------------------------ the cost


@dataclass(frozen=True)
class LogBatch:
    """What the cost needs of a batch of a replica's log: offsets, identity (``sig``: equal on two replicas
    when they hold the same batch), records, bytes and its transaction state (``transactions.classify``)."""

    base_offset: int
    last_offset: int
    sig: int
    records: int
    size: int = 0
    txn_state: str = PLAIN


@dataclass
class Cost:
    """What electing a candidate costs one other replica."""

    records: int = 0  # data records the replica holds from ``start`` on that the candidate lacks
    committed: int = 0  # of those, committed data (below the committed high watermark; plain/committed)
    bytes: int = 0
    batches: int = 0
    first: int | None = None  # first and last offset lost
    last: int | None = None
    markers: int = 0  # control batches (COMMIT/ABORT markers) among them

    def add(self, first: int, last: int, records: int, committed: int, size: int, control: bool) -> None:
        if control:
            self.markers += 1
        else:
            self.records += records
        self.committed += committed
        self.bytes += size
        self.batches += 1
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)


def committed_records(first: int, last: int, records: int, committed_hw: int, txn_state: str | None) -> int:
    """Records of a lost batch that were committed: those from ``first`` below ``committed_hw`` (the highest
    high watermark checkpointed by a replica holding that batch), data visible to read_committed only."""
    if txn_state not in VISIBLE_TO_READ_COMMITTED or first >= committed_hw:
        return 0
    return min(min(last, committed_hw - 1) - first + 1, records)


def replica_cost(
    candidate: int,
    replica: int,
    start: int | None,
    logs: Mapping[int, Sequence[LogBatch]],
    hws: Mapping[int, int | None],
) -> Cost:
    """The cost for ``replica`` of electing ``candidate``: its batches from ``start`` on that the candidate
    does not hold (no batch with the same ``sig`` at that base offset), their records, the committed ones
    among them (:func:`committed_records`) and bytes. ``logs`` holds every replica's batches, ``hws`` their
    checkpointed high watermarks."""
    cost = Cost()
    if start is None:
        return cost
    held = _holders(logs)
    leader_has = {(b.base_offset, b.sig) for b in logs.get(candidate, ())}
    for b in logs.get(replica, ()):
        if b.last_offset < start or (b.base_offset, b.sig) in leader_has:
            continue
        first = max(b.base_offset, start)
        n = min(b.last_offset - first + 1, b.records)
        chw = max((hws.get(h) or 0 for h in held[(b.base_offset, b.sig)]), default=0)
        committed = committed_records(first, b.last_offset, b.records, chw, b.txn_state)
        cost.add(first, b.last_offset, n, committed, b.size, b.txn_state in CONTROL_STATES)
    return cost


def _holders(logs: Mapping[int, Sequence[LogBatch]]) -> dict[tuple[int, int], list[int]]:
    out: dict[tuple[int, int], list[int]] = {}
    for broker, batches in logs.items():
        for b in batches:
            out.setdefault((b.base_offset, b.sig), []).append(broker)
    return out


# ------------------------------------------------------------------------------------------------ a partition


@dataclass
class Choice:
    """One candidate of a partition: its rank and what electing it costs every other replica."""

    candidate: Candidate
    rank: int  # 1: recommended
    costs: dict[int, Cost] = field(default_factory=dict)  # other replica -> cost
    starts: dict[int, int | None] = field(default_factory=dict)  # other replica -> truncation_start
    checks: dict[int, EpochCheck] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(c.records for c in self.costs.values())

    @property
    def committed(self) -> int:
        return sum(c.committed for c in self.costs.values())


def choices(
    candidates: Sequence[Candidate],
    first_difference: Callable[[int, int], int | None],
    cost_of: Callable[[int, int, int | None], Cost],
) -> list[Choice]:
    """Every candidate in recommendation order with its cost for every other replica: ``first_difference(a,
    b)`` gives the first offset where two replicas differ in their common range (None: they agree there),
    ``cost_of(candidate, replica, start)`` the :class:`Cost` (:func:`replica_cost`, or counted by Spark)."""
    out = []
    for rank, c in enumerate(ranked(candidates), 1):
        choice = Choice(c, rank)
        for r in candidates:
            if r.broker == c.broker:
                continue
            start = truncation_start(c, r, first_difference(c.broker, r.broker))
            choice.starts[r.broker] = start
            choice.costs[r.broker] = cost_of(c.broker, r.broker, start) if start is not None else Cost()
            choice.checks[r.broker] = epoch_check(c, r, start)
        out.append(choice)
    return out
