"""Render ``auditor.dump`` event streams as text (``kafka-dump-log.sh`` style), JSON or JSON Lines.

All three stream: memory stays constant however large the segment. A ``records`` block
(``Dumper.stream``) is written in one piece, byte for byte what its ``record`` events would give
(``tests/dump/test_segments.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii
from typing import TextIO

from auditor.text import visible
from parsers.errors import ParseError

DUMP_JSON_VERSION = 2
"""2: bytes as ``utf8``/``base64`` flagged beside them (was ``utf8``/``hex``); ``fileSize`` in ``stop``;
``failed`` names its byte ``position`` (was ``offset``), as every other event does."""


def _bool(value) -> str:
    return "true" if value else "false"


def _batch_head(e: dict) -> tuple:
    """The values a v2 batch line and a v2 batch object both start with, baseOffset to isControl."""
    return (
        e["baseOffset"],
        e["lastOffset"],
        e["count"],
        e["baseSequence"],
        e["lastSequence"],
        e["producerId"],
        e["producerEpoch"],
        e["partitionLeaderEpoch"],
        "true" if e["isTransactional"] else "false",
        "true" if e["isControl"] else "false",
    )


def _batch_line(e: dict) -> str:
    if e.get("magic", 2) < 2:
        return (
            f"offset: {e['lastOffset']} position: {e['position']} {e['timestampType']}: {e['maxTimestamp']} "
            f"size: {e['size']} magic: {e['magic']} compresscodec: {e['compressCodec']} crc: {e['crc']} "
            f"isvalid: {_bool(e['isValid'])}"
        )
    horizon = e["deleteHorizonMs"]
    return _BATCH_LINE % (
        *_batch_head(e),
        "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]",
        e["position"],
        e["timestampType"],
        e["maxTimestamp"],
        e["size"],
        e["magic"],
        e["compressCodec"],
        e["crc"],
        "true" if e["isValid"] else "false",
    )


_BATCH_LINE = (
    "baseOffset: %s lastOffset: %s count: %s baseSequence: %s lastSequence: %s producerId: %s "
    "producerEpoch: %s partitionLeaderEpoch: %s isTransactional: %s isControl: %s deleteHorizonMs: %s "
    "position: %s %s: %s size: %s magic: %s compresscodec: %s crc: %s isvalid: %s"
)
"""A v2 batch line of ``kafka-dump-log.sh`` (one %-format: faster than an f-string of dict lookups)."""


def _batch_object(e: dict) -> str:
    """``_compact(e)`` of a v2 batch event (``auditor.dump.events.batch_event``: its keys in its order),
    without the generic encoder."""
    horizon = e["deleteHorizonMs"]
    computed = e["computedCrc"]
    return _BATCH_OBJECT % (
        *_batch_head(e),
        "null" if horizon is None else horizon,
        e["position"],
        encode_basestring_ascii(e["timestampType"]),
        e["baseTimestamp"],
        e["maxTimestamp"],
        e["size"],
        e["magic"],
        encode_basestring_ascii(e["compressCodec"]),
        e["crc"],
        "null" if computed is None else computed,
        "true" if e["isValid"] else "false",
    )


_BATCH_OBJECT = (
    '"kind":"batch","baseOffset":%d,"lastOffset":%d,"count":%d,"baseSequence":%d,"lastSequence":%d,'
    '"producerId":%d,"producerEpoch":%d,"partitionLeaderEpoch":%d,"isTransactional":%s,"isControl":%s,'
    '"deleteHorizonMs":%s,"position":%d,"timestampType":%s,"baseTimestamp":%d,"maxTimestamp":%d,"size":%d,'
    '"magic":%d,"compressCodec":%s,"crc":%d,"computedCrc":%s,"isValid":%s}'
)
"""The members of a v2 batch event after its opening brace (and ``"file"`` in JSON Lines)."""


def _record_line(e: dict) -> str:
    parts = [
        f"| offset: {e['offset']} {e['timestampType']}: {e['timestamp']} keySize: {e['keySize']} "
        f"valueSize: {e['valueSize']}"
    ]
    if "sequence" in e:
        parts.append(f"sequence: {e['sequence']} headerKeys: [{','.join(e['headerKeys'])}]")
    if "isValid" in e:
        parts.append(f"isValid: {_bool(e['isValid'])} crc: {e['crc']}")
    if "controlType" in e:
        data = e.get("controlData") or {}
        if e["controlType"] in ("COMMIT", "ABORT"):
            parts.append(f"endTxnMarker: {e['controlType']} coordinatorEpoch: {data.get('coordinatorEpoch')}")
        else:
            parts.append(f"controlType: {e['controlType']} {json.dumps(data, separators=(',', ':'))}")
    if "controlError" in e:
        parts.append(f"controlError: {e['controlError']}")
    if "decodeError" in e:
        parts.append(f"decodeError: {e['decodeError']}")
    for name in ("key", "payload"):
        if f"{name}Text" in e:  # a decoder's kafka-dump-log text form
            parts.append(f"{name}: {e[f'{name}Text']}")
        elif name in e and e[name] is not None:
            value = e[name]
            if not isinstance(value, str):
                value = json.dumps(value, separators=(",", ":"))
            elif e.get(f"{name}Encoding") == "base64":
                value = "base64:" + value
            parts.append(f"{name}: {value}")
    if e.get("headers"):
        parts.append("headers: " + json.dumps(e["headers"], separators=(",", ":")))
    return " ".join(parts)


def _record_lines(block: dict) -> str:
    """The text lines of a ``records`` block, as ``_record_line`` writes each of its records (only header
    keys come from the data, so only they can hold characters to escape)."""
    ts_type = block["timestampType"]
    return "".join(
        [
            f"| offset: {offset} {ts_type}: {timestamp} keySize: {key_size} valueSize: {value_size} "
            f"sequence: {sequence} headerKeys: [{visible(','.join(keys)) if keys else ''}]\n"
            for offset, timestamp, key_size, value_size, sequence, keys in block["rows"]
        ]
    )


def _record_objects(block: dict, head: str) -> list[str]:
    """The compact JSON objects of a ``records`` block's ``record`` events, each opened by ``head`` (``{``,
    or ``{"file":…,`` for JSON Lines)."""
    ts_type = encode_basestring_ascii(block["timestampType"])
    return [
        f'{head}"kind":"record","offset":{offset},"timestampType":{ts_type},"timestamp":{timestamp},'
        f'"keySize":{key_size},"valueSize":{value_size},"sequence":{sequence},'
        f'"headerKeys":[{",".join(map(encode_basestring_ascii, keys))}]}}'
        for offset, timestamp, key_size, value_size, sequence, keys in block["rows"]
    ]


_compact = json.JSONEncoder(separators=(",", ":")).encode
"""``json.dumps(value, separators=(",", ":"))`` without building an encoder per call."""


def _pairs(e: dict) -> str:
    return " ".join(
        f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in e.items() if k != "kind"
    )


WRITE_CHUNK = 1 << 16
"""Characters of output joined before one ``write`` (a write per line costs more than the line)."""


def _write_joined(pieces: Iterable[str], out: TextIO) -> None:
    """Write ``pieces`` about :data:`WRITE_CHUNK` characters at a time, what was joined so far also when
    the events stop on an exception."""
    parts: list[str] = []
    have = 0
    try:
        for piece in pieces:
            parts.append(piece)
            have += len(piece)
            if have >= WRITE_CHUNK:
                out.write("".join(parts))
                parts.clear()
                have = 0
    finally:
        out.write("".join(parts))


def render_text(events: Iterable[dict], out: TextIO) -> None:
    _write_joined(_text_pieces(events), out)


def _text_pieces(events: Iterable[dict]) -> Iterator[str]:
    marked = False
    for e in events:
        kind = e["kind"]
        if kind == "records":
            yield _record_lines(e)
        elif kind == "batch":
            yield _batch_line(e) + "\n"  # numbers and Kafka's own words: nothing to escape
        elif kind == "record":
            yield visible(_record_line(e)) + "\n"
        elif kind == "entry":
            yield visible(_pairs(e)) + "\n"
        elif kind == "file":
            marked = False
            yield visible(f"Dumping {e['path']}") + "\n"
        elif kind == "summary":
            if "logStartingOffset" in e:
                yield f"Log starting offset: {e['logStartingOffset']}\n"
            elif e.get("bootstrap"):
                yield "KRaft bootstrap snapshot\n"
            elif "snapshotEndOffset" in e:
                yield f"Snapshot end offset: {e['snapshotEndOffset']}, epoch: {e['snapshotEpoch']}\n"
            else:
                yield visible("# " + _pairs(e)) + "\n"
        elif kind == "stop":
            if e["reason"] == "max-bytes":
                yield (
                    f"... stopped after {e['position']} bytes (--max-bytes); rest of file not shown: "
                    f"{e['fileSize'] - e['position']} bytes\n"
                )
            elif e["reason"] != "end":
                marked = True
                yield (
                    visible(
                        f"!! decoding stopped at byte {e['position']}: {e['message']} "
                        f"({e['trailingBytes']} bytes not decoded)"
                    )
                    + "\n"
                )
        elif kind == "error":  # records that do not decode: the marker at the byte where decoding failed
            marked = True
            yield visible(f"!! byte {e.get('position')}: {e['message']}") + "\n"
        elif kind == "failed" and not marked:
            yield visible(f"!! decoding stopped: {e['message']}") + "\n"


def render_jsonl(events: Iterable[dict], out: TextIO) -> None:
    _write_joined(_jsonl_pieces(events), out)


def _jsonl_pieces(events: Iterable[dict]) -> Iterator[str]:
    path = None
    head = '{"file":null,'
    for e in events:
        kind = e["kind"]
        if kind == "records":
            if e["rows"]:
                yield "\n".join(_record_objects(e, head)) + "\n"
            continue
        if kind == "batch" and "baseSequence" in e:
            yield head + _batch_object(e) + "\n"
            continue
        if kind == "file":
            path = e["path"]
            head = f'{{"file":{_compact(path)},'
        yield _compact({"file": path, **e}) + "\n"


def render_json(events: Iterable[dict], out: TextIO) -> None:
    """One JSON document ``{"version": 2, "files": [{"path", "fileType", "events": [...], "error"}]}``."""
    _write_joined(_json_pieces(events), out)


def _json_pieces(events: Iterable[dict]) -> Iterator[str]:
    yield f'{{"version":{DUMP_JSON_VERSION},"files":['
    first_file = True
    in_file = False
    first_event = True
    error = None
    for e in events:
        kind = e["kind"]
        if kind == "file":
            if in_file:
                yield f'],"error":{json.dumps(error)}}}'
            yield (
                ("" if first_file else ",")
                + json.dumps({k: v for k, v in e.items() if k != "kind"})[:-1]
                + ',"events":['
            )
            first_file, in_file, first_event, error = False, True, True, None
        elif kind == "failed":
            error = e
        elif kind == "records":
            if e["rows"]:
                yield ("" if first_event else ",") + ",".join(_record_objects(e, "{"))
                first_event = False
        else:
            json_event = "{" + _batch_object(e) if kind == "batch" and "baseSequence" in e else _compact(e)
            yield ("" if first_event else ",") + json_event
            first_event = False
    if in_file:
        yield f'],"error":{json.dumps(error)}}}'
    yield "]}\n"


RENDERERS: dict[str, Callable[[Iterable[dict], TextIO], None]] = {
    "text": render_text,
    "json": render_json,
    "jsonl": render_jsonl,
}


def guarded(paths: list[str], make_events: Callable[[str], Iterator[dict]], errors: list[ParseError]):
    """Chain the events of several files; a ParseError ends that file with a ``failed`` event."""
    for path in paths:
        try:
            yield from make_events(path)
        except ParseError as exc:
            exc = exc if exc.path else exc.at(path=path)
            errors.append(exc)
            yield {"kind": "failed", "path": exc.path, "position": exc.offset, "message": str(exc)}
        except OSError as exc:
            err = ParseError(f"cannot read: {exc.strerror or exc}", path=path)
            errors.append(err)
            yield {"kind": "failed", "path": path, "position": None, "message": str(err)}
