"""KRaft metadata records (spec §14.2/§14.3): frame, schemas, fuzzing, the real corpus vs kafka-dump-log."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import ParseError
from parsers.metadata import (
    METADATA_SCHEMAS,
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
    record_type_name,
    schema_for,
)
from tests.support.kafka_dumps import dump_matches, kafka_records, record_dumps

TOPIC_ID = bytes.fromhex("6ea27dc9cf9e4342828ea2ea201a697f")
DIR_ID = bytes(range(16))

# §14.3: TopicRecord "01 02 00 | 03 74 31 | <id> | 00".
SPEC_TOPIC = bytes.fromhex("010200" "037431") + TOPIC_ID + b"\x00"
# §14.3: PartitionRecord v2, replicas [1], isr [1], leader 1, epochs 0, one directory, no tags.
SPEC_PARTITION = (bytes.fromhex("010302" "00000000") + TOPIC_ID
                  + bytes.fromhex("0200000001" "0200000001" "01" "01" "00000001" "00000000" "00000000" "02")
                  + DIR_ID + b"\x00")
# §14.3: PartitionChangeRecord, one tag: tag 1 (Leader), size 4, value -1.
SPEC_PARTITION_CHANGE = bytes.fromhex("010502" "00000000") + TOPIC_ID + bytes.fromhex("01" "0104ffffffff")

KAFKA_TYPE_NAMES = {
    0: "REGISTER_BROKER_RECORD", 1: "UNREGISTER_BROKER_RECORD", 2: "TOPIC_RECORD", 3: "PARTITION_RECORD",
    4: "CONFIG_RECORD", 5: "PARTITION_CHANGE_RECORD", 7: "FENCE_BROKER_RECORD", 8: "UNFENCE_BROKER_RECORD",
    9: "REMOVE_TOPIC_RECORD", 10: "DELEGATION_TOKEN_RECORD", 11: "USER_SCRAM_CREDENTIAL_RECORD",
    12: "FEATURE_LEVEL_RECORD", 14: "CLIENT_QUOTA_RECORD", 15: "PRODUCER_IDS_RECORD",
    17: "BROKER_REGISTRATION_CHANGE_RECORD", 18: "ACCESS_CONTROL_ENTRY_RECORD",
    19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 20: "NO_OP_RECORD", 21: "ZK_MIGRATION_STATE_RECORD",
    22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 23: "BEGIN_TRANSACTION_RECORD", 24: "END_TRANSACTION_RECORD",
    25: "ABORT_TRANSACTION_RECORD", 26: "REMOVE_DELEGATION_TOKEN_RECORD", 27: "REGISTER_CONTROLLER_RECORD",
}


# -------------------------------------------------------------------------------------- examples


def test_type_names_are_kafkas():
    assert {k: record_type_name(s.name) for k, s in METADATA_SCHEMAS.items()} == KAFKA_TYPE_NAMES
    assert record_type_name("KRaftVersionRecord") == "KRAFT_VERSION_RECORD"


def test_spec_topic_record():
    rec = decode_metadata_record(SPEC_TOPIC)
    assert rec == MetadataRecord(1, 2, 0, "TOPIC_RECORD", {"name": "t1", "topicId": "bqJ9yc-eQ0KCjqLqIBppfw"})
    assert rec.to_json() == {"type": "TOPIC_RECORD", "version": 0,
                             "data": {"name": "t1", "topicId": "bqJ9yc-eQ0KCjqLqIBppfw"}}
    assert encode_metadata_record("TOPIC_RECORD", 0, rec.data) == SPEC_TOPIC
    assert encode_metadata_record(2, 0, rec.data) == SPEC_TOPIC
    assert encode_metadata_record("TopicRecord", 0, rec.data) == SPEC_TOPIC


def test_spec_partition_record_v2():
    rec = decode_metadata_record(SPEC_PARTITION)
    assert rec.type_name == "PARTITION_RECORD" and rec.version == 2
    assert rec.data == {
        "partitionId": 0, "topicId": "bqJ9yc-eQ0KCjqLqIBppfw", "replicas": [1], "isr": [1],
        "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
        "directories": ["AAECAwQFBgcICQoLDA0ODw"],
    }
    assert encode_metadata_record("PARTITION_RECORD", 2, rec.data) == SPEC_PARTITION


def test_spec_partition_change_record():
    rec = decode_metadata_record(SPEC_PARTITION_CHANGE)
    assert rec.data == {"partitionId": 0, "topicId": "bqJ9yc-eQ0KCjqLqIBppfw", "leader": -1}
    assert encode_metadata_record(5, 2, rec.data) == SPEC_PARTITION_CHANGE


def test_partition_record_versions():
    data = {"partitionId": 3, "topicId": "bqJ9yc-eQ0KCjqLqIBppfw", "replicas": [1, 2], "isr": [2],
            "removingReplicas": [], "addingReplicas": [1], "leader": 2, "leaderRecoveryState": 1,
            "leaderEpoch": 4, "partitionEpoch": 5}
    v0 = encode_metadata_record("PARTITION_RECORD", 0, data)
    assert decode_metadata_record(v0).data == data
    v2 = {**data, "directories": ["AAECAwQFBgcICQoLDA0ODw"] * 2, "eligibleLeaderReplicas": [1],
          "lastKnownElr": []}
    assert decode_metadata_record(encode_metadata_record("PARTITION_RECORD", 2, v2)).data == v2
    with pytest.raises(ValueError):
        encode_metadata_record("PARTITION_RECORD", 0, v2)


def test_register_broker_versions():
    base = {"brokerId": 1, "incarnationId": "ssfnWtRbQRihsFlcPmGt0A", "brokerEpoch": 124,
            "endPoints": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 29191, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 25}],
            "rack": None, "fenced": True}
    for version, extra in [(0, {}), (1, {"inControlledShutdown": True}),
                           (2, {"isMigratingZkBroker": False, "inControlledShutdown": False}),
                           (3, {"isMigratingZkBroker": True, "inControlledShutdown": False,
                                "logDirs": ["OuPP97eGi-q-QmpqiaFWpQ"]})]:
        data = {**base, **extra}
        rec = decode_metadata_record(encode_metadata_record("REGISTER_BROKER_RECORD", version, data))
        assert rec.data == data and rec.version == version
    # v3 field order, as kafka-dump-log prints it.
    assert list(rec.data) == ["brokerId", "isMigratingZkBroker", "incarnationId", "brokerEpoch", "endPoints",
                              "features", "rack", "fenced", "inControlledShutdown", "logDirs"]


def test_unknown_types_and_versions_are_raw():
    rec = decode_metadata_record(bytes.fromhex("01 e807 00 abcd"))  # api key 1000
    assert (rec.api_key, rec.version, rec.type_name, rec.data, rec.raw_hex) == (1000, 0, "UNKNOWN_1000", None,
                                                                                "abcd")
    rec = decode_metadata_record(bytes.fromhex("01 02 07 0102"))  # TopicRecord v7
    assert (rec.type_name, rec.version, rec.data, rec.raw_hex) == ("TOPIC_RECORD", 7, None, "0102")
    assert rec.to_json() == {"type": "TOPIC_RECORD", "version": 7, "raw": "0102"}
    assert decode_metadata_record(bytes.fromhex("01 06 00")).raw_hex == ""  # api key 6 was never used


@pytest.mark.parametrize(
    ("value", "message", "offset"),
    [
        (None, "null value", 0),
        (b"", "Error while reading frame version", 0),
        (b"\x00\x02\x00", "frame version 0", 0),
        (b"\x02\x02\x00", "unknown frame version 2(only frame version 1 is supported)", 0),
        (b"\x01", "Error while reading type", 1),
        (b"\x01\x80\x80\x02\x00", "Value for type was too large.", 1),
        (b"\x01\x02\x80\x80\x02", "Value for version was too large.", 2),
        (SPEC_TOPIC + b"\x00", "Found 1 byte(s) of garbage after 2", len(SPEC_TOPIC)),
        (SPEC_TOPIC[:-3], "Failed to deserialize record with type 2", None),
        (bytes.fromhex("01 14 00"), "Failed to deserialize record with type 20", 3),  # NoOp without tags
    ],
)
def test_frame_errors(value, message, offset):
    with pytest.raises(ParseError) as info:
        decode_metadata_record(value)
    assert message in info.value.message
    if offset is not None:
        assert info.value.offset == offset


def test_schema_for_unknown():
    with pytest.raises(KeyError):
        schema_for("NOT_A_RECORD")
    with pytest.raises(KeyError):
        encode_metadata_record(6, 0, {})


# -------------------------------------------------------------------------------------- fuzzing

_SAMPLES = [SPEC_TOPIC, SPEC_PARTITION, SPEC_PARTITION_CHANGE, bytes.fromhex("011400" "00"),
            encode_metadata_record("BEGIN_TRANSACTION_RECORD", 0, {"name": "Bootstrap records"}),
            encode_metadata_record("CONFIG_RECORD", 0, {"resourceType": 2, "resourceName": "t",
                                                        "name": "cleanup.policy", "value": None})]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_raise_only_parse_error(value):
    try:
        rec = decode_metadata_record(value)
    except ParseError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(value)
    else:
        assert rec.frame_version == 1 and (rec.data is None) != (rec.raw_hex is None)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_SAMPLES), st.data())
def test_bit_flips_and_truncations_raise_only_parse_error(value, data):
    pos = data.draw(st.integers(0, len(value) - 1))
    mutated = bytearray(value)
    mutated[pos] ^= 1 << data.draw(st.integers(0, 7))
    for candidate in (bytes(mutated), value[:pos]):
        with contextlib.suppress(ParseError):
            decode_metadata_record(candidate)


# ----------------------------------------------------------------------------------- the corpus

_PAYLOAD = re.compile(r"^\| offset: (\d+) .*? payload: (\{.*\})$")


def _dump_payloads(corpus: Path) -> dict[tuple[str, int], dict]:
    """(path relative to corpus, offset) -> Kafka's JSON payload, from the cluster-metadata dumps."""
    matches = dump_matches(record_dumps(corpus, "__cluster_metadata"), _PAYLOAD)
    return {(path, int(m.group(1))): json.loads(m.group(2)) for path, m in matches}


def _metadata_files(corpus: Path) -> list[Path]:
    return sorted([*corpus.glob("**/__cluster_metadata-0/*.log"), *corpus.glob("**/*.checkpoint")])


@pytest.mark.corpus
def test_corpus_metadata_records_match_kafka_dump_log(corpus: Path):
    expected = _dump_payloads(corpus)
    assert len(expected) > 6000
    seen: set[tuple[str, int]] = set()
    types: set[str] = set()
    for rel, is_control, offset, key, value in kafka_records(corpus, _metadata_files(corpus)):
        if is_control:
            continue
        assert key is None and value is not None
        rec = decode_metadata_record(value)  # raises on any trailing byte
        assert rec.data is not None, f"{rel}@{offset}: {rec}"
        types.add(rec.type_name)
        # Re-encoding gives Kafka's bytes back exactly.
        assert encode_metadata_record(rec.api_key, rec.version, rec.data) == value, f"{rel}@{offset}"
        if rel.endswith("/bootstrap.checkpoint"):
            continue  # kafka-dump-log was not run on these
        want = expected.get((rel, offset))
        assert want is not None, f"no dump line for {rel}@{offset}"
        # Same JSON as Kafka's converters (uuids base64url, bytes base64, default tags omitted).
        assert rec.to_json() == want, f"{rel}@{offset}"
        seen.add((rel, offset))
    assert seen == set(expected), "dump payloads without a decoded record"
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REGISTER_BROKER_RECORD",
            "REGISTER_CONTROLLER_RECORD", "FEATURE_LEVEL_RECORD", "NO_OP_RECORD", "CONFIG_RECORD",
            "PRODUCER_IDS_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "BEGIN_TRANSACTION_RECORD",
            "END_TRANSACTION_RECORD"} <= types


@pytest.mark.corpus
def test_corpus_bootstrap_checkpoints(corpus: Path):
    files = sorted(corpus.glob("**/bootstrap.checkpoint"))
    assert files
    names: dict[str, set[str]] = {}
    for rel, is_control, _, _, value in kafka_records(corpus, files):
        if not is_control:
            names.setdefault(rel, set()).add(decode_metadata_record(value).type_name)
    assert set(names) == {f.relative_to(corpus).as_posix() for f in files}
    assert all(n == {"FEATURE_LEVEL_RECORD"} for n in names.values()), names
