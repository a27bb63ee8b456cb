"""Mutators for ``bench/fuzz.py``: havoc-style stacks of byte-level edits on a seed.

Every edit draws from the ``random.Random`` it is given, so an input is a pure function of (seeds, run seed,
input index). Edits: bit flips, interesting bytes, insertions, deletions, truncations, duplications, long
repetitions (inputs up to 1 MiB), splices of two real files, length-field extremes (int8/16/32/64 and
varints at aligned or known field positions), and text edits for the text formats (numbers replaced by
out-of-range values, Unicode digits and spaces). ``mutate_inside`` edits the records *inside* a compressed
batch or legacy wrapper and rebuilds it. After the edits a *fix-up* may recompute the checksums the format
carries (v2 CRC-32C, legacy CRC-32, producer-snapshot CRC-32C), so the input reaches the decoders behind them.
"""

from __future__ import annotations

import random
import re
import struct
import zlib

import crc32c as _crc32c

from parsers.errors import ParseError
from parsers.primitives import encode_uvarint, encode_varint, encode_varlong

MAX_INPUT = 1 << 20
"""Inputs are cut to this size (growth by insertions and splices is bounded)."""

EXTREMES = {
    1: (0, 1, 0x7F, 0x80, 0xFF),
    2: (0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x7FFE),
    4: (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFE, 0x40000000, 0x00010000),
    8: (0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x0000000080000000, 0x7FFFFFFF),
}
"""Unsigned bit patterns of 0, 1, max, min, -1 and neighbours, per field width."""

_VARINTS = (
    [encode_varint(v) for v in (0, -1, 1, 2**31 - 1, -(2**31), 2**30, 0x3FFF, -2)]
    + [encode_varlong(v) for v in (2**63 - 1, -(2**63))]
    + [
        encode_uvarint(0xFFFFFFFF),
        b"\xff" * 5,
        b"\xff" * 10,
        b"\x80" * 11,
    ]
)
"""Varint encodings of extremes, and unterminated / over-long ones."""

_TEXT_NUMBERS = [
    b"0",
    b"-1",
    b"2147483647",
    b"2147483648",
    b"-2147483649",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"99999999999999999999999999",
    b"+1",
    b"00001",
    b"1e9",
    b"0x10",
    "\u0663".encode(),
    "\uff11".encode(),
    "\u00b2".encode(),
    "\u0b67".encode(),
    b"1" * 400,
]
_TEXT_NOISE = [
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\x0b",
    "\u00a0".encode(),
    "\u2028".encode(),
    b"\\",
    b"\\u0041",
    b"\\u12",
    b"=",
    b":",
    b"#",
    b"!",
    b"{",
    b"}",
    b"[",
    b'"',
    b",",
    b"\xff",
    b"\xc3",
]
_DIGITS = re.compile(rb"-?[0-9]+")

V2_FIELDS = (0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61)
"""Byte positions of the v2 batch header fields (baseOffset ... recordsCount) and the first record."""
LEGACY_FIELDS = (0, 8, 12, 16, 17, 18, 22, 26)


def _bitflip(rng: random.Random, buf: bytearray, fields) -> None:
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        if buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)


def _byte(rng: random.Random, buf: bytearray, fields) -> None:
    if buf:
        buf[rng.randrange(len(buf))] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))


def _insert(rng: random.Random, buf: bytearray, fields) -> None:
    pos = rng.randrange(len(buf) + 1)
    if buf and rng.random() < 0.5:
        start = rng.randrange(len(buf))
        chunk = bytes(buf[start : start + rng.randint(1, 64)])
    else:
        chunk = rng.randbytes(rng.randint(1, 16))
    buf[pos:pos] = chunk


def _delete(rng: random.Random, buf: bytearray, fields) -> None:
    if buf:
        start = rng.randrange(len(buf))
        del buf[start : start + rng.randint(1, 64)]


def _truncate(rng: random.Random, buf: bytearray, fields) -> None:
    if buf:
        cut = rng.randrange(len(buf))
        if rng.random() < 0.85:
            del buf[cut:]
        else:
            del buf[:cut]


def _duplicate(rng: random.Random, buf: bytearray, fields) -> None:
    if buf:
        start = rng.randrange(len(buf))
        chunk = bytes(buf[start : start + rng.randint(1, 4096)])
        buf[start:start] = chunk * rng.randint(1, 4)


def _repeat(rng: random.Random, buf: bytearray, fields) -> None:
    """Repeat a short slice (a text line, a slot, a record) until the input reaches 16 KiB to 1 MiB."""
    if buf:
        start = rng.randrange(len(buf))
        chunk = bytes(buf[start : start + rng.randint(1, 64)])
        target = rng.choice((16 << 10, 256 << 10, MAX_INPUT))
        times = max(1, (target - len(buf)) // len(chunk))
        buf[start:start] = chunk * times


def _field_position(rng: random.Random, buf: bytearray, fields, width: int) -> int | None:
    if len(buf) < width:
        return None
    if fields and rng.random() < 0.6:
        pos = rng.choice(fields)
        if pos + width <= len(buf):
            return pos
    pos = rng.randrange(len(buf) - width + 1)
    return pos - pos % width if rng.random() < 0.5 else pos


def _extreme(rng: random.Random, buf: bytearray, fields) -> None:
    width = rng.choice((1, 2, 4, 4, 4, 8, 8))
    pos = _field_position(rng, buf, fields, width)
    if pos is not None:
        buf[pos : pos + width] = rng.choice(EXTREMES[width]).to_bytes(width, "big")


def _varint(rng: random.Random, buf: bytearray, fields) -> None:
    pos = rng.randrange(len(buf) + 1)
    value = rng.choice(_VARINTS)
    if rng.random() < 0.5:
        buf[pos : pos + len(value)] = value
    else:
        buf[pos:pos] = value


def _text(rng: random.Random, buf: bytearray, fields) -> None:
    """Replace a number of a text format by an extreme one, or insert a separator / Unicode oddity."""
    numbers = list(_DIGITS.finditer(buf)) if rng.random() < 0.7 else []
    if numbers:
        match = rng.choice(numbers)
        buf[match.start() : match.end()] = rng.choice(_TEXT_NUMBERS)
    else:
        pos = rng.randrange(len(buf) + 1)
        buf[pos:pos] = rng.choice(_TEXT_NOISE)


BINARY_EDITS = (
    _bitflip,
    _bitflip,
    _byte,
    _insert,
    _delete,
    _truncate,
    _duplicate,
    _extreme,
    _extreme,
    _varint,
)
TEXT_EDITS = (_bitflip, _byte, _insert, _delete, _truncate, _text, _text, _text)


def entry_starts(data: bytes | bytearray, limit: int = 64) -> list[int]:
    """Start positions of the first ``limit`` entries (v2 batches or legacy messages) laid end to end."""
    starts = []
    pos = 0
    while pos + 12 <= len(data) and len(starts) < limit:
        starts.append(pos)
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length < 14:
            break
        pos += 12 + length
    return starts


def _fields_of(rng: random.Random, buf: bytearray, fields: tuple[int, ...], layout) -> tuple[int, ...]:
    """``fields`` shifted to a random entry of a segment (``layout == "entries"``), or the field offsets of a
    random fixed-size slot (``layout == (header size, slot size, slot field offsets)``)."""
    if layout == "entries":
        starts = entry_starts(buf)
        base = rng.choice(starts) if starts else 0
        return tuple(base + f for f in fields)
    if isinstance(layout, tuple):
        header, size, slot_fields = layout
        slots = (len(buf) - header) // size
        if slots > 0 and (not fields or rng.random() < 0.7):
            base = header + rng.randrange(slots) * size
            return tuple(base + f for f in slot_fields)
    return fields


def _extreme_at(rng: random.Random, buf: bytearray, pos: int) -> None:
    """An extreme int of a random width, or an extreme / broken varint, written at ``pos``."""
    if rng.random() < 0.8:
        width = rng.choice((1, 2, 4, 4, 4, 8, 8))
        if pos + width <= len(buf):
            buf[pos : pos + width] = rng.choice(EXTREMES[width]).to_bytes(width, "big")
    else:
        value = rng.choice(_VARINTS)
        buf[pos : pos + len(value)] = value


def mutate(
    rng: random.Random,
    seed: bytes,
    other: bytes,
    *,
    text: bool = False,
    fields: tuple[int, ...] = (),
    layout: str | tuple | None = None,
) -> bytes:
    """Edits of ``seed``: with probability 0.3 only 1-2 length-field extremes at known field positions,
    otherwise a stack of 1..8 edits (first spliced with ``other`` with probability 0.1)."""
    buf = bytearray(seed)
    if (fields or layout) and not text and rng.random() < 0.3:
        for _ in range(rng.choice((1, 1, 2))):
            shifted = _fields_of(rng, buf, fields, layout)
            if shifted:
                _extreme_at(rng, buf, rng.choice(shifted))
        return bytes(buf[:MAX_INPUT])
    if rng.random() < 0.1:
        cut_a = rng.randrange(len(buf) + 1)
        cut_b = rng.randrange(len(other) + 1)
        buf = bytearray(buf[:cut_a] + other[cut_b:])
    edits = TEXT_EDITS if text else BINARY_EDITS
    for _ in range(min(8, 1 + int(rng.expovariate(0.7)))):
        rng.choice(edits)(rng, buf, fields)
        if len(buf) > MAX_INPUT:
            del buf[MAX_INPUT:]
    if rng.random() < 0.02:
        _repeat(rng, buf, fields)
        del buf[MAX_INPUT:]
    return bytes(buf)


# ------------------------------------------------------------------------------------------- fix-ups


def fix_v2_crcs(data: bytes, *, start: int = 0) -> bytes:
    """Recompute the CRC-32C of every v2 batch laid end to end from ``start`` (stops at a bad length)."""
    buf = bytearray(data)
    pos = start
    while pos + 26 <= len(buf):
        (length,) = struct.unpack_from(">i", buf, pos + 8)
        end = pos + 12 + length
        if length < (49 if buf[pos + 16] >= 2 else 14) or end > len(buf):
            break
        if buf[pos + 16] == 2:
            struct.pack_into(">I", buf, pos + 17, _crc32c.crc32c(bytes(buf[pos + 21 : end])))
        elif buf[pos + 16] in (0, 1):
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16 : end])))
        pos = end
    return bytes(buf)


def fix_legacy_crcs(data: bytes) -> bytes:
    """Recompute the CRC-32 of every legacy entry laid end to end (and of v2 batches among them)."""
    return fix_v2_crcs(data)


def fix_snapshot_crc(data: bytes) -> bytes:
    """Recompute a producer snapshot's CRC-32C (bytes 6.. of the file, stored at 2..6)."""
    if len(data) < 6:
        return data
    return data[:2] + _crc32c.crc32c(data[6:]).to_bytes(4, "big") + data[6:]


# ------------------------------------------------------------------------------------------- inside


RECORD_FIELDS = (0, 1, 2, 3, 4, 5, 6, 8, 10)
"""Positions near the start of a records section / inner message set: length, attributes, deltas, key."""


def mutate_inside(rng: random.Random, data: bytes) -> bytes:
    """Edit *inside* one entry of ``data`` (a segment or a single entry): decompress its records section
    (v2) or inner message set (legacy wrapper), edit that, compress it again with the same codec and rebuild
    the entry with a correct length and checksum, so the edits reach the record decoders. ``data`` is
    returned unchanged when the chosen entry cannot be taken apart."""
    from parsers import codecs

    starts = entry_starts(data)
    if not starts:
        return data
    pos = rng.choice(starts)
    if pos + 17 > len(data):
        return data
    (length,) = struct.unpack_from(">i", data, pos + 8)
    end = pos + 12 + length
    magic = data[pos + 16]
    if end > len(data):
        return data
    try:
        if magic == 2 and length >= 49:
            entry = _inside_v2(rng, data[pos:end], codecs)
        elif magic in (0, 1):
            entry = _inside_legacy(rng, data[pos:end], codecs)
        else:
            return data
    except (ValueError, struct.error, ParseError):  # not a well-formed seed entry
        return data
    return data[:pos] + entry + data[end:]


def _edit_records(rng: random.Random, payload: bytes) -> bytes:
    buf = bytearray(payload)
    for _ in range(rng.choice((1, 1, 2, 3))):
        if rng.random() < 0.5 and buf:
            _extreme_at(
                rng, buf, rng.randrange(len(buf)) if rng.random() < 0.5 else rng.choice(RECORD_FIELDS)
            )
        else:
            rng.choice(BINARY_EDITS)(rng, buf, RECORD_FIELDS)
    return bytes(buf[:MAX_INPUT])


def _inside_v2(rng: random.Random, entry: bytes, codecs) -> bytes:
    codec = entry[22] & 0x07
    payload = entry[61:]
    if codec:
        payload = codecs.decompress(codec, payload)
    payload = _edit_records(rng, payload)
    body = codecs.compress(codec, payload) if codec else payload
    head = bytearray(entry[:61])
    struct.pack_into(">i", head, 8, 49 + len(body))
    if rng.random() < 0.3:
        struct.pack_into(">I", head, 57, rng.choice(EXTREMES[4]))
    return fix_v2_crcs(bytes(head) + body)


def _inside_legacy(rng: random.Random, entry: bytes, codecs) -> bytes:
    from parsers import legacy

    parsed = legacy.parse_legacy_entry(entry, 0)
    if not parsed.compression or parsed.value is None or parsed.compression not in (1, 2, 3):
        value = _edit_records(rng, parsed.value or b"")
    else:
        inner = codecs.decompress(parsed.compression, parsed.value, magic=parsed.magic)
        value = codecs.compress(parsed.compression, _edit_records(rng, inner), magic=parsed.magic)
    return legacy.build_legacy_message(
        parsed.offset,
        parsed.key,
        value,
        magic=parsed.magic,
        timestamp=parsed.timestamp,
        attributes=parsed.attributes,
    )
