"""The events of Kafka's small files, read whole (up to ``--max-bytes``): producer snapshots, checkpoints,
``partition.metadata``, ``meta.properties``, ``quorum-state`` and ``.kafka_cleanshutdown``. One
:class:`Reader` per kind (:data:`READERS`): how the whole file decodes, and how a file that ``--max-bytes``
cut is judged on what the cut leaves whole."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from auditor.dump.events import pairs_list, summary_fields, to_jsonable
from auditor.dump.indexes import limited
from parsers.errors import ParseError
from parsers.files import read_regular

MAX_TEXT_FILE = 64 << 20
"""Checkpoint-like files are read whole; anything larger than this is not a Kafka text file."""


def small_file_events(path: str, kind: str, max_bytes: int | None) -> Iterator[dict]:
    """The events of the small file ``path`` of ``kind``, read up to ``max_bytes``."""
    size = os.stat(path).st_size
    if max_bytes is None and size > MAX_TEXT_FILE:  # indexes never come here: they are read in windows
        raise ParseError(f"{size} bytes is far too large for this kind of file", path=path, offset=0)
    data = read_regular(path, max_bytes)
    reader = READERS[kind]
    try:
        # a file --max-bytes cut is judged on what the cut leaves whole
        events = reader.cut(path, data, size) if len(data) < size else reader.decode(path, data)
        yield from limited(events, len(data), size)
    except ParseError as exc:
        raise exc.at(path=path) from None


@dataclass(frozen=True)
class Reader:
    """How one kind of small file gives its events: ``decode(path, data)`` of the whole file, and
    ``cut(path, data, size)`` of a file of ``size`` bytes of which ``--max-bytes`` read only ``data``.

    What a cut leaves whole is decoded and judged as usual: corruption there still raises. What the cut took
    (a line, a JSON object, snapshot entries, keys that may come later) cannot be judged, so a failure it
    explains is no error (the ``stop`` event with reason ``max-bytes`` says the file was cut)."""

    decode: Callable[[str, bytes], Iterator[dict]]
    cut: Callable[[str, bytes, int], Iterator[dict]]


# ------------------------------------------------------------------------------------------ whole files


def _producer_snapshot(path: str, data: bytes) -> Iterator[dict]:
    from parsers.producer_snapshot import read_producer_snapshot

    snap = read_producer_snapshot(data)
    yield {"kind": "summary", **summary_fields(snap, exclude=("entries",))}
    for entry in snap.entries:
        yield {"kind": "entry", **to_jsonable(entry)}
    if not snap.crc_valid:
        raise ParseError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snap.crc}. "
            f"Computed crc: {snap.computed_crc}",
            offset=2,
        )


def _offset_checkpoint(path: str, data: bytes) -> Iterator[dict]:
    from parsers.checkpoints import parse_offset_checkpoint

    ckpt = parse_offset_checkpoint(data, path)
    yield {
        **summary_fields(ckpt, exclude=("entries", "line_offsets", "kind")),
        "kind": "summary",
        "checkpointKind": ckpt.kind,
    }
    for topic, partition, offset in ckpt.entries:
        yield {"kind": "entry", "topic": topic, "partition": partition, "offset": offset}


def _leader_epoch_checkpoint(path: str, data: bytes) -> Iterator[dict]:
    from parsers.checkpoints import parse_leader_epoch_checkpoint

    ckpt = parse_leader_epoch_checkpoint(data, path)
    yield {"kind": "summary", **summary_fields(ckpt, exclude=("entries", "line_offsets"))}
    for epoch, start in ckpt.entries:
        yield {"kind": "entry", "epoch": epoch, "startOffset": start}


def _dir_file(parser: str) -> Callable[[str, bytes], Iterator[dict]]:
    """The decoder of a log dir's metadata file by ``parsers.dirfiles.<parser>``: one ``entry`` event,
    then the file's problems raised."""

    def decode(path: str, data: bytes) -> Iterator[dict]:
        from parsers import dirfiles

        parsed = getattr(dirfiles, parser)(data, path)
        entry = to_jsonable(parsed)
        if isinstance(entry.get("raw"), dict):
            entry["raw"] = pairs_list(entry["raw"])
        yield {"kind": "entry", **entry}
        problems = getattr(parsed, "problems", None)
        if problems:
            raise ParseError("; ".join(problems), offset=0)

    return decode


# ------------------------------------------------------------------------------------------- cut files


def _cut_checkpoint(
    decode: Callable[[str, bytes], Iterator[dict]],
) -> Callable[[str, bytes, int], Iterator[dict]]:
    """A checkpoint's whole lines: a line that does not parse is corrupt; fewer entry lines than the
    declared count is the cut (the count in the summary stays the declared one)."""

    def cut(path: str, data: bytes, size: int) -> Iterator[dict]:
        whole = whole_lines(data)
        try:
            yield from decode(path, whole)  # parsed before the first event
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
        for event in decode(path, whole[:count_at] + padded + whole[count_at + len(padded) :]):
            if event["kind"] == "summary":
                event["count"] = declared
            yield event

    return cut


def _cut_partition_metadata(path: str, data: bytes, size: int) -> Iterator[dict]:
    whole = whole_lines(data)
    try:
        yield from _dir_file("parse_partition_metadata")(path, whole)
    except ParseError as exc:
        if exc.offset is None or exc.offset < len(whole):  # a whole line is wrong
            raise


def _cut_meta_properties(path: str, data: bytes, size: int) -> Iterator[dict]:
    from parsers.dirfiles import load_java_properties, parse_meta_properties

    whole = _closed_properties(whole_lines(data))
    load_java_properties(whole.decode("latin-1"))  # a malformed \uXXXX escape stays malformed
    try:
        parsed = parse_meta_properties(whole, path)
    except ParseError:
        return  # a missing or wrong key: a later line may add it or override it (the last one wins)
    entry = to_jsonable(parsed)  # problems are shown, not raised: later lines may settle them
    entry["raw"] = pairs_list(entry["raw"])
    yield {"kind": "entry", **entry}


def _cut_quorum_state(path: str, data: bytes, size: int) -> Iterator[dict]:
    decode = _dir_file("parse_quorum_state")
    if _LINE_BREAK.search(data):  # the first line, the one Kafka reads, is whole
        yield from decode(path, whole_lines(data))
        return
    # Kafka reads the first line only; here it is cut: a JSON object cut short is not corrupt
    try:
        yield from decode(path, data)
    except ParseError:
        if not _json_cut_short(data):
            raise


def _cut_clean_shutdown(path: str, data: bytes, size: int) -> Iterator[dict]:
    # .kafka_cleanshutdown: Kafka tolerates any content (no broker epoch), so it never fails
    yield from _dir_file("parse_clean_shutdown")(path, data)


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
"""``BufferedReader.readLine``'s line terminators (checkpoints, partition.metadata, quorum-state)."""


def whole_lines(data: bytes) -> bytes:
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
    yield {
        "kind": "summary",
        **summary_fields(snap, exclude=("entries",)),
        "computedCrc": None,
        "crcValid": None,
    }
    for entry in snap.entries:
        yield {"kind": "entry", **to_jsonable(entry)}


READERS: dict[str, Reader] = {
    "producer-snapshot": Reader(
        _producer_snapshot, lambda path, data, size: _cut_producer_snapshot(data, size)
    ),
    "offset-checkpoint": Reader(_offset_checkpoint, _cut_checkpoint(_offset_checkpoint)),
    "leader-epoch-checkpoint": Reader(_leader_epoch_checkpoint, _cut_checkpoint(_leader_epoch_checkpoint)),
    "partition-metadata": Reader(_dir_file("parse_partition_metadata"), _cut_partition_metadata),
    "meta-properties": Reader(_dir_file("parse_meta_properties"), _cut_meta_properties),
    "quorum-state": Reader(_dir_file("parse_quorum_state"), _cut_quorum_state),
    "clean-shutdown": Reader(_dir_file("parse_clean_shutdown"), _cut_clean_shutdown),
}
"""The reader of every small-file kind ``auditor.layout.filetypes.classify`` names."""
