"""Records of a replica's CRC-valid batches, read back from its segments (the columnar walk of
:mod:`auditor.observe.extract` found the batches; this decodes what is inside them).

One reader for every table built from records: record hashes of compacted partitions, the group
coordinator's ``__consumer_offsets`` rows and the transaction coordinator's ``__transaction_state`` rows.
A batch is *live* when Kafka's load keeps it (:meth:`auditor.kafka.recovery.LogRecovery.keeps`, the one
statement of what recovery cuts); the transaction state of a batch is
:func:`auditor.kafka.transactions.classify` over the replica's live batches in offset order.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from auditor.kafka.recovery import LogRecovery
from auditor.kafka.transactions import Batch, classify
from auditor.layout.tasks import PartitionTask
from parsers.control import decode_control_record
from parsers.errors import ParseError
from parsers.files import regular_file_problem
from parsers.record_batch import HEADER_STRUCT, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch
from parsers.record_build import encode_record_content
from parsers.segment import RecordColumns, SegmentWalker


def record_hash(key: bytes | None, value: bytes | None, headers) -> int:
    """A 64-bit hash of a record's key, value and headers (nulls distinct from empty): blake2b-64 of their
    encoding in Kafka's record format (``record_build.encode_record_content``), the bytes a record holds
    from its key length on when its varints take their fewest bytes (so :func:`record_hashes` hashes those
    bytes where they lie)."""
    content = encode_record_content(key, value, [(h.key, h.value) for h in headers])
    return int.from_bytes(hashlib.blake2b(content, digest_size=8).digest(), "big", signed=True)


def read_batch_records(
    path: str | os.PathLike, position: int, size: int, walker: SegmentWalker | None = None
):
    """The header of the CRC-valid batch at ``position`` in a segment and an iterator streaming its records
    (the batch is never held whole; ParseError on bad data, also while iterating). ``walker``: an open
    walker of that segment to reuse."""
    walker = walker if walker is not None else SegmentWalker(path)
    raw = walker.read(position, RECORD_BATCH_OVERHEAD)
    if len(raw) < RECORD_BATCH_OVERHEAD or struct.unpack_from(">i", raw, 8)[0] + LOG_OVERHEAD != size:
        raise ParseError("batch header does not match the walk", path=str(path), offset=position)
    batch = RecordBatch.from_tuple(HEADER_STRUCT.unpack_from(raw), position=position)
    if walker.batch_crc(batch) != batch.crc:
        raise ParseError("batch CRC mismatch", path=str(path), offset=position)
    return batch, walker.records(batch)


def is_live(recovery: LogRecovery | None, segment: int, position: int) -> bool:
    """The batch at ``position`` of segment ``segment`` is part of the log Kafka loads (``recovery`` None:
    nothing is cut)."""
    return recovery is None or recovery.keeps(segment, position)


@dataclass
class LoggedBatch:
    """One batch of a replica: its transaction facts, whether recovery keeps it, the rows decoded from its
    data records, and (after :func:`logged_batches`) its transaction state."""

    facts: Batch
    live: bool
    rows: list[dict] = field(default_factory=list)
    txn_state: str | None = None


Decode = Callable[[Any, str, list[str]], "dict | None"]
"""Turns one data record (``rec``, ``where`` = ``<segment path>: byte <batch position>``, the error list)
into row fields."""


def _control_type(rec) -> int:
    try:
        return decode_control_record(rec.key, rec.value).type_id
    except ParseError:
        return -1


def _read(
    batch: RecordBatch, records, live: bool, where: str, decode: Decode, errors: list[str]
) -> LoggedBatch:
    control_type = None
    decoded: list[dict] = []
    try:
        for rec in records:
            if batch.is_control:
                if control_type is None:
                    control_type = _control_type(rec)
                continue
            row = decode(rec, where, errors)
            if row is not None:
                decoded.append(row)
    except (ParseError, OSError) as exc:
        at = f" at byte {exc.offset}" if isinstance(exc, ParseError) and exc.offset is not None else ""
        errors.append(f"{where}: records do not decode{at}: {getattr(exc, 'message', exc)}")
    facts = Batch(
        batch.base_offset,
        batch.last_offset,
        batch.producer_id,
        batch.producer_epoch,
        batch.is_transactional,
        batch.is_control,
        -1 if batch.is_control and control_type is None else control_type,
        batch.records_count,
    )
    return LoggedBatch(facts, live, decoded)


def logged_batches(
    part_dir: Path,
    valid_batches: list[tuple[int, int, int]],
    recovery: LogRecovery | None,
    decode: Decode,
    errors: list[str],
) -> list[LoggedBatch]:
    """Every valid batch (``(segment, position, size)``) read back, in offset order, with its records decoded
    by ``decode`` and its transaction state; a segment or batch that cannot be read is described in
    ``errors`` (file, byte position) and skipped, the rest is read."""
    out: list[LoggedBatch] = []
    walkers: dict[int, SegmentWalker | None] = {}
    try:
        for segment, position, size in valid_batches:
            path = part_dir / f"{segment:020d}.log"
            where = f"{path}: byte {position}"
            try:
                if segment not in walkers:
                    walkers[segment] = None  # a segment that cannot be opened is reported once
                    if (problem := regular_file_problem(path)) is not None:
                        raise ParseError(problem, path=str(path), offset=position)
                    walkers[segment] = SegmentWalker(path)
                walker = walkers[segment]
                if walker is None:
                    continue
                batch, records = read_batch_records(path, position, size, walker)
            except (ParseError, OSError) as exc:
                errors.append(f"{where}: {exc.message if isinstance(exc, ParseError) else exc}")
                continue
            out.append(_read(batch, records, is_live(recovery, segment, position), where, decode, errors))
    finally:
        for walker in walkers.values():
            if walker is not None:
                walker.close()
    out.sort(key=lambda b: b.facts.base_offset)
    live = [b for b in out if b.live]
    for b, state in zip(live, classify([b.facts for b in live]), strict=True):
        b.txn_state = state
    return out


def replica_key(task: PartitionTask) -> dict[str, Any]:
    """The key columns of every row of a replica (``rows._KEY``)."""
    return {
        "cluster": task.cluster,
        "topic": task.topic,
        "partition": task.partition,
        "broker": task.broker,
        "log_dir": task.log_dir,
    }


def logged_rows(task: PartitionTask, batches: list[LoggedBatch]) -> list[dict]:
    """The rows of ``batches`` with the replica's key and their batch's columns (``rows._LOGGED``)."""
    key = replica_key(task)
    return [
        {
            **key,
            "batch_base_offset": b.facts.base_offset,
            "producer_id": b.facts.producer_id,
            "producer_epoch": b.facts.producer_epoch,
            "is_transactional": b.facts.is_transactional,
            "txn_state": b.txn_state,
            "live": b.live,
            **row,
        }
        for b in batches
        for row in b.rows
    ]


# ------------------------------------------------------------------------------- record rows, by columns


def record_hashes(buf: bytes, cols: RecordColumns) -> tuple[np.ndarray, np.ndarray]:
    """:func:`record_hash` of every record of ``cols`` (decoded from ``buf``) as int64, and whether each
    could be hashed here: the content bytes of a record (``cols.content`` to its end) are hashed as they lie
    when they are what :func:`record_hash` encodes, that is when every length varint takes its fewest bytes
    and no header key holds a byte above 0x7F (a key that is not ASCII is hashed after a UTF-8 decoding
    with replacement, :class:`parsers.record_batch.Header`, which only :func:`record_hash` reproduces)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    n = len(cols.start)
    end = cols.start + cols.size
    key_len, value_len = cols.fields["key"][1], cols.fields["value"][1]
    count, owner, element = cols.fields["headers"]
    hkey_pos, hkey_len = element["key"]
    hvalue_len = element["value"][1]
    fewest = _encoded(key_len) + _encoded(value_len) + _varint_width(count)
    if len(owner):
        per_header = _encoded(hkey_len) + _encoded(hvalue_len)
        fewest += np.bincount(owner, weights=per_header, minlength=n).astype(np.int64)
    hashable = fewest == end - cols.content
    if len(owner):
        # header keys: a non-ASCII byte anywhere in one makes its record not hashable here
        high = np.zeros(len(data) + 1, dtype=np.int32)
        np.cumsum(data >= 0x80, out=high[1:])
        hashable[owner[high[hkey_pos + hkey_len] > high[hkey_pos]]] = False
    return np.frombuffer(_blake2b_64(buf, cols.content, end), dtype=">i8").astype(np.int64), hashable


def _blake2b_64(buf: bytes, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The 8-byte blake2b digests of ``buf[start:end]`` for each span, concatenated: copies of one empty
    hasher, updated (a third less time a record than a new hasher each, whose keyword arguments are parsed
    every call: ``bench/bench_extract.py``)."""
    fresh = hashlib.blake2b(digest_size=8).copy
    out = []
    append = out.append
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        h = fresh()
        h.update(buf[a:b])
        append(h.digest())
    return b"".join(out)


def _varint_width(values: np.ndarray) -> np.ndarray:
    """Bytes of the shortest zig-zag varint of each int32 value (``primitives.encode_varint``)."""
    v = values.astype(np.int64)
    zigzag = ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF
    return 1 + sum((zigzag >= 1 << (7 * k)).astype(np.int64) for k in range(1, 5))


def _encoded(lengths: np.ndarray) -> np.ndarray:
    """Bytes of a nullable byte field of each length (-1: null) in its shortest encoding."""
    return _varint_width(lengths) + np.maximum(lengths, 0)
