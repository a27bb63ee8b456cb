"""Control records (spec §4): key, end transaction markers, KRaft control values, the corpus vs the dumps."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import construct as cs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.control import (
    CONTROL_SCHEMAS,
    ControlRecord,
    ControlRecordKey,
    ControlRecordType,
    EndTxnMarkerValue,
    decode_control_record,
    encode_control_record,
    encode_end_txn_marker,
    first_control_type,
)
from parsers.errors import ParseError
from parsers.primitives import VarInt
from parsers.record_batch import RecordSpec, RecordV2, build_batch
from tests.support.kafka_dumps import dump_matches, kafka_records, record_dumps

# §4.1: the COMMIT marker record at tx-0 offset 5.
COMMIT_KEY = bytes.fromhex("00000001")
COMMIT_VALUE = bytes.fromhex("000000000000")
# §4.2: LeaderChangeMessage from offset 0 of a KRaft log: leader 1, voters [1], granting [1].
LEADER_CHANGE_VALUE = bytes.fromhex("0000" "00000001" "02" "0000000100" "02" "0000000100" "00")
SNAPSHOT_HEADER_VALUE = bytes.fromhex("0000" "000001a1fc75f13f" "00")
SNAPSHOT_FOOTER_VALUE = bytes.fromhex("000000")


def _key(type_id: int, version: int = 0) -> bytes:
    return ControlRecordKey.build({"version": version, "type": type_id})


def test_spec_commit_marker():
    rec = decode_control_record(COMMIT_KEY, COMMIT_VALUE)
    assert rec == ControlRecord(1, "COMMIT", 0, {"version": 0, "coordinatorEpoch": 0})
    assert encode_end_txn_marker(True, 0) == (COMMIT_KEY, COMMIT_VALUE)
    key, value = encode_end_txn_marker(False, 7)
    assert key == bytes.fromhex("00000000") and EndTxnMarkerValue.parse(value).coordinator_epoch == 7
    abort = ControlRecord(0, "ABORT", 0, {"version": 0, "coordinatorEpoch": 7})
    assert decode_control_record(key, value) == abort
    assert encode_control_record("ABORT", {"coordinatorEpoch": 7}) == (key, value)


def test_marker_extra_bytes_and_future_versions_are_tolerated():
    rec = decode_control_record(COMMIT_KEY + b"\x99", bytes.fromhex("0001" "00000003" "ffff"))
    assert rec.data == {"version": 1, "coordinatorEpoch": 3} and rec.trailing_bytes == 2
    rec = decode_control_record(_key(1, version=5), COMMIT_VALUE)  # unknown key versions parse as v0
    assert rec.key_version == 5 and rec.type_name == "COMMIT"


def test_spec_kraft_values():
    rec = decode_control_record(_key(2), LEADER_CHANGE_VALUE)
    assert rec.type_name == "LEADER_CHANGE"
    assert rec.data == {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
                        "grantingVoters": [{"voterId": 1}]}
    assert encode_control_record("LEADER_CHANGE", rec.data) == (_key(2), LEADER_CHANGE_VALUE)

    rec = decode_control_record(_key(3), SNAPSHOT_HEADER_VALUE)
    assert rec.data == {"version": 0, "lastContainedLogTimestamp": 0x1A1FC75F13F}
    assert encode_control_record("SNAPSHOT_HEADER", rec.data) == (_key(3), SNAPSHOT_HEADER_VALUE)

    rec = decode_control_record(_key(4), SNAPSHOT_FOOTER_VALUE)
    assert rec == ControlRecord(4, "SNAPSHOT_FOOTER", 0, {"version": 0})
    footer = encode_control_record(ControlRecordType.SNAPSHOT_FOOTER, {"version": 0})
    assert footer == (_key(4), b"\x00\x00\x00")


def test_kraft_version_and_voters_round_trip():
    kv = {"version": 0, "kRaftVersion": 1}
    key, value = encode_control_record("KRAFT_VERSION", kv)
    assert value == bytes.fromhex("0000" "0001" "00")
    assert decode_control_record(key, value).data == kv
    voters = {"version": 0, "voters": [{
        "voterId": 100, "voterDirectoryId": "S7p7OlbMQNWmVqZq0HpvoQ",
        "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 29100}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
    }]}
    key, value = encode_control_record("KRAFT_VOTERS", voters)
    rec = decode_control_record(key, value)
    assert (rec.type_id, rec.type_name, rec.data, rec.trailing_bytes) == (6, "KRAFT_VOTERS", voters, 0)


def test_kraft_values_read_at_schema_version_0():
    # LeaderChangeMessage has a v1 schema, but values are always read at v0, as ControlRecordUtils does;
    # bytes after the value are ignored like Kafka does, and counted rather than hidden.
    assert CONTROL_SCHEMAS[ControlRecordType.LEADER_CHANGE].supports(1)
    rec = decode_control_record(_key(2), LEADER_CHANGE_VALUE + b"\x00\x00")
    assert rec.data["leaderId"] == 1 and rec.trailing_bytes == 2


@pytest.mark.parametrize("type_id", [7, 99, -1, -32768])
def test_unknown_types(type_id):
    rec = decode_control_record(_key(type_id), b"anything")
    assert rec == ControlRecord(type_id, "UNKNOWN", 0, None)
    assert ControlRecordType.from_id(type_id) is ControlRecordType.UNKNOWN
    with pytest.raises(ValueError, match="UNKNOWN"):
        encode_control_record("UNKNOWN", {})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, COMMIT_VALUE, "Must have at least 4 bytes, but found only 0"),
        (b"\x00\x00\x01", COMMIT_VALUE, "but found only 3"),
        (_key(1, version=-1), COMMIT_VALUE, "Invalid version found for control record: -1"),
        (COMMIT_KEY, b"\x00\x00\x00\x00\x00", "Must have at least 6 bytes, but found only 5"),
        (COMMIT_KEY, None, "null value"),
        (COMMIT_KEY, bytes.fromhex("ffff00000000"), "Invalid version found for end transaction marker: -1"),
        (_key(2), None, "null value"),
        (_key(2), LEADER_CHANGE_VALUE[:-2], "runs past"),
        (_key(3), SNAPSHOT_HEADER_VALUE[:5], "needs 8 byte(s)"),
    ],
)
def test_errors(key, value, message):
    with pytest.raises(ParseError) as info:
        decode_control_record(key, value)
    assert message in info.value.message


def test_encode_errors():
    with pytest.raises(ValueError):
        encode_control_record("NOPE", {})
    with pytest.raises(ValueError):
        encode_end_txn_marker(True, 1 << 40)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=8)), st.one_of(st.none(), st.binary(max_size=40)))
def test_random_bytes_raise_only_parse_error(key, value):
    with contextlib.suppress(ParseError):
        decode_control_record(key, value)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([(COMMIT_KEY, COMMIT_VALUE), (_key(2), LEADER_CHANGE_VALUE),
                        (_key(3), SNAPSHOT_HEADER_VALUE), (_key(4), SNAPSHOT_FOOTER_VALUE)]), st.data())
def test_bit_flips_and_truncations_raise_only_parse_error(case, data):
    key, value = case
    pos = data.draw(st.integers(0, len(value) - 1))
    mutated = bytearray(value)
    mutated[pos] ^= 1 << data.draw(st.integers(0, 7))
    for candidate in (bytes(mutated), value[:pos]):
        with contextlib.suppress(ParseError):
            decode_control_record(key, candidate)
    with contextlib.suppress(ParseError):
        decode_control_record(key[: data.draw(st.integers(0, 4))], value)


# ----------------------------------------------------------------------------------- the corpus

_CONTROL_LINE = re.compile(
    r"^\| offset: (\d+) .*?(?: endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)| (SnapshotHeader|SnapshotFooter|"
    r"KRaftVersion|KRaftVoters) (\{.*\})| controlType: (\w+)\((-?\d+)\))$"
)
_JSON_TYPES = {"SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER",
               "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS"}


def _dumped_control_records(corpus: Path) -> dict[tuple[str, int], tuple[str, object]]:
    """(path, offset) -> (type name, what kafka-dump-log printed for it)."""
    out: dict[tuple[str, int], tuple[str, object]] = {}
    for current, m in dump_matches(record_dumps(corpus), _CONTROL_LINE):
        offset = int(m.group(1))
        if m.group(2):
            out[(current, offset)] = (m.group(2), int(m.group(3)))
        elif m.group(4):
            out[(current, offset)] = (_JSON_TYPES[m.group(4)], json.loads(m.group(5)))
        else:
            out[(current, offset)] = (m.group(6), int(m.group(7)))
    return out


@pytest.mark.corpus
def test_corpus_control_records_match_kafka_dump_log(corpus: Path):
    expected = _dumped_control_records(corpus)
    files = sorted([*corpus.glob("**/__cluster_metadata-0/*.log"), *corpus.glob("**/*.checkpoint"),
                    *corpus.glob("**/txn-*/*.log")])
    seen: set[tuple[str, int]] = set()
    counts: dict[str, int] = {}
    for rel, is_control, offset, key, value in kafka_records(corpus, files):
        if not is_control:
            continue
        rec = decode_control_record(key, value)
        assert rec.key_version == 0 and rec.trailing_bytes == 0, f"{rel}@{offset}"
        counts[rec.type_name] = counts.get(rec.type_name, 0) + 1
        if rec.type_name == "LEADER_CHANGE":
            voters = {v["voterId"] for v in rec.data["voters"]}
            assert rec.data["leaderId"] in voters
            assert {v["voterId"] for v in rec.data["grantingVoters"]} <= voters
        if rel.endswith("/bootstrap.checkpoint"):
            continue
        want = expected.get((rel, offset))
        assert want is not None, f"no dump line for control record {rel}@{offset}"
        name, printed = want
        assert rec.type_name == name, f"{rel}@{offset}"
        if name in ("COMMIT", "ABORT"):
            assert rec.data["coordinatorEpoch"] == printed
        elif name == "LEADER_CHANGE":
            assert rec.type_id == printed
        else:
            assert rec.data == printed, f"{rel}@{offset}"
        seen.add((rel, offset))
    assert seen == set(expected), "dumped control records not found in the files"
    assert counts["COMMIT"] > 100 and counts["ABORT"] > 50
    assert counts["LEADER_CHANGE"] > 10 and counts["SNAPSHOT_HEADER"] == counts["SNAPSHOT_FOOTER"] > 20


# ------------------------------------------------------------------------------ first_control_type


_UP_TO_KEY = cs.Struct(*RecordV2.subcons[:4], "key_length" / VarInt)
"""``RecordV2`` up to the key's length prefix (the declaration, not the plan ``first_control_type`` walks)."""


def _declared_control_type(records: bytes) -> int:
    """``first_control_type`` through the ``RecordV2`` declaration: -1 where the bytes hold no key."""
    stream = io.BytesIO(records)
    try:
        head = _UP_TO_KEY.parse_stream(stream)
        pos, size = stream.tell(), ControlRecordKey.sizeof()
        if head.key_length < size or pos + size > len(records):
            return -1
        key = ControlRecordKey.parse(records[pos : pos + size])
    except cs.ConstructError:
        return -1
    return int(key.type) if key.version >= 0 else -1


def _control_sections() -> list[bytes]:
    sections = []
    for ctype in ControlRecordType:
        key = _key(int(ctype))
        raw = build_batch([RecordSpec(key, b"\x00\x00" * 3, 1_700_000_000_000)], control=True)
        sections.append(raw[61:])
    sections.append(build_batch([RecordSpec(_key(0, version=-1), None, 5)], control=True)[61:])
    sections.append(build_batch([RecordSpec(None, b"v", 5)], control=True)[61:])
    return sections


def test_first_control_type_reads_the_key_of_every_control_type():
    types = list(ControlRecordType)
    for ctype, section in zip(types, _control_sections()[: len(types)], strict=True):
        assert first_control_type(section) == int(ctype) == _declared_control_type(section)
    assert [first_control_type(s) for s in _control_sections()[-2:]] == [-1, -1]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_first_control_type_equals_the_declaration_on_mutated_and_cut_records(data):
    section = bytearray(data.draw(st.sampled_from(_control_sections())))
    for _ in range(data.draw(st.integers(0, 3))):
        section[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.integers(0, 255))
    cut = bytes(section[: data.draw(st.integers(0, len(section)))])
    assert first_control_type(cut) == _declared_control_type(cut)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_first_control_type_equals_the_declaration_on_random_bytes(records):
    assert first_control_type(records) == _declared_control_type(records)
