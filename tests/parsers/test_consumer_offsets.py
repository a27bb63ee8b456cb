"""``__consumer_offsets`` keys and values: hand-built bytes, consumer protocol, fuzzing, corpus vs dumps.

The ``__consumer_offsets`` schema tables against Kafka 4.0's own message definitions.

Kafka's jars carry the JSON definitions their classes are generated from (``common/message/*.json``): the
group coordinator's keys and values in ``kafka-group-coordinator-4.0.0.jar``, the consumer protocol's
subscription and assignment in ``kafka-clients-4.0.0.jar``. Every record type Kafka 4.0's
``GroupCoordinatorRecordSerde`` reads (a key's valid version is its record type) must have a key and a value
table here, with the same names, valid and flexible versions, and per version the same fields in the same
order with the same types, nullability, tags, defaults and ignorability. Skipped without
``../shared/kafka-4.0.0``."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    KEY_SCHEMAS,
    VALUE_SCHEMAS,
    decode_consumer_protocol,
    decode_offsets_key,
    decode_offsets_value,
    encode_consumer_protocol,
    encode_offsets_key,
    encode_offsets_value,
)
from parsers.errors import ParseError
from parsers.flexible import Field, Message, Versions, default_value
from tests.support.kafka_dumps import dump_matches, kafka_records, record_dumps


def s16(text: str | None) -> bytes:
    """Non-flexible string: int16 length (-1 = null) + UTF-8."""
    if text is None:
        return b"\xff\xff"
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def b32(raw: bytes | None) -> bytes:
    return b"\xff\xff\xff\xff" if raw is None else struct.pack(">i", len(raw)) + raw


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


OFFSET_KEY = i16(1) + s16("group-txn") + s16("txn") + i32(1)
GROUP_KEY = i16(2) + s16("group-txn")
MEMBER = "kafka-python-3.0.12-08092bd5"
# kafka-python sends version 0 of the consumer protocol.
SUBSCRIPTION_V0 = i16(0) + i32(1) + s16("txn") + b32(b"")
ASSIGNMENT_V0 = i16(0) + i32(1) + s16("txn") + i32(2) + i32(0) + i32(1) + b32(b"")
# The Java consumer sends version 3.
SUBSCRIPTION_V3 = i16(3) + i32(1) + s16("demo") + b32(None) + i32(0) + i32(-1) + s16(None)


def group_value_v3(protocol_type: str, subscription: bytes, assignment: bytes) -> bytes:
    member = (s16(MEMBER) + s16(None) + s16("kafka-python-3.0.12") + s16("/127.0.0.1") + i32(300000)
              + i32(45000) + b32(subscription) + b32(assignment))
    return (i16(3) + s16(protocol_type) + i32(2) + s16("range") + s16(MEMBER) + i64(1795238682441) + i32(1)
            + member)


def test_offset_commit_key():
    assert len(OFFSET_KEY) == 22  # keySize in the dump
    assert decode_offsets_key(OFFSET_KEY) == {"type": "1",
                                              "data": {"group": "group-txn", "topic": "txn", "partition": 1}}
    assert decode_offsets_key(i16(0) + OFFSET_KEY[2:])["type"] == "0"
    assert encode_offsets_key(1, {"group": "group-txn", "topic": "txn", "partition": 1}) == OFFSET_KEY


def test_group_metadata_key():
    assert decode_offsets_key(GROUP_KEY) == {"type": "2", "data": {"group": "group-txn"}}
    assert encode_offsets_key(2, {"group": "group-txn"}) == GROUP_KEY


@pytest.mark.parametrize(
    ("version", "value", "data"),
    [
        (0, i64(5) + s16("m") + i64(100), {"offset": 5, "metadata": "m", "commitTimestamp": 100}),
        (1, i64(5) + s16("") + i64(100) + i64(200),
         {"offset": 5, "metadata": "", "commitTimestamp": 100, "expireTimestamp": 200}),
        (2, i64(5) + s16("") + i64(100), {"offset": 5, "metadata": "", "commitTimestamp": 100}),
        (3, i64(87) + i32(0) + s16("") + i64(1795238682515),
         {"offset": 87, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1795238682515}),
        (4, i64(87) + i32(-1) + b"\x01" + i64(9) + b"\x00",
         {"offset": 87, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 9}),
    ],
)
def test_offset_commit_value_versions(version, value, data):
    key = decode_offsets_key(OFFSET_KEY)
    assert decode_offsets_value(key, i16(version) + value) == {"version": str(version), "data": data}
    assert encode_offsets_value(1, version, data) == i16(version) + value


def test_empty_group_metadata_value():
    value = i16(3) + s16("") + i32(0) + s16(None) + s16(None) + i64(1795238682266) + i32(0)
    assert len(value) == 24  # valueSize in the dump
    assert decode_offsets_value(decode_offsets_key(GROUP_KEY), value) == {"version": "3", "data": {
        "protocolType": "", "generation": 0, "protocol": None, "leader": None,
        "currentStateTimestamp": 1795238682266, "members": []}}


def test_consumer_group_members_decode_embedded_protocol():
    value = group_value_v3("consumer", SUBSCRIPTION_V0, ASSIGNMENT_V0)
    out = decode_offsets_value(decode_offsets_key(GROUP_KEY), value)
    assert out["data"]["members"] == [{
        "memberId": MEMBER, "groupInstanceId": None, "clientId": "kafka-python-3.0.12",
        "clientHost": "/127.0.0.1", "rebalanceTimeout": 300000, "sessionTimeout": 45000,
        "subscription": {"topics": ["txn"], "userData": ""},
        "assignment": {"assignedPartitions": [{"topic": "txn", "partitions": [0, 1]}], "userData": ""},
    }]
    assert decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, SUBSCRIPTION_V3) == {
        "topics": ["demo"], "userData": None, "ownedPartitions": [], "generationId": -1, "rackId": None}
    assert encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, 3, {
        "topics": ["demo"], "userData": None, "ownedPartitions": [], "generationId": -1,
        "rackId": None}) == SUBSCRIPTION_V3
    assert encode_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, 0, {
        "assignedPartitions": [{"topic": "txn", "partitions": [0, 1]}], "userData": ""}) == ASSIGNMENT_V0


def test_newer_consumer_protocol_versions_read_with_newest_layout():
    newer = i16(9) + SUBSCRIPTION_V3[2:] + b"more"
    assert decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, newer) == \
        decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, SUBSCRIPTION_V3)


def test_undecodable_or_foreign_protocol_bytes_stay_base64():
    value = group_value_v3("consumer", b"\x00", ASSIGNMENT_V0[:-2])
    member = decode_offsets_value(decode_offsets_key(GROUP_KEY), value)["data"]["members"][0]
    assert member["subscription"] == "AA=="
    assert member["assignment"] == base64.b64encode(ASSIGNMENT_V0[:-2]).decode()
    value = group_value_v3("connect", SUBSCRIPTION_V0, ASSIGNMENT_V0)
    member = decode_offsets_value(decode_offsets_key(GROUP_KEY), value)["data"]["members"][0]
    assert member["subscription"] == base64.b64encode(SUBSCRIPTION_V0).decode()


def test_group_metadata_value_versions_round_trip():
    member = {"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 10,
              "subscription": "AAE=", "assignment": ""}
    for version, extra_group, extra_member in [
        (0, {}, {}), (1, {}, {"rebalanceTimeout": 5}),
        (2, {"currentStateTimestamp": 7}, {"rebalanceTimeout": 5}),
        (3, {"currentStateTimestamp": 7}, {"rebalanceTimeout": 5, "groupInstanceId": "i"}),
        (4, {"currentStateTimestamp": 7}, {"rebalanceTimeout": 5, "groupInstanceId": None}),
    ]:
        data = {"protocolType": "other", "generation": 1, "protocol": None, "leader": "m", **extra_group,
                "members": [{**member, **extra_member}]}
        value = encode_offsets_value(2, version, data)
        decoded = decode_offsets_value({"type": "2", "data": {}}, value)
        assert decoded == {"version": str(version), "data": data}


def test_kip848_consumer_group_records():
    key = encode_offsets_key(5, {"groupId": "g", "memberId": "m"})
    assert key == i16(5) + s16("g") + s16("m")
    decoded_key = decode_offsets_key(key)
    assert decoded_key == {"type": "5", "data": {"groupId": "g", "memberId": "m"}}
    data = {"instanceId": None, "rackId": "r1", "clientId": "c", "clientHost": "/1.2.3.4",
            "subscribedTopicNames": ["a", "b"], "subscribedTopicRegex": None, "rebalanceTimeoutMs": 300000,
            "serverAssignor": "uniform",
            "classicMemberMetadata": {"sessionTimeoutMs": 45000,
                                      "supportedProtocols": [{"name": "range", "metadata": "AAE="}]}}
    value = encode_offsets_value(5, 0, data)
    assert decode_offsets_value(decoded_key, value) == {"version": "0", "data": data}
    current = {"memberEpoch": 3, "previousMemberEpoch": 2, "state": 0,
               "assignedPartitions": [{"topicId": "bqJ9yc-eQ0KCjqLqIBppfw", "partitions": [0, 2]}],
               "partitionsPendingRevocation": []}
    assert decode_offsets_value(decode_offsets_key(encode_offsets_key(8, {"groupId": "g", "memberId": "m"})),
                                encode_offsets_value(8, 0, current))["data"] == current


# A KIP-848 consumer (kafka-console-consumer --consumer-property group.protocol=consumer, Kafka 4.0.0) joins
# group kip848-app on topic orders (3 partitions), commits and leaves: the records its coordinator wrote into
# __consumer_offsets (key, value; None = tombstone) and what kafka-dump-log --offsets-decoder printed for
# them. The tagged ClassicMemberMetadata is written and printed as null: Kafka's generated code compares a
# tagged struct with a default-constructed one, not with its declared default (flexible.tag_default).
_GROUP, _MEMBER = "000a6b69703834382d617070", "00166a437a674543366e52654f33324d3871693078473951"
_TOPIC_ID = "JhDLizgWSga6dDKcLH5WFQ"
KIP848_JOIN_AND_LEAVE = [
    ("0005" + _GROUP + _MEMBER,
     "0000000011636f6e736f6c652d636f6e73756d65720b2f3132372e302e302e3102076f726465727301000493e00001000100",
     {"type": "5", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}},
     {"version": "0", "data": {"instanceId": None, "rackId": None, "clientId": "console-consumer",
                               "clientHost": "/127.0.0.1", "subscribedTopicNames": ["orders"],
                               "subscribedTopicRegex": "", "rebalanceTimeoutMs": 300000,
                               "serverAssignor": None, "classicMemberMetadata": None}}),
    ("0004" + _GROUP, "0000022610cb8b38164a06ba74329c2c7e5615076f726465727300000003010000",
     {"type": "4", "data": {"groupId": "kip848-app"}},
     {"version": "0", "data": {"topics": [{"topicId": _TOPIC_ID, "topicName": "orders", "numPartitions": 3,
                                          "partitionMetadata": []}]}}),
    ("0003" + _GROUP, "00000000000100", {"type": "3", "data": {"groupId": "kip848-app"}},
     {"version": "0", "data": {"epoch": 1}}),
    ("0007" + _GROUP + _MEMBER, "0000022610cb8b38164a06ba74329c2c7e5615040000000000000001000000020000",
     {"type": "7", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}},
     {"version": "0", "data": {"topicPartitions": [{"topicId": _TOPIC_ID, "partitions": [0, 1, 2]}]}}),
    ("0006" + _GROUP, "00000000000100", {"type": "6", "data": {"groupId": "kip848-app"}},
     {"version": "0", "data": {"assignmentEpoch": 1}}),
    ("0008" + _GROUP + _MEMBER,
     "0000000000010000000000022610cb8b38164a06ba74329c2c7e561504000000000000000100000002000100",
     {"type": "8", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}},
     {"version": "0", "data": {"memberEpoch": 1, "previousMemberEpoch": 0, "state": 0,
                               "assignedPartitions": [{"topicId": _TOPIC_ID, "partitions": [0, 1, 2]}],
                               "partitionsPendingRevocation": []}}),
    ("0008" + _GROUP + _MEMBER, None,
     {"type": "8", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}}, None),
    ("0007" + _GROUP + _MEMBER, None,
     {"type": "7", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}}, None),
    ("0005" + _GROUP + _MEMBER, None,
     {"type": "5", "data": {"groupId": "kip848-app", "memberId": "jCzgEC6nReO32M8qi0xG9Q"}}, None),
    ("0004" + _GROUP, "00000100", {"type": "4", "data": {"groupId": "kip848-app"}},
     {"version": "0", "data": {"topics": []}}),
    ("0003" + _GROUP, "00000000000200", {"type": "3", "data": {"groupId": "kip848-app"}},
     {"version": "0", "data": {"epoch": 2}}),
]


@pytest.mark.parametrize(("key", "value", "decoded_key", "decoded_value"), KIP848_JOIN_AND_LEAVE)
def test_kafka_40_consumer_group_records(key, value, decoded_key, decoded_value):
    raw_key, raw_value = bytes.fromhex(key), None if value is None else bytes.fromhex(value)
    assert decode_offsets_key(raw_key) == decoded_key
    assert decode_offsets_value(decoded_key, raw_value) == decoded_value
    record_type = int(decoded_key["type"])
    assert encode_offsets_key(record_type, decoded_key["data"]) == raw_key
    if decoded_value is not None:
        assert encode_offsets_value(record_type, 0, decoded_value["data"]) == raw_value


@pytest.mark.parametrize(
    ("record_type", "key", "key_bytes", "value", "value_bytes"),
    [
        (16, {"groupId": "g", "regularExpression": "ord.*"}, s16("g") + s16("ord.*"),
         {"topics": ["orders"], "version": 7, "timestamp": 9},
         b"\x02" + b"\x07orders" + i64(7) + i64(9) + b"\x00"),
        (11, {"groupId": "g"}, s16("g"), {"epoch": 3}, i32(3) + b"\x00"),
        (10, {"groupId": "g", "memberId": "m"}, s16("g") + s16("m"),
         {"rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"]},
         b"\x00" + b"\x02c" + b"\x03/h" + b"\x02" + b"\x02t" + b"\x00"),
        (14, {"groupId": "g", "memberId": "m"}, s16("g") + s16("m"),
         {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 0,
          "assignedPartitions": [{"topicId": "JhDLizgWSga6dDKcLH5WFQ", "partitions": [4]}]},
         i32(2) + i32(1) + b"\x00" + b"\x02" + bytes.fromhex("2610cb8b38164a06ba74329c2c7e5615")
         + b"\x02" + i32(4) + b"\x00" + b"\x00"),
        (15, {"groupId": "g"}, s16("g"),
         {"initializedTopics": [{"topicId": "JhDLizgWSga6dDKcLH5WFQ", "topicName": "t", "partitions": [0]}],
          "deletingTopics": []},
         b"\x02" + bytes.fromhex("2610cb8b38164a06ba74329c2c7e5615") + b"\x02t" + b"\x02" + i32(0) + b"\x00"
         + b"\x01" + b"\x00"),
    ],
)
def test_share_group_and_regular_expression_records(record_type, key, key_bytes, value, value_bytes):
    """Kafka 4.0 also writes KIP-932 share group records (9-15) and a consumer group's resolved regular
    expression (16): decoded by type, never taken for offset commits."""
    raw_key = i16(record_type) + key_bytes
    assert encode_offsets_key(record_type, key) == raw_key
    decoded_key = decode_offsets_key(raw_key)
    assert decoded_key == {"type": str(record_type), "data": key}
    assert encode_offsets_value(record_type, 0, value) == i16(0) + value_bytes
    assert decode_offsets_value(decoded_key, i16(0) + value_bytes) == {"version": "0", "data": value}


def test_tombstones_unknown_types_and_versions():
    key = decode_offsets_key(OFFSET_KEY)
    assert decode_offsets_value(key, None) is None  # tombstone: the committed offset is deleted
    unknown = decode_offsets_key(i16(17) + s16("later"))  # newer than Kafka 4.0's types 0-16
    assert unknown == {"type": "17", "data": None, "raw": s16("later").hex()}
    assert decode_offsets_value(unknown, i16(0) + b"\x01") == {"version": "0", "data": None, "raw": "01"}
    assert decode_offsets_key(i16(-1))["type"] == "-1"
    assert decode_offsets_value(key, i16(5) + b"\xaa") == {"version": "5", "data": None, "raw": "aa"}
    share = decode_offsets_key(i16(11) + s16("share-group"))
    assert decode_offsets_value(share, i16(1) + b"\x01") == {"version": "1", "data": None, "raw": "01"}
    with pytest.raises(ValueError):
        encode_offsets_key(17, {})


def test_trailing_bytes_are_reported():
    key = decode_offsets_key(OFFSET_KEY + b"zz")
    assert key["data"]["trailingBytes"] == 2
    value = decode_offsets_value(key, i16(0) + i64(5) + s16("") + i64(1) + b"z")
    assert value["data"]["trailingBytes"] == 1


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, None, "missing key"),
        (b"", None, "Could not read version from key's buffer."),
        (b"\x00", None, "Could not read version from key's buffer."),
        (i16(1) + s16("g"), None, "Could not read record with version 1 from key's buffer"),
        (OFFSET_KEY, b"\x00", "Could not read version from value's buffer."),
        (OFFSET_KEY, i16(3) + i64(1), "Could not read record with version 3 from value's buffer"),
        (i16(2) + s16(None), None, "non-nullable field GroupMetadataKey.group was serialized as null"),
    ],
)
def test_errors(key, value, message):
    with pytest.raises(ParseError) as info:
        decoded = decode_offsets_key(key)
        decode_offsets_value(decoded, value)
    assert message in info.value.message


_SAMPLES = [
    (OFFSET_KEY, i16(3) + i64(87) + i32(0) + s16("") + i64(1795238682515)),
    (GROUP_KEY, group_value_v3("consumer", SUBSCRIPTION_V0, ASSIGNMENT_V0)),
    (GROUP_KEY, group_value_v3("consumer", SUBSCRIPTION_V3, ASSIGNMENT_V0)),
]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=80)))
def test_random_bytes_raise_only_parse_error(key, value):
    with contextlib.suppress(ParseError):
        decode_offsets_value(decode_offsets_key(key), value)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_SAMPLES), st.data())
def test_bit_flips_and_truncations_raise_only_parse_error(case, data):
    key, value = case
    for raw in (key, value):
        pos = data.draw(st.integers(0, len(raw) - 1))
        mutated = bytearray(raw)
        mutated[pos] ^= 1 << data.draw(st.integers(0, 7))
        for candidate in (bytes(mutated), raw[:pos]):
            k, v = (candidate, value) if raw is key else (key, candidate)
            with contextlib.suppress(ParseError):
                decode_offsets_value(decode_offsets_key(k), v)


# ----------------------------------------------------------------------------------- the corpus

_LINE = re.compile(r"^\| offset: (\d+) .*? key: (\{.*\}) payload: (.*)$")


def _dumped(corpus: Path) -> dict[tuple[str, int], tuple[dict, dict | None]]:
    """(path relative to corpus, offset) -> (key, payload or None for a tombstone), as kafka-dump-log
    printed them."""
    out: dict[tuple[str, int], tuple[dict, dict | None]] = {}
    for path, m in dump_matches(record_dumps(corpus, "__consumer_offsets"), _LINE):
        payload = None if m.group(3) == "<DELETE>" else json.loads(m.group(3))
        out[(path, int(m.group(1)))] = (json.loads(m.group(2)), payload)
    return out


@pytest.mark.corpus
def test_corpus_offsets_records_match_kafka_dump_log(corpus: Path):
    expected = _dumped(corpus)
    assert len(expected) > 200
    seen: set[tuple[str, int]] = set()
    logs = sorted(corpus.glob("**/__consumer_offsets-*/*.log"))
    for rel, is_control, offset, key, value in kafka_records(corpus, logs):
        assert not is_control and key is not None
        decoded_key = decode_offsets_key(key)
        decoded_value = decode_offsets_value(decoded_key, value)
        # The dumps print exactly this JSON: bytes (userData) as base64, tombstones as <DELETE>.
        assert (decoded_key, decoded_value) == expected[(rel, offset)], f"{rel}@{offset}"
        seen.add((rel, offset))
    assert seen == set(expected)


LIBS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-4.0.0" / "libs"
GROUP_COORDINATOR_JAR = LIBS / "kafka-group-coordinator-4.0.0.jar"
CLIENTS_JAR = LIBS / "kafka-clients-4.0.0.jar"
VERSIONS = range(0, 40)


def _definitions(jar: Path, names: set[str] | None = None) -> dict[str, dict]:
    """name -> JSON definition of the ``common/message/*.json`` files of ``jar`` (line comments dropped)."""
    if not jar.is_file():
        pytest.skip(f"{jar} is absent")
    out = {}
    with zipfile.ZipFile(jar) as z:
        for entry in z.namelist():
            if not (entry.startswith("common/message/") and entry.endswith(".json")):
                continue
            name = entry.rsplit("/", 1)[1][: -len(".json")]
            if names is not None and name not in names:
                continue
            text = z.read(entry).decode("utf-8")
            lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
            out[name] = json.loads("\n".join(lines))
    return out


def _versions(text: str | None) -> set[int]:
    v = Versions.parse(text)
    return {n for n in VERSIONS if n in v}


def _json_default(field: dict[str, Any]) -> Any:
    value = field["default"]
    if value is None or value == "null":
        return None
    if field["type"] in ("int8", "int16", "int32", "int64"):
        return int(value)
    if field["type"] == "bool":
        return value in (True, "true")
    return value


def _compare_fields(ours: tuple[Field, ...], theirs: list[dict], structs: dict[str, dict], version: int,
                    where: str) -> None:
    present = [f for f in theirs if version in _versions(f["versions"])]
    assert [f.name for f in ours if f.present_in(version)] == [f["name"] for f in present], \
        f"{where} v{version}: fields"
    for mine, field in zip([f for f in ours if f.present_in(version)], present, strict=True):
        at = f"{where}.{field['name']} v{version}"
        assert mine.type == field["type"], at
        assert mine.nullable_in(version) == (version in _versions(field.get("nullableVersions"))), at
        tagged = version in _versions(field.get("taggedVersions"))
        assert mine.tagged_in(version) == tagged, at
        if tagged:
            assert mine.tag == field["tag"], at
        assert mine.ignorable == bool(field.get("ignorable", False)), at
        if "default" in field:
            assert default_value(mine, version) == _json_default(field), at
        base = field["type"].removeprefix("[]")
        sub = field.get("fields") or structs.get(base, {}).get("fields")
        assert bool(mine.fields) == bool(sub), at
        if sub:
            _compare_fields(tuple(mine.fields), sub, structs, version, at)


def _compare(ours: Message, theirs: dict) -> None:
    assert ours.name == theirs["name"]
    assert _versions(ours.valid) == _versions(theirs["validVersions"]), ours.name
    assert _versions(ours.flexible) == _versions(theirs["flexibleVersions"]), ours.name
    structs = {s["name"]: s for s in theirs.get("commonStructs", [])}
    for version in sorted(_versions(theirs["validVersions"])):
        _compare_fields(tuple(ours.fields), theirs["fields"], structs, version, ours.name)


def test_every_kafka_40_record_type_has_key_and_value_tables():
    definitions = _definitions(GROUP_COORDINATOR_JAR)
    keys = {name: d for name, d in definitions.items() if name.endswith("Key")}
    assert len(keys) == 16  # OffsetCommit (types 0-1), GroupMetadata, 6 consumer, 7 share, 1 regex
    types: dict[int, str] = {}
    for name, definition in keys.items():
        for record_type in _versions(definition["validVersions"]):
            types[record_type] = name
    assert sorted(types) == list(range(17))  # GroupCoordinatorRecordSerde of 4.0 reads types 0-16
    assert sorted(KEY_SCHEMAS) == sorted(VALUE_SCHEMAS) == sorted(types)
    for record_type, name in types.items():
        _compare(KEY_SCHEMAS[record_type], keys[name])
        _compare(VALUE_SCHEMAS[record_type], definitions[name.removesuffix("Key") + "Value"])


def test_consumer_protocol_tables_match_kafka_clients():
    definitions = _definitions(CLIENTS_JAR, {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment"})
    _compare(CONSUMER_PROTOCOL_SUBSCRIPTION, definitions["ConsumerProtocolSubscription"])
    _compare(CONSUMER_PROTOCOL_ASSIGNMENT, definitions["ConsumerProtocolAssignment"])
