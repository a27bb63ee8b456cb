"""Reading ``lost-records.jsonl`` back (``auditor.reproduce.records``): every field decoded to the bytes the
export encoded, a row the published schema rejects is rejected with one line naming the file and line, and
the fingerprint header follows its documented recipe."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import struct

import pytest

from auditor.reproduce.records import (
    HEADER,
    REQUIRED,
    ReproduceError,
    lost_records_file,
    parse_line,
    read_records,
)
from tests.report.contract import schema, validator
from tests.reproduce.rows import jsonl_row, parquet_row, write_jsonl


def test_the_fields_are_the_schemas():
    published = schema("lost-records")
    assert tuple(published["required"]) == REQUIRED
    assert set(REQUIRED) == set(published["properties"])


def _parse(row: dict) -> object:
    return parse_line(json.dumps(row).encode(), "lost.jsonl", 7)


def test_a_row_decodes_to_the_exported_bytes():
    headers = [
        {"key": "trace", "value": b"\xff\xfe binary"},
        {"key": "trace", "value": b"again"},
        {"key": "empty", "value": b""},
        {"key": "none", "value": None},
    ]
    row = jsonl_row(key="clé".encode(), value=b"\x00\x01\xff", headers=headers, timestampType="LogAppendTime")
    assert row["valueEncoding"] == "base64" and row["keyEncoding"] == "utf8"
    record = _parse(row)
    assert record.line == 7 and (record.topic, record.partition, record.offset) == ("orders", 0, 100)
    assert record.key == "clé".encode() and record.value == b"\x00\x01\xff"
    assert record.headers == tuple((h["key"], h["value"]) for h in headers)
    assert record.timestamp == 1_700_000_000_000 and record.timestamp_type == "LogAppendTime"
    assert record.size == len("clé".encode()) + 3 + sum(
        len(h["key"]) + len(h["value"] or b"") for h in headers
    )


def test_every_field_comes_from_the_row_field_of_its_camel_case_name():
    row = jsonl_row(
        cluster="east", topic="pay", partition=4, offset=55, leaderEpoch=9, batchBaseOffset=50, error="no CRC"
    )
    record = _parse(row)
    assert (record.cluster, record.topic, record.partition, record.offset) == ("east", "pay", 4, 55)
    assert (record.leader_epoch, record.batch_base_offset, record.error) == (9, 50, "no CRC")
    assert (record.timestamp, record.timestamp_type) == (1_700_000_000_000, "CreateTime")


def test_a_tombstone_and_a_null_key_are_none():
    record = _parse(jsonl_row(key=None, value=None))
    assert record.key is None and record.value is None and record.size == 0


def _mutations() -> list[tuple[str, object]]:
    """(name, change of a valid JSONL row): changes the schema accepts and changes it rejects."""

    def setting(**fields):
        return lambda row: row.update(fields)

    def dropping(name):
        return lambda row: row.pop(name)

    def header(**fields):
        return lambda row: row["headers"][0].update(fields)

    return [
        ("valid", setting()),
        ("tombstone", setting(value=None, valueEncoding=None)),
        ("null key", setting(key=None, keyEncoding=None)),
        ("unreadable batch", setting(timestamp=None, key=None, keyEncoding=None, value=None,
                                     valueEncoding=None, headers=[], error="segment gone")),
        ("base64 key", setting(key="AAE=", keyEncoding="base64")),
        ("missing field", dropping("holders")),
        ("missing encoding", dropping("keyEncoding")),
        ("unknown field", setting(extra=1)),
        ("negative offset", setting(offset=-1)),
        ("string partition", setting(partition="0")),
        ("boolean offset", setting(offset=True)),
        ("float offset", setting(offset=1.5)),
        ("bad timestamp type", setting(timestampType="Now")),
        ("bad encoding", setting(keyEncoding="hex")),
        ("null key with an encoding", setting(key=None)),
        ("key without an encoding", setting(keyEncoding=None)),
        ("bad base64", setting(value="not base64!", valueEncoding="base64")),
        ("unpadded base64", setting(value="AAE", valueEncoding="base64")),
        ("headers not a list", setting(headers={})),
        ("header without encoding", lambda row: row["headers"][0].pop("valueEncoding")),
        ("header null value with encoding", header(value=None)),
        ("header key not a string", header(key=1)),
        ("header extra field", header(extra=1)),
        ("empty holders", setting(holders=[])),
        ("non-boolean transactional", setting(isTransactional=0)),
        ("error not a string", setting(error=1)),
        ("not an object", lambda row: row.clear()),
    ]  # fmt: skip


@pytest.mark.parametrize("name,change", _mutations(), ids=[n for n, _ in _mutations()])
def test_the_parser_accepts_what_the_schema_accepts(name, change):
    row = jsonl_row(headers=[{"key": "h", "value": b"x"}])
    changed = copy.deepcopy(row)
    change(changed)
    valid = validator("lost-records").is_valid(changed)
    if valid:
        _parse(changed)
    else:
        with pytest.raises(ReproduceError, match=r"^lost\.jsonl line 7: .*lost-records\.schema\.json\)$"):
            _parse(changed)


def test_not_json_and_not_utf8_name_the_line(tmp_path):
    path = write_jsonl(tmp_path / "lost-records.jsonl", [parquet_row(offset=1), parquet_row(offset=2)])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"cluster": \n' + lines[1])
    with pytest.raises(ReproduceError) as err:
        list(read_records(str(path)))
    assert str(err.value).startswith(f"{path} line 2: not valid JSON (")
    path.write_bytes(lines[0] + lines[1] + b'{"a": "\xff"}\n')
    with pytest.raises(ReproduceError, match=rf"^{re.escape(str(path))} line 3: not UTF-8 \(byte 7"):
        list(read_records(str(path)))


def test_the_file_or_its_directory(tmp_path):
    with pytest.raises(ReproduceError, match="no such file"):
        lost_records_file(tmp_path / "absent.jsonl")
    with pytest.raises(ReproduceError, match="no lost-records.jsonl in this directory"):
        lost_records_file(tmp_path)
    path = write_jsonl(tmp_path / "lost-records.jsonl", [parquet_row()])
    assert lost_records_file(tmp_path) == str(path) == lost_records_file(path)


def _recipe(row: dict) -> str:
    """The fingerprint as docs/reproduce.md describes it, computed here independently of the product."""

    def field(data: bytes | None) -> bytes:
        return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data

    digest = hashlib.sha256(b"kafka-auditor reproduce v1\0")
    digest.update(struct.pack(">iqq", row["partition"], row["offset"], row["timestamp"]))
    digest.update(field(row["topic"].encode()) + field(row["key"]) + field(row["value"]))
    digest.update(struct.pack(">i", len(row["headers"])))
    for h in row["headers"]:
        digest.update(field(h["key"].encode()) + field(h["value"]))
    return f"{row['topic']}/{row['partition']}/{row['offset']}/{digest.hexdigest()[:32]}"


def test_the_fingerprint_follows_its_recipe():
    row = parquet_row(
        key=b"k1", value=b"\xff", headers=[{"key": "h", "value": None}, {"key": "h", "value": b""}]
    )
    fingerprint = _parse(jsonl_row(**row)).fingerprint()
    assert fingerprint == _recipe(row)
    assert re.fullmatch(r"orders/0/100/[0-9a-f]{32}", fingerprint)
    assert HEADER == "kafka-auditor-reproduced"


@pytest.mark.parametrize(
    "change",
    [
        {"key": b"k2"},
        {"key": None},
        {"value": b"w"},
        {"value": None},
        {"timestamp": 1_700_000_000_001},
        {"offset": 101},
        {"partition": 1},
        {"topic": "orders2"},
        {"headers": [{"key": "h", "value": b"x"}]},
        {"headers": [{"key": "h", "value": None}]},
    ],
)
def test_another_record_has_another_fingerprint(change):
    base = parquet_row(headers=[{"key": "h", "value": b""}])
    assert _parse(jsonl_row(**base)).fingerprint() != _parse(jsonl_row(**{**base, **change})).fingerprint()


def test_where_it_was_read_from_does_not_change_the_fingerprint():
    base = parquet_row()
    other = {**base, "cluster": "label", "broker": 3, "holders": [3, 4], "leaderEpoch": 9, "producerId": 5}
    assert _parse(jsonl_row(**base)).fingerprint() == _parse(jsonl_row(**other)).fingerprint()
