"""Observations the rules judge: one streaming pass per segment, and the per-partition / per-log-dir context.

:func:`collect_segment` walks a ``.log`` with the columnar fast path (``SegmentWalker.header_blocks()``) and
keeps, in bounded memory, what the checks need: CRC failures, where Kafka's recovery would stop, offset order,
gaps, leader-epoch runs, the maximum timestamp, transaction markers, and the join of the segment's
``.index``/``.timeindex`` entries with the batches they point at (numpy, per block of headers). Lists of
evidence are capped at :data:`EVIDENCE_CAP` items with exact counts beside them. Memory is O(window + index
entries), never O(batches): a 5 GB partition is one segment at a time.

No policy here: whether something is a finding, and how severe, is decided by ``auditor.rules``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.inventory import FileInfo, LogDirInventory, PartitionDir, SegmentFiles
from auditor.rules.registry import Location
from parsers.checkpoints import LeaderEpochCheckpoint, NormalizedEpochs, OffsetCheckpoint
from parsers.control import decode_control_record
from parsers.dirfiles import CleanShutdown, MetaProperties, PartitionMetadata, QuorumState
from parsers.errors import ParseError
from parsers.files import open_regular, read_regular
from parsers.indexes import (
    ABORTED_TXN_SIZE,
    INDEX_WINDOW,
    OFFSET_INDEX,
    TIME_INDEX,
    AbortedTxnEntry,
    IndexScan,
    IndexShape,
    TxnIndex,
    iter_txn_index,
    sanity_check_index_shape,
    sanity_check_txn_index,
    txn_entries,
)
from parsers.record_batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    RecordBatch,
    RecordBudgetExceeded,
)
from parsers.segment import SegmentWalker, WalkStop

EVIDENCE_CAP = 20
"""Evidence items kept per kind and segment (counts stay exact)."""
MAX_EPOCH_RUNS = 100_000
MAX_INDEX_ENTRIES = 1 << 21
"""Real entries of one ``.index`` / ``.timeindex`` loaded and joined with the batches (16 MiB of offset index,
more than a full index of Kafka's default ``segment.index.bytes``, 10 MiB). The whole file is always scanned
(in windows) for its shape; entries past this many are counted, not loaded (``truncated_read``)."""
MAX_SUMMARY_EPOCHS = 1000
"""Leader-epoch cache entries listed in a partition's report summary (one per leader change)."""
MAX_TXN_ENTRIES = 1 << 18
"""Aborted transactions of one ``.txnindex`` kept as objects; all of them are checked."""
MAX_SMALL_FILE = 64 << 20
INT32_MAX = 2**31 - 1
COMPACTED_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
_TXN_MARKER = ATTR_CONTROL | ATTR_TRANSACTIONAL


def read_bytes(path: str, limit: int = MAX_SMALL_FILE) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (``parsers.files``: never a FIFO or device).
    Only for small files; indexes are scanned in windows (:class:`parsers.indexes.IndexScan`)."""
    return read_regular(path, limit)


def batch_info(headers_row: Any, position: int, computed_crc: int | None = None) -> dict[str, Any]:
    """Evidence dict for one batch header (a ``HEADER_DTYPE`` row)."""
    row = headers_row
    base = int(row["base_offset"])
    return {
        "position": int(position),
        "baseOffset": base,
        "lastOffset": base + int(row["last_offset_delta"]),
        "partitionLeaderEpoch": int(row["partition_leader_epoch"]),
        "magic": int(row["magic"]),
        "size": int(row["batch_length"]) + 12,
        "crc": int(row["crc"]),
        **({"computedCrc": int(computed_crc)} if computed_crc is not None else {}),
        "recordsCount": int(row["records_count"]),
        "maxTimestamp": int(row["max_timestamp"]),
    }


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


@dataclass
class IndexArrays:
    """An index decoded column-wise with the same rules as ``parsers.indexes.read_offset_index`` /
    ``read_time_index`` (real prefix, zero padding, garbage after it); ``columns`` holds the prefix (at most
    the ``max_entries`` first entries: ``shape.entries`` counts all of them)."""

    size: int
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    columns: dict[str, np.ndarray]
    shape: IndexShape | None = None

    @property
    def preallocated(self) -> bool:
        return self.padding_slots > 0

    @property
    def truncated(self) -> bool:
        """More real entries than were loaded (``max_entries``)."""
        return self.shape is not None and self.shape.entries > len(next(iter(self.columns.values())))


def _index_arrays(scan: IndexScan, max_entries: int | None = None) -> IndexArrays:
    """Run a windowed :class:`IndexScan`: memory is one window plus the loaded entries."""
    shape, table = scan.run(max_entries)
    columns = {name: table[name].astype(np.int64) for name in table.dtype.names}
    padding, garbage = shape.padding_slots, shape.garbage_after_padding
    return IndexArrays(shape.size, shape.slots, shape.trailing_bytes, padding, garbage, columns, shape)


_INT64_MAX = 2**63 - 1


def _absolute(relative: np.ndarray, base_offset: int) -> np.ndarray:
    """``base_offset + relative`` as int64 without wrapping: a segment name near (or past) the int64 limit
    would otherwise turn index offsets negative; an entry past the limit saturates at it (no batch is there,
    so the rules report the entry as pointing outside the segment)."""
    if 0 <= base_offset <= _INT64_MAX - INT32_MAX:
        return relative + base_offset
    return np.array([min(base_offset + r, _INT64_MAX) for r in relative.tolist()], dtype=np.int64)


def _offset_columns(arrays: IndexArrays, base_offset: int) -> IndexArrays:
    arrays.columns = {
        "offset": _absolute(arrays.columns["relative_offset"], base_offset),
        "position": arrays.columns["position"],
    }
    return arrays


def _time_columns(arrays: IndexArrays, base_offset: int) -> IndexArrays:
    arrays.columns = {
        "timestamp": arrays.columns["timestamp"],
        "offset": _absolute(arrays.columns["relative_offset"], base_offset),
    }
    return arrays


def offset_index_arrays(
    data: bytes | memoryview, base_offset: int, *, window: int = INDEX_WINDOW
) -> IndexArrays:
    """``read_offset_index`` column-wise: ``columns["offset"]`` (absolute) and ``columns["position"]``.
    ``tests/rules/test_facts.py`` proves both agree (also with windows a few slots wide)."""
    return _offset_columns(_index_arrays(IndexScan.of_bytes(OFFSET_INDEX, data, window=window)), base_offset)


def time_index_arrays(
    data: bytes | memoryview, base_offset: int, *, window: int = INDEX_WINDOW
) -> IndexArrays:
    """``read_time_index`` column-wise: ``columns["timestamp"]`` and ``columns["offset"]`` (absolute)."""
    return _time_columns(_index_arrays(IndexScan.of_bytes(TIME_INDEX, data, window=window)), base_offset)


def _scan_file(path: str, kind, base_offset: int) -> tuple[IndexArrays, str | None]:
    """Scan an index file in windows (never read or mapped whole); its arrays (at most
    :data:`MAX_INDEX_ENTRIES` entries) and Kafka's sanity check message."""
    fd = open_regular(path)
    try:
        arrays = _index_arrays(IndexScan.of_fd(kind, fd), MAX_INDEX_ENTRIES)
    finally:
        os.close(fd)
    assert arrays.shape is not None
    return arrays, sanity_check_index_shape(arrays.shape, kind, base_offset, path)


def load_offset_index(info: FileInfo, base_offset: int) -> OffsetIndexFacts:
    idx, sanity = _scan_file(info.path, OFFSET_INDEX, base_offset)
    idx = _offset_columns(idx, base_offset)
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
    idx = _time_columns(idx, base_offset)
    timestamps, offsets = idx.columns["timestamp"], idx.columns["offset"]
    raw_next = idx.shape.next_slot if idx.shape is not None else None
    next_slot = None if raw_next is None else (raw_next[0], min(base_offset + raw_next[1], _INT64_MAX))
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


# ------------------------------------------------------------------------------------------ segment facts


@dataclass
class SegmentFacts:
    """What one walk of a segment (``kind`` ``log``) or KRaft snapshot (``kraft-snapshot``) established.

    Offsets: ``first_offset``/``last_offset`` span the CRC-valid batches; ``valid_end`` is the byte position
    where Kafka's recovery would stop (first invalid entry, else where the walk stopped) and
    ``recovered_next_offset`` the next offset after the last batch before it (None when no batch is
    before it); ``next_offset_raw`` is what a broker that skips recovery reads as the next offset (last
    complete batch, valid or not).
    """

    path: str
    kind: str
    base_offset: int
    size: int
    next_base: int | None = None
    is_last: bool = False
    files: SegmentFiles | None = None
    stop: WalkStop | None = None
    read_error: str | None = None
    batches: int = 0
    valid_batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_position: int | None = None
    valid_end: int = 0
    recovered_next_offset: int | None = None
    next_offset_raw: int | None = None
    first_invalid: dict[str, Any] | None = None
    crc_invalid: list[dict[str, Any]] = field(default_factory=list)
    crc_invalid_count: int = 0
    bad_magic: list[dict[str, Any]] = field(default_factory=list)
    bad_magic_count: int = 0
    order_violations: list[dict[str, Any]] = field(default_factory=list)
    order_violation_count: int = 0
    gaps: list[dict[str, Any]] = field(default_factory=list)
    gap_count: int = 0
    gap_offsets: int = 0
    epoch_regressions: list[dict[str, Any]] = field(default_factory=list)
    epoch_regression_count: int = 0
    epoch_runs: list[list[int]] = field(default_factory=list)
    """[epoch, first offset, last offset, position of the first batch] per run of equal
    partitionLeaderEpoch."""
    epoch_runs_truncated: bool = False
    unstamped_batches: int = 0
    legacy_batches: int = 0
    compacted_batches: int = 0
    below_base: list[dict[str, Any]] = field(default_factory=list)
    below_base_count: int = 0
    overflow: list[dict[str, Any]] = field(default_factory=list)
    overflow_count: int = 0
    max_timestamp: int = -1
    max_timestamp_offset: int | None = None
    markers: list[tuple[int, int, str, int]] = field(default_factory=list)
    """(marker offset, producer id, ABORT/COMMIT, position) of the transaction markers."""
    marker_errors: list[dict[str, Any]] = field(default_factory=list)
    records_checked: bool = False
    """True when the records of every CRC-valid v2 data batch were decoded (``scan --deep``)."""
    undecodable: list[dict[str, Any]] = field(default_factory=list)
    """CRC-valid data batches whose records do not decode (batch info + ``failedAt``, ``reason``)."""
    undecodable_count: int = 0
    not_decoded: list[dict[str, Any]] = field(default_factory=list)
    """Data batches declaring more records than ``record_batch.MAX_RECORDS_PER_BATCH``: left undecoded."""
    not_decoded_count: int = 0
    offset_index: OffsetIndexFacts | None = None
    time_index: TimeIndexFacts | None = None
    txn_index: TxnIndexFacts | None = None
    index_errors: list[tuple[str, str]] = field(default_factory=list)
    index_summary: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.valid_batches == 0

    @property
    def truncate_bytes(self) -> int:
        """Bytes Kafka's recovery would cut from this segment."""
        return max(0, self.size - self.valid_end)

    def release(self) -> None:
        """Drop the per-entry data (index joins, markers, transaction index entries) once the segment-scope
        rules have run: partition-scope rules only need the summary, and memory stays flat per partition."""
        for idx in (self.offset_index, self.time_index):
            if idx is not None:
                self.index_summary[os.path.basename(idx.path)] = {"entries": len(idx), "size": idx.size}
        self.offset_index = self.time_index = self.txn_index = None
        self.markers = []

    def summary(self) -> dict[str, Any]:
        return {
            "file": os.path.basename(self.path),
            "kind": self.kind,
            "baseOffset": self.base_offset,
            "size": self.size,
            "batches": self.batches,
            "validBatches": self.valid_batches,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "stop": None if self.stop is None else self.stop.reason,
            "truncateBytes": self.truncate_bytes,
        }


def _keep(items: list, value: dict) -> None:
    if len(items) < EVIDENCE_CAP:
        items.append(value)


class _Collector:
    """Per-block state of one walk."""

    def __init__(self, facts: SegmentFacts, walker: SegmentWalker, deep: bool = False) -> None:
        self.f = facts
        self.walker = walker
        self.deep = deep
        self.prev_last: int | None = None
        self.prev_epoch: int | None = None
        self.first_invalid_seen = False
        self.prev_row_invalid = False
        self.walk_pos = 0

    def block(self, block) -> None:
        f = self.f
        h = block.headers
        n = len(h)
        if n == 0:
            return
        pos = block.positions
        base = h["base_offset"].astype(np.int64)
        last = base + h["last_offset_delta"].astype(np.int64)
        magic = h["magic"]
        crc_ok = block.crc_ok
        ok = crc_ok & (magic <= 2)
        f.batches += n
        end_of_block = int(pos[-1]) + int(h["batch_length"][-1]) + 12
        self.walk_pos = end_of_block
        f.next_offset_raw = int(last[-1]) + 1
        if not ok.all():
            self._invalid(block, ok, base, last)
        self._join_offset_index(pos, base, last)
        self._join_time_index(last, h["max_timestamp"].astype(np.int64))
        good = np.flatnonzero(ok)
        if not self.first_invalid_seen:
            f.valid_end = end_of_block
        if len(good) == 0:
            self.prev_row_invalid = True
            return
        vb, vl, vpos = base[good], last[good], pos[good]
        vh = h[good]
        nvalid = len(good)
        f.valid_batches += nvalid
        if f.first_offset is None:
            f.first_offset = int(vb[0])
            f.first_position = int(vpos[0])
        f.last_offset = int(vl[-1])
        if not self.first_invalid_seen:
            f.recovered_next_offset = int(vl[-1]) + 1
        elif f.first_invalid is not None:
            before = np.flatnonzero(vpos < f.first_invalid["position"])
            if len(before):
                f.recovered_next_offset = int(vl[before[-1]]) + 1
        # a valid batch right after an invalid one: the "gap" before it is the invalid batch, not lost offsets
        after_invalid = np.zeros(n, dtype=bool)
        after_invalid[1:] = ~ok[:-1]
        after_invalid[0] = self.prev_row_invalid
        self.prev_row_invalid = not bool(ok[-1])
        self._order(vb, vl, vpos, after_invalid[good])
        ple = vh["partition_leader_epoch"].astype(np.int64)
        self._epochs(ple, vb, vl, vpos, magic[good])
        mt = vh["max_timestamp"].astype(np.int64)
        i = int(np.argmax(mt))
        if mt[i] > f.max_timestamp:
            f.max_timestamp = int(mt[i])
            f.max_timestamp_offset = int(vl[i])
        v2 = magic[good] == 2
        f.legacy_batches += int(nvalid - np.count_nonzero(v2))
        counts = vh["records_count"].astype(np.int64)
        deltas = vh["last_offset_delta"].astype(np.int64)
        f.compacted_batches += int(np.count_nonzero(v2 & (counts < deltas + 1)))
        if f.kind == "log":
            below = np.flatnonzero(vb < f.base_offset)
            f.below_base_count += len(below)
            for j in below[:EVIDENCE_CAP]:
                _keep(f.below_base, batch_info(vh[j], vpos[j]))
            over = np.flatnonzero(vl - f.base_offset > INT32_MAX)
            f.overflow_count += len(over)
            for j in over[:EVIDENCE_CAP]:
                _keep(f.overflow, batch_info(vh[j], vpos[j]))
            attrs = vh["attributes"].astype(np.int64)
            for j in np.flatnonzero((attrs & _TXN_MARKER) == _TXN_MARKER):
                self._marker(vh[j], int(vpos[j]))
        if self.deep:
            data = v2 & ((vh["attributes"].astype(np.int64) & ATTR_CONTROL) == 0)
            for j in np.flatnonzero(data):
                self._records(vh[j], int(vpos[j]))

    def _records(self, row, position: int) -> None:
        """Decode every record of one CRC-valid data batch, as a consumer would (streaming, nothing kept)."""
        batch = RecordBatch.from_tuple(row.item(), position=position)
        try:
            for _rec in self.walker.records(batch, payloads=False):
                pass
        except ParseError as exc:
            info = batch_info(row, position)
            info.update(failedAt=exc.offset, reason=exc.message)
            if isinstance(exc, RecordBudgetExceeded):
                self.f.not_decoded_count += 1
                _keep(self.f.not_decoded, info)
            else:
                self.f.undecodable_count += 1
                _keep(self.f.undecodable, info)

    def _invalid(self, block, ok: np.ndarray, base: np.ndarray, last: np.ndarray) -> None:
        f = self.f
        h = block.headers
        for j in np.flatnonzero(~ok):
            info = batch_info(h[j], block.positions[j], int(block.computed_crc[j]))
            if h["magic"][j] > 2 or h["magic"][j] < 0:
                f.bad_magic_count += 1
                _keep(f.bad_magic, info)
            else:
                f.crc_invalid_count += 1
                _keep(f.crc_invalid, info)
            if not self.first_invalid_seen:
                self.first_invalid_seen = True
                f.first_invalid = info
                f.valid_end = info["position"]

    def _order(self, vb: np.ndarray, vl: np.ndarray, vpos: np.ndarray, after_invalid: np.ndarray) -> None:
        f = self.f
        prev = np.empty_like(vl)
        prev[1:] = vl[:-1]
        has_prev = np.ones(len(vl), dtype=bool)
        if self.prev_last is None:
            has_prev[0] = False
            prev[0] = vb[0] - 1
        else:
            prev[0] = self.prev_last
        bad = np.flatnonzero((has_prev & (vb <= prev)) | (vl < vb))
        f.order_violation_count += len(bad)
        for j in bad[:EVIDENCE_CAP]:
            _keep(
                f.order_violations,
                {
                    "position": int(vpos[j]),
                    "previousLastOffset": int(prev[j]) if has_prev[j] else None,
                    "baseOffset": int(vb[j]),
                    "lastOffset": int(vl[j]),
                },
            )
        gap = np.flatnonzero(has_prev & ~after_invalid & (vb > prev + 1))
        if len(gap):
            f.gap_count += len(gap)
            f.gap_offsets += int((vb[gap] - prev[gap] - 1).sum())
            for j in gap[:EVIDENCE_CAP]:
                _keep(
                    f.gaps,
                    {"position": int(vpos[j]), "missingFrom": int(prev[j]) + 1, "missingTo": int(vb[j]) - 1},
                )
        self.prev_last = int(vl[-1])

    def _epochs(
        self, ple: np.ndarray, vb: np.ndarray, vl: np.ndarray, vpos: np.ndarray, magic: np.ndarray
    ) -> None:
        f = self.f
        prev = np.empty_like(ple)
        prev[1:] = ple[:-1]
        has_prev = np.ones(len(ple), dtype=bool)
        if self.prev_epoch is None:
            has_prev[0] = False
            prev[0] = ple[0]
        else:
            prev[0] = self.prev_epoch
        back = np.flatnonzero(has_prev & (ple < prev))
        f.epoch_regression_count += len(back)
        for j in back[:EVIDENCE_CAP]:
            _keep(
                f.epoch_regressions,
                {
                    "position": int(vpos[j]),
                    "baseOffset": int(vb[j]),
                    "previousEpoch": int(prev[j]),
                    "epoch": int(ple[j]),
                    "magic": int(magic[j]),
                },
            )
        self.prev_epoch = int(ple[-1])
        stamped = ple >= 0
        f.unstamped_batches += int(len(ple) - np.count_nonzero(stamped))
        if not stamped.any():
            return
        se, sb, sl, sp = ple[stamped], vb[stamped], vl[stamped], vpos[stamped]
        runs = f.epoch_runs
        if f.epoch_runs_truncated:
            return
        current = runs[-1][0] if runs else None
        change = np.empty(len(se), dtype=bool)
        change[0] = current is None or se[0] != current
        change[1:] = se[1:] != se[:-1]
        for j in np.flatnonzero(change):
            if len(runs) >= MAX_EPOCH_RUNS:
                f.epoch_runs_truncated = True
                return
            if runs and j > 0:
                runs[-1][2] = int(sl[j - 1])
            runs.append([int(se[j]), int(sb[j]), int(sl[j]), int(sp[j])])
        runs[-1][2] = int(sl[-1])

    def _marker(self, row, position: int) -> None:
        f = self.f
        batch = RecordBatch.from_tuple(row.item(), position=position)
        try:
            # Kafka reads only the first record of a control batch (UnifiedLog.analyzeAndValidateRecords)
            first = next(iter(self.walker.records(batch, budget=INT32_MAX)), None)
            ctl = decode_control_record(first.key, first.value) if first is not None else None
        except (ParseError, OSError) as exc:
            _keep(f.marker_errors, {"position": position, "message": getattr(exc, "message", str(exc))})
            return
        if ctl is not None and ctl.type_name in ("ABORT", "COMMIT"):
            f.markers.append((batch.base_offset, batch.producer_id, ctl.type_name, position))

    def _join_offset_index(self, pos: np.ndarray, base: np.ndarray, last: np.ndarray) -> None:
        oi = self.f.offset_index
        if oi is None or not len(oi) or oi._sorted_pos is None:
            return
        sp = oi._sorted_pos
        lo = int(np.searchsorted(sp, pos[0], "left"))
        hi = int(np.searchsorted(sp, pos[-1], "right"))
        if hi <= lo:
            return
        wanted = sp[lo:hi]
        j = np.clip(np.searchsorted(pos, wanted), 0, len(pos) - 1)
        match = pos[j] == wanted
        idx = oi._order[lo:hi][match]
        jm = j[match]
        oi.at_batch[idx] = True
        oi.batch_base[idx] = base[jm]
        oi.batch_last[idx] = last[jm]

    def _join_time_index(self, vl: np.ndarray, mt: np.ndarray) -> None:
        ti = self.f.time_index
        if ti is None or not len(ti) or ti._sorted_off is None:
            return
        so = ti._sorted_off
        lo = int(np.searchsorted(so, vl.min(), "left"))
        hi = int(np.searchsorted(so, vl.max(), "right"))
        if hi <= lo:
            return
        if len(vl) > 1 and not bool(np.all(vl[1:] > vl[:-1])):
            order = np.argsort(vl, kind="stable")
            vl, mt = vl[order], mt[order]
        wanted = so[lo:hi]
        j = np.clip(np.searchsorted(vl, wanted), 0, len(vl) - 1)
        match = vl[j] == wanted
        idx = ti._order[lo:hi][match]
        ti.found[idx] = True
        ti.batch_max_ts[idx] = mt[j[match]]


def collect_segment(
    path: str,
    base_offset: int,
    *,
    kind: str = "log",
    files: SegmentFiles | None = None,
    next_base: int | None = None,
    is_last: bool = False,
    deep: bool = False,
) -> SegmentFacts:
    """Walk one segment (read-only) and collect its :class:`SegmentFacts`, indexes joined in the same pass.

    ``deep``: also decode the records of every CRC-valid v2 data batch (streaming; KA111).
    OSErrors (unreadable files) are recorded in ``read_error`` / ``index_errors``, never raised.
    """
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        return SegmentFacts(path, kind, base_offset, 0, next_base, is_last, files, read_error=exc.strerror)
    facts = SegmentFacts(path, kind, base_offset, size, next_base, is_last, files)
    if files is not None and kind == "log":
        for attr, loader in (
            ("index", load_offset_index),
            ("timeindex", load_time_index),
            ("txnindex", load_txn_index),
        ):
            info = getattr(files, attr)
            if info is None:
                continue
            try:
                loaded = loader(info, base_offset)
            except OSError as exc:
                facts.index_errors.append((info.path, exc.strerror or str(exc)))
                continue
            if attr == "index":
                facts.offset_index = loaded
            elif attr == "timeindex":
                facts.time_index = loaded
            else:
                facts.txn_index = loaded
    try:
        walker = SegmentWalker(path, stop_on_invalid=False)
        collector = _Collector(facts, walker, deep)
        facts.records_checked = deep
        for block in walker.header_blocks():
            collector.block(block)
    except OSError as exc:
        facts.read_error = exc.strerror or str(exc)
        return facts
    except ParseError as exc:
        # An entry whose magic byte says v0/v1 but whose bytes are not a legacy message (e.g. a corrupted
        # magic in a v2 batch). Kafka's reader rejects it (invalid CRC); the walk ends there.
        pos = collector.walk_pos
        walker.stop = WalkStop(
            "corrupt", pos, size - pos, f"entry with magic < 2 is not a valid legacy message: {exc.message}"
        )
    facts.stop = walker.stop
    if walker.stop is not None and not collector.first_invalid_seen:
        facts.valid_end = walker.stop.position
    return facts


# ------------------------------------------------------------------------------------------ contexts


@dataclass
class SnapshotFacts:
    """A producer state ``.snapshot`` (offset from its name) as read by ``read_producer_snapshot``."""

    path: str
    offset: int
    size: int
    version: int | None = None
    crc_valid: bool | None = None
    crc: int | None = None
    computed_crc: int | None = None
    entries: int = 0
    max_last_offset: int | None = None
    max_txn_first_offset: int | None = None
    error: str | None = None
    error_offset: int | None = None


def load_snapshot(info: FileInfo) -> SnapshotFacts:
    from parsers.producer_snapshot import read_producer_snapshot

    facts = SnapshotFacts(info.path, info.base_offset or 0, info.size)
    try:
        snap = read_producer_snapshot(read_bytes(info.path), info.path)
    except ParseError as exc:
        facts.error, facts.error_offset = exc.message, exc.offset
        return facts
    facts.version, facts.crc_valid, facts.crc, facts.computed_crc = (
        snap.version,
        snap.crc_valid,
        snap.crc,
        snap.computed_crc,
    )
    facts.entries = len(snap.entries)
    if snap.entries:
        facts.max_last_offset = max(e.last_offset for e in snap.entries)
        facts.max_txn_first_offset = max(e.current_txn_first_offset for e in snap.entries)
    return facts


@dataclass
class ParsedFile:
    """A small file and what its Kafka reader made of it: ``value`` or ``error`` (Kafka's message)."""

    path: str | None
    value: Any = None
    error: ParseError | None = None
    read_error: str | None = None

    @property
    def present(self) -> bool:
        return self.path is not None

    @property
    def ok(self) -> bool:
        return self.path is not None and self.error is None and self.read_error is None


def parse_file(info: FileInfo | None, reader) -> ParsedFile:
    if info is None:
        return ParsedFile(None)
    try:
        data = read_bytes(info.path)
    except OSError as exc:
        return ParsedFile(info.path, read_error=exc.strerror or str(exc))
    try:
        return ParsedFile(info.path, reader(data, info.path))
    except ParseError as exc:
        return ParsedFile(info.path, error=exc.at(path=info.path))


@dataclass
class LogDirFacts:
    """Log-dir level inputs of a partition: checkpoint values for it and whether the dir was shut down
    cleanly."""

    path: str
    broker: int | None
    clean_shutdown: bool
    hw: int | None = None
    recovery_point: int | None = None
    log_start: int | None = None
    cleaner_offset: int | None = None
    checkpoint_files: dict[str, bool] = field(default_factory=dict)
    expected_topic_id: str | None = None
    metadata_source: str | None = None
    metadata_complete: bool = False
    kraft: bool = False


@dataclass
class PartitionContext:
    """Everything the partition-scope rules look at; segment facts are appended as segments are walked."""

    dir: PartitionDir
    logdir: LogDirFacts
    segments: list[SegmentFacts] = field(default_factory=list)
    kraft_snapshots: list[SegmentFacts] = field(default_factory=list)
    leader_epochs: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    normalized_epochs: NormalizedEpochs | None = None
    epoch_error: ParseError | None = None
    partition_metadata: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    quorum_state: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    producer_snapshots: list[SnapshotFacts] = field(default_factory=list)
    # derived by finalize()
    log_start_offset: int = 0
    leo: int = 0
    leo_on_disk: int = 0
    recovery_start: int | None = None
    recovery_segments: list[int] = field(default_factory=list)
    recovery_truncation: dict[str, Any] | None = None

    @property
    def location(self) -> Location:
        return Location(self.logdir.broker, self.logdir.path, self.dir.topic, self.dir.partition)

    @property
    def is_metadata(self) -> bool:
        return self.dir.is_metadata

    @property
    def compacted(self) -> bool:
        """Compaction is in play: a compacted internal topic, a cleaner checkpoint, or batches with gaps."""
        return (
            self.dir.topic in COMPACTED_TOPICS
            or self.logdir.cleaner_offset is not None
            or any(s.compacted_batches for s in self.segments)
        )

    @property
    def will_recover(self) -> bool:
        """True when Kafka's next start runs log recovery on this partition (no clean-shutdown marker; the
        KRaft metadata log is always recovered from offset 0)."""
        return self.is_metadata or not self.logdir.clean_shutdown

    def recovery_floor(self) -> int:
        """Base offset of the first segment recovery re-reads: the one containing the recovery point."""
        rp = 0 if self.is_metadata else (self.logdir.recovery_point or 0)
        bases = [s.base_offset for s in self.dir.log_segments]
        floor = None
        for b in bases:
            if b <= rp:
                floor = b
        return floor if floor is not None else (bases[0] if bases else 0)

    def rebuilt_by_recovery(self, seg: SegmentFacts) -> bool:
        """Kafka re-reads this segment (and rebuilds its indexes) at the next start."""
        return self.will_recover and seg.base_offset >= self.recovery_floor()

    def epoch_runs(self) -> list[list[int]]:
        """Runs of equal partitionLeaderEpoch over the whole log (merged across segments)."""
        out: list[list[int]] = []
        for seg in self.segments:
            for run in seg.epoch_runs:
                if out and out[-1][0] == run[0]:
                    out[-1][2] = run[2]
                else:
                    out.append(list(run))
        return out

    def finalize(self) -> None:
        """Derive the log start offset, the LEO Kafka would load, and what recovery would do."""
        segs = [s for s in self.segments if s.kind == "log"]
        first_base = segs[0].base_offset if segs else 0
        ckpt = self.logdir.log_start
        self.log_start_offset = max(ckpt, first_base) if ckpt is not None else first_base
        if segs:
            last = segs[-1]
            self.leo_on_disk = last.next_offset_raw if last.next_offset_raw is not None else last.base_offset
        else:
            self.leo_on_disk = self.log_start_offset
        self.leo = self.leo_on_disk
        if not self.will_recover or not segs:
            return
        floor = self.recovery_floor()
        self.recovery_start = floor
        self.recovery_segments = [s.base_offset for s in segs if s.base_offset >= floor]
        for seg in segs:
            if seg.base_offset < floor:
                continue
            if seg.truncate_bytes:
                later = [s.base_offset for s in segs if s.base_offset > seg.base_offset]
                leo = seg.recovered_next_offset if seg.recovered_next_offset is not None else seg.base_offset
                self.recovery_truncation = {
                    "segment": os.path.basename(seg.path),
                    "position": seg.valid_end,
                    "bytes": seg.truncate_bytes,
                    "deletedSegments": later,
                    "leo": leo,
                }
                self.leo = leo
                return
        last = segs[-1]
        self.leo = last.recovered_next_offset if last.recovered_next_offset is not None else last.base_offset

    def summary(self) -> dict[str, Any]:
        runs = self.epoch_runs()
        cache = self.leader_epochs.value.entries if self.leader_epochs.ok else None
        return {
            "broker": self.logdir.broker,
            "logDir": self.logdir.path,
            "topic": self.dir.topic,
            "partition": self.dir.partition,
            "directory": self.dir.name,
            "dirKind": self.dir.kind,
            "segments": len([s for s in self.segments if s.kind == "log"]),
            "bytes": sum(s.size for s in self.segments),
            "batches": sum(s.batches for s in self.segments if s.kind == "log"),
            "logStartOffset": self.log_start_offset,
            "logEndOffset": self.leo,
            "logEndOffsetOnDisk": self.leo_on_disk,
            "highWatermark": self.logdir.hw,
            "recoveryPoint": self.logdir.recovery_point,
            "cleanerOffset": self.logdir.cleaner_offset,
            "latestEpoch": runs[-1][0] if runs else None,
            # at most MAX_SUMMARY_EPOCHS entries (a hostile file can hold millions); the count is beside it
            "leaderEpochCache": [list(e) for e in cache[:MAX_SUMMARY_EPOCHS]] if cache is not None else None,
            "leaderEpochCacheEntries": len(cache) if cache is not None else None,
            "topicId": self.partition_metadata.value.topic_id if self.partition_metadata.ok else None,
            "willRecover": self.will_recover and not self.is_metadata,
            "recoverySegments": self.recovery_segments,
            "recoveryTruncation": self.recovery_truncation,
        }


@dataclass
class LogDirContext:
    """Everything the log-dir rules look at."""

    inventory: LogDirInventory
    meta: ParsedFile
    clean_shutdown: ParsedFile
    checkpoints: dict[str, ParsedFile]
    broker: int | None = None
    partitions: list[dict[str, Any]] = field(default_factory=list)
    topic_view: Any = None
    siblings: list[LogDirContext] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.inventory.path

    @property
    def location(self) -> Location:
        return Location(self.broker, self.path, None, None)

    @property
    def meta_value(self) -> MetaProperties | None:
        return self.meta.value if self.meta.ok else None

    @property
    def clean_shutdown_value(self) -> CleanShutdown | None:
        return self.clean_shutdown.value if self.clean_shutdown.ok else None

    def checkpoint(self, name: str) -> OffsetCheckpoint | None:
        parsed = self.checkpoints.get(name)
        return parsed.value if parsed is not None and parsed.ok else None


__all__ = [
    "LeaderEpochCheckpoint",
    "LogDirContext",
    "LogDirFacts",
    "OffsetIndexFacts",
    "ParsedFile",
    "PartitionContext",
    "PartitionMetadata",
    "QuorumState",
    "SegmentFacts",
    "SnapshotFacts",
    "TimeIndexFacts",
    "TxnIndexFacts",
    "collect_segment",
    "load_snapshot",
    "parse_file",
]
