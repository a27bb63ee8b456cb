"""Observations the rules judge: one streaming pass per segment, and the per-partition / per-log-dir context.

:func:`collect_segment` walks a ``.log`` with the columnar fast path (``SegmentWalker.header_blocks()``) and
keeps, in bounded memory, what the checks need: CRC failures, where Kafka's recovery would stop, offset order,
gaps, leader-epoch runs, the maximum timestamp, transaction markers, and the join of the segment's
``.index``/``.timeindex`` entries with the batches they point at (numpy, per block of headers). Lists of
evidence are capped at :data:`EVIDENCE_CAP` items with exact counts beside them. Memory is O(window + index
entries), never O(batches): a 5 GB partition is one segment at a time.

No policy here: whether something is a finding, and how severe, is decided by ``auditor.rules``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.recovery import SegmentSummary
from auditor.layout.inventory import SegmentFiles
from auditor.observe.indexes import (
    OffsetIndexFacts,
    TimeIndexFacts,
    TxnIndexFacts,
    load_offset_index,
    load_time_index,
    load_txn_index,
)
from parsers.control import decode_control_record
from parsers.errors import ParseError
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
INT32_MAX = 2**31 - 1
_TXN_MARKER = ATTR_CONTROL | ATTR_TRANSACTIONAL


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


# ------------------------------------------------------------------------------------------ segment facts


@dataclass
class SegmentFacts:
    """What one walk of a segment (``kind`` ``log``) or KRaft snapshot (``kraft-snapshot``) established.

    Offsets: ``first_offset``/``last_offset`` span the valid batches (``auditor.kafka.batches``);
    ``valid_end`` is the byte position where Kafka's recovery would stop (first invalid entry, else where the
    walk stopped) and ``recovered_next_offset`` the next offset after the last batch before it (None when no
    batch is before it); ``next_offset_raw`` is what a broker that skips recovery reads as the next offset
    (last complete batch, valid or not).
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
        """Bytes Kafka's recovery would cut from this segment (when it re-reads it)."""
        return self.recovery_summary().truncate_bytes

    def recovery_summary(self) -> SegmentSummary:
        """This segment as ``auditor.kafka.recovery`` sees it (one that could not be read: no batches)."""
        name = os.path.basename(self.path)
        if self.read_error is not None:
            return SegmentSummary(name, self.base_offset, 0, 0, None, None)
        return SegmentSummary(
            name,
            self.base_offset,
            self.size,
            self.valid_end,
            self.recovered_next_offset,
            self.next_offset_raw,
        )

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


def _previous(values: np.ndarray, carried: int | None, absent: int) -> tuple[np.ndarray, np.ndarray]:
    """Each batch's previous value of ``values`` (the first's: ``carried`` from the block before, or
    ``absent`` when there is none) and whether it has one."""
    prev = np.empty_like(values)
    prev[1:] = values[:-1]
    has_prev = np.ones(len(values), dtype=bool)
    if carried is None:
        has_prev[0] = False
        prev[0] = absent
    else:
        prev[0] = carried
    return prev, has_prev


class _Collector:
    """Per-block state of one walk."""

    def __init__(self, facts: SegmentFacts, walker: SegmentWalker, deep: bool = False) -> None:
        self.f = facts
        self.walker = walker
        self.deep = deep
        self.prev_last: int | None = None
        self.prev_epoch: int | None = None
        self.prefix = ValidPrefix()
        self.prev_row_invalid = False

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
        ok = valid_batches(h, block.computed_crc)
        f.batches += n
        first_bad = self.prefix.feed(pos, h, ok)
        f.next_offset_raw = self.prefix.next_offset_raw
        f.recovered_next_offset = self.prefix.recovered_next_offset
        if not ok.all():
            self._invalid(block, ok, first_bad)
        self._join_offset_index(pos, base, last)
        self._join_time_index(last, h["max_timestamp"].astype(np.int64))
        good = np.flatnonzero(ok)
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

    def _invalid(self, block, ok: np.ndarray, first_bad: int | None) -> None:
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
            if j == first_bad:
                f.first_invalid = info

    def _order(self, vb: np.ndarray, vl: np.ndarray, vpos: np.ndarray, after_invalid: np.ndarray) -> None:
        f = self.f
        prev, has_prev = _previous(vl, self.prev_last, vb[0] - 1)
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
        prev, has_prev = _previous(ple, self.prev_epoch, ple[0])
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
        if oi is None or not len(oi) or oi._sorted is None:
            return
        sp = oi._sorted
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
        if ti is None or not len(ti) or ti._sorted is None:
            return
        so = ti._sorted
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
        pos = collector.prefix.end
        walker.stop = WalkStop(
            "corrupt", pos, size - pos, f"entry with magic < 2 is not a valid legacy message: {exc.message}"
        )
    facts.stop = walker.stop
    facts.valid_end = collector.prefix.valid_end(walker.stop.position if walker.stop is not None else None)
    return facts
