"""Legacy v0/v1 message sets (spec §5): the verified examples, schema vs fast path, wrapper offset
arithmetic and Kafka's deep-iteration rules, error cases, fuzzing."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import codecs
from parsers.codecs import DecodeNotes
from parsers.errors import ParseError
from parsers.legacy import (
    LegacyEntryFrame,
    LegacyMessage,
    LegacyMessageSpec,
    base_offset,
    build_legacy_message,
    build_legacy_wrapper,
    header_span,
    inner_messages,
    parse_legacy_entry,
)

# Spec §5.1, kafka-python 3.0.12 builder output, CRC recomputed with zlib.
V1_EXAMPLE = bytes.fromhex(
    "0000000000000005" "00000018" "39268c33" "01" "00" "0000018bcfe56800" "000000016b" "0000000176"
)
V0_EXAMPLE = bytes.fromhex("0000000000000000" "00000011" "43dc3faf" "00" "00" "ffffffff" "00000003616263")

SPECS = [
    LegacyMessageSpec(b"k0", b"v0" * 20, 1700000000000),
    LegacyMessageSpec(None, b"v1" * 20, 1700000000007),
    LegacyMessageSpec(b"k2", None, 1700000000003),
]
LEGACY_CODECS = [codecs.GZIP, codecs.SNAPPY, codecs.LZ4]


def test_spec_examples_byte_for_byte():
    assert build_legacy_message(5, b"k", b"v", magic=1, timestamp=1700000000000) == V1_EXAMPLE
    assert build_legacy_message(0, None, b"abc", magic=0) == V0_EXAMPLE
    v1 = parse_legacy_entry(V1_EXAMPLE)
    assert (v1.offset, v1.size, v1.magic, v1.crc, v1.crc_valid) == (5, 36, 1, 0x39268C33, True)
    assert (v1.timestamp, v1.timestamp_type, v1.key, v1.value, v1.compression) == (
        1700000000000, "CreateTime", b"k", b"v", 0
    )
    v0 = parse_legacy_entry(V0_EXAMPLE)
    assert (v0.offset, v0.size, v0.magic, v0.crc, v0.crc_valid) == (0, 29, 0, 0x43DC3FAF, True)
    assert (v0.timestamp, v0.timestamp_type, v0.key, v0.value) == (-1, "NoTimestampType", None, b"abc")
    assert v0.crc == zlib.crc32(V0_EXAMPLE[16:])
    assert LegacyEntryFrame.parse(V1_EXAMPLE).message.crc == 0x39268C33


def test_entry_inside_a_larger_buffer_and_crc_coverage():
    buf = b"\xee" * 7 + V1_EXAMPLE + V0_EXAMPLE
    first = parse_legacy_entry(buf, 7)
    second = parse_legacy_entry(buf, 7 + first.size)
    assert (first.position, second.position, second.value_position) == (7, 43, 43 + 26)
    assert buf[second.value_position : second.value_position + 3] == b"abc"
    # offset and size (the log overhead) are not covered by the CRC; every later byte is.
    patched = struct.pack(">q", 99) + V1_EXAMPLE[8:]
    assert parse_legacy_entry(patched).crc_valid
    for i in range(16, len(V1_EXAMPLE)):
        flipped = bytearray(V1_EXAMPLE)
        flipped[i] ^= 0x01
        try:
            entry = parse_legacy_entry(bytes(flipped))
        except ParseError:
            continue
        assert not entry.crc_valid


@settings(max_examples=200, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    offset=st.integers(-(2**63), 2**63 - 1),
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=40),
    timestamp=st.integers(-(2**63), 2**63 - 1),
    attributes=st.integers(-128, 127),
)
def test_fast_path_agrees_with_schema(magic, offset, key, value, timestamp, attributes):
    raw = build_legacy_message(offset, key, value, magic=magic, timestamp=timestamp, attributes=attributes)
    entry = parse_legacy_entry(raw)
    frame = LegacyEntryFrame.parse(raw)
    message = frame.message
    assert entry.offset == frame.offset and entry.size == len(raw)
    assert (entry.crc, entry.magic, entry.attributes) == (message.crc, message.magic, message.attributes)
    assert (entry.key, entry.value) == (message.key, message.value)
    assert entry.timestamp == (message.timestamp if magic == 1 else -1)
    assert entry.crc_valid and entry.compression == attributes & 7
    assert LegacyMessage.build(message) == raw[12:]


# ---------------------------------------------------------------------------------------- wrappers


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_v1_wrapper_offset_arithmetic(codec):
    raw = build_legacy_wrapper(SPECS, magic=1, compression=codec, offset=102)
    entry = parse_legacy_entry(raw)
    assert (entry.offset, entry.compression, entry.key, entry.crc_valid) == (102, codec, None, True)
    assert entry.timestamp == 1700000000007 and entry.timestamp_type == "CreateTime"
    records = inner_messages(entry)
    assert [r.offset for r in records] == [100, 101, 102]
    assert [r.stored_offset for r in records] == [0, 1, 2]
    assert [(r.key, r.value, r.timestamp) for r in records] == [(s.key, s.value, s.timestamp) for s in SPECS]
    assert all(r.crc_valid and r.magic == 1 and r.timestamp_type == "CreateTime" for r in records)
    assert base_offset(entry) == 100 and entry.last_offset == 102


def test_v1_wrapper_offset_zero_and_invalid_wrapper_offset():
    zero = parse_legacy_entry(build_legacy_wrapper(SPECS, offset=0))
    assert [r.offset for r in inner_messages(zero)] == [0, 1, 2]  # librdkafka special case: base 0
    invalid = parse_legacy_entry(build_legacy_wrapper(SPECS, offset=1))  # inner relative 0, 1, 2
    with pytest.raises(ParseError, match="wrapper offset '1' is less than the last inner message offset '2'"):
        inner_messages(invalid)


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_v0_wrapper_has_absolute_inner_offsets(codec):
    raw = build_legacy_wrapper(SPECS, magic=0, compression=codec, offset=52)
    entry = parse_legacy_entry(raw)
    assert entry.timestamp == -1 and entry.timestamp_type == "NoTimestampType"
    records = inner_messages(entry)
    assert [r.offset for r in records] == [r.stored_offset for r in records] == [50, 51, 52]
    assert all(r.timestamp == -1 and r.timestamp_type == "NoTimestampType" for r in records)
    assert base_offset(entry) == 50
    if codec == codecs.LZ4:  # a magic-0 producer writes the broken LZ4 header checksum (KAFKA-3160)
        frame = entry.value
        head = codecs.read_lz4_header(frame)
        assert head.hc == head.broken_hc != head.expected_hc
        with pytest.raises(ParseError, match="frame descriptor corrupted"):
            codecs.decompress(codecs.LZ4, frame, magic=1)


def test_log_append_time_wrapper_timestamp_propagates():
    entry = parse_legacy_entry(build_legacy_wrapper(SPECS, offset=10, log_append_time=1800000000000))
    assert entry.timestamp_type == "LogAppendTime" and entry.timestamp == 1800000000000
    records = inner_messages(entry)
    assert {(r.timestamp, r.timestamp_type) for r in records} == {(1800000000000, "LogAppendTime")}


def test_uncompressed_entry_is_its_own_record():
    entry = parse_legacy_entry(V1_EXAMPLE)
    (record,) = inner_messages(entry)
    assert (record.offset, record.key, record.value, record.timestamp, record.crc_valid) == (
        5, b"k", b"v", 1700000000000, True
    )
    assert base_offset(entry) == 5


def wrap(inner: bytes, *, magic: int = 1, codec: int = codecs.GZIP, offset: int = 5, value=None) -> bytes:
    """A wrapper around arbitrary inner bytes (for building invalid message sets)."""
    payload = codecs.compress(codec, inner, magic=magic) if value is None else value
    return build_legacy_message(offset, None, payload, magic=magic, attributes=codec, timestamp=0)


def test_inner_crc_is_checked_per_record():
    # KAFKA-8722: a valid wrapper (outer CRC fine) around an inner message with a bad CRC.
    bad = build_legacy_message(1, b"b", b"y", timestamp=2, crc=12345)
    inner = build_legacy_message(0, b"a", b"x", timestamp=1) + bad
    entry = parse_legacy_entry(wrap(inner))
    assert entry.crc_valid
    assert [(r.offset, r.crc_valid, r.computed_crc != r.crc) for r in inner_messages(entry)] == [
        (4, True, False), (5, False, True)
    ]


def test_deep_iteration_rules():
    good = build_legacy_message(0, b"a", b"x", timestamp=1)
    with pytest.raises(ParseError, match="Inner messages must not be compressed"):
        inner_messages(parse_legacy_entry(wrap(good + build_legacy_message(1, None, b"zz", attributes=1))))
    with pytest.raises(ParseError, match="Invalid wrapper compressionType found in legacy deep record"):
        inner_messages(parse_legacy_entry(wrap(good, codec=codecs.ZSTD)))
    with pytest.raises(ParseError, match="null value"):
        inner_messages(parse_legacy_entry(build_legacy_message(0, None, None, attributes=1, timestamp=0)))
    with pytest.raises(ParseError, match="no inner records"):
        inner_messages(parse_legacy_entry(wrap(b"")))
    with pytest.raises(ParseError, match="Unknown compression type id 6"):
        inner_messages(parse_legacy_entry(build_legacy_message(0, None, b"x", attributes=6, timestamp=0)))
    mixed = wrap(good + build_legacy_message(1, None, b"v0", magic=0))
    records = inner_messages(parse_legacy_entry(mixed))
    assert [(r.magic, r.timestamp_type, r.timestamp) for r in records] == [
        (1, "CreateTime", 1), (0, "NoTimestampType", -1)
    ]
    with pytest.raises(ParseError, match="Compressed message magic 0 does not match wrapper magic 1"):
        inner_messages(parse_legacy_entry(mixed), ensure_matching_magic=True)


def test_decompression_and_inner_framing_errors_point_into_the_wrapper_value():
    raw = wrap(b"", value=b"\x1f\x8b\x08\x00garbage-garbage")
    entry = parse_legacy_entry(raw)
    with pytest.raises(ParseError, match="cannot decompress the gzip wrapper value") as exc:
        inner_messages(entry)
    assert exc.value.offset >= entry.value_position
    truncated = build_legacy_message(0, b"a", b"x" * 30, timestamp=1)[:-5]
    entry = parse_legacy_entry(wrap(truncated))
    with pytest.raises(ParseError, match="inner message at decompressed byte 8: .*runs past the end") as exc:
        inner_messages(entry)
    assert exc.value.offset == entry.value_position


def test_tolerated_oddities_are_noted():
    good = build_legacy_message(0, b"a", b"x", timestamp=1)
    notes = DecodeNotes()
    assert len(inner_messages(parse_legacy_entry(wrap(good + b"\x00" * 11, offset=0)), notes=notes)) == 1
    assert notes.warnings == ["11 bytes after the last inner message ignored"]
    notes = DecodeNotes()
    gappy = build_legacy_wrapper([LegacyMessageSpec(b"a", b"x", 1, offset=3)], offset=9)
    assert [r.offset for r in inner_messages(parse_legacy_entry(gappy), notes=notes)] == [9]
    assert notes.warnings == ["v1 wrapper: inner relative offsets are not 0..n-1"]
    notes = DecodeNotes()
    v0 = build_legacy_wrapper(SPECS, magic=0, offset=7)
    v0 = struct.pack(">q", 8) + v0[8:]  # the offset is outside the CRC
    inner_messages(parse_legacy_entry(v0), notes=notes)
    assert notes.warnings == ["v0 wrapper offset 8 is not the last inner offset 7"]
    # Bytes after the value inside a message: ignored by Kafka, counted here (and CRC-covered).
    msg = bytearray(build_legacy_message(0, b"k", b"v", magic=0) + b"\xaa\xbb")
    struct.pack_into(">i", msg, 8, len(msg) - 12)
    struct.pack_into(">I", msg, 12, zlib.crc32(bytes(msg[16:])))
    entry = parse_legacy_entry(bytes(msg))
    assert (entry.trailing_bytes, entry.value, entry.crc_valid) == (2, b"v", True)


# ---------------------------------------------------------------------------------------- errors


def message_with(size: int, magic: int, body: bytes) -> bytes:
    return struct.pack(">qiIbb", 0, size, 0, magic, 0) + body


@pytest.mark.parametrize(
    ("raw", "message", "offset"),
    [
        (b"\x00" * 11, "needs 12 bytes", 0),
        (struct.pack(">qi", 0, 13) + b"\x00" * 13, "Record size 13 is less than the minimum .* \\(14\\)", 8),
        (struct.pack(">qi", 0, 0) + b"\x00" * 40, "Record size 0 is less", 8),
        (V0_EXAMPLE[:-1], "runs past the end of the data", 8),
        (message_with(14, 1, b"\x00" * 8), "minimum record overhead \\(22\\) for magic 1", 8),
        (message_with(20, 2, b"\x00" * 14), "magic 2 is not a legacy", 16),
        (message_with(14, 0, struct.pack(">ii", 1, -1)), "key of 1 bytes runs past the end", 18),
        (message_with(15, 0, struct.pack(">iBi", 1, 0x61, 1)), "value of 1 bytes runs past the end", 23),
        (message_with(14, 0, struct.pack(">ii", 2**31 - 1, 0)), "key of 2147483647 bytes", 18),
    ],
)
def test_structural_errors(raw, message, offset):
    with pytest.raises(ParseError, match=message) as exc:
        parse_legacy_entry(raw)
    assert exc.value.offset == offset


def test_negative_lengths_other_than_minus_one_read_as_null_like_kafka():
    raw = message_with(14, 0, struct.pack(">ii", -7, -2))
    entry = parse_legacy_entry(raw)
    assert (entry.key, entry.value, entry.value_position, entry.trailing_bytes) == (None, None, -1, 0)


# ---------------------------------------------------------------------------------------- fuzzing

VALID = [
    V0_EXAMPLE,
    V1_EXAMPLE,
    *(build_legacy_wrapper(SPECS, magic=m, compression=c, offset=9) for m in (0, 1) for c in LEGACY_CODECS),
]


def parse_everything(raw: bytes) -> None:
    try:
        entry = parse_legacy_entry(raw)
        inner_messages(entry, limit=1 << 20)
        base_offset(entry, limit=1 << 20)
    except ParseError as exc:
        assert isinstance(exc.message, str)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_random_bytes(raw):
    parse_everything(raw)
    parse_everything(VALID[2][:16] + raw)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_bit_flips_and_truncations(data):
    raw = bytearray(data.draw(st.sampled_from(VALID)))
    for _ in range(data.draw(st.integers(0, 4))):
        bit = data.draw(st.integers(0, len(raw) * 8 - 1))
        raw[bit // 8] ^= 1 << (bit % 8)
    parse_everything(bytes(raw[: data.draw(st.integers(0, len(raw)))]))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_inner_message_sets(data):
    # Corrupt the *decompressed* inner set, then re-wrap it with a valid compression.
    inner = bytearray(b"".join(build_legacy_message(i, s.key, s.value, timestamp=s.timestamp)
                               for i, s in enumerate(SPECS)))
    for _ in range(data.draw(st.integers(1, 4))):
        inner[data.draw(st.integers(0, len(inner) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(inner)))
    codec = data.draw(st.sampled_from(LEGACY_CODECS))
    parse_everything(wrap(bytes(inner[:cut]), codec=codec, magic=data.draw(st.sampled_from([0, 1]))))


# ------------------------------------------------------------------------- offsets out of range (issue 8)


def _damaged_v0(offset: int) -> bytes:
    """A magic 0 gzip wrapper of inner offsets 50..52 whose (CRC-uncovered) offset field says ``offset``."""
    raw = bytearray(build_legacy_wrapper(SPECS, magic=0, compression=codecs.GZIP, offset=52))
    struct.pack_into(">q", raw, 0, offset)
    return bytes(raw)


@pytest.mark.parametrize(
    ("damaged", "message"),
    [
        (2**40, "is 1099511627726 past its first inner offset 50"),
        (50 + 2**31, "past its first inner offset 50, beyond the int32"),  # once wrapped to a negative delta
        (49, "its offset 49 is below its first inner offset 50"),
        (-(2**63), "below its first inner offset 50"),
        (2**63 - 1, "past its first inner offset 50"),
    ],
)
def test_header_span_rejects_offsets_that_fit_no_segment(damaged, message):
    entry = parse_legacy_entry(b"\x00" * 7 + _damaged_v0(damaged), 7)
    assert entry.crc_valid  # the offset field is not covered by the CRC
    with pytest.raises(ParseError, match=re.escape(message)) as err:
        header_span(entry)
    assert err.value.offset == 7  # the entry's offset field


def test_header_span_of_a_v1_first_offset_outside_int64():
    specs = [LegacyMessageSpec(b"k", b"v", 1, offset=0), LegacyMessageSpec(b"k", b"w", 2, offset=-10)]
    entry = parse_legacy_entry(build_legacy_wrapper(specs, magic=1, offset=2**63 - 1))
    with pytest.raises(ParseError, match="outside the int64 range"):
        header_span(entry)


def test_header_span_in_range():
    assert header_span(parse_legacy_entry(_damaged_v0(52))) == (50, 2, 3)
    assert header_span(parse_legacy_entry(_damaged_v0(50 + 2**31 - 1))) == (50, 2**31 - 1, 3)
    plain = parse_legacy_entry(build_legacy_message(-5, b"k", b"v", magic=0))
    assert header_span(plain) == (-5, 0, 1)  # one message: nothing to overflow (segment rules judge it)
    broken = bytearray(build_legacy_wrapper(SPECS, magic=0, compression=codecs.GZIP, offset=52))
    broken[-3] ^= 0xFF  # the compressed value no longer decompresses
    struct.pack_into(">I", broken, 12, zlib.crc32(bytes(broken[16:])))
    assert header_span(parse_legacy_entry(bytes(broken))) == (52, 0, 0)  # a records problem, not framing


@pytest.mark.parametrize("damaged", [2**40, 50 + 2**31 + 5, 49])
def test_walker_stops_at_an_entry_whose_offsets_fit_no_segment(tmp_path, damaged):
    from parsers.segment import SegmentWalker

    good = build_legacy_wrapper(SPECS, magic=0, compression=codecs.GZIP, offset=49)  # offsets 47..49
    path = tmp_path / "00000000000000000047.log"
    path.write_bytes(good + _damaged_v0(damaged) + good)
    walker = SegmentWalker(path, stop_on_invalid=False)
    blocks = list(walker.header_blocks())
    assert [int(b.headers["base_offset"][0]) for b in blocks] == [47]
    assert int(blocks[0].headers["last_offset_delta"][0]) == 2
    stop = walker.stop
    size = path.stat().st_size
    assert (stop.reason, stop.position, stop.trailing_bytes) == ("corrupt", len(good), size - len(good))
    assert "wrapper" in stop.message
    entries = list(SegmentWalker(path, stop_on_invalid=False))
    assert [e.offset for e in entries] == [49]
