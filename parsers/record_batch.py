"""RecordBatch magic v2: the 61-byte header, records and their zig-zag varint fields (spec §3).

``BatchHeaderV2`` and ``RecordV2`` are the declarations; ``HEADER_STRUCT`` (a ``struct.Struct``
derived from ``BatchHeaderV2``) and ``decode_records`` are the fast paths used on large segments,
and ``tests/parsers/test_record_batch.py`` proves both agree with the declarations.
"""

from __future__ import annotations

import io
import struct
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


def records_payload(batch: RecordBatch, raw: bytes | memoryview, *, max_bytes: int = 64 << 20) -> bytes:
    """The (decompressed) records section of ``batch``; ``raw`` holds the batch from its first byte."""
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
    """Decode ``batch.records_count`` records from a (decompressed) records section.

    Applies Kafka's checks: each record consumes exactly its declared length, no bytes remain after
    the last record, header keys are non-null. Errors carry payload-relative byte offsets.
    """
    count = batch.records_count
    if count < 0:
        raise ParseError(f"Found invalid record count {count} in magic v2 batch", offset=0)
    out: list[Record] = []
    pos = 0
    end = len(payload)
    base_offset, base_ts = batch.base_offset, batch.base_timestamp
    log_append = bool(batch.attributes & ATTR_TIMESTAMP_TYPE)
    for _ in range(count):
        if pos >= end:
            raise ParseError(f"premature EOF: {count} records declared, only {len(out)} found", offset=pos)
        start = pos
        length, pos = read_varint(payload, pos)
        body_start = pos
        if length < 0 or body_start + length > end:
            raise ParseError(f"Invalid record size {length}", offset=start)
        limit = body_start + length
        if length < 6:  # attributes + five varints is the smallest record body
            raise ParseError(f"Invalid record size {length}: smaller than the smallest record", offset=start)
        attributes = payload[pos]
        pos += 1
        ts_delta, pos = read_varlong(payload, pos)
        off_delta, pos = read_varint(payload, pos)
        key, pos = _read_nullable(payload, pos, limit, "key")
        value, pos = _read_nullable(payload, pos, limit, "value")
        if pos >= limit:
            raise ParseError(
                f"Invalid record size: expected to read {length} bytes in record payload, but the record "
                f"needs more",
                offset=start,
            )
        n_headers, pos = read_varint(payload, pos)
        if n_headers < 0 or n_headers > limit - pos:
            raise ParseError(f"Found invalid number of record headers {n_headers}", offset=pos)
        headers = []
        for _h in range(n_headers):
            hkey, pos = _read_nullable(payload, pos, limit, "header key")
            if hkey is None:
                raise ParseError("Invalid negative header key size", offset=pos)
            hval, pos = _read_nullable(payload, pos, limit, "header value")
            headers.append(Header(hkey.decode("utf-8", "replace"), hval))
        if pos != limit:
            raise ParseError(
                f"Invalid record size: expected to read {length} bytes in record payload, "
                f"but instead read {pos - body_start}",
                offset=start,
            )
        seq = last_sequence(batch.base_sequence, off_delta) if batch.base_sequence >= 0 else NO_SEQUENCE
        ts = batch.max_timestamp if log_append else base_ts + ts_delta
        out.append(
            Record(
                base_offset + off_delta,
                ts,
                off_delta,
                ts_delta,
                attributes,
                key,
                value,
                headers,
                pos - start,
                seq,
            )
        )
    if pos != end:
        raise ParseError(
            f"Incorrect declared batch size, {end - pos} bytes remain after {count} records", offset=pos
        )
    return out


def _read_nullable(buf, pos: int, limit: int, what: str) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > limit:
        raise ParseError(f"{what} of {length} bytes runs past the end of the record", offset=pos)
    return bytes(buf[pos : pos + length]), pos + length


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
