"""A record of a v2 batch (spec §3.4): the ``RecordV2`` declaration, the one owner of the record's layout.

:data:`RECORD_PLAN` reads the declaration as decoding steps; the decoders of :mod:`parsers.record_decode`,
:mod:`parsers.record_rows`, :mod:`parsers.segment` (``record_columns``) and :mod:`parsers.control`
(``first_control_type``) follow it (tests prove they agree with the declaration).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import construct as cs

from parsers.batch_header import (
    ATTR_TIMESTAMP_TYPE,
    NO_SEQUENCE,
    RecordBatch,
    last_sequence,
)
from parsers.errors import ParseError
from parsers.primitives import VarInt, VarLong, read_varint, read_varlong

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


def field_plan(schema: cs.Struct) -> tuple:
    """The decoding steps of a record declaration, read off its Construct fields: ``(name, kind)`` with kind
    ``varint``, ``varlong``, ``int8``, ``nullable`` (varint length, -1 null, then bytes), ``bytes`` (the same,
    never null) or ``(name, "array", element plan)`` (varint count, then the elements)."""
    subs = list(schema.subcons)
    steps: list[tuple] = []
    i = 0
    while i < len(subs):
        inner = subs[i].subcon
        after = subs[i + 1].subcon if i + 1 < len(subs) else None
        if inner is VarInt and isinstance(after, cs.Array):
            steps.append((subs[i + 1].name, "array", field_plan(after.subcon)))
            i += 2
        elif inner is VarInt and isinstance(after, (cs.Bytes, cs.IfThenElse)):
            nullable = isinstance(after, cs.IfThenElse)
            steps.append((subs[i + 1].name, "nullable" if nullable else "bytes"))
            i += 2
        elif isinstance(inner, cs.Struct):
            ((_, kind),) = field_plan(inner)
            steps.append((subs[i].name, kind))
            i += 1
        else:
            kinds = {id(VarInt): "varint", id(VarLong): "varlong", id(cs.Int8sb): "int8"}
            if id(inner) not in kinds:
                raise TypeError(f"field {subs[i].name!r} has no columnar decoder")
            steps.append((subs[i].name, kinds[id(inner)]))
            i += 1
    return tuple(steps)


RECORD_PLAN = field_plan(RecordV2)
"""``RecordV2`` as decoding steps; the first is the record's length prefix."""

WRITTEN_OUT_PLAN = (
    ("length", "varint"),
    ("attributes", "int8"),
    ("timestamp_delta", "varlong"),
    ("offset_delta", "varint"),
    ("key", "nullable"),
    ("value", "nullable"),
    ("headers", "array", (("key", "bytes"), ("value", "nullable"))),
)
"""The steps that the record-by-record decoders (``record_decode._record_body`` and ``_large_record_body``,
``record_rows.record_rows``) write out one after the other, for speed. The import fails if the declaration
and these steps part (a changed ``RecordV2`` cannot leave them behind); the tests prove the decoders equal
to the declaration on generated, mutated and random records."""
assert RECORD_PLAN == WRITTEN_OUT_PLAN, f"RecordV2 changed: {RECORD_PLAN} (update the written-out decoders)"

_SCALAR_READERS = {"varint": read_varint, "varlong": read_varlong}


def read_step(buf: bytes | memoryview, pos: int, kind: str) -> tuple[int, int]:
    """The value of one scalar step of :data:`RECORD_PLAN` (``int8``, ``varint``, ``varlong``) at ``pos`` and
    the position after it; :class:`ParseError` (``IndexError`` for an ``int8`` past the end) where it does
    not fit."""
    if kind == "int8":
        return (buf[pos] ^ 0x80) - 0x80, pos + 1
    return _SCALAR_READERS[kind](buf, pos)


def record_of(batch, attributes, ts_delta, off_delta, key, value, headers, key_size, value_size) -> Record:
    """A decoded record: its offset, timestamp and sequence from the batch and its deltas."""
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
