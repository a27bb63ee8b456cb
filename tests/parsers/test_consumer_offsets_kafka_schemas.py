"""The ``__consumer_offsets`` schema tables against Kafka 4.0's own message definitions.

Kafka's jars carry the JSON definitions their classes are generated from (``common/message/*.json``): the
group coordinator's keys and values in ``kafka-group-coordinator-4.0.0.jar``, the consumer protocol's
subscription and assignment in ``kafka-clients-4.0.0.jar``. Every record type Kafka 4.0's
``GroupCoordinatorRecordSerde`` reads (a key's valid version is its record type) must have a key and a value
table here, with the same names, valid and flexible versions, and per version the same fields in the same
order with the same types, nullability, tags, defaults and ignorability. Skipped without
``../shared/kafka-4.0.0``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from parsers.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    KEY_SCHEMAS,
    VALUE_SCHEMAS,
)
from parsers.flexible import Field, Message, Versions, default_value

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
