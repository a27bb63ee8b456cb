"""The parser entry points ``bench/fuzz.py`` drives, one :class:`Target` each.

A target takes one mutated input (``bytes``) and runs a parser entry point over it to the end (every record
of every batch, every lazy property a caller reads). The only exception a parser may raise for bad input is
``parsers.errors.ParseError``; anything else the fuzzer reports as a bug.

Files are written to a per-worker scratch file (in ``/dev/shm`` when available) for the entry points that
take a path (the segment walker and its columnar fast path).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fuzz_mutate import LEGACY_FIELDS, V2_FIELDS, fix_snapshot_crc, fix_v2_crcs
from fuzz_seeds import FLEXIBLE_SCHEMAS, split_pair

from parsers import (
    checkpoints,
    codecs,
    consumer_offsets,
    control,
    dirfiles,
    flexible,
    indexes,
    legacy,
    metadata,
    primitives,
    producer_snapshot,
    record_batch,
    segment,
)
from parsers.errors import ParseError


@dataclass(frozen=True)
class Target:
    """One entry point: its seed kinds, how inputs are edited and fixed up, and the call itself."""

    name: str
    kinds: tuple[str, ...]
    run: Callable[[bytes, random.Random, Scratch], None]
    text: bool = False
    fields: tuple[int, ...] = ()
    fixup: Callable[[bytes], bytes] | None = None
    layout: str | tuple | None = None
    """Where ``fields`` repeat: ``"entries"`` (every entry of a segment) or (header, slot size, offsets)."""
    inside: bool = False
    """Entries can be edited inside their compression (``fuzz_mutate.mutate_inside``)."""


class Scratch:
    """A worker's scratch files for entry points that read a path (never an audited directory)."""

    def __init__(self, root: str) -> None:
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.log = os.path.join(root, "00000000000000000000.log")
        self.checkpoint = os.path.join(root, "00000000000000000100-0000000002.checkpoint")

    def write(self, path: str, data: bytes) -> str:
        with open(path, "wb") as fh:  # the scratch file this worker owns
            fh.write(data)
        return path

    def cleanup(self) -> None:
        for path in (self.log, self.checkpoint):
            if os.path.exists(path):
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(self.root)


def _drain(items: Iterable) -> int:
    """Consume an iterable (a list or a streaming generator) without keeping it."""
    n = 0
    for _ in items:
        n += 1
    return n


def _records(batch, rng: random.Random, raw: bytes | None = None, pread=None):
    """The batch's records through one of the parsers' readers: the streaming ``batch_records`` (reading the
    file through ``pread``, or ``raw`` holding the batch from its first byte), ``iter_records`` over pieces,
    or ``decode_records`` over the whole decompressed section."""
    if pread is None:

        def pread(position: int, size: int) -> bytes:
            start = position - batch.position
            return raw[start : start + size]

    stream = getattr(record_batch, "batch_records", None)
    if stream is not None and rng.random() < 0.7:
        return stream(batch, pread, payloads=rng.random() < 0.8)  # without payloads: sizes only
    payload = record_batch.records_payload(
        batch, raw if raw is not None else pread(batch.position, batch.size)
    )
    iterate = getattr(record_batch, "iter_records", None)
    if iterate is not None and rng.random() < 0.5:
        pieces = [payload[i : i + 4096] for i in range(0, len(payload), 4096)]
        return iterate(batch, pieces, total=len(payload))
    return record_batch.decode_records(batch, payload)


VALUES_PER_BATCH = 100
"""Data records whose values are tried as metadata / offsets records, per batch (the rest only decoded)."""


def _record_contents(batch, records, rng: random.Random, values: str = "any") -> None:
    """What dump/scan/audit do with records: control records decoded; the values of data records decoded as
    KRaft metadata records (``values="metadata"``) or, for ``"any"``, tried as metadata records or
    ``__consumer_offsets`` keys/values (errors there are expected: most data records are neither)."""
    for n, record in enumerate(records):
        if n >= VALUES_PER_BATCH and values != "metadata":
            continue  # the rest is the record decoder's work alone
        sizes = (getattr(record, "key_size", -1), getattr(record, "value_size", -1))
        if record.key is None and record.value is None and sizes != (-1, -1):
            continue  # read without payloads
        if batch.is_control:
            control.decode_control_record(record.key, record.value)
        elif values == "metadata":
            metadata.decode_metadata_record(record.value)
        elif rng.random() < 0.5:
            with contextlib.suppress(ParseError):
                metadata.decode_metadata_record(record.value)
        else:
            with contextlib.suppress(ParseError):
                key = consumer_offsets.decode_offsets_key(record.key)
                consumer_offsets.decode_offsets_value(key, record.value)


def _run_batch(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    batch = record_batch.parse_header(data, 0)
    _ = (
        batch.crc_valid,
        batch.last_offset,
        batch.timestamp_type,
        batch.last_sequence,
        batch.delete_horizon_ms,
    )
    raw = data[: batch.size]
    if rng.random() < 0.25:  # the Construct declaration of the records (slow: small sections only)
        with contextlib.suppress(ParseError):
            payload = record_batch.records_payload(batch, raw, max_bytes=16 << 10)
            record_batch.parse_records_with_schema(batch, payload)
    _record_contents(batch, _records(batch, rng, raw=raw), rng)


def _run_legacy(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    entry = legacy.parse_legacy_entry(data, 0)
    _ = (entry.compression_name, entry.last_offset, entry.next_offset)
    segment.legacy_block(entry)
    span = getattr(legacy, "header_span", None)
    if span is not None:
        span(entry)
    records = legacy.inner_messages(entry, ensure_matching_magic=rng.random() < 0.5)
    _drain(records)
    legacy.base_offset(entry)


def _codec(codec: int) -> Callable[[bytes, random.Random, Scratch], None]:
    def run(data: bytes, rng: random.Random, scratch: Scratch) -> None:
        magic = rng.choice((0, 1, 2, 2))
        if codec == codecs.LZ4 and rng.random() < 0.3:
            codecs.read_lz4_header(data)
        if codec == codecs.ZSTD and rng.random() < 0.3:
            codecs.zstd_frames(data)
        stream = getattr(codecs, "stream", None)
        if stream is not None and rng.random() < 0.5:
            _drain(stream(codec, codecs.Source.of_buffer(data), magic=magic, notes=codecs.DecodeNotes()))
        else:
            codecs.decompress(codec, data, magic=magic, notes=codecs.DecodeNotes())

    return run


def _base(rng: random.Random) -> int:
    return rng.choice((0, 0, 30, 2**31 - 1, 2**62, 2**63 - 1))


def _index_scan(data: bytes, rng: random.Random, kind_name: str, base: int, path: str) -> None:
    """The windowed, vectorised index reader (``IndexScan``) when the parsers have it."""
    scan = getattr(indexes, "IndexScan", None)
    if scan is None:
        return
    kind = getattr(indexes, kind_name)
    window = rng.choice((indexes.INDEX_WINDOW, 4096))
    if rng.random() < 0.3:
        _drain(scan.of_bytes(kind, data, window=window).prefix())
    else:
        shape, _entries = scan.of_bytes(kind, data, window=window).run()
        indexes.sanity_check_index_shape(shape, kind, base, path)


def _run_offset_index(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    base = _base(rng)
    indexes.read_offset_index(data, base)
    indexes.sanity_check_offset_index(data, base, "00000000000000000000.index")
    _index_scan(data, rng, "OFFSET_INDEX", base, "00000000000000000000.index")


def _run_time_index(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    base = _base(rng)
    indexes.read_time_index(data, base)
    indexes.sanity_check_time_index(data, base, "00000000000000000000.timeindex")
    _index_scan(data, rng, "TIME_INDEX", base, "00000000000000000000.timeindex")


def _run_txn_index(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    path = "00000000000000000000.txnindex"
    iterate = getattr(indexes, "iter_txn_index", None)
    if iterate is not None and rng.random() < 0.5:
        window = rng.choice((indexes.INDEX_WINDOW, 4096))
        for table in iterate(lambda pos, n: data[pos : pos + n], len(data), path, window=window):
            for entry in indexes.txn_entries(table):
                entry.kafka_str()
        return
    index = indexes.read_txn_index(data, path)
    for entry in index.entries:
        entry.kafka_str()
    indexes.sanity_check_txn_index(index, _base(rng), path)


def _run_snapshot(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    snapshot = producer_snapshot.read_producer_snapshot(data, "00000000000000000030.snapshot")
    for entry in snapshot.entries:
        entry.to_dict()
    producer_snapshot.verify_producer_snapshot(data, "00000000000000000030.snapshot")


def _run_offset_checkpoint(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    checkpoints.parse_offset_checkpoint(data, "replication-offset-checkpoint").as_dict()


def _run_epoch_checkpoint(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    checkpoints.parse_leader_epoch_checkpoint(data, "leader-epoch-checkpoint").normalized()


def _run_partition_metadata(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    dirfiles.parse_partition_metadata(data, "partition.metadata")


def _run_meta_properties(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    dirfiles.parse_meta_properties(data, "meta.properties")  # through load_java_properties


def _run_quorum_state(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    dirfiles.parse_quorum_state(data, "quorum-state")


def _run_clean_shutdown(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    dirfiles.parse_clean_shutdown(data, ".kafka_cleanshutdown")


NAME_MAX = 255
"""Longest file name on Linux file systems: name inputs are cut to it."""


def _run_names(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    name = os.fsdecode(data[:NAME_MAX].replace(b"/", b"_").replace(b"\0", b"_"))
    for parse in (
        dirfiles.parse_partition_dir_name,
        dirfiles.parse_segment_file_name,
        dirfiles.parse_kraft_snapshot_file_name,
        dirfiles.parse_kraft_snapshot_name,
        producer_snapshot.snapshot_offset_from_name,
        segment.base_offset_from_name,
    ):
        with contextlib.suppress(ParseError):
            parse(name)


def _run_metadata_record(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    metadata.decode_metadata_record(data).to_json()


def _run_control_record(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    key, value = split_pair(data)
    control.decode_control_record(key, value if rng.random() < 0.95 else None)


def _run_offsets_record(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    key, value = split_pair(data)
    decoded = consumer_offsets.decode_offsets_key(key)
    consumer_offsets.decode_offsets_value(decoded, value if value else None)


def _run_consumer_protocol(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    if not data:
        return
    schema = (consumer_offsets.CONSUMER_PROTOCOL_SUBSCRIPTION, consumer_offsets.CONSUMER_PROTOCOL_ASSIGNMENT)
    consumer_offsets.decode_consumer_protocol(schema[data[0] % 2], data[1:])


def _run_flexible(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    if len(data) < 2:
        return
    schema = FLEXIBLE_SCHEMAS[data[0] % len(FLEXIBLE_SCHEMAS)]
    version = data[1] if rng.random() < 0.9 else rng.choice((-1, 2**15, 2**31))
    if rng.random() < 0.5:
        flexible.decode_exact(schema, version, data[2:])
    else:
        flexible.decode_message(schema, version, data, 2)


def _run_primitives(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    data = data[:4096]
    for read in (primitives.read_uvarint, primitives.read_varint, primitives.read_varlong):
        pos = 0
        while pos < len(data):
            try:
                _, pos = read(data, pos)
            except ParseError:
                break
    if len(data) >= 16 and rng.random() < 0.3:
        primitives.uuid_to_str(data[:16])
        primitives.uuid_from_str(data[16:].decode("latin-1"))


def _walk_deep(walker: segment.SegmentWalker, rng: random.Random, values: str) -> ParseError | None:
    """``dump --deep``: every entry, then the records of every v2 batch, the inner messages of legacy ones.
    Returns the first records error (the walk goes on after it, as the dump does)."""
    first: ParseError | None = None
    for item in walker:
        try:
            if isinstance(item, record_batch.RecordBatch):
                _ = (item.crc_valid, item.is_control, item.last_offset)
                if hasattr(walker, "batch_crc") and rng.random() < 0.2:
                    walker.batch_crc(item)
                if hasattr(walker, "records") and rng.random() < 0.5:
                    records = walker.records(item, payloads=rng.random() < 0.8)
                else:
                    records = _records(item, rng, pread=walker.read)
                _record_contents(item, records, rng, values)
            else:
                _drain(legacy.inner_messages(item))
        except ParseError as exc:
            first = first or exc
    return first


def _walk(walker: segment.SegmentWalker, rng: random.Random, mode: int, values: str = "any") -> None:
    """One of the walker's interfaces to the end; ParseError when the walk or a batch's records are not
    clean (what Kafka's recovery would truncate, or records a consumer could not read)."""
    try:
        if mode == 0:
            problem = _walk_deep(walker, rng, values)
        elif mode == 1:
            problem = None
            for block in walker.header_blocks():
                _ = (len(block), block.crc_ok)
        else:
            problem = None
            _drain(walker.headers())
    finally:
        walker.close()
    stop = walker.stop
    assert stop is not None, "the walk ended without a stop record"
    if not stop.clean:
        raise ParseError(stop.message or stop.reason, offset=stop.position)
    if problem is not None:
        raise problem


def _run_segment(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    path = scratch.write(scratch.log, data)
    window = rng.choice((segment.DEFAULT_WINDOW, 1 << 16))
    walker = segment.SegmentWalker(path, stop_on_invalid=rng.random() < 0.5, window=window)
    _walk(walker, rng, rng.randrange(3))


def _run_kraft_checkpoint(data: bytes, rng: random.Random, scratch: Scratch) -> None:
    path = scratch.write(scratch.checkpoint, data)
    _walk(segment.SegmentWalker(path, stop_on_invalid=rng.random() < 0.5), rng, 0, "metadata")


_BATCH_FIX = fix_v2_crcs
TEXT_KINDS = (
    "offset_checkpoint",
    "leader_epoch_checkpoint",
    "partition_metadata",
    "meta_properties",
    "quorum_state",
    "clean_shutdown",
)

TARGETS: tuple[Target, ...] = (
    Target("record_batch", ("batch",), _run_batch, fields=V2_FIELDS, fixup=_BATCH_FIX, inside=True),
    Target(
        "legacy",
        ("legacy_entry",),
        _run_legacy,
        fields=LEGACY_FIELDS,
        fixup=_BATCH_FIX,
        layout="entries",
        inside=True,
    ),
    Target("codecs.gzip", ("compressed:1",), _codec(codecs.GZIP)),
    Target("codecs.snappy", ("compressed:2",), _codec(codecs.SNAPPY), fields=(0, 8, 12, 16, 20)),
    Target("codecs.lz4", ("compressed:3",), _codec(codecs.LZ4), fields=(0, 4, 5, 6, 7, 11)),
    Target("codecs.zstd", ("compressed:4",), _codec(codecs.ZSTD), fields=(0, 4, 5, 6)),
    Target("indexes.offset", ("index",), _run_offset_index, layout=(0, 8, (0, 4))),
    Target("indexes.time", ("timeindex",), _run_time_index, layout=(0, 12, (0, 8))),
    Target("indexes.txn", ("txnindex",), _run_txn_index, layout=(0, 34, (0, 1, 2, 10, 18, 26))),
    Target(
        "producer_snapshot",
        ("snapshot",),
        _run_snapshot,
        fields=(0, 2, 6),
        fixup=fix_snapshot_crc,
        layout=(10, 46, (0, 8, 10, 14, 22, 26, 34, 38)),
    ),
    Target("checkpoints.offset", ("offset_checkpoint",), _run_offset_checkpoint, text=True),
    Target("checkpoints.leader_epoch", ("leader_epoch_checkpoint",), _run_epoch_checkpoint, text=True),
    Target("dirfiles.partition_metadata", ("partition_metadata",), _run_partition_metadata, text=True),
    Target("dirfiles.meta_properties", ("meta_properties",), _run_meta_properties, text=True),
    Target("dirfiles.quorum_state", ("quorum_state",), _run_quorum_state, text=True),
    Target("dirfiles.clean_shutdown", ("clean_shutdown",), _run_clean_shutdown, text=True),
    Target("dirfiles.names", ("name",), _run_names, text=True),
    Target("metadata.record", ("metadata_record",), _run_metadata_record, fields=(0, 1, 2, 3)),
    Target("control.record", ("control_record",), _run_control_record, fields=(0, 2, 4, 6)),
    Target("consumer_offsets.record", ("offsets_record",), _run_offsets_record, fields=(0, 2, 4)),
    Target("consumer_offsets.protocol", ("consumer_protocol",), _run_consumer_protocol, fields=(1, 3, 5)),
    Target("flexible.message", ("flexible",), _run_flexible, fields=(0, 1, 2, 3)),
    Target("primitives.varints", ("metadata_record", "batch"), _run_primitives),
    Target(
        "segment.walker",
        ("segment", "legacy_segment"),
        _run_segment,
        fields=V2_FIELDS + LEGACY_FIELDS,
        fixup=_BATCH_FIX,
        layout="entries",
        inside=True,
    ),
    Target(
        "kraft.checkpoint",
        ("kraft_checkpoint",),
        _run_kraft_checkpoint,
        fields=V2_FIELDS,
        fixup=_BATCH_FIX,
        layout="entries",
        inside=True,
    ),
)
"""Every entry point; ``segment.walker`` covers the object walk, the header tuples, the columnar
``header_blocks`` fast path and the deep (records) walk, chosen per input."""

TARGETS_BY_NAME = {t.name: t for t in TARGETS}
