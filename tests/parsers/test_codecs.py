"""Compression codecs (spec §6): round trips, frames from independent libraries, Kafka's framing rules,
bounded output, the schemas vs the fast paths, fuzzing, and the real compressed batches of the corpus."""

from __future__ import annotations

import gzip
import io
import random
import re
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from parsers import codecs
from parsers.codecs import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    XERIAL_MAGIC,
    ZSTD,
    DecodeNotes,
    Lz4FrameHeader,
    XerialHeader,
    ZstdFrameHeader,
    compress,
    decompress,
    lz4_header_checksum,
    read_lz4_header,
    xxh32,
    zstd_frames,
)
from parsers.errors import ParseError
from tests.support.kafka_dumps import dump_lines

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
CODECS = [GZIP, SNAPPY, LZ4, ZSTD]

_rng = random.Random(20240611)
TEXT = b"".join(b"record-%06d|%s\n" % (i, b"kafka " * (i % 7)) for i in range(6000))
NOISE = bytes(_rng.getrandbits(8) for _ in range(70_000))
BIG = (TEXT[:65536] + NOISE[:65536] + TEXT)[:200_000]
"""200 KB, compressible and incompressible parts: several LZ4 (64 KiB) and snappy (32 KiB) blocks."""
SMALL = TEXT[:1500] + NOISE[:500]


def zstd_stream(data: bytes, **kwargs) -> bytes:
    """A zstd frame as a streaming writer (zstd-jni) produces it: no content size."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(write_content_size=False, **kwargs).stream_writer(out, closefd=False) as w:
        w.write(data)
    return out.getvalue()


def lz4_frame(data: bytes, **kwargs) -> bytes:
    kwargs.setdefault("block_linked", False)
    return lz4.frame.compress(data, **kwargs)


def xerial(blocks: list[bytes], version: bytes = b"\x00\x00\x00\x01\x00\x00\x00\x01") -> bytes:
    """A xerial stream built by hand from raw snappy blocks of python-snappy."""
    return XERIAL_MAGIC + version + b"".join(struct.pack(">i", len(b)) + b for b in blocks)


# ---------------------------------------------------------------------------------------------- xxh32


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0x02CC5D05), (b"a", 0x550D7456), (b"abc", 0x32D153FF)],
)
def test_xxh32_known_vectors(data, expected):
    assert xxh32(data) == expected


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_xxh32_matches_lz4_content_checksums(data):
    # python-lz4 (liblz4) stores xxh32 of the whole content after the EndMark: an independent vector.
    frame = lz4_frame(data, content_checksum=True, store_size=False)
    assert xxh32(data) == struct.unpack("<I", frame[-4:])[0]


def test_lz4_header_checksum_matches_liblz4_for_every_variant():
    for kwargs in [
        {}, {"store_size": False}, {"block_checksum": True}, {"content_checksum": True},
        *({"block_size": size} for size in (4, 5, 6, 7)),
    ]:
        frame = lz4_frame(SMALL, **kwargs)
        head = read_lz4_header(frame)
        assert head.hc == head.expected_hc == lz4_header_checksum(frame[4 : head.size - 1])


def test_spec_lz4_headers_correct_and_magic0_broken():
    # §6.2: correct header 04 22 4d 18 60 40 82, broken (KAFKA-3160) 04 22 4d 18 60 40 1a.
    assert compress(LZ4, b"")[:7] == bytes.fromhex("04224d18604082")
    assert compress(LZ4, b"", magic=0)[:7] == bytes.fromhex("04224d1860401a")
    assert compress(LZ4, b"") == bytes.fromhex("04224d1860408200000000") == lz4_frame(b"", store_size=False)


# ----------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("codec", [NONE, *CODECS])
@pytest.mark.parametrize("data", [b"", b"x", SMALL, BIG], ids=["empty", "one", "small", "200KB"])
def test_round_trip(codec, data):
    notes = DecodeNotes()
    assert decompress(codec, compress(codec, data), notes=notes) == data
    assert notes.warnings == []


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_accepts_bytearray_and_memoryview(codec):
    frame = compress(codec, SMALL)
    assert decompress(codec, bytearray(frame)) == SMALL
    assert decompress(codec, memoryview(frame)) == SMALL


def test_writers_produce_kafka_framing():
    gz = compress(GZIP, BIG)
    assert gz[:4] == b"\x1f\x8b\x08\x00" and gzip.decompress(gz) == BIG
    sn = compress(SNAPPY, BIG)
    assert XerialHeader.parse(sn[:16]) == {"magic": XERIAL_MAGIC, "version": 1, "compatible_version": 1}
    lengths, pos = [], 16
    while pos < len(sn):
        (n,) = struct.unpack_from(">i", sn, pos)
        lengths.append(snappy.decompress(sn[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert [len(b) for b in lengths] == [32768] * 6 + [200_000 - 6 * 32768]
    assert kafka_codec.snappy_decode(sn) == BIG
    lz = compress(LZ4, BIG)
    assert lz[4:6] == b"\x60\x40" and lz.endswith(b"\x00\x00\x00\x00")
    assert lz4.frame.decompress(lz) == BIG
    sizes, pos = [], 7
    while True:
        (word,) = struct.unpack_from("<I", lz, pos)
        if word == 0:
            break
        sizes.append(word)
        pos += 4 + (word & 0x7FFFFFFF)
    assert len(sizes) == 4 and any(s & 0x80000000 for s in sizes)  # the noise block is stored raw
    zs = compress(ZSTD, BIG)
    assert zstandard.get_frame_parameters(zs).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(zs), read_across_frames=True).read() == BIG


def test_spec_snappy_example_decodes():
    # §6.1, the verified stream for "hello hello hello hello".
    stream = bytes.fromhex("82534e41505059000000000100000001" "0000000b" "171468656c6c6f20420600")
    assert decompress(SNAPPY, stream) == b"hello hello hello hello"
    assert compress(SNAPPY, b"hello hello hello hello") == stream


# -------------------------------------------------------------------------- frames of other libraries


def test_gzip_multi_member_and_trailing_bytes():
    assert decompress(GZIP, gzip.compress(BIG) + gzip.compress(b"tail")) == BIG + b"tail"
    assert decompress(GZIP, kafka_codec.gzip_encode(SMALL)) == SMALL
    notes = DecodeNotes()
    assert decompress(GZIP, gzip.compress(b"abc") + b"\x00" * 7, notes=notes) == b"abc"
    assert notes.warnings == ["gzip: 7 bytes after the last member ignored (at byte 23)"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"store_size": False},
        {"block_checksum": True},
        {"content_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX256KB},
        {"block_size": lz4.frame.BLOCKSIZE_MAX1MB, "block_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "compression_level": 9},
    ],
)
def test_lz4_frames_of_liblz4(kwargs):
    for data in (b"", SMALL, BIG):
        notes = DecodeNotes()
        assert decompress(LZ4, lz4_frame(data, **kwargs), notes=notes) == data
        assert notes.warnings == []
    assert decompress(LZ4, kafka_codec.lz4_encode(BIG)) == BIG


def test_zstd_streaming_frames_concatenation_and_skippable_frames():
    stream = zstd_stream(BIG)
    assert zstandard.get_frame_parameters(stream).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, stream) == BIG
    assert decompress(ZSTD, stream + zstd_stream(b"more")) == BIG + b"more"
    one_shot = zstandard.ZstdCompressor(level=19).compress(SMALL)
    assert decompress(ZSTD, one_shot + stream) == SMALL + BIG
    assert decompress(ZSTD, zstandard.ZstdCompressor(write_checksum=True).compress(SMALL)) == SMALL
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"xyz"
    notes = DecodeNotes()
    assert decompress(ZSTD, skippable + one_shot, notes=notes) == SMALL
    assert notes.warnings == ["zstd: skippable frame(s) ignored"]
    assert decompress(ZSTD, kafka_codec.zstd_encode(BIG)) == BIG


def test_snappy_xerial_raw_and_tolerated_variants():
    assert decompress(SNAPPY, kafka_codec.snappy_encode(BIG)) == BIG
    assert decompress(SNAPPY, snappy.compress(SMALL)) == SMALL  # no magic: one raw snappy buffer
    blocks = [snappy.compress(BIG[i : i + 10_000]) for i in range(0, len(BIG), 10_000)]
    assert decompress(SNAPPY, xerial(blocks)) == BIG
    notes = DecodeNotes()
    assert decompress(SNAPPY, xerial(blocks, b"\x01\x00\x00\x00\x01\x00\x00\x00"), notes=notes) == BIG
    assert notes.warnings == ["snappy: xerial version fields written little-endian (at byte 8)"]
    notes = DecodeNotes()
    assert decompress(SNAPPY, xerial(blocks[:2]) + xerial(blocks[2:]), notes=notes) == BIG
    assert notes.warnings[0].startswith("snappy: concatenated xerial stream")
    notes = DecodeNotes()
    assert decompress(SNAPPY, xerial(blocks) + b"\x00\x00", notes=notes) == BIG
    assert "2 bytes after the last block ignored" in notes.warnings[0]
    notes = DecodeNotes()
    assert decompress(SNAPPY, b"", notes=notes) == b"" and notes.warnings == ["snappy: empty stream"]


# ------------------------------------------------------------------------------ LZ4 and magic 0 (KAFKA-3160)


def with_hc(frame: bytes, hc: int) -> bytes:
    size = read_lz4_header(frame).size
    return frame[: size - 1] + bytes([hc]) + frame[size:]


@pytest.mark.parametrize("store_size", [False, True])
def test_magic0_broken_header_checksum_accepted_only_for_magic0(store_size):
    frame = lz4_frame(SMALL, store_size=store_size)
    head = read_lz4_header(frame)
    broken = with_hc(frame, head.broken_hc)
    assert head.broken_hc == lz4_header_checksum(frame[: head.size - 1])
    notes = DecodeNotes()
    assert decompress(LZ4, broken, magic=0, notes=notes) == SMALL and notes.warnings == []
    assert decompress(LZ4, frame, magic=0) == SMALL  # a correct HC is fine for magic 0 too
    for magic in (1, 2):
        with pytest.raises(ParseError, match="frame descriptor corrupted.*KAFKA-3160") as exc:
            decompress(LZ4, broken, magic=magic)
        assert exc.value.offset == head.size - 1
    with pytest.raises(RuntimeError, match="headerChecksum_invalid"):
        lz4.frame.decompress(broken)  # §6.2: liblz4 always verifies HC
    ours = read_lz4_header(compress(LZ4, SMALL, magic=0))
    assert ours.hc == ours.broken_hc != ours.expected_hc


def test_magic0_garbage_header_checksum_is_noted():
    frame = lz4_frame(SMALL, store_size=False)
    head = read_lz4_header(frame)
    bad = next(b for b in range(256) if b not in (head.expected_hc, head.broken_hc))
    notes = DecodeNotes()
    assert decompress(LZ4, with_hc(frame, bad), magic=0, notes=notes) == SMALL
    assert "neither the correct nor the magic-0 value" in notes.warnings[0]


def lz4_with_descriptor(flg: int, bd: int, body: bytes = b"\x00\x00\x00\x00") -> bytes:
    desc = bytes([flg, bd])
    return struct.pack("<I", codecs.LZ4_MAGIC) + desc + bytes([lz4_header_checksum(desc)]) + body


@pytest.mark.parametrize(
    ("flg", "bd", "message"),
    [
        (0x61, 0x40, "Reserved bits of FLG"),
        (0xA0, 0x40, "Version 2 is unsupported"),
        (0x40, 0x40, "Dependent block stream is unsupported"),
        (0x60, 0xC0, "Reserved bits of BD"),
        (0x60, 0x41, "Reserved bits of BD"),
        (0x60, 0x30, "Block size value 3 must be between 4 and 7"),
    ],
)
def test_lz4_descriptor_rules(flg, bd, message):
    with pytest.raises(ParseError, match=message):
        decompress(LZ4, lz4_with_descriptor(flg, bd))


def test_lz4_block_rules():
    assert decompress(LZ4, lz4_with_descriptor(0x60, 0x40)) == b""
    stored = struct.pack("<I", 0x80000003) + b"abc" + b"\0" * 4
    assert decompress(LZ4, lz4_with_descriptor(0x60, 0x40, stored)) == b"abc"
    with pytest.raises(ParseError, match="Block size 65537 exceeded max: 65536") as exc:
        decompress(LZ4, lz4_with_descriptor(0x60, 0x40, struct.pack("<I", 65537) + b"\0" * 65541))
    assert exc.value.offset == 7
    with pytest.raises(ParseError, match="no EndMark"):
        decompress(LZ4, lz4_with_descriptor(0x60, 0x40, struct.pack("<I", 0x80000003) + b"abc"))
    with pytest.raises(ParseError, match="Stream unsupported"):
        decompress(LZ4, b"\x00" * 16)
    frame = bytearray(lz4_frame(SMALL, block_checksum=True, store_size=False))
    frame[-5] ^= 1  # last byte of the only block's checksum
    with pytest.raises(ParseError, match="Block checksum mismatch") as exc:
        decompress(LZ4, bytes(frame))
    assert exc.value.offset == len(frame) - 8
    notes = DecodeNotes()
    assert decompress(LZ4, lz4_frame(SMALL) + b"junk", notes=notes) == SMALL
    assert notes.warnings == [f"lz4: 4 bytes after the EndMark ignored (at byte {len(lz4_frame(SMALL))})"]
    lying = lz4_frame(SMALL)
    lying = lying[:6] + struct.pack("<Q", 5) + lying[14:]
    notes = DecodeNotes()
    assert decompress(LZ4, with_hc(lying, read_lz4_header(lying).expected_hc), notes=notes) == SMALL
    assert notes.warnings == [f"lz4: frame declares content size 5, decoded {len(SMALL)} bytes"]


def test_lz4_header_fast_path_agrees_with_schema():
    for flg in range(256):
        for bd in (0x00, 0x40, 0x70, 0xC5):
            frame = struct.pack("<IBB", codecs.LZ4_MAGIC, flg, bd) + bytes(range(9))
            fast = read_lz4_header(frame)
            parsed = Lz4FrameHeader.parse(frame)
            assert (fast.version, fast.block_independence, fast.block_checksum, fast.content_checksum) == (
                parsed.flg.version, parsed.flg.block_independence, parsed.flg.block_checksum,
                parsed.flg.content_checksum,
            )
            assert fast.reserved == parsed.flg.reserved and fast.block_max_size == parsed.bd.block_max_size
            assert fast.bd_reserved == (parsed.bd.reserved_high << 7 | parsed.bd.reserved_low)
            assert fast.content_size == parsed.content_size and fast.hc == parsed.hc
            assert fast.size == len(Lz4FrameHeader.build(parsed))


# ------------------------------------------------------------------------------------------ zstd walk


def test_zstd_frame_walk_agrees_with_schema_and_zstandard():
    frames = [
        zstd_stream(BIG),
        zstandard.ZstdCompressor().compress(b""),
        zstandard.ZstdCompressor().compress(b"x" * 200),
        zstandard.ZstdCompressor().compress(b"x" * 300),  # 2-byte content size field: value - 256
        zstandard.ZstdCompressor(write_checksum=True).compress(BIG),
        zstandard.ZstdCompressor(write_dict_id=True, dict_data=zstandard.ZstdCompressionDict(b"d" * 100))
        .compress(SMALL),
        compress(ZSTD, BIG),
    ]
    for frame in frames:
        (walked,) = zstd_frames(frame)
        params = zstandard.get_frame_parameters(frame)
        header = ZstdFrameHeader.parse(frame)
        expected_cs = None if params.content_size == zstandard.CONTENTSIZE_UNKNOWN else params.content_size
        declared = header.content_size
        if declared is not None and header.descriptor.content_size_flag == 1:
            declared += 256
        assert walked.content_size == expected_cs == declared
        assert walked.window_size == params.window_size
        assert walked.size == len(frame)
        if expected_cs is None:
            assert walked.max_output >= len(BIG)
        else:
            assert walked.max_output <= expected_cs


def test_zstd_structural_errors():
    frame = zstd_stream(SMALL)
    with pytest.raises(ParseError, match="Unknown frame descriptor"):
        decompress(ZSTD, frame + b"junk")
    with pytest.raises(ParseError, match="reserved bit"):
        decompress(ZSTD, frame[:4] + bytes([frame[4] | 0x08]) + frame[5:])
    with pytest.raises(ParseError, match="incomplete frame"):
        decompress(ZSTD, frame[:-3])
    notes = DecodeNotes()
    assert decompress(ZSTD, b"", notes=notes) == b"" and notes.warnings == ["zstd: empty stream"]


# -------------------------------------------------------------------------------------- other errors


def test_gzip_errors():
    gz = gzip.compress(SMALL)
    with pytest.raises(ParseError, match="gzip: stream ended prematurely"):
        decompress(GZIP, gz[:-9])
    with pytest.raises(ParseError, match="gzip: empty stream"):
        decompress(GZIP, b"")
    with pytest.raises(ParseError, match="gzip: .*header"):
        decompress(GZIP, b"\x1f\x8c" + gz[2:])
    corrupt = bytearray(gz)
    corrupt[-5] ^= 0xFF  # CRC-32 of the member
    with pytest.raises(ParseError, match="gzip: .*check"):
        decompress(GZIP, bytes(corrupt))


def test_snappy_errors():
    block = snappy.compress(SMALL)
    with pytest.raises(ParseError, match="incompatible codec version 0"):
        decompress(SNAPPY, xerial([block], b"\x00\x00\x00\x00\x00\x00\x00\x01"))
    with pytest.raises(ParseError, match="negative") as exc:
        decompress(SNAPPY, xerial([block]) + b"\xff\xff\xff\xfe")
    assert exc.value.offset == 16 + 4 + len(block)
    with pytest.raises(ParseError, match="runs past the end") as exc:
        decompress(SNAPPY, xerial([block])[:-1])
    assert exc.value.offset == 16
    with pytest.raises(ParseError, match="snappy: .*corrupt"):
        decompress(SNAPPY, xerial([block[:-3]]))
    with pytest.raises(ParseError, match="snappy: .*corrupt"):
        decompress(SNAPPY, block[:-3])


def test_unknown_codec_ids():
    for codec in (5, 6, 7):
        with pytest.raises(ParseError, match=f"Unknown compression type id {codec}"):
            decompress(codec, b"abc")
    with pytest.raises(ValueError):
        compress(5, b"abc")


# ------------------------------------------------------------------------------------- bounded output


@pytest.fixture(scope="module")
def hundred_mb_of_zeros_bombs() -> dict[int, bytes]:
    chunk = bytes(1 << 20)
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    zs = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    gz_parts, zs_parts = [], []
    for _ in range(100):
        gz_parts.append(gz.compress(chunk))
        zs_parts.append(zs.compress(chunk))
    lz = compress(LZ4, chunk)[7:-4]  # 16 blocks of 64 KiB zeros
    return {
        GZIP: b"".join(gz_parts) + gz.flush(),
        ZSTD: b"".join(zs_parts) + zs.flush(),
        LZ4: compress(LZ4, b"")[:7] + lz * 100 + b"\x00\x00\x00\x00",
        SNAPPY: compress(SNAPPY, chunk) + compress(SNAPPY, chunk)[16:] * 99,
    }


@pytest.mark.parametrize("codec", CODECS)
def test_bomb_fails_fast_without_allocating_the_output(codec, hundred_mb_of_zeros_bombs):
    bomb = hundred_mb_of_zeros_bombs[codec]
    assert len(bomb) < 6 << 20
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ParseError, match="exceeds limit"):
            decompress(codec, bomb, limit=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2.0
    assert peak < len(bomb) + (8 << 20)


def test_limits_checked_before_decompressing():
    # A raw snappy block whose uvarint length says 1 GiB, and one that says more than it can hold.
    huge = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00" * 10
    with pytest.raises(ParseError, match="exceeds limit"):
        decompress(SNAPPY, xerial([huge]))
    with pytest.raises(ParseError, match="more than possible"):
        decompress(SNAPPY, xerial([huge]), limit=2 << 30)
    frame = lz4_frame(SMALL)  # content size present
    with pytest.raises(ParseError, match="frame declares 2000 bytes") as exc:
        decompress(LZ4, frame, limit=1000)
    assert exc.value.offset == 6
    assert decompress(GZIP, compress(GZIP, SMALL), limit=len(SMALL)) == SMALL
    with pytest.raises(ParseError, match="exceeds limit"):
        decompress(GZIP, compress(GZIP, SMALL), limit=len(SMALL) - 1)
    for codec in (SNAPPY, LZ4, ZSTD, NONE):
        assert decompress(codec, compress(codec, BIG), limit=len(BIG)) == BIG
        with pytest.raises(ParseError, match="exceeds limit"):
            decompress(codec, compress(codec, BIG), limit=len(BIG) - 1)


def test_highly_compressible_streams_decode_completely():
    zeros = bytes(10 << 20)
    # zstd: far above the first 16x output guess, so the output buffer must grow.
    assert decompress(ZSTD, zstd_stream(zeros)) == zeros
    assert decompress(ZSTD, zstandard.ZstdCompressor().compress(zeros)) == zeros
    # lz4: 4 MiB blocks of zeros are ~16 KiB each (the ~255x bound on a block's expansion).
    assert decompress(LZ4, lz4_frame(zeros, block_size=lz4.frame.BLOCKSIZE_MAX4MB)) == zeros
    assert decompress(SNAPPY, compress(SNAPPY, zeros)) == zeros
    assert decompress(GZIP, compress(GZIP, zeros)) == zeros


# --------------------------------------------------------------------------------------------- fuzzing


def valid_frames(codec: int) -> list[bytes]:
    frames = [compress(codec, SMALL), compress(codec, b"abc")]
    if codec == GZIP:
        frames.append(gzip.compress(SMALL) + gzip.compress(b"z"))
    elif codec == SNAPPY:
        frames.append(kafka_codec.snappy_encode(SMALL, xerial_blocksize=512))
    elif codec == LZ4:
        frames += [lz4_frame(SMALL, block_checksum=True), lz4_frame(SMALL, content_checksum=True)]
    else:
        frames.append(zstd_stream(SMALL) + zstandard.ZstdCompressor(write_checksum=True).compress(b"q" * 50))
    return frames


FRAMES = {codec: valid_frames(codec) for codec in CODECS}


def only_parse_errors(codec: int, data: bytes, magic: int = 2) -> None:
    try:
        out = decompress(codec, data, magic=magic, limit=1 << 20)
    except ParseError as exc:
        assert isinstance(exc.message, str)
    else:
        assert isinstance(out, bytes) and len(out) <= 1 << 20


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), magic=st.sampled_from([0, 2]))
def test_fuzz_random_bytes(codec, data, magic):
    only_parse_errors(codec, data, magic)
    only_parse_errors(codec, FRAMES[codec][0][:7] + data, magic)  # a plausible header, then garbage


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_bit_flips_and_truncations(codec, data):
    frame = bytearray(data.draw(st.sampled_from(FRAMES[codec])))
    for _ in range(data.draw(st.integers(0, 4))):
        bit = data.draw(st.integers(0, len(frame) * 8 - 1))
        frame[bit // 8] ^= 1 << (bit % 8)
    cut = data.draw(st.integers(0, len(frame)))
    only_parse_errors(codec, bytes(frame[:cut]), data.draw(st.sampled_from([0, 2])))


# ---------------------------------------------------------------------------------------------- corpus

_BATCH = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*position: (\d+) .*compresscodec: (\w+)"
)
_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) .*?"
                     r"(?: key: (.*?))?(?: payload: (.*))?$")


def compressed_batches_in_dumps(root: Path):
    """(log file, position, count, [(offset, ts, key size, value size, payload)]) per compressed batch."""
    for dump in sorted(root.glob("*/dumps/*/data.print-data-log.txt.gz")):
        batch = None
        for current_file, line in dump_lines(dump):
            m = _BATCH.match(line)
            if m:
                if batch:
                    yield batch
                batch = None
                if m.group(5) != "none":
                    batch = (root / current_file, int(m.group(4)), int(m.group(3)), m.group(5), [])
                continue
            r = _RECORD.match(line)
            if r and batch:
                batch[4].append((int(r.group(1)), int(r.group(2)), int(r.group(3)), int(r.group(4)),
                                 r.group(6)))
        if batch:
            yield batch
            batch = None


@pytest.mark.corpus
def test_corpus_compressed_batches_match_kafka_dump_log():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    from parsers.record_batch import decode_records, parse_header, records_payload

    root = CORPUS.resolve()
    seen: dict[str, int] = {}
    cache: dict[Path, bytes] = {}
    for path, position, count, codec_name, records in compressed_batches_in_dumps(root):
        buf = cache.setdefault(path, path.read_bytes())
        batch = parse_header(buf, position)
        assert batch.crc_valid and batch.compression_name == codec_name and batch.records_count == count
        notes = DecodeNotes()
        payload = decompress(batch.compression, buf[position + 61 : position + batch.size], notes=notes)
        assert payload == records_payload(batch, buf[position : position + batch.size])
        decoded = decode_records(batch, payload)
        assert len(decoded) == count == len(records)
        for rec, (offset, ts, key_size, value_size, text) in zip(decoded, records, strict=True):
            assert (rec.offset, rec.timestamp) == (offset, ts)
            assert (len(rec.key) if rec.key is not None else -1) == key_size
            assert (len(rec.value) if rec.value is not None else -1) == value_size
            if text is not None and rec.value is not None:
                assert rec.value.decode("utf-8", "replace") == text
        seen[codec_name] = seen.get(codec_name, 0) + 1
        seen.setdefault(f"warnings:{codec_name}", 0)
        seen[f"warnings:{codec_name}"] += len(notes.warnings)
    assert {"gzip", "snappy", "lz4", "zstd"} <= set(seen), seen
    assert all(v == 0 for k, v in seen.items() if k.startswith("warnings:")), seen

