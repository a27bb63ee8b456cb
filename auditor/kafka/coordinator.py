"""The transaction coordinator's state, as it rebuilds it from its ``__transaction_state`` partition.

* Every transactional id lives in one partition of ``__transaction_state``:
  ``abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`` (Java's ``String.hashCode``;
  ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0). The group coordinator places group ids in
  ``__consumer_offsets`` the same way (:func:`java_string_hash` is shared).
* On becoming leader of that partition the coordinator replays it in offset order: the latest record of a
  transactional id is its state, a tombstone (null value) removes the id. Records Kafka would not load
  (cut by log recovery) are not part of that state.
* A transaction is in flight while its state is ``Ongoing``, ``PrepareCommit`` or ``PrepareAbort``: only
  then will the coordinator (re)send COMMIT/ABORT markers to the partitions it lists. In ``Empty``,
  ``CompleteCommit``, ``CompleteAbort``, ``Dead`` or ``PrepareEpochFence`` it writes no marker for the
  producer id/epoch it holds.
* A producer id belongs to a transactional id when it is the value's ``ProducerId``, or its
  ``PreviousProducerId`` / ``NextProducerId`` (KIP-890: the coordinator rotates producer ids when the
  epoch is exhausted or on transaction version 2).

References: ``TransactionStateManager.loadTransactionMetadata``, ``TransactionLog.readTxnRecordValue``,
``TransactionMetadata`` (``TransactionState``), ``TransactionStateManager.partitionFor``, KIP-98, KIP-890;
the record format is :mod:`parsers.transaction_state`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from parsers.transaction_state import STATE_NAMES

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = (
    STATE_NAMES[i] for i in range(8)
)
"""Kafka's ``TransactionState`` names (as ``rows.TXN_STATE.state`` holds them)."""

IN_FLIGHT = frozenset({ONGOING, PREPARE_COMMIT, PREPARE_ABORT})
"""States in which the coordinator still completes the transaction with markers."""

DEFAULT_PARTITIONS = 50
"""``transaction.state.log.num.partitions`` (and ``offsets.topic.num.partitions``) default."""


@dataclass(frozen=True)
class TxnMetadata:
    """The coordinator's view of one transactional id (its latest live record)."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int  # -1: none
    next_producer_id: int  # -1: none
    producer_epoch: int
    timeout_ms: int
    state: str  # a TransactionState name (Empty, Ongoing, ...); "unknown(N)" for an unknown status byte
    partitions: tuple[tuple[str, int], ...]  # (topic, partition) the transaction has added
    last_update_timestamp: int
    start_timestamp: int
    offset: int  # offset of the record in the __transaction_state log
    broker: int | None  # replica the record was read from

    def producer_ids(self) -> frozenset[int]:
        """Every producer id this transactional id answers for (current, previous, next)."""
        ids = (self.producer_id, self.previous_producer_id, self.next_producer_id)
        return frozenset(p for p in ids if p >= 0)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, in int32."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def coordinator_partition(key: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """``Utils.abs(key.hashCode()) % partitions`` (``Utils.abs(Integer.MIN_VALUE)`` is 0)."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    h = java_string_hash(key)
    return (0 if h == -0x80000000 else abs(h)) % partitions


def transaction_state_partition(transactional_id: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The ``__transaction_state`` partition that holds ``transactional_id``."""
    return coordinator_partition(transactional_id, partitions)


def is_ongoing(meta: TxnMetadata | None) -> bool:
    """The coordinator still drives this transaction to a marker: ``Ongoing``, ``PrepareCommit`` or
    ``PrepareAbort``."""
    return meta is not None and meta.state in IN_FLIGHT


def _get(row: Any, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)
    return getattr(row, name, None)


def _int(value: Any, default: int = -1) -> int:
    return default if value is None else int(value)


def _partitions(value: Any) -> tuple[tuple[str, int], ...]:
    out = []
    for p in value or ():
        if isinstance(p, Mapping):
            out.append((str(p["topic"]), int(p["partition"])))
        elif isinstance(p, tuple | list):
            out.append((str(p[0]), int(p[1])))
        else:  # a Spark Row
            out.append((str(p["topic"]), int(p["partition"])))
    return tuple(out)


def metadata_of(row: Any) -> TxnMetadata:
    """A :class:`TxnMetadata` from one non-tombstone ``rows.TXN_STATE`` row (a dict, a Spark Row or an object
    with those attributes)."""
    return TxnMetadata(
        transactional_id=str(_get(row, "transactional_id")),
        producer_id=_int(_get(row, "txn_producer_id")),
        previous_producer_id=_int(_get(row, "previous_producer_id")),
        next_producer_id=_int(_get(row, "next_producer_id")),
        producer_epoch=_int(_get(row, "txn_producer_epoch")),
        timeout_ms=_int(_get(row, "timeout_ms"), 0),
        state=str(_get(row, "state")),
        partitions=_partitions(_get(row, "partitions")),
        last_update_timestamp=_int(_get(row, "last_update_timestamp")),
        start_timestamp=_int(_get(row, "start_timestamp")),
        offset=_int(_get(row, "offset")),
        broker=None if _get(row, "broker") is None else int(_get(row, "broker")),
    )


def coordinator_states(rows: Iterable[Any]) -> dict[str, TxnMetadata]:
    """What the coordinator loads from one ``__transaction_state`` replica: ``rows.TXN_STATE`` rows (dicts,
    Spark Rows, attribute objects or a pyarrow Table) in any order; the latest live record (by offset) of each
    transactional id wins and a tombstone removes the id. Rows with ``live`` false (cut by recovery) or
    without a transactional id (unknown key version) are not loaded.

    Pass the rows of ONE replica (one topic-partition on one broker); rows of several replicas would mix
    their logs."""
    if hasattr(rows, "to_pylist"):  # a pyarrow Table of rows.TXN_STATE
        rows = rows.to_pylist()
    selected = []
    for row in rows:
        if _get(row, "live") is False:
            continue
        tid = _get(row, "transactional_id")
        if tid is None or _get(row, "offset") is None:
            continue
        selected.append((int(_get(row, "offset")), tid, row))
    selected.sort(key=lambda t: t[0])
    states: dict[str, TxnMetadata] = {}
    for _, tid, row in selected:
        if _get(row, "tombstone"):
            states.pop(tid, None)
        elif _get(row, "state") is None:  # an unreadable value: the coordinator would fail to load it
            continue
        else:
            states[tid] = metadata_of(row)
    return states


def by_producer(states: Mapping[str, TxnMetadata], producer_id: int) -> TxnMetadata | None:
    """The transactional id's state that answers for ``producer_id`` (its ``ProducerId``, else its
    ``PreviousProducerId`` or ``NextProducerId``); ``None`` when the coordinator tracks no such producer.

    A current ``ProducerId`` match wins over a previous/next one; among equals the latest record wins."""
    pid = int(producer_id)
    if pid < 0:
        return None
    best: TxnMetadata | None = None
    best_rank = (2, 0)
    for meta in states.values():
        if meta.producer_id == pid:
            rank = (0, -meta.offset)
        elif pid in (meta.previous_producer_id, meta.next_producer_id):
            rank = (1, -meta.offset)
        else:
            continue
        if best is None or rank < best_rank:
            best, best_rank = meta, rank
    return best
