"""Hostile records (issue 8, items 6 and 8): decompression bombs of tiny records, batches far larger than the
read window, records that do not decode. Each input is built here (sparse files for the big ones); each
command runs in a subprocess with its time and peak RSS bounded."""

from __future__ import annotations

import json
from pathlib import Path

import crc32c as _crc32c
import zstandard

from auditor.simulate.batches import batch_header, with_crc
from parsers import codecs
from parsers.dirfiles import segment_file_name
from parsers.primitives import encode_varint, encode_varlong
from parsers.record_batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    CRC_START,
    RECORD_BATCH_OVERHEAD,
    RecordSpec,
    build_batch,
    encode_record,
)
from tests.rules.builder import T0, standard

TINY_RECORD = bytes([0x0C, 0, 0, 0, 1, 1, 0])
"""The smallest v2 record: length 6, attributes, timestamp delta 0, offset delta 0, null key and value, no
headers."""
BOMB_RECORDS = (64 << 20) // len(TINY_RECORD)  # 9.6 M records: 64 MiB decompressed
MiB = 1 << 20


def raw_batch(records: bytes, count: int, base: int = 0, attributes: int = 0) -> bytes:
    return with_crc(batch_header(base, len(records), count, timestamp=T0, attributes=attributes), records)


def zstd_records(records: bytes, count: int) -> bytes:
    """``records`` and then ``count`` tiny records as one zstd stream, compressed 1 MiB at a time."""
    out = zstandard.ZstdCompressor().compressobj()
    parts = [out.compress(records)]
    chunk = TINY_RECORD * (MiB // len(TINY_RECORD))
    per = MiB // len(TINY_RECORD)
    for i in range(0, count, per):
        parts.append(out.compress(chunk[: min(per, count - i) * len(TINY_RECORD)]))
    return b"".join(parts) + out.flush()


def zstd_bomb(count: int = BOMB_RECORDS, attributes: int = 0, base: int = 0) -> bytes:
    """A few KB zstd batch whose records section decompresses to ``count`` tiny records."""
    return raw_batch(zstd_records(b"", count), count, base, attributes | codecs.ZSTD)


def logdir_with(tmp: Path, batch: bytes, *, metadata: bool = False) -> tuple[Path, Path]:
    """The standard log dir with ``batch`` appended to the active segment of ``orders-0`` (or of
    ``__cluster_metadata-0``); returns (log dir, that segment)."""
    ld, p = standard(tmp / "broker-1")
    ld.write()
    if metadata:
        segment = sorted((ld.root / "__cluster_metadata-0").glob("*.log"))[-1]
    else:
        segment = p.seg_path(len(p.bases) - 1)
    with open(segment, "ab") as fh:
        fh.write(batch)
    return ld.root, segment


# ----------------------------------------------------------------------------------- tiny-record bombs


def test_metadata_bomb_of_tiny_records_costs_neither_time_nor_memory(tmp_path, bounded):
    """A 6 KB zstd ``__cluster_metadata`` batch holding 9.6 M records (64 MiB): 40 s and 2.3 GB before."""
    bomb = zstd_bomb(base=1000)
    assert len(bomb) < 8 << 10
    root, segment = logdir_with(tmp_path, bomb, metadata=True)
    res = bounded(["scan", str(root), "--format", "json"], timeout=30)
    assert res.returncode in (0, 1), res.stderr
    assert res.seconds < 10 and res.peak_rss_mb < 200, (res.seconds, res.peak_rss_mb)
    deep = bounded(["scan", "--deep", str(root), "--format", "json"], timeout=30)
    found = [f for f in json.loads(deep.stdout)["findings"] if f["code"] == "KA111"]
    assert found and found[0]["severity"] == "warning" and "not checked" in found[0]["message"], found
    assert deep.seconds < 10 and deep.peak_rss_mb < 200, (deep.seconds, deep.peak_rss_mb)
    dump = bounded(["dump", "--deep", str(segment)], timeout=30)
    assert dump.returncode == 2 and "not decoded" in dump.stderr
    assert dump.seconds < 10 and dump.peak_rss_mb < 200, (dump.seconds, dump.peak_rss_mb)


def test_control_bomb_reads_only_the_first_record(tmp_path, bounded):
    """A compressed COMMIT marker batch padded with 9.6 M records: Kafka reads only its first record."""
    from parsers.control import encode_end_txn_marker

    key, value = encode_end_txn_marker(True, 0)
    first = encode_record(0, 0, key, value)
    records = zstd_records(first, BOMB_RECORDS)
    batch = raw_batch(records, BOMB_RECORDS + 1, 1000, ATTR_CONTROL | ATTR_TRANSACTIONAL | codecs.ZSTD)
    root, _ = logdir_with(tmp_path, batch)
    res = bounded(["scan", str(root), "--format", "json", "--select", "KA110"], timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.seconds < 10 and res.peak_rss_mb < 200, (res.seconds, res.peak_rss_mb)


def test_record_decoding_memory_does_not_grow_with_the_record_count(tmp_path, bounded):
    """``scan --deep`` of 100 k records and ``dump --deep`` of 10 k: no list of records is built (a scan of a
    small log dir peaks at ~65 MB; 100 k ``Record`` objects alone would add more than 30 MB)."""
    root, _ = logdir_with(tmp_path / "many", zstd_bomb(100_000, base=1000))
    res = bounded(["scan", "--deep", str(root), "--format", "json"], timeout=60)
    assert not [f for f in json.loads(res.stdout)["findings"] if f["code"] == "KA111"]
    assert res.peak_rss_mb < 100, res.peak_rss_mb
    _, segment = logdir_with(tmp_path / "dump", zstd_bomb(10_000, base=1000))
    dump = bounded(["dump", "--deep", "--format", "jsonl", str(segment)], timeout=60)
    assert dump.returncode == 0, dump.stderr
    assert json.loads(dump.stdout.splitlines()[-1])["records"] >= 10_000
    assert dump.peak_rss_mb < 100, dump.peak_rss_mb


# ------------------------------------------------------------------------------- batches over the window


def write_sparse_batch(fh, position: int, base: int, size: int) -> int:
    """A CRC-valid batch of ``size`` bytes holding one record whose value is ``size`` - ~80 zero bytes; only
    the first ~80 bytes are written, the rest is a hole (reads as zeros). Returns the value's size."""
    records_size = size - RECORD_BATCH_OVERHEAD
    value = records_size - 20
    while True:
        body = b"\x00" + encode_varlong(0) + encode_varint(0) + encode_varint(-1) + encode_varint(value)
        body_len = len(body) + value + 1  # ... the value, then a zero header count
        total = len(encode_varint(body_len)) + body_len
        if total == records_size:
            break
        value += records_size - total
    prefix = encode_varint(body_len) + body
    head = batch_header(base, records_size, 1, timestamp=T0)
    crc = _crc32c.crc32c(head[CRC_START:] + prefix)
    zeros = bytes(MiB)
    left = value + 1
    while left:
        step = min(left, len(zeros))
        crc = _crc32c.crc32c(memoryview(zeros)[:step], crc)
        left -= step
    fh.seek(position)
    fh.write(batch_header(base, records_size, 1, timestamp=T0, crc=crc) + prefix)
    return value


def test_batches_larger_than_the_window_are_never_held_whole(tmp_path, bounded):
    """Two CRC-valid 192 MiB batches in a sparse segment (2 GiB ones cost 4.2 GB of RSS before): peak RSS
    stays well below one batch."""
    part = tmp_path / "broker-1" / "orders-0"
    part.mkdir(parents=True)
    segment = part / segment_file_name(0, ".log")
    size = 192 * MiB
    with open(segment, "wb") as fh:
        for i in range(2):
            value = write_sparse_batch(fh, i * size, i, size)
        fh.truncate(2 * size)
    for args in (
        ["scan", "--deep", str(tmp_path / "broker-1"), "--format", "json"],
        ["dump", "--deep", str(segment)],
    ):
        res = bounded(args, timeout=60)
        assert res.peak_rss_mb < 300, (args[0], res.peak_rss_mb)
        assert res.seconds < 30, (args[0], res.seconds)
        if args[0] == "dump":
            assert res.returncode == 0, res.stderr
            assert res.stdout.count("| offset:") == 2 and f"valueSize: {value} " in res.stdout
        else:
            codes = {f["code"] for f in json.loads(res.stdout)["findings"]}
            assert not codes & {"KA101", "KA111", "KA002"}, codes


# ------------------------------------------------------------------------- records that do not decode


def key_too_long_batch(base: int) -> tuple[bytes, int]:
    """A CRC-valid batch whose one record declares a key of 2^30 bytes; returns it and the batch-relative
    byte where decoding fails (just after the key length)."""
    body = b"\x00" + encode_varlong(0) + encode_varint(0) + encode_varint(1 << 30) + b"key" + b"\x00\x00"
    record = encode_varint(len(body)) + body
    failed_at = RECORD_BATCH_OVERHEAD + len(encode_varint(len(body))) + 3 + len(encode_varint(1 << 30))
    return raw_batch(record, 1, base), failed_at


def test_dump_deep_marks_the_byte_where_records_stop_decoding(tmp_path, bounded):
    """A key of 2^30 bytes; a count that lies; a truncated gzip stream: in text, JSON Lines and JSON the
    marker is at the file byte where decoding failed, stderr has one line per file, exit 2."""
    good = build_batch([RecordSpec(b"k", b"v", T0)], base_offset=0)
    bad, failed_at = key_too_long_batch(1)
    tail = build_batch([RecordSpec(b"k", b"v", T0)], base_offset=2)
    first = tmp_path / segment_file_name(0, ".log")
    first.write_bytes(good + bad + tail)
    byte = len(good) + failed_at
    records = encode_record(0, 0, b"k", b"v") + encode_record(1, 0, b"k", b"v")
    lying = raw_batch(records, 3, 0)  # 3 declared, 2 present: premature EOF at the end of the records
    gz = raw_batch(codecs.compress(codecs.GZIP, records)[:-6], 2, 3, codecs.GZIP)  # truncated gzip member
    second = tmp_path / "other" / segment_file_name(0, ".log")
    second.parent.mkdir()
    second.write_bytes(lying + gz)
    files = [str(first), str(second)]

    text = bounded(["dump", "--deep", *files], timeout=30)
    assert text.returncode == 2
    assert f"!! byte {byte}:" in text.stdout and f"!! byte {len(lying)}:" in text.stdout
    assert "baseOffset: 2" in text.stdout  # the batches after it are still shown
    lines = text.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in text.stderr
    assert f"{first}: byte {byte}:" in lines[0] and "key of 1073741824 bytes" in lines[0]
    assert f"{second}: byte {len(lying)}:" in lines[1] and "(2 batches do not decode)" in lines[1]

    jsonl = bounded(["dump", "--deep", "--format", "jsonl", *files], timeout=30)
    events = [json.loads(line) for line in jsonl.stdout.splitlines()]
    errors = [e for e in events if e["kind"] == "error"]
    assert jsonl.returncode == 2 and len(errors) == 3
    assert errors[0]["position"] == byte and errors[0]["batchPosition"] == len(good)
    assert errors[1]["position"] == len(lying) and "premature EOF" in errors[1]["message"]
    assert len(lying) + RECORD_BATCH_OVERHEAD <= errors[2]["position"] <= len(lying) + len(gz)
    assert "gzip" in errors[2]["message"]
    assert [e["position"] for e in events if e["kind"] == "failed"] == [byte, len(lying)]

    doc = bounded(["dump", "--deep", "--format", "json", *files], timeout=30)
    assert doc.returncode == 2
    assert [f["error"]["position"] for f in json.loads(doc.stdout)["files"]] == [byte, len(lying)]
    assert max(r.seconds for r in (text, jsonl, doc)) < 10


def test_scan_deep_reports_undecodable_records(tmp_path, bounded):
    bad, failed_at = key_too_long_batch(1000)
    root, segment = logdir_with(tmp_path, bad)
    position = segment.stat().st_size - len(bad)
    plain = bounded(["scan", str(root), "--format", "json"], timeout=30)
    assert "KA111" not in {f["code"] for f in json.loads(plain.stdout)["findings"]}  # opt-in
    res = bounded(["scan", "--deep", str(root), "--format", "json"], timeout=30)
    found = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "KA111"]
    assert res.returncode == 1 and len(found) == 1, res.stdout
    evidence = found[0]["evidence"]
    assert evidence["position"] == position and evidence["failedAt"] == position + failed_at
    assert evidence["baseOffset"] == 1000 and "key of 1073741824 bytes" in evidence["reason"]
    assert res.seconds < 10 and res.peak_rss_mb < 200
