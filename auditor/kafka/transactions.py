"""Transactions in a partition's log, as Kafka's ``ProducerStateManager`` and ``TransactionIndex`` read them.

* A transactional data batch of producer P belongs to P's open transaction; that transaction ends at the next
  control batch (COMMIT or ABORT marker) of P in the same log. Records of a transaction ended by COMMIT are
  committed data, by ABORT aborted data; a transaction with no marker after it in this log is *open*.
* A non-transactional data batch is plain data (visible to every consumer once below the high watermark).
* The last stable offset (LSO) is the first offset of the oldest open transaction, capped by the high
  watermark: read_committed consumers stop there, read_uncommitted ones read up to the high watermark.
* Every ABORT marker gives one ``.txnindex`` entry in the segment that holds the marker: producer id, first
  offset of the transaction's data in this partition, last offset = the marker's offset.

References: KIP-98, ``ProducerStateManager``, ``TransactionIndex``, spec §4.1, §9.2, §17.7.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

ABORT = 0
COMMIT = 1
"""Control record types of the end-transaction markers (``ControlRecordType``)."""

MARKER_NAMES = {ABORT: "ABORT", COMMIT: "COMMIT"}

# What a batch is, transaction-wise (``classify``)
PLAIN = "plain"  # non-transactional data
COMMITTED = "committed"  # transactional data whose transaction ends with COMMIT in this log
ABORTED = "aborted"  # transactional data whose transaction ends with ABORT in this log
OPEN = "open"  # transactional data with no marker of its producer after it in this log
MARKER = "marker"  # a COMMIT/ABORT control batch
CONTROL = "control"  # any other control batch (KRaft control records, unknown types)

VISIBLE_TO_READ_COMMITTED = frozenset({PLAIN, COMMITTED})
"""Data states a read_committed consumer receives (below the last stable offset)."""


class BatchFacts(Protocol):
    """What the model needs of a batch (a ``rows.BATCH`` row, a walker header, a simulator batch)."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control: bool
    control_type: int | None  # ABORT / COMMIT for end-transaction markers; None or another type otherwise


@dataclass(frozen=True)
class Batch:
    """A plain :class:`BatchFacts` value."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    producer_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    control_type: int | None = None
    records: int = 1


@dataclass(frozen=True)
class Transaction:
    """One transaction of one producer in one partition's log."""

    producer_id: int
    producer_epoch: int  # of its first data batch
    first_offset: int  # first offset of its data here
    last_offset: int  # last offset of its data here
    batches: int
    marker: int | None = None  # ABORT / COMMIT, None while open
    marker_offset: int | None = None
    marker_epoch: int | None = None

    @property
    def is_open(self) -> bool:
        return self.marker is None

    @property
    def outcome(self) -> str:
        """``committed``, ``aborted`` or ``open``."""
        if self.marker is None:
            return OPEN
        return COMMITTED if self.marker == COMMIT else ABORTED

    @property
    def marker_name(self) -> str | None:
        return MARKER_NAMES.get(self.marker) if self.marker is not None else None


def is_end_marker(batch: BatchFacts) -> bool:
    """A COMMIT or ABORT control batch."""
    return bool(batch.is_control) and batch.control_type in (ABORT, COMMIT)


def transactions(batches: Iterable[BatchFacts]) -> list[Transaction]:
    """Every transaction of a log, in the order they started; ``batches`` in offset order.

    A marker with no open transaction of its producer (no data of it here: compacted away, before the log
    start, or none written to this partition) yields a transaction without batches whose first and last
    offsets are the marker's, as ``ProducerAppendInfo.appendEndTxnMarker`` records it."""
    open_by_pid: dict[int, list] = {}  # pid -> [epoch, first, last, batches]
    done: list[tuple[int, Transaction]] = []  # (start ordinal, transaction)
    order: dict[int, int] = {}
    for i, b in enumerate(batches):
        pid = int(b.producer_id)
        if b.is_control:
            if not is_end_marker(b):
                continue
            current = open_by_pid.pop(pid, None)
            if current is None:
                order[pid] = i
                current = [int(b.producer_epoch), int(b.base_offset), int(b.base_offset), 0]
            epoch, first, last, n = current
            done.append(
                (
                    order.pop(pid),
                    Transaction(
                        pid,
                        epoch,
                        first,
                        last,
                        n,
                        int(b.control_type),
                        int(b.base_offset),
                        int(b.producer_epoch),
                    ),
                )
            )
        elif b.is_transactional:
            current = open_by_pid.get(pid)
            if current is None:
                open_by_pid[pid] = [int(b.producer_epoch), int(b.base_offset), int(b.last_offset), 1]
                order[pid] = i
            else:
                current[2] = int(b.last_offset)
                current[3] += 1
    for pid, (epoch, first, last, n) in open_by_pid.items():
        done.append((order[pid], Transaction(pid, epoch, first, last, n)))
    done.sort(key=lambda t: t[0])
    return [t for _, t in done]


def classify(batches: Sequence[BatchFacts]) -> list[str]:
    """The state of every batch of a log (``batches`` in offset order): :data:`PLAIN`, :data:`COMMITTED`,
    :data:`ABORTED`, :data:`OPEN`, :data:`MARKER` or :data:`CONTROL`, by the next end marker of the batch's
    producer after it."""
    states: list[str] = [PLAIN] * len(batches)
    next_marker: dict[int, int | None] = {}
    for i in range(len(batches) - 1, -1, -1):
        b = batches[i]
        pid = int(b.producer_id)
        if b.is_control:
            if is_end_marker(b):
                states[i] = MARKER
                next_marker[pid] = int(b.control_type)
            else:
                states[i] = CONTROL
        elif b.is_transactional:
            marker = next_marker.get(pid)
            states[i] = OPEN if marker is None else (COMMITTED if marker == COMMIT else ABORTED)
    return states


def open_transactions(batches: Iterable[BatchFacts], below: int | None = None) -> list[Transaction]:
    """The transactions still open at the end of the log (those starting below ``below`` when given)."""
    return [t for t in transactions(batches) if t.is_open and (below is None or t.first_offset < below)]


def last_stable_offset(batches: Iterable[BatchFacts], high_watermark: int) -> int:
    """The LSO Kafka serves read_committed consumers: the first offset of the oldest transaction still open
    below the high watermark, else the high watermark."""
    firsts = [t.first_offset for t in open_transactions(batches, below=high_watermark)]
    return min(firsts, default=high_watermark)


@dataclass(frozen=True)
class AbortedTxn:
    """What a ``.txnindex`` entry records about an aborted transaction."""

    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def aborted_transactions(batches: Iterable[BatchFacts]) -> list[AbortedTxn]:
    """The ``.txnindex`` entries the log implies, by marker offset: one per ABORT marker."""
    out = [
        AbortedTxn(t.producer_id, t.first_offset, int(t.marker_offset))
        for t in transactions(batches)
        if t.marker == ABORT
    ]
    return sorted(out, key=lambda a: a.last_offset)
