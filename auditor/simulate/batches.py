"""Encoding the simulator's batches with the project's own builders.

``encode_data_batch``/``encode_marker_batch``/``encode_leader_change_batch`` go through
``parsers.record_batch.build_batch``. :class:`FastBatchEncoder` is the ``--scale`` fast path: it keeps the
encoded records section of a template batch and only packs the header and the CRC-32C per batch;
``tests/simulate/test_batches.py`` proves its output byte-identical to ``build_batch``. It packs the
header with :func:`batch_header` and adds the CRC with :func:`with_crc`, which the hostile-input tests also
use to wrap records sections that are compressed or broken on purpose.
"""

from __future__ import annotations

import struct

import crc32c as _crc32c

from auditor.simulate.log import SimRecord
from parsers.control import encode_control_record, encode_end_txn_marker
from parsers.record_batch import (
    CRC_START,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordSpec,
    build_batch,
    encode_record,
)


def encode_data_batch(
    records: list[SimRecord], *, base_offset: int, epoch: int, **attributes: int | bool
) -> bytes:
    """A batch as the leader stored it (offsets and partitionLeaderEpoch assigned); ``attributes`` are
    ``build_batch``'s (compression, transactional, control, producer ID, epoch and base sequence)."""
    return build_batch(
        [RecordSpec(r.key, r.value, r.timestamp) for r in records],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        **attributes,
    )


def encode_marker_batch(
    *,
    commit: bool,
    coordinator_epoch: int,
    base_offset: int,
    epoch: int,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
) -> tuple[bytes, SimRecord]:
    """A COMMIT/ABORT marker batch (``writeEndTransactionalMarker``, spec §4.1): 78 bytes."""
    key, value = encode_end_txn_marker(commit, coordinator_epoch)
    return _control_batch(
        key,
        value,
        base_offset=base_offset,
        epoch=epoch,
        timestamp=timestamp,
        transactional=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def encode_leader_change_batch(
    *, leader_id: int, voters: list[int], base_offset: int, epoch: int, timestamp: int
) -> tuple[bytes, SimRecord]:
    """The KRaft LEADER_CHANGE control batch a new metadata-log leader writes first (spec §4.2)."""
    key, value = encode_control_record(
        "LEADER_CHANGE",
        {
            "version": 0,
            "leaderId": leader_id,
            "voters": [{"voterId": v} for v in voters],
            "grantingVoters": [{"voterId": v} for v in voters],
        },
    )
    return _control_batch(key, value, base_offset=base_offset, epoch=epoch, timestamp=timestamp)


def _control_batch(
    key: bytes, value: bytes, *, base_offset: int, epoch: int, timestamp: int, **producer: int | bool
) -> tuple[bytes, SimRecord]:
    """A control batch of one record (spec §4) and that record as the simulator keeps it."""
    record = SimRecord(key, value, timestamp)
    return encode_data_batch([record], base_offset=base_offset, epoch=epoch, control=True, **producer), record


def encode_metadata_batch(values: list[bytes], *, base_offset: int, epoch: int, timestamp: int) -> bytes:
    """A KRaft data batch: null keys, framed metadata record values (spec §14.1)."""
    records = [SimRecord(None, v, timestamp) for v in values]
    return encode_data_batch(records, base_offset=base_offset, epoch=epoch)


_CRC_AT = struct.Struct(">I")


def batch_header(
    base_offset: int,
    records_size: int,
    count: int,
    *,
    timestamp: int,
    epoch: int = 0,
    attributes: int = 0,
    last_offset_delta: int | None = None,
    crc: int = 0,
) -> bytes:
    """The 61-byte v2 header (spec §3.1) of a batch of ``count`` records without a producer ID, all with
    ``timestamp``, followed by ``records_size`` bytes of records (``lastOffsetDelta`` defaults to
    ``count - 1``)."""
    return HEADER_STRUCT.pack(
        base_offset,
        RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + records_size,
        epoch,
        MAGIC_V2,
        crc,
        attributes,
        max(count - 1, 0) if last_offset_delta is None else last_offset_delta,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        count,
    )


def with_crc(header: bytes, records: bytes) -> bytes:
    """The batch of ``header`` (from :func:`batch_header`) and an encoded records section (compressed or
    deliberately broken ones too), with the CRC-32C Kafka computes from the attributes on (spec §3.2)."""
    crc = _crc32c.crc32c(records, _crc32c.crc32c(header[CRC_START:]))
    return b"".join((header[:17], _CRC_AT.pack(crc), header[CRC_START:], records))


class FastBatchEncoder:
    """Uncompressed, non-idempotent batches of ``count`` records whose keys/values repeat a template.

    All records share the batch timestamp (timestamp delta 0), so the encoded records section is the
    same for every batch and only the header changes: base offset, epoch, timestamps and the CRC-32C
    (computed over the header tail and then continued over the cached records section).
    """

    def __init__(self, keys: list[bytes | None], values: list[bytes | None]) -> None:
        if len(keys) != len(values) or not keys:
            raise ValueError("keys and values must be non-empty and of equal length")
        self.count = len(keys)
        self.body = b"".join(
            encode_record(i, 0, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))
        )
        self.size = RECORD_BATCH_OVERHEAD + len(self.body)

    def encode(self, base_offset: int, epoch: int, timestamp: int) -> bytes:
        """One batch; byte-identical to ``build_batch`` of the same records."""
        header = batch_header(base_offset, len(self.body), self.count, timestamp=timestamp, epoch=epoch)
        return with_crc(header, self.body)

    def records(
        self, keys: list[bytes | None], values: list[bytes | None], timestamp: int
    ) -> list[RecordSpec]:
        return [RecordSpec(k, v, timestamp) for k, v in zip(keys, values, strict=True)]
