"""Schema-driven flexible/non-flexible message encoding (spec §14.3): examples, round trips, fuzzing."""

from __future__ import annotations

import base64
import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    KEY_SCHEMAS,
    VALUE_SCHEMAS,
)
from parsers.control import CONTROL_SCHEMAS
from parsers.errors import ParseError
from parsers.flexible import (
    UNKNOWN_TAGS,
    Field,
    Message,
    Versions,
    decode_exact,
    decode_message,
    default_value,
    encode_message,
    tag_default,
)
from parsers.metadata import METADATA_SCHEMAS
from parsers.primitives import uuid_to_str

TOPIC_ID = bytes.fromhex("6ea27dc9cf9e4342828ea2ea201a697f")

TOPIC = Message("TopicRecord", "0", "0+", [Field("Name", "string"), Field("TopicId", "uuid")])

# Every feature of the schema language: versions 0-3, flexible from 2.
SINK = Message("KitchenSink", "0-3", "2+", [
    Field("I8", "int8"),
    Field("I16", "int16", default=-1),
    Field("U16", "uint16"),
    Field("I32", "int32"),
    Field("U32", "uint32", versions="1+"),
    Field("I64", "int64"),
    Field("F64", "float64"),
    Field("Flag", "bool", default=True),
    Field("Id", "uuid"),
    Field("Name", "string"),
    Field("MaybeName", "string", nullable="0+"),
    Field("Blob", "bytes"),
    Field("MaybeBlob", "bytes", nullable="1+"),
    Field("Ints", "[]int32"),
    Field("Names", "[]string", versions="1+"),
    Field("Ids", "[]uuid", nullable="0+"),
    Field("Items", "[]Item", fields=[
        Field("Key", "string"),
        Field("Values", "[]int64"),
        Field("Extra", "int32", versions="3+", tag=0, default=-1),
    ]),
    Field("Inner", "Inner", fields=[Field("A", "int16"), Field("B", "string", nullable="0+")]),
    Field("MaybeInner", "Inner2", nullable="0+", fields=[Field("C", "int32")]),
    Field("OnlyV0", "int32", versions="0"),
    Field("TagInt", "int32", versions="2+", tag=0, default=-2),
    Field("TagList", "[]int32", versions="2+", nullable="2+", tag=1, default=None),
    Field("TagStruct", "TagStruct", versions="3+", nullable="3+", tag=2, default=None, fields=[
        Field("D", "int64"),
    ]),
    Field("TagStr", "string", versions="2+", tag=5),
])


# ------------------------------------------------------------------------------------ strategies


def value_strategy(f: Field, version: int) -> st.SearchStrategy:
    """Values of ``f`` as the decoder returns them."""
    if f.is_array:
        if f.element == "struct":
            elem = struct_strategy(f.fields, version)
        else:
            elem = _primitive(f.element, nullable=False)
        base = st.lists(elem, max_size=3)
    elif f.element == "struct":
        base = struct_strategy(f.fields, version)
    else:
        return _primitive(f.element, f.nullable_in(version))
    return st.none() | base if f.nullable_in(version) else base


_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _primitive(kind: str, nullable: bool) -> st.SearchStrategy:
    if kind in _INTS:
        bits = _INTS[kind]
        s = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif kind == "uint16":
        s = st.integers(0, 0xFFFF)
    elif kind == "uint32":
        s = st.integers(0, 0xFFFFFFFF)
    elif kind == "float64":
        s = st.floats(allow_nan=False)
    elif kind == "bool":
        s = st.booleans()
    elif kind == "uuid":
        s = st.binary(min_size=16, max_size=16).map(uuid_to_str)
    elif kind == "string":
        s = st.text(max_size=8)
    else:
        s = st.binary(max_size=8).map(lambda b: base64.b64encode(b).decode())
    return st.none() | s if nullable else s


def struct_strategy(fields, version: int) -> st.SearchStrategy:
    """A struct as decode returns it: all untagged fields; tagged ones only when not at their tag_default (a
    tagged struct left out takes its declared default, e.g. null, which decode shows)."""
    required, optional = {}, {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.tagged_in(version):
            optional[f.json_name] = value_strategy(f, version)
        else:
            required[f.json_name] = value_strategy(f, version)
    defaults = {f.json_name: tag_default(f, version) for f in fields if f.tagged_in(version)}
    absent = {f.json_name: default_value(f, version) for f in fields if f.tagged_in(version)}

    def drop_defaults(d: dict) -> dict:
        # a tagged field at its tag default is left out of the bytes and decodes as its absent value (a
        # struct equal to the default-constructed one comes back null when its declared default is null),
        # which decode shows unless it is the tag default too
        out = {}
        for k in [*d, *(k for k in absent if k not in d)]:
            v = d.get(k, absent.get(k))
            if k in defaults and v == defaults[k]:
                v = absent[k]
                if v == defaults[k]:
                    continue
            out[k] = v
        return out

    return st.fixed_dictionaries(required, optional=optional).map(drop_defaults)


ALL_SCHEMAS: list[tuple[Message, int]] = []
for _schema in [*METADATA_SCHEMAS.values(), *CONTROL_SCHEMAS.values(), *VALUE_SCHEMAS.values(),
                CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT, SINK]:
    _v = Versions.parse(_schema.valid)
    for _version in range(_v.low, (_v.high if _v.high is not None else _v.low) + 1):
        ALL_SCHEMAS.append((_schema, _version))
for _record_type, _schema in KEY_SCHEMAS.items():
    ALL_SCHEMAS.append((_schema, _record_type))


@st.composite
def schema_and_data(draw):
    schema, version = draw(st.sampled_from(ALL_SCHEMAS))
    return schema, version, draw(struct_strategy(schema.fields, version))


# ---------------------------------------------------------------------------------------- examples


def test_versions_parse():
    assert 5 in Versions.parse("0+") and 0 in Versions.parse("0+")
    assert 1 not in Versions.parse("2+")
    r = Versions.parse("1-3")
    assert [v in r for v in range(5)] == [False, True, True, True, False]
    assert 2 in Versions.parse("2") and 3 not in Versions.parse("2")
    assert 0 not in Versions.parse("none") and 0 not in Versions.parse(None)
    assert [str(Versions.parse(t)) for t in ("0+", "1-3", "2", "none")] == ["0+", "1-3", "2", "none"]


def test_spec_topic_record_body():
    # §14.3: "03 74 31 | <16-byte id> | 00" -> name "t1", id bqJ9yc-eQ0KCjqLqIBppfw, no tags.
    body = b"\x03t1" + TOPIC_ID + b"\x00"
    assert decode_exact(TOPIC, 0, body) == {"name": "t1", "topicId": "bqJ9yc-eQ0KCjqLqIBppfw"}
    assert encode_message(TOPIC, 0, {"name": "t1", "topicId": "bqJ9yc-eQ0KCjqLqIBppfw"}) == body


def test_spec_partition_change_tagged_leader():
    schema = METADATA_SCHEMAS[5]
    body = bytes(4) + TOPIC_ID + bytes.fromhex("01" "01" "04" "ffffffff")
    data = decode_exact(schema, 2, body)
    assert data == {"partitionId": 0, "topicId": uuid_to_str(TOPIC_ID), "leader": -1}
    assert list(data) == ["partitionId", "topicId", "leader"]
    assert encode_message(schema, 2, data) == body


def test_non_flexible_lengths():
    schema = Message("M", "0-1", "1+", [
        Field("S", "string", nullable="0+"), Field("B", "bytes", nullable="0+"),
        Field("A", "[]int16", nullable="0+"),
    ])
    data = {"s": "ab", "b": base64.b64encode(b"\x01").decode(), "a": [7]}
    assert encode_message(schema, 0, data) == bytes.fromhex("0002 6162" "00000001 01" "00000001 0007")
    assert encode_message(schema, 1, data) == bytes.fromhex("03 6162" "02 01" "02 0007" "00")
    nulls = {"s": None, "b": None, "a": None}
    assert encode_message(schema, 0, nulls) == bytes.fromhex("ffff" "ffffffff" "ffffffff")
    assert encode_message(schema, 1, nulls) == bytes.fromhex("00 00 00 00")
    for version in (0, 1):
        assert decode_exact(schema, version, encode_message(schema, version, data)) == data
        assert decode_exact(schema, version, encode_message(schema, version, nulls)) == nulls


def test_field_order_is_declaration_order_including_tags():
    data = {"i8": 1, "i16": 2, "u16": 3, "i32": 4, "u32": 5, "i64": 6, "f64": 1.5, "flag": False,
            "id": uuid_to_str(TOPIC_ID), "name": "n", "maybeName": None, "blob": "", "maybeBlob": None,
            "ints": [1], "names": ["x"], "ids": None,
            "items": [{"key": "k", "values": [1, 2], "extra": 9}], "inner": {"a": 1, "b": None},
            "maybeInner": {"c": 3}, "tagInt": 7, "tagList": [1], "tagStruct": {"d": 4}, "tagStr": "s"}
    out = decode_exact(SINK, 3, encode_message(SINK, 3, data))
    assert out == data
    assert list(out) == list(data)


def test_tagged_default_is_omitted_both_ways():
    schema = Message("M", "0", "0+", [Field("A", "int32", tag=3, default=-2)])
    assert encode_message(schema, 0, {"a": -2}) == b"\x00"
    assert encode_message(schema, 0, {}) == b"\x00"
    # Kafka's JSON converter omits a tagged field equal to its default even if it was written.
    assert decode_exact(schema, 0, bytes.fromhex("01 03 04 fffffffe")) == {}
    assert decode_exact(schema, 0, bytes.fromhex("01 03 04 00000005")) == {"a": 5}


def test_unknown_tags_are_kept_and_reported():
    body = bytes.fromhex("02" "01 02 abcd" "07 00")
    data = decode_exact(Message("M", "0", "0+", []), 0, body)
    assert data == {UNKNOWN_TAGS: [{"tag": 1, "data": "abcd"}, {"tag": 7, "data": ""}]}
    assert encode_message(Message("M", "0", "0+", []), 0, data) == body
    # Known and unknown tags are merged in ascending order on encode.
    schema = Message("M", "0", "0+", [Field("A", "int8", tag=4)])
    both = {"a": 1, UNKNOWN_TAGS: [{"tag": 9, "data": "00"}, {"tag": 2, "data": ""}]}
    assert encode_message(schema, 0, both) == bytes.fromhex("03" "02 00" "04 01 01" "09 01 00")


def test_tagged_nullable_struct_markers():
    schema = Message("M", "0", "0+", [
        Field("S", "S", nullable="0+", tag=0, default=None, fields=[Field("X", "int8")]),
    ])
    body = encode_message(schema, 0, {"s": {"x": 5}})
    assert body == bytes.fromhex("01" "00 03" "01 05 00")  # 1 tag: tag 0, size 3, [present, x=5, no tags]
    assert decode_exact(schema, 0, body) == {"s": {"x": 5}}
    untagged = Message("M", "0", "none", [Field("S", "S", nullable="0+", fields=[Field("X", "int8")])])
    assert encode_message(untagged, 0, {"s": None}) == b"\xff"
    assert encode_message(untagged, 0, {"s": {"x": 1}}) == b"\x01\x01"
    assert decode_exact(untagged, 0, b"\xff") == {"s": None}


def test_invalid_utf8_is_replaced_like_java():
    assert decode_exact(TOPIC, 0, b"\x02\xff" + TOPIC_ID + b"\x00")["name"] == "\ufffd"


@pytest.mark.parametrize(
    ("schema", "version", "body", "message"),
    [
        (TOPIC, 0, b"\x00" + TOPIC_ID + b"\x00", "field TopicRecord.Name was serialized as null"),
        (Message("M", "0", "none", [Field("S", "string")]), 0, b"\x80\x00", "was serialized as null"),
        (Message("M", "0", "none", [Field("S", "string")]), 0, b"\x7f\xff", "needs 32767 byte(s)"),
        (Message("M", "0", "0+", [Field("S", "string")]), 0, b"\x81\x80\x02", "had invalid length 32768"),
        (Message("M", "0", "0+", [Field("A", "[]int32")]), 0, b"\x05\x00\x00", "Tried to allocate"),
        (Message("M", "0", "none", [Field("A", "[]int32")]), 0, b"\x7f\xff\xff\xff", "Tried to allocate"),
        (Message("M", "0", "0+", [Field("A", "int32")]), 0, b"\x00\x00", "needs 4 byte(s)"),
        (Message("M", "0", "0+", []), 0, b"\x01\x01\x05\x00", "claims 5 byte(s)"),
        (Message("M", "0", "0+", [Field("A", "int8", tag=1)]), 0, b"\x01\x01\x02\x00\x00", "uses 1 of its 2"),
        (Message("M", "0", "0+", []), 0, b"\xff\xff\xff\xff\xff\xff", "varint"),
    ],
)
def test_decode_errors(schema, version, body, message):
    with pytest.raises(ParseError) as info:
        decode_exact(schema, version, body)
    assert message in info.value.message
    assert info.value.offset is not None and 0 <= info.value.offset <= len(body)


def test_tag_of_field_absent_in_version_is_unknown():
    schema = Message("M", "0-1", "0+", [Field("A", "int8", versions="1+", tag=1)])
    assert decode_exact(schema, 0, b"\x01\x01\x01\x07") == {UNKNOWN_TAGS: [{"tag": 1, "data": "07"}]}
    assert decode_exact(schema, 1, b"\x01\x01\x01\x07") == {"a": 7}


def test_tag_not_valid_for_version():
    schema = Message("M", "0-1", "0+", [Field("A", "int8", tag=1, tagged="1+")])
    with pytest.raises(ParseError, match="Tag 1 is not valid for version 0"):
        decode_exact(schema, 0, b"\x00\x01\x01\x01\x00")


def test_garbage_and_version_errors():
    with pytest.raises(ParseError, match=r"Found 2 byte\(s\) of garbage after TopicRecord") as info:
        decode_exact(TOPIC, 0, b"\x01" + TOPIC_ID + b"\x00zz")
    assert info.value.offset == 18
    with pytest.raises(ParseError, match="Can't read version 1 of TopicRecord"):
        decode_message(TOPIC, 1, b"")
    data, end = decode_message(TOPIC, 0, b"xx\x01" + TOPIC_ID + b"\x00yy", 2)
    assert end == 20 and data["name"] == ""


def test_encode_errors():
    with pytest.raises(ValueError, match="unknown field"):
        encode_message(TOPIC, 0, {"nmae": "x"})
    with pytest.raises(ValueError, match="not nullable"):
        encode_message(TOPIC, 0, {"name": None})
    with pytest.raises(ValueError, match="cannot encode"):
        encode_message(SINK, 0, {"i8": 128})
    with pytest.raises(ValueError, match="cannot encode"):
        encode_message(TOPIC, 0, {"topicId": "short"})
    with pytest.raises(ValueError, match="not in version 0"):
        encode_message(SINK, 0, {"u32": 1})
    with pytest.raises(ValueError, match="Can't write version 4"):
        encode_message(SINK, 4, {})
    with pytest.raises(ValueError, match="longer than 32767"):
        encode_message(TOPIC, 0, {"name": "x" * 40000})


def test_schema_declaration_errors():
    with pytest.raises(ValueError, match="needs fields"):
        Field("X", "[]Thing")
    with pytest.raises(ValueError, match="duplicate tag"):
        Message("M", "0", "0+", [Field("A", "int8", tag=0), Field("B", "int8", tag=0)])
    with pytest.raises(ValueError, match="not a subset of the flexible versions"):
        Message("M", "0-2", "1+", [Field("A", "int8", tag=0)])
    with pytest.raises(ValueError, match="not a subset of the flexible versions"):
        Message("M", "0-2", "none", [Field("S", "S", fields=[Field("A", "int8", tag=0, tagged="2+")])])


# ------------------------------------------------------------------------------- property tests


def _same(a, b) -> bool:
    """Equality that treats -0.0 and 0.0 (both valid float64 encodings) as distinct only via bytes."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


@settings(max_examples=200, deadline=None)
@given(schema_and_data())
def test_round_trip_every_schema(case):
    schema, version, data = case
    body = encode_message(schema, version, data)
    decoded = decode_exact(schema, version, body)
    assert _same(decoded, data)
    assert encode_message(schema, version, decoded) == body


@st.composite
def valid_encodings(draw):
    schema, version, data = draw(schema_and_data())
    return schema, version, encode_message(schema, version, data)


@settings(max_examples=200, deadline=None)
@given(valid_encodings(), st.data())
def test_bit_flips_raise_only_parse_error_and_truncations_raise_it(case, data):
    """A flipped bit at ``pos`` decodes or raises ParseError; the body cut at ``pos`` always raises it."""
    schema, version, body = case
    if not body:
        return
    pos = data.draw(st.integers(0, len(body) - 1))
    bit = data.draw(st.integers(0, 7))
    mutated = bytearray(body)
    mutated[pos] ^= 1 << bit
    try:
        decode_exact(schema, version, bytes(mutated))
    except ParseError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(body)
    with pytest.raises(ParseError):
        decode_exact(schema, version, body[:pos])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALL_SCHEMAS), st.binary(max_size=64))
def test_random_bytes_raise_only_parse_error(case, body):
    schema, version = case
    with contextlib.suppress(ParseError):
        decode_message(schema, version, body)
