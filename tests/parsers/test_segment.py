"""The segment walker: Kafka's recovery reading rules (spec §2), bounded windows, the corpus."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import ParseError
from parsers.record_batch import RecordBatch, RecordSpec, build_batch, parse_header
from parsers.segment import SegmentWalker, base_offset_from_name, walk


def make_segment(n: int = 20, value_size: int = 50, base: int = 0) -> bytes:
    out = bytearray()
    for i in range(n):
        out += build_batch(
            [RecordSpec(b"k%d" % i, bytes([i % 251]) * value_size, 1_700_000_000_000 + i)],
            base_offset=base + i,
            partition_leader_epoch=i // 7,
        )
    return bytes(out)


@pytest.fixture
def seg(tmp_path: Path):
    def write(data: bytes, name: str = "00000000000000000000.log") -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return write


def test_clean_segment_every_batch_with_position(seg):
    data = make_segment()
    items, stop = walk(seg(data))
    assert stop.reason == "end" and stop.trailing_bytes == 0 and stop.position == len(data)
    assert [b.base_offset for b in items] == list(range(20))
    pos = 0
    for b in items:
        assert b.position == pos and b.crc_valid
        assert parse_header(data, pos).crc == b.crc
        pos += b.size


@pytest.mark.parametrize("window", [1 << 16, 1 << 17])
def test_small_windows_and_entries_larger_than_the_window(seg, window):
    big = build_batch([RecordSpec(b"big", b"x" * 300_000, 1)], base_offset=20)
    data = make_segment() + big + make_segment(base=21)
    items, stop = walk(seg(data), window=window)
    assert stop.reason == "end"
    assert [b.base_offset for b in items] == list(range(41))
    assert all(b.crc_valid for b in items)


def test_torn_tail_at_every_byte_of_the_last_batch(seg):
    data = make_segment(5)
    last = parse_header(data, sum(b.size for b in walk(seg(data))[0][:4]))
    for cut in range(last.position + 1, len(data)):
        items, stop = walk(seg(data[:cut]))
        assert len(items) == 4
        assert stop.reason == "torn-tail" and stop.position == last.position
        assert stop.trailing_bytes == cut - last.position


def test_crc_mismatch_stops_recovery_and_reports_bytes_to_truncate(seg):
    data = bytearray(make_segment(6))
    first = parse_header(bytes(data))
    target = first.size * 3 + 70  # inside the records of the 4th batch
    data[target] ^= 0x40
    path = seg(bytes(data))
    items, stop = walk(path)
    assert [b.crc_valid for b in items] == [True, True, True, False]
    assert stop.reason == "corrupt" and stop.position == first.size * 3
    assert stop.trailing_bytes == len(data) - first.size * 3
    assert "Record is corrupt (stored crc" in stop.message
    # kafka-dump-log style: keep going past invalid batches.
    items, stop = walk(path, stop_on_invalid=False)
    assert len(items) == 6 and stop.reason == "end"
    assert not items[3].crc_valid and items[3].computed_crc != items[3].crc


def test_zero_filled_preallocated_tail_is_corruption(seg):
    data = make_segment(3)
    items, stop = walk(seg(data + b"\x00" * 4096))
    assert len(items) == 3
    assert stop.reason == "corrupt" and stop.position == len(data) and stop.trailing_bytes == 4096
    assert "smaller than minimum record overhead (14)" in stop.message


def test_v2_entry_smaller_than_its_header_is_corrupt(seg):
    data = bytearray(make_segment(2))
    struct.pack_into(">i", data, 8, 30)
    items, stop = walk(seg(bytes(data)))
    assert items == [] and stop.reason == "corrupt" and "minimum allowed overhead 61" in stop.message


def test_short_tails_and_empty_file(seg):
    assert walk(seg(b""))[1].reason == "end"
    items, stop = walk(seg(make_segment(1) + b"\x01" * 17))
    assert len(items) == 1 and stop.reason == "torn-tail" and stop.trailing_bytes == 17


def test_a_length_field_is_never_trusted_beyond_the_file(seg):
    data = bytearray(make_segment(1))
    struct.pack_into(">i", data, 8, 2**31 - 1)
    items, stop = walk(seg(bytes(data)))
    assert items == [] and stop.reason == "torn-tail" and "runs past the end of the file" in stop.message


def test_max_bytes_reads_a_prefix_without_calling_it_torn(seg):
    data = make_segment(10)
    size = parse_header(data).size
    items, stop = walk(seg(data), max_bytes=size * 3 + 10)
    assert len(items) == 3 and stop.reason == "max-bytes"


def test_unknown_magic_is_invalid(seg):
    data = bytearray(make_segment(2))
    data[16] = 3
    items, stop = walk(seg(bytes(data)))
    assert stop.reason == "corrupt" and "unknown magic 3" in stop.message


def test_fast_tuples_agree_with_objects(seg):
    path = seg(make_segment(30))
    tuples = [t for t in SegmentWalker(path).headers()]
    objects = list(SegmentWalker(path))
    assert [RecordBatch.from_tuple(h, position=p, computed_crc=h[4]) for p, h, _ in tuples] == objects


def test_base_offset_from_name():
    assert base_offset_from_name("00000000000000000176.log") == 176
    assert base_offset_from_name("00000000000000000129-0000000001.checkpoint") == 129
    with pytest.raises(ParseError):
        base_offset_from_name("leader-epoch-checkpoint")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 600))
def test_random_files_never_crash_the_walker(tmp_path_factory, data, cut):
    path = tmp_path_factory.mktemp("fuzz") / "00000000000000000000.log"
    good = make_segment(3)
    for candidate in (data, good[:cut] + data, good + data):
        path.write_bytes(candidate)
        try:
            items, stop = walk(path, stop_on_invalid=False)
        except ParseError:
            continue
        assert stop is not None and 0 <= stop.position <= len(candidate)


def test_every_corpus_segment_and_snapshot_walks_cleanly(corpus):
    files = [
        p
        for p in corpus.rglob("*")
        if p.is_file()
        and "_run" not in p.parts
        and "dumps" not in p.parts
        and (p.name.endswith(".log") or p.name.endswith(".checkpoint"))
    ]
    assert len(files) > 300
    batches = 0
    for path in files:
        items, stop = walk(path)
        assert stop.reason == "end", (path, stop)
        assert all(b.crc_valid for b in items), path
        batches += len(items)
    assert batches > 5000


def _all_fixture_segments(tmp_path: Path) -> list[Path]:
    paths = []
    for i, data in enumerate([make_segment(40), make_segment(3) + b"\x00" * 100, make_segment(5)[:-7]]):
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_columnar_blocks_agree_with_tuples_and_with_the_construct_schema(tmp_path, request):
    from parsers.record_batch import HEADER_FIELDS, BatchHeaderV2
    from tests.conftest import CORPUS

    paths = _all_fixture_segments(tmp_path)
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    paths += sorted(p for p in fixtures.rglob("*") if p.suffix in (".log", ".checkpoint") and p.is_file())
    if CORPUS.is_dir():
        paths += sorted(p for p in CORPUS.rglob("*.log") if "_run" not in p.parts)
    for path in paths:
        tuples = [t for t in SegmentWalker(path, stop_on_invalid=False).headers() if type(t) is tuple]
        rows = []
        for block in SegmentWalker(path, stop_on_invalid=False).header_blocks():
            for i in range(len(block)):
                rows.append(
                    (
                        int(block.positions[i]),
                        tuple(int(block.headers[f][i]) for f in HEADER_FIELDS),
                        bool(block.crc_ok[i]),
                    )
                )
        v2_rows = [row for row in rows if row[1][3] >= 2]  # legacy entries come as objects from headers()
        assert [(p, h[:13], ok) for p, h, ok in tuples] == v2_rows, path
        data = path.read_bytes()
        for pos, h, _ok in tuples:
            parsed = BatchHeaderV2.parse(data[pos : pos + 61])
            assert tuple(parsed[f] for f in HEADER_FIELDS) == h[:13]


@pytest.mark.parametrize("magic", [0, 1, 0xFF])
def test_damaged_magic_byte_is_a_corrupt_stop_not_an_exception(seg, magic):
    data = bytearray(make_segment(3))
    size = parse_header(bytes(data)).size
    data[size + 16] = magic  # the second batch now claims to be a legacy message
    items, stop = walk(seg(bytes(data)))
    assert len(items) >= 1 and stop.reason == "corrupt" and stop.position == size


def test_records_and_crc_of_entries_larger_than_the_window_are_streamed(seg, monkeypatch):
    """A 3 MiB batch with a 64 KiB window: its CRC and records are read in pieces, never whole."""
    import os

    big = build_batch([RecordSpec(b"k", b"x" * (3 << 20), 1), RecordSpec(None, b"y", 2)], base_offset=7)
    path = seg(make_segment(3) + big + make_segment(2, base=9))
    walker = SegmentWalker(path, window=1 << 16)
    reads: list[int] = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, pos: reads.append(n) or real(fd, n, pos))
    batches = list(walker)
    assert walker.stop.reason == "end" and [b.base_offset for b in batches] == [0, 1, 2, 7, 9, 10]
    target = batches[3]
    assert target.crc_valid and walker.batch_crc(target) == target.crc
    reads.clear()
    light = list(walker.records(target, payloads=False))
    assert [(r.offset, r.key_size, r.value_size) for r in light] == [(7, 1, 3 << 20), (8, -1, 1)]
    assert max(reads) <= 1 << 20  # the records section is read a piece at a time
    assert [r.value for r in walker.records(target)][1] == b"y"


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("00000000000000000750.log", 750),
        ("9223372036854775807.index", 2**63 - 1),
        ("\u0661\u0662.log", 12),  # Long.parseLong takes decimal digits of any script
        ("\u00b2\u00b3.log", None),  # superscripts are digits to str.isdigit, not to Kafka
        ("99999999999999999999.log", None),  # beyond int64
        ("-5.log", None),
        ("x.log", None),
    ],
)
def test_base_offset_from_name_follows_long_parse_long(name, offset):
    from parsers.segment import base_offset_from_name

    if offset is None:
        with pytest.raises(ParseError):
            base_offset_from_name(name)
    else:
        assert base_offset_from_name(name) == offset
