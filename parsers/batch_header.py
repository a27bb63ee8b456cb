"""The RecordBatch magic v2 header (spec §3.1): the 61-byte ``BatchHeaderV2`` declaration, the
``HEADER_STRUCT`` fast path derived from it, the attributes and :class:`RecordBatch`."""

from __future__ import annotations

from dataclasses import dataclass

import construct as cs

from parsers.errors import ParseError
from parsers.primitives import (
    crc32c,
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
