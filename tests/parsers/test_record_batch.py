"""RecordBatch v2: schema vs fast paths, the spec's verified example, CRC coverage, fuzzing."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import ParseError
from parsers.primitives import struct_of
from parsers.record_batch import (
    HEADER_FIELDS,
    HEADER_STRUCT,
    BatchHeaderV2,
    RecordSpec,
    RecordV2,
    build_batch,
    decode_records,
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
