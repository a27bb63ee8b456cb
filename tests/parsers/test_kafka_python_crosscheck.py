"""kafka-python 3.0.12 as an independent implementation of the record formats, in both directions.

* kafka-python's builders (``DefaultRecordBatchBuilder`` v2, ``LegacyRecordBatchBuilder`` v0/v1) write
  batches for every codec; ``parsers.record_batch`` / ``parsers.legacy`` must read back every field.
* ``parsers.record_batch.build_batch`` and ``parsers.legacy``'s builders write batches; kafka-python's
  readers (``MemoryRecords``, ``DefaultRecordBatch``, ``LegacyRecordBatch``) must accept their CRCs and
  read the same fields.

kafka-python picks its codecs at import time from ``python-snappy``, ``lz4``, ``zstandard`` (all
installed). Its magic-0 LZ4 path additionally needs ``xxhash`` (not installed): those tests substitute
``parsers.codecs.xxh32``, which ``test_codecs.py`` checks against liblz4's own checksums.
"""

from __future__ import annotations

import struct

import pytest
from kafka import codec as kafka_codec
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from parsers import codecs
from parsers.errors import ParseError
from parsers.legacy import (
    LegacyMessageSpec,
    build_legacy_message,
    build_legacy_wrapper,
    inner_messages,
    parse_legacy_entry,
)
from parsers.record_batch import (
    RecordSpec,
    build_batch,
    decode_records,
    parse_header,
    parse_records_with_schema,
    records_payload,
)

V2_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]
LEGACY_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4]
TS = 1_700_000_000_000

RECORDS = [
    (b"key-0", b"value-0|" * 12, TS, []),
    (None, b"value-1|" * 12, TS + 5, [("h", b"v"), ("n", None)]),
    (b"", None, TS + 3, [("ключ", b"\x00\xff")]),  # empty key, tombstone, non-ASCII header key
    (b"key-3", b"", TS - 10, []),  # negative timestamp delta
    *((b"key-%d" % i, b"value-%d|" % i * 12, TS + i, [("i", str(i).encode())]) for i in range(4, 40)),
]


class _Xxh32Digest:
    def __init__(self, value: int) -> None:
        self.value = value

    def digest(self) -> bytes:
        return struct.pack(">I", self.value)

    def intdigest(self) -> int:
        return self.value


class _XxhashShim:
    """Stands in for the ``xxhash`` package that kafka-python's magic-0 LZ4 helpers import."""

    @staticmethod
    def xxh32(data, seed: int = 0) -> _Xxh32Digest:
        return _Xxh32Digest(codecs.xxh32(bytes(data), seed))


@pytest.fixture(autouse=True)
def _xxhash_for_kafka_python(monkeypatch):
    if kafka_codec.xxhash is None:
        monkeypatch.setattr(kafka_codec, "xxhash", _XxhashShim())


# ------------------------------------------------------------------------------- kafka-python -> parsers


def kafka_python_v2(codec: int, *, transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1):
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 20,
    )
    for i, (key, value, ts, headers) in enumerate(RECORDS):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers) is not None
    return bytes(builder.build())


PRODUCER_STATES = {
    "plain": {},
    "idempotent": {"producer_id": 4242, "producer_epoch": 3, "base_sequence": 17},
    "transactional": {"transactional": True, "producer_id": 7, "producer_epoch": 0, "base_sequence": 0},
    "sequence-wraps": {"producer_id": 1, "producer_epoch": 1, "base_sequence": 2**31 - 5},
}


@pytest.mark.parametrize("state", list(PRODUCER_STATES))
@pytest.mark.parametrize("codec", V2_CODECS)
def test_v2_batches_of_kafka_python_parse_identically(codec, state):
    raw = kafka_python_v2(codec, **PRODUCER_STATES[state])
    theirs = DefaultRecordBatch(raw)
    ours = parse_header(raw)
    assert ours.crc_valid and theirs.validate_crc()
    assert ours.compression == codec == theirs.compression_type  # payloads compress, so nothing fell back
    assert (ours.base_offset, ours.size, ours.partition_leader_epoch, ours.magic, ours.crc) == (
        theirs.base_offset, theirs.size_in_bytes, theirs.leader_epoch, theirs.magic, theirs.crc
    )
    assert (ours.attributes, ours.last_offset_delta, ours.base_timestamp, ours.max_timestamp) == (
        theirs.attributes, theirs.last_offset_delta, theirs.first_timestamp, theirs.max_timestamp
    )
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence, ours.records_count) == (
        theirs.producer_id, theirs.producer_epoch, theirs.base_sequence, theirs.records_count
    )
    assert (ours.last_sequence, ours.is_transactional, ours.is_control, ours.timestamp_type) == (
        theirs.last_sequence, theirs.is_transactional, theirs.is_control_batch, "CreateTime"
    )
    payload = records_payload(ours, raw)
    records = decode_records(ours, payload)
    assert records == parse_records_with_schema(ours, payload)
    their_records = list(theirs)
    assert len(records) == len(their_records) == len(RECORDS)
    for i, (mine, theirs_rec, spec) in enumerate(zip(records, their_records, RECORDS, strict=True)):
        assert (mine.offset, mine.timestamp, mine.key, mine.value) == (
            theirs_rec.offset, theirs_rec.timestamp, theirs_rec.key, theirs_rec.value
        ) == (i, spec[2], spec[0], spec[1])
        assert [(h.key, h.value) for h in mine.headers] == list(theirs_rec.headers) == spec[3]
        assert mine.offset_delta == i and mine.attributes == 0
        base_sequence = PRODUCER_STATES[state].get("base_sequence", -1)
        expected_seq = -1 if base_sequence < 0 else (base_sequence + i) % 2**31
        assert mine.sequence == expected_seq


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_batches_of_kafka_python_parse_identically(magic, codec):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    specs = RECORDS if codec else RECORDS[:1]  # an uncompressed legacy "batch" is one message
    for i, (key, value, ts, _headers) in enumerate(specs):
        assert builder.append(i, timestamp=ts, key=key, value=value) is not None
    raw = bytes(builder.build())
    if not codec:
        raw = raw[: parse_legacy_entry(raw).size]
    entry = parse_legacy_entry(raw)
    theirs = LegacyRecordBatch(raw, magic)
    assert entry.crc_valid and theirs.validate_crc()
    assert (entry.offset, entry.size, entry.magic, entry.compression) == (
        theirs.base_offset, theirs.size_in_bytes, theirs.magic, theirs.compression_type
    )
    if codec == codecs.LZ4 and magic == 0:  # kafka-python writes the broken HC (KAFKA-3160) for magic 0
        head = codecs.read_lz4_header(entry.value)
        assert head.hc == head.broken_hc != head.expected_hc
    records = inner_messages(entry)
    their_records = list(theirs)
    assert len(records) == len(their_records) == len(specs)
    ts_type = {None: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
    for i, (mine, theirs_rec, spec) in enumerate(zip(records, their_records, specs, strict=True)):
        assert (mine.offset, mine.key, mine.value, mine.crc) == (
            theirs_rec.offset, theirs_rec.key, theirs_rec.value, theirs_rec.checksum
        ) == (i, spec[0], spec[1], theirs_rec.checksum)
        expected_ts = spec[2] if magic == 1 else -1
        assert mine.timestamp == expected_ts == (theirs_rec.timestamp if magic == 1 else -1)
        assert mine.timestamp_type == ts_type[theirs_rec.timestamp_type]
        assert mine.crc_valid and theirs_rec.validate_crc()


def test_uncompressed_legacy_messages_are_byte_identical():
    for magic in (0, 1):
        for key, value, ts, _ in RECORDS[:4]:
            builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
            builder.append(7, timestamp=ts, key=key, value=value)
            assert bytes(builder.build()) == build_legacy_message(7, key, value, magic=magic, timestamp=ts)


# ------------------------------------------------------------------------------- parsers -> kafka-python


def our_specs() -> list[RecordSpec]:
    return [RecordSpec(key, value, ts, list(headers)) for key, value, ts, headers in RECORDS]


BUILD_VARIANTS = {
    "plain": {},
    "idempotent": {"producer_id": 99, "producer_epoch": 2, "base_sequence": 1000},
    "transactional": {"transactional": True, "producer_id": 5, "producer_epoch": 0, "base_sequence": 0},
    "log-append-time": {"timestamp_type_log_append": True, "max_timestamp": TS + 10**6},
    "restamped": {"base_offset": 123456789, "partition_leader_epoch": 17},
}


@pytest.mark.parametrize("variant", list(BUILD_VARIANTS))
@pytest.mark.parametrize("codec", V2_CODECS)
def test_our_v2_batches_read_by_kafka_python(codec, variant):
    options = BUILD_VARIANTS[variant]
    raw = build_batch(our_specs(), compression=codec, **options)
    batches = list(MemoryRecords(raw))
    assert len(batches) == 1
    theirs = batches[0]
    assert isinstance(theirs, DefaultRecordBatch)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec and theirs.records_count == len(RECORDS)
    assert theirs.base_offset == options.get("base_offset", 0)
    assert theirs.leader_epoch == options.get("partition_leader_epoch", 0)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (
        options.get("producer_id", -1), options.get("producer_epoch", -1), options.get("base_sequence", -1)
    )
    assert theirs.is_transactional == options.get("transactional", False)
    log_append = options.get("timestamp_type_log_append", False)
    assert theirs.timestamp_type == int(log_append)
    their_records = list(theirs)
    for i, (rec, (key, value, ts, headers)) in enumerate(zip(their_records, RECORDS, strict=True)):
        assert rec.offset == theirs.base_offset + i
        assert rec.timestamp == (TS + 10**6 if log_append else ts)
        assert (rec.key, rec.value, list(rec.headers)) == (key, value, headers)


def test_our_control_batch_read_by_kafka_python():
    marker = RecordSpec(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 12), TS)
    raw = build_batch(
        [marker], base_offset=40, transactional=True, control=True, producer_id=5, producer_epoch=0
    )
    theirs = next(iter(MemoryRecords(raw)))
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.is_transactional
    (record,) = list(theirs)
    assert record.commit and record.offset == 40 and record.type == 1


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_our_legacy_entries_read_by_kafka_python(magic, codec):
    specs = [LegacyMessageSpec(key, value, ts) for key, value, ts, _ in RECORDS]
    if codec:
        raw = build_legacy_wrapper(specs, magic=magic, compression=codec, offset=1000 + len(specs) - 1,
                                   log_append_time=TS + 99 if magic == 1 else None)
    else:
        specs = specs[:1]
        first = specs[0]
        raw = build_legacy_message(1000, first.key, first.value, magic=magic, timestamp=first.timestamp)
    batches = list(MemoryRecords(raw))
    assert len(batches) == 1
    theirs = batches[0]
    assert isinstance(theirs, LegacyRecordBatch) and theirs.magic == magic
    assert theirs.validate_crc() and theirs.compression_type == codec
    their_records = list(theirs)
    assert [r.offset for r in their_records] == list(range(1000, 1000 + len(specs)))
    for rec, spec in zip(their_records, specs, strict=True):
        assert rec.validate_crc()
        assert (rec.key, rec.value) == (spec.key, spec.value)
        if magic == 1:
            assert rec.timestamp == (TS + 99 if codec else spec.timestamp)
            assert rec.timestamp_type == (1 if codec else 0)
        else:
            assert rec.timestamp_type is None
    assert [r.offset for r in inner_messages(parse_legacy_entry(raw))] == [r.offset for r in their_records]


# ------------------------------------------------------------------------------------ malformed records


def test_record_of_length_zero_at_the_end_of_the_payload_is_a_parse_error():
    # Found by this cross-check: decode_records used to leak IndexError here (fixed in record_batch.py).
    raw = bytearray(build_batch([RecordSpec(b"k", b"v", TS)]))
    body = b"\x00"  # one record whose length varint says 0 bytes follow
    raw = raw[:61] + body
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    raw = bytes(raw)
    with pytest.raises(CorruptRecordError):  # kafka-python: "Found invalid record structure"
        list(DefaultRecordBatch(raw))
    batch = parse_header(raw)
    with pytest.raises(ParseError):
        decode_records(batch, records_payload(batch, raw))
