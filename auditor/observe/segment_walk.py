"""The walk of one replica's segments, as Kafka's loader reads them (``auditor.kafka.recovery``).

Batch headers come from the columnar walk (``SegmentWalker.header_blocks``): tables of at most
:data:`GROUP_ROWS` rows as the walk goes, so memory does not grow with a segment or a log. The batches Kafka's
loader trusts (below the recovery point of a cleanly shut down log, in a segment not recovered at load:
``LogRecovery.trusted_below_in``) are walked header by header, taken
as valid without their CRC being computed and large ones never read (``SegmentWalker(verify_crc=False,
trusted_below=...)``); every other batch, and every batch of a task with ``verify_crc``, is validated.

What cannot be read is never guessed: a segment that is not a regular file (opened only through
``parsers.files``: a FIFO or device is never opened), that raises an OS error or whose entries do not parse
is skipped, and a segment that is not the last and stops early leaves the rest of its offsets unread: one
span over these holes (:meth:`LogState.hole`). Kafka itself loads only regular files as segments
(``LogLoader.loadSegmentFiles``: ``file.isFile``) and takes the log directory offline on an I/O error
(KIP-112).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.recovery import LogRecovery, SegmentSummary
from auditor.kafka.topics import METADATA_TOPIC
from auditor.layout.inventory import SegmentListing
from auditor.layout.tasks import PartitionTask
from auditor.observe.arrow_build import batch_table, bitmap
from auditor.observe.indexes import txn_index_corrupt
from auditor.observe.record_rows import SegmentRecords
from auditor.observe.spill import Held
from parsers.control import first_control_type
from parsers.dirfiles import segment_file_name
from parsers.errors import ParseError
from parsers.files import regular_file_problem
from parsers.indexes import batch_positions
from parsers.record_batch import (
    ATTR_CONTROL,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)
from parsers.segment import HeaderBlock, SegmentWalker, WalkStop

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
    return pa.Array.from_buffers(pa.int8(), n, [bitmap(control), pa.py_buffer(types)])


_CONTROL_PEEK = 32
"""Bytes read after a control batch header: enough for the first record's varints and 4-byte key."""


@dataclass
class LogState:
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


def walk_partition(task: PartitionTask, listing: SegmentListing, state: LogState):
    """Yield ``(kind, table)`` pieces (batch rows, and record rows of compacted partitions) segment by segment
    and group by group, feeding Kafka's recovery (``state.recovery``, told by the listing which segments lack
    their offset index, and which have a ``.txnindex`` that fails its sanity check) and updating ``state``
    (tail, totals, unreadable spans)."""
    segments = listing.logs
    state.recovery = LogRecovery(
        [base for base, _ in segments],
        task.clean_shutdown,
        task.recovery_point,
        task.topic == METADATA_TOPIC,
        task.log_start_checkpoint,
        listing.unindexed,
        txn_index_corrupt(listing.logs[0][1].parent, listing.txn_indexed) if listing.txn_indexed else (),
    )
    for i, (base, path) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        yield from _walk_segment(task, base, path, next_base, state)


def _walk_segment(task: PartitionTask, base: int, path: Path, next_base: int | None, state: LogState):
    """One segment, walked in groups of header rows. A batch's ``live`` is known as soon as it is read:
    recovery keeps the batches before the segment's first invalid entry when it re-reads the segment (from
    the recovery point, or at load: ``LogRecovery.recovers_at_load``), all of them when it does not, none once
    ``recoverLog`` cut an earlier segment (``LogRecovery.add``). The segment's rows are held (:class:`Held`)
    and given only once it has been read whole: a segment that cannot be read, even from its middle (an I/O
    error), gives no rows and is one unreadable span. A segment Kafka's loader trusts is read header by
    header (:func:`_trusted_below`)."""
    recovery = state.recovery
    deleted, recovers = recovery.truncation is not None, recovery.recovers(base)
    prefix, first_bad, walker = ValidPrefix(), None, None
    problem = regular_file_problem(path)
    before = _Totals.of(state)
    with Held() as held:
        try:
            if problem is None:
                trusted = _trusted_below(task, base, state)
                walker = SegmentWalker(
                    path,
                    stop_on_invalid=False,
                    verify_crc=trusted is None,
                    trusted_below=trusted,
                    anchors=None if trusted is None else _anchors(base, path),
                )
            records = SegmentRecords(task, path, base, walker, state) if task.compacted and walker else None
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
                held.add("batch", batch_table(task, base, positions, headers, valid, live, controls))
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


def _trusted_below(task: PartitionTask, base: int, state: LogState) -> int | None:
    """The offset below which the walk takes the batches of the segment at ``base`` as valid without
    computing their CRC (a batch whose last offset is below it), None when it recomputes every CRC: what
    Kafka's loader trusts (``LogRecovery.trusted_below_in``: below the recovery point of a cleanly shut
    down log, in a segment not recovered at load: ``LogRecovery.recovers_at_load``);
    never when the task asks (``PartitionTask.verify_crc``). Trusted batches are read header by header:
    they are valid, the stored CRC standing for the computed one."""
    if task.verify_crc:
        return None
    trusted = state.recovery.trusted_below_in(base)
    if trusted is None or trusted <= base:
        return None
    return trusted


def _anchors(base: int, path: Path) -> np.ndarray:
    """The batch positions of a trusted segment's offset index (the file ``LogSegment`` opens:
    ``LogFileUtils.offsetIndexFile``): where its header-only walk may chain from
    (``SegmentWalker(anchors=...)``: hints, each proven by the chain before it landing on it)."""
    return batch_positions(path.parent / segment_file_name(base, ".index"), path.stat().st_size)


@dataclass
class _Totals:
    """The parts of :class:`LogState` a segment's walk adds to, as they were before it: restored when the
    segment fails."""

    counts: tuple
    valid_batches: int
    record_errors: int

    NAMES = ("batch_count", "record_count", "nbytes", "first_offset", "max_epoch", "invalid")

    @classmethod
    def of(cls, state: LogState) -> _Totals:
        counts = tuple(getattr(state, name) for name in cls.NAMES)
        return cls(counts, len(state.valid_batches), len(state.record_errors))

    def restore(self, state: LogState) -> None:
        for name, value in zip(self.NAMES, self.counts, strict=True):
            setattr(state, name, value)
        del state.valid_batches[self.valid_batches :]
        del state.record_errors[self.record_errors :]


def _end_segment(base, path, next_base, walker, prefix: ValidPrefix, first_bad, state: LogState) -> None:
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
    cut_here = truncation is not None and truncation.base_offset == base
    if cut_here or (base in recovery.load_truncations and state.tail_segment is None):
        # where the loaded log's valid bytes first end: a recoverLog cut, else the first cut at load
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
