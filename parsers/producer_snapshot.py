"""Producer state snapshot: ``<20-digit offset>.snapshot`` (spec §10).

A snapshot holds, per producer ID, the metadata of its last batch below the snapshot offset (which is the
*exclusive* end offset covered). Layout, version 1 (the only one ever written)::

    int16 version | uint32 crc (CRC-32C of bytes 6..end) | int32 count | count x 46-byte entries

Kafka (``ProducerStateManager.readSnapshot``) first reads the schema (``Snapshot failed schema validation``),
then checks the version and the CRC. Here a CRC mismatch is *reported* (``crc_valid``) rather than raised
so that an auditor can flag it and still look at the entries; :func:`verify_producer_snapshot` is the strict
form.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import construct as cs

from parsers.dirfiles import parse_segment_file_name
from parsers.errors import ParseError
from parsers.primitives import crc32c, struct_of

ProducerSnapshotEntry = cs.Struct(
    "producer_id" / cs.Int64sb,
    "producer_epoch" / cs.Int16sb,
    "last_sequence" / cs.Int32sb,
    "last_offset" / cs.Int64sb,  # last data offset written by the producer; -1 if none
    "offset_delta" / cs.Int32sb,  # lastSequence - firstSequence of the last batch
    "timestamp" / cs.Int64sb,  # max timestamp of the last batch
    "coordinator_epoch" / cs.Int32sb,  # -1 if never in a transaction
    "current_txn_first_offset" / cs.Int64sb,  # -1 = no open transaction
)
"""§10.1: one 46-byte producer entry."""

ProducerSnapshot = cs.Struct(
    "version" / cs.Int16sb,
    "crc" / cs.Int32ub,
    "count" / cs.Int32sb,
    "entries" / cs.Array(cs.this.count, ProducerSnapshotEntry),
)
"""§10.1: the whole file (use for building; :func:`read_producer_snapshot` validates before parsing)."""

PRODUCER_SNAPSHOT_VERSION = 1
HEADER_SIZE = 10  # version + crc + count
CRC_START = 6  # the CRC covers everything after the crc field
ENTRY_SIZE = ProducerSnapshotEntry.sizeof()  # 46
INT32_MAX = 2**31 - 1

_ENTRY = struct_of(ProducerSnapshotEntry)
_HEADER = struct_of(cs.Struct(*ProducerSnapshot.subcons[:3]))  # version, crc, count
_FIELDS = [sub.name for sub in ProducerSnapshotEntry.subcons]


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence``: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence < decrement:
        return _int32(_int32(INT32_MAX - _int32(decrement - sequence)) + 1)
    return _int32(sequence - decrement)


@dataclass
class ProducerStateEntry:
    """One producer's entry (Kafka's ``ProducerStateEntry`` as restored from a snapshot)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        """First sequence of the producer's last batch (lastSequence - offsetDelta, with sequence wrap)."""
        return decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka restores batch metadata (sequence range, offset) only when ``last_offset >= 0``."""
        return self.last_offset >= 0

    @property
    def has_open_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0

    def to_dict(self) -> dict:
        data = {name: getattr(self, name) for name in _FIELDS}
        data["first_sequence"] = self.first_sequence
        return data


@dataclass
class ProducerSnapshotFile:
    """A decoded ``.snapshot`` file; ``crc_valid`` is False when the stored CRC-32C does not match."""

    version: int
    crc: int
    computed_crc: int
    crc_valid: bool
    entries: list[ProducerStateEntry] = field(default_factory=list)


def _header(data: bytes | memoryview) -> tuple[int, int, int]:
    version, crc, count = _HEADER.unpack_from(data, 0)
    return version, crc, count


def _schema_error(message: str, path: str | None, offset: int) -> ParseError:
    return ParseError(f"Snapshot failed schema validation: {message}", path=path, offset=offset)


def read_producer_snapshot(data: bytes | memoryview, path: str | None = None) -> ProducerSnapshotFile:
    """Decode a producer state snapshot (spec §10.1).

    ParseError for: a file shorter than the 10-byte header, a negative count, a count whose entries do not fit
    in the remaining bytes, bytes after the last entry (Kafka itself ignores them, but they are inside the
    CRC-covered range and never written), and a version other than 1. A CRC mismatch is only reported.
    """
    size = len(data)
    if size < HEADER_SIZE:
        field_name = "version" if size < 2 else "crc" if size < 6 else "producer_entries"
        raise _schema_error(f"Error reading field '{field_name}': file has only {size} bytes", path, size)
    version, crc, count = _header(data)
    remaining = size - HEADER_SIZE
    if count < 0:
        raise _schema_error(
            f"Error reading field 'producer_entries': Array size {count} cannot be negative", path, CRC_START
        )
    if count * ENTRY_SIZE > remaining:
        raise _schema_error(
            f"Error reading field 'producer_entries': {count} entries of {ENTRY_SIZE} bytes need "
            f"{count * ENTRY_SIZE} bytes, only {remaining} bytes available",
            path,
            CRC_START,
        )
    end = HEADER_SIZE + count * ENTRY_SIZE
    if end != size:
        raise ParseError(
            f"Snapshot has {size - end} trailing bytes after its {count} entries", path=path, offset=end
        )
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise ParseError(f"Snapshot contained an unknown file version {version}", path=path, offset=0)
    computed = crc32c(memoryview(data)[CRC_START:])
    body = memoryview(data)[HEADER_SIZE:end]
    entries = [ProducerStateEntry(*values) for values in _ENTRY.iter_unpack(body)]
    return ProducerSnapshotFile(
        version=version, crc=crc, computed_crc=computed, crc_valid=crc == computed, entries=entries
    )


def verify_producer_snapshot(data: bytes | memoryview, path: str | None = None) -> ProducerSnapshotFile:
    """:func:`read_producer_snapshot`, but a CRC mismatch raises Kafka's ``CorruptSnapshotException`` text."""
    snapshot = read_producer_snapshot(data, path)
    if not snapshot.crc_valid:
        raise ParseError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snapshot.crc}. "
            f"Computed crc: {snapshot.computed_crc}",
            path=path,
            offset=2,
        )
    return snapshot


def build_producer_snapshot(entries: Iterable[ProducerStateEntry | dict]) -> bytes:
    """Bytes of a version-1 snapshot holding ``entries``, with the CRC-32C computed over bytes 6..end."""
    items = []
    for entry in entries:
        values = entry if isinstance(entry, dict) else {name: getattr(entry, name) for name in _FIELDS}
        items.append({name: values[name] for name in _FIELDS})
    try:
        body = ProducerSnapshot.build(
            {"version": PRODUCER_SNAPSHOT_VERSION, "crc": 0, "count": len(items), "entries": items}
        )
    except cs.ConstructError as exc:
        raise ValueError(str(exc)) from None
    crc = crc32c(body[CRC_START:])
    return body[:2] + crc.to_bytes(4, "big") + body[CRC_START:]


def snapshot_offset_from_name(filename: str) -> int:
    """The offset in ``<20 digits>.snapshot`` (or ``.snapshot.deleted``): the exclusive end offset covered."""
    base_offset, suffix, _state = parse_segment_file_name(os.path.basename(filename))
    if suffix != ".snapshot":
        raise ParseError(f"{filename!r} is not a producer snapshot file name", path=filename)
    return base_offset
