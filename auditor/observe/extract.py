"""Parsing broker log directories into the Arrow tables of :mod:`auditor.observe.rows`, without Spark.

The unit of work is one partition directory (:class:`PartitionTask`), so the same function runs in a
single process (``kafka-auditor extract``) and on Spark executors (``auditor.spark.extract``). Batch
headers come from the columnar walk (``SegmentWalker.header_blocks``): no Python object per batch, and
tables of at most :data:`GROUP_ROWS` rows as the walk goes, so memory does not grow with a segment or a
log. Records are decoded only for compacted partitions (offset + hash, for record-level comparison: by
columns, ``parsers.segment.record_columns``, with the record-by-record decoder for what it does not take)
and for the KRaft metadata log and the coordinators' topics.

The log end offset (``leo``) is the one Kafka loads, computed by ``auditor.kafka.recovery`` exactly as
``scan`` computes it: without ``.kafka_cleanshutdown`` (and always for ``__cluster_metadata``), recovery
re-reads every segment from the one containing the recovery point and cuts the log at the first invalid
batch (``auditor.kafka.batches``) or torn tail, deleting later segments; batches past that point have
``live = false``. With a clean shutdown nothing is re-validated. ``leo_on_disk`` is what the files hold: the
next offset after the last complete batch, valid or not (an empty last segment gives its base offset).

The extraction reads what Kafka reads: a segment Kafka's loader trusts (below the recovery point of a cleanly
shut down log, with its offset index: ``LogRecovery.trusts``) is walked header by header, its batches taken as
valid without their CRC being computed and large ones never read (``SegmentWalker(verify_crc=False)``); every
other segment, and every segment of a task with ``verify_crc``, is validated whole.
``scan`` validates every byte.

What cannot be read is never guessed: a segment that is not a regular file (opened only through
``parsers.files``: a FIFO or device is never opened), that raises an OS error or whose entries do not parse
is skipped, and a segment that is not the last and stops early leaves the rest of its offsets unread. The
replica row carries one span over these holes (``unreadable_from`` .. ``unreadable_to``, null when it runs to
the end of the log, whose LEO is then unknown: ``leo`` is the base offset of the unreadable last segment, a
lower bound) and why (``unreadable``); ``audit`` compares the replica outside that span only (KA691). Kafka
itself loads only regular files as segments (``LogLoader.loadSegmentFiles``: ``file.isFile``) and takes the
log directory offline on an I/O error (KIP-112), so the LEO of the later readable segments is the LEO Kafka
computes (the next offset after the last batch of the last segment), as ``scan`` reports it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.kafka.recovery import LogRecovery, SegmentSummary, log_start_offset
from auditor.kafka.topics import METADATA_TOPIC, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.layout.inventory import segment_logs
from auditor.layout.logdir import LogDirInfo, read_log_dir, read_small
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.coordinator import transaction_state_rows
from auditor.observe.extract_files import ExtractWriter
from auditor.observe.metadata import extract_metadata
from auditor.observe.offsets import offset_commit_rows
from auditor.observe.records import read_batch_records, record_hash, record_hashes
from parsers.checkpoints import parse_leader_epoch_checkpoint
from parsers.control import first_control_type
from parsers.dirfiles import (
    parse_partition_metadata,
)
from parsers.errors import ParseError
from parsers.files import regular_file_problem
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    records_payload,
)
from parsers.segment import HeaderBlock, RecordColumns, SegmentWalker, WalkStop, record_columns

# ------------------------------------------------------------------------------------------------ batches

GROUP_ROWS = 1 << 16
"""Header rows gathered before they become a table: the walk's memory is bounded by this, not by the
segment (a 1 GiB segment of 200-byte batches holds 5 M of them)."""


def _concat(blocks: list[HeaderBlock]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(blocks) == 1:
        b = blocks[0]
        return b.positions, b.headers, b.computed_crc
    return (
        np.concatenate([b.positions for b in blocks]),
        np.concatenate([b.headers for b in blocks]),
        np.concatenate([b.computed_crc for b in blocks]),
    )


def _groups(walker: SegmentWalker) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The walk's header blocks in groups of about :data:`GROUP_ROWS` rows, in file order."""
    blocks: list[HeaderBlock] = []
    rows_held = 0
    try:
        for block in walker.header_blocks():
            if not len(block):
                continue
            blocks.append(block)
            rows_held += len(block)
            if rows_held >= GROUP_ROWS:
                yield _concat(blocks)
                blocks, rows_held = [], 0
    except ParseError:
        # the walk ends at an entry it cannot decode: the batches before it are read (then the error)
        if blocks:
            yield _concat(blocks)
        raise
    if blocks:
        yield _concat(blocks)


def _control_types(walker: SegmentWalker, positions, headers, valid) -> pa.Array:
    """``control_type`` of every batch: the first control record's type for valid magic-2 control batches
    (-1 when it cannot be read), null for data batches."""
    n = len(positions)
    control = ((headers["attributes"] & ATTR_CONTROL) != 0) & (headers["magic"] == 2)
    if not control.any():
        return pa.nulls(n, pa.int8())
    types = np.full(n, -1, dtype=np.int8)
    for i in np.flatnonzero(control & valid):
        raw = walker.read(int(positions[i]) + RECORD_BATCH_OVERHEAD, _CONTROL_PEEK)
        types[i] = first_control_type(raw)
    return pa.Array.from_buffers(pa.int8(), n, [_bitmap(control), pa.py_buffer(types)])


_CONTROL_PEEK = 32
"""Bytes read after a control batch header: enough for the first record's varints and 4-byte key."""


def _bitmap(bits: np.ndarray) -> pa.Buffer:
    """An Arrow validity (or boolean) bitmap of ``bits``."""
    return pa.py_buffer(np.packbits(bits.astype(bool), bitorder="little"))


def _column(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """An Arrow array of a numpy column, converted to ``type_`` from its buffer (no Python objects, and
    none of ``pa.array``'s input sniffing, which imports pandas when it is installed)."""
    if pa.types.is_boolean(type_):
        return pa.Array.from_buffers(type_, len(values), [None, _bitmap(values)])
    native = np.ascontiguousarray(values, dtype=_NUMPY_TYPES[type_])
    return pa.Array.from_buffers(type_, len(native), [None, pa.py_buffer(native)])


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
}


def _key_columns(task: PartitionTask, n: int) -> list[pa.Array]:
    """The ``rows._KEY`` columns of ``n`` rows of one replica."""
    return [
        rows.repeat_string(task.cluster, n),
        rows.repeat_string(task.topic, n),
        _column(np.full(n, task.partition), pa.int32()),
        _column(np.full(n, task.broker), pa.int32()),
        rows.repeat_string(task.log_dir, n),
    ]


def _batch_table(
    task: PartitionTask, segment: int, positions, headers, valid, live, control_types: pa.Array
) -> pa.Table:
    n = len(positions)
    base = headers["base_offset"].astype(np.int64)
    attributes = headers["attributes"].astype(np.int16)
    columns = {
        "segment": np.full(n, segment, dtype=np.int64),
        "position": positions,
        "base_offset": base,
        "last_offset": base + headers["last_offset_delta"].astype(np.int64),
        "partition_leader_epoch": headers["partition_leader_epoch"],
        "magic": headers["magic"],
        "crc": headers["crc"],
        "valid": valid,
        "live": live,
        "size": headers["batch_length"].astype(np.int32) + LOG_OVERHEAD,
        "attributes": attributes,
        "max_timestamp": headers["max_timestamp"],
        "producer_id": headers["producer_id"],
        "producer_epoch": headers["producer_epoch"],
        "base_sequence": headers["base_sequence"],
        "records_count": headers["records_count"],
        "is_control": (attributes & ATTR_CONTROL) != 0,
        "is_transactional": (attributes & ATTR_TRANSACTIONAL) != 0,
        "codec": attributes & ATTR_COMPRESSION_MASK,
    }
    arrays = _key_columns(task, n)
    arrays += [_column(columns[f.name], f.type) for f in rows.BATCH if f.name in columns]
    arrays.append(control_types)
    return pa.Table.from_arrays(arrays, schema=rows.BATCH)


@dataclass
class _LogState:
    """Running totals while walking the segments of one replica."""

    recovery: LogRecovery | None = None
    batch_count: int = 0
    record_count: int = 0
    nbytes: int = 0
    first_offset: int | None = None
    max_epoch: int = -1
    invalid: int = 0
    tail_state: str = "end"
    tail_segment: int | None = None
    tail_position: int | None = None
    tail_bytes: int = 0
    tail_message: str | None = None
    # offsets whose batches could not be read (one span over every hole; ``hole_to`` None: to the end)
    hole_from: int | None = None
    hole_to: int | None = None
    hole_open: bool = False
    holes: list[str] = field(default_factory=list)
    # (segment, position, size) of every valid batch, for the coordinators' rows
    valid_batches: list[tuple[int, int, int]] = field(default_factory=list)
    record_errors: list[str] = field(default_factory=list)

    def hole(self, lo: int, hi: int | None, why: str) -> None:
        """Record that offsets ``[lo, hi)`` (``hi`` None: up to the unknown end) could not be read."""
        if hi is not None and hi <= lo:
            return
        self.holes.append(why)
        self.hole_from = lo if self.hole_from is None else min(self.hole_from, lo)
        if hi is None:
            self.hole_open = True
            self.hole_to = None
        elif not self.hole_open:
            self.hole_to = hi if self.hole_to is None else max(self.hole_to, hi)

    def count(self, headers: np.ndarray, valid: np.ndarray) -> None:
        """Add one group of header rows to the totals."""
        self.invalid += int((~valid).sum())
        self.batch_count += len(headers)
        self.record_count += int(headers["records_count"].astype(np.int64).sum())
        self.nbytes += int((headers["batch_length"].astype(np.int64) + LOG_OVERHEAD).sum())
        if self.first_offset is None:
            self.first_offset = int(headers["base_offset"][0])
        self.max_epoch = max(self.max_epoch, int(headers["partition_leader_epoch"].max()))


@dataclass
class _FirstInvalid:
    """The first entry of a segment that recovery's ``ensureValid`` rejects: where it is and why."""

    position: int
    message: str


def _first_invalid(positions, headers, computed, i: int) -> _FirstInvalid:
    stored, crc = int(headers["crc"][i]), int(computed[i])
    message = (
        f"Record is corrupt (stored crc = {stored}, computed crc = {crc})"
        if stored != crc
        else f"Invalid magic {int(headers['magic'][i])} (Kafka knows 0, 1 and 2)"
    )
    return _FirstInvalid(int(positions[i]), message)


def _walk_partition(task: PartitionTask, segments: list[tuple[int, Path]], state: _LogState):
    """Yield ``(kind, table)`` pieces (batch rows, and record rows of compacted partitions) segment by segment
    and group by group, feeding Kafka's recovery (``state.recovery``) and updating ``state`` (tail, totals,
    unreadable spans)."""
    state.recovery = LogRecovery(
        [base for base, _ in segments],
        task.clean_shutdown,
        task.recovery_point,
        task.topic == METADATA_TOPIC,
        task.log_start_checkpoint,
    )
    for i, (base, path) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        yield from _walk_segment(task, base, path, next_base, state)


def _walk_segment(task: PartitionTask, base: int, path: Path, next_base: int | None, state: _LogState):
    """One segment, walked in groups of header rows. A batch's ``live`` is known as soon as it is read:
    recovery keeps the batches before the segment's first invalid entry when it re-reads the segment, all of
    them when it does not, none once an earlier segment was cut (``LogRecovery.add``). The segment's rows are
    held (:class:`_Held`) and given only once it has been read whole: a segment that cannot be read, even
    from its middle (an I/O error), gives no rows and is one unreadable span. A segment Kafka's loader trusts
    is read header by header (:func:`_verifies`)."""
    recovery = state.recovery
    deleted, recovers = recovery.truncation is not None, recovery.recovers(base)
    prefix, first_bad, walker = ValidPrefix(), None, None
    problem = regular_file_problem(path)
    before = _Totals.of(state)
    with _Held() as held:
        try:
            if problem is None:
                verify = _verifies(task, base, path, state)
                walker = SegmentWalker(path, stop_on_invalid=False, verify_crc=verify)
            records = _SegmentRecords(task, path, base, walker, state) if task.compacted and walker else None
            for positions, headers, computed in _groups(walker) if walker is not None else ():
                valid = valid_batches(headers, computed)
                bad = prefix.feed(positions, headers, valid)
                if bad is not None:
                    first_bad = _first_invalid(positions, headers, computed, bad)
                if deleted:
                    live = np.zeros(len(positions), dtype=bool)
                elif recovers and prefix.first_invalid is not None:
                    live = positions < prefix.first_invalid
                else:
                    live = np.ones(len(positions), dtype=bool)
                state.count(headers, valid)
                controls = _control_types(walker, positions, headers, valid)
                held.add("batch", _batch_table(task, base, positions, headers, valid, live, controls))
                for kind, table in records.add(positions, headers, valid) if records is not None else ():
                    held.add(kind, table)
        except OSError as exc:
            problem = exc.strerror or str(exc)
        except ParseError as exc:
            # an entry the walker cannot decode (e.g. a legacy wrapper that is not one): the walk ends there,
            # as in ``scan`` (auditor.observe.segments.collect_segment), and Kafka's reader rejects the entry
            pos = exc.offset if exc.offset is not None else prefix.end
            walker.stop = WalkStop("corrupt", pos, max(0, walker.file_size - pos), exc.message)
        if problem is not None:
            # the whole segment is unknown: [base, next segment) or, for the last one, the end of the log
            before.restore(state)
            state.hole(base, next_base, f"{path.name}: {problem}")
            recovery.add(SegmentSummary(path.name, base, 0, 0, None, None))
            return
        _end_segment(base, path, next_base, walker, prefix, first_bad, state)
        yield from held.release()


def _verifies(task: PartitionTask, base: int, path: Path, state: _LogState) -> bool:
    """Whether the walk recomputes the CRC of every batch of the segment at ``base``: yes unless Kafka's
    loader trusts it (``LogRecovery.trusts``: below the recovery point of a cleanly shut down log) and finds
    its offset index (``LogSegment.sanityCheck``: a segment without one is recovered at load); always when
    the task asks (``PartitionTask.verify_crc``). A trusted segment is read header by header
    (``SegmentWalker(verify_crc=False)``): its batches are valid, the stored CRC standing for the computed
    one."""
    if task.verify_crc or not state.recovery.trusts(base):
        return True
    return not path.with_suffix(".index").exists()


@dataclass
class _Totals:
    """The parts of :class:`_LogState` a segment's walk adds to, as they were before it: restored when the
    segment fails."""

    counts: tuple
    valid_batches: int
    record_errors: int

    NAMES = ("batch_count", "record_count", "nbytes", "first_offset", "max_epoch", "invalid")

    @classmethod
    def of(cls, state: _LogState) -> _Totals:
        counts = tuple(getattr(state, name) for name in cls.NAMES)
        return cls(counts, len(state.valid_batches), len(state.record_errors))

    def restore(self, state: _LogState) -> None:
        for name, value in zip(self.NAMES, self.counts, strict=True):
            setattr(state, name, value)
        del state.valid_batches[self.valid_batches :]
        del state.record_errors[self.record_errors :]


SEGMENT_HOLD = 8 << 20
"""Bytes of a segment's tables held in memory until the segment has been read whole; past this, they wait in
temporary Arrow files (one per kind), so memory stays bounded whatever the segment's size."""


class _Held:
    """The ``(kind, table)`` pieces of one segment, held until it has been read whole (:meth:`release`);
    dropped, with any temporary files, on exit."""

    def __init__(self) -> None:
        self.tables: list[tuple[str, pa.Table]] = []
        self.nbytes = 0
        self.spill: tempfile.TemporaryDirectory | None = None
        self.files: dict[str, tuple[str, pa.NativeFile, pa.ipc.RecordBatchFileWriter]] = {}

    def add(self, kind: str, table: pa.Table) -> None:
        if self.spill is not None:
            self._write(kind, table)
            return
        self.tables.append((kind, table))
        self.nbytes += table.nbytes
        if self.nbytes > SEGMENT_HOLD:
            self.spill = tempfile.TemporaryDirectory(prefix="kafka-auditor-segment-")
            for held_kind, held in self.tables:
                self._write(held_kind, held)
            self.tables, self.nbytes = [], 0

    def _write(self, kind: str, table: pa.Table) -> None:
        if kind not in self.files:
            path = os.path.join(self.spill.name, f"{kind}.arrow")
            sink = pa.OSFile(path, "wb")
            self.files[kind] = path, sink, pa.ipc.new_file(sink, table.schema)
        self.files[kind][2].write_table(table)

    def release(self) -> Iterator[tuple[str, pa.Table]]:
        """The pieces, in order within each kind (read back one record batch at a time once spilled)."""
        yield from self.tables
        self.tables = []
        while self.files:
            kind, (path, sink, writer) = self.files.popitem()
            writer.close()
            sink.close()
            with pa.OSFile(path, "rb") as source:
                # the system allocator gives the pages back once the writer is done with them
                reader = pa.ipc.open_file(source, memory_pool=pa.system_memory_pool())
                for i in range(reader.num_record_batches):
                    yield kind, pa.Table.from_batches([reader.get_batch(i)])

    def __enter__(self) -> _Held:
        return self

    def __exit__(self, *exc) -> None:
        for _, sink, _writer in self.files.values():
            sink.close()
        if self.spill is not None:
            self.spill.cleanup()


def _end_segment(base, path, next_base, walker, prefix: ValidPrefix, first_bad, state: _LogState) -> None:
    """Recovery's verdict on a walked segment: how the log ends there, and what cannot be read."""
    recovery = state.recovery
    stop = walker.stop
    recovery.add(
        SegmentSummary(
            path.name,
            base,
            walker.file_size,
            prefix.valid_end(stop.position if stop is not None else None),
            prefix.recovered_next_offset,
            prefix.next_offset_raw,
        )
    )
    truncation = recovery.truncation
    if truncation is not None and truncation.base_offset == base:
        state.tail_segment = base
        if first_bad is not None:
            state.tail_state = "corrupt"
            state.tail_position = first_bad.position
            state.tail_bytes = walker.file_size - first_bad.position
            state.tail_message = first_bad.message
        else:
            state.tail_state = stop.reason
            state.tail_position = stop.position
            state.tail_bytes = stop.trailing_bytes
            state.tail_message = stop.message
    elif truncation is None and stop is not None and not stop.clean and state.tail_segment is None:
        state.tail_state = stop.reason
        state.tail_segment = base
        state.tail_position = stop.position
        state.tail_bytes = stop.trailing_bytes
        state.tail_message = stop.message
    if next_base is not None and stop is not None and not stop.clean:
        # a segment that is not the last stops early: what lies between its valid prefix and the next
        # segment cannot be read (recovery would cut here; without recovery Kafka serves it as is)
        state.hole(
            prefix.next_offset_raw if prefix.next_offset_raw is not None else base,
            next_base,
            f"{path.name}: {stop.reason} at byte {stop.position}"
            + (f" ({stop.message})" if stop.message else ""),
        )


# ------------------------------------------------------------------------------------------------ records

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


class _SegmentRecords:
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
    arrays = _key_columns(task, n) + [_column(c, pa.int64()) for c in cols]
    arrays += [_column(control, pa.bool_()), _column(size, pa.int32())]
    return pa.Table.from_arrays(arrays, schema=rows.RECORD)


# ------------------------------------------------------------------------------------------------ epochs


def _epochs(task: PartitionTask, part_dir: Path) -> tuple[list[tuple[int, int]], int, str | None]:
    file = part_dir / "leader-epoch-checkpoint"
    if not file.is_file():
        return [], 0, None
    try:
        normalized = parse_leader_epoch_checkpoint(read_small(file), str(file)).normalized()
    except (ParseError, OSError) as exc:
        return [], 0, f"leader-epoch-checkpoint: {exc}"
    return normalized.entries, len(normalized.dropped), None


def _epoch_table(task: PartitionTask, entries: list[tuple[int, int]]) -> pa.Table:
    n = len(entries)
    return _small_table(
        {
            "cluster": [task.cluster] * n,
            "topic": [task.topic] * n,
            "partition": [task.partition] * n,
            "broker": [task.broker] * n,
            "log_dir": [task.log_dir] * n,
            "epoch": [e for e, _ in entries],
            "start_offset": [s for _, s in entries],
            "ordinal": list(range(n)),
        },
        rows.EPOCH,
    )


def _small_table(columns: dict[str, list], schema: pa.Schema) -> pa.Table:
    """A small table of Python values, built from buffers like the batch rows (``pa.array`` imports pandas
    when it is installed, a third of a second); values that do not fit go through ``from_pydict``, which
    rejects them."""
    arrays = [_small_array(columns[f.name], f.type) for f in schema]
    if any(a is None for a in arrays):
        return pa.Table.from_pydict(columns, schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def _small_array(values: list, type_: pa.DataType) -> pa.Array | None:
    """An array of ``values`` (None: null) of ``type_`` (string, bool or integer), None when one does not
    fit it."""
    n = len(values)
    valid = np.array([v is not None for v in values], dtype=bool)
    mask = None if valid.all() else _bitmap(valid)
    present = [v for v in values if v is not None]
    if pa.types.is_string(type_):
        if not all(type(v) is str for v in present):
            return None
        try:
            data = [v.encode() if v is not None else b"" for v in values]
        except UnicodeEncodeError:
            return None
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    if pa.types.is_boolean(type_):
        if not all(type(v) is bool for v in present):
            return None
        return pa.Array.from_buffers(type_, n, [mask, _bitmap(np.array([bool(v) for v in values]))])
    dtype = _NUMPY_TYPES.get(type_)
    if dtype is None or not all(type(v) is int for v in present):
        return None
    bounds = np.iinfo(dtype)
    if not all(bounds.min <= v <= bounds.max for v in present):
        return None
    native = np.array([v if v is not None else 0 for v in values], dtype=dtype)
    return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(native)])


# -------------------------------------------------------------------------------------------- one partition


def extract_partition(task: PartitionTask) -> Iterator[tuple[str, pa.Table]]:
    """``(kind, table)`` pieces for one partition directory: batches segment by segment, then the epoch
    entries, record rows (compacted partitions), metadata rows (``__cluster_metadata``) and the replica row.
    """
    part_dir = Path(task.log_dir) / task.dir_name
    errors: list[str] = []
    state = _LogState()
    segments: list[tuple[int, Path]] = []
    live = task.dir_kind == "live"
    try:
        segments = segment_logs(part_dir)
        for piece in _walk_partition(task, segments, state):
            if live:  # a -future, -delete or -stray log: only its replica row (never compared)
                yield piece
    except OSError as exc:
        # the partition directory cannot be listed: nothing of the log is known
        state.hole(task.log_start_checkpoint or 0, None, f"{task.dir_name}: {exc.strerror or exc}")
    recovery = state.recovery
    leo = recovery.leo if recovery is not None else (task.log_start_checkpoint or 0)
    leo_on_disk = recovery.leo_on_disk if recovery is not None else leo
    entries, dropped, epoch_error = _epochs(task, part_dir)
    if epoch_error:
        errors.append(epoch_error)
    if entries and live:
        yield "epoch", _epoch_table(task, entries)
    has_records = task.compacted and live
    errors.extend(state.record_errors[:5])
    if task.topic == OFFSETS_TOPIC and live:
        table = offset_commit_rows(
            task, part_dir, state.valid_batches, recovery.truncation if recovery is not None else None
        )
        if table.num_rows:
            yield "commit", table
    if task.topic == TRANSACTION_STATE_TOPIC and live:
        table = transaction_state_rows(
            task,
            part_dir,
            state.valid_batches,
            truncation=recovery.truncation if recovery is not None else None,
            errors=errors,
        )
        if table.num_rows:
            yield "txn_state", table
    if task.topic == METADATA_TOPIC and live:
        try:
            yield "metadata", extract_metadata(task.log_dir, task.broker, task.cluster)
        except (ParseError, OSError) as exc:
            errors.append(f"metadata: {exc}")
    topic_id = None
    pm = part_dir / "partition.metadata"
    if pm.is_file():
        try:
            topic_id = parse_partition_metadata(read_small(pm), str(pm)).topic_id
        except (ParseError, OSError) as exc:
            errors.append(f"partition.metadata: {exc}")
    first_base = segments[0][0] if segments else None
    replica = {
        "cluster": task.cluster,
        "topic": task.topic,
        "partition": task.partition,
        "broker": task.broker,
        "log_dir": task.log_dir,
        "topic_id": topic_id,
        "hw": task.hw,
        "recovery_point": task.recovery_point,
        "log_start_checkpoint": task.log_start_checkpoint,
        "log_start": log_start_offset(task.log_start_checkpoint, first_base),
        "cleaner_offset": task.cleaner_offset,
        "leo": leo,
        "leo_on_disk": leo_on_disk,
        "clean_shutdown": task.clean_shutdown,
        "compacted": task.compacted,
        "has_records": has_records,
        "segment_count": len(segments),
        "first_segment": first_base,
        "last_segment": segments[-1][0] if segments else None,
        "batch_count": state.batch_count,
        "record_count": state.record_count,
        "bytes": state.nbytes,
        "first_offset": state.first_offset,
        "max_batch_epoch": state.max_epoch,
        "latest_epoch": entries[-1][0] if entries else None,
        "epoch_entries": len(entries),
        "epoch_dropped": dropped,
        "invalid_batches": state.invalid,
        "tail_state": state.tail_state,
        "tail_segment": state.tail_segment,
        "tail_position": state.tail_position,
        "tail_bytes": state.tail_bytes,
        "tail_message": state.tail_message,
        "recovered": recovery is not None and recovery.truncation is not None,
        "error": "; ".join(errors) if errors else None,
        "unreadable_from": state.hole_from,
        "unreadable_to": state.hole_to,
        "unreadable": "; ".join(state.holes) if state.holes else None,
        "dir_name": task.dir_name,
        "dir_kind": task.dir_kind,
        "directory_id": task.directory_id,
    }
    yield "replica", _small_table({name: [value] for name, value in replica.items()}, rows.REPLICA)


# ------------------------------------------------------------------------------------------------ one log dir


def metadata_for(info: LogDirInfo, cluster: str) -> pa.Table | None:
    if not info.has_metadata or info.node is None:
        return None
    try:
        return extract_metadata(info.path, info.node, cluster)
    except (ParseError, OSError):
        return None


def extract_log_dir(path: str | os.PathLike, out: str | os.PathLike, cluster: str | None = None) -> dict:
    """Write the extract directory ``out`` (:mod:`auditor.observe.extract_files`: one Parquet file per
    table kind) of a broker log directory, never partially; return the rows per kind and the ``errors``."""
    info = read_log_dir(path)
    if info.node is None:
        why = info.errors[0] if info.errors else "no node.id or broker.id in meta.properties"
        raise ParseError(f"not a broker log directory: {why}", path=str(path))
    label = cluster if cluster is not None else (info.cluster_id or "")
    meta = metadata_for(info, label)
    compacted = {label: compacted_topics(meta)} if meta is not None else None
    tasks = plan_tasks([info], [label], compacted)
    counts = dict.fromkeys(rows.TABLES, 0)
    errors = list(info.errors)
    with ExtractWriter(out) as writer:
        for task in tasks:
            for kind, table in extract_partition(task):
                counts[kind] += table.num_rows
                writer.add(kind, table)
                if kind == "replica":
                    errors += [
                        f"{task.dir_name}: incomplete from offset {r['unreadable_from']}: {r['unreadable']}"
                        for r in table.select(["unreadable_from", "unreadable"]).to_pylist()
                        if r["unreadable_from"] is not None
                    ]
    counts["errors"] = errors
    return counts


def extract_tables(path: str | os.PathLike, cluster: str | None = None) -> dict[str, pa.Table]:
    """All tables of one log directory in memory (no Parquet, no Spark)."""
    info = read_log_dir(path)
    label = cluster if cluster is not None else (info.cluster_id or "")
    meta = metadata_for(info, label)
    compacted = {label: compacted_topics(meta)} if meta is not None else None
    parts: dict[str, list[pa.Table]] = {kind: [] for kind in rows.TABLES}
    for task in plan_tasks([info], [label], compacted):
        for kind, table in extract_partition(task):
            parts[kind].append(table)
    return {
        kind: pa.concat_tables(tables) if tables else rows.TABLES[kind].empty_table()
        for kind, tables in parts.items()
    }
