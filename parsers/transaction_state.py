"""``__transaction_state`` records: the transaction coordinator's TransactionLogKey and TransactionLogValue.

::

    key   = int16 key_version (0), TransactionalId (string, int16 length)
    value = int16 value_version, TransactionLogValue, or null (tombstone: the transactional id is removed)

``TransactionLogValue`` version 0 is not flexible; version 1 (written once ``transaction.version`` >= 1,
KIP-890) is flexible and carries the tagged fields ``PreviousProducerId`` (tag 0, default -1),
``NextProducerId`` (tag 1, default -1) and ``ClientTransactionVersion`` (tag 2, default 0).
``TransactionStatus`` is the byte id of Kafka's ``TransactionState`` (:data:`STATE_NAMES`). For the
``Empty`` state the coordinator writes a null partition list and ignores any list on load.

Sources (Kafka 4.0 line): ``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json``
and ``TransactionLogValue.json`` (fields, versions, tags), ``TransactionMetadata.scala``
(``TransactionState.fromId``: the state ids), ``TransactionLog.scala`` (``keyToBytes``/``valueToBytes``,
``readTxnRecordKey``: a key version outside 0..0 is an unknown key; ``formatRecordKeyAndValue``: what
``kafka-dump-log.sh --transaction-log-decoder`` prints).

Decoded objects (JSON output of ``kafka-auditor dump``)::

    key   {"type": "transaction_metadata", "version": 0, "data": {"transactionalId": "..."}}
    value {"version": 1, "state": "Ongoing", "data": {"producerId": ..., "producerEpoch": ...,
           "transactionTimeoutMs": ..., "transactionStatus": 1,
           "transactionPartitions": [{"topic": ..., "partitionIds": [...]}],
           "transactionLastUpdateTimestampMs": ..., "transactionStartTimestampMs": ...}}

Tagged fields appear in ``data`` only when they differ from their default (Kafka's JSON converters do the
same). Unknown key or value versions give ``"data": None`` and ``"raw": "<hex after the version>"``; an
unknown status byte gives ``"state": None``. Bytes after a message are ignored, as Kafka does, and counted
under ``"trailingBytes"``. Truncated input raises :class:`ParseError` with the byte offset in the key or
value. :func:`key_text` and :func:`value_text` render Kafka's own text form
(``transaction_metadata::transactionalId=...`` and ``producerId:..,producerEpoch:..,state=..,...``).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from parsers.errors import ParseError
from parsers.flexible import Field, Message, decode_message, encode_message

__all__ = [
    "STATE_NAMES",
    "STATE_IDS",
    "KEY_SCHEMA",
    "VALUE_SCHEMA",
    "KEY_TYPE",
    "decode_txn_key",
    "decode_txn_value",
    "encode_txn_key",
    "encode_txn_value",
    "value_partitions",
    "key_text",
    "value_text",
]

_INT16 = struct.Struct(">h")

STATE_NAMES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
"""``TransactionState`` byte id → name (``TransactionState.fromId``)."""

STATE_IDS: dict[str, int] = {name: i for i, name in STATE_NAMES.items()}

KEY_TYPE = "transaction_metadata"
"""``type`` of a decoded key (Kafka prints keys as ``transaction_metadata::transactionalId=...``)."""

KEY_SCHEMA = Message(
    "TransactionLogKey",
    "0",
    "none",
    fields=[
        Field("TransactionalId", "string", versions="0"),
    ],
)

VALUE_SCHEMA = Message(
    "TransactionLogValue",
    "0-1",
    "1+",
    fields=[
        Field("ProducerId", "int64"),
        Field("PreviousProducerId", "int64", versions="1+", tag=0, default=-1),
        Field("NextProducerId", "int64", versions="1+", tag=1, default=-1),
        Field("ProducerEpoch", "int16"),
        Field("TransactionTimeoutMs", "int32"),
        Field("TransactionStatus", "int8"),
        Field(
            "TransactionPartitions",
            "[]PartitionsSchema",
            nullable="0+",
            fields=[
                Field("Topic", "string"),
                Field("PartitionIds", "[]int32"),
            ],
        ),
        Field("TransactionLastUpdateTimestampMs", "int64"),
        Field("TransactionStartTimestampMs", "int64"),
        Field("ClientTransactionVersion", "int16", versions="1+", tag=2, default=0),
    ],
)


def _read_version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise ParseError(f"transaction log {what} too short for its version ({len(buf)} bytes)", offset=0)
    return _INT16.unpack_from(buf, 0)[0]


def _decode_body(schema: Message, version: int, buf: bytes, what: str) -> dict[str, Any]:
    try:
        data, end = decode_message(schema, version, buf, 2)
    except ParseError as exc:
        raise ParseError(
            f"transaction log {what} version {version} does not decode: {exc.message}", offset=exc.offset
        ) from None
    if end != len(buf):
        data = {**data, "trailingBytes": len(buf) - end}
    return data


def decode_txn_key(key: bytes | bytearray | memoryview | None) -> dict[str, Any]:
    """Decode a key: ``{"type": "transaction_metadata", "version": 0, "data": {"transactionalId": ...}}``;
    another version gives ``"type": "unknown"`` with the raw bytes."""
    if key is None:
        raise ParseError("transaction log record has no key", offset=0)
    key = bytes(key)
    version = _read_version(key, "key")
    if not KEY_SCHEMA.supports(version):
        return {"type": "unknown", "version": version, "data": None, "raw": key[2:].hex()}
    return {"type": KEY_TYPE, "version": version, "data": _decode_body(KEY_SCHEMA, version, key, "key")}


def decode_txn_value(value: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """Decode a value; ``None`` for a tombstone."""
    if value is None:
        return None
    value = bytes(value)
    version = _read_version(value, "value")
    if not VALUE_SCHEMA.supports(version):
        return {"version": version, "state": None, "data": None, "raw": value[2:].hex()}
    data = _decode_body(VALUE_SCHEMA, version, value, "value")
    return {"version": version, "state": STATE_NAMES.get(data["transactionStatus"]), "data": data}


def transactional_id(key: Mapping[str, Any]) -> str | None:
    """The transactional id of a decoded key (``None`` for an unknown key version)."""
    data = key.get("data")
    return None if data is None else data["transactionalId"]


def value_partitions(value: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a decoded value, in record order; none for ``Empty`` (Kafka ignores
    the list then) or an undecodable value."""
    data = value.get("data")
    if data is None or data["transactionStatus"] == STATE_IDS["Empty"]:
        return []
    return [(p["topic"], pid) for p in data.get("transactionPartitions") or () for pid in p["partitionIds"]]


# ------------------------------------------------------------------------------------- Kafka's text form


def key_text(key: Mapping[str, Any]) -> str:
    """``transaction_metadata::transactionalId=ID`` or ``unknown::version=N``, as kafka-dump-log prints."""
    if key.get("data") is None:
        return f"unknown::version={key['version']}"
    return f"{KEY_TYPE}::transactionalId={key['data']['transactionalId']}"


def value_text(value: Mapping[str, Any] | None) -> str:
    """``<DELETE>`` for a tombstone, else ``producerId:P,producerEpoch:E,state=S,partitions=[t-p,...],
    txnLastUpdateTimestamp=T,txnTimeoutMs=M`` as kafka-dump-log prints (partitions in record order; Kafka
    prints its hash-set order)."""
    if value is None:
        return "<DELETE>"
    data = value.get("data")
    if data is None:
        return f"unknown::version={value['version']} raw=0x{value.get('raw', '')}"
    state = value.get("state") or f"<unknown status {data['transactionStatus']}>"
    parts = ",".join(f"{t}-{p}" for t, p in value_partitions(value))
    return (
        f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},state={state},"
        f"partitions=[{parts}],txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={data['transactionTimeoutMs']}"
    )


# ------------------------------------------------------------------------------------------- encoding


def _pack16(n: int) -> bytes:
    try:
        return _INT16.pack(n)
    except struct.error as exc:
        raise ValueError(f"{n!r} is not an int16: {exc}") from None


def encode_txn_key(transactional_id: str, version: int = 0) -> bytes:
    """Key bytes (``version`` 0, the only one Kafka defines)."""
    return _pack16(version) + encode_message(KEY_SCHEMA, version, {"transactionalId": transactional_id})


def encode_txn_value(
    *,
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    state: str | int,
    partitions: Sequence[tuple[str, int]] | None = (),
    last_update_timestamp: int = 0,
    start_timestamp: int = -1,
    previous_producer_id: int = -1,
    next_producer_id: int = -1,
    client_transaction_version: int = 0,
    version: int = 0,
) -> bytes:
    """Value bytes at ``version`` (0 or 1), grouping ``partitions`` by topic as the coordinator does;
    ``Empty`` is written with a null partition list, as Kafka writes it. Tagged fields exist only in
    version 1."""
    status = STATE_IDS[state] if isinstance(state, str) else int(state)
    if status == STATE_IDS["Empty"] or partitions is None:
        grouped = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(int(partition))
        grouped = [{"topic": t, "partitionIds": ids} for t, ids in by_topic.items()]
    data: dict[str, Any] = {
        "producerId": producer_id,
        "producerEpoch": producer_epoch,
        "transactionTimeoutMs": timeout_ms,
        "transactionStatus": status,
        "transactionPartitions": grouped,
        "transactionLastUpdateTimestampMs": last_update_timestamp,
        "transactionStartTimestampMs": start_timestamp,
    }
    if version >= 1:
        data.update(
            previousProducerId=previous_producer_id,
            nextProducerId=next_producer_id,
            clientTransactionVersion=client_transaction_version,
        )
    elif (previous_producer_id, next_producer_id, client_transaction_version) != (-1, -1, 0):
        raise ValueError("PreviousProducerId, NextProducerId and ClientTransactionVersion need version 1")
    return _pack16(version) + encode_message(VALUE_SCHEMA, version, data)
