"""RecordBatch v2: schema vs fast paths, the spec's verified example, CRC coverage, fuzzing."""

from __future__ import annotations

import struct

import construct as cs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import ParseError
from parsers.primitives import crc32c, struct_of
from parsers.record_batch import (
    HEADER_FIELDS,
    HEADER_STRUCT,
    MAX_RECORDS_PER_BATCH,
    BatchHeaderV2,
    RecordBudgetExceeded,
    RecordSpec,
    RecordV2,
    batch_records,
    build_batch,
    decode_records,
    encode_record,
    iter_records,
    last_sequence,
    parse_header,
    parse_records_with_schema,
    records_payload,
    restamp,
)

# Spec §3.5: kafka-python's builder output for two records, verified byte for byte.
SPEC_EXAMPLE = bytes.fromhex(
    "0000000000000000"
    "0000004f"
    "00000000"
    "02"
    "4469c88d"
    "0000"
    "00000001"
    "0000018bcfe56800"
    "0000018bcfe56805"
    "ffffffffffffffff"
    "ffff"
    "ffffffff"
    "00000002"
    "1a00000004"
    "6b31"
    "0a"
    "68656c6c6f"
    "00"
    "1e000a0201"
    "0a"
    "776f726c64"
    "02"
    "02"
    "68"
    "02"
    "76"
)


def spec_records() -> list[RecordSpec]:
    return [
        RecordSpec(b"k1", b"hello", 1700000000000),
        RecordSpec(None, b"world", 1700000000005, [("h", b"v")]),
    ]


def test_build_reproduces_the_spec_example_byte_for_byte():
    assert build_batch(spec_records()) == SPEC_EXAMPLE


def test_header_fields_and_crc_of_the_spec_example():
    batch = parse_header(SPEC_EXAMPLE)
    assert batch.crc == 0x4469C88D and batch.crc_valid
    assert (batch.base_offset, batch.last_offset, batch.records_count, batch.size) == (0, 1, 2, 91)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    records = decode_records(batch, records_payload(batch, SPEC_EXAMPLE))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (0, b"k1", b"hello", 1700000000000),
        (1, None, b"world", 1700000000005),
    ]
    assert records[1].headers[0].key == "h" and records[1].headers[0].value == b"v"


def test_struct_fast_path_is_derived_from_the_construct_schema():
    assert struct_of(BatchHeaderV2).format == HEADER_STRUCT.format
    assert tuple(sc.name for sc in BatchHeaderV2.subcons) == HEADER_FIELDS
    parsed = BatchHeaderV2.parse(SPEC_EXAMPLE[:61])
    assert HEADER_STRUCT.unpack_from(SPEC_EXAMPLE) == tuple(parsed[name] for name in HEADER_FIELDS)
    assert BatchHeaderV2.build(parsed) == SPEC_EXAMPLE[:61]


def test_offset_and_leader_epoch_are_outside_the_crc():
    patched = restamp(SPEC_EXAMPLE, base_offset=42, partition_leader_epoch=7)
    batch = parse_header(patched)
    assert batch.crc_valid and batch.base_offset == 42 and batch.partition_leader_epoch == 7
    flipped = bytearray(SPEC_EXAMPLE)
    flipped[22] ^= 0x01  # an attribute bit is covered
    assert not parse_header(bytes(flipped)).crc_valid


@pytest.mark.parametrize(
    "base,delta,expected", [(-1, 5, -1), (0, 4, 4), (2147483647, 0, 2147483647), (2147483646, 3, 1)]
)
def test_last_sequence_wraps_like_kafka(base, delta, expected):
    assert last_sequence(base, delta) == expected


record_strategy = st.builds(
    RecordSpec,
    key=st.one_of(st.none(), st.binary(max_size=40)),
    value=st.one_of(st.none(), st.binary(max_size=200)),
    timestamp=st.integers(min_value=0, max_value=2**41),
    headers=st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=8), st.integers(0, 2**40), st.integers(-1, 1000))
def test_round_trip_and_schema_agrees_with_fast_decoder(records, base_offset, epoch):
    raw = build_batch(records, base_offset=base_offset, partition_leader_epoch=epoch)
    batch = parse_header(raw)
    assert batch.crc_valid and batch.base_offset == base_offset and batch.records_count == len(records)
    payload = records_payload(batch, raw)
    fast = decode_records(batch, payload)
    assert fast == parse_records_with_schema(batch, payload)
    assert [(r.key, r.value, r.timestamp) for r in fast] == [(r.key, r.value, r.timestamp) for r in records]
    assert [[(h.key, h.value) for h in r.headers] for r in fast] == [r.headers for r in records]
    # Construct build of every record re-encodes the same bytes.
    rebuilt = b"".join(
        RecordV2.build(RecordV2.parse(payload[sum(r.size for r in fast[:i]) :])) for i in range(len(fast))
    )
    assert rebuilt == payload


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_parse_error(data):
    try:
        batch = parse_header(data)
        decode_records(batch, records_payload(batch, data))
    except ParseError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(SPEC_EXAMPLE) * 8 - 1), st.integers(0, len(SPEC_EXAMPLE)))
def test_bit_flips_and_truncations_only_raise_parse_error(bit, cut):
    data = bytearray(SPEC_EXAMPLE)
    data[bit // 8] ^= 1 << (bit % 8)
    for candidate in (bytes(data), SPEC_EXAMPLE[:cut]):
        try:
            batch = parse_header(candidate)
            decode_records(batch, records_payload(batch, candidate))
        except ParseError:
            pass


def test_record_overrunning_its_declared_length_is_rejected():
    raw = bytearray(SPEC_EXAMPLE)
    raw[61] = 0x18  # first record claims 12 bytes instead of 13
    batch = parse_header(bytes(raw))
    with pytest.raises(ParseError, match="Invalid record size"):
        decode_records(batch, records_payload(batch, bytes(raw)))


def test_header_too_short_and_wrong_magic():
    with pytest.raises(ParseError, match="needs 61 bytes"):
        parse_header(SPEC_EXAMPLE[:60])
    raw = bytearray(SPEC_EXAMPLE)
    raw[16] = 1
    with pytest.raises(ParseError, match="magic 1"):
        parse_header(bytes(raw))
    small = bytearray(SPEC_EXAMPLE)
    struct.pack_into(">i", small, 8, 40)
    with pytest.raises(ParseError, match="smaller than the minimum allowed overhead"):
        parse_header(bytes(small))


# ------------------------------------------------------------------------------------------- streaming


def _spec_batch_from_file(tmp_path, raw: bytes, at: int = 100):
    """``raw`` written at file position ``at`` behind filler bytes; (batch, pread) as a walker gives them."""
    path = tmp_path / "segment.log"
    path.write_bytes(b"\xee" * at + raw)
    data = path.read_bytes()
    batch = parse_header(data, at)
    return batch, lambda pos, n: data[pos : pos + n]


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 64])
def test_streamed_records_equal_the_whole_buffer_decode_at_any_piece_boundary(piece):
    """Records split across decompressed pieces at every possible boundary decode identically."""
    batch = parse_header(SPEC_EXAMPLE)
    payload = records_payload(batch, SPEC_EXAMPLE)
    pieces = [payload[i : i + piece] for i in range(0, len(payload), piece)]
    assert list(iter_records(batch, pieces)) == decode_records(batch, payload)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_batch_records_streams_every_codec_with_and_without_payloads(tmp_path, codec):
    specs = [
        RecordSpec(b"k%d" % i, b"v" * (i * 1000), 1_700_000_000_000 + i, [("h", b"x")]) for i in range(50)
    ]
    raw = build_batch(specs, base_offset=10, compression=codec)
    batch, pread = _spec_batch_from_file(tmp_path, raw)
    full = list(batch_records(batch, pread))
    assert full == decode_records(batch, records_payload(batch, raw))
    sizes = [(r.offset, r.key_size, r.value_size, r.size, [h.key for h in r.headers]) for r in full]
    light = list(batch_records(batch, pread, payloads=False))
    assert [(r.offset, r.key_size, r.value_size, r.size, [h.key for h in r.headers]) for r in light] == sizes
    assert all(r.key is None and r.value is None for r in light)


def test_a_record_larger_than_the_window_is_skipped_piece_by_piece(tmp_path, monkeypatch):
    import parsers.record_decode as decode

    monkeypatch.setattr(decode, "RECORD_WINDOW", 4096)
    raw = build_batch([RecordSpec(b"key", b"z" * 100_000, 1, [("a", b"b" * 9000)])], base_offset=5)
    batch, pread = _spec_batch_from_file(tmp_path, raw)
    (rec,) = batch_records(batch, pread, payloads=False)
    assert (rec.offset, rec.key_size, rec.value_size, rec.headers[0].key) == (5, 3, 100_000, "a")
    assert rec.size == len(raw) - 61
    (whole,) = batch_records(batch, pread)  # payloads wanted: the record is read whole
    assert whole.value == b"z" * 100_000


def test_errors_name_the_file_byte_where_decoding_failed(tmp_path):
    raw = bytearray(SPEC_EXAMPLE)
    raw[61 + 1 + 3] = 0x7E  # first record: key length 63, runs past its 13-byte body
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    batch, pread = _spec_batch_from_file(tmp_path, bytes(raw), at=100)
    with pytest.raises(ParseError, match="key of 63 bytes runs past the end of the record") as exc:
        list(batch_records(batch, pread))
    assert exc.value.offset == 100 + 61 + 5  # the byte after the key length varint
    lying = bytearray(SPEC_EXAMPLE)
    struct.pack_into(">i", lying, 57, 3)
    struct.pack_into(">I", lying, 17, crc32c(memoryview(lying)[21:]))
    batch, pread = _spec_batch_from_file(tmp_path, bytes(lying), at=7)
    records = batch_records(batch, pread)
    assert next(records).offset == 0 and next(records).offset == 1
    with pytest.raises(ParseError, match="premature EOF reached: 3 records declared, only 2 found") as exc:
        next(records)
    assert exc.value.offset == 7 + len(SPEC_EXAMPLE)


def test_compressed_errors_point_into_the_compressed_bytes(tmp_path):
    body = b"".join(encode_record(i, 0, b"k", b"v") for i in range(3))
    raw = build_batch([RecordSpec(b"k", b"v", 1)] * 3, compression=4)
    lying = bytearray(raw)
    struct.pack_into(">i", lying, 57, 4)
    struct.pack_into(">I", lying, 17, crc32c(memoryview(lying)[21:]))
    batch, pread = _spec_batch_from_file(tmp_path, bytes(lying), at=50)
    with pytest.raises(ParseError, match=rf"byte {len(body)} of the decompressed records") as exc:
        list(batch_records(batch, pread))
    assert 50 + 61 <= exc.value.offset <= 50 + len(raw)
    bad_codec = bytearray(raw)
    struct.pack_into(">h", bad_codec, 21, 6)
    struct.pack_into(">I", bad_codec, 17, crc32c(memoryview(bad_codec)[21:]))
    batch, pread = _spec_batch_from_file(tmp_path, bytes(bad_codec), at=50)
    with pytest.raises(ParseError, match="Unknown compression type id 6") as exc:
        list(batch_records(batch, pread))
    assert exc.value.offset == 50 + 61


def test_record_count_budget_is_checked_before_decoding():
    batch = parse_header(SPEC_EXAMPLE)
    batch.records_count = MAX_RECORDS_PER_BATCH + 1
    with pytest.raises(RecordBudgetExceeded, match="not decoded"):
        next(iter_records(batch, [b""]))
    first = next(
        iter_records(batch, [records_payload(parse_header(SPEC_EXAMPLE), SPEC_EXAMPLE)], budget=2**31)
    )
    assert first.key == b"k1"  # a reader of the first record only may lift the budget


def test_the_record_plan_is_read_off_the_declaration():
    from parsers.record_v2 import RECORD_PLAN, WRITTEN_OUT_PLAN, field_plan

    assert RECORD_PLAN == field_plan(RecordV2) == WRITTEN_OUT_PLAN
    subs = RecordV2.subcons
    swapped = cs.Struct(*subs[:2], subs[3], subs[2], *subs[4:])
    assert field_plan(swapped) != WRITTEN_OUT_PLAN  # a changed declaration parts from the decoders
    assert [step[0] for step in field_plan(swapped)][2:4] == ["offset_delta", "timestamp_delta"]


_CONTENT = cs.Struct(*RecordV2.subcons[4:])
"""``RecordV2`` from the key on: the record's content (key, value, header count and headers)."""


@settings(max_examples=200, deadline=None)
@given(
    key=st.none() | st.binary(max_size=300),
    value=st.none() | st.binary(max_size=300),
    headers=st.lists(st.tuples(st.text(max_size=70), st.none() | st.binary(max_size=80)), max_size=4),
)
def test_record_content_is_the_declarations_content(key, value, headers):
    """``encode_record_content`` (what ``record_hash`` hashes) builds ``RecordV2``'s content fields, and is
    the end of the record ``encode_record`` writes."""
    from parsers.record_build import encode_record_content

    def nullable(data):
        return {"length": -1 if data is None else len(data), "data": data}

    built = _CONTENT.build(
        {
            "key": nullable(key),
            "value": nullable(value),
            "header_count": len(headers),
            "headers": [
                {
                    "key_length": len(k.encode()),
                    "key": k.encode(),
                    "value_length": nullable(v)["length"],
                    "value": v,
                }
                for k, v in headers
            ],
        }
    )
    assert encode_record_content(key, value, headers) == built
    assert encode_record(3, 9, key, value, headers).endswith(built)
    assert _CONTENT.parse(built).key.data == key
