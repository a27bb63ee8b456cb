"""Building v2 batches and records, as a producer's builder writes them (fixtures, tests, the simulator)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from parsers.batch_header import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
)
from parsers.primitives import (
    crc32c,
    encode_varint,
    encode_varlong,
)

# ------------------------------------------------------------------------------------------- building


def encode_record_content(key: bytes | None, value: bytes | None, headers) -> bytes:
    """A record's content as Kafka writes it (``DefaultRecord.writeTo``): its bytes from the key length on,
    that is the ``key``, ``value``, ``header_count`` and ``headers`` fields of ``record_v2.RecordV2``
    (varint lengths, -1 for null; ``headers``: ``(key, value)`` pairs, the key a string written in UTF-8)."""
    body = bytearray()
    for item in (key, value):
        if item is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(item)) + item
    headers = list(headers or ())
    body += encode_varint(len(headers))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8", "surrogatepass")
        body += encode_varint(len(kb)) + kb
        body += encode_varint(-1) if hval is None else encode_varint(len(hval)) + hval
    return bytes(body)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> bytes:
    """One record's bytes (length varint included), as a producer's builder writes it."""
    body = b"\x00" + encode_varlong(timestamp_delta) + encode_varint(offset_delta)
    body += encode_record_content(key, value, headers)
    return encode_varint(len(body)) + body


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
