"""Control records: the records of control batches (attribute bit 5), spec §4.

Every control record has a 4-byte key ``int16 version, int16 type``; the value depends on the type:
an end transaction marker (ABORT/COMMIT, §4.1) or a KRaft control message (§4.2, flexible encoding,
always read at schema version 0 as Kafka's ``ControlRecordUtils`` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import construct as cs

from parsers.errors import ParseError
from parsers.flexible import Field, Message, decode_message, encode_message
from parsers.primitives import read_varint
from parsers.record_v2 import RECORD_PLAN, read_step

__all__ = [
    "ControlRecordKey",
    "ControlRecordType",
    "ControlRecord",
    "EndTxnMarkerValue",
    "CONTROL_SCHEMAS",
    "decode_control_record",
    "first_control_type",
    "encode_control_record",
    "encode_end_txn_marker",
]

ControlRecordKey = cs.Struct("version" / cs.Int16sb, "type" / cs.Int16sb)
"""Control record key, 4 bytes (longer keys are accepted; the rest is ignored)."""
EndTxnMarkerValue = cs.Struct("version" / cs.Int16sb, "coordinator_epoch" / cs.Int32sb)
"""End transaction marker value, 6 bytes (extra trailing bytes tolerated for forward compatibility)."""

END_TXN_MARKER_VALUE_SIZE = EndTxnMarkerValue.sizeof()  # 6
CONTROL_VALUE_SCHEMA_VERSION = 0
"""Schema version at which KRaft control values are written and read (``ControlRecordUtils``)."""


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1
    """Any other type id: ignored by readers, cannot be appended."""

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        return cls(type_id) if 0 <= type_id <= 6 else cls.UNKNOWN


_VOTER = [
    Field("VoterId", "int32"),
    Field("VoterDirectoryId", "uuid", versions="1+"),
]

CONTROL_SCHEMAS: dict[ControlRecordType, Message] = {
    ControlRecordType.LEADER_CHANGE: Message(
        "LeaderChangeMessage",
        "0-1",
        "0+",
        fields=[
            Field("Version", "int16"),
            Field("LeaderId", "int32"),
            Field("Voters", "[]Voter", fields=_VOTER),
            Field("GrantingVoters", "[]Voter", fields=_VOTER),
        ],
    ),
    ControlRecordType.SNAPSHOT_HEADER: Message(
        "SnapshotHeaderRecord",
        "0",
        "0+",
        fields=[
            Field("Version", "int16"),
            Field("LastContainedLogTimestamp", "int64"),
        ],
    ),
    ControlRecordType.SNAPSHOT_FOOTER: Message(
        "SnapshotFooterRecord",
        "0",
        "0+",
        fields=[
            Field("Version", "int16"),
        ],
    ),
    ControlRecordType.KRAFT_VERSION: Message(
        "KRaftVersionRecord",
        "0",
        "0+",
        fields=[
            Field("Version", "int16"),
            Field("KRaftVersion", "int16"),
        ],
    ),
    ControlRecordType.KRAFT_VOTERS: Message(
        "VotersRecord",
        "0",
        "0+",
        fields=[
            Field("Version", "int16"),
            Field(
                "Voters",
                "[]Voter",
                fields=[
                    Field("VoterId", "int32"),
                    Field("VoterDirectoryId", "uuid"),
                    Field(
                        "Endpoints",
                        "[]Endpoint",
                        fields=[
                            Field("Name", "string"),
                            Field("Host", "string"),
                            Field("Port", "uint16"),
                        ],
                    ),
                    Field(
                        "KRaftVersionFeature",
                        "KRaftVersionFeature",
                        fields=[
                            Field("MinSupportedVersion", "int16"),
                            Field("MaxSupportedVersion", "int16"),
                        ],
                    ),
                ],
            ),
        ],
    ),
}
"""KRaft control value schemas (§4.2), keyed by control type."""


@dataclass(frozen=True)
class ControlRecord:
    """A decoded control record.

    ``data``: for ABORT/COMMIT ``{"version": v, "coordinatorEpoch": e}``; for KRaft types the value as
    Kafka's JSON converter prints it (``SnapshotHeader {"version":0,"lastContainedLogTimestamp":...}``);
    ``None`` for UNKNOWN types. ``trailing_bytes`` counts value bytes after the decoded value, which Kafka
    ignores.
    """

    type_id: int
    type_name: str
    key_version: int
    data: dict[str, Any] | None
    trailing_bytes: int = 0


def _versioned(schema: cs.Struct, data: bytes, what: str, version_of: str) -> cs.Container:
    """A fixed-size struct led by an int16 version, with Kafka's two checks
    (``ControlRecordType.parseTypeId``, ``EndTransactionMarker.deserializeValue``): at least
    ``schema.sizeof()`` bytes (more are ignored), and a version that is not negative."""
    size = schema.sizeof()
    if len(data) < size:
        raise ParseError(
            f"Invalid value size found for {what}. Must have at least {size} bytes, but found "
            f"only {len(data)}",
            offset=0,
        )
    parsed = schema.parse(data[:size])
    if parsed.version < 0:
        raise ParseError(
            f"Invalid version found for {version_of}: {parsed.version}. May indicate data corruption",
            offset=0,
        )
    return parsed


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode the key and value of one record of a control batch."""
    parsed_key = _versioned(
        ControlRecordKey, b"" if key is None else bytes(key), "end control record key", "control record"
    )
    ctype = ControlRecordType.from_id(parsed_key.type)
    name = ctype.name
    if ctype is ControlRecordType.UNKNOWN:
        return ControlRecord(parsed_key.type, name, parsed_key.version, None)
    if value is None:
        raise ParseError(f"{name} control record has a null value", offset=0)
    value = bytes(value)
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = _versioned(EndTxnMarkerValue, value, "end transaction marker", "end transaction marker")
        data = {"version": marker.version, "coordinatorEpoch": marker.coordinator_epoch}
        return ControlRecord(
            parsed_key.type, name, parsed_key.version, data, len(value) - END_TXN_MARKER_VALUE_SIZE
        )
    data, end = decode_message(CONTROL_SCHEMAS[ctype], CONTROL_VALUE_SCHEMA_VERSION, value)
    return ControlRecord(parsed_key.type, name, parsed_key.version, data, len(value) - end)


def first_control_type(records: bytes | memoryview) -> int:
    """The type id of the first record of an uncompressed control batch, read from the bytes that follow
    the batch header (the steps of :data:`~parsers.record_v2.RECORD_PLAN` up to the key, whose first bytes
    are a :data:`ControlRecordKey`), or -1 when they do not hold one. Kafka reads only this record to know
    what a control batch is (``UnifiedLog.analyzeAndValidateRecords``)."""
    try:
        pos = 0
        for name, kind, *_ in RECORD_PLAN:
            if name == "key":
                break
            _, pos = read_step(records, pos, kind)
        key_len, pos = read_varint(records, pos)  # the key's length (nullable bytes: -1 is null)
        if key_len < ControlRecordKey.sizeof() or pos + ControlRecordKey.sizeof() > len(records):
            return -1
        key = ControlRecordKey.parse(bytes(records[pos : pos + ControlRecordKey.sizeof()]))
    except (ParseError, IndexError, cs.ConstructError):
        return -1
    return int(key.type) if key.version >= 0 else -1


def _key(ctype: ControlRecordType) -> bytes:
    return ControlRecordKey.build({"version": 0, "type": int(ctype)})


def encode_end_txn_marker(commit: bool, coordinator_epoch: int) -> tuple[bytes, bytes]:
    """Key and value of a COMMIT (``commit=True``) or ABORT marker, version 0."""
    ctype = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    try:
        value = EndTxnMarkerValue.build({"version": 0, "coordinator_epoch": coordinator_epoch})
    except cs.ConstructError as exc:
        raise ValueError(f"bad coordinator epoch {coordinator_epoch!r}: {exc}") from None
    return _key(ctype), value


def encode_control_record(type_name: str | ControlRecordType, data: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """Key and value of a control record; ``data`` is shaped like :func:`decode_control_record`'s output.

    Works for every known type; ABORT/COMMIT take ``{"coordinatorEpoch": N}``.
    """
    try:
        ctype = type_name if isinstance(type_name, ControlRecordType) else ControlRecordType[type_name]
    except KeyError:
        raise ValueError(f"unknown control record type {type_name!r}") from None
    if ctype is ControlRecordType.UNKNOWN:
        raise ValueError("Cannot serialize UNKNOWN control record type")
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return encode_end_txn_marker(ctype is ControlRecordType.COMMIT, data.get("coordinatorEpoch", 0))
    return _key(ctype), encode_message(CONTROL_SCHEMAS[ctype], CONTROL_VALUE_SCHEMA_VERSION, data)
