"""Kafka's primitive encodings: zig-zag varints, unsigned varints, CRCs and UUIDs (spec §1).

Both a Construct form (for declarative schemas and ``build``) and plain functions (for hot paths)
are given; ``tests/parsers/test_primitives.py`` proves they agree.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib

import construct as cs
import crc32c as _crc32c

from parsers.errors import ParseError

# ---------------------------------------------------------------------------------------- fast paths


def struct_of(schema: cs.Struct) -> struct.Struct:
    """Derive a ``struct.Struct`` from a Construct ``Struct`` made only of fixed-size integer fields."""
    fmt = ">"
    for sub in schema.subcons:
        inner = getattr(sub, "subcon", sub)
        fmtstr = getattr(inner, "fmtstr", None)
        if fmtstr is None or fmtstr[0] not in "<>=!":
            raise TypeError(f"field {sub.name!r} is not a fixed-size integer")
        if fmtstr[0] != ">":
            raise TypeError(f"field {sub.name!r} is not big-endian")
        fmt += fmtstr[1:]
    compiled = struct.Struct(fmt)
    assert compiled.size == schema.sizeof()
    return compiled


# ---------------------------------------------------------------------------------------------- CRCs


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli), as stored in v2 batches and producer snapshots."""
    return _crc32c.crc32c(data)


def crc32(data: bytes | memoryview) -> int:
    """CRC-32 (IEEE, zlib), as stored in legacy v0/v1 messages."""
    return zlib.crc32(data) & 0xFFFFFFFF


# ------------------------------------------------------------------------------------------- varints


def read_uvarint(buf: bytes | memoryview, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode an unsigned LEB128 varint at ``pos``; return (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise ParseError("varint runs past the end of the buffer", offset=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise ParseError(f"varint does not terminate after {max_bytes} bytes", offset=pos - 1)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode Kafka's zig-zag signed 32-bit varint (at most 5 bytes)."""
    zz, pos = read_uvarint(buf, pos, 5)
    zz &= 0xFFFFFFFF
    return (zz >> 1) ^ -(zz & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode Kafka's zig-zag signed 64-bit varlong (at most 10 bytes)."""
    zz, pos = read_uvarint(buf, pos, 10)
    zz &= 0xFFFFFFFFFFFFFFFF
    return (zz >> 1) ^ -(zz & 1), pos


def varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    """``read_varint`` with the one-byte case inline (most varints of a record are one byte)."""
    if pos < len(buf):
        c = buf[pos]
        if c < 0x80:
            return (c >> 1) ^ -(c & 1), pos + 1
    return read_varint(buf, pos)


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint cannot be negative")
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_varint(value: int) -> bytes:
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    return encode_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


class _Varint(cs.Construct):
    """Construct adapter over the functions above (strict length guard, unlike ``cs.ZigZag``)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.flagbuildnone = False

    def _parse(self, stream, context, path):
        data = bytearray()
        limit = 10 if self.kind == "varlong" else 5
        while True:
            b = cs.stream_read(stream, 1, path)[0]
            data.append(b)
            if not b & 0x80 or len(data) >= limit:
                break
        reader = {"varint": read_varint, "varlong": read_varlong, "uvarint": read_uvarint}[self.kind]
        try:
            value, _ = reader(bytes(data), 0)
        except ParseError as exc:
            raise cs.ConstructError(exc.message, path=path) from None
        return value

    def _build(self, obj, stream, context, path):
        encoder = {"varint": encode_varint, "varlong": encode_varlong, "uvarint": encode_uvarint}[self.kind]
        data = encoder(obj)
        cs.stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise cs.SizeofError("varints have variable size", path=path)


VarInt = _Varint("varint")
"""Zig-zag signed 32-bit varint (record fields of magic v2)."""
VarLong = _Varint("varlong")
"""Zig-zag signed 64-bit varlong (record timestamp delta)."""
UVarInt = _Varint("uvarint")
"""Unsigned varint (flexible message encoding, metadata record frame)."""

# ---------------------------------------------------------------------------------------------- UUIDs

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def uuid_to_str(raw: bytes) -> str:
    """16 raw bytes to Kafka's text form: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    """Kafka's ``Uuid.fromString``: rejects over-long strings and anything that is not 16 bytes."""
    if len(text) > 24:
        raise ParseError(f"invalid UUID {text!r}: longer than 24 characters")
    if not _BASE64URL.fullmatch(text):
        raise ParseError(f"invalid UUID {text!r}: not URL-safe base64")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ParseError(f"invalid UUID {text!r}: {exc}") from None
    if len(raw) != 16:
        raise ParseError(f"invalid UUID {text!r}: decodes to {len(raw)} bytes, expected 16")
    return raw


class _UuidAdapter(cs.Adapter):
    def _decode(self, obj, context, path):
        return uuid_to_str(obj)

    def _encode(self, obj, context, path):
        return uuid_from_str(obj)


Uuid = _UuidAdapter(cs.Bytes(16))
"""A 16-byte UUID shown in Kafka's base64url text form."""
