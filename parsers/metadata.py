"""KRaft metadata records: the values of ``__cluster_metadata`` records, KRaft snapshots and
``bootstrap.checkpoint`` (spec §14).

Each value is a frame (``AbstractApiMessageSerde``)::

    uvarint frameVersion   (1)
    uvarint apiKey         (record type)
    uvarint version        (record schema version)
    body                   (§14.3 flexible encoding; no trailing bytes allowed)

The schema tables below follow Kafka's ``metadata/src/main/resources/common/metadata/*.json`` (4.0 line);
every metadata record is flexible from version 0. Types or versions not in the tables are returned raw,
never as an error; a bad frame or a body that does not decode is a :class:`ParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parsers.errors import ParseError
from parsers.flexible import Field, Message, decode_message, encode_message
from parsers.primitives import encode_uvarint, read_uvarint

__all__ = [
    "FRAME_VERSION",
    "METADATA_SCHEMAS",
    "MetadataRecord",
    "decode_metadata_record",
    "encode_metadata_record",
    "record_type_name",
    "schema_for",
]

FRAME_VERSION = 1
_SHORT_MAX = 0x7FFF


def _endpoints(name: str = "EndPoints") -> Field:
    return Field(name, "[]Endpoint", fields=[
        Field("Name", "string"),
        Field("Host", "string"),
        Field("Port", "uint16"),
        Field("SecurityProtocol", "int16"),
    ])


def _features() -> Field:
    return Field("Features", "[]Feature", fields=[
        Field("Name", "string"),
        Field("MinSupportedVersion", "int16"),
        Field("MaxSupportedVersion", "int16"),
    ])


_SCHEMAS: list[Message] = [
    Message("RegisterBrokerRecord", "0-3", "0+", api_key=0, fields=[
        Field("BrokerId", "int32"),
        Field("IsMigratingZkBroker", "bool", versions="2+", default=False),
        Field("IncarnationId", "uuid"),
        Field("BrokerEpoch", "int64"),
        _endpoints(),
        _features(),
        Field("Rack", "string", nullable="0+"),
        Field("Fenced", "bool", default=True),
        Field("InControlledShutdown", "bool", versions="1+", default=False),
        Field("LogDirs", "[]uuid", versions="3+", tag=0),
    ]),
    Message("UnregisterBrokerRecord", "0", "0+", api_key=1, fields=[
        Field("BrokerId", "int32"),
        Field("BrokerEpoch", "int64"),
    ]),
    Message("TopicRecord", "0", "0+", api_key=2, fields=[
        Field("Name", "string"),
        Field("TopicId", "uuid"),
    ]),
    Message("PartitionRecord", "0-2", "0+", api_key=3, fields=[
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Replicas", "[]int32"),
        Field("Isr", "[]int32"),
        Field("RemovingReplicas", "[]int32"),
        Field("AddingReplicas", "[]int32"),
        Field("Leader", "int32", default=-1),
        Field("LeaderRecoveryState", "int8", default=0, tag=0),
        Field("LeaderEpoch", "int32", default=-1),
        Field("PartitionEpoch", "int32", default=-1),
        Field("Directories", "[]uuid", versions="1+"),
        Field("EligibleLeaderReplicas", "[]int32", versions="2+", nullable="2+", default=None, tag=1),
        Field("LastKnownElr", "[]int32", versions="2+", nullable="2+", default=None, tag=2),
    ]),
    Message("ConfigRecord", "0", "0+", api_key=4, fields=[
        Field("ResourceType", "int8"),
        Field("ResourceName", "string"),
        Field("Name", "string"),
        Field("Value", "string", nullable="0+"),
    ]),
    Message("PartitionChangeRecord", "0-2", "0+", api_key=5, fields=[
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Isr", "[]int32", nullable="0+", default=None, tag=0),
        Field("Leader", "int32", default=-2, tag=1),
        Field("Replicas", "[]int32", nullable="0+", default=None, tag=2),
        Field("RemovingReplicas", "[]int32", nullable="0+", default=None, tag=3),
        Field("AddingReplicas", "[]int32", nullable="0+", default=None, tag=4),
        Field("LeaderRecoveryState", "int8", default=-1, tag=5),
        Field("Directories", "[]uuid", versions="1+", nullable="1+", default=None, tag=8),
        Field("EligibleLeaderReplicas", "[]int32", versions="2+", nullable="2+", default=None, tag=6),
        Field("LastKnownElr", "[]int32", versions="2+", nullable="2+", default=None, tag=7),
    ]),
    Message("FenceBrokerRecord", "0", "0+", api_key=7, fields=[
        Field("Id", "int32"),
        Field("Epoch", "int64"),
    ]),
    Message("UnfenceBrokerRecord", "0", "0+", api_key=8, fields=[
        Field("Id", "int32"),
        Field("Epoch", "int64"),
    ]),
    Message("RemoveTopicRecord", "0", "0+", api_key=9, fields=[
        Field("TopicId", "uuid"),
    ]),
    Message("DelegationTokenRecord", "0", "0+", api_key=10, fields=[
        Field("Owner", "string"),
        Field("Requester", "string"),
        Field("Renewers", "[]string"),
        Field("IssueTimestamp", "int64"),
        Field("MaxTimestamp", "int64"),
        Field("ExpirationTimestamp", "int64"),
        Field("TokenId", "string"),
    ]),
    Message("UserScramCredentialRecord", "0", "0+", api_key=11, fields=[
        Field("Name", "string"),
        Field("Mechanism", "int8"),
        Field("Salt", "bytes"),
        Field("StoredKey", "bytes"),
        Field("ServerKey", "bytes"),
        Field("Iterations", "int32"),
    ]),
    Message("FeatureLevelRecord", "0", "0+", api_key=12, fields=[
        Field("Name", "string"),
        Field("FeatureLevel", "int16"),
    ]),
    Message("ClientQuotaRecord", "0", "0+", api_key=14, fields=[
        Field("Entity", "[]EntityData", fields=[
            Field("EntityType", "string"),
            Field("EntityName", "string", nullable="0+"),
        ]),
        Field("Key", "string"),
        Field("Value", "float64"),
        Field("Remove", "bool"),
    ]),
    Message("ProducerIdsRecord", "0", "0+", api_key=15, fields=[
        Field("BrokerId", "int32"),
        Field("BrokerEpoch", "int64", default=-1),
        Field("NextProducerId", "int64"),
    ]),
    Message("BrokerRegistrationChangeRecord", "0-2", "0+", api_key=17, fields=[
        Field("BrokerId", "int32"),
        Field("BrokerEpoch", "int64"),
        Field("Fenced", "int8", tag=0),
        Field("InControlledShutdown", "int8", versions="1+", tag=1),
        Field("LogDirs", "[]uuid", versions="2+", tag=2),
    ]),
    Message("AccessControlEntryRecord", "0", "0+", api_key=18, fields=[
        Field("Id", "uuid"),
        Field("ResourceType", "int8"),
        Field("ResourceName", "string"),
        Field("PatternType", "int8"),
        Field("Principal", "string"),
        Field("Host", "string"),
        Field("Operation", "int8"),
        Field("PermissionType", "int8"),
    ]),
    Message("RemoveAccessControlEntryRecord", "0", "0+", api_key=19, fields=[
        Field("Id", "uuid"),
    ]),
    Message("NoOpRecord", "0", "0+", api_key=20, fields=[]),
    Message("ZkMigrationStateRecord", "0", "0+", api_key=21, fields=[
        Field("ZkMigrationState", "int8"),
    ]),
    Message("RemoveUserScramCredentialRecord", "0", "0+", api_key=22, fields=[
        Field("Name", "string"),
        Field("Mechanism", "int8"),
    ]),
    Message("BeginTransactionRecord", "0", "0+", api_key=23, fields=[
        Field("Name", "string", nullable="0+", default=None, tag=0),
    ]),
    Message("EndTransactionRecord", "0", "0+", api_key=24, fields=[]),
    Message("AbortTransactionRecord", "0", "0+", api_key=25, fields=[
        Field("Reason", "string", nullable="0+", default=None, tag=0),
    ]),
    Message("RemoveDelegationTokenRecord", "0", "0+", api_key=26, fields=[
        Field("TokenId", "string"),
    ]),
    Message("RegisterControllerRecord", "0", "0+", api_key=27, fields=[
        Field("ControllerId", "int32"),
        Field("IncarnationId", "uuid"),
        Field("ZkMigrationReady", "bool"),
        _endpoints(),
        _features(),
    ]),
]

METADATA_SCHEMAS: dict[int, Message] = {m.api_key: m for m in _SCHEMAS if m.api_key is not None}
"""api key → schema."""


def record_type_name(schema_name: str) -> str:
    """Kafka's ``MetadataRecordType`` constant for a schema name: ``TopicRecord`` → ``TOPIC_RECORD``."""
    out: list[str] = []
    prev_upper = True
    for ch in schema_name:
        if ch.isupper():
            if not prev_upper:
                out.append("_")
            out.append(ch)
            prev_upper = True
        else:
            out.append(ch.upper())
            prev_upper = False
    return "".join(out)


_BY_NAME: dict[str, Message] = {}
for _m in _SCHEMAS:
    _BY_NAME[_m.name] = _m
    _BY_NAME[record_type_name(_m.name)] = _m


def schema_for(type_name_or_api_key: str | int) -> Message:
    """The schema for an api key, a type name (``TOPIC_RECORD``) or a schema name (``TopicRecord``)."""
    schema = (METADATA_SCHEMAS.get(type_name_or_api_key) if isinstance(type_name_or_api_key, int)
              else _BY_NAME.get(type_name_or_api_key))
    if schema is None:
        raise KeyError(f"unknown metadata record type {type_name_or_api_key!r}")
    return schema


@dataclass(frozen=True)
class MetadataRecord:
    """One decoded metadata record value.

    ``data`` is the body as ``kafka-dump-log --cluster-metadata-decoder`` prints it; when the api key or
    version is not known here, ``data`` is ``None`` and ``raw_hex`` holds the undecoded body (an unknown
    api key N is named ``UNKNOWN_N``).
    """

    frame_version: int
    api_key: int
    version: int
    type_name: str
    data: dict[str, Any] | None
    raw_hex: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The dump's JSON shape: ``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}``."""
        if self.data is None:
            return {"type": self.type_name, "version": self.version, "raw": self.raw_hex}
        return {"type": self.type_name, "version": self.version, "data": self.data}


def _frame_int(value: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        n, pos2 = read_uvarint(value, pos)
    except ParseError as exc:
        raise ParseError(f"Error while reading {entity}: {exc.message}", offset=exc.offset) from None
    if n > _SHORT_MAX:
        raise ParseError(f"Value for {entity} was too large.", offset=pos)
    return n, pos2


def decode_metadata_record(value: bytes | bytearray | memoryview | None) -> MetadataRecord:
    """Decode one framed metadata record value (the whole record value, nothing after it)."""
    if value is None:
        raise ParseError("metadata record has a null value", offset=0)
    value = bytes(value)
    frame_version, pos = _frame_int(value, 0, "frame version")
    if frame_version == 0:
        raise ParseError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                         "from the preview release of KRaft in 2.8 to newer versions are not supported.",
                         offset=0)
    if frame_version != FRAME_VERSION:
        raise ParseError(f"Could not deserialize metadata record due to unknown frame version "
                         f"{frame_version}(only frame version {FRAME_VERSION} is supported)", offset=0)
    api_key, pos = _frame_int(value, pos, "type")
    version, pos = _frame_int(value, pos, "version")
    schema = METADATA_SCHEMAS.get(api_key)
    if schema is None or not schema.supports(version):
        type_name = record_type_name(schema.name) if schema is not None else f"UNKNOWN_{api_key}"
        return MetadataRecord(frame_version, api_key, version, type_name, None, value[pos:].hex())
    try:
        data, end = decode_message(schema, version, value, pos)
    except ParseError as exc:
        raise ParseError(f"Failed to deserialize record with type {api_key}: {exc.message}",
                         offset=exc.offset) from None
    if end != len(value):
        raise ParseError(f"Found {len(value) - end} byte(s) of garbage after {api_key}", offset=end)
    return MetadataRecord(frame_version, api_key, version, record_type_name(schema.name), data)


def encode_metadata_record(type_name_or_api_key: str | int, version: int, data: Mapping[str, Any]) -> bytes:
    """Frame and encode a metadata record value (frame version 1), as a controller would write it."""
    schema = schema_for(type_name_or_api_key)
    body = encode_message(schema, version, data)
    assert schema.api_key is not None
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(schema.api_key) + encode_uvarint(version) + body
