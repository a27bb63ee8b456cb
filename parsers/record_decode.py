"""Decoding the records of a v2 batch (:data:`~parsers.record_v2.RECORD_PLAN`, the ``RecordV2`` layout):
``batch_records`` and ``iter_records`` stream them, ``decode_records`` holds a section whole."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from parsers.batch_header import (
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
)
from parsers.errors import ParseError
from parsers.primitives import (
    read_varint,
    read_varlong,
    varint_at,
)
from parsers.record_v2 import Header, Record, record_of

DECOMPRESSED_LIMIT = 64 << 20
"""Most bytes one batch's records section may decompress to here (Kafka itself sets no limit)."""
RECORD_WINDOW = 1 << 20
"""Records up to this size are decoded from one buffer; larger ones are read piece by piece."""
_MAX_VARINT = 10


MAX_RECORDS_PER_BATCH = 1 << 20
"""Most records decoded from one batch. Kafka's count is an int32 and its readers iterate exactly that many
records (``DefaultRecordBatch.RecordIterator``), so a 6 KB zstd batch of 64 MiB of 7-byte records holds
9.6 M of them; KRaft writes at most 8 MiB per batch (``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``) and
producers ``batch.size`` bytes (16 KiB by default). Above this the batch is reported as not decoded
(:class:`RecordBudgetExceeded`), which bounds the time spent on one batch (linear in its records)."""


class RecordError(ParseError):
    """A record that does not decode; ``offset`` is relative to the decompressed records section."""


class RecordBudgetExceeded(ParseError):
    """The batch declares more records than :data:`MAX_RECORDS_PER_BATCH`: not decoded (not a Kafka error)."""


def records_payload(
    batch: RecordBatch, raw: bytes | memoryview, *, max_bytes: int = DECOMPRESSED_LIMIT
) -> bytes:
    """The (decompressed) records section of ``batch`` as one buffer; ``raw`` holds the batch from its first
    byte. For small batches and tests: :func:`batch_records` streams instead."""
    start = RECORD_BATCH_OVERHEAD
    raw = bytes(memoryview(raw)[start : batch.size])
    if batch.compression == 0:
        return raw
    from parsers import codecs

    try:
        return codecs.decompress(batch.compression, raw, magic=MAGIC_V2, limit=max_bytes)
    except ParseError as exc:
        where = start + (exc.offset or 0)
        raise ParseError(f"cannot decompress the records section: {exc.message}", offset=where) from None


def decode_records(batch: RecordBatch, payload: bytes | memoryview) -> list[Record]:
    """All records of a (decompressed) records section held in memory; errors carry payload-relative
    offsets. :func:`iter_records` is the same without the list."""
    return list(iter_records(batch, [bytes(payload)], total=len(payload)))


def batch_records(
    batch: RecordBatch,
    pread: Callable[[int, int], bytes],
    *,
    payloads: bool = True,
    limit: int = DECOMPRESSED_LIMIT,
    budget: int | None = None,
) -> Iterator[Record]:
    """Stream the records of ``batch`` straight from its file (``pread(position, n)``), never holding the
    batch or its decompressed records whole: memory is one input chunk, one decompressed piece and the
    record being decoded, whatever the batch size or record count.

    ``payloads=False`` skips key, value and header values (their sizes are kept): a record larger than
    :data:`RECORD_WINDOW` is then never held either. Errors are :class:`ParseError` at the **file** byte
    where decoding failed: exact for uncompressed batches; for compressed ones the compressed byte read up
    to then (the message names the byte of the decompressed records). Time is linear in the decompressed
    bytes (at most ``limit``) and in the records, at most ``budget`` (see :func:`iter_records`).
    """
    from parsers import codecs

    start = batch.position + RECORD_BATCH_OVERHEAD
    src = codecs.Source.of_file(pread, start, batch.size - RECORD_BATCH_OVERHEAD)
    compressed = batch.compression != 0
    try:
        # uncompressed records are read as they are, whatever their size (no decompression limit applies)
        chunks = src.chunks() if not compressed else codecs.stream(batch.compression, src, limit=limit)
        total = None if compressed else src.size
        yield from iter_records(batch, chunks, payloads=payloads, total=total, budget=budget)
    except RecordBudgetExceeded as exc:
        raise RecordBudgetExceeded(exc.message, offset=batch.position) from None
    except RecordError as exc:
        if not compressed:
            raise ParseError(exc.message, offset=start + (exc.offset or 0)) from None
        raise ParseError(
            f"{exc.message} (byte {exc.offset} of the decompressed records)", offset=start + src.consumed
        ) from None
    except ParseError as exc:
        what = "decompress" if compressed else "read"
        raise ParseError(
            f"cannot {what} the records section: {exc.message}", offset=start + (exc.offset or 0)
        ) from None


class _Cursor:
    """A read position over a stream of byte pieces; ``buf[pos:]`` is what is buffered, ``base`` the stream
    offset of ``buf[0]``."""

    __slots__ = ("chunks", "buf", "pos", "base", "eof")

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def fill(self, n: int) -> bool:
        """Buffer at least ``n`` bytes from ``pos`` if the stream has them."""
        have = len(self.buf) - self.pos
        if have >= n:
            return True
        parts = [self.buf[self.pos :]] if have else []
        while have < n and not self.eof:
            piece = next(self.chunks, None)
            if piece is None:
                self.eof = True
                break
            parts.append(piece)
            have += len(piece)
        self.base += self.pos
        self.buf = b"".join(parts)
        self.pos = 0
        return have >= n

    def varint(self, long: bool = False) -> int:
        self.fill(_MAX_VARINT)
        try:
            value, self.pos = (read_varlong if long else read_varint)(self.buf, self.pos)
        except ParseError as exc:
            raise RecordError(exc.message, offset=self.base + (exc.offset or 0)) from None
        return value

    def take(self, n: int) -> bytes:
        if not self.fill(n):
            raise RecordError(f"premature end of the records: {n} bytes needed", offset=self.offset)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, n: int) -> None:
        while n > 0:
            if not self.fill(1):
                raise RecordError(f"premature end of the records: {n} more bytes needed", offset=self.offset)
            step = min(n, len(self.buf) - self.pos)
            self.pos += step
            n -= step


def iter_records(
    batch: RecordBatch,
    chunks: Iterable[bytes],
    *,
    payloads: bool = True,
    total: int | None = None,
    budget: int | None = None,
) -> Iterator[Record]:
    """Decode ``batch.records_count`` records from the decompressed records section given in pieces.

    Applies Kafka's checks (``DefaultRecord.readFrom``, ``DefaultRecordBatch``): a non-negative count, each
    record consumes exactly its declared length, header keys are non-null, no bytes remain after the last
    record. Raises :class:`RecordError` with stream-relative offsets, :class:`RecordBudgetExceeded` (before
    reading anything) when the count is above ``budget`` (default :data:`MAX_RECORDS_PER_BATCH`; a caller
    that reads only the first records may lift it). ``total`` (the section's size, when known) only sharpens
    the message about remaining bytes.
    """
    count = batch.records_count
    if count < 0:
        raise RecordError(f"Found invalid record count {count} in magic v2 batch", offset=0)
    budget = MAX_RECORDS_PER_BATCH if budget is None else budget
    if count > budget:
        raise RecordBudgetExceeded(
            f"batch declares {count} records, more than the {budget} this auditor decodes per batch "
            "(not decoded)",
            offset=0,
        )
    cur = _Cursor(chunks)
    for i in range(count):
        buf, pos = cur.buf, cur.pos
        if len(buf) - pos < _MAX_VARINT and not cur.fill(_MAX_VARINT) and not cur.fill(1):
            raise RecordError(
                f"Incorrect declared batch size, premature EOF reached: {count} records declared, "
                f"only {i} found",
                offset=cur.offset,
            )
        buf, pos = cur.buf, cur.pos
        start = cur.base + pos
        c = buf[pos]
        if c < 0x80:
            length = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            try:
                length, pos = read_varint(buf, pos)
            except ParseError as exc:
                raise RecordError(exc.message, offset=cur.base + (exc.offset or 0)) from None
        if length < 6:  # attributes + five varints is the smallest record body
            raise RecordError(f"Invalid record size {length}: smaller than the smallest record", offset=start)
        if pos + length > len(buf) and (length <= RECORD_WINDOW or payloads):
            cur.pos = pos
            if not cur.fill(length):
                raise RecordError(
                    f"Invalid record size {length}: the record runs past the end of the records section",
                    offset=start,
                )
            buf, pos = cur.buf, cur.pos
        if pos + length <= len(buf):
            try:
                rec, cur.pos = _record_body(batch, buf, pos, length, payloads)
            except ParseError as exc:
                raise RecordError(exc.message, offset=cur.base + (exc.offset or 0)) from None
        else:
            cur.pos = pos
            rec = _large_record_body(batch, cur, length)
        rec.size = cur.base + cur.pos - start
        yield rec
    if cur.fill(1):
        left = f"{total - cur.offset} bytes remain" if total is not None else "records still remaining"
        raise RecordError(f"Incorrect declared batch size, {left} after {count} records", offset=cur.offset)


def _record_body(batch: RecordBatch, buf: bytes, pos: int, length: int, payloads: bool) -> tuple[Record, int]:
    """One record body of ``length`` bytes at ``buf[pos:]`` (all buffered); returns it and the end."""
    body_start = pos
    limit = pos + length
    attributes = buf[pos]
    ts_delta, pos = read_varlong(buf, pos + 1) if buf[pos + 1] >= 0x80 else varint_at(buf, pos + 1)
    off_delta, pos = varint_at(buf, pos)
    key_size, key, pos = _field(buf, pos, limit, "key", payloads)
    value_size, value, pos = _field(buf, pos, limit, "value", payloads)
    if pos >= limit:
        raise ParseError(
            f"Invalid record size: expected to read {length} bytes in record payload, but the record "
            f"needs more",
            offset=body_start,
        )
    n_headers, pos = varint_at(buf, pos)
    headers = []
    if n_headers:
        if n_headers < 0 or n_headers > limit - pos:
            raise ParseError(f"Found invalid number of record headers {n_headers}", offset=pos)
        for _h in range(n_headers):
            _, hkey, pos = _field(buf, pos, limit, "header key", True)
            if hkey is None:
                raise ParseError("Invalid negative header key size", offset=pos)
            _, hval, pos = _field(buf, pos, limit, "header value", payloads)
            headers.append(Header(hkey.decode("utf-8", "replace"), hval))
    if pos != limit:
        raise ParseError(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {pos - body_start}",
            offset=body_start,
        )
    return record_of(batch, attributes, ts_delta, off_delta, key, value, headers, key_size, value_size), pos


MAX_LARGE_RECORD_HEADERS = 4096
"""Header objects kept for one record larger than the record window (the rest are checked, not kept)."""


def _large_record_body(batch: RecordBatch, cur: _Cursor, length: int) -> Record:
    """A record larger than :data:`RECORD_WINDOW`, read piece by piece with its key, value and header values
    skipped (``payloads=False``); every header is checked but only the first :data:`MAX_LARGE_RECORD_HEADERS`
    are kept (a 64 MiB record could declare tens of millions of empty headers)."""
    body_start = cur.offset
    end = body_start + length

    def size(what: str) -> int:
        n = cur.varint()
        if n > end - cur.offset:
            raise RecordError(f"{what} of {n} bytes runs past the end of the record", offset=cur.offset)
        return n

    attributes = cur.take(1)[0]
    ts_delta = cur.varint(long=True)
    off_delta = cur.varint()
    key_size = size("key")
    cur.skip(max(key_size, 0))
    value_size = size("value")
    cur.skip(max(value_size, 0))
    n_headers = cur.varint()
    if n_headers < 0 or n_headers > end - cur.offset:
        raise RecordError(f"Found invalid number of record headers {n_headers}", offset=cur.offset)
    headers = []
    for _h in range(n_headers):
        klen = size("header key")
        if klen < 0:
            raise RecordError("Invalid negative header key size", offset=cur.offset)
        key = cur.take(klen) if klen <= RECORD_WINDOW else b"<%d-byte key>" % klen
        if klen > RECORD_WINDOW:
            cur.skip(klen)
        cur.skip(max(size("header value"), 0))
        if len(headers) < MAX_LARGE_RECORD_HEADERS:
            headers.append(Header(key.decode("utf-8", "replace"), None))
    if cur.offset != end:
        raise RecordError(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {cur.offset - body_start}",
            offset=body_start,
        )
    return record_of(batch, attributes, ts_delta, off_delta, None, None, headers, key_size, value_size)


def _field(buf, pos: int, limit: int, what: str, keep: bool) -> tuple[int, bytes | None, int]:
    """(length, bytes or None, next position) of a nullable varint-prefixed field (length -1 when null)."""
    length, pos = varint_at(buf, pos)
    if length < 0:
        return -1, None, pos
    if pos + length > limit:
        raise ParseError(f"{what} of {length} bytes runs past the end of the record", offset=pos)
    return length, (buf[pos : pos + length] if keep else None), pos + length
