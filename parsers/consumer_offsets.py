"""``__consumer_offsets`` records: group coordinator keys and values (``CoordinatorRecordSerde``).

::

    key   = int16 record_type, key message   (read at version = record_type; never flexible)
    value = int16 value_version, value message, or null (tombstone: the key's state is deleted)

Record types (``GroupCoordinatorRecordSerde`` of Kafka 4.0; tables from its
``group-coordinator/src/main/resources/common/message/*.json``): 0/1 offset commit, 2 classic group metadata,
3–8 KIP-848 consumer groups, 9–15 KIP-932 share groups (early access in 4.0), 16 a consumer group's resolved
regular expression. Other types (later additions; Kafka's loader skips them) and unknown value versions are
returned raw. Output is shaped like
``kafka-dump-log --offsets-decoder``: key ``{"type": "1", "data": {...}}``, value
``{"version": "3", "data": {...}}``; for a classic group whose ``protocolType`` is ``consumer`` each member's
``subscription`` and ``assignment`` bytes are decoded (ConsumerProtocolSubscription/Assignment) and kept as
base64 when they do not decode, as the tool does.

Like Kafka, bytes after a key or value message are ignored; they are counted under ``"trailingBytes"``
(present only when non-zero). Raw results carry ``"data": None`` and ``"raw": "<hex after the version>"``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import struct
from collections.abc import Mapping
from typing import Any

from parsers.errors import ParseError
from parsers.flexible import Field, Message, decode_message, encode_message

__all__ = [
    "KEY_SCHEMAS",
    "VALUE_SCHEMAS",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "decode_offsets_key",
    "decode_offsets_value",
    "decode_consumer_protocol",
    "encode_offsets_key",
    "encode_offsets_value",
    "encode_consumer_protocol",
]

_INT16 = struct.Struct(">h")


def _key(name: str, record_type: int, *fields: Field) -> Message:
    return Message(name, str(record_type), "none", fields=fields)


_OFFSET_COMMIT_KEY = Message("OffsetCommitKey", "0-1", "none", fields=[
    Field("group", "string"),
    Field("topic", "string"),
    Field("partition", "int32"),
])

KEY_SCHEMAS: dict[int, Message] = {
    0: _OFFSET_COMMIT_KEY,
    1: _OFFSET_COMMIT_KEY,
    2: _key("GroupMetadataKey", 2, Field("group", "string", versions="2")),
    3: _key("ConsumerGroupMetadataKey", 3, Field("GroupId", "string", versions="3")),
    4: _key("ConsumerGroupPartitionMetadataKey", 4, Field("GroupId", "string", versions="4")),
    5: _key("ConsumerGroupMemberMetadataKey", 5, Field("GroupId", "string", versions="5"),
            Field("MemberId", "string", versions="5")),
    6: _key("ConsumerGroupTargetAssignmentMetadataKey", 6, Field("GroupId", "string", versions="6")),
    7: _key("ConsumerGroupTargetAssignmentMemberKey", 7, Field("GroupId", "string", versions="7"),
            Field("MemberId", "string", versions="7")),
    8: _key("ConsumerGroupCurrentMemberAssignmentKey", 8, Field("GroupId", "string", versions="8"),
            Field("MemberId", "string", versions="8")),
    9: _key("ShareGroupPartitionMetadataKey", 9, Field("GroupId", "string", versions="9")),
    10: _key("ShareGroupMemberMetadataKey", 10, Field("GroupId", "string", versions="10"),
             Field("MemberId", "string", versions="10")),
    11: _key("ShareGroupMetadataKey", 11, Field("GroupId", "string", versions="11")),
    12: _key("ShareGroupTargetAssignmentMetadataKey", 12, Field("GroupId", "string", versions="12")),
    13: _key("ShareGroupTargetAssignmentMemberKey", 13, Field("GroupId", "string", versions="13"),
             Field("MemberId", "string", versions="13")),
    14: _key("ShareGroupCurrentMemberAssignmentKey", 14, Field("GroupId", "string", versions="14"),
             Field("MemberId", "string", versions="14")),
    15: _key("ShareGroupStatePartitionMetadataKey", 15, Field("GroupId", "string", versions="15")),
    16: _key("ConsumerGroupRegularExpressionKey", 16, Field("GroupId", "string", versions="16"),
             Field("RegularExpression", "string", versions="16")),
}
"""record type → key schema."""

_OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", "0-4", "4+", fields=[
    Field("offset", "int64"),
    Field("leaderEpoch", "int32", versions="3+", default=-1, ignorable=True),
    Field("metadata", "string"),
    Field("commitTimestamp", "int64"),
    Field("expireTimestamp", "int64", versions="1", default=-1, ignorable=True),
])

_TOPIC_PARTITIONS = [
    Field("TopicId", "uuid"),
    Field("Partitions", "[]int32"),
]

_TOPIC_METADATA = [
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
    Field("NumPartitions", "int32"),
    Field("PartitionMetadata", "[]PartitionMetadata", fields=[
        Field("Partition", "int32"),
        Field("Racks", "[]string"),
    ]),
]

VALUE_SCHEMAS: dict[int, Message] = {
    0: _OFFSET_COMMIT_VALUE,
    1: _OFFSET_COMMIT_VALUE,
    2: Message("GroupMetadataValue", "0-4", "4+", fields=[
        Field("protocolType", "string"),
        Field("generation", "int32"),
        Field("protocol", "string", nullable="0+"),
        Field("leader", "string", nullable="0+"),
        Field("currentStateTimestamp", "int64", versions="2+", default=-1, ignorable=True),
        Field("members", "[]MemberMetadata", fields=[
            Field("memberId", "string"),
            Field("groupInstanceId", "string", versions="3+", nullable="3+", default=None, ignorable=True),
            Field("clientId", "string"),
            Field("clientHost", "string"),
            Field("rebalanceTimeout", "int32", versions="1+", default=-1, ignorable=True),
            Field("sessionTimeout", "int32"),
            Field("subscription", "bytes"),
            Field("assignment", "bytes"),
        ]),
    ]),
    3: Message("ConsumerGroupMetadataValue", "0", "0+", fields=[
        Field("Epoch", "int32"),
    ]),
    4: Message("ConsumerGroupPartitionMetadataValue", "0", "0+", fields=[
        Field("Topics", "[]TopicMetadata", fields=_TOPIC_METADATA),
    ]),
    5: Message("ConsumerGroupMemberMetadataValue", "0", "0+", fields=[
        Field("InstanceId", "string", nullable="0+"),
        Field("RackId", "string", nullable="0+"),
        Field("ClientId", "string"),
        Field("ClientHost", "string"),
        Field("SubscribedTopicNames", "[]string"),
        Field("SubscribedTopicRegex", "string", nullable="0+"),
        Field("RebalanceTimeoutMs", "int32", default=-1),
        Field("ServerAssignor", "string", nullable="0+"),
        Field("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", default=None, tag=0, fields=[
            Field("SessionTimeoutMs", "int32"),
            Field("SupportedProtocols", "[]ClassicProtocol", fields=[
                Field("Name", "string"),
                Field("Metadata", "bytes"),
            ]),
        ]),
    ]),
    6: Message("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", fields=[
        Field("AssignmentEpoch", "int32"),
    ]),
    7: Message("ConsumerGroupTargetAssignmentMemberValue", "0", "0+", fields=[
        Field("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
    ]),
    8: Message("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", fields=[
        Field("MemberEpoch", "int32"),
        Field("PreviousMemberEpoch", "int32"),
        Field("State", "int8"),
        Field("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
        Field("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    ]),
    9: Message("ShareGroupPartitionMetadataValue", "0", "0+", fields=[
        Field("Topics", "[]TopicMetadata", fields=_TOPIC_METADATA),
    ]),
    10: Message("ShareGroupMemberMetadataValue", "0", "0+", fields=[
        Field("RackId", "string", nullable="0+"),
        Field("ClientId", "string"),
        Field("ClientHost", "string"),
        Field("SubscribedTopicNames", "[]string"),
    ]),
    11: Message("ShareGroupMetadataValue", "0", "0+", fields=[
        Field("Epoch", "int32"),
    ]),
    12: Message("ShareGroupTargetAssignmentMetadataValue", "0", "0+", fields=[
        Field("AssignmentEpoch", "int32"),
    ]),
    13: Message("ShareGroupTargetAssignmentMemberValue", "0", "0+", fields=[
        Field("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
    ]),
    14: Message("ShareGroupCurrentMemberAssignmentValue", "0", "0+", fields=[
        Field("MemberEpoch", "int32"),
        Field("PreviousMemberEpoch", "int32"),
        Field("State", "int8"),
        Field("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    ]),
    15: Message("ShareGroupStatePartitionMetadataValue", "0", "0+", fields=[
        Field("InitializedTopics", "[]TopicPartitionsInfo", fields=[
            Field("TopicId", "uuid"),
            Field("TopicName", "string"),
            Field("Partitions", "[]int32"),
        ]),
        Field("DeletingTopics", "[]TopicInfo", fields=[
            Field("TopicId", "uuid"),
            Field("TopicName", "string"),
        ]),
    ]),
    16: Message("ConsumerGroupRegularExpressionValue", "0", "0+", fields=[
        Field("Topics", "[]string"),
        Field("Version", "int64"),
        Field("Timestamp", "int64"),
    ]),
}
"""record type → value schema."""

_TOPIC_PARTITION = [
    Field("Topic", "string"),
    Field("Partitions", "[]int32"),
]

CONSUMER_PROTOCOL_SUBSCRIPTION = Message("ConsumerProtocolSubscription", "0-3", "none", fields=[
    Field("Topics", "[]string"),
    Field("UserData", "bytes", nullable="0+", default=None),
    Field("OwnedPartitions", "[]TopicPartition", versions="1+", ignorable=True, fields=_TOPIC_PARTITION),
    Field("GenerationId", "int32", versions="2+", default=-1, ignorable=True),
    Field("RackId", "string", versions="3+", nullable="3+", default=None, ignorable=True),
])
"""The subscription a classic-protocol consumer sends in JoinGroup (embedded in GroupMetadataValue)."""

CONSUMER_PROTOCOL_ASSIGNMENT = Message("ConsumerProtocolAssignment", "0-3", "none", fields=[
    Field("AssignedPartitions", "[]TopicPartition", fields=_TOPIC_PARTITION),
    Field("UserData", "bytes", nullable="0+", default=None),
])
"""The assignment the group leader hands each member in SyncGroup."""

CONSUMER_PROTOCOL_TYPE = "consumer"


def _read_version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise ParseError(f"Could not read version from {what}'s buffer.", offset=0)
    return _INT16.unpack_from(buf, 0)[0]


def _decode_body(schema: Message, version: int, buf: bytes, what: str) -> dict[str, Any]:
    try:
        data, end = decode_message(schema, version, buf, 2)
    except ParseError as exc:
        raise ParseError(f"Could not read record with version {version} from {what}'s buffer due to: "
                         f"{exc.message}.", offset=exc.offset) from None
    if end != len(buf):
        data = {**data, "trailingBytes": len(buf) - end}
    return data


def decode_offsets_key(key: bytes | bytearray | memoryview | None) -> dict[str, Any]:
    """Decode a ``__consumer_offsets`` record key: ``{"type": "<record type>", "data": {...}}``."""
    if key is None:
        raise ParseError("message had a missing key", offset=0)
    key = bytes(key)
    record_type = _read_version(key, "key")
    schema = KEY_SCHEMAS.get(record_type)
    if schema is None:
        return {"type": str(record_type), "data": None, "raw": key[2:].hex()}
    return {"type": str(record_type), "data": _decode_body(schema, record_type, key, "key")}


def decode_offsets_value(key: dict[str, Any],
                         value: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """Decode a value given its decoded key; ``None`` for a tombstone (the key's state is deleted)."""
    if value is None:
        return None
    value = bytes(value)
    version = _read_version(value, "value")
    try:
        record_type = int(key["type"])
    except (KeyError, TypeError, ValueError):
        raise ParseError(f"not a decoded offsets key: {key!r}") from None
    schema = VALUE_SCHEMAS.get(record_type)
    if key.get("data") is None or schema is None or not schema.supports(version):
        return {"version": str(version), "data": None, "raw": value[2:].hex()}
    data = _decode_body(schema, version, value, "value")
    if record_type == 2 and data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        data["members"] = [_decode_member_protocol(m) for m in data["members"]]
    return {"version": str(version), "data": data}


def decode_consumer_protocol(schema: Message, payload: bytes) -> dict[str, Any]:
    """Decode an embedded consumer-protocol blob (``int16 version`` + body) as the consumer does.

    Versions above the newest known are read with the newest layout (the protocol only ever appends
    fields); bytes after the body are ignored, as Kafka does.
    """
    version = _read_version(payload, "consumer protocol")
    data, _ = decode_message(schema, min(max(version, 0), schema.newest), payload, 2)
    return data


def _decode_member_protocol(member: dict[str, Any]) -> dict[str, Any]:
    member = dict(member)
    for name, schema in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                         ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
        encoded = member.get(name)
        if not isinstance(encoded, str):
            continue
        with contextlib.suppress(ParseError, binascii.Error):  # keep the bytes, as kafka-dump-log does
            member[name] = decode_consumer_protocol(schema, base64.b64decode(encoded))
    return member


# ------------------------------------------------------------------------------------------- encoding


def _pack16(n: int) -> bytes:
    try:
        return _INT16.pack(n)
    except struct.error as exc:
        raise ValueError(f"{n!r} is not an int16: {exc}") from None


def encode_offsets_key(record_type: int, data: Mapping[str, Any]) -> bytes:
    """Key bytes for ``record_type`` (``data`` as in :func:`decode_offsets_key`'s ``"data"``)."""
    schema = KEY_SCHEMAS.get(record_type)
    if schema is None:
        raise ValueError(f"unknown __consumer_offsets record type {record_type}")
    return _pack16(record_type) + encode_message(schema, record_type, data)


def encode_offsets_value(record_type: int, version: int, data: Mapping[str, Any]) -> bytes:
    """Value bytes of ``record_type`` at ``version``; member subscriptions/assignments must be bytes
    (or base64 text): build them with :func:`encode_consumer_protocol`."""
    schema = VALUE_SCHEMAS.get(record_type)
    if schema is None:
        raise ValueError(f"unknown __consumer_offsets record type {record_type}")
    return _pack16(version) + encode_message(schema, version, data)


def encode_consumer_protocol(schema: Message, version: int, data: Mapping[str, Any]) -> bytes:
    """An embedded consumer-protocol blob: ``int16 version`` + body."""
    return _pack16(version) + encode_message(schema, version, data)
