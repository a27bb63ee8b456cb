"""Legacy message sets: magic 0 (Kafka ≤ 0.9) and magic 1 (0.10.x) (spec §5).

A legacy entry is one message behind the 12-byte offset/size log overhead. A compressed *wrapper*
message holds, as its value, the compressed bytes of an inner message set whose offsets are relative
(magic 1) or absolute (magic 0). ``LegacyMessage`` is the declaration; ``parse_legacy_entry`` is the
fast path and ``tests/parsers/test_legacy.py`` proves both agree.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import construct as cs

from parsers import codecs
from parsers.codecs import DecodeNotes
from parsers.errors import ParseError
from parsers.primitives import crc32

LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
CRC_START = 16
"""The CRC-32 covers the bytes from the magic byte to the end of the message."""

LegacyMessage = cs.Struct(
    "crc" / cs.Int32ub,
    "magic" / cs.Int8sb,
    "attributes" / cs.Int8sb,
    "timestamp" / cs.If(cs.this.magic == 1, cs.Int64sb),
    "key_length" / cs.Rebuild(cs.Int32sb, lambda this: -1 if this.key is None else len(this.key)),
    "key" / cs.If(cs.this.key_length >= 0, cs.Bytes(cs.this.key_length)),
    "value_length" / cs.Rebuild(cs.Int32sb, lambda this: -1 if this.value is None else len(this.value)),
    "value" / cs.If(cs.this.value_length >= 0, cs.Bytes(cs.this.value_length)),
)
"""One v0/v1 message (§5.1): timestamp only for magic 1; a negative key/value length means null."""

LegacyEntryFrame = cs.Struct(
    "offset" / cs.Int64sb,
    "message" / cs.Prefixed(cs.Int32sb, LegacyMessage),
)
"""The log overhead (int64 offset, int32 messageSize) followed by ``messageSize`` bytes of message."""

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(slots=True)
class LegacyEntry:
    """One v0/v1 entry at ``position``: a plain message or a compressed wrapper.

    ``offset`` is the stored offset (for a wrapper: the offset of its last inner message);
    ``size`` = 12 + messageSize; ``trailing_bytes`` counts message bytes after the value (ignored by Kafka).
    """

    offset: int
    position: int
    size: int
    magic: int
    crc: int
    computed_crc: int
    crc_valid: bool
    attributes: int
    compression: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    value_position: int = -1
    trailing_bytes: int = 0
    span: tuple[int, int, int] | None = None
    """(first offset, last offset delta, records) once :func:`header_span` computed it (it decompresses)."""

    @property
    def compression_name(self) -> str:
        return codecs.codec_name(self.compression)

    @property
    def is_compressed(self) -> bool:
        return self.compression != 0

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1


@dataclass(slots=True)
class LegacyRecord:
    """A logical v0/v1 record with its absolute offset and effective timestamp.

    ``stored_offset`` is the offset field as written (relative inside a v1 wrapper); ``position`` is the
    byte position in the decompressed inner message set (for an uncompressed entry: the entry position).
    """

    offset: int
    stored_offset: int
    position: int
    size: int
    magic: int
    crc: int
    computed_crc: int
    crc_valid: bool
    attributes: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None


def _timestamp_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return "NoTimestampType"
    return TIMESTAMP_TYPES[1 if attributes & ATTR_TIMESTAMP_TYPE else 0]


def parse_legacy_entry(buf: bytes | bytearray | memoryview, pos: int = 0) -> LegacyEntry:
    """Decode and CRC-check the v0/v1 entry at ``pos`` (the whole entry must be in ``buf``)."""
    n = len(buf)
    if n - pos < LOG_OVERHEAD:
        raise ParseError(f"legacy entry needs {LOG_OVERHEAD} bytes of log overhead, {n - pos} available",
                         offset=pos)
    offset, size = struct.unpack_from(">qi", buf, pos)
    if size < RECORD_OVERHEAD_V0:
        raise ParseError(
            f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            offset=pos + 8,
        )
    end = pos + LOG_OVERHEAD + size
    if end > n:
        raise ParseError(f"legacy message of {size} bytes runs past the end of the data", offset=pos + 8)
    crc, magic, attributes = struct.unpack_from(">Ibb", buf, pos + 12)
    if magic not in (0, 1):
        raise ParseError(f"magic {magic} is not a legacy (v0/v1) message", offset=pos + 16)
    if magic == 1 and size < RECORD_OVERHEAD_V1:
        raise ParseError(
            f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V1}) for magic 1",
            offset=pos + 8,
        )
    q = pos + 18
    timestamp = NO_TIMESTAMP
    if magic == 1:
        (timestamp,) = struct.unpack_from(">q", buf, q)
        q += 8
    key, q = _sized(buf, q, end - 4, "key")
    value_position = q + 4
    value, q = _sized(buf, q, end, "value")
    computed = crc32(memoryview(buf)[pos + CRC_START : end])
    return LegacyEntry(
        offset=offset,
        position=pos,
        size=LOG_OVERHEAD + size,
        magic=magic,
        crc=crc,
        computed_crc=computed,
        crc_valid=computed == crc,
        attributes=attributes,
        compression=attributes & ATTR_COMPRESSION_MASK,
        timestamp=timestamp,
        timestamp_type=_timestamp_type(magic, attributes),
        key=key,
        value=value,
        value_position=value_position if value is not None else -1,
        trailing_bytes=end - q,
    )


def _sized(buf, pos: int, limit: int, what: str) -> tuple[bytes | None, int]:
    """An int32-length-prefixed byte string ending at or before ``limit`` (negative length = null)."""
    (length,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if length > limit - pos:
        raise ParseError(f"{what} of {length} bytes runs past the end of the message", offset=pos - 4)
    return bytes(buf[pos : pos + length]), pos + length


def inner_messages(
    entry: LegacyEntry,
    *,
    limit: int = codecs.DEFAULT_LIMIT,
    notes: DecodeNotes | None = None,
    ensure_matching_magic: bool = False,
) -> list[LegacyRecord]:
    """The logical records of ``entry`` with Kafka's deep-iteration rules (§5.2).

    An uncompressed entry is its own single record. A wrapper is decompressed (at most ``limit`` bytes)
    and its inner messages get absolute offsets (magic 1: ``wrapperOffset - lastInnerRelative +
    innerRelative``, wrapper offset 0 meaning base 0) and, under LogAppendTime, the wrapper timestamp.
    Inner CRCs are checked per record (``crc_valid``); with ``ensure_matching_magic`` an inner magic
    different from the wrapper's is an error, as in the leader's validation. Error offsets point into
    the buffer ``entry`` was parsed from.
    """
    notes = notes if notes is not None else DecodeNotes()
    if not entry.compression:
        return [_record(entry, entry.offset, entry.timestamp, entry.timestamp_type)]
    _check_wrapper(entry)
    inner = list(_inner_entries(entry, limit, notes, ensure_matching_magic))
    if not inner:
        raise ParseError(
            "Found invalid compressed record set with no inner records", offset=entry.value_position
        )
    base = _wrapper_base(entry, inner[-1].offset)
    if entry.magic == 1:
        if [m.offset for m in inner] != list(range(len(inner))):
            notes.add("v1 wrapper: inner relative offsets are not 0..n-1")
    elif inner[-1].offset != entry.offset:
        notes.add(f"v0 wrapper offset {entry.offset} is not the last inner offset {inner[-1].offset}")
    return [_inner_record(entry, item, base) for item in inner]


def iter_inner_messages(entry: LegacyEntry, *, limit: int = codecs.DEFAULT_LIMIT) -> Iterator[LegacyRecord]:
    """:func:`inner_messages` one record at a time, in memory independent of the record count: a first
    pass over the decompressed wrapper validates it and finds its last inner offset (a magic 1 wrapper's
    base offset depends on it), a second yields the records. Every ParseError comes before the first
    record."""
    if not entry.compression:
        yield _record(entry, entry.offset, entry.timestamp, entry.timestamp_type)
        return
    _check_wrapper(entry)
    data = _decompressed(entry, limit, DecodeNotes())
    last_relative = None
    for item in _inner_entries(entry, limit, DecodeNotes(), data=data):
        last_relative = item.offset
    if last_relative is None:
        raise ParseError(
            "Found invalid compressed record set with no inner records", offset=entry.value_position
        )
    base = _wrapper_base(entry, last_relative)
    for item in _inner_entries(entry, limit, DecodeNotes(), data=data):
        yield _inner_record(entry, item, base)


def _inner_record(entry: LegacyEntry, item: LegacyEntry, base: int) -> LegacyRecord:
    """An inner message as a logical record: absolute offset, and the wrapper's timestamp under
    LogAppendTime (magic 1)."""
    if item.magic == 1:
        log_append = entry.timestamp_type == "LogAppendTime"
        timestamp = entry.timestamp if log_append else item.timestamp
        return _record(item, base + item.offset, timestamp, entry.timestamp_type)
    return _record(item, base + item.offset, NO_TIMESTAMP, "NoTimestampType")


def _check_wrapper(entry: LegacyEntry) -> None:
    """What Kafka's deep iterator refuses before decompressing a wrapper: its codec and a null value."""
    where = entry.position
    if entry.compression not in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4):
        if entry.compression == codecs.ZSTD:
            raise ParseError(
                f"Invalid wrapper compressionType found in legacy deep record iterator {entry.magic}",
                offset=where + 17,
            )
        raise ParseError(f"Unknown compression type id {entry.compression}", offset=where + 17)
    if entry.value is None:
        raise ParseError(
            f"Found invalid compressed record set with null value (magic = {entry.magic})", offset=where + 12
        )


def _wrapper_base(entry: LegacyEntry, last_relative: int) -> int:
    """The absolute offset of inner offset 0: magic 1 ``wrapperOffset - lastInnerRelative`` (a wrapper
    offset of 0 meaning base 0), magic 0 inner offsets are absolute (§5.2)."""
    if entry.magic != 1 or entry.offset == 0:
        return 0
    if entry.offset < last_relative:
        raise ParseError(
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{entry.offset}' is less than the last inner message offset '{last_relative}' "
            "and it is not zero.",
            offset=entry.position,
        )
    return entry.offset - last_relative


def _decompressed(entry: LegacyEntry, limit: int, notes: DecodeNotes) -> bytes:
    """The inner message set of the compressed wrapper ``entry`` (at most ``limit`` bytes)."""
    try:
        return codecs.decompress(entry.compression, entry.value, magic=entry.magic, limit=limit, notes=notes)
    except ParseError as exc:
        raise ParseError(
            f"cannot decompress the {entry.compression_name} wrapper value: {exc.message}",
            offset=entry.value_position + (exc.offset or 0),
        ) from None


def _inner_entries(
    entry: LegacyEntry,
    limit: int,
    notes: DecodeNotes,
    ensure_matching_magic: bool = False,
    data: bytes | None = None,
) -> Iterator[LegacyEntry]:
    """The inner messages of the compressed wrapper ``entry`` one at a time, from ``data`` (its decompressed
    value, decompressed here when not given); no list of them is built, so checking a wrapper costs memory
    independent of its record count."""
    if data is None:
        data = _decompressed(entry, limit, notes)
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        try:
            item = parse_legacy_entry(data, pos)
        except ParseError as exc:
            raise ParseError(
                f"inner message at decompressed byte {exc.offset}: {exc.message}", offset=entry.value_position
            ) from None
        if item.compression:
            raise ParseError(
                f"Inner messages must not be compressed (inner message at decompressed byte {pos})",
                offset=entry.value_position,
            )
        if item.magic != entry.magic and ensure_matching_magic:
            raise ParseError(
                f"Compressed message magic {item.magic} does not match wrapper magic {entry.magic}",
                offset=entry.value_position,
            )
        yield item
        pos += item.size
    if pos < len(data):
        notes.add(f"{len(data) - pos} bytes after the last inner message ignored")


def _record(item: LegacyEntry, offset: int, timestamp: int, timestamp_type: str) -> LegacyRecord:
    return LegacyRecord(
        offset=offset,
        stored_offset=item.offset,
        position=item.position,
        size=item.size,
        magic=item.magic,
        crc=item.crc,
        computed_crc=item.computed_crc,
        crc_valid=item.crc_valid,
        attributes=item.attributes,
        timestamp=timestamp,
        timestamp_type=timestamp_type,
        key=item.key,
        value=item.value,
    )


def base_offset(entry: LegacyEntry, *, limit: int = codecs.DEFAULT_LIMIT) -> int:
    """The entry's first offset: a wrapper's first inner offset (needs decompression), else its offset."""
    if not entry.compression:
        return entry.offset
    return next(iter_inner_messages(entry, limit=limit)).offset


def header_span(entry: LegacyEntry, *, limit: int = codecs.DEFAULT_LIMIT) -> tuple[int, int, int]:
    """(first offset, last offset delta, record count) of a legacy entry, as a v2-shaped header row holds
    them (int64 base offset, int32 delta); cached in ``entry.span``.

    A wrapper's first offset comes from its inner messages (§5.2); a wrapper whose records do not decompress
    or parse gives (offset, 0, 0): that is a records problem, not a framing one. The offset field is not
    covered by the CRC, so a damaged one can put the last offset below the first, more than 2^31 - 1 past it,
    or (magic 1, with inner offsets) the first offset outside int64. Such an entry cannot be placed in any
    segment: Kafka's recovery checks ``lastOffset`` against the segment's int32 relative range
    (``LogSegment.ensureOffsetInRange`` -> ``LogSegmentOffsetOverflowException``, KAFKA-6264) and the split
    it then attempts starts a segment at the entry's base offset, where it still does not fit
    (``IllegalStateException``: the log fails to load). ParseError at the entry's offset field, never a
    wrapped or negative offset.
    """
    if entry.span is not None:
        return entry.span
    if not entry.compression:
        entry.span = (entry.offset, 0, 1)
        return entry.span
    try:  # streamed: only the first and last inner offsets and the count are kept
        _check_wrapper(entry)
        first_relative = last_relative = None
        count = 0
        for item in _inner_entries(entry, limit, DecodeNotes()):
            if first_relative is None:
                first_relative = item.offset
            last_relative = item.offset
            count += 1
        if first_relative is None:
            raise ParseError("no inner records")
        first = _wrapper_base(entry, last_relative) + first_relative
    except ParseError:
        entry.span = (entry.offset, 0, 0)
        return entry.span
    delta = entry.offset - first
    if not INT64_MIN <= first <= INT64_MAX:
        problem = f"its first inner offset {first} is outside the int64 range"
    elif delta < 0:
        problem = f"its offset {entry.offset} is below its first inner offset {first}"
    elif delta > INT32_MAX:
        problem = (
            f"its offset {entry.offset} is {delta} past its first inner offset {first}, beyond the int32 "
            "relative offsets of a segment (Kafka: LogSegmentOffsetOverflowException, the log cannot load)"
        )
    else:
        entry.span = (first, delta, count)
        return entry.span
    what = f"magic {entry.magic} {entry.compression_name} wrapper"
    raise ParseError(f"{what}: {problem}", offset=entry.position)


# ------------------------------------------------------------------------------------------- building


@dataclass(slots=True)
class LegacyMessageSpec:
    """Input to :func:`build_legacy_wrapper`: one inner message (``offset`` None = the usual offset)."""

    key: bytes | None
    value: bytes | None
    timestamp: int = NO_TIMESTAMP
    offset: int | None = None


def build_legacy_message(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    magic: int = 1,
    timestamp: int = NO_TIMESTAMP,
    attributes: int = 0,
    crc: int | None = None,
) -> bytes:
    """One entry (log overhead + message) via ``LegacyEntryFrame``; correct CRC-32 unless ``crc`` is given."""
    raw = bytearray(
        LegacyEntryFrame.build(
            {
                "offset": offset,
                "message": {
                    "crc": 0,
                    "magic": magic,
                    "attributes": attributes,
                    "timestamp": timestamp if magic == 1 else None,
                    "key": key,
                    "value": value,
                },
            }
        )
    )
    struct.pack_into(">I", raw, LOG_OVERHEAD, crc32(memoryview(raw)[CRC_START:]) if crc is None else crc)
    return bytes(raw)


def build_legacy_wrapper(
    messages: list[LegacyMessageSpec],
    *,
    magic: int = 1,
    compression: int = codecs.GZIP,
    offset: int | None = None,
    log_append_time: int | None = None,
) -> bytes:
    """A compressed wrapper entry as a 0.10-era producer and broker would leave it on disk.

    ``offset`` is the wrapper offset = absolute offset of the last inner message (default ``len - 1``).
    Inner offsets: relative 0..n-1 for magic 1, absolute ``offset - n + 1 ..`` for magic 0. The wrapper
    timestamp is ``log_append_time`` (LogAppendTime) or the maximum inner timestamp (CreateTime).
    """
    count = len(messages)
    wrapper_offset = count - 1 if offset is None else offset
    inner = bytearray()
    for i, spec in enumerate(messages):
        usual = i if magic == 1 else wrapper_offset - count + 1 + i
        stored = usual if spec.offset is None else spec.offset
        inner += build_legacy_message(stored, spec.key, spec.value, magic=magic, timestamp=spec.timestamp)
    attributes = compression & ATTR_COMPRESSION_MASK
    timestamp = NO_TIMESTAMP
    if magic == 1:
        if log_append_time is not None:
            attributes |= ATTR_TIMESTAMP_TYPE
            timestamp = log_append_time
        elif messages:
            timestamp = max(m.timestamp for m in messages)
    value = codecs.compress(compression, bytes(inner), magic=magic)
    return build_legacy_message(
        wrapper_offset, None, value, magic=magic, timestamp=timestamp, attributes=attributes
    )
