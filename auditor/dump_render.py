"""Render ``auditor.dump`` event streams as text (``kafka-dump-log.sh`` style), JSON or JSON Lines.

All three stream: memory stays constant however large the segment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from parsers.errors import ParseError

DUMP_JSON_VERSION = 2
"""2: bytes as ``utf8``/``base64`` flagged beside them (was ``utf8``/``hex``); ``fileSize`` in ``stop``;
``failed`` names its byte ``position`` (was ``offset``), as every other event does."""


def _bool(value) -> str:
    return "true" if value else "false"


def _batch_line(e: dict) -> str:
    if e.get("magic", 2) < 2:
        return (
            f"offset: {e['lastOffset']} position: {e['position']} {e['timestampType']}: {e['maxTimestamp']} "
            f"size: {e['size']} magic: {e['magic']} compresscodec: {e['compressCodec']} crc: {e['crc']} "
            f"isvalid: {_bool(e['isValid'])}"
        )
    horizon = (
        "OptionalLong.empty" if e["deleteHorizonMs"] is None else f"OptionalLong[{e['deleteHorizonMs']}]"
    )
    return (
        f"baseOffset: {e['baseOffset']} lastOffset: {e['lastOffset']} count: {e['count']} "
        f"baseSequence: {e['baseSequence']} lastSequence: {e['lastSequence']} producerId: {e['producerId']} "
        f"producerEpoch: {e['producerEpoch']} partitionLeaderEpoch: {e['partitionLeaderEpoch']} "
        f"isTransactional: {_bool(e['isTransactional'])} isControl: {_bool(e['isControl'])} "
        f"deleteHorizonMs: {horizon} position: {e['position']} {e['timestampType']}: {e['maxTimestamp']} "
        f"size: {e['size']} magic: {e['magic']} compresscodec: {e['compressCodec']} crc: {e['crc']} "
        f"isvalid: {_bool(e['isValid'])}"
    )


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


def _pairs(e: dict) -> str:
    return " ".join(
        f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in e.items() if k != "kind"
    )


def render_text(events: Iterable[dict], out: TextIO) -> None:
    from auditor.text import visible

    def write(line: str) -> None:
        """One line, its control and bidi characters (file names, keys, values) made visible."""
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        out.write(visible(body) + end)

    marked = False
    for e in events:
        kind = e["kind"]
        if kind == "batch":
            write(_batch_line(e) + "\n")
        elif kind == "record":
            write(_record_line(e) + "\n")
        elif kind == "entry":
            write(_pairs(e) + "\n")
        elif kind == "file":
            marked = False
            write(f"Dumping {e['path']}\n")
        elif kind == "summary":
            if "logStartingOffset" in e:
                write(f"Log starting offset: {e['logStartingOffset']}\n")
            elif e.get("bootstrap"):
                write("KRaft bootstrap snapshot\n")
            elif "snapshotEndOffset" in e:
                write(f"Snapshot end offset: {e['snapshotEndOffset']}, epoch: {e['snapshotEpoch']}\n")
            else:
                write("# " + _pairs(e) + "\n")
        elif kind == "stop":
            if e["reason"] == "max-bytes":
                write(
                    f"... stopped after {e['position']} bytes (--max-bytes); rest of file not shown: "
                    f"{e['fileSize'] - e['position']} bytes\n"
                )
            elif e["reason"] != "end":
                marked = True
                write(
                    f"!! decoding stopped at byte {e['position']}: {e['message']} "
                    f"({e['trailingBytes']} bytes not decoded)\n"
                )
        elif kind == "error":  # records that do not decode: the marker at the byte where decoding failed
            marked = True
            write(f"!! byte {e.get('position')}: {e['message']}\n")
        elif kind == "failed" and not marked:
            write(f"!! decoding stopped: {e['message']}\n")


def render_jsonl(events: Iterable[dict], out: TextIO) -> None:
    path = None
    for e in events:
        if e["kind"] == "file":
            path = e["path"]
        out.write(json.dumps({"file": path, **e}, separators=(",", ":")) + "\n")


def render_json(events: Iterable[dict], out: TextIO) -> None:
    """One JSON document ``{"version": 2, "files": [{"path", "fileType", "events": [...], "error"}]}``."""
    write = out.write
    write(f'{{"version":{DUMP_JSON_VERSION},"files":[')
    first_file = True
    in_file = False
    first_event = True
    error = None
    for e in events:
        if e["kind"] == "file":
            if in_file:
                write(f'],"error":{json.dumps(error)}}}')
            write(
                ("" if first_file else ",")
                + json.dumps({k: v for k, v in e.items() if k != "kind"})[:-1]
                + ',"events":['
            )
            first_file, in_file, first_event, error = False, True, True, None
            continue
        if e["kind"] == "failed":
            error = e
            continue
        write(("" if first_event else ",") + json.dumps(e, separators=(",", ":")))
        first_event = False
    if in_file:
        write(f'],"error":{json.dumps(error)}}}')
    write("]}\n")


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
