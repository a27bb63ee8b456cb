"""Walking a ``.log`` segment (or a KRaft ``.checkpoint``) the way Kafka's recovery reads it (spec §2).

The walker reads the file through a bounded window (never mmap-ing or allocating from a length field),
yields every entry with its byte position, and records in :attr:`SegmentWalker.stop` why and where
the walk ended and how many bytes follow that point, which is what recovery would truncate.

Two interfaces over one loop:
* :meth:`SegmentWalker.headers` — the fast path: ``(position, header_tuple, crc_ok)`` per v2 batch,
  ``header_tuple`` laid out as ``record_batch.HEADER_STRUCT`` (legacy entries come as ``LegacyEntry``);
* iterating the walker — ``RecordBatch`` / ``LegacyEntry`` objects, for dumps and checks.

v2 batches larger than the window are never read whole: their CRC-32C is computed over ``_CRC_CHUNK``
pieces and :meth:`SegmentWalker.records` streams their records; a legacy (magic 0/1) entry is read whole
(Kafka wrote them before 3.0, capped by ``message.max.bytes``). Files are opened with
``parsers.files.open_regular``.

``verify_crc=False`` reads a segment the way Kafka's loader trusts a flushed one (``LogLoader.recoverLog``
re-validates nothing below the recovery point): v2 batches are taken from their 61-byte header alone, the
stored CRC standing for the computed one, and the walk steps ``batchLength`` bytes to the next header. With
``trusted_below`` only the batches whose last offset is below it are (the segment holding the recovery
point); the others are read and CRC-checked as with ``verify_crc``. Small
batches still come in window reads (sequential reads cost less than a read per header); after a batch of
``skip_read_min`` bytes or more was stepped over unread, the next read takes one header only. Every other
rule of the walk (sizes, torn tail, offsets, magic, legacy entries read whole) is the same.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c as _crc32c
import numpy as np
from numpy.lib.stride_tricks import as_strided

from parsers.errors import ParseError
from parsers.files import open_regular
from parsers.primitives import read_varint
from parsers.record_batch import (
    CRC_START,
    HEADER_FIELDS,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    MAX_RECORDS_PER_BATCH,
    RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
    batch_records,
)
from parsers.record_v2 import RECORD_PLAN

RECORD_OVERHEAD_V0 = 14
"""Kafka's minimum entry size (``size`` field); anything smaller is corruption (§2 step 3)."""
_PREFIX = struct.Struct(">qiib")  # offset, size, partitionLeaderEpoch-or-crc, magic
_ENTRY_CHECK = struct.Struct(">qi4xbI2xi")
"""baseOffset, batchLength, magic, crc, lastOffsetDelta: what the fast path checks of every v2 batch."""
INT64_MAX = 2**63 - 1


def offsets_problem(base_offset: int, last_offset_delta: int) -> str | None:
    """Why a v2 batch's offsets cannot belong to any log (negative base offset or delta, or a last offset
    past the int64 range; neither is covered by the batch CRC), or None. Kafka's recovery would fail on it
    (``LogSegment.ensureOffsetInRange`` throws ``LogSegmentOffsetOverflowException``, KAFKA-6264); the
    walk stops there as at any invalid entry, so no log end offset is ever negative or past int64."""
    if base_offset < 0:
        return f"Record batch has a negative base offset {base_offset}"
    if last_offset_delta < 0:
        return f"Record batch has a negative lastOffsetDelta {last_offset_delta}"
    if base_offset > INT64_MAX - last_offset_delta:
        return f"Record batch's last offset {base_offset} + {last_offset_delta} is beyond the int64 range"
    return None


_MIN_V2_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
_RUN, _ONE, _LEGACY = "run", "one", "legacy"
_NUMPY_CODES = {
    "q": "i8",
    "l": "i4",
    "i": "i4",
    "L": "u4",
    "I": "u4",
    "h": "i2",
    "H": "u2",
    "b": "i1",
    "B": "u1",
}
HEADER_DTYPE = np.dtype(
    [
        (name, ">" + _NUMPY_CODES[code])
        for name, code in zip(HEADER_FIELDS, HEADER_STRUCT.format.lstrip("<>=!"), strict=True)
    ]
)
"""numpy layout of the v2 header, derived from ``record_batch.HEADER_STRUCT`` (itself from the schema)."""


@dataclass(slots=True)
class HeaderBlock:
    """Consecutive entries of a segment in columnar form: file positions, headers (``HEADER_DTYPE``) and
    the CRC computed over each entry (equal to ``headers["crc"]`` when the entry is valid)."""

    positions: np.ndarray
    headers: np.ndarray
    computed_crc: np.ndarray

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def crc_ok(self) -> np.ndarray:
        return self.computed_crc == self.headers["crc"]


def legacy_block(entry) -> HeaderBlock:
    """A magic 0/1 entry as a one-row block (base offset from its inner messages, no leader epoch).

    The walker has already checked (``legacy.header_span``) that its offsets fit the int64 base / int32
    delta of the row; an entry that does not ends the walk as corrupt instead of reaching here."""
    from parsers import legacy

    base, delta, count = legacy.header_span(entry)  # ParseError when the offsets do not fit the row
    row = (
        base,
        entry.size - LOG_OVERHEAD,
        -1,
        entry.magic,
        entry.crc,
        entry.attributes,
        delta,
        entry.timestamp,
        entry.timestamp,
        -1,
        -1,
        -1,
        count,
    )
    return HeaderBlock(
        np.array([entry.position], dtype=np.int64),
        np.array([row], dtype=HEADER_DTYPE),
        np.array([entry.computed_crc], dtype=np.uint32),
    )


DEFAULT_WINDOW = 8 << 20
_CRC_CHUNK = 4 << 20
SKIP_READ_MIN = 64 << 10
"""Header-only walks (``verify_crc=False``): once this many bytes of a batch were stepped over unread, the
next read takes one header, not a window (``bench/bench_extract_reads.py`` measures the choice)."""


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


_LENGTH_MAGIC = struct.Struct(">8xi4xb")
"""An entry's batchLength and magic, read from its first byte."""
_BATCH_START = np.dtype(
    [("base", ">i8"), ("length", ">i4"), ("epoch", "V4"), ("magic", "i1"), ("crc", "V6"), ("delta", ">i4")]
)
"""The first 27 bytes of a v2 batch (baseOffset .. lastOffsetDelta), for :func:`_trusted_run`."""


ANCHORS_MIN = 32
"""Chains advancing in step below which :func:`_chain` takes the batches one by one: a step costs about as
much as this many batches chained one by one, so fewer anchors in a window, or fewer chains still going (a
hostile index clustering its entries), would make the walk slower than the serial one."""


def _serial_chain(buf: bytes, rel: int, last: int, run: array) -> int:
    """Append to ``run`` the positions of the consecutive v2 batches from ``rel`` that start at or before
    ``last``, chained by their length and magic; return where the chain stopped."""
    length_at = _LENGTH_MAGIC.unpack_from
    keep = run.append
    while rel <= last:
        length, magic = length_at(buf, rel)
        if length < _MIN_V2_LENGTH or magic != MAGIC_V2:  # a legacy entry: the general path takes it
            break
        keep(rel)
        rel += LOG_OVERHEAD + length
    return rel


def _chain(buf: bytes, rel: int, last_header: int, anchors: np.ndarray | None, run: array) -> int:
    """:func:`_serial_chain` from ``rel`` to ``last_header``, the same positions and stop, advanced in step
    from ``anchors`` when there are enough of them: positions (strictly increasing, each in
    ``(rel, last_header]``) that are believed to start batches, such as the offset index's.

    No anchor is taken on trust. The chain from ``rel`` and the chains from the anchors advance together, one
    batch per step; an anchor counts only once the chain before it lands on it exactly, so the positions kept
    are the serial chain's. From the first chain that stops or overshoots its anchor, the rest is chained one
    batch at a time; so is everything when the chain from ``rel`` does not land on the first anchor (a legacy
    entry, a stale index)."""
    if anchors is None or len(anchors) <= ANCHORS_MIN:
        return _serial_chain(buf, rel, last_header, run)
    # the chain from rel is needed anyway: only when it lands on the first anchor are the others worth a step
    first = int(anchors[0])
    stop = _serial_chain(buf, rel, first - 1, run)
    if stop != first:
        return _serial_chain(buf, stop, last_header, run)
    rel, anchors = first, anchors[1:]
    raw = np.frombuffer(buf, dtype=np.uint8)
    lengths = np.ndarray(shape=(len(raw) - 3,), dtype=">i4", buffer=buf, strides=(1,))
    starts = np.concatenate(([rel], anchors)).astype(np.int64)
    cur, target, chain = starts[:-1], starts[1:], np.arange(len(anchors))
    failed, resume = len(anchors), int(starts[-1])  # the first chain that did not land, where to go on
    kept_pos: list[np.ndarray] = []
    kept_chain: list[np.ndarray] = []
    while len(cur) >= ANCHORS_MIN:
        length = lengths[cur + 8].astype(np.int64)
        ok = (length >= _MIN_V2_LENGTH) & (raw[cur + 16] == MAGIC_V2)
        nxt = cur + LOG_OVERHEAD + length
        kept_pos.append(cur[ok])
        kept_chain.append(chain[ok])
        bad = ~ok | (nxt > target)
        if bad.any():
            low = int(np.argmax(bad))  # chains stay in order: the first bad one is the lowest
            if int(chain[low]) < failed:
                failed = int(chain[low])
                resume = int(nxt[low] if ok[low] else cur[low])
        going = ~bad & (nxt < target) & (chain < failed)
        cur, target, chain = nxt[going], target[going], chain[going]
    for c, t, j in zip(cur.tolist(), target.tolist(), chain.tolist(), strict=True):
        if j > failed:
            break
        part = array("q")
        stop = _serial_chain(buf, c, t - 1, part)
        kept_pos.append(np.frombuffer(part, dtype=np.int64))
        kept_chain.append(np.full(len(part), j))
        if stop != t:
            failed, resume = j, stop
            break
    positions = np.concatenate(kept_pos)[np.concatenate(kept_chain) <= failed]
    positions.sort()
    run.frombytes(positions.astype(np.int64).tobytes())
    return _serial_chain(buf, resume, last_header, run)


def _trusted_run(
    buf: bytes,
    rel: int,
    last_header: int,
    reach: int,
    trusted_below: int,
    run: array,
    anchors: np.ndarray | None = None,
) -> int:
    """The header-only fast path: append to ``run`` the positions of the consecutive v2 batches from ``rel``
    that a walk trusting the batches below ``trusted_below`` takes from their header alone, and return where
    it stopped (the first entry that is not one of them, left to the checking loop and the general path).

    Batches are chained by their length and magic (:func:`_chain`, from ``anchors`` when given), then judged
    together as the checking loop judges them one by one: v2 magic, offsets in range (``offsets_problem``),
    a length of at least a header, each batch ending within ``reach``; and its last offset below
    ``trusted_below``."""
    start = len(run)
    rel = _chain(buf, rel, last_header, anchors, run)
    if len(run) > start and rel > reach:  # only the last batch chained can end past the walk
        rel = run.pop()
    if len(run) == start:
        return rel
    at = np.frombuffer(run, dtype=np.int64)[start:]
    raw = np.frombuffer(buf, dtype=np.uint8)
    size = _BATCH_START.itemsize
    starts = as_strided(raw, shape=(len(raw) - size + 1, size), strides=(1, 1), writeable=False)
    fields = starts[at].view(_BATCH_START).reshape(-1)
    base, delta = fields["base"].astype(np.int64), fields["delta"].astype(np.int64)
    ok = (fields["magic"] == MAGIC_V2) & (base >= 0) & (delta >= 0) & (base <= INT64_MAX - delta)
    if trusted_below <= INT64_MAX:
        ok &= np.where(ok, base, 0) + np.where(ok, delta, 0) < trusted_below
    if ok.all():
        return rel
    first = int(np.argmin(ok))
    stop = int(at[first])
    del at  # the view of ``run``'s buffer, which cannot shrink while it is exported
    del run[start + first :]
    return stop


def _chunked_crc32c(read: Callable[[int, int], bytes], start: int, end: int) -> int:
    """CRC-32C of the bytes ``[start, end)`` that ``read(position, size)`` returns, ``_CRC_CHUNK`` at a time
    (for entries larger than the window); stops early where the file ends."""
    value = 0
    pos = start
    while pos < end:
        chunk = read(pos, min(_CRC_CHUNK, end - pos))
        if not chunk:
            break
        value = _crc32c.crc32c(chunk, value)
        pos += len(chunk)
    return value


class SegmentWalker:
    """Read-only, bounded-memory walk over the entries of one segment file."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        max_bytes: int | None = None,
        stop_on_invalid: bool = True,
        window: int = DEFAULT_WINDOW,
        verify_crc: bool = True,
        skip_read_min: int = SKIP_READ_MIN,
        trusted_below: int | None = None,
        anchors: np.ndarray | None = None,
    ) -> None:
        self.path = str(path)
        self.file_size = os.stat(self.path).st_size
        self.end = self.file_size if max_bytes is None else min(self.file_size, max_bytes)
        self.limited = max_bytes is not None and max_bytes < self.file_size
        self.stop_on_invalid = stop_on_invalid
        self.window = max(window, 1 << 16)
        self.verify_crc = verify_crc
        self.skip_read_min = skip_read_min
        self.trusted_below = INT64_MAX + 1 if trusted_below is None else trusted_below
        """``verify_crc=False``: v2 batches whose last offset is below this are trusted, others checked."""
        self.anchors = None if anchors is None else np.unique(np.asarray(anchors, dtype=np.int64))
        """``verify_crc=False``: byte positions believed to start batches (the offset index's), from which the
        header-only chain advances in step (:func:`_chain`); a hint only, never taken on trust."""
        self.stop: WalkStop | None = None
        self.invalid_count = 0
        self.bytes_read = 0
        """Bytes this walker has read from the file (the walk and :meth:`read` alike)."""
        self._read_fd: int | None = None

    # ------------------------------------------------------------------------------- file access

    def read(self, position: int, size: int) -> bytes:
        """Bytes ``[position, position+size)`` of the file, clipped to its end (never past it)."""
        size = max(0, min(size, self.file_size - position))
        if not size:
            return b""
        if self._read_fd is None:
            self._read_fd = open_regular(self.path)
        data = os.pread(self._read_fd, size, position)
        self.bytes_read += len(data)
        return data

    def _anchors_in(self, buf_start: int, rel: int, last_header: int) -> np.ndarray | None:
        """The anchors after ``rel`` whose header lies in the window at ``buf_start``, window-relative."""
        anchors = self.anchors
        if anchors is None or last_header - rel < ANCHORS_MIN * RECORD_BATCH_OVERHEAD:
            return None
        lo, hi = np.searchsorted(anchors, (buf_start + rel, buf_start + last_header), side="right")
        return anchors[lo:hi] - buf_start if hi - lo > ANCHORS_MIN else None

    def batch_crc(self, batch: RecordBatch) -> int:
        """CRC-32C of a v2 batch's covered bytes, read ``_CRC_CHUNK`` at a time (never the batch whole)."""
        return _chunked_crc32c(self.read, batch.position + CRC_START, batch.position + batch.size)

    def records(
        self, batch: RecordBatch, *, payloads: bool = True, budget: int | None = None
    ) -> Iterator[Record]:
        """Stream the records of a v2 ``batch`` yielded by this walker (see ``record_batch.batch_records``):
        the batch is never held whole; a ParseError names the file byte where decoding failed."""
        return batch_records(batch, self.read, payloads=payloads, budget=budget)

    def close(self) -> None:
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None

    def __del__(self) -> None:
        self.close()

    # ------------------------------------------------------------------------------------ walking

    def _walk(self) -> Iterator[tuple]:
        """The one walking loop. Yields ``(_RUN, buf, buf_start, rel_positions)`` for runs of valid v2
        batches whose headers are in a window (whole batches unless ``verify_crc`` is off),
        ``(_ONE, position, header_tuple, computed_crc)`` for a v2 entry taken by the general path, and
        ``(_LEGACY, entry)`` for magic 0/1 entries."""
        end = self.end
        prefix = _PREFIX.unpack_from
        unpack = HEADER_STRUCT.unpack_from
        check = _ENTRY_CHECK.unpack_from
        int64_max = INT64_MAX
        crc = _crc32c.crc32c
        window = self.window
        verify = self.verify_crc
        trusted_below = self.trusted_below
        skip_read_min = self.skip_read_min
        fd = open_regular(self.path)

        def pread(at: int, n: int) -> bytes:
            data = os.pread(fd, n, at)
            self.bytes_read += len(data)
            return data

        try:
            buf = b""
            mv = memoryview(buf)
            buf_start = buf_end = pos = 0
            unanchored = -1  # the window whose anchors the chain did not reach (legacy entries in between)
            while True:
                # Fast path: valid v2 batches whose header is in the current window (verify_crc, or a batch
                # not trusted: the whole batch, CRC-checked; else its header, the batch ending in the walk).
                rel = pos - buf_start
                last_header = buf_end - buf_start - RECORD_BATCH_OVERHEAD
                win = buf_end - buf_start
                reach = win if verify else end - buf_start
                run = array("q")
                keep = run.append
                if not verify:
                    anchors = None
                    if buf_start != unanchored and rel <= last_header and buf[rel + 16] == MAGIC_V2:
                        anchors = self._anchors_in(buf_start, rel, last_header)
                    rel = _trusted_run(buf, rel, last_header, reach, trusted_below, run, anchors)
                    if anchors is not None and rel < anchors[0]:
                        unanchored = buf_start  # the chain stops before the first anchor: not again here
                while rel <= last_header:
                    base, length, magic, stored, delta = check(buf, rel)
                    nxt = rel + LOG_OVERHEAD + length
                    if nxt > reach or length < _MIN_V2_LENGTH or magic != MAGIC_V2:
                        break
                    if base < 0 or delta < 0 or base > int64_max - delta:
                        break  # the general path stops the walk there
                    if verify:
                        if (
                            crc(buf[rel + CRC_START : nxt] if length < 4096 else mv[rel + CRC_START : nxt])
                            != stored
                        ):
                            break
                    elif base + delta >= trusted_below and (
                        nxt > win or crc(mv[rel + CRC_START : nxt]) != stored
                    ):
                        break
                    keep(rel)
                    rel = nxt
                if run:
                    yield (_RUN, buf, buf_start, run)
                pos = buf_start + rel
                # header-only: after stepping over a large batch unread (or before the first read) the next
                # read takes one header; else a window
                sparse = not verify and (not buf_end or pos - buf_end >= skip_read_min)
                # General path: one entry (window refill, legacy, invalid, torn or oversized entries).
                remaining = end - pos
                if remaining <= HEADER_SIZE_UP_TO_MAGIC:
                    if remaining == 0:
                        self._finish(pos, "end", None)
                    elif self.limited:
                        self._finish(pos, "max-bytes", None)
                    else:
                        self._finish(
                            pos, "torn-tail", f"{remaining} trailing bytes are too short for an entry"
                        )
                    return
                if pos + RECORD_BATCH_OVERHEAD > buf_end and buf_end < end:
                    buf = pread(pos, min(RECORD_BATCH_OVERHEAD if sparse else window, end - pos))
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
                    self._finish(
                        pos,
                        "corrupt",
                        f"Found record size {size - LOG_OVERHEAD} smaller than "
                        f"minimum record overhead ({RECORD_OVERHEAD_V0})",
                    )
                    return
                if pos + size > end:
                    if self.limited and pos + size <= self.file_size:
                        self._finish(pos, "max-bytes", None)
                    else:
                        self._finish(
                            pos,
                            "torn-tail",
                            f"entry of {size} bytes at position {pos} runs past "
                            f"the end of the file ({self.file_size} bytes)",
                        )
                    return
                checked = verify or (h is not None and h[0] + h[6] >= trusted_below)
                if pos + size > buf_end and size <= window and (checked or magic < MAGIC_V2):
                    buf = pread(pos, min(window, end - pos))
                    mv = memoryview(buf)
                    buf_start, buf_end, rel = pos, pos + len(buf), 0
                    if magic >= MAGIC_V2 and size >= RECORD_BATCH_OVERHEAD and h is not None:
                        continue  # the fast path takes it from the refilled window
                if magic < MAGIC_V2:
                    try:
                        entry = self._legacy(pread, mv, rel, pos, size, buf_end)
                    except ParseError as exc:
                        # Not a legacy message (e.g. a v2 batch whose magic byte was damaged), or one
                        # whose offsets fit no segment (legacy.header_span)
                        what = "legacy entry" if magic in (0, 1) else f"magic {magic} entry"
                        self._finish(pos, "corrupt", f"invalid {what}: {exc.message}")
                        return
                    yield (_LEGACY, entry)
                    if not entry.crc_valid:
                        self.invalid_count += 1
                        if self.stop_on_invalid:
                            self._finish(
                                pos,
                                "corrupt",
                                f"Record is corrupt (stored crc = {entry.crc}, "
                                f"computed crc = {entry.computed_crc})",
                            )
                            return
                    pos += size
                    continue
                if size < RECORD_BATCH_OVERHEAD or h is None:
                    self._finish(
                        pos,
                        "corrupt",
                        f"Record batch is corrupt (the size {size - LOG_OVERHEAD} is "
                        f"smaller than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})",
                    )
                    return
                if magic == MAGIC_V2 and (why := offsets_problem(h[0], h[6])) is not None:
                    self.invalid_count += 1
                    self._finish(pos, "corrupt", why)
                    return
                if not checked:
                    computed = h[4]  # trusted: the stored CRC stands for the computed one
                elif pos + size <= buf_end:
                    computed = crc(mv[rel + CRC_START : rel + size])
                else:
                    computed = _chunked_crc32c(pread, pos + CRC_START, pos + size)
                yield (_ONE, pos, h, computed)
                if computed != h[4] or magic != MAGIC_V2:
                    self.invalid_count += 1
                    if self.stop_on_invalid:
                        why = (
                            f"unknown magic {magic}"
                            if magic != MAGIC_V2
                            else f"Record is corrupt (stored crc = {h[4]}, computed crc = {computed})"
                        )
                        self._finish(pos, "corrupt", why)
                        return
                pos += size
        finally:
            os.close(fd)

    def headers(self) -> Iterator[tuple[int, tuple, bool] | object]:
        """``(position, header_tuple, crc_ok)`` per v2 batch (``header_tuple`` laid out as
        ``HEADER_STRUCT``; when ``crc_ok`` is false it carries the computed CRC as a 14th element);
        legacy entries come as ``LegacyEntry`` objects."""
        unpack = HEADER_STRUCT.unpack_from
        for item in self._walk():
            tag = item[0]
            if tag is _RUN:
                _, buf, start, run = item
                for rel in run:
                    yield (start + rel, unpack(buf, rel), True)
            elif tag is _ONE:
                _, pos, h, computed = item
                ok = computed == h[4] and h[3] == MAGIC_V2
                yield (pos, h, True) if ok else (pos, h + (computed,), False)
            else:
                yield item[1]

    def header_blocks(self) -> Iterator[HeaderBlock]:
        """Columnar fast path: blocks of batch headers as numpy arrays (legacy entries included as rows)."""
        for item in self._walk():
            tag = item[0]
            if tag is _RUN:
                _, buf, start, run = item
                rel = np.frombuffer(run, dtype=np.int64)
                raw = np.frombuffer(buf, dtype=np.uint8)
                # Every 61-byte window of the buffer as a row (a read-only view), then pick the batch starts.
                rows = as_strided(
                    raw,
                    shape=(len(raw) - RECORD_BATCH_OVERHEAD + 1, RECORD_BATCH_OVERHEAD),
                    strides=(1, 1),
                    writeable=False,
                )
                headers = rows[rel].view(HEADER_DTYPE).reshape(-1)
                yield HeaderBlock(rel + start, headers, headers["crc"].astype(np.uint32))
            elif tag is _ONE:
                _, pos, h, computed = item
                headers = np.array([h], dtype=HEADER_DTYPE)
                valid_magic = h[3] == MAGIC_V2
                yield HeaderBlock(
                    np.array([pos], dtype=np.int64),
                    headers,
                    np.array([computed if valid_magic else (h[4] + 1) & 0xFFFFFFFF], dtype=np.uint32),
                )
            else:
                yield legacy_block(item[1])

    def __iter__(self) -> Iterator[RecordBatch | object]:
        for item in self.headers():
            if type(item) is tuple:
                pos, h, ok = item
                yield RecordBatch.from_tuple(h[:13], position=pos, computed_crc=h[4] if ok else h[13])
            else:
                yield item

    def _legacy(
        self, pread: Callable[[int, int], bytes], mv: memoryview, rel: int, pos: int, size: int, buf_end: int
    ):
        from parsers import legacy

        if pos + size <= buf_end:
            entry = legacy.parse_legacy_entry(mv[rel : rel + size], 0)
        else:
            entry = legacy.parse_legacy_entry(pread(pos, size), 0)
        entry.position = pos
        legacy.header_span(entry)  # offsets that fit no segment: ParseError, the walk stops here
        return entry

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
    # Kafka: Long.parseLong of the part before the first '.' (LocalLog.offsetFromFileName)
    from parsers.checkpoints import _java_parse_long

    value = _java_parse_long(head)
    if value is None or value < 0:
        raise ParseError(
            f"file name {name!r} does not start with a base offset (a decimal int64)", path=str(path)
        )
    return value


# ------------------------------------------------------------------------------------ columnar records


_WIDTH = {"varint": 5, "varlong": 10}
_PAD = 16
"""Zero bytes after the records buffer, so that a varint read at its end never indexes past it."""
_SERIAL_BELOW = 8
"""Sections still holding records when fewer than this many are left are chased one by one."""
MAX_COLUMNAR_ELEMENTS = 64
"""Records declaring more headers than this are left to the record-by-record decoder."""


@dataclass(slots=True)
class RecordColumns:
    """The records of many record sections, one array entry per record, in section then record order.

    ``section`` is the index of the record's section, ``start`` the byte of its length prefix in the buffer,
    ``size`` its bytes (prefix included), ``content`` the byte of its key length (its content: key, value
    and headers up to its end, as ``record_build.encode_record_content`` writes them); ``fields`` maps every
    plan field to its values (``int8``/varints) or, for byte fields, to ``(position, length)`` arrays
    (length -1: null); an array field to ``(count, owner, element fields)`` with ``owner`` the record of
    each element. ``ok[i]`` is false for a section this decoder does not take (anything unusual or invalid:
    the record-by-record decoder judges it)."""

    ok: np.ndarray
    section: np.ndarray
    start: np.ndarray
    size: np.ndarray
    fields: dict
    content: np.ndarray


_CONTENT_STEP = [step[0] for step in RECORD_PLAN].index("key")
"""The first step of :data:`RECORD_PLAN` holding the record's content (key, value and headers)."""


def _varints(buf: np.ndarray, pos: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values as int64, next positions, terminated) of the zig-zag varints (``varint``: 32 bits, at most 5
    bytes; ``varlong``: 64 bits, at most 10) at ``pos``, as ``primitives.read_varint``/``read_varlong``."""
    first = buf[pos].astype(np.int64)
    values = (first >> 1) ^ -(first & 1)
    longer = np.flatnonzero(first >= 0x80)
    if not len(longer):
        return values, pos + 1, np.ones(len(pos), dtype=bool)
    width = _WIDTH[kind]
    raw = buf[pos[longer, None] + np.arange(width)]
    last = raw < 0x80
    count = np.ones(len(pos), dtype=np.int64)
    count[longer] = last.argmax(axis=1) + 1
    ends = np.ones(len(pos), dtype=bool)
    ends[longer] = last.any(axis=1)
    used = np.arange(width) < count[longer, None]
    parts = (raw & 0x7F).astype(np.uint64) << (7 * np.arange(width, dtype=np.uint64))
    zz = np.bitwise_or.reduce(np.where(used, parts, np.uint64(0)), axis=1)
    if kind == "varint":
        zz &= np.uint64(0xFFFFFFFF)
    wide = ((zz >> np.uint64(1)) ^ (np.uint64(0) - (zz & np.uint64(1)))).view(np.int64)
    values[longer] = wide.astype(np.int32).astype(np.int64) if kind == "varint" else wide
    return values, pos + count, ends


def _record_bounds(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray, ok: np.ndarray):
    """The records of every section, found by chasing length prefixes: (section, index, start, body start,
    end) arrays; ``ok`` is cleared for a section whose prefixes do not tile it exactly. Sections are
    chased side by side while many are left, the last few one by one."""
    found: list[tuple] = []
    cur = starts.astype(np.int64).copy()
    live = np.flatnonzero(ok & (counts > 0))
    k = 0
    while len(live) >= _SERIAL_BELOW:
        length, body, done = _varints(buf, cur[live], "varint")
        end = body + length
        good = done & (length >= 6) & (end <= ends[live])
        ok[live[~good]] = False
        found.append((live[good], np.full(int(good.sum()), k), cur[live][good], body[good], end[good]))
        cur[live] = np.where(good, end, cur[live])
        k += 1
        live = live[good & (counts[live] > k)]
    chased = np.zeros(len(ok), dtype=bool)
    chased[live] = True
    ok &= chased | (counts <= 0) | (cur == ends)  # the records of a section end where it ends
    data = memoryview(buf)
    for s in live.tolist():
        rows = _chase(data, int(cur[s]), int(ends[s]), k, int(counts[s]))
        if rows is None:
            ok[s] = False
            continue
        n = len(rows[0])
        found.append((np.full(n, s), np.arange(k, k + n), *(np.array(r, dtype=np.int64) for r in rows)))
    ok &= ~((counts > 0) & (starts >= ends))
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty, empty
    cols = [np.concatenate([f[i] for f in found]).astype(np.int64) for i in range(5)]
    order = np.lexsort((cols[1], cols[0]))
    return tuple(c[order] for c in cols)


def _chase(data: memoryview, pos: int, end: int, first: int, count: int):
    """Record starts, body starts and ends of records ``first .. count-1`` of one section from ``pos``;
    None when they do not tile it (bytes left after the last one included)."""
    starts, bodies, ends = [], [], []
    for _ in range(first, count):
        if pos >= end:
            return None
        try:
            length, body = read_varint(data, pos)
        except ParseError:
            return None
        if length < 6 or body + length > end:
            return None
        starts.append(pos)
        bodies.append(body)
        ends.append(body + length)
        pos = body + length
    return (starts, bodies, ends) if pos == end else None


def _decode_plan(buf, plan, pos, end, good) -> tuple[dict, np.ndarray]:
    """Decode ``plan`` for every element at ``pos`` (bounded by ``end``); clears ``good`` for elements that
    break a rule of ``parsers.record_batch``'s decoder. Returns the field columns and where each ends."""
    fields: dict = {}
    for step in plan:
        name, kind = step[0], step[1]
        if kind == "int8":
            fields[name] = buf[pos].astype(np.int8).astype(np.int64)
            pos = pos + 1
        elif kind in _WIDTH:
            fields[name], pos, done = _varints(buf, pos, kind)
            good &= done
        elif kind in ("nullable", "bytes"):
            length, pos, done = _varints(buf, pos, "varint")
            good &= done & (length >= (0 if kind == "bytes" else -1))
            fields[name] = (pos, np.where(length < 0, -1, length))
            pos = pos + np.maximum(length, 0)
        else:
            count, pos, done = _varints(buf, pos, "varint")
            good &= done & (pos <= end) & (count >= 0) & (count <= np.maximum(end - pos, 0))
            good &= count <= MAX_COLUMNAR_ELEMENTS
            fields[name] = _decode_array(buf, step[2], np.where(good, count, 0), pos, end, good)
            pos = fields[name][3]
        good &= pos <= end
        pos = np.minimum(pos, end)
    return fields, pos


def _decode_array(buf, plan, count, pos, end, good):
    """The elements of an array field of every record (element ``j`` of all records side by side)."""
    owners, parts, pos = [], [], pos.copy()
    for j in range(int(count.max()) if len(count) else 0):
        rec = np.flatnonzero(count > j)
        sub_good = good[rec].copy()
        cols, pos[rec] = _decode_plan(buf, plan, pos[rec], end[rec], sub_good)
        good[rec] &= sub_good
        owners.append(rec)
        parts.append(cols)
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    merged = {}
    for name, kind in ((s[0], s[1]) for s in plan):
        if kind in ("nullable", "bytes"):
            merged[name] = tuple(
                np.concatenate([p[name][i] for p in parts])[order] if parts else np.zeros(0, np.int64)
                for i in range(2)
            )
        else:
            merged[name] = np.concatenate([p[name] for p in parts])[order] if parts else np.zeros(0, np.int64)
    return count, owner[order], merged, pos


def record_columns(buf: bytes, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray) -> RecordColumns:
    """Decode, column by column, the record sections ``buf[starts[i]:ends[i]]`` (decompressed) declaring
    ``counts[i]`` records each, with the rules of ``record_batch.iter_records``: a section is taken only when
    each record's fields fit its declared length exactly and the records tile the section exactly; any other
    section is flagged in ``ok`` for the record-by-record decoder (which reports why)."""
    data = np.frombuffer(bytes(buf) + bytes(_PAD), dtype=np.uint8)
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    ok = (counts >= 0) & (counts <= MAX_RECORDS_PER_BATCH) & (starts <= ends)
    section, _index, start, body, end = _record_bounds(data, starts, ends, counts, ok)
    chased = ok[section]  # the records of sections whose prefixes tile them
    section, start, body, end = section[chased], start[chased], body[chased], end[chased]
    good = np.ones(len(start), dtype=bool)
    fields, content = _decode_plan(data, RECORD_PLAN[1:_CONTENT_STEP], body, end, good)
    rest, stop = _decode_plan(data, RECORD_PLAN[_CONTENT_STEP:], content, end, good)
    fields.update(rest)
    good &= stop == end
    ok[section[~good]] = False
    ok &= ~((counts == 0) & (starts != ends))
    keep = ok[section]
    fields = _select(fields, keep)
    return RecordColumns(ok, section[keep], start[keep], (end - start)[keep], fields, content[keep])


def _select(fields: dict, keep: np.ndarray) -> dict:
    """The field columns of the records ``keep`` selects (array elements follow their records)."""
    out = {}
    for name, value in fields.items():
        if isinstance(value, np.ndarray):
            out[name] = value[keep]
        elif len(value) == 2:
            out[name] = (value[0][keep], value[1][keep])
        else:
            count, owner, elements, _ = value
            mine = keep[owner]
            renumber = np.cumsum(keep) - 1
            out[name] = (
                count[keep],
                renumber[owner[mine]],
                {
                    k: (v[0][mine], v[1][mine]) if isinstance(v, tuple) else v[mine]
                    for k, v in elements.items()
                },
            )
    return out
