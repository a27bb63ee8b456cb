"""Record rows of compacted partitions (offset, hash, timestamp, size per record, for record-level
comparison): decoded by columns (``parsers.segment.record_columns``) in spans of bounded bytes and records,
with the record-by-record decoder (:func:`auditor.observe.records.read_batch_records`) for what the column
decoder does not take."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditor.kafka.topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.arrow_build import column, key_column, key_columns
from auditor.observe.records import read_batch_records, record_hash, record_hashes
from parsers.errors import ParseError
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    records_payload,
)
from parsers.segment import RecordColumns, SegmentWalker, record_columns

RECORD_SPAN = 2 << 20
"""Bytes of batches read (and decoded column by column) at a time for record rows; a larger batch is
streamed record by record."""

RECORD_SPAN_DECOMPRESSED = 4 << 20
"""Decompressed bytes of the compressed batches of one span: the span is cut before the batch that would
pass it, and a batch that alone decompresses to more is streamed record by record (a few KB on disk can
hold tens of MB of records)."""

RECORD_SPAN_RECORDS = 1 << 16
"""Declared records of one span (the column decoder holds a few dozen bytes per record); a batch declaring
more is streamed record by record."""


class SegmentRecords:
    """Record rows of the valid batches of one segment of a compacted partition, as the walk finds them."""

    def __init__(self, task: PartitionTask, path: Path, segment: int, walker: SegmentWalker, state) -> None:
        self.task, self.path, self.segment, self.walker, self.state = task, path, segment, walker, state
        self.keep = task.topic in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)

    def add(self, positions, headers, valid) -> Iterator[tuple[str, pa.Table]]:
        positions, headers = positions[valid], headers[valid]
        sizes = headers["batch_length"].astype(np.int64) + LOG_OVERHEAD
        if self.keep:
            self.state.valid_batches.extend(
                (self.segment, int(p), int(s))
                for p, s in zip(positions.tolist(), sizes.tolist(), strict=True)
            )
        ends = positions + sizes
        declared = np.cumsum(np.maximum(headers["records_count"].astype(np.int64), 0))
        lo = 0
        while lo < len(positions):
            # batches up to RECORD_SPAN bytes and RECORD_SPAN_RECORDS records from the first (at least one)
            hi = int(np.searchsorted(ends, positions[lo] + RECORD_SPAN, side="right"))
            before = int(declared[lo - 1]) if lo else 0
            fit = int(np.searchsorted(declared, before + RECORD_SPAN_RECORDS, side="right"))
            hi = max(lo + 1, min(hi, fit))
            table, done = self._span(positions[lo:hi], headers[lo:hi], sizes[lo:hi])
            if table.num_rows:
                yield "record", table
            lo += done

    def _span(self, positions, headers, sizes) -> tuple[pa.Table, int]:
        """Record rows of consecutive valid batches, and how many of them were done (the span is cut when
        their decompressed records pass :data:`RECORD_SPAN_DECOMPRESSED`): decoded by columns
        (``parsers.segment.record_columns``) where it takes them, record by record (``read_batch_records``)
        for the others."""
        start = int(positions[0])
        end = int(positions[-1] + sizes[-1])
        raw = b""
        if end - start <= RECORD_SPAN:
            with contextlib.suppress(OSError):  # then read batch by batch, each error reported
                raw = self.walker.read(start, end - start)
        buf, starts, ends, taken = _record_sections(raw, start, positions, headers, sizes)
        done = len(taken)
        positions, headers, sizes = positions[:done], headers[:done], sizes[:done]
        taken &= headers["records_count"].astype(np.int64) <= RECORD_SPAN_RECORDS
        cols = record_columns(buf, starts, ends, np.where(taken, headers["records_count"], 0))
        cols.ok &= taken
        decoded = _column_rows(buf, cols, headers)
        parts = [decoded]
        for i in np.flatnonzero(~decoded.ok):
            parts.append(self._one(int(i), int(positions[i]), int(sizes[i])))
        return _record_rows(self.task, parts), done

    def _one(self, i: int, position: int, size: int) -> _Rows:
        """Record rows of one batch, record by record; what does not decode is reported in the errors."""
        out = _Rows.empty(i)
        try:
            batch, records = read_batch_records(self.path, position, size, self.walker)
            for rec in records:
                out.append(rec, batch)
        except (ParseError, OSError) as exc:
            where = exc.offset if isinstance(exc, ParseError) else position
            self.state.record_errors.append(f"{self.path.name}@{where}: {exc}")
        return out


def _record_sections(raw: bytes, start: int, positions, headers, sizes):
    """The records sections of the first batches in ``raw`` (the file from ``start``): one buffer (``raw``,
    then the decompressed sections), where each section starts and ends in it, and which batches have one
    there: the others (not magic 2, not in ``raw``, not decompressed, or decompressing to more than
    :data:`RECORD_SPAN_DECOMPRESSED`) are left to the record-by-record decoder. The arrays stop before the
    batch whose records would take the decompressed bytes past that bound (never before the first)."""
    at = positions - start
    starts, ends = at + RECORD_BATCH_OVERHEAD, at + sizes
    taken = (headers["magic"] == 2) & (ends <= len(raw))
    compressed = np.flatnonzero(taken & ((headers["attributes"] & ATTR_COMPRESSION_MASK) != 0))
    pieces, end, done = [raw], len(raw), len(positions)
    view = memoryview(raw)
    for i in compressed.tolist():
        batch = RecordBatch.from_tuple(tuple(headers[i].tolist()), position=int(positions[i]))
        try:
            payload = records_payload(
                batch, view[int(at[i]) : int(ends[i])], max_bytes=RECORD_SPAN_DECOMPRESSED
            )
        except ParseError:  # damaged, or too large for a span
            taken[i] = False
            continue
        if end - len(raw) + len(payload) > RECORD_SPAN_DECOMPRESSED:
            done = i  # i > 0: the first compressed batch always fits
            break
        pieces.append(payload)
        starts[i], ends[i] = end, end + len(payload)
        end += len(payload)
    starts, ends, taken = starts[:done], ends[:done], taken[:done]
    starts[~taken] = ends[~taken] = 0  # an empty section, which the caller does not take
    return b"".join(pieces) if len(pieces) > 1 else raw, starts, ends, taken


@dataclass
class _Rows:
    """Record rows of some batches of a span, in record order: ``batch`` is the index in the span of each
    row's batch (one index for a batch read record by record), ``ok`` which batches of the span the rows
    decoded by columns cover. Columns are numpy arrays, or lists while a batch is read record by record."""

    batch: np.ndarray | int
    offset: np.ndarray | list
    base: np.ndarray | list
    timestamp: np.ndarray | list
    hash: np.ndarray | list
    control: np.ndarray | list
    size: np.ndarray | list
    ok: np.ndarray | None = None

    @classmethod
    def empty(cls, batch: int) -> _Rows:
        return cls(batch, [], [], [], [], [], [])

    def append(self, rec, batch: RecordBatch) -> None:
        self.offset.append(rec.offset)
        self.base.append(batch.base_offset)
        self.timestamp.append(rec.timestamp)
        self.hash.append(record_hash(rec.key, rec.value, rec.headers))
        self.control.append(batch.is_control)
        self.size.append(rec.size)


INT64_MAX = 2**63 - 1


def _column_rows(buf: bytes, cols: RecordColumns, headers) -> _Rows:
    """The rows of the batches :func:`record_columns` decoded; ``ok`` false for the other batches, and for
    one with an offset or timestamp past the int64 range or a header key that is not ASCII (left to the
    record-by-record decoder, which fails or hashes them as it always did)."""
    sec = cols.section
    base = headers["base_offset"].astype(np.int64)[sec]
    delta = cols.fields["offset_delta"]
    offset_overflow = (delta > 0) & (base > INT64_MAX - delta)
    attributes = headers["attributes"].astype(np.int64)[sec]
    first_ts = headers["base_timestamp"].astype(np.int64)[sec]
    ts_delta = cols.fields["timestamp_delta"]
    with np.errstate(over="ignore"):
        stamps = first_ts + ts_delta
    stamp_overflow = ((first_ts >= 0) == (ts_delta >= 0)) & ((stamps >= 0) != (first_ts >= 0))
    log_append = (attributes & ATTR_TIMESTAMP_TYPE) != 0
    stamps = np.where(log_append, headers["max_timestamp"].astype(np.int64)[sec], stamps)
    hashes, hashable = record_hashes(buf, cols)
    ok = cols.ok.copy()
    ok[sec[offset_overflow | (stamp_overflow & ~log_append) | ~hashable]] = False
    keep = ok[sec]
    with np.errstate(over="ignore"):
        offsets = base + delta
    return _Rows(
        sec[keep],
        offsets[keep],
        base[keep],
        stamps[keep],
        hashes[keep],
        ((attributes & ATTR_CONTROL) != 0)[keep],
        cols.size[keep],
        ok,
    )


def _record_rows(task: PartitionTask, parts: list[_Rows]) -> pa.Table:
    """One record table of the rows of ``parts``, in batch then record order."""
    cols = []
    batch = np.concatenate([np.broadcast_to(np.asarray(p.batch), len(p.offset)) for p in parts])
    order = np.argsort(batch, kind="stable")
    for name in ("offset", "base", "timestamp", "hash"):
        cols.append(np.concatenate([np.asarray(getattr(p, name), dtype=np.int64) for p in parts])[order])
    control = np.concatenate([np.asarray(p.control, dtype=bool) for p in parts])[order]
    size = np.concatenate([np.asarray(p.size, dtype=np.int64) for p in parts])[order]
    n = len(order)
    arrays = key_columns(task, n) + [column(c, pa.int64()) for c in cols]
    arrays += [column(control, pa.bool_()), column(size, pa.int32()), key_column(task, n)]
    return pa.Table.from_arrays(arrays, schema=rows.RECORD)
