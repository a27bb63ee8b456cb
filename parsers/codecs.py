"""Kafka's compression codecs (spec §6): gzip, xerial-framed snappy, LZ4 frames and zstd.

``stream`` reads a compressed records section (v2) or legacy wrapper value (v0/v1) incrementally, the way
Kafka's ``CompressionType.wrapForInput`` streams do: input is read from a :class:`Source` (a buffer or a
file region) a chunk at a time and output comes out in bounded pieces, never more than ``limit`` bytes in
all (checked while decoding, not after). ``decompress`` is the same, joined, for data held in memory.
``compress`` writes what Kafka's producer-side streams write (Java ``GZIPOutputStream``, snappy-java
``SnappyOutputStream``, ``Lz4BlockOutputStream``, zstd-jni streaming).

Memory by design, not by ``limit``: gzip and zstd keep one input chunk (``IN_CHUNK``) and one output piece
(``OUT_CHUNK``) plus the codec's window (32 KiB for deflate; for zstd the frame's window, at most 128 MiB,
libzstd's default ``windowLogMax`` 27); LZ4 one block (at most 4 MiB); snappy one block (xerial blocks are
32 KiB as snappy-java writes them; a block's declared size is checked against ``limit`` before it is read).

Only ``cramjam``, ``zstandard`` (libzstd's streaming decoder) and the standard library's ``zlib`` are used.
Oddities that Kafka tolerates (trailing bytes, little-endian xerial version fields, ...) are reported
through :class:`DecodeNotes`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import construct as cs
import cramjam
import zstandard

from parsers.errors import ParseError
from parsers.primitives import read_uvarint

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
DEFAULT_LIMIT = 64 << 20
OUT_CHUNK = 1 << 20
"""Largest piece of output produced at once by the streaming decoders (gzip, zstd, uncompressed)."""
IN_CHUNK = 256 << 10
"""Compressed input read at once."""


@dataclass
class DecodeNotes:
    """Things Kafka's readers tolerate but an auditor may want to report, collected while decoding."""

    warnings: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.warnings.append(message)


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown({codec})")


class Source:
    """Random access to the bytes ``[0, size)`` of one compressed stream: a buffer or a region of a file.

    ``consumed`` is how far the decoder has read (for locating errors found after decompression).
    """

    __slots__ = ("size", "_read_at", "consumed")

    def __init__(self, size: int, read_at: Callable[[int, int], bytes]) -> None:
        self.size = max(0, size)
        self._read_at = read_at
        self.consumed = 0

    @classmethod
    def of_buffer(cls, data: bytes | bytearray | memoryview) -> Source:
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        return cls(len(view), lambda pos, n: bytes(view[pos : pos + n]))

    @classmethod
    def of_file(cls, pread: Callable[[int, int], bytes], start: int, size: int) -> Source:
        """Bytes ``[start, start+size)`` of a file read through ``pread(position, n)``."""
        return cls(size, lambda pos, n: pread(start + pos, n))

    def read_at(self, pos: int, n: int) -> bytes:
        """At most ``n`` bytes from ``pos`` (clipped to the end); marks them consumed."""
        n = min(n, self.size - pos)
        if n <= 0:
            return b""
        data = self._read_at(pos, n)
        if len(data) < n:
            raise ParseError(f"file ended while reading the compressed stream ({len(data)} of {n} bytes)",
                             offset=pos + len(data))
        self.consumed = max(self.consumed, pos + n)
        return data

    def chunks(self, size: int = OUT_CHUNK) -> Iterator[bytes]:
        """The bytes as they are (the ``none`` codec), ``size`` at a time."""
        pos = 0
        while pos < self.size:
            data = self.read_at(pos, size)
            pos += len(data)
            yield data


def stream(
    codec: int,
    src: Source,
    *,
    magic: int = 2,
    limit: int = DEFAULT_LIMIT,
    notes: DecodeNotes | None = None,
) -> Iterator[bytes]:
    """Decompress ``src`` incrementally: output pieces of at most ``OUT_CHUNK`` bytes (one LZ4 or snappy
    block for those block-based codecs), at most ``limit`` bytes in all, else ParseError.

    Memory is one input chunk plus one output piece, whatever the stream's size; error offsets are relative
    to the start of ``src``.
    """
    notes = notes if notes is not None else DecodeNotes()
    if codec == NONE:
        if src.size > limit:
            raise ParseError(f"none: size {src.size} exceeds limit of {limit} bytes", offset=0)
        return src.chunks()
    if codec == GZIP:
        return _gunzip(src, limit, notes)
    if codec == SNAPPY:
        return _unsnappy(src, limit, notes)
    if codec == LZ4:
        return _unlz4(src, magic, limit, notes)
    if codec == ZSTD:
        return _unzstd(src, limit, notes)
    raise ParseError(f"Unknown compression type id {codec}")


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    limit: int = DEFAULT_LIMIT,
    notes: DecodeNotes | None = None,
) -> bytes:
    """Decompress one compressed stream held in memory: :func:`stream`, joined.

    ``magic`` is the record format of the enclosing batch/wrapper: magic 0 LZ4 frames carry the broken
    header checksum of KAFKA-3160, which Kafka ignores. Error offsets are relative to ``data``.
    """
    return b"".join(stream(codec, Source.of_buffer(data), magic=magic, limit=limit, notes=notes))


def compress(codec: int, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    """Compress ``data`` as a Kafka producer of record format ``magic`` would.

    For magic 0 and LZ4 the frame gets the broken header checksum that pre-0.10 clients wrote.
    """
    data = bytes(data)
    if codec == NONE:
        return data
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return _snappy(data)
    if codec == LZ4:
        return _lz4(data, broken_checksum=magic == 0)
    if codec == ZSTD:
        return _zstd(data)
    raise ValueError(f"Unknown compression type id {codec}")


# -------------------------------------------------------------------------------------------- xxHash32

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """xxHash32 (the LZ4 frame checksum). Pure Python: meant for header bytes and block checksums."""
    data = bytes(data)
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        stripes = n // 16
        words = struct.unpack_from(f"<{stripes * 4}I", data)
        for i in range(0, stripes * 4, 4):
            v1 = _rotl((v1 + words[i] * _P2) & _M32, 13) * _P1 & _M32
            v2 = _rotl((v2 + words[i + 1] * _P2) & _M32, 13) * _P1 & _M32
            v3 = _rotl((v3 + words[i + 2] * _P2) & _M32, 13) * _P1 & _M32
            v4 = _rotl((v4 + words[i + 3] * _P2) & _M32, 13) * _P1 & _M32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
        pos = stripes * 16
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = _rotl((h + word * _P3) & _M32, 17) * _P4 & _M32
        pos += 4
    while pos < n:
        h = _rotl((h + data[pos] * _P5) & _M32, 11) * _P1 & _M32
        pos += 1
    h ^= h >> 15
    h = h * _P2 & _M32
    h ^= h >> 13
    h = h * _P3 & _M32
    h ^= h >> 16
    return h


# ------------------------------------------------------------------------------------------------ gzip

_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
"""A Java ``GZIPOutputStream`` member header: deflate, no flags, mtime 0, XFL 0, OS 255 (unknown)."""


def _gzip(data: bytes) -> bytes:
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data) & _M32, len(data) & _M32)


def _gunzip(src: Source, limit: int, notes: DecodeNotes) -> Iterator[bytes]:
    """RFC 1952, members read one after another like Java's ``GZIPInputStream``, input and output streamed.

    Bytes after a member that do not start another member header are ignored (Java does the same).
    """
    n = src.size
    if n == 0:
        raise ParseError("gzip: empty stream, no member header", offset=0)
    total = 0
    pos = 0  # input read so far
    while True:
        inflater = zlib.decompressobj(wbits=31)
        pending = b""
        while not inflater.eof:
            if not pending:
                if pos >= n:
                    raise ParseError("gzip: stream ended prematurely (truncated member)", offset=n)
                pending = src.read_at(pos, IN_CHUNK)
                pos += len(pending)
            where = pos - len(pending)
            try:
                piece = inflater.decompress(pending, OUT_CHUNK)
            except zlib.error as exc:
                raise ParseError(f"gzip: {exc}", offset=where) from None
            rest = inflater.unconsumed_tail
            if not piece and len(rest) == len(pending) and not inflater.eof:
                raise ParseError("gzip: stream ended prematurely (truncated member)", offset=where)
            pending = rest
            total += len(piece)
            if total > limit:
                raise ParseError(f"gzip: decompressed size exceeds limit of {limit} bytes", offset=where)
            if piece:
                yield piece
        pos -= len(inflater.unused_data)
        if pos >= n:
            return
        head = src.read_at(pos, 10)
        if len(head) < 10 or head[:3] != b"\x1f\x8b\x08":
            notes.add(f"gzip: {n - pos} bytes after the last member ignored (at byte {pos})")
            return


# ---------------------------------------------------------------------------------------------- snappy

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_BLOCK_SIZE = 32 * 1024
XerialHeader = cs.Struct(
    "magic" / cs.Const(XERIAL_MAGIC),
    "version" / cs.Int32sb,
    "compatible_version" / cs.Int32sb,
)
"""snappy-java's stream header (§6.1); blocks follow as {int32 BE compressed length, raw snappy block}."""
_XERIAL_HEADER_SIZE = 16
_XERIAL_MAGIC_HEAD = struct.unpack(">i", XERIAL_MAGIC[:4])[0]
_SNAPPY_MAX_EXPANSION = 22
"""A raw snappy element expands at most ~21.3x (a 3-byte copy of 64 bytes)."""


def _snappy(data: bytes) -> bytes:
    out = bytearray(XerialHeader.build({"version": 1, "compatible_version": 1}))
    for start in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + XERIAL_BLOCK_SIZE]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _xerial_header(head: bytes, pos: int, notes: DecodeNotes) -> int:
    version, compatible = struct.unpack_from(">ii", head, 8)
    if version < 1:
        raise ParseError(
            f"snappy: Compressed with an incompatible codec version {version}. "
            "At least version 1 is required",
            offset=pos + 8,
        )
    if (version, compatible) != (1, 1):
        raw = bytes(head[8:16])
        if raw == b"\x01\x00\x00\x00\x01\x00\x00\x00":
            notes.add(f"snappy: xerial version fields written little-endian (at byte {pos + 8})")
        else:
            notes.add(f"snappy: xerial version {version}, compatible version {compatible} at byte {pos + 8}")
    return pos + _XERIAL_HEADER_SIZE


def _unsnappy(src: Source, limit: int, notes: DecodeNotes) -> Iterator[bytes]:
    """snappy-java's ``SnappyInputStream``: xerial blocks, or one raw snappy buffer without the magic.

    Block-based: one block is read and decoded at a time (snappy-java allocates a block whole too); a block
    never yields more than its uvarint-declared size, checked against ``limit`` before decoding.
    """
    n = src.size
    if n == 0:
        notes.add("snappy: empty stream")
        return
    first = src.read_at(0, _XERIAL_HEADER_SIZE)
    if n < _XERIAL_HEADER_SIZE or first[:8] != XERIAL_MAGIC:
        yield _snappy_block(src, 0, n, limit)
        return
    total = 0
    pos = _xerial_header(first, 0, notes)
    while pos < n:
        if n - pos < 4:
            notes.add(f"snappy: {n - pos} bytes after the last block ignored (at byte {pos})")
            break
        head = src.read_at(pos, _XERIAL_HEADER_SIZE)
        (length,) = struct.unpack_from(">i", head, 0)
        again = length == _XERIAL_MAGIC_HEAD and head[:8] == XERIAL_MAGIC
        if again and len(head) >= _XERIAL_HEADER_SIZE:
            notes.add(f"snappy: concatenated xerial stream at byte {pos}")
            pos = _xerial_header(head, pos, notes)
            continue
        if length < 0:
            raise ParseError(f"snappy: chunkSize is too big or negative : {length}", offset=pos)
        if length > n - pos - 4:
            raise ParseError(
                f"snappy: block of {length} bytes runs past the end ({n - pos - 4} bytes remain)",
                offset=pos,
            )
        piece = _snappy_block(src, pos + 4, length, limit - total)
        total += len(piece)
        pos += 4 + length
        if piece:
            yield piece


def _snappy_block(src: Source, where: int, size: int, budget: int) -> bytes:
    """The raw snappy buffer of ``size`` bytes at ``where``: its uvarint uncompressed length is read once and
    checked (``budget``, snappy's maximum expansion) before the block is read or anything is allocated."""
    try:
        declared, _ = read_uvarint(src.read_at(where, min(size, 5)), 0, 5)
    except ParseError as exc:
        raise ParseError(f"snappy: bad uncompressed length: {exc.message}", offset=where) from None
    if declared > budget:
        raise ParseError(f"snappy: decompressed size exceeds limit (block of {declared} bytes)", offset=where)
    if declared > 32 + size * _SNAPPY_MAX_EXPANSION:
        raise ParseError(
            f"snappy: block of {size} bytes declares {declared} uncompressed bytes, more than possible",
            offset=where,
        )
    out = bytearray(declared)
    try:
        written = cramjam.snappy.decompress_raw_into(src.read_at(where, size), out)
    except Exception as exc:  # cramjam's error types are not part of its documented API
        raise ParseError(f"snappy: {exc}", offset=where) from None
    if written != declared:
        raise ParseError(f"snappy: block produced {written} bytes, declared {declared}", offset=where)
    return bytes(out)


# ------------------------------------------------------------------------------------------------- lz4

LZ4_MAGIC = 0x184D2204
LZ4_BLOCK_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
LZ4_UNCOMPRESSED_BIT = 0x80000000
_LZ4_MAX_EXPANSION = 256
"""An LZ4 block expands at most ~255x (each extra length byte adds 255 bytes of match)."""
Lz4Flg = cs.BitStruct(
    "version" / cs.BitsInteger(2),
    "block_independence" / cs.Flag,
    "block_checksum" / cs.Flag,
    "content_size" / cs.Flag,
    "content_checksum" / cs.Flag,
    "reserved" / cs.BitsInteger(2),
)
Lz4Bd = cs.BitStruct(
    "reserved_high" / cs.BitsInteger(1),
    "block_max_size" / cs.BitsInteger(3),
    "reserved_low" / cs.BitsInteger(4),
)
Lz4FrameHeader = cs.Struct(
    "magic" / cs.Const(LZ4_MAGIC, cs.Int32ul),
    "flg" / Lz4Flg,
    "bd" / Lz4Bd,
    "content_size" / cs.If(cs.this.flg.content_size, cs.Int64ul),
    "hc" / cs.Int8ub,
)
"""The LZ4 frame header (§6.2, little-endian); HC = (xxh32(FLG .. end of descriptor) >> 8) & 0xFF."""


@dataclass(slots=True)
class Lz4Header:
    """A decoded LZ4 frame descriptor (the fast path's result; agrees with ``Lz4FrameHeader``)."""

    version: int
    block_independence: bool
    block_checksum: bool
    content_checksum: bool
    reserved: int
    block_max_size: int
    bd_reserved: int
    content_size: int | None
    hc: int
    expected_hc: int
    broken_hc: int
    size: int


def lz4_header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def read_lz4_header(data: bytes | memoryview) -> Lz4Header:
    """Decode the frame header without judging it (see ``_unlz4`` for Kafka's checks)."""
    n = len(data)
    if n < 7:
        raise ParseError(f"lz4: Stream ended prematurely (frame header needs 7 bytes, has {n})", offset=0)
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic != LZ4_MAGIC:
        raise ParseError(f"lz4: Stream unsupported (invalid magic bytes 0x{magic:08x})", offset=0)
    flg, bd = data[4], data[5]
    end = 14 if flg & 0x08 else 6
    if n < end + 1:
        raise ParseError("lz4: Stream ended prematurely (frame descriptor)", offset=n)
    content_size = struct.unpack_from("<Q", data, 6)[0] if flg & 0x08 else None
    return Lz4Header(
        version=flg >> 6,
        block_independence=bool(flg & 0x20),
        block_checksum=bool(flg & 0x10),
        content_checksum=bool(flg & 0x04),
        reserved=flg & 0x03,
        block_max_size=(bd >> 4) & 0x07,
        bd_reserved=bd & 0x8F,
        content_size=content_size,
        hc=data[end],
        expected_hc=lz4_header_checksum(bytes(data[4:end])),
        broken_hc=lz4_header_checksum(bytes(data[0:end])),
        size=end + 1,
    )


def _lz4(data: bytes, *, broken_checksum: bool = False) -> bytes:
    """``Lz4BlockOutputStream``: FLG 0x60, BD 0x40, 64 KiB independent blocks, EndMark."""
    head = bytearray(struct.pack("<IBB", LZ4_MAGIC, 0x60, 0x40))
    head.append(lz4_header_checksum(bytes(head if broken_checksum else head[4:])))
    out = bytearray(head)
    block_size = LZ4_BLOCK_SIZES[4]
    for start in range(0, len(data), block_size):
        chunk = data[start : start + block_size]
        packed = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(packed) >= len(chunk):
            out += struct.pack("<I", len(chunk) | LZ4_UNCOMPRESSED_BIT) + chunk
        else:
            out += struct.pack("<I", len(packed)) + packed
    out += b"\x00\x00\x00\x00"
    return bytes(out)


def _unlz4(src: Source, magic: int, limit: int, notes: DecodeNotes) -> Iterator[bytes]:
    """Kafka's ``Lz4BlockInputStream`` checks, one block (at most 4 MiB) at a time, at most ``limit`` out."""
    head = read_lz4_header(src.read_at(0, 15))
    if head.reserved:
        raise ParseError("lz4: Reserved bits of FLG must be 0", offset=4)
    if head.version != 1:
        raise ParseError(f"lz4: Version {head.version} is unsupported", offset=4)
    if not head.block_independence:
        raise ParseError("lz4: Dependent block stream is unsupported", offset=4)
    if head.bd_reserved:
        raise ParseError("lz4: Reserved bits of BD must be 0", offset=5)
    if head.block_max_size not in LZ4_BLOCK_SIZES:
        raise ParseError(f"lz4: Block size value {head.block_max_size} must be between 4 and 7", offset=5)
    if magic == 0:
        if head.hc not in (head.broken_hc, head.expected_hc):
            notes.add(f"lz4: header checksum 0x{head.hc:02x} is neither the correct nor the magic-0 value")
    elif head.hc != head.expected_hc:
        hint = " (the KAFKA-3160 checksum written for magic 0)" if head.hc == head.broken_hc else ""
        raise ParseError(
            f"lz4: Stream frame descriptor corrupted: HC 0x{head.hc:02x}, "
            f"expected 0x{head.expected_hc:02x}{hint}",
            offset=head.size - 1,
        )
    if head.content_size is not None and head.content_size > limit:
        raise ParseError(
            f"lz4: decompressed size exceeds limit (frame declares {head.content_size} bytes)", offset=6
        )
    max_block = LZ4_BLOCK_SIZES[head.block_max_size]
    n = src.size
    total = 0
    pos = head.size
    while True:
        if n - pos < 4:
            raise ParseError("lz4: Stream ended prematurely (no EndMark)", offset=pos)
        (word,) = struct.unpack("<I", src.read_at(pos, 4))
        size = word & ~LZ4_UNCOMPRESSED_BIT
        start = pos + 4
        if size == 0:
            pos = start
            if head.content_checksum:
                if n - pos < 4:
                    raise ParseError("lz4: Stream ended prematurely (content checksum)", offset=pos)
                pos += 4
            break
        if size > max_block:
            raise ParseError(f"lz4: Block size {size} exceeded max: {max_block}", offset=pos)
        end = start + size
        if end > n:
            raise ParseError(f"lz4: Stream ended prematurely (block of {size} bytes)", offset=pos)
        block = src.read_at(start, size)
        if head.block_checksum:
            if end + 4 > n:
                raise ParseError("lz4: Stream ended prematurely (block checksum)", offset=end)
            if xxh32(block) != struct.unpack("<I", src.read_at(end, 4))[0]:
                raise ParseError("lz4: Block checksum mismatch", offset=end)
        if word & LZ4_UNCOMPRESSED_BIT:
            piece = block
        else:
            room = min(max_block, _LZ4_MAX_EXPANSION * size + 64)
            scratch = bytearray(room)
            try:
                written = cramjam.lz4.decompress_block_into(block, scratch, output_len=room)
            except Exception as exc:  # cramjam's error types are not part of its documented API
                raise ParseError(f"lz4: block decompression failed: {exc}", offset=start) from None
            piece = bytes(memoryview(scratch)[:written])
        total += len(piece)
        if total > limit:
            raise ParseError(f"lz4: decompressed size exceeds limit of {limit} bytes", offset=start)
        if piece:
            yield piece
        pos = end + 4 if head.block_checksum else end
    if pos < n:
        notes.add(f"lz4: {n - pos} bytes after the EndMark ignored (at byte {pos})")
    if head.content_size is not None and head.content_size != total:
        notes.add(f"lz4: frame declares content size {head.content_size}, decoded {total} bytes")


# ------------------------------------------------------------------------------------------------ zstd

ZSTD_MAGIC = 0xFD2FB528
ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
ZSTD_BLOCK_MAX = 128 << 10
ZSTD_LEVEL = 3
"""Kafka's default ``compression.zstd.level``."""
_ZSTD_DID_SIZES = (0, 1, 2, 4)
_ZSTD_FCS_SIZES = (0, 2, 4, 8)
ZstdFrameHeader = cs.Struct(
    "magic" / cs.Const(ZSTD_MAGIC, cs.Int32ul),
    "descriptor"
    / cs.BitStruct(
        "content_size_flag" / cs.BitsInteger(2),
        "single_segment" / cs.Flag,
        "unused" / cs.BitsInteger(1),
        "reserved" / cs.BitsInteger(1),
        "content_checksum" / cs.Flag,
        "dictionary_id_flag" / cs.BitsInteger(2),
    ),
    "window_descriptor" / cs.If(lambda this: not this.descriptor.single_segment, cs.Int8ub),
    "dictionary_id"
    / cs.Switch(cs.this.descriptor.dictionary_id_flag, {1: cs.Int8ul, 2: cs.Int16ul, 3: cs.Int32ul}, cs.Pass),
    "content_size"
    / cs.Switch(
        lambda this: (this.descriptor.content_size_flag, this.descriptor.single_segment),
        {(0, True): cs.Int8ul, (1, False): cs.Int16ul, (1, True): cs.Int16ul, (2, False): cs.Int32ul,
         (2, True): cs.Int32ul, (3, False): cs.Int64ul, (3, True): cs.Int64ul},
        cs.Pass,
    ),
)
"""A Zstandard frame header (RFC 8878 §3.1.1.1). A 2-byte content size field stores ``size - 256``."""


@dataclass(slots=True)
class ZstdFrame:
    """One frame found by :func:`zstd_frames` (``content_size`` None = not declared)."""

    position: int
    size: int
    skippable: bool
    content_size: int | None
    window_size: int
    max_output: int


def zstd_frames(data: bytes | memoryview | Source) -> list[ZstdFrame]:
    """Walk the frames and block headers of a zstd stream without decoding, bounding each frame's output.

    A raw or RLE block yields exactly its ``Block_Size`` bytes, a compressed one at most
    ``Block_Maximum_Size`` = min(window size, 128 KiB).
    """
    src = data if isinstance(data, Source) else Source.of_buffer(data)
    n = src.size
    frames: list[ZstdFrame] = []
    pos = 0
    while pos < n:
        start = pos
        if n - pos < 4:
            raise ParseError(f"zstd: {n - pos} bytes after the last frame", offset=pos)
        (magic,) = struct.unpack("<I", src.read_at(pos, 4))
        if magic & ZSTD_SKIPPABLE_MASK == ZSTD_SKIPPABLE_MAGIC:
            if n - pos < 8:
                raise ParseError("zstd: truncated skippable frame header", offset=pos)
            (length,) = struct.unpack("<I", src.read_at(pos + 4, 4))
            if length > n - pos - 8:
                raise ParseError("zstd: skippable frame runs past the end of the stream", offset=pos)
            pos += 8 + length
            frames.append(ZstdFrame(start, pos - start, True, 0, 0, 0))
            continue
        if magic != ZSTD_MAGIC:
            raise ParseError(f"zstd: Unknown frame descriptor (magic 0x{magic:08x})", offset=pos)
        if n - pos < 5:
            raise ParseError("zstd: truncated frame header", offset=pos)
        head = src.read_at(pos, 18)
        fhd = head[4]
        fcs_flag, single, checksum, did_flag = fhd >> 6, bool(fhd & 0x20), bool(fhd & 0x04), fhd & 0x03
        if fhd & 0x08:
            raise ParseError("zstd: reserved bit of the frame header descriptor is set", offset=pos + 4)
        fcs_size = _ZSTD_FCS_SIZES[fcs_flag] or (1 if single else 0)
        header_size = 5 + (0 if single else 1) + _ZSTD_DID_SIZES[did_flag] + fcs_size
        if n - pos < header_size:
            raise ParseError("zstd: truncated frame header", offset=pos)
        q = 5
        window_size = 0
        if not single:
            wd = head[q]
            base = 1 << (10 + (wd >> 3))
            window_size = base + (base >> 3) * (wd & 0x07)
            q += 1
        q += _ZSTD_DID_SIZES[did_flag]
        content_size = None
        if fcs_size:
            content_size = int.from_bytes(head[q : q + fcs_size], "little")
            if fcs_size == 2:
                content_size += 256
            if single:
                window_size = content_size
        block_max = min(window_size, ZSTD_BLOCK_MAX)
        pos += header_size
        bound = 0
        while True:
            if n - pos < 3:
                raise ParseError("zstd: incomplete frame (truncated block header)", offset=pos)
            header = int.from_bytes(src.read_at(pos, 3), "little")
            last, block_type, size = header & 1, (header >> 1) & 3, header >> 3
            if block_type == 3:
                raise ParseError("zstd: reserved block type", offset=pos)
            if size > ZSTD_BLOCK_MAX:
                raise ParseError(f"zstd: block size {size} exceeds the maximum {ZSTD_BLOCK_MAX}", offset=pos)
            stored = 1 if block_type == 1 else size
            if stored > n - pos - 3:
                raise ParseError("zstd: incomplete frame (block runs past the end)", offset=pos)
            bound += block_max if block_type == 2 else size
            pos += 3 + stored
            if last:
                break
        if checksum:
            if n - pos < 4:
                raise ParseError("zstd: incomplete frame (content checksum)", offset=pos)
            pos += 4
        if content_size is not None:
            bound = min(bound, content_size)
        frames.append(ZstdFrame(start, pos - start, False, content_size, window_size, bound))
    return frames


def _zstd(data: bytes) -> bytes:
    """zstd-jni streaming output: one frame without a content size (except for empty input)."""
    compressor = cramjam.zstd.Compressor(level=ZSTD_LEVEL)
    compressor.compress(data)
    return bytes(compressor.finish())


class _SourceFile:
    """A read-only file object over a :class:`Source`, for ``zstandard``'s stream reader."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.pos = 0

    def read(self, n: int = -1) -> bytes:
        data = self.src.read_at(self.pos, self.src.size - self.pos if n < 0 else n)
        self.pos += len(data)
        return data


def _unzstd(src: Source, limit: int, notes: DecodeNotes) -> Iterator[bytes]:
    """Frames read across like zstd-jni's ``ZstdInputStream``, streamed through libzstd (``zstandard``).

    The frame and block headers are walked first (reading only headers) so that structural damage is
    reported with its offset; then output comes ``OUT_CHUNK`` bytes at a time. libzstd keeps one window
    (at most 128 MiB, its default ``windowLogMax`` 27; Kafka's producers write 8 MiB windows or less).
    """
    if src.size == 0:
        notes.add("zstd: empty stream")
        return
    frames = zstd_frames(src)
    src.consumed = 0
    if any(f.skippable for f in frames):
        notes.add("zstd: skippable frame(s) ignored")
    reader = zstandard.ZstdDecompressor().stream_reader(
        _SourceFile(src), read_size=IN_CHUNK, read_across_frames=True
    )
    total = 0
    while True:
        try:
            piece = reader.read(OUT_CHUNK)
        except zstandard.ZstdError as exc:
            raise ParseError(f"zstd: {exc}", offset=src.consumed) from None
        if not piece:
            return
        total += len(piece)
        if total > limit:
            raise ParseError(f"zstd: decompressed size exceeds limit of {limit} bytes", offset=src.consumed)
        yield piece
