"""Cases of ``auditor/rules/segment.py`` (KA101-KA111): damaged, torn, overlapping or out-of-order batches,
undecodable control records, and records that do not decode (a record count that lies, lengths of 2^30,
invalid codec bits, a decompression bomb) next to every codec that decodes."""

from __future__ import annotations

import dataclasses
import os
import struct
from pathlib import Path

from auditor.rules.registry import REGISTRY, load_rules
from auditor.simulate.batches import batch_header, with_crc
from parsers import codecs
from parsers.dirfiles import segment_file_name
from parsers.primitives import crc32c, encode_varint, encode_varlong
from parsers.record_batch import CRC_START, LOG_OVERHEAD, RecordSpec, build_batch, encode_record
from tests.rules.builder import T0, Batch, LogDir, append, built, flip, put, standard, truncate
from tests.rules.harness import fire, silent


@fire("KA101")
def crc_flip(tmp, mp):
    ld, p = built(tmp)
    w = p.written[2]
    flip(p.seg_path(0), w.position + 70)
    return [ld.root]


@silent("KA101", "KA102", "KA103")
@fire("KA107")
def epoch_flip(tmp, mp):
    """partitionLeaderEpoch is outside the CRC: a flipped epoch passes the CRC check."""
    ld, p = built(tmp)
    w = p.written[8]  # segment 1, epoch 0 -> 64
    flip(p.seg_path(1), w.position + 12 + 3 - 0, 0x40)
    return [ld.root]


@fire("KA102", "KA401")
def torn_last_batch(tmp, mp):
    ld, p = built(tmp)
    log = p.seg_path(1)
    truncate(log, log.stat().st_size - 10)
    return [ld.root]


@fire("KA103")
def zero_tail(tmp, mp):
    ld, p = built(tmp)
    append(p.seg_path(1), bytes(40))
    return [ld.root]


@fire("KA103")
def bad_magic(tmp, mp):
    ld, p = built(tmp)
    put(p.seg_path(0), p.written[1].position + 16, ">b", 3)
    return [ld.root]


@fire("KA103")
def v2_batch_with_legacy_magic(tmp, mp):
    """A v2 batch whose magic byte became 0 or -1: it reads as a (broken) legacy message."""
    ld, p = built(tmp)
    put(p.seg_path(0), p.written[1].position + 16, ">b", 0)
    put(p.seg_path(1), p.written[6].position + 16, ">b", -1)
    return [ld.root]


@fire("KA104", "KA108")
def segment_starts_late(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).roll().add(Batch(base_offset=20)).data(2)
    ld.write()
    os.rename(p.seg_path(1), p.path / segment_file_name(15, ".log"))
    for suffix in (".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(15, suffix))
    return [ld.root]


@fire("KA104")
def batch_below_segment_base(tmp, mp):
    ld, p = built(tmp)
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(16, suffix))
    return [ld.root]


@silent("KA104", "KA108")
def compacted_gaps(tmp, mp):
    """Compaction: gaps inside and between batches, a segment starting above its name, a 0-byte segment."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("compacted")
    p.data(2, offset_step=2).roll().add(Batch(base_offset=20)).data(2, offset_step=3).roll()
    p.cleaner = 10
    ld.write()
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(12, suffix))
    assert p.seg_path(2).stat().st_size == 0  # the empty active segment after the roll
    return [ld.root]


@fire("KA105")
def offsets_backwards(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).add(Batch(base_offset=2)).data(2)
    ld.write()
    return [ld.root]


@fire("KA106")
def overlapping_segments(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).roll().add(Batch(base_offset=10)).data(2)
    ld.write()
    return [ld.root]


@fire("KA107")
def epoch_goes_back(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(3, epoch=2).data(2, epoch=1)
    p.epoch_cache = [(1, 0), (2, 9)]
    ld.write()
    return [ld.root]


@fire("KA108")
def gap_without_compaction(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(3).add(Batch(base_offset=20)).data(1)
    ld.write()
    return [ld.root]


@fire("KA109")
def offset_overflow(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part(index_interval=10**9)
    p.data(2).add(Batch(base_offset=2**31 + 10))
    p.cleaner = 0
    ld.write()
    return [ld.root]


@fire("KA110")
def undecodable_marker(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="BAD", producer_id=7)).data(1)
    ld.write()
    return [ld.root]


def raw_batch(
    records: bytes, count: int, base_offset: int, compression: int = 0, last_delta: int = 0
) -> bytes:
    """A v2 batch around an arbitrary (possibly broken) records section, with a correct CRC-32C."""
    header = batch_header(
        base_offset, len(records), count, timestamp=T0, attributes=compression, last_offset_delta=last_delta
    )
    return with_crc(header, records)


def _deep(mp) -> None:
    load_rules()
    mp.setitem(REGISTRY, "KA111", dataclasses.replace(REGISTRY["KA111"], lifecycle="stable"))


def _with_batch(tmp: Path, mp, make) -> list[Path]:
    """The standard log dir with the batch ``make(next_offset)`` appended to its active segment."""
    _deep(mp)
    ld, p = standard(tmp / "broker-1")
    ld.write()
    with open(p.seg_path(len(p.bases) - 1), "ab") as fh:
        fh.write(make(p.leo))
    return [ld.root]


@fire("KA111")
def record_count_lies(tmp, mp):
    """recordsCount says 4, the records section holds 3 records (premature EOF), CRC recomputed."""
    _deep(mp)
    ld, p = standard(tmp / "broker-1")
    ld.write()
    path = p.seg_path(0)
    data = bytearray(path.read_bytes())
    (count,) = struct.unpack_from(">i", data, 57)
    struct.pack_into(">i", data, 57, count + 1)
    size = struct.unpack_from(">i", data, 8)[0] + LOG_OVERHEAD
    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[CRC_START:size]))
    path.write_bytes(bytes(data))
    return [ld.root]


@fire("KA111")
def key_length_two_to_the_thirty(tmp, mp):
    def make(base: int) -> bytes:
        body = b"\x00" + encode_varlong(0) + encode_varint(0) + encode_varint(1 << 30) + b"key" + b"\x00\x00"
        return raw_batch(encode_varint(len(body)) + body, 1, base)

    return _with_batch(tmp, mp, make)


@fire("KA111")
def invalid_codec_bits(tmp, mp):
    record = encode_record(0, 0, b"k", b"v")
    return _with_batch(tmp, mp, lambda base: raw_batch(record, 1, base, compression=5))


@fire("KA111")
def zstd_bomb_over_the_limit(tmp, mp):
    """65 MiB of zeros (above the 64 MiB decompression limit) in a ~2 KB zstd stream."""
    bomb = codecs.compress(codecs.ZSTD, bytes(65 << 20))
    return _with_batch(tmp, mp, lambda base: raw_batch(bomb, 1, base, compression=codecs.ZSTD))


@fire("KA111")
def bytes_after_the_declared_records(tmp, mp):
    def make(base: int) -> bytes:
        records = encode_record(0, 0, b"k", b"v") + encode_record(1, 0, b"k", b"v")
        return raw_batch(records, 1, base, last_delta=0)

    return _with_batch(tmp, mp, make)


@silent("KA111")
def every_codec_decodes(tmp, mp):
    """Valid batches of every codec, a null key, headers and a 2 MiB value (read piece by piece)."""

    def make(base: int) -> bytes:
        out = b""
        for codec in (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
            specs = [
                RecordSpec(None, b"v" * 100, T0, headers=[("h", b"x"), ("n", None)]),
                RecordSpec(b"k", b"w" * (2 << 20), T0 + 1),
            ]
            out += build_batch(specs, base_offset=base, compression=codec)
            base += 2
        return out

    return _with_batch(tmp, mp, make)


@silent("KA111")
def deep_baseline(tmp, mp):
    _deep(mp)
    ld, _ = standard(tmp / "broker-1")
    ld.write()
    return [ld.root]


@fire("KA111")
def more_records_than_the_budget(tmp, mp):
    """2 M declared records (14 MiB of 7-byte records, 3 KB of zstd): a warning, left undecoded."""
    from parsers.record_batch import MAX_RECORDS_PER_BATCH

    count = MAX_RECORDS_PER_BATCH * 2
    tiny = bytes([0x0C, 0, 0, 0, 1, 1, 0])
    records = codecs.compress(codecs.ZSTD, tiny * count)
    return _with_batch(tmp, mp, lambda base: raw_batch(records, count, base, codecs.ZSTD, count - 1))
