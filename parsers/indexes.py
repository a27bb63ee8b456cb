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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import construct as cs

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


def _first_nonzero(data: bytes | memoryview, start: int) -> int | None:
    tail = bytes(data[start:])
    stripped = tail.lstrip(b"\x00")
    if not stripped:
        return None
    return start + len(tail) - len(stripped)


def _count_zero_slots(data: bytes | memoryview, start: int, slots: int, size: int) -> int:
    """All-zero slots among ``slots`` complete slots starting at ``start``."""
    if slots <= 0:
        return 0
    end = start + slots * size
    if _first_nonzero(data[:end], start) is None:
        return slots
    zero = bytes(size)
    view = memoryview(data)
    return sum(1 for pos in range(start, end, size) if view[pos : pos + size] == zero)


def _tail_shape(data: bytes | memoryview, prefix_slots: int, slots: int, size: int) -> tuple[int, int | None]:
    start = prefix_slots * size
    padding = _count_zero_slots(data, start, slots - prefix_slots, size)
    return padding, _first_nonzero(data, start)


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


# ------------------------------------------------------------------------------------------- Kafka's checks


def sanity_check_offset_index(data: bytes | memoryview, base_offset: int, path: str) -> str | None:
    """``OffsetIndex.sanityCheck`` (Kafka 4.0 text) on a pre-existing file: the CorruptIndexException message.

    Kafka treats every slot as an entry (``entries = length / 8``), so only a negative relative offset in the
    last slot or a bad length fail. Brokers stopped running this at startup in 2.3 (KAFKA-7283).
    """
    size = len(data)
    slots = size // OFFSET_INDEX_ENTRY_SIZE
    if slots:
        rel, _ = _OFFSET_SLOT.unpack_from(data, (slots - 1) * OFFSET_INDEX_ENTRY_SIZE)
        last_offset = base_offset + rel
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


def sanity_check_time_index(data: bytes | memoryview, base_offset: int, path: str) -> str | None:
    """``TimeIndex.sanityCheck`` (Kafka 4.0 text): fails on a crashed preallocated index with real entries,
    whose zero last slot has a timestamp (0) below the first one."""
    size = len(data)
    slots = size // TIME_INDEX_ENTRY_SIZE
    if slots:
        first_ts, _ = _TIME_SLOT.unpack_from(data, 0)
        last_ts, last_rel = _TIME_SLOT.unpack_from(data, (slots - 1) * TIME_INDEX_ENTRY_SIZE)
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
