"""Index facts: a segment's ``.index``, ``.timeindex`` and ``.txnindex`` read in windows (never whole), with
the arrays the segment walk joins against its batches."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from auditor.layout.inventory import FileInfo
from parsers.dirfiles import segment_file_name
from parsers.errors import ParseError
from parsers.files import open_regular
from parsers.indexes import (
    ABORTED_TXN_SIZE,
    OFFSET_INDEX,
    TIME_INDEX,
    AbortedTxnEntry,
    IndexArrays,
    IndexScan,
    TxnIndex,
    index_arrays,
    iter_txn_index,
    sanity_check_index_shape,
    sanity_check_txn_index,
    txn_entries,
)

MAX_INDEX_ENTRIES = 1 << 21
"""Real entries of one ``.index`` / ``.timeindex`` loaded and joined with the batches (16 MiB of offset index,
more than a full index of Kafka's default ``segment.index.bytes``, 10 MiB). The whole file is always scanned
(in windows) for its shape; entries past this many are counted, not loaded (``truncated_read``)."""
MAX_TXN_ENTRIES = 1 << 18
"""Aborted transactions of one ``.txnindex`` kept as objects; all of them are checked."""


# ------------------------------------------------------------------------------------------ index facts


@dataclass(kw_only=True)
class IndexFileFacts:
    """What an offset or time index file is as Kafka's loader sees it (``parsers.indexes.IndexShape``: real
    prefix, zero padding, garbage after it), its sanity check message, and its real entries (``offsets``)."""

    path: str
    size: int
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    preallocated: bool
    offsets: np.ndarray
    sanity: str | None = None
    truncated_read: bool = False
    """More real entries than :data:`MAX_INDEX_ENTRIES`: only the first ones were loaded."""
    _order: np.ndarray | None = None
    """The entries in the order of the key the batches are joined on (a position, an offset)."""
    _sorted: np.ndarray | None = None
    """That key, in that order."""

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(kw_only=True)
class OffsetIndexFacts(IndexFileFacts):
    """A ``.index`` file and the join of its real entries with the batches of the segment.

    For entry ``i``: ``offsets[i]``/``positions[i]`` as stored; ``at_batch[i]`` whether a batch starts at that
    position; ``batch_base``/``batch_last`` the offsets of that batch (-1 when none).
    """

    entry_size: ClassVar[int] = OFFSET_INDEX.size
    """The bytes of one slot."""
    positions: np.ndarray
    at_batch: np.ndarray = field(init=False)
    batch_base: np.ndarray = field(init=False)
    batch_last: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.at_batch = np.zeros(len(self), dtype=bool)
        self.batch_base, self.batch_last = _unmatched(len(self)), _unmatched(len(self))


@dataclass(kw_only=True)
class TimeIndexFacts(IndexFileFacts):
    """A ``.timeindex`` and the join of its entries with batch last offsets: ``found[i]`` whether a batch
    ends at ``offsets[i]``, ``batch_max_ts[i]`` that batch's max timestamp. ``next_slot`` is the non-zero slot
    right after the real prefix, (timestamp, offset), when there is one (evidence of disorder)."""

    entry_size: ClassVar[int] = TIME_INDEX.size
    """The bytes of one slot."""
    timestamps: np.ndarray
    found: np.ndarray = field(init=False)
    batch_max_ts: np.ndarray = field(init=False)
    next_slot: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.found = np.zeros(len(self), dtype=bool)
        self.batch_max_ts = _unmatched(len(self))


def _unmatched(n: int) -> np.ndarray:
    """A join column before the join: -1 for each of ``n`` entries (no batch)."""
    return np.full(n, -1, dtype=np.int64)


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


def _scan_file(info: FileInfo, kind, base_offset: int, key: str) -> tuple[dict, IndexArrays]:
    """Scan an index file in windows (never read or mapped whole): the :class:`IndexFileFacts` fields (at
    most :data:`MAX_INDEX_ENTRIES` entries, Kafka's sanity check message, the entry order by the column
    ``key`` the batches are joined on) and the scan's arrays."""
    fd = open_regular(info.path)
    try:
        idx = index_arrays(IndexScan.of_fd(kind, fd), base_offset, MAX_INDEX_ENTRIES)
    finally:
        os.close(fd)
    order = np.argsort(idx.columns[key], kind="stable")
    facts = {name: getattr(idx, name) for name in _SHAPE}
    facts.update(
        path=info.path,
        offsets=idx.columns["offset"],
        sanity=sanity_check_index_shape(idx, kind, base_offset, info.path),
        truncated_read=idx.truncated,
        _order=order,
        _sorted=idx.columns[key][order],
    )
    return facts, idx


def load_offset_index(info: FileInfo, base_offset: int) -> OffsetIndexFacts:
    facts, idx = _scan_file(info, OFFSET_INDEX, base_offset, "position")
    return OffsetIndexFacts(**facts, positions=idx.columns["position"])


def load_time_index(info: FileInfo, base_offset: int) -> TimeIndexFacts:
    facts, idx = _scan_file(info, TIME_INDEX, base_offset, "offset")
    return TimeIndexFacts(**facts, timestamps=idx.columns["timestamp"], next_slot=idx.next_entry)


_SHAPE = ("size", "slots", "trailing_bytes", "padding_slots", "garbage_after_padding", "preallocated")
"""The :class:`IndexFileFacts` fields that are the scan's own (``parsers.indexes.IndexShape``)."""


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
    finally:
        os.close(fd)
    if facts.error is None:
        facts.entries = kept
        facts.trailing_bytes = size % ABORTED_TXN_SIZE
    if below_base is not None:  # met before an unknown version, if any: Kafka's check fails there first
        facts.sanity = sanity_check_txn_index(TxnIndex(size, [below_base]), base_offset, info.path)
    return facts


def txn_index_corrupt(part_dir: str | os.PathLike, bases: Iterable[int]) -> frozenset[int]:
    """Base offsets among ``bases`` (segments with a ``.txnindex`` in the directory's listing) whose
    ``.txnindex`` fails ``TransactionIndex.sanityCheck`` (:func:`load_txn_index`'s ``sanity``, what ``scan``
    reads too): ``LogLoader.loadSegmentFiles`` recovers those segments at load
    (``auditor.kafka.recovery.LogRecovery.txn_index_corrupt``). An index that cannot be read is ``scan``'s
    to report; it is none of these."""
    out = []
    for base in bases:
        name = segment_file_name(base, ".txnindex")
        path = os.path.join(part_dir, name)
        try:
            size = os.stat(path).st_size
            if size < ABORTED_TXN_SIZE:
                continue
            facts = load_txn_index(FileInfo(path, name, "txn-index", size), base)
        except (OSError, ParseError):
            continue
        if facts.sanity is not None:
            out.append(base)
    return frozenset(out)
