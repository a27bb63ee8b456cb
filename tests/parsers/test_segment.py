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
        full, full_stop, _ = _header_rows(path)
        trusted, stop, _ = _header_rows(path, verify_crc=False, skip_read_min=0)
        assert stop == full_stop and [r[:2] for r in trusted] == [r[:2] for r in full]
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


# ------------------------------------------------------------------------------- header-only walks


def _header_rows(path: Path, **kwargs) -> tuple[list[tuple], object, int]:
    """Every header row of a walk (position, ``HEADER_DTYPE`` fields, CRC ok), its stop and bytes read."""
    walker = SegmentWalker(path, stop_on_invalid=False, **kwargs)
    rows = []
    try:
        for block in walker.header_blocks():
            rows += [
                (int(p), tuple(h.tolist()), bool(ok))
                for p, h, ok in zip(block.positions, block.headers, block.crc_ok, strict=True)
            ]
    except ParseError as exc:
        rows.append(("error", exc.offset))
    return rows, walker.stop, walker.bytes_read


def _mixed_segment(seed: int) -> bytes:
    """Batches of every size class (61-byte empty ones, a few hundred bytes, 16 KiB, 200 KiB, 3 MiB) and
    legacy entries, in a seeded order."""
    import random

    from parsers.legacy import build_legacy_message

    rng = random.Random(seed)
    out, offset = bytearray(), 0
    for _ in range(rng.randrange(20, 60)):
        kind = rng.choice(["small", "small", "16k", "200k", "legacy", "empty", "3m"][: 7 if seed % 3 else 6])
        if kind == "legacy":
            out += build_legacy_message(offset, b"k", b"v" * rng.randrange(100), magic=rng.choice([0, 1]))
            offset += 1
            continue
        size = {"small": rng.randrange(300), "16k": 16_300, "200k": 200_000, "3m": 3 << 20, "empty": 0}[kind]
        specs = [RecordSpec(b"k", b"x" * size, 1_700_000_000_000)] if kind != "empty" else []
        raw = bytearray(build_batch(specs or [RecordSpec(None, None, 1)], base_offset=offset))
        if kind == "empty":  # a compaction-retained empty batch: the header alone
            raw = raw[:61]
            struct.pack_into(">i", raw, 8, 49)
            struct.pack_into(">i", raw, 57, 0)
        out += raw
        offset += struct.unpack_from(">i", raw, 23)[0] + 1
    return bytes(out)


def _damaged(data: bytes, seed: int) -> list[bytes]:
    """``data`` and the ways a segment ends or breaks: a torn tail, a zero-filled tail, a length below the
    minimum, a flipped payload bit (CRC mismatch), an unknown magic, a negative base offset."""
    import random

    rng = random.Random(seed)
    starts = [row[0] for row in _walk_positions(data)]
    at = starts[rng.randrange(1, len(starts))]
    flipped, magic, small, negative = (bytearray(data) for _ in range(4))
    flipped[at + 61 if data[at + 16] == 2 and at + 61 < len(data) else at + 20] ^= 0x10
    magic[at + 16] = 3
    struct.pack_into(">i", small, at + 8, 30)
    struct.pack_into(">q", negative, at, -5)
    return [
        data,
        data[: at + 40],
        data + bytes(100),
        bytes(flipped),
        bytes(magic),
        bytes(small),
        bytes(negative),
    ]


def _walk_positions(data: bytes) -> list[tuple]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(data)
        return _header_rows(path)[0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("window", "skip_read_min"), [(1 << 16, 0), (1 << 16, 1 << 16), (1 << 23, 1 << 16), (1 << 23, 1 << 40)]
)
def test_header_only_walk_gives_the_full_walks_rows_but_crc_validity(seg, seed, window, skip_read_min):
    """``verify_crc=False``: the same rows, stop and invalid entries but the CRC mismatches (its computed CRC
    is the stored one), with header reads, window reads or both, on every way a segment ends or breaks."""
    for i, data in enumerate(_damaged(_mixed_segment(seed), seed)):
        path = seg(data)
        full, full_stop, _ = _header_rows(path, window=window)
        trusted, stop, _ = _header_rows(path, window=window, verify_crc=False, skip_read_min=skip_read_min)
        assert stop == full_stop, (i, stop, full_stop)
        assert [r[:2] for r in trusted] == [r[:2] for r in full], i
        for (_, header, ok), (_, _, full_ok) in zip(trusted, full, strict=True):
            # only a v2 batch's CRC mismatch goes unseen; an unknown magic or a legacy entry is judged alike
            assert ok == (full_ok or header[3] == 2), (i, header)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("window", "skip_read_min"), [(1 << 16, 0), (1 << 23, 1 << 16)])
def test_walk_trusting_the_batches_below_an_offset(seg, seed, window, skip_read_min):
    """``verify_crc=False, trusted_below=N``: the full walk's rows and stop, the CRC judged as the full walk
    judges it for every batch whose last offset is N or more, unseen below (the stored CRC stands)."""
    for i, data in enumerate(_damaged(_mixed_segment(seed), seed)):
        path = seg(data)
        full, full_stop, _ = _header_rows(path, window=window)
        offsets = sorted({r[1][0] for r in full if r[0] != "error"})
        for below in (offsets[len(offsets) // 2], offsets[-1] + 1) if offsets else (0,):
            trusted, stop, _ = _header_rows(
                path, window=window, verify_crc=False, skip_read_min=skip_read_min, trusted_below=below
            )
            assert stop == full_stop, (i, below)
            assert [r[:2] for r in trusted] == [r[:2] for r in full], (i, below)
            for (_, header, ok), (_, _, full_ok) in zip(trusted, full, strict=True):
                unseen = header[3] == 2 and header[0] + header[6] < below
                assert ok == (full_ok or unseen), (i, below, header)
        if offsets:
            # a CRC failure above the trusted batches is found
            assert any(not ok for _, _, ok in full) == any(
                not ok for _, _, ok in _header_rows(path, window=window, verify_crc=False, trusted_below=0)[0]
            )


def test_header_only_walk_reads_the_headers_of_large_batches_alone(seg):
    """1 MiB batches: the header-only walk reads 61 bytes of each (and a window of the small ones after them);
    the max-bytes, torn-tail and end stops are where the full walk puts them."""
    big = [build_batch([RecordSpec(b"k", b"x" * (1 << 20), 1)], base_offset=i) for i in range(12)]
    data = b"".join(big) + make_segment(30, base=12)
    path = seg(data)
    walker = SegmentWalker(path, verify_crc=False)
    assert sum(len(b) for b in walker.header_blocks()) == 42 and walker.stop.reason == "end"
    small = len(make_segment(30))
    assert walker.bytes_read <= 13 * 61 + small  # a header each, then one more before the window read
    full = SegmentWalker(path)
    assert sum(len(b) for b in full.header_blocks()) == 42 and full.bytes_read >= len(data)
    for limit in (len(big[0]) * 5 + 100, len(data) - 10):
        assert (
            _header_rows(path, max_bytes=limit, verify_crc=False)[:2]
            == _header_rows(path, max_bytes=limit)[:2]
        )
    assert _header_rows(seg(data[:-10]), verify_crc=False)[:2] == _header_rows(seg(data[:-10]))[:2]


def test_header_only_walk_of_the_corpus_and_fixtures(tmp_path):
    """Every corpus and fixture segment: the header-only walk gives the full walk's rows."""
    from tests.conftest import CORPUS

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    paths = sorted(p for p in fixtures.rglob("*") if p.suffix in (".log", ".checkpoint") and p.is_file())
    if CORPUS.is_dir():
        paths += sorted(p for p in CORPUS.rglob("*.log") if "_run" not in p.parts)
    for path in paths:
        full, full_stop, _ = _header_rows(path)
        trusted, stop, _ = _header_rows(path, verify_crc=False)
        assert stop == full_stop and [r[:2] for r in trusted] == [r[:2] for r in full], path


def test_the_trusted_chain_stops_at_the_first_legacy_entry():
    """Below the recovery point batches are chained by their header alone; a legacy (magic 0/1) entry ends the
    chain where it lies, for the general path to take: chaining on through the legacy entries of a window
    (only to drop them again) would cost each of them a pass over the rest of the window."""
    from array import array

    from parsers.legacy import build_legacy_message
    from parsers.record_batch import RECORD_BATCH_OVERHEAD
    from parsers.segment import INT64_MAX, _trusted_run

    class Counted(array):
        appended = 0

        def append(self, value):
            Counted.appended += 1
            super().append(value)

    first = build_batch([RecordSpec(b"k", b"v" * 80, 1)])
    legacy = b"".join(build_legacy_message(1 + i, b"k", b"v" * 80, magic=i % 2) for i in range(500))
    buf = first + legacy
    run = Counted("q")
    stop = _trusted_run(buf, 0, len(buf) - RECORD_BATCH_OVERHEAD, len(buf), INT64_MAX + 1, run)
    assert stop == len(first) and list(run) == [0] and Counted.appended == 1


def _chained_buffer(sizes: list[int], breaks: dict[int, str]) -> tuple[bytes, list[int]]:
    """Entries of ``sizes`` bytes laid end to end, each with a v2 header's length and magic (its other bytes
    are noise), entry ``i`` broken as ``breaks[i]`` says (``magic``: a legacy magic; ``short``: a length
    below a v2 header); and every entry's position."""
    import random

    rng = random.Random(len(sizes))
    out, starts = bytearray(), []
    for i, size in enumerate(sizes):
        starts.append(len(out))
        entry = bytearray(rng.randbytes(size))
        struct.pack_into(">i", entry, 8, 20 if breaks.get(i) == "short" else size - 12)
        entry[16] = 1 if breaks.get(i) == "magic" else 2
        out += entry
    return bytes(out) + bytes(61), starts


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(61, 600), min_size=1, max_size=400),
    breaks=st.dictionaries(st.integers(0, 399), st.sampled_from(["magic", "short"]), max_size=3),
    kept=st.floats(0, 1),
    bogus=st.lists(st.integers(1, 1 << 18), max_size=60),
    shifted=st.lists(st.integers(0, 399), max_size=10),
    start=st.integers(0, 3),
)
def test_the_chain_from_anchors_is_the_serial_chain(sizes, breaks, kept, bogus, shifted, start):
    """``_chain`` from anchors (some true batch starts, positions inside batches, starts moved by a byte, past
    a break) keeps the positions and stop of the one-by-one chain, in step or one by one."""
    import random
    from array import array

    import numpy as np

    from parsers.segment import _chain, _serial_chain

    buf, starts = _chained_buffer(sizes, breaks)
    last = len(buf) - 61
    rel = starts[min(start, len(starts) - 1)]
    rng = random.Random(len(sizes) + len(bogus))
    moved = [starts[i] + 1 for i in shifted if i < len(starts)]
    picks = [p for p in starts if rng.random() < kept] + bogus + moved
    anchors = np.unique(np.array([p for p in picks if rel < p <= last], dtype=np.int64))
    serial, chained = array("q"), array("q")
    assert _chain(buf, rel, last, anchors, chained) == _serial_chain(buf, rel, last, serial)
    assert chained == serial


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("window", [1 << 16, 1 << 23])
def test_header_only_walk_from_the_offset_index_gives_the_same_rows(seg, seed, window):
    """``anchors`` (here the offset index Kafka would write, then one with wrong entries) change how the
    header-only walk chains small batches, never its rows, stop or bytes read, on a segment that ends or
    breaks in every way ``_damaged`` knows."""
    import random

    rng = random.Random(seed)
    sizes = [rng.randrange(0, 300) for _ in range(3000)]
    data = b"".join(
        build_batch([RecordSpec(b"k", b"x" * size, 1_700_000_000_000)], base_offset=i)
        for i, size in enumerate(sizes)
    )
    starts = [row[0] for row in _walk_positions(data)]
    every_4k = [p for i, p in enumerate(starts) if i and p // 4096 != starts[i - 1] // 4096]
    wrong = sorted({p + rng.choice([0, 1, 7, 61]) for p in every_4k})
    for i, damaged in enumerate(_damaged(data, seed)):
        path = seg(damaged)
        plain = _header_rows(path, window=window, verify_crc=False)
        for anchors in (every_4k, wrong, starts):
            assert _header_rows(path, window=window, verify_crc=False, anchors=anchors) == plain, i


def test_anchors_are_given_up_for_a_window_the_chain_cannot_reach(seg, monkeypatch):
    """Legacy entries between the v2 batches (an upgraded log): the chain stops at each of them, so after it
    stops short of the first anchor once, the window's anchors are not looked up again (each look-up costs
    numpy work per anchor: once per entry, the walk was 6x slower than without anchors)."""
    from parsers.legacy import build_legacy_message

    entries, starts, pos = [], [], 0
    for i in range(2000):
        entry = (
            build_batch([RecordSpec(b"k", b"v" * 60, 1)], base_offset=i)
            if i % 2
            else build_legacy_message(i, b"k", b"v" * 60, magic=1)
        )
        entries.append(entry)
        starts.append(pos)
        pos += len(entry)
    path = seg(b"".join(entries))
    looked = []
    real = SegmentWalker._anchors_in

    def counted(self, *args):
        looked.append(args)
        return real(self, *args)

    plain = _header_rows(path, verify_crc=False)
    monkeypatch.setattr(SegmentWalker, "_anchors_in", counted)
    anchored = _header_rows(path, verify_crc=False, anchors=starts[1::40])
    assert anchored == plain and len(plain[0]) == 2000
    assert 1 <= len(looked) <= 2, len(looked)
