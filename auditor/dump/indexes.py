"""The events of an offset, time or transaction index, streamed in windows (``parsers.indexes``): memory is
one window whatever the file size; ``--max-bytes`` reads whole entries only."""

from __future__ import annotations

import os
from collections.abc import Iterator

from auditor.dump.events import to_jsonable
from parsers.errors import ParseError
from parsers.files import open_regular
from parsers.segment import base_offset_from_name

INDEX_KINDS = ("offset-index", "time-index", "txn-index")
_INDEX_ENTRY_SIZE = {"offset-index": 8, "time-index": 12, "txn-index": 34}
"""Bytes per entry (``OffsetIndex``, ``TimeIndex``, ``AbortedTxn``): ``--max-bytes`` reads whole entries."""


def limited(events: Iterator[dict], shown: int, file_size: int) -> Iterator[dict]:
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


def index_events(path: str, kind: str, max_bytes: int | None) -> Iterator[dict]:
    """The events of the index file ``path`` of ``kind``, up to ``max_bytes`` (whole entries)."""
    fd = open_regular(path)
    try:
        file_size = size = os.fstat(fd).st_size
        if max_bytes is not None and max_bytes < size:  # whole entries only: a cut entry is not corruption
            size = max_bytes - max_bytes % _INDEX_ENTRY_SIZE[kind]
        if kind == "txn-index":
            events = _txn_index_events(lambda pos, n: os.pread(fd, n, pos), size, path)
        else:
            events = _index_events(fd, size, path, kind)
        yield from limited(events, size, file_size)
    except ParseError as exc:
        raise exc.at(path=path) from None
    finally:
        os.close(fd)
