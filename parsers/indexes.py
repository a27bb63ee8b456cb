"""Segment indexes: offset index ``.index``, time index ``.timeindex``, transaction index ``.txnindex``.

Spec §7 (offset index), §8 (time index), §9 (transaction index). None of these files has a header or a
checksum. Offset and time indexes are preallocated (``segment.index.bytes``) while a segment is active
and trimmed to their real entries when it is rolled or the log is closed cleanly, so after a crash the real
entries are a prefix followed by zero slots; the readers below report that prefix with the §7.3/§8.3 rules,
plus the shape of the tail, and never fail on a bad tail (that is evidence for the auditor, not a decoding
error).
Only the transaction index has a check that makes Kafka reject a file while reading it (the version byte).

One declaration per index kind (:class:`IndexKind`: :data:`OFFSET_INDEX`, :data:`TIME_INDEX`) holds the
Construct schema of a slot and the §7.3/§8.3 prefix rule; everything else is derived from the schema: the
``struct.Struct`` of the in-memory readers (``struct_of``), the numpy dtype of the windowed scan and of the
columnar reader (:func:`dtype_of`), the slot size, the entry's field names and which field is the relative
offset made absolute. ``tests/parsers/test_indexes.py`` proves the Construct schema, the in-memory readers,
the windowed scan and the columnar reader agree.

Large files: :class:`IndexScan` (offset and time indexes) and :func:`iter_txn_index` read a file in windows
of :data:`INDEX_WINDOW` bytes with numpy (no per-slot Python loop), so memory does not grow with the file, and
skip the holes of a sparse (preallocated) file with ``SEEK_DATA``; :func:`index_arrays` turns a scan into
int64 columns. The in-memory readers are the reference they are tested against.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import construct as cs
import numpy as np

from parsers.batch_header import RECORD_BATCH_OVERHEAD
from parsers.errors import ParseError
from parsers.files import open_regular
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

_ABORTED_TXN = struct_of(AbortedTxn)

RELATIVE_OFFSET = "relative_offset"
"""The slot field holding ``offset - base offset`` (§7.1, §8.1); an entry holds ``offset`` instead."""
INT64_MAX = 2**63 - 1

_NUMPY_CODES = {"l": "i4", "i": "i4", "q": "i8", "h": "i2", "b": "i1"}


def dtype_of(schema: cs.Struct) -> np.dtype:
    """numpy layout of a Construct struct of big-endian integer fields, from the same format ``struct_of``
    derives (which rejects any other field)."""
    codes = struct_of(schema).format[1:]
    return np.dtype([(sc.name, ">" + _NUMPY_CODES[c]) for sc, c in zip(schema.subcons, codes, strict=True)])


def _absolute(relative: np.ndarray, base_offset: int) -> np.ndarray:
    """``base_offset + relative`` as int64 without wrapping: a segment name near (or past) the int64 limit
    would otherwise turn index offsets negative; an entry past the limit saturates at it (no batch is there,
    so the rules report the entry as pointing outside the segment)."""
    relative = relative.astype(np.int64)
    if 0 <= base_offset <= INT64_MAX - (2**31 - 1):
        return relative + base_offset
    return np.array([min(base_offset + r, INT64_MAX) for r in relative.tolist()], dtype=np.int64)


# ------------------------------------------------------------------------------------------- index kinds

EndsPrefix = Callable[[int, tuple, tuple | None, int], bool]
"""The in-memory prefix rule: (slot number, slot, previous real slot, file size) -> the slot is not real."""
CutPrefix = Callable[[np.ndarray, bool, int | None, int], np.ndarray]
"""The vectorised prefix rule: (slots, starts the file, carried value of the slot before, file size) -> the
slots that would end the real prefix."""


@dataclass(frozen=True)
class IndexKind:
    """One kind of offset-ordered index (Kafka's ``AbstractIndex`` subclasses ``OffsetIndex``, ``TimeIndex``):
    the Construct ``schema`` of a slot and its real-prefix rule, in a per-slot form (``ends``, for the
    in-memory reader) and a vectorised form (``cut``, for :class:`IndexScan`; ``carry`` names the column
    compared with the slot before a window). The slot ``struct``, numpy ``dtype``, ``size`` and entry
    field ``names`` are derived from ``schema``."""

    schema: cs.Struct
    ends: EndsPrefix
    cut: CutPrefix
    carry: str | None = None
    slot: struct.Struct = field(init=False)
    dtype: np.dtype = field(init=False)
    size: int = field(init=False)
    names: tuple[str, ...] = field(init=False)
    """An entry's fields: the slot's, with ``offset`` (absolute) for :data:`RELATIVE_OFFSET`."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "slot", struct_of(self.schema))
        set_(self, "dtype", dtype_of(self.schema))
        set_(self, "size", self.schema.sizeof())
        set_(self, "names", tuple("offset" if n == RELATIVE_OFFSET else n for n in self.dtype.names))

    def entry(self, slot: tuple, base_offset: int) -> tuple:
        """A slot as an entry: the relative offset made absolute (Python ints, never wrapped)."""
        return tuple(
            base_offset + v if n == RELATIVE_OFFSET else v
            for n, v in zip(self.dtype.names, slot, strict=True)
        )

    def columns(self, table: np.ndarray, base_offset: int) -> dict[str, np.ndarray]:
        """Slots (a structured array of ``dtype``) as int64 entry columns named by :attr:`names`, the
        relative offset made absolute (saturating at the int64 limit)."""
        return {
            name: _absolute(table[n], base_offset) if n == RELATIVE_OFFSET else table[n].astype(np.int64)
            for name, n in zip(self.names, self.dtype.names, strict=True)
        }


def _offset_ends(i: int, slot: tuple, previous: tuple | None, size: int) -> bool:
    """§7.3 (DumpLogSegments' heuristic): a slot ``i > 0`` whose relative offset and position are both 0 ends
    the prefix; so does slot 0 when it is (0, 0) in a file longer than one slot (an empty preallocated index).
    A lone (0, 0) in an 8-byte file is an entry."""
    return slot == (0, 0) and (i > 0 or size > OFFSET_INDEX_ENTRY_SIZE)


def _time_ends(i: int, slot: tuple, previous: tuple | None, size: int) -> bool:
    """§8.3: a slot ``i > 0`` whose relative offset is 0 (DumpLogSegments) or whose timestamp is 0 or not
    greater than the previous entry's (``TimeIndex.maybeAppend`` only writes strictly increasing timestamps)
    ends the prefix; slot 0 ends it when all zero in a file longer than one slot."""
    timestamp, rel = slot
    if previous is None:  # slot 0 (every later slot follows a real one)
        return timestamp == 0 and rel == 0 and size > TIME_INDEX_ENTRY_SIZE
    return rel == 0 or timestamp == 0 or timestamp <= previous[0]


def _offset_cut(table: np.ndarray, first: bool, previous: int | None, size: int) -> np.ndarray:
    """:func:`_offset_ends` over a window of slots."""
    bad = (table[RELATIVE_OFFSET] == 0) & (table["position"] == 0)
    if first:
        bad[0] = bad[0] and size > OFFSET_INDEX_ENTRY_SIZE
    return bad


def _time_cut(table: np.ndarray, first: bool, previous: int | None, size: int) -> np.ndarray:
    """:func:`_time_ends` over a window of slots; ``previous`` is the timestamp of the slot before the
    window (None at the start of the file)."""
    ts, rel = table["timestamp"], table[RELATIVE_OFFSET]
    bad = (rel == 0) | (ts == 0)
    bad[1:] |= ts[1:] <= ts[:-1]
    if first:
        bad[0] = ts[0] == 0 and rel[0] == 0 and size > TIME_INDEX_ENTRY_SIZE
    elif previous is not None:
        bad[0] |= ts[0] <= previous
    return bad


OFFSET_INDEX = IndexKind(OffsetIndexEntry, _offset_ends, _offset_cut)
"""``.index`` (§7)."""
TIME_INDEX = IndexKind(TimeIndexEntry, _time_ends, _time_cut, carry="timestamp")
"""``.timeindex`` (§8)."""

# ------------------------------------------------------------------------------------------- results


@dataclass
class IndexContents:
    """A decoded ``.index`` or ``.timeindex`` file.

    ``entries`` are the real entries per §7.3/§8.3, as tuples in the order of ``kind.names``: (absolute
    offset, position) for an offset index, (timestamp, absolute offset) for a time index. ``slots`` and
    ``trailing_bytes`` are what Kafka sees when it opens the file (``entries = length / entry size``);
    ``padding_slots`` counts all-zero slots after the real prefix and ``garbage_after_padding`` is the file
    position of the first non-zero byte after it (corruption when not None). ``preallocated`` means the file
    has a zero tail, i.e. it was still at its preallocated size (active segment, or a crash).
    """

    base_offset: int
    size: int
    entries: list[tuple[int, int]]
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None

    @property
    def preallocated(self) -> bool:
        return self.padding_slots > 0


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


def _txn_version_error(version: int, path: str | None, offset: int) -> ParseError:
    """``TransactionIndex``'s rejection of an entry whose version is above the current one."""
    return ParseError(
        f"Unexpected aborted transaction version {version} in transaction index "
        f"{path or '<buffer>'}, current version is {ABORTED_TXN_CURRENT_VERSION}",
        path=path,
        offset=offset,
    )


# ------------------------------------------------------------------------------------------- readers


def read_index(kind: IndexKind, data: bytes | memoryview, base_offset: int) -> IndexContents:
    """Decode an offset or time index slot by slot with ``kind``'s prefix rule; never fails (every byte
    string is a sequence of slots plus a remainder)."""
    size = len(data)
    slots = size // kind.size
    entries: list[tuple[int, int]] = []
    previous: tuple | None = None
    for i, slot in enumerate(kind.slot.iter_unpack(memoryview(data)[: slots * kind.size])):
        if kind.ends(i, slot, previous, size):
            break
        entries.append(kind.entry(slot, base_offset))
        previous = slot
    padding, garbage = _tail_shape(data, len(entries), slots, kind.size)
    return IndexContents(base_offset, size, entries, slots, size % kind.size, padding, garbage)


def read_offset_index(data: bytes | memoryview, base_offset: int) -> IndexContents:
    """Decode an offset index (§7.3); entries are (absolute offset, position)."""
    return read_index(OFFSET_INDEX, data, base_offset)


def read_time_index(data: bytes | memoryview, base_offset: int) -> IndexContents:
    """Decode a time index (§8.3); entries are (timestamp, absolute offset). Slots cut off by the rule that
    are not zero show up in ``garbage_after_padding``."""
    return read_index(TIME_INDEX, data, base_offset)


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
            raise _txn_version_error(version, path, i * ABORTED_TXN_SIZE)
        entries.append(AbortedTxnEntry(pid, first, last, lso, version=version, raw_version=raw_version))
    return TxnIndex(size=size, entries=entries, trailing_bytes=size % ABORTED_TXN_SIZE)


# ------------------------------------------------------------------------------------------- windowed scan

INDEX_WINDOW = 1 << 20
"""Bytes of an index read at a time by :class:`IndexScan` (rounded down to whole slots)."""


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
        kind: IndexKind,
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
    def of_bytes(cls, kind: IndexKind, data: bytes | memoryview, *, window: int = INDEX_WINDOW) -> IndexScan:
        view = memoryview(data).cast("B")
        return cls(kind, len(view), lambda pos, n: view[pos : pos + n], window=window)

    @classmethod
    def of_fd(
        cls, kind: IndexKind, fd: int, *, size: int | None = None, window: int = INDEX_WINDOW
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


@dataclass
class IndexArrays(IndexShape):
    """A whole scan of an offset or time index (its :class:`IndexShape`) with the real entries loaded
    column-wise: ``columns`` are int64 arrays named by ``kind.names`` (the relative offset made absolute),
    at most the ``max_entries`` first entries (``entries`` counts all of them)."""

    kind: IndexKind
    base_offset: int
    columns: dict[str, np.ndarray]

    @property
    def truncated(self) -> bool:
        """More real entries than were loaded (``max_entries``)."""
        return self.entries > len(self.columns[self.kind.names[0]])

    @property
    def next_entry(self) -> tuple[int, ...] | None:
        """``next_slot`` as an entry (relative offset made absolute), when there is one."""
        if self.next_slot is None:
            return None
        row = np.array([self.next_slot], dtype=self.kind.dtype)
        return tuple(int(column[0]) for column in self.kind.columns(row, self.base_offset).values())


def index_arrays(scan: IndexScan, base_offset: int, max_entries: int | None = None) -> IndexArrays:
    """Run a windowed :class:`IndexScan` (memory: one window plus the loaded entries) into columns; what
    ``read_index`` reads, column-wise."""
    shape, table = scan.run(max_entries)
    return IndexArrays(
        **vars(shape), kind=scan.kind, base_offset=base_offset, columns=scan.kind.columns(table, base_offset)
    )


ABORTED_TXN_DTYPE = dtype_of(AbortedTxn)


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
            raise _txn_version_error(version, path, pos + i * width)
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
    last = OFFSET_INDEX.slot.unpack_from(data, (slots - 1) * OFFSET_INDEX_ENTRY_SIZE) if slots else None
    return _offset_sanity(len(data), last, base_offset, path)


def sanity_check_time_index(data: bytes | memoryview, base_offset: int, path: str) -> str | None:
    """``TimeIndex.sanityCheck`` (Kafka 4.0 text): fails on a crashed preallocated index with real entries,
    whose zero last slot has a timestamp (0) below the first one."""
    slots = len(data) // TIME_INDEX_ENTRY_SIZE
    first = TIME_INDEX.slot.unpack_from(data, 0) if slots else None
    last = TIME_INDEX.slot.unpack_from(data, (slots - 1) * TIME_INDEX_ENTRY_SIZE) if slots else None
    return _time_sanity(len(data), first, last, base_offset, path)


def sanity_check_index_shape(shape: IndexShape, kind: IndexKind, base_offset: int, path: str) -> str | None:
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


def _build(schema: cs.Struct, items: list[dict]) -> bytes:
    try:
        return cs.Array(len(items), schema).build(items)
    except cs.ConstructError as exc:
        raise ValueError(str(exc)) from None


def build_index(
    kind: IndexKind, entries: Iterable[tuple[int, ...]], base_offset: int, preallocate_to: int | None = None
) -> bytes:
    """Bytes of an offset or time index holding ``entries`` (tuples in the order of ``kind.names``, offsets
    absolute), built with the Construct schema. ``preallocate_to`` (e.g. ``segment.index.bytes``) zero-pads
    like an active segment's index: the file is ``floor(preallocate_to / entry size) * entry size`` bytes."""
    fields = kind.dtype.names
    items = [
        {n: v - base_offset if n == RELATIVE_OFFSET else v for n, v in zip(fields, entry, strict=True)}
        for entry in entries
    ]
    body = _build(kind.schema, items)
    if preallocate_to is None:
        return body
    length = (preallocate_to // kind.size) * kind.size
    if length < len(body):
        raise ValueError(f"{len(body)} bytes of entries do not fit in a {length}-byte index")
    return body + bytes(length - len(body))


def build_offset_index(
    entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int | None = None
) -> bytes:
    """Bytes of an offset index holding (absolute offset, position) ``entries`` (optionally preallocated)."""
    return build_index(OFFSET_INDEX, entries, base_offset, preallocate_to)


def build_time_index(
    entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int | None = None
) -> bytes:
    """Bytes of a time index holding (timestamp, absolute offset) ``entries`` (optionally preallocated)."""
    return build_index(TIME_INDEX, entries, base_offset, preallocate_to)


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


ANCHOR_GAP = 1 << 10
""":func:`batch_positions` keeps at most one position per this many bytes of segment."""


def batch_positions(path: str | os.PathLike, segment_size: int, gap: int = ANCHOR_GAP) -> np.ndarray:
    """The batch positions an offset index gives (§7.1: the byte of the batch each entry points to), from its
    real prefix (§7.3), inside ``(0, segment_size)``, increasing, at most one per ``gap`` bytes of the segment
    (memory: one index window, then ``segment_size / gap`` positions at most). Hints for a walk of the
    segment, never proof that a batch starts there; an index that cannot be read gives none."""
    kept: list[np.ndarray] = []
    try:
        fd = open_regular(path)
    except (OSError, ParseError):
        return np.zeros(0, dtype=np.int64)
    try:
        # more entries than the segment holds v2 batches cannot all point to one: never read past them
        size = min(os.fstat(fd).st_size, (segment_size // RECORD_BATCH_OVERHEAD + 1) * OFFSET_INDEX.size)
        scan = IndexScan.of_fd(OFFSET_INDEX, fd, size=size)
        for table in scan.prefix():
            positions = table["position"].astype(np.int64)
            positions = positions[(positions > 0) & (positions < segment_size)]
            _, first = np.unique(positions // gap, return_index=True)
            kept.append(positions[first])
            if len(table) < scan.window // scan.width:
                break  # the real prefix ended in this window: the rest is its tail
    except OSError:
        return np.zeros(0, dtype=np.int64)
    finally:
        os.close(fd)
    if not kept:
        return np.zeros(0, dtype=np.int64)
    positions = np.concatenate(kept)
    _, first = np.unique(positions // gap, return_index=True)
    return positions[first]
