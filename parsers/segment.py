"""Walking a ``.log`` segment (or a KRaft ``.checkpoint``) the way Kafka's recovery reads it (spec §2).

The walker reads the file through a bounded window (never mmap-ing or allocating from a length field),
yields every entry with its byte position, and records in :attr:`SegmentWalker.stop` why and where
the walk ended and how many bytes follow that point, which is what recovery would truncate.

Two interfaces over one loop:
* :meth:`SegmentWalker.headers` — the fast path: ``(position, header_tuple, crc_ok)`` per v2 batch,
  ``header_tuple`` laid out as ``record_batch.HEADER_STRUCT`` (legacy entries come as ``LegacyEntry``);
* iterating the walker — ``RecordBatch`` / ``LegacyEntry`` objects, for dumps and checks.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c as _crc32c

from parsers.errors import ParseError
from parsers.record_batch import (
    CRC_START,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
)

RECORD_OVERHEAD_V0 = 14
"""Kafka's minimum entry size (``size`` field); anything smaller is corruption (§2 step 3)."""
_PREFIX = struct.Struct(">qiib")  # offset, size, partitionLeaderEpoch-or-crc, magic
DEFAULT_WINDOW = 8 << 20
_CRC_CHUNK = 4 << 20


@dataclass(slots=True)
class WalkStop:
    """Where and why a walk ended.

    ``reason``: ``end`` (every byte accounted for), ``max-bytes`` (the caller's limit was reached),
    ``torn-tail`` (17 or fewer bytes left, or the last entry runs past the end of the file),
    ``corrupt`` (an entry Kafka's recovery rejects: size below 14, v2 size below 61, CRC mismatch,
    unknown magic). ``position`` is the end of the valid prefix, ``trailing_bytes`` how many bytes
    of the file follow it (what recovery would truncate).
    """

    reason: str
    position: int
    trailing_bytes: int
    message: str | None = None

    @property
    def clean(self) -> bool:
        return self.reason in ("end", "max-bytes")


class SegmentWalker:
    """Read-only, bounded-memory walk over the entries of one segment file."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        max_bytes: int | None = None,
        stop_on_invalid: bool = True,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.path = str(path)
        self.file_size = os.stat(self.path).st_size
        self.end = self.file_size if max_bytes is None else min(self.file_size, max_bytes)
        self.limited = max_bytes is not None and max_bytes < self.file_size
        self.stop_on_invalid = stop_on_invalid
        self.window = max(window, 1 << 16)
        self.stop: WalkStop | None = None
        self.invalid_count = 0

    # ------------------------------------------------------------------------------- file access

    def read(self, position: int, size: int) -> bytes:
        """Bytes ``[position, position+size)`` of the file, clipped to its end (never past it)."""
        size = max(0, min(size, self.file_size - position))
        with open(self.path, "rb", buffering=0) as fh:
            return os.pread(fh.fileno(), size, position) if size else b""

    def _crc_of(self, fd: int, start: int, end: int) -> int:
        """CRC-32C of file bytes ``[start, end)`` read in chunks (for entries larger than the window)."""
        value = 0
        pos = start
        while pos < end:
            chunk = os.pread(fd, min(_CRC_CHUNK, end - pos), pos)
            if not chunk:
                break
            value = _crc32c.crc32c(chunk, value)
            pos += len(chunk)
        return value

    # ------------------------------------------------------------------------------------ walking

    def headers(self) -> Iterator[tuple[int, tuple, bool] | object]:
        """Fast path: ``(position, header_tuple, crc_ok)`` per v2 batch; legacy entries as objects.

        When ``crc_ok`` is false the tuple carries the computed CRC as a 14th element.
        """
        end = self.end
        unpack = HEADER_STRUCT.unpack_from
        prefix = _PREFIX.unpack_from
        crc = _crc32c.crc32c
        window = self.window
        fd = os.open(self.path, os.O_RDONLY)
        try:
            buf = b""
            mv = memoryview(buf)
            buf_start = 0
            buf_end = 0
            pos = 0
            while True:
                # Fast path: whole, valid v2 batches inside the current window.
                rel = pos - buf_start
                last_header = buf_end - RECORD_BATCH_OVERHEAD
                while pos <= last_header:
                    h = unpack(buf, rel)
                    nxt = pos + h[1] + LOG_OVERHEAD
                    if nxt > buf_end or nxt < pos + RECORD_BATCH_OVERHEAD or h[3] != MAGIC_V2:
                        break
                    if crc(mv[rel + CRC_START : rel + nxt - pos]) != h[4]:
                        break
                    yield (pos, h, True)
                    rel += nxt - pos
                    pos = nxt
                # General path: one entry (window refill, legacy, invalid, torn or oversized entries).
                remaining = end - pos
                if remaining <= HEADER_SIZE_UP_TO_MAGIC:
                    if remaining == 0:
                        self._finish(pos, "end", None)
                    elif self.limited:
                        self._finish(pos, "max-bytes", None)
                    else:
                        self._finish(pos, "torn-tail", f"{remaining} trailing bytes are too short for an entry")
                    return
                if pos + RECORD_BATCH_OVERHEAD > buf_end and buf_end < end:
                    buf = os.pread(fd, min(window, end - pos), pos)
                    mv = memoryview(buf)
                    buf_start, buf_end = pos, pos + len(buf)
                rel = pos - buf_start
                if buf_end - pos >= RECORD_BATCH_OVERHEAD:
                    h = unpack(buf, rel)
                    size = h[1] + LOG_OVERHEAD
                    magic = h[3]
                else:
                    h = None
                    _, length, _, magic = prefix(buf, rel)
                    size = length + LOG_OVERHEAD
                if size - LOG_OVERHEAD < RECORD_OVERHEAD_V0:
                    self._finish(pos, "corrupt", f"Found record size {size - LOG_OVERHEAD} smaller than "
                                 f"minimum record overhead ({RECORD_OVERHEAD_V0})")
                    return
                if pos + size > end:
                    if self.limited and pos + size <= self.file_size:
                        self._finish(pos, "max-bytes", None)
                    else:
                        self._finish(pos, "torn-tail", f"entry of {size} bytes at position {pos} runs past "
                                     f"the end of the file ({self.file_size} bytes)")
                    return
                if pos + size > buf_end and size <= window:
                    buf = os.pread(fd, min(window, end - pos), pos)
                    mv = memoryview(buf)
                    buf_start, buf_end, rel = pos, pos + len(buf), 0
                    if magic >= MAGIC_V2 and size >= RECORD_BATCH_OVERHEAD:
                        continue  # the fast path takes it from the refilled window
                if magic < MAGIC_V2:
                    entry = self._legacy(fd, mv, rel, pos, size, buf_end)
                    yield entry
                    if not entry.crc_valid:
                        self.invalid_count += 1
                        if self.stop_on_invalid:
                            self._finish(pos, "corrupt", f"Record is corrupt (stored crc = {entry.crc}, "
                                         f"computed crc = {entry.computed_crc})")
                            return
                    pos += size
                    continue
                if size < RECORD_BATCH_OVERHEAD:
                    self._finish(pos, "corrupt", f"Record batch is corrupt (the size {size - LOG_OVERHEAD} is "
                                 f"smaller than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})")
                    return
                if pos + size <= buf_end:
                    computed = crc(mv[rel + CRC_START : rel + size])
                else:
                    computed = self._crc_of(fd, pos + CRC_START, pos + size)
                if computed == h[4] and magic == MAGIC_V2:
                    yield (pos, h, True)
                else:
                    yield (pos, h + (computed,), False)
                    self.invalid_count += 1
                    if self.stop_on_invalid:
                        why = (f"unknown magic {magic}" if magic != MAGIC_V2 else
                               f"Record is corrupt (stored crc = {h[4]}, computed crc = {computed})")
                        self._finish(pos, "corrupt", why)
                        return
                pos += size
        finally:
            os.close(fd)

    def _legacy(self, fd: int, mv: memoryview, rel: int, pos: int, size: int, buf_end: int):
        from parsers import legacy

        if pos + size <= buf_end:
            entry = legacy.parse_legacy_entry(mv[rel : rel + size], 0)
        else:
            entry = legacy.parse_legacy_entry(os.pread(fd, size, pos), 0)
        entry.position = pos
        return entry

    def __iter__(self) -> Iterator[RecordBatch | object]:
        for item in self.headers():
            if type(item) is tuple:
                pos, h, ok = item
                yield RecordBatch.from_tuple(h[:13], position=pos, computed_crc=h[4] if ok else h[13])
            else:
                yield item

    def _finish(self, pos: int, reason: str, message: str | None) -> None:
        self.stop = WalkStop(reason, pos, self.file_size - pos if reason != "max-bytes" else 0, message)

    def batch_bytes(self, batch) -> bytes:
        """The raw bytes of an entry yielded by this walker."""
        return self.read(batch.position, batch.size)


def walk(path: str | os.PathLike, **kwargs) -> tuple[list, WalkStop]:
    """Convenience: all entries of a (small) segment and the stop record."""
    walker = SegmentWalker(path, **kwargs)
    items = list(walker)
    assert walker.stop is not None
    return items, walker.stop


def base_offset_from_name(path: str | os.PathLike) -> int:
    """The base offset encoded in a segment file name (the part before the first ``.``)."""
    name = Path(path).name
    head = name.split(".", 1)[0].split("-", 1)[0]
    if not head.isdigit():
        raise ParseError(f"file name {name!r} does not start with a base offset", path=str(path))
    return int(head)
