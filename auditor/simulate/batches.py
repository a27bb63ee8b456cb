"""Encoding the simulator's batches with the project's own builders.

``encode_data_batch``/``encode_marker_batch``/``encode_leader_change_batch`` go through
``parsers.record_batch.build_batch``. :class:`FastBatchEncoder` is the ``--scale`` fast path: it keeps the
encoded records section of a template batch and only packs the header and the CRC-32C per batch;
``tests/simulate/test_batches.py`` proves its output byte-identical to ``build_batch``.
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
    records: list[SimRecord],
    *,
    base_offset: int,
    epoch: int,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A producer's data batch as the leader stored it (offsets and partitionLeaderEpoch assigned)."""
    return build_batch(
        [RecordSpec(r.key, r.value, r.timestamp) for r in records],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        compression=compression,
        transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
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
    rec = SimRecord(key, value, timestamp)
    data = build_batch(
        [RecordSpec(key, value, timestamp)],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        transactional=True,
        control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
    return data, rec


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
    rec = SimRecord(key, value, timestamp)
    data = build_batch(
        [RecordSpec(key, value, timestamp)],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        control=True,
    )
    return data, rec


def encode_metadata_batch(values: list[bytes], *, base_offset: int, epoch: int, timestamp: int) -> bytes:
    """A KRaft data batch: null keys, framed metadata record values (spec §14.1)."""
    return build_batch(
        [RecordSpec(None, v, timestamp) for v in values],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


_CRC_AT = struct.Struct(">I")


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
        self.batch_length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(self.body)
        self.size = LOG_OVERHEAD + self.batch_length
        self._pack = HEADER_STRUCT.pack
        self._crc = _crc32c.crc32c

    def encode(self, base_offset: int, epoch: int, timestamp: int) -> bytes:
        """One batch; byte-identical to ``build_batch`` of the same records."""
        header = self._pack(
            base_offset,
            self.batch_length,
            epoch,
            MAGIC_V2,
            0,
            0,
            self.count - 1,
            timestamp,
            timestamp,
            -1,
            -1,
            -1,
            self.count,
        )
        crc = self._crc(self.body, self._crc(header[CRC_START:]))
        return b"".join((header[:17], _CRC_AT.pack(crc), header[CRC_START:], self.body))

    def records(
        self, keys: list[bytes | None], values: list[bytes | None], timestamp: int
    ) -> list[RecordSpec]:
        return [RecordSpec(k, v, timestamp) for k, v in zip(keys, values, strict=True)]
