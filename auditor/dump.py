"""``kafka-auditor dump``: decode any Kafka file into a stream of events (no printing here).

Each event is a flat dict with a ``kind`` (``file``, ``summary``, ``batch``, ``record``, ``entry``,
``stop``, ``error``; ``auditor.dump_render.guarded`` adds ``failed``) and camelCase field names close to
``kafka-dump-log.sh``'s; bytes are UTF-8 text or base64 with the encoding named beside them
(``auditor.text.encode_bytes``); the shape of every event is ``auditor/schemas/dump-events.schema.json``.
``auditor.dump_render`` turns the stream into text, JSON or JSON Lines. Files are opened read-only;
nothing is created.

``Dumper.events`` yields one ``record`` event per record. ``Dumper.stream``, what the command renders, gives
the records of a well-formed batch as one ``records`` block instead (rows decoded at once by
``parsers.record_batch.record_rows``); ``record_events`` expands a block into the very ``record`` events the
per-record path yields (``tests/test_dump_fastpath.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from auditor.layout.filetypes import classify, kraft_snapshot_id, partition_topic, strip_state_suffix
from auditor.text import camel, encode_bytes
from parsers.errors import ParseError
from parsers.files import open_regular, read_regular, regular_file_problem
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    RecordRow,
    record_rows,
)
from parsers.segment import SegmentWalker, base_offset_from_name

MAX_TEXT_FILE = 64 << 20
"""Checkpoint-like files are read whole; anything larger than this is not a Kafka text file."""
BLOCK_SECTION_BYTES = 1 << 20
"""Records sections (as stored, compressed or not) up to this size are decoded as one ``records`` block."""
BLOCK_DECOMPRESSED_BYTES = 4 << 20
"""Most bytes a block's records section may decompress to; a larger one is streamed record by record."""
BLOCK_RECORDS = 1 << 15
"""Most records in one ``records`` block (its rows are held at once)."""


@dataclass
class DumpOptions:
    deep: bool = False
    print_values: bool = False
    encoding: str = "auto"  # auto (utf8 when valid UTF-8, else base64) | base64
    max_bytes: int | None = None
    decoder: str = "auto"  # auto | metadata | offsets | transaction-log | none

    def __post_init__(self) -> None:
        self.deep = self.deep or self.print_values


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


def _raw_hex(decoded):
    """A decoder's result whose undecoded rest is the parsers' ``"raw"`` hex text, with that rest in the
    one byte encoding instead (``raw`` + ``rawEncoding``)."""
    if isinstance(decoded, dict) and isinstance(decoded.get("raw"), str):
        out = dict(decoded)
        out["raw"], out["rawEncoding"] = encode_bytes(bytes.fromhex(decoded["raw"]))
        return out
    return decoded


def _pairs_list(raw: dict) -> list[dict]:
    """A metadata file's own key/value map (``meta.properties``, ``quorum-state``) as ``[{key, value}]``:
    the file's names kept exactly, every JSON key of the output camelCase."""
    return [{"key": str(k), "value": v} for k, v in raw.items()]


@functools.lru_cache(maxsize=256)
def _attribute_fields(attributes: int) -> tuple[bool, bool, str, str, bool]:
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
    transactional, control, timestamp_type, codec, horizon = _attribute_fields(batch.attributes)
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
def _control_fields(key: bytes | None, value: bytes | None) -> dict:
    """The event fields of a control record; memoized, as transaction markers repeat the same bytes (a copy
    goes into each event)."""
    from parsers.control import decode_control_record

    try:
        ctl = decode_control_record(key, value)
    except ParseError as exc:
        return {"controlError": exc.message}
    return {"controlType": ctl.type_name, "controlData": to_jsonable(ctl.data)}


class _Window:
    """``read(position, size)`` of a file served from one cached window of :data:`BLOCK_SECTION_BYTES` or
    more (a read call per small batch costs more than decoding its records)."""

    __slots__ = ("_read", "_start", "_data")

    def __init__(self, read: Callable[[int, int], bytes]) -> None:
        self._read = read
        self._start = 0
        self._data = b""

    def read(self, position: int, size: int) -> bytes:
        offset = position - self._start
        if offset < 0 or offset + size > len(self._data):
            self._data = self._read(position, max(size, BLOCK_SECTION_BYTES))
            self._start, offset = position, 0
        return self._data[offset : offset + size]


class Dumper:
    """Turns one file into events according to :class:`DumpOptions`; ``blocks=False`` decodes every batch
    record by record (the reference the block path is tested against)."""

    def __init__(self, options: DumpOptions, *, blocks: bool = True) -> None:
        self.options = options
        self.blocks = blocks and not options.print_values

    def events(self, path: str | Path) -> Iterator[dict]:
        """The events of one file, one ``record`` event per record."""
        return expand_blocks(self.stream(path))

    def stream(self, path: str | Path) -> Iterator[dict]:
        """The events of one file, the records of a well-formed batch in one ``records`` block (``rows``:
        ``(offset, timestamp, keySize, valueSize, sequence, headerKeys)``, with the batch's
        ``timestampType``)."""
        path = str(path)
        kind = classify(path)
        yield {
            "kind": "file",
            "path": path,
            "fileType": kind,
            "state": strip_state_suffix(Path(path).name)[1],
        }
        if kind is None:
            raise ParseError("not a Kafka file this tool knows (by its name)", path=path)
        if (problem := regular_file_problem(path)) is not None:
            raise ParseError(problem, path=path, offset=0)
        if kind in ("log", "kraft-snapshot"):
            yield from self._log(path, kind)
        else:
            yield from self._small_file(path, kind)

    # ------------------------------------------------------------------------------- segments

    def _log(self, path: str, kind: str) -> Iterator[dict]:
        opts = self.options
        if kind == "kraft-snapshot":
            snap = kraft_snapshot_id(path)
            yield {
                "kind": "summary",
                "snapshotEndOffset": snap[0] if snap else None,
                "snapshotEpoch": snap[1] if snap else None,
                "bootstrap": snap is None,
            }
        else:
            yield {"kind": "summary", "logStartingOffset": base_offset_from_name(path)}
        decoder = self._decoder_for(path, kind)
        walker = SegmentWalker(path, max_bytes=opts.max_bytes, stop_on_invalid=False)
        window = _Window(walker.read)
        batches = valid = records = 0
        first_bad: dict | None = None
        record_errors: list[dict] = []
        for item in walker:
            batches += 1
            is_v2 = isinstance(item, RecordBatch)
            event = batch_event(item) if is_v2 else legacy_event(item)
            valid += event["isValid"]
            if not event["isValid"] and first_bad is None:
                first_bad = event
            yield event
            if opts.deep:
                block = self._record_block(window.read, item) if is_v2 and self.blocks else None
                if block is not None:
                    records += len(block["rows"])
                    yield block
                    continue
                for rec in self._records(walker, item, decoder) if is_v2 else self._legacy_records(item):
                    if rec["kind"] == "error":
                        record_errors.append(rec)
                    else:
                        records += 1
                    yield rec
        stop = walker.stop
        # a limit that falls on an entry boundary ends the walk as "end": the rest of the file is unread
        reason = "max-bytes" if stop.reason == "end" and stop.position < walker.file_size else stop.reason
        yield {
            "kind": "stop",
            "reason": reason,
            "position": stop.position,
            "trailingBytes": stop.trailing_bytes,
            "message": stop.message,
            "fileSize": walker.file_size,
            "batches": batches,
            "validBatches": valid,
            "records": records if opts.deep else None,
            "undecodableBatches": len(record_errors) if opts.deep else None,
        }
        if not stop.clean:
            raise ParseError(stop.message or stop.reason, path=path, offset=stop.position)
        if first_bad is not None:
            if first_bad["magic"] > 2:
                why = f"unknown magic {first_bad['magic']}"
            else:
                why = (
                    f"Record is corrupt (stored crc = {first_bad['crc']}, "
                    f"computed crc = {first_bad['computedCrc']})"
                )
            raise ParseError(
                f"{why}; {batches - valid} of {batches} batches invalid",
                path=path,
                offset=first_bad["position"],
            )
        if record_errors:
            first = record_errors[0]
            more = f" ({len(record_errors)} batches do not decode)" if len(record_errors) > 1 else ""
            raise ParseError(first["message"] + more, path=path, offset=first["position"])

    def _decoder_for(self, path: str, kind: str) -> str:
        chosen = self.options.decoder
        if chosen != "auto":
            return chosen
        if kind == "kraft-snapshot":
            return "metadata"
        topic = partition_topic(path)
        if topic == "__cluster_metadata":
            return "metadata"
        if topic == "__consumer_offsets":
            return "offsets"
        if topic == "__transaction_state":
            return "transaction-log"
        return "none"

    @staticmethod
    def _record_block(read: Callable[[int, int], bytes], batch: RecordBatch) -> dict | None:
        """The records of a data batch (its file bytes through ``read(position, size)``) as one ``records``
        block, when its section is small enough to hold and decodes whole; None otherwise (``_records`` then
        streams them, and says where decoding stops)."""
        count = batch.records_count
        size = batch.batch_length - (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
        _, control, timestamp_type, _, _ = _attribute_fields(batch.attributes)
        if control or not 0 <= count <= BLOCK_RECORDS or size > BLOCK_SECTION_BYTES:
            return None
        section = read(batch.position + RECORD_BATCH_OVERHEAD, size)
        if len(section) != size:
            return None
        codec = batch.attributes & ATTR_COMPRESSION_MASK
        if codec:
            from parsers import codecs

            try:
                section = codecs.decompress(codec, section, limit=BLOCK_DECOMPRESSED_BYTES)
            except ParseError:
                return None
        rows = record_rows(batch, section)
        if rows is None:
            return None
        return {"kind": "records", "timestampType": timestamp_type, "rows": rows}

    def _records(self, walker: SegmentWalker, batch: RecordBatch, decoder: str) -> Iterator[dict]:
        """Record events of one batch, streamed (the batch is never held whole); an ``error`` event at the
        file byte where decoding failed ends them."""
        payloads = self.options.print_values or batch.is_control
        try:
            timestamp_type = batch.timestamp_type
            for rec in walker.records(batch, payloads=payloads):
                row = (rec.offset, rec.timestamp, rec.key_size, rec.value_size, rec.sequence, ())
                event = record_event(timestamp_type, row)
                event["headerKeys"] = [h.key for h in rec.headers]
                if batch.is_control:
                    event.update(self._control(rec))
                elif self.options.print_values:
                    event.update(self._payload(rec, decoder))
                yield event
        except ParseError as exc:
            yield {
                "kind": "error",
                "position": exc.offset,
                "batchPosition": batch.position,
                "baseOffset": batch.base_offset,
                "message": f"records of the batch at position {batch.position} (offset {batch.base_offset}) "
                f"do not decode at byte {exc.offset}: {exc.message}",
            }

    @staticmethod
    def _control(rec) -> dict:
        key, value = rec.key, rec.value
        if len(key or b"") + len(value or b"") > CONTROL_MEMO_BYTES:
            return _control_fields.__wrapped__(key, value)
        return copy.deepcopy(_control_fields(key, value))

    def _payload(self, rec, decoder: str) -> dict:
        out: dict = {}
        fmt = self.options.encoding
        if decoder == "metadata" and rec.value is not None:
            from parsers.metadata import decode_metadata_record

            try:
                md = decode_metadata_record(rec.value)
                out["payload"] = {
                    "type": md.type_name,
                    "version": md.version,
                    "data": to_jsonable(md.data) if md.data is not None else None,
                }
                if md.raw_hex is not None:
                    out["payload"]["apiKey"] = md.api_key
                    payload = out["payload"]
                    payload["raw"], payload["rawEncoding"] = encode_bytes(bytes.fromhex(md.raw_hex))
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        if decoder == "offsets" and rec.key is not None:
            from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value

            try:
                key = decode_offsets_key(rec.key)
                out["key"] = _raw_hex(to_jsonable(key))
                value = decode_offsets_value(key, rec.value)
                out["payload"] = "<DELETE>" if value is None else _raw_hex(to_jsonable(value))
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        if decoder == "transaction-log" and rec.key is not None:
            from parsers import transaction_state as txn_log

            try:
                key = txn_log.decode_txn_key(rec.key)
                # the decoded objects, and kafka-dump-log's own text of them (what text output prints)
                out["key"] = _raw_hex(to_jsonable(key))
                out["keyText"] = txn_log.key_text(key)
                if key.get("data") is None:  # unknown key version: Kafka does not read the value either
                    out["payload"], out["payloadEncoding"] = render_bytes(rec.value, fmt)
                    return out
                value = txn_log.decode_txn_value(rec.value)
                out["payload"] = "<DELETE>" if value is None else _raw_hex(to_jsonable(value))
                out["payloadText"] = txn_log.value_text(value)
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        key, key_enc = render_bytes(rec.key, fmt)
        value, value_enc = render_bytes(rec.value, fmt)
        out.update({"key": key, "keyEncoding": key_enc, "payload": value, "payloadEncoding": value_enc})
        if rec.headers:
            out["headers"] = headers = []
            for h in rec.headers:
                text, encoding = render_bytes(h.value, fmt)
                headers.append({"key": h.key, "value": text, "valueEncoding": encoding})
        return out

    def _legacy_records(self, entry) -> Iterator[dict]:
        from parsers import legacy

        inner = legacy.iter_inner_messages(entry)  # streamed: every ParseError comes before a record
        try:
            first = next(inner)
        except ParseError as exc:
            yield {"kind": "error", "position": entry.position, "message": exc.message}
            return
        fmt = self.options.encoding
        for msg in itertools.chain((first,), inner):
            event = {
                "kind": "record",
                "offset": msg.offset,
                "timestampType": msg.timestamp_type,
                "timestamp": msg.timestamp,
                "keySize": -1 if msg.key is None else len(msg.key),
                "valueSize": -1 if msg.value is None else len(msg.value),
                "isValid": msg.crc_valid,
                "crc": msg.crc,
            }
            if self.options.print_values:
                key, key_enc = render_bytes(msg.key, fmt)
                value, value_enc = render_bytes(msg.value, fmt)
                event.update(
                    {"key": key, "keyEncoding": key_enc, "payload": value, "payloadEncoding": value_enc}
                )
            yield event

    # ---------------------------------------------------------------------- indexes and text files

    def _index(self, path: str, kind: str) -> Iterator[dict]:
        """An ``.index`` / ``.timeindex`` / ``.txnindex`` streamed in windows (``parsers.indexes``): memory
        is one window whatever the file size; ``--max-bytes`` limits the bytes read."""
        fd = open_regular(path)
        try:
            file_size = size = os.fstat(fd).st_size
            limit = self.options.max_bytes
            if limit is not None and limit < size:  # whole entries only: a cut entry is not corruption
                size = limit - limit % _INDEX_ENTRY_SIZE[kind]
            if kind == "txn-index":
                events = _txn_index_events(lambda pos, n: os.pread(fd, n, pos), size, path)
            else:
                events = _index_events(fd, size, path, kind)
            yield from _limited(events, size, file_size)
        except ParseError as exc:
            raise exc.at(path=path) from None
        finally:
            os.close(fd)

    def _read_small(self, path: str) -> tuple[bytes, int]:
        """The file's bytes (up to ``--max-bytes``) and its size."""
        size = os.stat(path).st_size
        limit = self.options.max_bytes
        if limit is None and size > MAX_TEXT_FILE:  # indexes never come here: they are read in windows
            raise ParseError(f"{size} bytes is far too large for this kind of file", path=path, offset=0)
        return read_regular(path, limit), size

    def _small_file(self, path: str, kind: str) -> Iterator[dict]:
        if kind in _INDEX_KINDS:
            yield from self._index(path, kind)
            return
        data, size = self._read_small(path)
        try:
            if len(data) < size:  # --max-bytes cut it: judged on what the cut leaves whole
                events = self._decode_cut(path, kind, data, size)
            else:
                events = self._decode_small(path, kind, data)
            yield from _limited(events, len(data), size)
        except ParseError as exc:
            raise exc.at(path=path) from None

    def _decode_cut(self, path: str, kind: str, data: bytes, size: int) -> Iterator[dict]:
        """Events of a small file of ``size`` bytes of which ``--max-bytes`` read only ``data``.

        What the cut leaves whole is decoded and judged as usual: corruption there still raises. What the
        cut took (a line, a JSON object, snapshot entries, keys that may come later) cannot be judged, so a
        failure it explains is no error (the ``stop`` event with reason ``max-bytes`` says the file was cut).
        """
        if kind == "producer-snapshot":
            yield from _cut_producer_snapshot(data, size)
        elif kind in ("offset-checkpoint", "leader-epoch-checkpoint"):
            yield from self._cut_checkpoint(path, kind, _whole_lines(data))
        elif kind == "partition-metadata":
            whole = _whole_lines(data)
            try:
                yield from self._decode_small(path, kind, whole)
            except ParseError as exc:
                if exc.offset is None or exc.offset < len(whole):  # a whole line is wrong
                    raise
        elif kind == "meta-properties":
            from parsers.dirfiles import load_java_properties, parse_meta_properties

            whole = _closed_properties(_whole_lines(data))
            load_java_properties(whole.decode("latin-1"))  # a malformed \uXXXX escape stays malformed
            try:
                parsed = parse_meta_properties(whole, path)
            except ParseError:
                return  # a missing or wrong key: a later line may add it or override it (the last one wins)
            entry = to_jsonable(parsed)  # problems are shown, not raised: later lines may settle them
            entry["raw"] = _pairs_list(entry["raw"])
            yield {"kind": "entry", **entry}
        elif kind == "quorum-state" and not _LINE_BREAK.search(data):
            # Kafka reads the first line only; here it is cut: a JSON object cut short is not corrupt
            try:
                yield from self._decode_small(path, kind, data)
            except ParseError:
                if not _json_cut_short(data):
                    raise
        elif kind == "quorum-state":  # the first line, the one Kafka reads, is whole
            yield from self._decode_small(path, kind, _whole_lines(data))
        else:  # .kafka_cleanshutdown: Kafka tolerates any content (no broker epoch), so it never fails
            yield from self._decode_small(path, kind, data)

    def _cut_checkpoint(self, path: str, kind: str, whole: bytes) -> Iterator[dict]:
        """A checkpoint's whole lines: a line that does not parse is corrupt; fewer entry lines than the
        declared count is the cut (the count in the summary stays the declared one)."""
        try:
            yield from self._decode_small(path, kind, whole)  # parsed before the first event
            return
        except ParseError as exc:
            error = exc
        from parsers.checkpoints import _java_parse_int  # Integer.parseInt, as Kafka reads the count

        lines = _LINE_BREAK.split(whole)[:-1]  # whole ends with a line break
        if len(lines) < 2:
            raise error
        count_at = _LINE_BREAK.search(whole).end()
        count_text = lines[1]
        declared = _java_parse_int(count_text.decode("utf-8", "replace"))
        found = len(lines) - 2
        if error.offset != count_at or declared is None or not found < declared:
            raise error  # a bad line, or more entries than declared before the cut
        # the same file with the count of the lines read, zero-padded: every byte position stays
        padded = str(found).zfill(len(count_text)).encode()
        for event in self._decode_small(
            path, kind, whole[:count_at] + padded + whole[count_at + len(padded) :]
        ):
            if event["kind"] == "summary":
                event["count"] = declared
            yield event

    def _decode_small(self, path: str, kind: str, data: bytes) -> Iterator[dict]:
        if kind == "producer-snapshot":
            from parsers.producer_snapshot import read_producer_snapshot

            snap = read_producer_snapshot(data)
            yield {"kind": "summary", **_summary(snap, exclude=("entries",))}
            for entry in snap.entries:
                yield {"kind": "entry", **to_jsonable(entry)}
            if not snap.crc_valid:
                raise ParseError(
                    f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snap.crc}. "
                    f"Computed crc: {snap.computed_crc}",
                    offset=2,
                )
        elif kind == "offset-checkpoint":
            from parsers.checkpoints import parse_offset_checkpoint

            ckpt = parse_offset_checkpoint(data, path)
            yield {
                **_summary(ckpt, exclude=("entries", "line_offsets", "kind")),
                "kind": "summary",
                "checkpointKind": ckpt.kind,
            }
            for topic, partition, offset in ckpt.entries:
                yield {"kind": "entry", "topic": topic, "partition": partition, "offset": offset}
        elif kind == "leader-epoch-checkpoint":
            from parsers.checkpoints import parse_leader_epoch_checkpoint

            ckpt = parse_leader_epoch_checkpoint(data, path)
            yield {"kind": "summary", **_summary(ckpt, exclude=("entries", "line_offsets"))}
            for epoch, start in ckpt.entries:
                yield {"kind": "entry", "epoch": epoch, "startOffset": start}
        else:
            from parsers import dirfiles

            reader = {
                "partition-metadata": dirfiles.parse_partition_metadata,
                "meta-properties": dirfiles.parse_meta_properties,
                "quorum-state": dirfiles.parse_quorum_state,
                "clean-shutdown": dirfiles.parse_clean_shutdown,
            }[kind]
            parsed = reader(data, path)
            entry = to_jsonable(parsed)
            if isinstance(entry.get("raw"), dict):
                entry["raw"] = _pairs_list(entry["raw"])
            yield {"kind": "entry", **entry}
            problems = getattr(parsed, "problems", None)
            if problems:
                raise ParseError("; ".join(problems), offset=0)


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
"""``BufferedReader.readLine``'s line terminators (checkpoints, partition.metadata, quorum-state)."""


def _whole_lines(data: bytes) -> bytes:
    """``data`` up to its last line terminator: the lines a cut left whole."""
    last = data.rfind(b"\n")
    last = max(last, data.rfind(b"\r"))
    return data[: last + 1]


def _closed_properties(whole: bytes) -> bytes:
    """Whole lines of a properties file up to the end of its last logical line: a line that a backslash
    continues onto a line the cut took is dropped (``Properties.LineReader``: a comment is never
    continued; ISO-8859-1, so one character per byte)."""
    end, continued = 0, False
    for line in _PHYSICAL_LINE.finditer(whole.decode("latin-1")):
        segment = line.group(1).lstrip(" \t\f")
        if not continued and (not segment or segment[0] in "#!"):
            end = line.end()
            continue
        continued = (len(segment) - len(segment.rstrip("\\"))) % 2 == 1
        if not continued:
            end = line.end()
    return whole[:end]


_PHYSICAL_LINE = re.compile(r"([^\r\n]*)(?:\r\n|\r|\n)")

_JSON_CUT_REST = re.compile(r"-|t(r(u)?)?|f(a(l(s)?)?)?|n(u(l)?)?|\.|[eE][+-]?|u[0-9a-fA-F]{0,4}")
"""What is left where ``json`` stops when a value was cut: part of a literal, a number or a ``\\u`` escape."""


def _json_cut_short(data: bytes) -> bool:
    """Whether ``data`` is the start of a JSON value that a cut ended: it decodes as UTF-8 up to a cut
    character and ``json`` fails only at the end of it (an unterminated string, or a token cut short)."""
    import codecs
    import json

    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    body = text.lstrip(" \t")
    try:
        json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string"):
            return True
        rest = body[exc.pos :].rstrip(" \t")
        return not rest or _JSON_CUT_REST.fullmatch(rest) is not None
    except RecursionError:
        return False
    return False  # a whole JSON value: what fails is in it


def _cut_producer_snapshot(data: bytes, size: int) -> Iterator[dict]:
    """A producer snapshot of ``size`` bytes cut to ``data``: the header is checked against the file size
    (Kafka's schema validation and version check), the whole entries read are shown; the CRC covers the
    whole file, so it is not checked (``computedCrc`` and ``crcValid`` null)."""
    from parsers import producer_snapshot as ps

    if len(data) < ps.HEADER_SIZE:
        return  # the header itself is cut
    version = int.from_bytes(data[:2], "big", signed=True)
    count = int.from_bytes(data[ps.CRC_START : ps.HEADER_SIZE], "big", signed=True)
    need = ps.HEADER_SIZE + count * ps.ENTRY_SIZE
    if count < 0:
        ps.read_producer_snapshot(data)  # Kafka's message for a negative array size
    if need > size:
        raise ParseError(
            f"Snapshot failed schema validation: Error reading field 'producer_entries': {count} entries "
            f"of {ps.ENTRY_SIZE} bytes need {need - ps.HEADER_SIZE} bytes, only {size - ps.HEADER_SIZE} "
            "bytes available",
            offset=ps.CRC_START,
        )
    if need < size:
        raise ParseError(f"Snapshot has {size - need} trailing bytes after its {count} entries", offset=need)
    if version != ps.PRODUCER_SNAPSHOT_VERSION:
        raise ParseError(f"Snapshot contained an unknown file version {version}", offset=0)
    read = (len(data) - ps.HEADER_SIZE) // ps.ENTRY_SIZE
    head = data[: ps.CRC_START] + read.to_bytes(4, "big", signed=True)
    snap = ps.read_producer_snapshot(head + data[ps.HEADER_SIZE : ps.HEADER_SIZE + read * ps.ENTRY_SIZE])
    yield {"kind": "summary", **_summary(snap, exclude=("entries",)), "computedCrc": None, "crcValid": None}
    for entry in snap.entries:
        yield {"kind": "entry", **to_jsonable(entry)}


_INDEX_KINDS = ("offset-index", "time-index", "txn-index")
_INDEX_ENTRY_SIZE = {"offset-index": 8, "time-index": 12, "txn-index": 34}
"""Bytes per entry (``OffsetIndex``, ``TimeIndex``, ``AbortedTxn``): ``--max-bytes`` reads whole entries."""


def _limited(events: Iterator[dict], shown: int, file_size: int) -> Iterator[dict]:
    """``events`` of a file read up to byte ``shown``, then, when that is short of the whole file
    (``--max-bytes``), a ``stop`` event saying so; it also precedes an error the cut may have caused."""
    if shown >= file_size:
        yield from events
        return
    stop = {
        "kind": "stop",
        "reason": "max-bytes",
        "position": shown,
        "trailingBytes": 0,
        "message": None,
        "fileSize": file_size,
    }
    try:
        yield from events
    except ParseError:
        yield stop
        raise
    yield stop


def _index_events(fd: int, size: int, path: str, kind: str) -> Iterator[dict]:
    """Summary, entries and trailer of an offset or time index in two windowed passes: the first finds the
    shape (the summary comes first), the second streams the real entries and stops after the last one."""
    from parsers.indexes import OFFSET_INDEX, TIME_INDEX, IndexScan

    spec = OFFSET_INDEX if kind == "offset-index" else TIME_INDEX
    base = base_offset_from_name(path)
    shape_scan = IndexScan.of_fd(spec, fd, size=size)
    for _ in shape_scan.prefix():
        pass
    shape = shape_scan.shape
    assert shape is not None
    yield {
        "kind": "summary",
        "baseOffset": base,
        "size": shape.size,
        "slots": shape.slots,
        "trailingBytes": shape.trailing_bytes,
        "paddingSlots": shape.padding_slots,
        "garbageAfterPadding": shape.garbage_after_padding,
        "preallocated": shape.preallocated,
    }
    left = shape.entries
    if left:
        for table in IndexScan.of_fd(spec, fd, size=size).prefix():
            rows = table[:left]
            rel = [base + r for r in rows["relative_offset"].tolist()]  # Python ints: exact, never wrapped
            if spec is OFFSET_INDEX:
                for offset, position in zip(rel, rows["position"].tolist(), strict=True):
                    yield {"kind": "entry", "offset": offset, "position": position}
            else:
                for timestamp, offset in zip(rows["timestamp"].tolist(), rel, strict=True):
                    yield {"kind": "entry", "timestamp": timestamp, "offset": offset}
            left -= len(rows)
            if not left:
                break
    _index_trailer(shape, spec.dtype.itemsize)


def _txn_index_events(read, size: int, path: str) -> Iterator[dict]:
    """Summary and entries of a transaction index, streamed; a bad version ends them with a ParseError at
    that entry."""
    from parsers.indexes import ABORTED_TXN_SIZE, iter_txn_index, txn_entries

    yield {"kind": "summary", "size": size, "trailingBytes": size % ABORTED_TXN_SIZE}
    for table in iter_txn_index(read, size, path):
        for entry in txn_entries(table):
            yield {"kind": "entry", **to_jsonable(entry)}


def _index_trailer(index, entry_size: int) -> None:
    """Raise for what Kafka's index sanity check rejects, after the readable entries were shown."""
    if index.trailing_bytes:
        raise ParseError(
            f"index is corrupt: found {index.slots * entry_size + index.trailing_bytes} bytes which "
            f"is not a multiple of {entry_size}",
            offset=index.slots * entry_size,
        )
    if index.garbage_after_padding is not None:
        raise ParseError(
            "non-zero bytes after the zero padding that ends the real entries",
            offset=index.garbage_after_padding,
        )


def _summary(obj, exclude: tuple[str, ...] = ()) -> dict:
    """The dataclass ``obj`` as JSON-ready fields without ``exclude`` (never converted: they can hold
    millions of entries)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return {}
    return {
        camel(f.name): to_jsonable(getattr(obj, f.name))
        for f in dataclasses.fields(obj)
        if f.name not in exclude
    }
