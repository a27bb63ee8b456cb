"""Index facts: a segment's ``.index``, ``.timeindex`` and ``.txnindex`` read in windows (never whole), with
the arrays the segment walk joins against its batches."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from auditor.layout.inventory import FileInfo
from parsers.errors import ParseError
from parsers.files import open_regular
from parsers.indexes import (
    ABORTED_TXN_SIZE,
    OFFSET_INDEX,
    TIME_INDEX,
    AbortedTxnEntry,
    IndexScan,
    TxnIndex,
    iter_txn_index,
    sanity_check_index_shape,
    sanity_check_txn_index,
    txn_entries,
)
from parsers.indexes_columnar import INT64_MAX, IndexArrays, index_arrays, offset_columns, time_columns

MAX_INDEX_ENTRIES = 1 << 21
"""Real entries of one ``.index`` / ``.timeindex`` loaded and joined with the batches (16 MiB of offset index,
more than a full index of Kafka's default ``segment.index.bytes``, 10 MiB). The whole file is always scanned
(in windows) for its shape; entries past this many are counted, not loaded (``truncated_read``)."""
MAX_TXN_ENTRIES = 1 << 18
"""Aborted transactions of one ``.txnindex`` kept as objects; all of them are checked."""


# ------------------------------------------------------------------------------------------ index facts


@dataclass
class OffsetIndexFacts:
    """A ``.index`` file and the join of its real entries with the batches of the segment.

    For entry ``i``: ``offsets[i]``/``positions[i]`` as stored; ``at_batch[i]`` whether a batch starts at that
    position; ``batch_base``/``batch_last`` the offsets of that batch (-1 when none).
    """

    path: str
    size: int
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    preallocated: bool
    offsets: np.ndarray
    positions: np.ndarray
    at_batch: np.ndarray
    batch_base: np.ndarray
    batch_last: np.ndarray
    sanity: str | None = None
    truncated_read: bool = False
    """More real entries than :data:`MAX_INDEX_ENTRIES`: only the first ones were loaded."""
    _order: np.ndarray | None = None
    _sorted_pos: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class TimeIndexFacts:
    """A ``.timeindex`` and the join of its entries with batch last offsets: ``found[i]`` whether a batch
    ends at ``offsets[i]``, ``batch_max_ts[i]`` that batch's max timestamp. ``next_slot`` is the non-zero slot
    right after the real prefix, (timestamp, offset), when there is one (evidence of disorder)."""

    path: str
    size: int
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    preallocated: bool
    timestamps: np.ndarray
    offsets: np.ndarray
    found: np.ndarray
    batch_max_ts: np.ndarray
    next_slot: tuple[int, int] | None = None
    sanity: str | None = None
    truncated_read: bool = False
    _order: np.ndarray | None = None
    _sorted_off: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class TxnIndexFacts:
    """A ``.txnindex``: its entries, Kafka's load-time sanity check message, or the read error."""

    path: str
    size: int
    entries: list[AbortedTxnEntry] = field(default_factory=list)
    trailing_bytes: int = 0
    error: str | None = None
    error_offset: int | None = None
    sanity: str | None = None
    truncated_read: bool = False
    """More entries than :data:`MAX_TXN_ENTRIES`: only the first ones are in ``entries``."""



def _scan_file(path: str, kind, base_offset: int) -> tuple[IndexArrays, str | None]:
    """Scan an index file in windows (never read or mapped whole); its arrays (at most
    :data:`MAX_INDEX_ENTRIES` entries) and Kafka's sanity check message."""
    fd = open_regular(path)
    try:
        arrays = index_arrays(IndexScan.of_fd(kind, fd), MAX_INDEX_ENTRIES)
    finally:
        os.close(fd)
    assert arrays.shape is not None
    return arrays, sanity_check_index_shape(arrays.shape, kind, base_offset, path)


def load_offset_index(info: FileInfo, base_offset: int) -> OffsetIndexFacts:
    idx, sanity = _scan_file(info.path, OFFSET_INDEX, base_offset)
    idx = offset_columns(idx, base_offset)
    offsets, positions = idx.columns["offset"], idx.columns["position"]
    order = np.argsort(positions, kind="stable")
    n = len(offsets)
    return OffsetIndexFacts(
        info.path,
        idx.size,
        idx.slots,
        idx.trailing_bytes,
        idx.padding_slots,
        idx.garbage_after_padding,
        idx.preallocated,
        offsets,
        positions,
        np.zeros(n, dtype=bool),
        np.full(n, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        sanity=sanity,
        truncated_read=idx.truncated,
        _order=order,
        _sorted_pos=positions[order],
    )


def load_time_index(info: FileInfo, base_offset: int) -> TimeIndexFacts:
    idx, sanity = _scan_file(info.path, TIME_INDEX, base_offset)
    idx = time_columns(idx, base_offset)
    timestamps, offsets = idx.columns["timestamp"], idx.columns["offset"]
    raw_next = idx.shape.next_slot if idx.shape is not None else None
    next_slot = None if raw_next is None else (raw_next[0], min(base_offset + raw_next[1], INT64_MAX))
    order = np.argsort(offsets, kind="stable")
    n = len(offsets)
    return TimeIndexFacts(
        info.path,
        idx.size,
        idx.slots,
        idx.trailing_bytes,
        idx.padding_slots,
        idx.garbage_after_padding,
        idx.preallocated,
        timestamps,
        offsets,
        np.zeros(n, dtype=bool),
        np.full(n, -1, dtype=np.int64),
        next_slot=next_slot,
        sanity=sanity,
        truncated_read=idx.truncated,
        _order=order,
        _sorted_off=offsets[order],
    )


def load_txn_index(info: FileInfo, base_offset: int) -> TxnIndexFacts:
    """Read a ``.txnindex`` in windows: every entry is checked (version, Kafka's sanity check), at most
    :data:`MAX_TXN_ENTRIES` are kept as objects."""
    facts = TxnIndexFacts(info.path, info.size)
    fd = open_regular(info.path)
    try:
        size = os.fstat(fd).st_size
        facts.size = size
        kept: list[AbortedTxnEntry] = []
        below_base: AbortedTxnEntry | None = None
        for table in iter_txn_index(lambda pos, n: os.pread(fd, n, pos), size, info.path):
            if len(kept) < MAX_TXN_ENTRIES:
                kept.extend(txn_entries(table[: MAX_TXN_ENTRIES - len(kept)]))
            else:
                facts.truncated_read = True
            if below_base is None:
                bad = np.flatnonzero(table["last_offset"] < base_offset)
                if len(bad):
                    below_base = txn_entries(table[int(bad[0]) : int(bad[0]) + 1])[0]
    except ParseError as exc:
        facts.error, facts.error_offset = exc.message, exc.offset
        return facts
    finally:
        os.close(fd)
    facts.entries = kept
    facts.trailing_bytes = size % ABORTED_TXN_SIZE
    if below_base is not None:
        facts.sanity = sanity_check_txn_index(TxnIndex(size, [below_base]), base_offset, info.path)
    return facts
