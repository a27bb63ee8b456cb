"""The rows of ``lost-records.jsonl`` (``audit --export-lost``; schema
``auditor/schemas/lost-records.schema.json``) read back as records to produce again, every line checked
against the schema, and the fingerprint header that marks a record once it is produced again."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from auditor.text import BYTE_ENCODINGS, camel, decode_bytes

FILE_NAME = "lost-records.jsonl"
"""The file ``audit --export-lost DIR`` writes under DIR."""

HEADER = "kafka-auditor-reproduced"
"""The header every record produced again carries: its :func:`fingerprint` (``topic/partition/offset/hash``),
by which a later run finds it on the cluster and does not produce it twice."""

REQUIRED = (
    "cluster",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "key",
    "keyEncoding",
    "value",
    "valueEncoding",
    "headers",
    "leaderEpoch",
    "batchBaseOffset",
    "committedHighWatermark",
    "producerId",
    "producerEpoch",
    "baseSequence",
    "isTransactional",
    "broker",
    "error",
    "holders",
)
"""Every field of a row, in the order of the schema's ``required`` (no other field is allowed)."""

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


class ReproduceError(Exception):
    """What stops ``reproduce``: one line, naming the file and line when an input line is at fault."""


@dataclass(frozen=True)
class LostRecord:
    """One exported lost record: where it was (topic, partition, offset in the lost log), what it held."""

    line: int
    """Its line in the file (1-based)."""
    cluster: str
    topic: str
    partition: int
    offset: int
    timestamp: int | None
    """ms since the Unix epoch (None: the batch could not be read, ``error``)."""
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int
    batch_base_offset: int
    error: str | None
    """Why the audit could not read the record's batch: such a row has no key, value nor timestamp."""

    @property
    def size(self) -> int:
        """Bytes of its key, value, header keys and header values (what is produced again)."""
        total = len(self.key or b"") + len(self.value or b"")
        return total + sum(len(k.encode()) + len(v or b"") for k, v in self.headers)

    def fingerprint(self) -> str:
        """The value of its :data:`HEADER`: ``topic/partition/offset/`` then the first 128 bits (hex) of the
        SHA-256 of its topic, partition, offset, timestamp, key, value and headers, each length-prefixed
        (topic names never hold ``/``). The same row always gives the same fingerprint; another record at the
        same offset (another incident's export) gives another."""
        digest = hashlib.sha256(b"kafka-auditor reproduce v1\0")
        timestamp = -1 if self.timestamp is None else self.timestamp
        digest.update(struct.pack(">iqq", self.partition, self.offset, timestamp))
        for part in (self.topic.encode(), self.key, self.value):
            _put(digest, part)
        digest.update(struct.pack(">i", len(self.headers)))
        for k, v in self.headers:
            _put(digest, k.encode())
            _put(digest, v)
        return f"{self.topic}/{self.partition}/{self.offset}/{digest.hexdigest()[:32]}"


def _put(digest: Any, data: bytes | None) -> None:
    digest.update(struct.pack(">i", -1 if data is None else len(data)))
    if data:
        digest.update(data)


def lost_records_file(path: str | os.PathLike) -> str:
    """``path`` itself, or ``path/lost-records.jsonl`` when ``path`` is the export directory; a missing or
    unreadable file is a :class:`ReproduceError`."""
    text = os.fspath(path)
    if os.path.isdir(text):
        inside = os.path.join(text, FILE_NAME)
        if not os.path.isfile(inside):
            raise ReproduceError(f"{text}: no {FILE_NAME} in this directory (audit --export-lost writes it)")
        text = inside
    if not os.path.exists(text):
        raise ReproduceError(f"{text}: no such file")
    if not os.path.isfile(text):
        raise ReproduceError(f"{text}: not a file")
    if not os.access(text, os.R_OK):
        raise ReproduceError(f"{text}: permission denied")
    return text


def read_records(path: str) -> Iterator[LostRecord]:
    """Every row of ``path`` as a :class:`LostRecord`, in file order; the first line that is not UTF-8, not
    JSON or not a row of the schema stops it with a :class:`ReproduceError` naming the file and line."""
    try:
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                yield parse_line(raw, path, number)
    except OSError as exc:
        raise ReproduceError(f"{path}: {exc.strerror or exc}") from None


def parse_line(raw: bytes, path: str, number: int) -> LostRecord:
    """One line of the file (``number``: 1-based) as a :class:`LostRecord`."""
    where = f"{path} line {number}"
    try:
        row = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReproduceError(f"{where}: not UTF-8 (byte {exc.start} of the line)") from None
    except json.JSONDecodeError as exc:
        raise ReproduceError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    try:
        return _record(row, number)
    except _Invalid as exc:
        raise ReproduceError(f"{where}: {exc} (not a row of lost-records.schema.json)") from None


_DECODED = ("line", "key", "value", "headers")
"""The fields of a :class:`LostRecord` not taken as they are from the row (by their name in camelCase)."""


class _Invalid(ValueError):
    """A row that does not match the schema."""


def _record(row: Any, number: int) -> LostRecord:
    if not isinstance(row, dict):
        raise _Invalid(f"a JSON {type(row).__name__}, not an object")
    missing = [name for name in REQUIRED if name not in row]
    if missing:
        raise _Invalid(f"missing field '{missing[0]}'")
    unknown = sorted(set(row) - set(REQUIRED))
    if unknown:
        raise _Invalid(f"unknown field '{unknown[0]}'")
    for name in ("cluster", "topic"):
        _want(name, row[name], isinstance(row[name], str), "a string")
    _want("topic", row["topic"], bool(row["topic"]) and "/" not in row["topic"], "a topic name")
    for name in ("partition", "offset", "batchBaseOffset", "committedHighWatermark"):
        _want(name, row[name], _is_int(row[name]) and row[name] >= 0, "an integer >= 0")
    for name in ("leaderEpoch", "producerId", "producerEpoch", "baseSequence", "broker"):
        _want(name, row[name], _is_int(row[name]), "an integer")
    timestamp = row["timestamp"]
    _want("timestamp", timestamp, timestamp is None or _is_int(timestamp), "an integer or null")
    kind = row["timestampType"]
    _want("timestampType", kind, kind in TIMESTAMP_TYPES, " or ".join(TIMESTAMP_TYPES))
    flag = row["isTransactional"]
    _want("isTransactional", flag, isinstance(flag, bool), "true or false")
    error = row["error"]
    _want("error", error, error is None or isinstance(error, str), "a string or null")
    holders = row["holders"]
    ok = isinstance(holders, list) and bool(holders) and all(_is_int(b) for b in holders)
    _want("holders", holders, ok, "a non-empty array of broker ids")
    headers = row["headers"]
    _want("headers", headers, isinstance(headers, list), "an array")
    decoded = []
    for i, header in enumerate(headers):
        name = f"headers[{i}]"
        _want(name, header, isinstance(header, dict), "an object")
        if set(header) != {"key", "value", "valueEncoding"}:
            raise _Invalid(f"{name} must have exactly the fields key, value and valueEncoding")
        _want(f"{name}.key", header["key"], isinstance(header["key"], str), "a string")
        decoded.append((header["key"], _bytes(header, "value", f"{name}.value")))
    key, value = _bytes(row, "key", "key"), _bytes(row, "value", "value")
    if row["error"] is None and row["timestamp"] is None:
        raise _Invalid("timestamp is null but error is null too (only an unreadable batch has no timestamp)")
    as_read = {f.name: row[camel(f.name)] for f in fields(LostRecord) if f.name not in _DECODED}
    return LostRecord(line=number, key=key, value=value, headers=tuple(decoded), **as_read)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _want(name: str, value: Any, ok: bool, what: str) -> None:
    """Raise :class:`_Invalid` unless ``ok``: field ``name`` must be ``what``, not ``value``."""
    if not ok:
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:39] + "…"
        raise _Invalid(f"{name} must be {what}, not {shown}")


def _bytes(holder: dict, field: str, name: str) -> bytes | None:
    """The bytes of ``holder[field]`` as ``holder[field + "Encoding"]`` says (None with a null encoding)."""
    text, encoding = holder[field], holder[f"{field}Encoding"]
    if text is None:
        if encoding is not None:
            raise _Invalid(f"{name} is null but its encoding is {json.dumps(encoding)}")
        return None
    _want(name, text, isinstance(text, str), "a string or null")
    if encoding not in BYTE_ENCODINGS:
        raise _Invalid(f"{name}'s encoding must be utf8 or base64, not {json.dumps(encoding)}")
    try:
        return decode_bytes(text, encoding)
    except ValueError as exc:
        raise _Invalid(f"{name} {exc}") from None
