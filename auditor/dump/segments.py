"""The events of a log segment or a KRaft snapshot: a batch event per batch, then (``--deep-iteration``)
its records, one ``records`` block per well-formed batch or one event per record, then a ``stop`` event;
a corrupt or torn file raises after the events of what could be read."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator

from auditor.dump.events import (
    CONTROL_MEMO_BYTES,
    attribute_fields,
    batch_event,
    control_fields,
    legacy_event,
    raw_hex,
    record_event,
    render_bytes,
    to_jsonable,
)
from auditor.dump.options import DumpOptions
from auditor.layout.filetypes import kraft_snapshot_id, partition_topic
from auditor.text import encode_bytes
from parsers.errors import ParseError
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    record_rows,
)
from parsers.segment import SegmentWalker, base_offset_from_name

BLOCK_SECTION_BYTES = 1 << 20
"""Records sections (as stored, compressed or not) up to this size are decoded as one ``records`` block."""
BLOCK_DECOMPRESSED_BYTES = 4 << 20
"""Most bytes a block's records section may decompress to; a larger one is streamed record by record."""
BLOCK_RECORDS = 1 << 15
"""Most records in one ``records`` block (its rows are held at once)."""


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


class SegmentDump:
    """The events of one segment or snapshot file, as ``options`` asks (``blocks``: a well-formed batch's
    records as one ``records`` block)."""

    def __init__(self, options: DumpOptions, *, blocks: bool = True) -> None:
        self.options = options
        self.blocks = blocks

    def events(self, path: str, kind: str) -> Iterator[dict]:
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
        _, control, timestamp_type, _, _ = attribute_fields(batch.attributes)
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
            return control_fields.__wrapped__(key, value)
        return copy.deepcopy(control_fields(key, value))

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
                out["key"] = raw_hex(to_jsonable(key))
                value = decode_offsets_value(key, rec.value)
                out["payload"] = "<DELETE>" if value is None else raw_hex(to_jsonable(value))
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        if decoder == "transaction-log" and rec.key is not None:
            from parsers import transaction_state as txn_log

            try:
                key = txn_log.decode_txn_key(rec.key)
                # the decoded objects, and kafka-dump-log's own text of them (what text output prints)
                out["key"] = raw_hex(to_jsonable(key))
                out["keyText"] = txn_log.key_text(key)
                if key.get("data") is None:  # unknown key version: Kafka does not read the value either
                    out["payload"], out["payloadEncoding"] = render_bytes(rec.value, fmt)
                    return out
                value = txn_log.decode_txn_value(rec.value)
                out["payload"] = "<DELETE>" if value is None else raw_hex(to_jsonable(value))
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
