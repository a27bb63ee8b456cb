"""The events of ``kafka-auditor dump``: flat dicts with a ``kind`` (``file``, ``summary``, ``batch``,
``record``, ``records``, ``entry``, ``stop``, ``error``) and camelCase field names close to
``kafka-dump-log.sh``'s; bytes are UTF-8 text or base64 with the encoding named beside them
(``auditor.text.encode_bytes``). The shape of every event is ``auditor/schemas/dump-events.schema.json``."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator

from auditor.text import camel, encode_bytes
from parsers.errors import ParseError
from parsers.record_batch import (
    RecordBatch,
    RecordRow,
)

_BYTES = (bytes, bytearray, memoryview)


def to_jsonable(obj):
    """Dataclasses, bytes and containers to JSON-ready values with camelCase keys; a bytes field ``name``
    becomes ``name`` (text) plus ``nameEncoding`` (``utf8``/``base64``), bytes in a list an object
    ``{"value", "valueEncoding"}``."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _mapping((camel(f.name), getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return _mapping((str(k), v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, _BYTES):
        text, encoding = encode_bytes(obj)
        return {"value": text, "valueEncoding": encoding}
    return obj


def _mapping(items) -> dict:
    out: dict = {}
    for key, value in items:
        if isinstance(value, _BYTES):
            out[key], out[f"{key}Encoding"] = encode_bytes(value)
        else:
            out[key] = to_jsonable(value)
    return out


def render_bytes(data: bytes | None, mode: str) -> tuple[str | None, str | None]:
    """(text, encoding) for a key or value (``auditor.text.encode_bytes``; ``mode`` ``base64`` forces
    base64); ``(None, None)`` for a null one."""
    if data is None:
        return None, None
    return encode_bytes(data, mode == "base64")


def raw_hex(decoded):
    """A decoder's result whose undecoded rest is the parsers' ``"raw"`` hex text, with that rest in the
    one byte encoding instead (``raw`` + ``rawEncoding``)."""
    if isinstance(decoded, dict) and isinstance(decoded.get("raw"), str):
        out = dict(decoded)
        out["raw"], out["rawEncoding"] = encode_bytes(bytes.fromhex(decoded["raw"]))
        return out
    return decoded


def pairs_list(raw: dict) -> list[dict]:
    """A metadata file's own key/value map (``meta.properties``, ``quorum-state``) as ``[{key, value}]``:
    the file's names kept exactly, every JSON key of the output camelCase."""
    return [{"key": str(k), "value": v} for k, v in raw.items()]


@functools.lru_cache(maxsize=256)
def attribute_fields(attributes: int) -> tuple[bool, bool, str, str, bool]:
    """What a batch's ``attributes`` say, as its ``RecordBatch`` properties read them: (isTransactional,
    isControl, timestampType, compressCodec, has a deleteHorizonMs)."""
    probe = RecordBatch(0, 0, 0, 2, 0, attributes, 0, 0, 0, 0, 0, 0, 0)
    return (
        probe.is_transactional,
        probe.is_control,
        probe.timestamp_type,
        probe.compression_name,
        probe.delete_horizon_ms is not None,
    )


def batch_event(batch: RecordBatch) -> dict:
    transactional, control, timestamp_type, codec, horizon = attribute_fields(batch.attributes)
    magic = batch.magic
    return {
        "kind": "batch",
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": batch.records_count,
        "baseSequence": batch.base_sequence,
        "lastSequence": batch.last_sequence,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": transactional,
        "isControl": control,
        "deleteHorizonMs": batch.base_timestamp if horizon else None,
        "position": batch.position,
        "timestampType": timestamp_type,
        "baseTimestamp": batch.base_timestamp,
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size,
        "magic": magic,
        "compressCodec": codec,
        "crc": batch.crc,
        "computedCrc": batch.computed_crc,
        "isValid": batch.crc_valid and magic == 2,
    }


def record_event(timestamp_type: str, row: RecordRow) -> dict:
    """The ``record`` event of one v2 record (``row`` as ``parsers.record_batch.record_rows`` gives it)."""
    offset, timestamp, key_size, value_size, sequence, header_keys = row
    return {
        "kind": "record",
        "offset": offset,
        "timestampType": timestamp_type,
        "timestamp": timestamp,
        "keySize": key_size,
        "valueSize": value_size,
        "sequence": sequence,
        "headerKeys": list(header_keys),
    }


def record_events(block: dict) -> Iterator[dict]:
    """The ``record`` events of a ``records`` block, one per row."""
    timestamp_type = block["timestampType"]
    for row in block["rows"]:
        yield record_event(timestamp_type, row)


def expand_blocks(events: Iterator[dict]) -> Iterator[dict]:
    """``events`` with every ``records`` block replaced by its ``record`` events."""
    for event in events:
        if event["kind"] == "records":
            yield from record_events(event)
        else:
            yield event


def legacy_event(entry) -> dict:
    return {
        "kind": "batch",
        "baseOffset": None,
        "lastOffset": entry.offset,
        "count": None,
        "position": entry.position,
        "timestampType": entry.timestamp_type,
        "maxTimestamp": entry.timestamp,
        "size": entry.size,
        "magic": entry.magic,
        "compressCodec": _codec_name(entry.compression),
        "crc": entry.crc,
        "computedCrc": entry.computed_crc,
        "isValid": entry.crc_valid,
    }


def _codec_name(codec: int) -> str:
    from parsers.record_batch import COMPRESSION_NAMES

    return COMPRESSION_NAMES.get(codec, f"unknown({codec})")


CONTROL_MEMO_BYTES = 256
"""Control records up to this size (key and value) are decoded once per distinct bytes."""


@functools.lru_cache(maxsize=64)
def control_fields(key: bytes | None, value: bytes | None) -> dict:
    """The event fields of a control record; memoized, as transaction markers repeat the same bytes (a copy
    goes into each event)."""
    from parsers.control import decode_control_record

    try:
        ctl = decode_control_record(key, value)
    except ParseError as exc:
        return {"controlError": exc.message}
    return {"controlType": ctl.type_name, "controlData": to_jsonable(ctl.data)}


def summary_fields(obj, exclude: tuple[str, ...] = ()) -> dict:
    """The dataclass ``obj`` as JSON-ready fields without ``exclude`` (never converted: they can hold
    millions of entries)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return {}
    return {
        camel(f.name): to_jsonable(getattr(obj, f.name))
        for f in dataclasses.fields(obj)
        if f.name not in exclude
    }
