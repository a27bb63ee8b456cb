"""``record_rows``: the records of a whole records section as rows (``dump --deep``), the fast path of
``iter_records(..., payloads=False)`` following :data:`~parsers.record_v2.RECORD_PLAN`."""

from __future__ import annotations

from parsers.batch_header import (
    ATTR_TIMESTAMP_TYPE,
    NO_SEQUENCE,
    RecordBatch,
    last_sequence,
)
from parsers.errors import ParseError
from parsers.primitives import (
    read_varint,
    read_varlong,
)
from parsers.record_decode import MAX_RECORDS_PER_BATCH, RECORD_WINDOW

RecordRow = tuple[int, int, int, int, int, tuple[str, ...]]
"""``(offset, timestamp, keySize, valueSize, sequence, headerKeys)`` of one record, as ``record_rows`` gives
it: what ``kafka-dump-log.sh --deep-iteration`` prints of a record without its payload."""


def record_rows(batch: RecordBatch, section: bytes) -> list[RecordRow] | None:
    """The records of a whole (decompressed) records ``section`` as :data:`RecordRow` tuples, or None when
    the section is not well-formed or holds a record larger than :data:`RECORD_WINDOW`.

    The fast path of ``iter_records(batch, [section], payloads=False)`` for sections held in memory: the
    ``RecordV2`` fields in their declared order (length, attributes, timestampDelta, offsetDelta, key, value,
    headers), one- and two-byte varints decoded inline. It gives the same rows whenever ``iter_records``
    succeeds and None whenever it raises (``tests/test_dump_fastpath.py``), so a caller meeting None
    uses ``iter_records`` to learn where and why decoding stops.
    """
    count = batch.records_count
    if count < 0 or count > MAX_RECORDS_PER_BATCH:
        return None
    base_offset = batch.base_offset
    base_sequence = batch.base_sequence
    log_append = batch.attributes & ATTR_TIMESTAMP_TYPE
    base_ts = batch.max_timestamp if log_append else batch.base_timestamp
    window = RECORD_WINDOW
    end = len(section)
    s = section
    rows: list[RecordRow] = []
    append = rows.append
    pos = 0
    try:
        for _ in range(count):
            # length (varint; the one-byte case inline, as for every field below)
            c = s[pos]
            if c < 0x80:
                length = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                length = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                length, pos = read_varint(s, pos)
            limit = pos + length
            if length < 6 or length > window or limit > end:
                return None
            # attributes (int8, unused), timestampDelta (varlong)
            c = s[pos + 1]
            if c < 0x80:
                ts_delta = (c >> 1) ^ -(c & 1)
                pos += 2
            elif s[pos + 2] < 0x80:
                c = (c & 0x7F) | (s[pos + 2] << 7)
                ts_delta = (c >> 1) ^ -(c & 1)
                pos += 3
            else:
                ts_delta, pos = read_varlong(s, pos + 1)
            # offsetDelta (varint)
            c = s[pos]
            if c < 0x80:
                off_delta = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                off_delta = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                off_delta, pos = read_varint(s, pos)
            # key and value: nullable varint-prefixed bytes (any negative length is null)
            c = s[pos]
            if c < 0x80:
                key_size = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                key_size, pos = read_varint(s, pos)
            if key_size < 0:
                key_size = -1
            else:
                pos += key_size
                if pos > limit:
                    return None
            c = s[pos]
            if c < 0x80:
                value_size = (c >> 1) ^ -(c & 1)
                pos += 1
            elif s[pos + 1] < 0x80:
                c = (c & 0x7F) | (s[pos + 1] << 7)
                value_size = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                value_size, pos = read_varint(s, pos)
            if value_size < 0:
                value_size = -1
            else:
                pos += value_size
            if pos >= limit:
                return None
            # headers: count, then (key, value) pairs; keys are non-null strings
            c = s[pos]
            if c == 0:
                pos += 1
                header_keys: tuple[str, ...] = ()
            else:
                header_keys, pos = _header_keys(s, pos, limit)
            if pos != limit:
                return None
            sequence = NO_SEQUENCE if base_sequence < 0 else last_sequence(base_sequence, off_delta)
            append(
                (
                    base_offset + off_delta,
                    base_ts if log_append else base_ts + ts_delta,
                    key_size,
                    value_size,
                    sequence,
                    header_keys,
                )
            )
    except (IndexError, ParseError):
        return None
    return rows if pos == end else None


def _header_keys(s: bytes, pos: int, limit: int) -> tuple[tuple[str, ...], int]:
    """The keys of a record's headers at ``s[pos:]`` (count first) and the end; ParseError where the
    headers do not fit the record (``_record_body``'s checks)."""
    n_headers, pos = read_varint(s, pos)
    if n_headers < 0 or n_headers > limit - pos:
        raise ParseError(f"Found invalid number of record headers {n_headers}", offset=pos)
    keys = []
    for _h in range(n_headers):
        klen, pos = read_varint(s, pos)
        if klen < 0 or pos + klen > limit:
            raise ParseError("header key does not fit the record", offset=pos)
        keys.append(s[pos : pos + klen].decode("utf-8", "replace"))
        vlen, pos = read_varint(s, pos + klen)
        if vlen >= 0:
            pos += vlen
            if pos > limit:
                raise ParseError("header value does not fit the record", offset=pos)
    return tuple(keys), pos
