"""Segment indexes: offset index ``.index``, time index ``.timeindex``, transaction index ``.txnindex``.

Spec §7 (offset index), §8 (time index), §9 (transaction index). None of these files has a header or a
checksum. Offset and time indexes are preallocated (``segment.index.bytes``) while a segment is active
and trimmed to their real entries when it is rolled or the log is closed cleanly, so after a crash the real
entries are a prefix followed by zero slots; the readers below report that prefix with the §7.3/§8.3 rules,
plus the shape of the tail, and never fail on a bad tail (that is evidence for the auditor, not a decoding
error).
Only the transaction index has a check that makes Kafka reject a file while reading it (the version byte).

Fast path: slots are decoded with a ``struct.Struct`` derived from the Construct schema (``struct_of``);
``tests/parsers/test_indexes.py`` proves both read the same values.

Large files: :class:`IndexScan` (offset and time indexes) and :func:`iter_txn_index` read a file in windows
of :data:`INDEX_WINDOW` bytes with numpy (no per-slot Python loop), so memory does not grow with the file, and
skip the holes of a sparse (preallocated) file with ``SEEK_DATA``. The in-memory readers above are the
reference they are tested against.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import construct as cs
import numpy as np

from parsers.errors import ParseError
from parsers.primitives import struct_of

# ------------------------------------------------------------------------------------------- schemas

OffsetIndexEntry = cs.Struct(
    "relative_offset" / cs.Int32sb,  # absolute offset - base offset of the segment
    "position" / cs.Int32sb,  # byte position of the start of a batch in the .log
)
"""§7.1: one 8-byte offset index slot."""

TimeIndexEntry = cs.Struct(
    "timestamp" / cs.Int64sb,  # largest timestamp seen so far in the segment
    "relative_offset" / cs.Int32sb,  # offset of the batch holding it, relative to the base offset
)
"""§8.1: one 12-byte time index slot."""

AbortedTxn = cs.Struct(
    "version" / cs.Int16sb,  # 0; Kafka reads only the high byte
    "producer_id" / cs.Int64sb,
    "first_offset" / cs.Int64sb,  # first offset of the aborted transaction in this partition
    "last_offset" / cs.Int64sb,  # offset of the ABORT marker
    "last_stable_offset" / cs.Int64sb,  # LSO when the abort completed
)
"""§9.1: one 34-byte aborted transaction entry."""

OFFSET_INDEX_ENTRY_SIZE = OffsetIndexEntry.sizeof()  # 8
TIME_INDEX_ENTRY_SIZE = TimeIndexEntry.sizeof()  # 12
ABORTED_TXN_SIZE = AbortedTxn.sizeof()  # 34
ABORTED_TXN_CURRENT_VERSION = 0


_OFFSET_SLOT = struct_of(OffsetIndexEntry)
_TIME_SLOT = struct_of(TimeIndexEntry)
_ABORTED_TXN = struct_of(AbortedTxn)

# ------------------------------------------------------------------------------------------- results


@dataclass
class OffsetIndex:
    """A decoded ``.index`` file.

    ``entries`` are the real (absolute offset, position) pairs per §7.3; ``slots``/``trailing_bytes`` are
    what Kafka sees when it opens the file (``entries = length / 8``); ``padding_slots`` counts all-zero slots
    after the real prefix and ``garbage_after_padding`` is the file position of the first non-zero byte after
    it (corruption when not None). ``preallocated`` means the file has a zero tail, i.e. it was still at its
    preallocated size (active segment, or a crash).
    """

    base_offset: int
    size: int
    entries: list[tuple[int, int]]
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    preallocated: bool


@dataclass
class TimeIndex:
    """A decoded ``.timeindex``; ``entries`` are (timestamp, absolute offset) pairs (§8.3 prefix rule)."""

    base_offset: int
    size: int
    entries: list[tuple[int, int]]
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    preallocated: bool


@dataclass
class AbortedTxnEntry:
    """One ``.txnindex`` entry: an aborted transaction whose ABORT marker is in this segment.

    ``version`` is what Kafka sees (the signed high byte of the stored int16), ``raw_version`` the int16.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0
    raw_version: int = 0

    def kafka_str(self) -> str:
        """Kafka's ``AbortedTxn.toString``."""
        return (
            f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
            f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
            f"lastStableOffset={self.last_stable_offset})"
        )


@dataclass
class TxnIndex:
    """A decoded ``.txnindex`` file. ``trailing_bytes`` is a partial entry that Kafka silently ignores."""

    size: int
    entries: list[AbortedTxnEntry] = field(default_factory=list)
    trailing_bytes: int = 0


# ------------------------------------------------------------------------------------------- helpers


def _tail_shape(data: bytes | memoryview, prefix_slots: int, slots: int, size: int) -> tuple[int, int | None]:
    """(all-zero slots after the real prefix, file position of the first non-zero byte after it), vectorised
    over the whole buffer (numpy, no per-slot Python loop); :class:`IndexScan` computes it in windows."""
    raw = np.frombuffer(data, dtype=np.uint8)
    start = prefix_slots * size
    tail = raw[start:]
    if not tail.any():
        return slots - prefix_slots, None
    body = raw[start : slots * size].reshape(-1, size)
    padding = int(np.count_nonzero(~body.any(axis=1))) if len(body) else 0
    return padding, start + int(np.argmax(tail != 0))


# ------------------------------------------------------------------------------------------- readers


def read_offset_index(data: bytes | memoryview, base_offset: int) -> OffsetIndex:
    """Decode an offset index; never fails (every byte string is a sequence of slots plus a remainder).

    Real prefix (§7.3, DumpLogSegments' heuristic): stop at the first slot ``i > 0`` whose relative offset and
    position are both 0; a file longer than 8 bytes whose slot 0 is ``(0, 0)`` is all padding (an empty
    preallocated index). A lone ``(0, 0)`` in an 8-byte file is kept as an entry.
    """
    size = len(data)
    slots = size // OFFSET_INDEX_ENTRY_SIZE
    entries: list[tuple[int, int]] = []
    usable = memoryview(data)[: slots * OFFSET_INDEX_ENTRY_SIZE]
    for i, (rel, pos) in enumerate(_OFFSET_SLOT.iter_unpack(usable)):
        if rel == 0 and pos == 0 and (i > 0 or size > OFFSET_INDEX_ENTRY_SIZE):
            break
        entries.append((base_offset + rel, pos))
    padding, garbage = _tail_shape(data, len(entries), slots, OFFSET_INDEX_ENTRY_SIZE)
    return OffsetIndex(
        base_offset=base_offset,
        size=size,
        entries=entries,
        slots=slots,
        trailing_bytes=size % OFFSET_INDEX_ENTRY_SIZE,
        padding_slots=padding,
        garbage_after_padding=garbage,
        preallocated=padding > 0,
    )


def read_time_index(data: bytes | memoryview, base_offset: int) -> TimeIndex:
    """Decode a time index; never fails.

    Real prefix (§8.3): stop at the first slot ``i > 0`` whose relative offset is 0 (DumpLogSegments'
    heuristic) or whose timestamp is 0 or not greater than the previous entry's (``maybeAppend`` only ever
    writes strictly increasing timestamps). A file longer than 12 bytes whose slot 0 is all zero is all
    padding. Slots cut off by the rule that are not zero show up in ``garbage_after_padding``.
    """
    size = len(data)
    slots = size // TIME_INDEX_ENTRY_SIZE
    entries: list[tuple[int, int]] = []
    usable = memoryview(data)[: slots * TIME_INDEX_ENTRY_SIZE]
    previous: int | None = None
    for i, (timestamp, rel) in enumerate(_TIME_SLOT.iter_unpack(usable)):
        if i == 0:
            if timestamp == 0 and rel == 0 and size > TIME_INDEX_ENTRY_SIZE:
                break
        elif rel == 0 or timestamp == 0 or (previous is not None and timestamp <= previous):
            break
        entries.append((timestamp, base_offset + rel))
        previous = timestamp
    padding, garbage = _tail_shape(data, len(entries), slots, TIME_INDEX_ENTRY_SIZE)
    return TimeIndex(
        base_offset=base_offset,
        size=size,
        entries=entries,
        slots=slots,
        trailing_bytes=size % TIME_INDEX_ENTRY_SIZE,
        padding_slots=padding,
        garbage_after_padding=garbage,
        preallocated=padding > 0,
    )


def read_txn_index(data: bytes | memoryview, path: str | None = None) -> TxnIndex:
    """Decode a transaction index the way ``TransactionIndex`` iterates it.

    Only whole 34-byte entries are read; a trailing partial entry is ignored (reported in ``trailing_bytes``).
    Kafka reads the version as the signed *high* byte of the int16 and rejects values above 0 — that is the
    one ParseError here, positioned at the entry.
    """
    size = len(data)
    count = size // ABORTED_TXN_SIZE
    entries: list[AbortedTxnEntry] = []
    usable = memoryview(data)[: count * ABORTED_TXN_SIZE]
    for i, (raw_version, pid, first, last, lso) in enumerate(_ABORTED_TXN.iter_unpack(usable)):
        version = raw_version >> 8  # signed high byte, as ByteBuffer.get(0)
        if version > ABORTED_TXN_CURRENT_VERSION:
            raise ParseError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{path or '<buffer>'}, current version is {ABORTED_TXN_CURRENT_VERSION}",
                path=path,
                offset=i * ABORTED_TXN_SIZE,
            )
        entries.append(AbortedTxnEntry(pid, first, last, lso, version=version, raw_version=raw_version))
    return TxnIndex(size=size, entries=entries, trailing_bytes=size % ABORTED_TXN_SIZE)


# ------------------------------------------------------------------------------------------- windowed scan

INDEX_WINDOW = 1 << 20
"""Bytes of an index read at a time by :class:`IndexScan` (rounded down to whole slots)."""

_NUMPY_CODES = {"l": "i4", "i": "i4", "q": "i8", "h": "i2", "b": "i1"}


def _dtype(schema: cs.Struct) -> np.dtype:
    """numpy layout of a Construct struct of big-endian integer fields (derived, not restated)."""
    return np.dtype([(sc.name, ">" + _NUMPY_CODES[sc.subcon.fmtstr.lstrip("<>=!")]) for sc in schema.subcons])


OFFSET_INDEX_DTYPE = _dtype(OffsetIndexEntry)
TIME_INDEX_DTYPE = _dtype(TimeIndexEntry)


def _offset_cut(table: np.ndarray, first: bool, previous: int | None, size: int) -> np.ndarray:
    """Slots of ``table`` that end the real prefix of an offset index (``read_offset_index``'s rule)."""
    bad = (table["relative_offset"] == 0) & (table["position"] == 0)
    if first:
        bad[0] = bad[0] and size > OFFSET_INDEX_ENTRY_SIZE
    return bad


def _time_cut(table: np.ndarray, first: bool, previous: int | None, size: int) -> np.ndarray:
    """Slots of ``table`` that end the real prefix of a time index (``read_time_index``'s rule);
    ``previous`` is the timestamp of the slot before the table (None at the start of the file)."""
    ts, rel = table["timestamp"], table["relative_offset"]
    bad = (rel == 0) | (ts == 0)
    bad[1:] |= ts[1:] <= ts[:-1]
    if first:
        bad[0] = ts[0] == 0 and rel[0] == 0 and size > TIME_INDEX_ENTRY_SIZE
    elif previous is not None:
        bad[0] |= ts[0] <= previous
    return bad


@dataclass(frozen=True)
class _IndexKind:
    dtype: np.dtype
    cut: Callable[[np.ndarray, bool, int | None, int], np.ndarray]
    carry: str | None  # the column the prefix rule compares with the previous slot


OFFSET_INDEX = _IndexKind(OFFSET_INDEX_DTYPE, _offset_cut, None)
TIME_INDEX = _IndexKind(TIME_INDEX_DTYPE, _time_cut, "timestamp")


@dataclass
class IndexShape:
    """What a whole scan of an offset or time index established (the fields of :class:`OffsetIndex` /
    :class:`TimeIndex` without the entries): ``entries`` is the length of the real prefix; ``first_slot``,
    ``last_slot`` (for Kafka's sanity checks) and ``next_slot`` (the slot right after the real prefix, when
    it is not all zero) are raw slots as tuples in the dtype's field order."""

    size: int
    slots: int
    trailing_bytes: int
    entries: int
    padding_slots: int
    garbage_after_padding: int | None
    first_slot: tuple | None
    last_slot: tuple | None
    next_slot: tuple | None

    @property
    def preallocated(self) -> bool:
        return self.padding_slots > 0


def _next_data(fd: int, size: int) -> Callable[[int], int] | None:
    """``lseek(SEEK_DATA)``: where the next non-hole byte is (``size`` when none); None where unsupported."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return None

    def next_data(pos: int) -> int:
        try:
            return os.lseek(fd, pos, seek_data)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return size
            return pos  # the file system cannot tell: read everything

    return next_data


class IndexScan:
    """A windowed, bounded-memory scan of an offset or time index with the rules of ``read_offset_index`` /
    ``read_time_index`` (spec §7.3, §8.3).

    :meth:`prefix` yields the real entries as structured numpy arrays (``kind.dtype``, raw relative offsets)
    window by window; once it is exhausted :attr:`shape` holds the rest. Memory is one window whatever the
    file size; holes of a sparse file (a preallocated index is often one) are skipped with ``SEEK_DATA``
    and counted as zero slots without being read, so a 1 GiB preallocated index costs a few system calls.
    """

    def __init__(
        self,
        kind: _IndexKind,
        size: int,
        read: Callable[[int, int], bytes | memoryview],
        *,
        next_data: Callable[[int], int] | None = None,
        window: int = INDEX_WINDOW,
    ) -> None:
        self.kind = kind
        self.size = size
        self.read = read
        self.next_data = next_data
        self.width = kind.dtype.itemsize
        self.window = max(self.width, window // self.width * self.width)
        self.shape: IndexShape | None = None

    @classmethod
    def of_bytes(cls, kind: _IndexKind, data: bytes | memoryview, *, window: int = INDEX_WINDOW) -> IndexScan:
        view = memoryview(data).cast("B")
        return cls(kind, len(view), lambda pos, n: view[pos : pos + n], window=window)

    @classmethod
    def of_fd(
        cls, kind: _IndexKind, fd: int, *, size: int | None = None, window: int = INDEX_WINDOW
    ) -> IndexScan:
        """Scan the open file ``fd`` (its first ``size`` bytes; all of it by default) with ``pread``; the
        caller closes it."""
        size = os.fstat(fd).st_size if size is None else size
        read = lambda pos, n: os.pread(fd, n, pos)  # noqa: E731
        return cls(kind, size, read, next_data=_next_data(fd, size), window=window)

    def _slot(self, pos: int) -> tuple | None:
        raw = bytes(self.read(pos, self.width))
        if len(raw) < self.width:
            return None
        return np.frombuffer(raw, dtype=self.kind.dtype)[0].item()

    def prefix(self) -> Iterator[np.ndarray]:
        """The real entries, window by window (structured arrays of raw slots)."""
        kind, size, width = self.kind, self.size, self.width
        slot_end = size // width * width
        pos = entries = padding = 0
        garbage: int | None = None
        in_prefix = True
        previous: int | None = None
        next_slot: tuple | None = None
        while pos < size:
            if self.next_data is not None and size > width and pos < slot_end:
                zero = (min(self.next_data(pos), slot_end) - pos) // width
                if zero > 0:  # a hole: zero slots, and a zero slot always ends the real prefix
                    in_prefix = False
                    padding += zero
                    pos += zero * width
                    continue
            chunk = self.read(pos, min(self.window, size - pos))
            if not len(chunk):
                break  # the file shrank under us: what was read is all there is
            raw = np.frombuffer(chunk, dtype=np.uint8)
            whole = (min(pos + len(raw), slot_end) - pos) // width
            tail_from = whole
            if in_prefix and whole:
                table = raw[: whole * width].view(kind.dtype)
                bad = kind.cut(table, pos == 0, previous, size)
                stop = int(np.argmax(bad)) if bad.any() else whole
                if stop:
                    yield table[:stop]
                entries += stop
                if stop < whole:
                    in_prefix = False
                    tail_from = stop
                    if table[stop : stop + 1].view(np.uint8).any():
                        next_slot = table[stop].item()
                elif kind.carry is not None:
                    previous = int(table[kind.carry][-1])
            elif not in_prefix:
                tail_from = 0
            if not in_prefix and tail_from < whole:
                body = raw[tail_from * width : whole * width]
                if body.any():
                    padding += int(np.count_nonzero(~body.reshape(-1, width).any(axis=1)))
                else:
                    padding += whole - tail_from
            tail = raw[tail_from * width :]  # the tail of this window, with any trailing partial slot
            if garbage is None and len(tail) and tail.any():
                garbage = pos + tail_from * width + int(np.argmax(tail != 0))
            pos += len(raw)
        slots = size // width
        self.shape = IndexShape(
            size=size,
            slots=slots,
            trailing_bytes=size % width,
            entries=entries,
            padding_slots=padding,
            garbage_after_padding=garbage,
            first_slot=self._slot(0) if slots else None,
            last_slot=self._slot((slots - 1) * width) if slots else None,
            next_slot=next_slot,
        )

    def run(self, max_entries: int | None = None) -> tuple[IndexShape, np.ndarray]:
        """Scan the whole file; return its shape and at most ``max_entries`` of the first real entries."""
        kept: list[np.ndarray] = []
        room = max_entries
        for table in self.prefix():
            if room is None:
                kept.append(table.copy())
            elif room > 0:
                kept.append(table[:room].copy())
                room -= len(kept[-1])
        assert self.shape is not None
        entries = np.concatenate(kept) if kept else np.zeros(0, dtype=self.kind.dtype)
        return self.shape, entries


ABORTED_TXN_DTYPE = _dtype(AbortedTxn)


def txn_entries(table: np.ndarray) -> list[AbortedTxnEntry]:
    """:class:`AbortedTxnEntry` objects for a structured array of ``.txnindex`` entries."""
    return [
        AbortedTxnEntry(pid, first, last, lso, version=raw >> 8, raw_version=raw)
        for raw, pid, first, last, lso in table.tolist()
    ]


def iter_txn_index(
    read: Callable[[int, int], bytes | memoryview],
    size: int,
    path: str | None = None,
    *,
    window: int = INDEX_WINDOW,
) -> Iterator[np.ndarray]:
    """The whole entries of a transaction index as structured arrays (``ABORTED_TXN_DTYPE``), window by
    window, with :func:`read_txn_index`'s one check: an entry whose version (the signed high byte of the
    int16) is above 0 raises ParseError at that entry, after the good entries before it were yielded."""
    width = ABORTED_TXN_SIZE
    step = max(width, window // width * width)
    end = size // width * width
    pos = 0
    while pos < end:
        chunk = read(pos, min(step, end - pos))
        whole = len(chunk) // width
        if not whole:
            return
        table = np.frombuffer(chunk, dtype=np.uint8)[: whole * width].view(ABORTED_TXN_DTYPE)
        bad = np.flatnonzero((table["version"] >> 8) > ABORTED_TXN_CURRENT_VERSION)
        if len(bad):
            i = int(bad[0])
            if i:
                yield table[:i]
            version = int(table["version"][i]) >> 8
            raise ParseError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{path or '<buffer>'}, current version is {ABORTED_TXN_CURRENT_VERSION}",
                path=path,
                offset=pos + i * width,
            )
        yield table
        pos += whole * width


# ------------------------------------------------------------------------------------------- Kafka's checks


def _offset_sanity(size: int, last_slot: tuple | None, base_offset: int, path: str) -> str | None:
    if last_slot is not None:
        last_offset = base_offset + last_slot[0]
        if last_offset < base_offset:
            return (
                f"Corrupt index found, index file {path} has non-zero size but the last offset is "
                f"{last_offset} which is less than the base offset {base_offset}"
            )
    if size % OFFSET_INDEX_ENTRY_SIZE:
        return (
            f"Index file {path} is corrupt, found {size} bytes which is neither positive nor a multiple of "
            f"{OFFSET_INDEX_ENTRY_SIZE}"
        )
    return None


def _time_sanity(
    size: int, first_slot: tuple | None, last_slot: tuple | None, base_offset: int, path: str
) -> str | None:
    if first_slot is not None and last_slot is not None:
        first_ts = first_slot[0]
        last_ts, last_rel = last_slot
        if last_ts < first_ts:
            return (
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                f"timestamp is {last_ts} which is less than the first timestamp {first_ts}"
            )
        last_offset = base_offset + last_rel
        if last_offset < base_offset:
            return (
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last offset "
                f"is {last_offset} which is less than the first offset {base_offset}"
            )
    if size % TIME_INDEX_ENTRY_SIZE:
        return (
            f"Time index file {path} is corrupt, found {size} bytes which is neither positive nor a multiple "
            f"of {TIME_INDEX_ENTRY_SIZE}"
        )
    return None


def sanity_check_offset_index(data: bytes | memoryview, base_offset: int, path: str) -> str | None:
    """``OffsetIndex.sanityCheck`` (Kafka 4.0 text) on a pre-existing file: the CorruptIndexException message.

    Kafka treats every slot as an entry (``entries = length / 8``), so only a negative relative offset in the
    last slot or a bad length fail. Brokers stopped running this at startup in 2.3 (KAFKA-7283).
    """
    slots = len(data) // OFFSET_INDEX_ENTRY_SIZE
    last = _OFFSET_SLOT.unpack_from(data, (slots - 1) * OFFSET_INDEX_ENTRY_SIZE) if slots else None
    return _offset_sanity(len(data), last, base_offset, path)


def sanity_check_time_index(data: bytes | memoryview, base_offset: int, path: str) -> str | None:
    """``TimeIndex.sanityCheck`` (Kafka 4.0 text): fails on a crashed preallocated index with real entries,
    whose zero last slot has a timestamp (0) below the first one."""
    slots = len(data) // TIME_INDEX_ENTRY_SIZE
    first = _TIME_SLOT.unpack_from(data, 0) if slots else None
    last = _TIME_SLOT.unpack_from(data, (slots - 1) * TIME_INDEX_ENTRY_SIZE) if slots else None
    return _time_sanity(len(data), first, last, base_offset, path)


def sanity_check_index_shape(shape: IndexShape, kind: _IndexKind, base_offset: int, path: str) -> str | None:
    """Kafka's sanity check of an offset (``kind`` :data:`OFFSET_INDEX`) or time index from a scan's shape
    (first and last slot, size): the same message as :func:`sanity_check_offset_index` /
    :func:`sanity_check_time_index` without holding the file."""
    if kind is OFFSET_INDEX:
        return _offset_sanity(shape.size, shape.last_slot, base_offset, path)
    return _time_sanity(shape.size, shape.first_slot, shape.last_slot, base_offset, path)


def sanity_check_txn_index(index: TxnIndex, base_offset: int, path: str) -> str | None:
    """``TransactionIndex.sanityCheck``, the only index check a 4.0 broker still runs at load: every entry's
    last offset must be at least the segment's base offset (else the segment is recovered)."""
    for entry in index.entries:
        if entry.last_offset < base_offset:
            return (
                f"Last offset of aborted transaction {entry.kafka_str()} in index {path} is less than start "
                f"offset {base_offset}"
            )
    return None


# ------------------------------------------------------------------------------------------- builders


def _pad(body: bytes, preallocate_to: int | None, entry_size: int) -> bytes:
    if preallocate_to is None:
        return body
    length = (preallocate_to // entry_size) * entry_size
    if length < len(body):
        raise ValueError(f"{len(body)} bytes of entries do not fit in a {length}-byte index")
    return body + bytes(length - len(body))


def _build(schema: cs.Struct, items: list[dict]) -> bytes:
    try:
        return cs.Array(len(items), schema).build(items)
    except cs.ConstructError as exc:
        raise ValueError(str(exc)) from None


def build_offset_index(
    entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int | None = None
) -> bytes:
    """Bytes of an offset index holding (absolute offset, position) ``entries``.

    ``preallocate_to`` (e.g. ``segment.index.bytes``) zero-pads like an active segment's index: the file is
    ``floor(preallocate_to / 8) * 8`` bytes.
    """
    items = [{"relative_offset": offset - base_offset, "position": pos} for offset, pos in entries]
    return _pad(_build(OffsetIndexEntry, items), preallocate_to, OFFSET_INDEX_ENTRY_SIZE)


def build_time_index(
    entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int | None = None
) -> bytes:
    """Bytes of a time index holding (timestamp, absolute offset) ``entries`` (optionally preallocated)."""
    items = [{"timestamp": ts, "relative_offset": offset - base_offset} for ts, offset in entries]
    return _pad(_build(TimeIndexEntry, items), preallocate_to, TIME_INDEX_ENTRY_SIZE)


def build_txn_index(entries: Iterable[AbortedTxnEntry | tuple[int, int, int, int]]) -> bytes:
    """Bytes of a transaction index; tuples are (producer id, first, last and last stable offset)."""
    items = []
    for entry in entries:
        if isinstance(entry, AbortedTxnEntry):
            raw = entry.raw_version or (entry.version << 8)
            entry = (entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset, raw)
        else:
            entry = (*entry, ABORTED_TXN_CURRENT_VERSION)
        pid, first, last, lso, version = entry
        items.append(
            {
                "version": version,
                "producer_id": pid,
                "first_offset": first,
                "last_offset": last,
                "last_stable_offset": lso,
            }
        )
    return _build(AbortedTxn, items)
