"""``kafka-auditor dump``: decode any Kafka file into a stream of events (no printing here).

Each event is a flat dict with a ``kind`` (``file``, ``batch``, ``record``, ``entry``, ``summary``,
``stop``) and camelCase field names close to ``kafka-dump-log.sh``'s. ``auditor.dump_render``
turns the stream into text, JSON or JSON Lines. Files are opened read-only; nothing is created.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from auditor.layout.filetypes import classify, kraft_snapshot_id, partition_topic, strip_state_suffix
from parsers.errors import ParseError
from parsers.files import open_regular, read_regular, regular_file_problem
from parsers.record_batch import RecordBatch
from parsers.segment import SegmentWalker, base_offset_from_name

MAX_TEXT_FILE = 64 << 20
"""Checkpoint-like files are read whole; anything larger than this is not a Kafka text file."""


@dataclass
class DumpOptions:
    deep: bool = False
    print_values: bool = False
    value_format: str = "auto"  # auto | utf8 | hex
    max_bytes: int | None = None
    decoder: str = "auto"  # auto | metadata | offsets | transaction-log | none

    def __post_init__(self) -> None:
        self.deep = self.deep or self.print_values


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_jsonable(obj):
    """Dataclasses, bytes and containers to JSON-ready values with camelCase keys."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {camel(f.name): to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    return obj


def render_bytes(data: bytes | None, mode: str) -> tuple[str | None, str | None]:
    """(text, encoding) for a key or value: UTF-8 when it decodes (``auto``/``utf8``), else hex."""
    if data is None:
        return None, None
    if mode != "hex":
        try:
            return data.decode("utf-8"), "utf8"
        except UnicodeDecodeError:
            pass
    return data.hex(), "hex"


def batch_event(batch: RecordBatch) -> dict:
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
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": batch.delete_horizon_ms,
        "position": batch.position,
        "timestampType": batch.timestamp_type,
        "baseTimestamp": batch.base_timestamp,
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size,
        "magic": batch.magic,
        "compressCodec": batch.compression_name,
        "crc": batch.crc,
        "computedCrc": batch.computed_crc,
        "isValid": batch.crc_valid and batch.magic == 2,
    }


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


class Dumper:
    """Turns one file into events according to :class:`DumpOptions`."""

    def __init__(self, options: DumpOptions) -> None:
        self.options = options

    def events(self, path: str | Path) -> Iterator[dict]:
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
                for rec in self._records(walker, item, decoder) if is_v2 else self._legacy_records(item):
                    if rec["kind"] == "error":
                        record_errors.append(rec)
                    else:
                        records += 1
                    yield rec
        stop = walker.stop
        yield {
            "kind": "stop",
            "reason": stop.reason,
            "position": stop.position,
            "trailingBytes": stop.trailing_bytes,
            "message": stop.message,
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

    def _records(self, walker: SegmentWalker, batch: RecordBatch, decoder: str) -> Iterator[dict]:
        """Record events of one batch, streamed (the batch is never held whole); an ``error`` event at the
        file byte where decoding failed ends them."""
        payloads = self.options.print_values or batch.is_control
        try:
            for rec in walker.records(batch, payloads=payloads):
                event = {
                    "kind": "record",
                    "offset": rec.offset,
                    "timestampType": batch.timestamp_type,
                    "timestamp": rec.timestamp,
                    "keySize": rec.key_size,
                    "valueSize": rec.value_size,
                    "sequence": rec.sequence,
                    "headerKeys": [h.key for h in rec.headers],
                }
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

    def _control(self, rec) -> dict:
        from parsers.control import decode_control_record

        try:
            ctl = decode_control_record(rec.key, rec.value)
        except ParseError as exc:
            return {"controlError": exc.message}
        return {"controlType": ctl.type_name, "controlData": to_jsonable(ctl.data)}

    def _payload(self, rec, decoder: str) -> dict:
        out: dict = {}
        fmt = self.options.value_format
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
                    out["payload"]["raw"] = md.raw_hex
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        if decoder == "offsets" and rec.key is not None:
            from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value

            try:
                key = decode_offsets_key(rec.key)
                out["key"] = to_jsonable(key)
                value = decode_offsets_value(key, rec.value)
                out["payload"] = "<DELETE>" if value is None else to_jsonable(value)
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        if decoder == "transaction-log" and rec.key is not None:
            from parsers import transaction_state as txn_log

            try:
                key = txn_log.decode_txn_key(rec.key)
                # the decoded objects, and kafka-dump-log's own text of them (what text output prints)
                out["key"] = to_jsonable(key)
                out["keyText"] = txn_log.key_text(key)
                if key.get("data") is None:  # unknown key version: Kafka does not read the value either
                    out["payload"], out["payloadEncoding"] = render_bytes(rec.value, "hex")
                    return out
                value = txn_log.decode_txn_value(rec.value)
                out["payload"] = "<DELETE>" if value is None else to_jsonable(value)
                out["payloadText"] = txn_log.value_text(value)
                return out
            except ParseError as exc:
                out["decodeError"] = exc.message
        key, key_enc = render_bytes(rec.key, fmt)
        value, value_enc = render_bytes(rec.value, fmt)
        out.update({"key": key, "keyEncoding": key_enc, "payload": value, "payloadEncoding": value_enc})
        if rec.headers:
            out["headers"] = [{"key": h.key, "value": render_bytes(h.value, fmt)[0]} for h in rec.headers]
        return out

    def _legacy_records(self, entry) -> Iterator[dict]:
        from parsers import legacy

        inner = legacy.iter_inner_messages(entry)  # streamed: every ParseError comes before a record
        try:
            first = next(inner)
        except ParseError as exc:
            yield {"kind": "error", "position": entry.position, "message": exc.message}
            return
        fmt = self.options.value_format
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
            size = os.fstat(fd).st_size
            if self.options.max_bytes is not None:
                size = min(size, self.options.max_bytes)
            if kind == "txn-index":
                yield from _txn_index_events(lambda pos, n: os.pread(fd, n, pos), size, path)
            else:
                yield from _index_events(fd, size, path, kind)
        except ParseError as exc:
            raise exc.at(path=path) from None
        finally:
            os.close(fd)

    def _read_small(self, path: str) -> bytes:
        size = os.stat(path).st_size
        limit = self.options.max_bytes
        if limit is None and size > MAX_TEXT_FILE:  # indexes never come here: they are read in windows
            raise ParseError(f"{size} bytes is far too large for this kind of file", path=path, offset=0)
        return read_regular(path, limit)

    def _small_file(self, path: str, kind: str) -> Iterator[dict]:
        if kind in _INDEX_KINDS:
            yield from self._index(path, kind)
            return
        data = self._read_small(path)
        try:
            yield from self._decode_small(path, kind, data)
        except ParseError as exc:
            raise exc.at(path=path) from None

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
            yield {"kind": "entry", **to_jsonable(parsed)}
            problems = getattr(parsed, "problems", None)
            if problems:
                raise ParseError("; ".join(problems), offset=0)


_INDEX_KINDS = ("offset-index", "time-index", "txn-index")


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
