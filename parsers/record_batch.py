"""RecordBatch magic v2: the 61-byte header, records and their zig-zag varint fields (spec §3).

``BatchHeaderV2`` and ``RecordV2`` are the declarations; ``HEADER_STRUCT`` (a ``struct.Struct``
derived from ``BatchHeaderV2``), ``iter_records``/``batch_records`` (streaming) and ``record_rows`` (a
records section held whole, for ``dump --deep``) are the fast paths; ``tests/parsers/test_record_batch.py``
and ``tests/test_dump_fastpath.py`` prove they agree with the declarations.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import construct as cs

from parsers.errors import ParseError
from parsers.primitives import (
    VarInt,
    VarLong,
    crc32c,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
    struct_of,
)

LOG_OVERHEAD = 12
"""int64 offset + int32 size, in front of every entry of a .log file (§1.5)."""
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_BATCH_OVERHEAD = 61
CRC_START = 21
"""The CRC-32C covers bytes 21 .. end of batch: baseOffset and partitionLeaderEpoch are not covered."""
MAGIC_V2 = 2

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1

BatchHeaderV2 = cs.Struct(
    "base_offset" / cs.Int64sb,
    "batch_length" / cs.Int32sb,
    "partition_leader_epoch" / cs.Int32sb,
    "magic" / cs.Int8sb,
    "crc" / cs.Int32ub,
    "attributes" / cs.Int16sb,
    "last_offset_delta" / cs.Int32sb,
    "base_timestamp" / cs.Int64sb,
    "max_timestamp" / cs.Int64sb,
    "producer_id" / cs.Int64sb,
    "producer_epoch" / cs.Int16sb,
    "base_sequence" / cs.Int32sb,
    "records_count" / cs.Int32sb,
)
"""The v2 batch header, 61 bytes (§3.1)."""


HEADER_STRUCT = struct_of(BatchHeaderV2)
HEADER_FIELDS = tuple(sub.name for sub in BatchHeaderV2.subcons)
assert HEADER_STRUCT.size == RECORD_BATCH_OVERHEAD

_NullableVarBytes = cs.Struct(
    "length" / VarInt,
    "data" / cs.If(cs.this.length >= 0, cs.Bytes(cs.this.length)),
)
RecordHeaderV2 = cs.Struct(
    "key_length" / VarInt,
    "key" / cs.Bytes(cs.this.key_length),
    "value_length" / VarInt,
    "value" / cs.If(cs.this.value_length >= 0, cs.Bytes(cs.this.value_length)),
)
RecordV2 = cs.Struct(
    "length" / VarInt,
    "attributes" / cs.Int8sb,
    "timestamp_delta" / VarLong,
    "offset_delta" / VarInt,
    "key" / _NullableVarBytes,
    "value" / _NullableVarBytes,
    "header_count" / VarInt,
    "headers" / cs.Array(cs.this.header_count, RecordHeaderV2),
)
"""One record inside a v2 batch (§3.4); ``length`` counts the bytes after the length varint."""


@dataclass(slots=True)
class RecordBatch:
    """A v2 batch header as found at ``position`` in a segment, with its CRC verdict."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0
    computed_crc: int | None = None

    @classmethod
    def from_tuple(cls, values: tuple, position: int = 0, computed_crc: int | None = None) -> RecordBatch:
        return cls(*values, position=position, computed_crc=computed_crc)

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def crc_valid(self) -> bool:
        return self.computed_crc == self.crc

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression, f"unknown({self.compression})")

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.last_offset_delta)


def last_sequence(base_sequence: int, delta: int) -> int:
    """``baseSequence + delta`` with Kafka's wrap-around at Int32.MAX (§3.1)."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if base_sequence > INT32_MAX - delta:
        return delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + delta


@dataclass(slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """A decoded v2 record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    offset_delta: int
    timestamp_delta: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    size: int = 0
    sequence: int = NO_SEQUENCE
    key_size: int = -1
    """Length of the key (-1: null); set even when the key bytes were not kept (``payloads=False``)."""
    value_size: int = -1


def parse_header(buf: bytes | memoryview, pos: int = 0) -> RecordBatch:
    """Decode and CRC-check the v2 batch at ``pos`` (the whole batch must be in ``buf``)."""
    if len(buf) - pos < RECORD_BATCH_OVERHEAD:
        raise ParseError(
            f"record batch header needs {RECORD_BATCH_OVERHEAD} bytes, {len(buf) - pos} available", offset=pos
        )
    values = HEADER_STRUCT.unpack_from(buf, pos)
    batch = RecordBatch.from_tuple(values, position=pos)
    if batch.magic != MAGIC_V2:
        raise ParseError(f"magic {batch.magic} is not a v2 record batch", offset=pos + 16)
    size = batch.size
    if size < RECORD_BATCH_OVERHEAD:
        raise ParseError(
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed overhead "
            f"{RECORD_BATCH_OVERHEAD})",
            offset=pos + 8,
        )
    if pos + size > len(buf):
        raise ParseError(f"record batch of {size} bytes runs past the end of the data", offset=pos + 8)
    batch.computed_crc = crc32c(memoryview(buf)[pos + CRC_START : pos + size])
    return batch


DECOMPRESSED_LIMIT = 64 << 20
"""Most bytes one batch's records section may decompress to here (Kafka itself sets no limit)."""
RECORD_WINDOW = 1 << 20
"""Records up to this size are decoded from one buffer; larger ones are read piece by piece."""
_MAX_VARINT = 10


MAX_RECORDS_PER_BATCH = 1 << 20
"""Most records decoded from one batch. Kafka's count is an int32 and its readers iterate exactly that many
records (``DefaultRecordBatch.RecordIterator``), so a 6 KB zstd batch of 64 MiB of 7-byte records holds
9.6 M of them; KRaft writes at most 8 MiB per batch (``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``) and
producers ``batch.size`` bytes (16 KiB by default). Above this the batch is reported as not decoded
(:class:`RecordBudgetExceeded`), which bounds the time spent on one batch (linear in its records)."""


class RecordError(ParseError):
    """A record that does not decode; ``offset`` is relative to the decompressed records section."""


class RecordBudgetExceeded(ParseError):
    """The batch declares more records than :data:`MAX_RECORDS_PER_BATCH`: not decoded (not a Kafka error)."""


def records_payload(
    batch: RecordBatch, raw: bytes | memoryview, *, max_bytes: int = DECOMPRESSED_LIMIT
) -> bytes:
    """The (decompressed) records section of ``batch`` as one buffer; ``raw`` holds the batch from its first
    byte. For small batches and tests: :func:`batch_records` streams instead."""
    start = RECORD_BATCH_OVERHEAD
    raw = bytes(memoryview(raw)[start : batch.size])
    if batch.compression == 0:
        return raw
    from parsers import codecs

    try:
        return codecs.decompress(batch.compression, raw, magic=MAGIC_V2, limit=max_bytes)
    except ParseError as exc:
        where = start + (exc.offset or 0)
        raise ParseError(f"cannot decompress the records section: {exc.message}", offset=where) from None


def decode_records(batch: RecordBatch, payload: bytes | memoryview) -> list[Record]:
    """All records of a (decompressed) records section held in memory; errors carry payload-relative
    offsets. :func:`iter_records` is the same without the list."""
    return list(iter_records(batch, [bytes(payload)], total=len(payload)))


def batch_records(
    batch: RecordBatch,
    pread: Callable[[int, int], bytes],
    *,
    payloads: bool = True,
    limit: int = DECOMPRESSED_LIMIT,
    budget: int | None = None,
) -> Iterator[Record]:
    """Stream the records of ``batch`` straight from its file (``pread(position, n)``), never holding the
    batch or its decompressed records whole: memory is one input chunk, one decompressed piece and the
    record being decoded, whatever the batch size or record count.

    ``payloads=False`` skips key, value and header values (their sizes are kept): a record larger than
    :data:`RECORD_WINDOW` is then never held either. Errors are :class:`ParseError` at the **file** byte
    where decoding failed: exact for uncompressed batches; for compressed ones the compressed byte read up
    to then (the message names the byte of the decompressed records). Time is linear in the decompressed
    bytes (at most ``limit``) and in the records, at most ``budget`` (see :func:`iter_records`).
    """
    from parsers import codecs

    start = batch.position + RECORD_BATCH_OVERHEAD
    src = codecs.Source.of_file(pread, start, batch.size - RECORD_BATCH_OVERHEAD)
    compressed = batch.compression != 0
    try:
        # uncompressed records are read as they are, whatever their size (no decompression limit applies)
        chunks = src.chunks() if not compressed else codecs.stream(batch.compression, src, limit=limit)
        total = None if compressed else src.size
        yield from iter_records(batch, chunks, payloads=payloads, total=total, budget=budget)
    except RecordBudgetExceeded as exc:
        raise RecordBudgetExceeded(exc.message, offset=batch.position) from None
    except RecordError as exc:
        if not compressed:
            raise ParseError(exc.message, offset=start + (exc.offset or 0)) from None
        raise ParseError(
            f"{exc.message} (byte {exc.offset} of the decompressed records)", offset=start + src.consumed
        ) from None
    except ParseError as exc:
        what = "decompress" if compressed else "read"
        raise ParseError(
            f"cannot {what} the records section: {exc.message}", offset=start + (exc.offset or 0)
        ) from None


class _Cursor:
    """A read position over a stream of byte pieces; ``buf[pos:]`` is what is buffered, ``base`` the stream
    offset of ``buf[0]``."""

    __slots__ = ("chunks", "buf", "pos", "base", "eof")

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def fill(self, n: int) -> bool:
        """Buffer at least ``n`` bytes from ``pos`` if the stream has them."""
        have = len(self.buf) - self.pos
        if have >= n:
            return True
        parts = [self.buf[self.pos :]] if have else []
        while have < n and not self.eof:
            piece = next(self.chunks, None)
            if piece is None:
                self.eof = True
                break
            parts.append(piece)
            have += len(piece)
        self.base += self.pos
        self.buf = b"".join(parts)
        self.pos = 0
        return have >= n

    def varint(self, long: bool = False) -> int:
        self.fill(_MAX_VARINT)
        try:
            value, self.pos = (read_varlong if long else read_varint)(self.buf, self.pos)
        except ParseError as exc:
            raise RecordError(exc.message, offset=self.base + (exc.offset or 0)) from None
        return value

    def take(self, n: int) -> bytes:
        if not self.fill(n):
            raise RecordError(f"premature end of the records: {n} bytes needed", offset=self.offset)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, n: int) -> None:
        while n > 0:
            if not self.fill(1):
                raise RecordError(f"premature end of the records: {n} more bytes needed", offset=self.offset)
            step = min(n, len(self.buf) - self.pos)
            self.pos += step
            n -= step


def iter_records(
    batch: RecordBatch,
    chunks: Iterable[bytes],
    *,
    payloads: bool = True,
    total: int | None = None,
    budget: int | None = None,
) -> Iterator[Record]:
    """Decode ``batch.records_count`` records from the decompressed records section given in pieces.

    Applies Kafka's checks (``DefaultRecord.readFrom``, ``DefaultRecordBatch``): a non-negative count, each
    record consumes exactly its declared length, header keys are non-null, no bytes remain after the last
    record. Raises :class:`RecordError` with stream-relative offsets, :class:`RecordBudgetExceeded` (before
    reading anything) when the count is above ``budget`` (default :data:`MAX_RECORDS_PER_BATCH`; a caller
    that reads only the first records may lift it). ``total`` (the section's size, when known) only sharpens
    the message about remaining bytes.
    """
    count = batch.records_count
    if count < 0:
        raise RecordError(f"Found invalid record count {count} in magic v2 batch", offset=0)
    budget = MAX_RECORDS_PER_BATCH if budget is None else budget
    if count > budget:
        raise RecordBudgetExceeded(
            f"batch declares {count} records, more than the {budget} this auditor decodes per batch "
            "(not decoded)",
            offset=0,
        )
    cur = _Cursor(chunks)
    for i in range(count):
        buf, pos = cur.buf, cur.pos
        if len(buf) - pos < _MAX_VARINT and not cur.fill(_MAX_VARINT) and not cur.fill(1):
            raise RecordError(
                f"Incorrect declared batch size, premature EOF reached: {count} records declared, "
                f"only {i} found",
                offset=cur.offset,
            )
        buf, pos = cur.buf, cur.pos
        start = cur.base + pos
        c = buf[pos]
        if c < 0x80:
            length = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            try:
                length, pos = read_varint(buf, pos)
            except ParseError as exc:
                raise RecordError(exc.message, offset=cur.base + (exc.offset or 0)) from None
        if length < 6:  # attributes + five varints is the smallest record body
            raise RecordError(f"Invalid record size {length}: smaller than the smallest record", offset=start)
        if pos + length > len(buf) and (length <= RECORD_WINDOW or payloads):
            cur.pos = pos
            if not cur.fill(length):
                raise RecordError(
                    f"Invalid record size {length}: the record runs past the end of the records section",
                    offset=start,
                )
            buf, pos = cur.buf, cur.pos
        if pos + length <= len(buf):
            try:
                rec, cur.pos = _record_body(batch, buf, pos, length, payloads)
            except ParseError as exc:
                raise RecordError(exc.message, offset=cur.base + (exc.offset or 0)) from None
        else:
            cur.pos = pos
            rec = _large_record_body(batch, cur, length)
        rec.size = cur.base + cur.pos - start
        yield rec
    if cur.fill(1):
        left = f"{total - cur.offset} bytes remain" if total is not None else "records still remaining"
        raise RecordError(f"Incorrect declared batch size, {left} after {count} records", offset=cur.offset)


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    """``read_varint`` with the one-byte case inline (most varints of a record are one byte)."""
    if pos < len(buf):
        c = buf[pos]
        if c < 0x80:
            return (c >> 1) ^ -(c & 1), pos + 1
    return read_varint(buf, pos)


def _record_body(batch: RecordBatch, buf: bytes, pos: int, length: int, payloads: bool) -> tuple[Record, int]:
    """One record body of ``length`` bytes at ``buf[pos:]`` (all buffered); returns it and the end."""
    body_start = pos
    limit = pos + length
    attributes = buf[pos]
    ts_delta, pos = read_varlong(buf, pos + 1) if buf[pos + 1] >= 0x80 else _varint_at(buf, pos + 1)
    off_delta, pos = _varint_at(buf, pos)
    key_size, key, pos = _field(buf, pos, limit, "key", payloads)
    value_size, value, pos = _field(buf, pos, limit, "value", payloads)
    if pos >= limit:
        raise ParseError(
            f"Invalid record size: expected to read {length} bytes in record payload, but the record "
            f"needs more",
            offset=body_start,
        )
    n_headers, pos = _varint_at(buf, pos)
    headers = []
    if n_headers:
        if n_headers < 0 or n_headers > limit - pos:
            raise ParseError(f"Found invalid number of record headers {n_headers}", offset=pos)
        for _h in range(n_headers):
            _, hkey, pos = _field(buf, pos, limit, "header key", True)
            if hkey is None:
                raise ParseError("Invalid negative header key size", offset=pos)
            _, hval, pos = _field(buf, pos, limit, "header value", payloads)
            headers.append(Header(hkey.decode("utf-8", "replace"), hval))
    if pos != limit:
        raise ParseError(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {pos - body_start}",
            offset=body_start,
        )
    return _record(batch, attributes, ts_delta, off_delta, key, value, headers, key_size, value_size), pos


MAX_LARGE_RECORD_HEADERS = 4096
"""Header objects kept for one record larger than the record window (the rest are checked, not kept)."""


def _large_record_body(batch: RecordBatch, cur: _Cursor, length: int) -> Record:
    """A record larger than :data:`RECORD_WINDOW`, read piece by piece with its key, value and header values
    skipped (``payloads=False``); every header is checked but only the first :data:`MAX_LARGE_RECORD_HEADERS`
    are kept (a 64 MiB record could declare tens of millions of empty headers)."""
    body_start = cur.offset
    end = body_start + length

    def size(what: str) -> int:
        n = cur.varint()
        if n > end - cur.offset:
            raise RecordError(f"{what} of {n} bytes runs past the end of the record", offset=cur.offset)
        return n

    attributes = cur.take(1)[0]
    ts_delta = cur.varint(long=True)
    off_delta = cur.varint()
    key_size = size("key")
    cur.skip(max(key_size, 0))
    value_size = size("value")
    cur.skip(max(value_size, 0))
    n_headers = cur.varint()
    if n_headers < 0 or n_headers > end - cur.offset:
        raise RecordError(f"Found invalid number of record headers {n_headers}", offset=cur.offset)
    headers = []
    for _h in range(n_headers):
        klen = size("header key")
        if klen < 0:
            raise RecordError("Invalid negative header key size", offset=cur.offset)
        key = cur.take(klen) if klen <= RECORD_WINDOW else b"<%d-byte key>" % klen
        if klen > RECORD_WINDOW:
            cur.skip(klen)
        cur.skip(max(size("header value"), 0))
        if len(headers) < MAX_LARGE_RECORD_HEADERS:
            headers.append(Header(key.decode("utf-8", "replace"), None))
    if cur.offset != end:
        raise RecordError(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {cur.offset - body_start}",
            offset=body_start,
        )
    return _record(batch, attributes, ts_delta, off_delta, None, None, headers, key_size, value_size)


def _record(batch, attributes, ts_delta, off_delta, key, value, headers, key_size, value_size) -> Record:
    seq = last_sequence(batch.base_sequence, off_delta) if batch.base_sequence >= 0 else NO_SEQUENCE
    ts = batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else batch.base_timestamp + ts_delta
    return Record(
        batch.base_offset + off_delta,
        ts,
        off_delta,
        ts_delta,
        attributes,
        key,
        value,
        headers,
        0,
        seq,
        key_size,
        value_size,
    )


def _field(buf, pos: int, limit: int, what: str, keep: bool) -> tuple[int, bytes | None, int]:
    """(length, bytes or None, next position) of a nullable varint-prefixed field (length -1 when null)."""
    length, pos = _varint_at(buf, pos)
    if length < 0:
        return -1, None, pos
    if pos + length > limit:
        raise ParseError(f"{what} of {length} bytes runs past the end of the record", offset=pos)
    return length, (buf[pos : pos + length] if keep else None), pos + length


RecordRow = tuple[int, int, int, int, int, tuple[str, ...]]
"""``(offset, timestamp, keySize, valueSize, sequence, headerKeys)`` of one record, as ``record_rows`` gives
it: what ``kafka-dump-log.sh --deep-iteration`` prints of a record without its payload."""


def record_rows(batch: RecordBatch, section: bytes) -> list[RecordRow] | None:
    """The records of a whole (decompressed) records ``section`` as :data:`RecordRow` tuples, or None when
    the section is not well-formed or holds a record larger than :data:`RECORD_WINDOW`.

    The fast path of ``iter_records(batch, [section], payloads=False)`` for sections held in memory: the
    ``RecordV2`` fields in their declared order (length, attributes, timestampDelta, offsetDelta, key, value,
    headers), one- and two-byte varints decoded inline. It gives the same rows whenever ``iter_records``
    succeeds and None whenever it raises (``tests/test_dump_fastpath.py``), so a caller meeting None
    uses ``iter_records`` to learn where and why decoding stops.
    """
    count = batch.records_count
    if count < 0 or count > MAX_RECORDS_PER_BATCH:
        return None
    base_offset = batch.base_offset
    base_sequence = batch.base_sequence
    log_append = batch.attributes & ATTR_TIMESTAMP_TYPE
    base_ts = batch.max_timestamp if log_append else batch.base_timestamp
    window = RECORD_WINDOW
    end = len(section)
    s = section
    rows: list[RecordRow] = []
    append = rows.append
    pos = 0
    try:
        for _ in range(count):
            # length (varint; the one-byte case inline, as for every field below)
            c = s[pos]
            if c < 0x80:
                length = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                length = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                length, pos = read_varint(s, pos)
            limit = pos + length
            if length < 6 or length > window or limit > end:
                return None
            # attributes (int8, unused), timestampDelta (varlong)
            c = s[pos + 1]
            if c < 0x80:
                ts_delta = (c >> 1) ^ -(c & 1)
                pos += 2
            elif s[pos + 2] < 0x80:
                c = (c & 0x7F) | (s[pos + 2] << 7)
                ts_delta = (c >> 1) ^ -(c & 1)
                pos += 3
            else:
                ts_delta, pos = read_varlong(s, pos + 1)
            # offsetDelta (varint)
            c = s[pos]
            if c < 0x80:
                off_delta = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                off_delta = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                off_delta, pos = read_varint(s, pos)
            # key and value: nullable varint-prefixed bytes (any negative length is null)
            c = s[pos]
            if c < 0x80:
                key_size = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                key_size, pos = read_varint(s, pos)
            if key_size < 0:
                key_size = -1
            else:
                pos += key_size
                if pos > limit:
                    return None
            c = s[pos]
            if c < 0x80:
                value_size = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                value_size = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                value_size, pos = read_varint(s, pos)
            if value_size < 0:
                value_size = -1
            else:
                pos += value_size
            if pos >= limit:
                return None
            # headers: count, then (key, value) pairs; keys are non-null strings
            c = s[pos]
            if c == 0:
                pos += 1
                header_keys: tuple[str, ...] = ()
            else:
                header_keys, pos = _header_keys(s, pos, limit)
            if pos != limit:
                return None
            sequence = NO_SEQUENCE if base_sequence < 0 else last_sequence(base_sequence, off_delta)
            append(
                (
                    base_offset + off_delta,
                    base_ts if log_append else base_ts + ts_delta,
                    key_size,
                    value_size,
                    sequence,
                    header_keys,
                )
            )
    except (IndexError, ParseError):
        return None
    return rows if pos == end else None


def _header_keys(s: bytes, pos: int, limit: int) -> tuple[tuple[str, ...], int]:
    """The keys of a record's headers at ``s[pos:]`` (count first) and the end; ParseError where the
    headers do not fit the record (``_record_body``'s checks)."""
    n_headers, pos = read_varint(s, pos)
    if n_headers < 0 or n_headers > limit - pos:
        raise ParseError(f"Found invalid number of record headers {n_headers}", offset=pos)
    keys = []
    for _h in range(n_headers):
        klen, pos = read_varint(s, pos)
        if klen < 0 or pos + klen > limit:
            raise ParseError("header key does not fit the record", offset=pos)
        keys.append(s[pos : pos + klen].decode("utf-8", "replace"))
        vlen, pos = read_varint(s, pos + klen)
        if vlen >= 0:
            pos += vlen
            if pos > limit:
                raise ParseError("header value does not fit the record", offset=pos)
    return tuple(keys), pos


def parse_records_with_schema(batch: RecordBatch, payload: bytes) -> list[Record]:
    """The same as :func:`decode_records` through the ``RecordV2`` declaration (slow; used by tests)."""
    stream = io.BytesIO(payload)
    out = []
    for _ in range(batch.records_count):
        start = stream.tell()
        try:
            rec = RecordV2.parse_stream(stream)
        except cs.ConstructError as exc:
            raise ParseError(f"invalid record: {exc}", offset=start) from None
        ts = (
            batch.max_timestamp
            if batch.attributes & ATTR_TIMESTAMP_TYPE
            else (batch.base_timestamp + rec.timestamp_delta)
        )
        seq = last_sequence(batch.base_sequence, rec.offset_delta) if batch.base_sequence >= 0 else -1
        out.append(
            Record(
                batch.base_offset + rec.offset_delta,
                ts,
                rec.offset_delta,
                rec.timestamp_delta,
                rec.attributes,
                rec.key.data,
                rec.value.data,
                [Header(h.key.decode("utf-8", "replace"), h.value) for h in rec.headers],
                stream.tell() - start,
                seq,
                -1 if rec.key.data is None else len(rec.key.data),
                -1 if rec.value.data is None else len(rec.value.data),
            )
        )
    return out


# ------------------------------------------------------------------------------------------- building


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> bytes:
    """One record's bytes (length varint included), as a producer's builder writes it."""
    body = bytearray(b"\x00")
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    for item in (key, value):
        if item is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(item)) + item
    headers = headers or []
    body += encode_varint(len(headers))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8")
        body += encode_varint(len(kb)) + kb
        body += encode_varint(-1) if hval is None else encode_varint(len(hval)) + hval
    return encode_varint(len(body)) + bytes(body)


@dataclass(slots=True)
class RecordSpec:
    """Input to :func:`build_batch`: one record to write."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset_delta: int | None = None


def build_batch(
    records: list[RecordSpec],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = 0,
    compression: int = 0,
    timestamp_type_log_append: bool = False,
    transactional: bool = False,
    control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode a complete v2 batch with a correct CRC-32C (header packed by ``HEADER_STRUCT``)."""
    if records:
        first_ts = records[0].timestamp if base_timestamp is None else base_timestamp
        deltas = [r.offset_delta if r.offset_delta is not None else i for i, r in enumerate(records)]
        body = b"".join(
            encode_record(d, r.timestamp - first_ts, r.key, r.value, r.headers)
            for d, r in zip(deltas, records, strict=True)
        )
        max_ts = max(r.timestamp for r in records) if max_timestamp is None else max_timestamp
        lod = deltas[-1] if last_offset_delta is None else last_offset_delta
    else:
        first_ts = -1 if base_timestamp is None else base_timestamp
        body = b""
        max_ts = -1 if max_timestamp is None else max_timestamp
        lod = 0 if last_offset_delta is None else last_offset_delta
    if compression:
        from parsers import codecs

        body = codecs.compress(compression, body)
    attributes = compression & ATTR_COMPRESSION_MASK
    if timestamp_type_log_append:
        attributes |= ATTR_TIMESTAMP_TYPE
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    header = HEADER_STRUCT.pack(
        base_offset,
        RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        lod,
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    raw = bytearray(header + body)
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[CRC_START:]))
    return bytes(raw)


def restamp(
    batch_bytes: bytes, *, base_offset: int | None = None, partition_leader_epoch: int | None = None
) -> bytes:
    """Rewrite baseOffset / partitionLeaderEpoch as a leader does, without touching the CRC (§3.1)."""
    raw = bytearray(batch_bytes)
    if base_offset is not None:
        struct.pack_into(">q", raw, 0, base_offset)
    if partition_leader_epoch is not None:
        struct.pack_into(">i", raw, 12, partition_leader_epoch)
    return bytes(raw)
