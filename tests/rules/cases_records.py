"""Fire/silent fixtures of scan rules added for hostile inputs (records).

KA111 is opt-in (``scan --deep`` selects it); each fixture enables it as the default selection would a
stable rule, so that the harness's plain ``scan()`` decodes the records.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

from auditor.rules.registry import REGISTRY, load_rules
from auditor.simulate.batches import batch_header, with_crc
from parsers import codecs
from parsers.primitives import crc32c, encode_varint, encode_varlong
from parsers.record_batch import CRC_START, LOG_OVERHEAD, RecordSpec, build_batch, encode_record
from tests.rules.builder import T0, standard

CODES: list[str] = ["KA111"]
"""The scan rule codes whose fixtures live here (added to ``cases.ALL_CODES``)."""

from tests.rules.cases import fire, silent  # noqa: E402


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
