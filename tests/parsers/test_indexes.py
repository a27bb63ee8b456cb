"""Offset, time and transaction indexes (spec §7-§9): schema vs fast path, prefix rules, Kafka's checks,
fuzzing, and the real corpus against the real ``kafka-dump-log.sh`` output."""

from __future__ import annotations

import contextlib
import os
import re
import struct
import time
from pathlib import Path

import construct as cs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.dirfiles import parse_segment_file_name
from parsers.errors import ParseError
from parsers.indexes import (
    ABORTED_TXN_SIZE,
    INDEX_WINDOW,
    OFFSET_INDEX,
    TIME_INDEX,
    AbortedTxn,
    AbortedTxnEntry,
    IndexScan,
    OffsetIndexEntry,
    TimeIndexEntry,
    build_offset_index,
    build_time_index,
    build_txn_index,
    index_arrays,
    iter_txn_index,
    read_offset_index,
    read_time_index,
    read_txn_index,
    sanity_check_index_shape,
    sanity_check_offset_index,
    sanity_check_time_index,
    sanity_check_txn_index,
    struct_of,
    txn_entries,
)
from tests.support.kafka_dumps import dump_sections

# ------------------------------------------------------------------------------- schema == fast path


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.binary(min_size=n * 34, max_size=n * 34)))
def test_fast_path_agrees_with_construct(data):
    for schema in (OffsetIndexEntry, TimeIndexEntry, AbortedTxn):
        size = schema.sizeof()
        usable = data[: len(data) // size * size]
        slow = [tuple(e.values())[1:] for e in cs.GreedyRange(schema).parse(usable)]
        fast = list(struct_of(schema).iter_unpack(usable))
        assert slow == fast


def test_struct_of_rejects_non_integer_fields():
    with pytest.raises(TypeError):
        struct_of(cs.Struct("a" / cs.Bytes(3)))


def test_spec_examples():
    # §7.1 t1-0/...000.index and §8.1 t1-0/...000.timeindex, §9.1 tx-0/...000.txnindex
    idx = bytes.fromhex("0000012b00002f00000001c100003502")
    assert read_offset_index(idx, 0).entries == [(299, 12032), (449, 13570)]
    tix = bytes.fromhex("000001a1fc7668b50000012b000001a1fc766936000001c1")
    assert read_time_index(tix, 0).entries == [(1795236980917, 299), (1795236981046, 449)]
    txn = bytes.fromhex("0000" + "000000000000000500000000000000060000000000000009000000000000000a")
    assert read_txn_index(txn).entries == [AbortedTxnEntry(5, 6, 9, 10)]
    assert build_offset_index([(299, 12032), (449, 13570)], 0) == idx
    assert build_time_index([(1795236980917, 299), (1795236981046, 449)], 0) == tix
    assert build_txn_index([(5, 6, 9, 10)]) == txn


# ------------------------------------------------------------------------------------------- offset index


def test_offset_index_round_trip_trimmed():
    entries = [(1000 + 10 * i, 4200 * (i + 1)) for i in range(50)]
    data = build_offset_index(entries, 1000)
    idx = read_offset_index(data, 1000)
    assert idx.entries == entries
    assert (idx.slots, idx.trailing_bytes, idx.padding_slots, idx.preallocated) == (50, 0, 0, False)
    assert idx.garbage_after_padding is None
    assert sanity_check_offset_index(data, 1000, "f") is None


def test_offset_index_preallocated_crash_tail():
    entries = [(7, 4100), (19, 8300)]
    data = build_offset_index(entries, 0, preallocate_to=65536 + 5)
    assert len(data) == 65536
    idx = read_offset_index(data, 0)
    assert idx.entries == entries
    assert idx.preallocated and idx.padding_slots == 8192 - 2 and idx.garbage_after_padding is None
    # Kafka sees 8192 entries, the last one (0, 0) = base offset: passes (not < base offset) since 2.1
    assert sanity_check_offset_index(data, 0, "f") is None


def test_offset_index_all_padding_and_lone_zero_slot():
    empty = read_offset_index(bytes(10485760), 985)
    assert empty.entries == [] and empty.preallocated and empty.padding_slots == 1310720
    assert read_offset_index(b"", 5).entries == [] and not read_offset_index(b"", 5).preallocated
    lone = read_offset_index(bytes(8), 5)
    assert lone.entries == [(5, 0)] and not lone.preallocated
    # a zero slot followed by a trailing partial slot: still "longer than 8 bytes", all padding
    assert read_offset_index(bytes(12), 5).entries == []


def test_offset_index_zero_position_alone_does_not_stop():
    data = build_offset_index([(3, 5000), (0, 0), (9, 0)], 0)  # (rel 0, pos 0) at slot 1 stops
    assert read_offset_index(data, 0).entries == [(3, 5000)]
    data = build_offset_index([(3, 5000), (3, 0), (9, 9000)], 0)  # rel != 0: a real (odd) entry
    assert read_offset_index(data, 0).entries == [(3, 5000), (3, 0), (9, 9000)]


def test_offset_index_garbage_and_trailing_bytes():
    data = bytearray(build_offset_index([(4, 4500)], 0, preallocate_to=800))
    data[8 * 50 + 3] = 0x7F
    idx = read_offset_index(bytes(data) + b"\x00\x01\x00", 0)
    assert idx.entries == [(4, 4500)]
    assert idx.garbage_after_padding == 8 * 50 + 3
    assert idx.padding_slots == 100 - 2 and idx.trailing_bytes == 3
    assert sanity_check_offset_index(bytes(data) + b"\x00\x01\x00", 0, "/d/t-0/x.index") == (
        "Index file /d/t-0/x.index is corrupt, found 803 bytes which is neither positive nor a multiple of 8"
    )
    trailing = read_offset_index(build_offset_index([(4, 4500)], 0) + b"\x01", 0)
    assert trailing.garbage_after_padding == 8 and trailing.padding_slots == 0


def test_offset_index_sanity_negative_last_slot():
    data = struct.pack(">ii", 5, 4100) + struct.pack(">ii", -2, 0)
    assert sanity_check_offset_index(data, 100, "F") == (
        "Corrupt index found, index file F has non-zero size but the last offset is 98 which is less "
        "than the base offset 100"
    )


def test_offset_index_build_rejects_overflow():
    with pytest.raises(ValueError):
        build_offset_index([(2**31, 0)], 0)


# ------------------------------------------------------------------------------------------- time index


def test_time_index_round_trip_and_preallocation():
    entries = [(1_795_000_000_000 + 5 * i, 20 + 3 * i) for i in range(30)]
    data = build_time_index(entries, 20, preallocate_to=10485760)
    assert len(data) == 10485756
    tix = read_time_index(data, 20)
    assert tix.entries == entries and tix.preallocated and tix.garbage_after_padding is None
    assert tix.padding_slots == 873813 - 30
    trimmed = build_time_index(entries, 20)
    assert read_time_index(trimmed, 20).entries == entries
    assert sanity_check_time_index(trimmed, 20, "f") is None


def test_time_index_crashed_preallocated_fails_kafka_sanity_check():
    data = build_time_index([(1795239027311, 48)], 0, preallocate_to=65536)
    assert sanity_check_time_index(data, 0, "P") == (
        "Corrupt time index found, time index file (P) has non-zero size but the last timestamp is 0 "
        "which is less than the first timestamp 1795239027311"
    )
    empty = bytes(65532)
    assert read_time_index(empty, 985).entries == [] and sanity_check_time_index(empty, 985, "P") is None


def test_time_index_prefix_rules():
    base = 100
    # stops at relative offset 0 (DumpLogSegments), at timestamp 0, at a non-increasing timestamp
    for bad in [(50, base), (0, base + 9), (10, base + 9), (11, base + 9)]:
        data = build_time_index([(10, base + 2), (11, base + 5), bad], base)
        tix = read_time_index(data, base)
        assert tix.entries == [(10, base + 2), (11, base + 5)]
        assert 24 <= tix.garbage_after_padding < 36 and tix.padding_slots == 0
    # slot 0 may have relative offset 0 (single-batch segment at its base offset)
    assert read_time_index(build_time_index([(77, base)], base), base).entries == [(77, base)]
    assert read_time_index(bytes(12), base).entries == [(0, base)]


def test_time_index_sanity_offset_and_length():
    data = struct.pack(">qi", 5, 3) + struct.pack(">qi", 9, -1)
    assert sanity_check_time_index(data, 10, "P") == (
        "Corrupt time index found, time index file (P) has non-zero size but the last offset is 9 which is "
        "less than the first offset 10"
    )
    assert sanity_check_time_index(bytes(5), 0, "P") == (
        "Time index file P is corrupt, found 5 bytes which is neither positive nor a multiple of 12"
    )


# ------------------------------------------------------------------------------------------- txn index


def test_txn_index_round_trip_partial_entry_and_versions():
    entries = [AbortedTxnEntry(7, 10 * i, 10 * i + 5, 10 * i + 6) for i in range(5)]
    data = build_txn_index(entries)
    assert len(data) == 5 * ABORTED_TXN_SIZE
    txn = read_txn_index(data + b"\x00" * 33)
    assert txn.entries == entries and txn.trailing_bytes == 33
    # Kafka reads only the (signed) high byte: low byte ignored, 0x80..0xff are negative and accepted
    low = bytearray(data)
    low[1] = 0x05
    assert read_txn_index(bytes(low)).entries[0].version == 0
    neg = bytearray(data)
    neg[ABORTED_TXN_SIZE] = 0xFF
    assert read_txn_index(bytes(neg)).entries[1].version == -1
    high = bytearray(data)
    high[2 * ABORTED_TXN_SIZE] = 0x01
    with pytest.raises(ParseError) as exc:
        read_txn_index(bytes(high), "/d/tx-0/00000000000000000000.txnindex")
    assert exc.value.offset == 2 * ABORTED_TXN_SIZE
    assert exc.value.message == (
        "Unexpected aborted transaction version 1 in transaction index "
        "/d/tx-0/00000000000000000000.txnindex, current version is 0"
    )


def test_txn_index_sanity_check():
    txn = read_txn_index(build_txn_index([(5, 6, 9, 10)]))
    assert sanity_check_txn_index(txn, 9, "F") is None
    assert sanity_check_txn_index(txn, 10, "F") == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=5, firstOffset=6, lastOffset=9, "
        "lastStableOffset=10) in index F is less than start offset 10"
    )


# ------------------------------------------------------------------------------------------- fuzzing


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 2**40))
def test_random_bytes_only_parse_error(data, base):
    read_offset_index(data, base)
    read_time_index(data, base)
    sanity_check_offset_index(data, base, "f")
    sanity_check_time_index(data, base, "f")
    try:
        read_txn_index(data)
    except ParseError as exc:
        assert exc.offset is not None and exc.offset % ABORTED_TXN_SIZE == 0


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_bit_flips_and_truncations(data):
    valid = build_offset_index([(i * 7 + 3, 4100 * (i + 1)) for i in range(6)], 0, preallocate_to=96)
    valid_time = build_time_index([(1000 + i, i * 7 + 3) for i in range(6)], 0, preallocate_to=96)
    valid_txn = build_txn_index([(i, i * 10, i * 10 + 4, i * 10 + 5) for i in range(3)])
    for blob, reader in ((valid, read_offset_index), (valid_time, read_time_index)):
        flipped = bytearray(blob)
        pos = data.draw(st.integers(0, len(blob) - 1))
        flipped[pos] ^= 1 << data.draw(st.integers(0, 7))
        cut = data.draw(st.integers(0, len(blob)))
        for candidate in (bytes(flipped), blob[:cut]):
            result = reader(candidate, 0)
            assert len(result.entries) <= 8
    flipped = bytearray(valid_txn)
    flipped[data.draw(st.integers(0, len(valid_txn) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    for candidate in (bytes(flipped), valid_txn[: data.draw(st.integers(0, len(valid_txn)))]):
        with contextlib.suppress(ParseError):
            read_txn_index(candidate)


# ------------------------------------------------------------------------------------------- corpus

_OFFSET_LINE = re.compile(r"offset: (-?\d+) position: (-?\d+)")
_TIME_LINE = re.compile(r"timestamp: (-?\d+) offset: (-?\d+)")
_TXN_LINE = re.compile(
    r"version: (-?\d+) producerId: (-?\d+) firstOffset: (-?\d+) lastOffset: (-?\d+) lastStableOffset: (-?\d+)"
)


def _dump_sections(corpus: Path, kind: str) -> dict[str, list[str]]:
    """``Dumping <path>`` sections of every ``<group>.<kind>.txt.gz`` dump: path -> the lines that follow."""
    sections: dict[str, list[str]] = {}
    for dump in sorted(corpus.rglob(f"*.{kind}.txt.gz")):
        for path, lines in dump_sections(dump):
            sections.setdefault(path, []).extend(lines)
    return sections


def _corpus_files(corpus: Path, suffixes: tuple[str, ...]) -> list[Path]:
    found = []
    for root, _dirs, files in os.walk(corpus):
        found += [Path(root) / f for f in files if f.endswith(suffixes) and "dumps" not in root]
    return sorted(found)


@pytest.mark.corpus
def test_corpus_every_index_parses(corpus):
    suffixes = (".index", ".timeindex", ".txnindex", ".index.deleted", ".timeindex.deleted")
    files = _corpus_files(corpus, suffixes)
    assert len(files) > 800
    for path in files:
        data = path.read_bytes()
        base, suffix, _ = parse_segment_file_name(path.name)
        if suffix in (".index", ".timeindex"):
            _scan_agrees(data, base, INDEX_WINDOW)
            _scan_agrees(data, base, 96)
        if suffix == ".index":
            idx = read_offset_index(data, base)
            assert idx.trailing_bytes == 0 and idx.garbage_after_padding is None, path
            offsets = [o for o, _ in idx.entries]
            assert offsets == sorted(set(offsets)) and all(o >= base for o in offsets), path
        elif suffix == ".timeindex":
            tix = read_time_index(data, base)
            assert tix.trailing_bytes == 0 and tix.garbage_after_padding is None, path
        else:
            txn = read_txn_index(data, str(path))
            assert txn.trailing_bytes == 0 and txn.entries, path
            assert sanity_check_txn_index(txn, base, str(path)) is None


@pytest.mark.corpus
def test_corpus_indexes_equal_dump_log_output(corpus):
    sections = _dump_sections(corpus, "indexes")
    compared = preallocated_empty = 0
    for rel, lines in sections.items():
        path = corpus / rel
        base, suffix, _ = parse_segment_file_name(path.name)
        data = path.read_bytes()
        if suffix == ".index":
            dumped = [(int(m[1]), int(m[2])) for m in map(_OFFSET_LINE.fullmatch, lines) if m]
            parsed = read_offset_index(data, base)
            expected = parsed.entries
            if not expected and parsed.slots:  # §16.3 caveat: an all-zero index prints its zero slot 0
                expected, preallocated_empty = [(base, 0)], preallocated_empty + 1
            if not parsed.slots:
                assert f"{rel} is empty." in lines
        else:
            dumped = [(int(m[1]), int(m[2])) for m in map(_TIME_LINE.fullmatch, lines) if m]
            parsed = read_time_index(data, base)
            expected = parsed.entries
            if not expected and parsed.slots:
                expected = [(0, base)]
        assert dumped == expected, rel
        compared += 1
    assert compared > 800 and preallocated_empty >= 1


@pytest.mark.corpus
def test_corpus_sanity_checks_equal_dump_log_output(corpus):
    sections = _dump_sections(corpus, "index-sanity-check")
    failures = 0
    for rel, lines in sections.items():
        path = corpus / rel
        base, suffix, _ = parse_segment_file_name(path.name)
        data = path.read_bytes()
        check = sanity_check_offset_index if suffix == ".index" else sanity_check_time_index
        result = check(data, base, rel)
        exception = [line for line in lines if "CorruptIndexException: " in line]
        if exception:
            assert result == exception[0].split("CorruptIndexException: ", 1)[1], rel
            failures += 1
        elif f"{rel} is empty." in lines:
            assert len(data) < (8 if suffix == ".index" else 12)
        else:
            assert f"{rel} passed sanity check." in lines, rel
            assert result is None, rel
    assert failures >= 3


@pytest.mark.corpus
def test_corpus_txnindex_equal_dump_log_output(corpus):
    sections = _dump_sections(corpus, "snapshots-txnindex")
    compared = 0
    for rel, lines in sections.items():
        if not rel.endswith(".txnindex"):
            continue
        txn = read_txn_index((corpus / rel).read_bytes(), rel)
        dumped = [tuple(int(g) for g in m.groups()) for m in map(_TXN_LINE.fullmatch, lines) if m]
        parsed = [
            (e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in txn.entries
        ]
        assert dumped == parsed, rel
        compared += 1
    assert compared >= 12


# ------------------------------------------------------------------------- windowed scan (issue 8, item 6)


def _scan_agrees(data: bytes, base: int, window: int, scan_of=None) -> None:
    """``IndexScan`` (windows of ``window`` bytes) and the columnar reader on it (``index_arrays``) find what
    the whole-buffer readers find."""
    scan_of = scan_of or (lambda kind: IndexScan.of_bytes(kind, data, window=window))
    for kind, reader in ((OFFSET_INDEX, read_offset_index), (TIME_INDEX, read_time_index)):
        ref = reader(data, base)
        scan = scan_of(kind)
        tables = list(scan.prefix())
        rows = [row for table in tables for row in table.tolist()]
        if kind is OFFSET_INDEX:
            got = [(base + rel, pos) for rel, pos in rows]
        else:
            got = [(ts, base + rel) for ts, rel in rows]
        shape = scan.shape
        assert got == ref.entries and shape.entries == len(ref.entries)
        fields = ("size", "slots", "trailing_bytes", "padding_slots", "garbage_after_padding", "preallocated")
        assert [getattr(shape, f) for f in fields] == [getattr(ref, f) for f in fields]
        assert all(len(t) * kind.dtype.itemsize <= max(window, kind.dtype.itemsize) for t in tables)
        check = sanity_check_offset_index if kind is OFFSET_INDEX else sanity_check_time_index
        assert sanity_check_index_shape(shape, kind, base, "f") == check(data, base, "f")
        end = len(ref.entries) * kind.dtype.itemsize
        after = data[end : end + kind.dtype.itemsize]
        expected_next = None
        if len(after) == kind.dtype.itemsize and any(after) and len(ref.entries) < ref.slots:
            expected_next = np.frombuffer(after, dtype=kind.dtype)[0].item()
        assert shape.next_slot == expected_next
        arrays = index_arrays(scan_of(kind), base)
        columns = [arrays.columns[name].tolist() for name in kind.names]
        assert list(zip(*columns, strict=True)) == ref.entries and not arrays.truncated
        assert [getattr(arrays, f) for f in fields] == [getattr(ref, f) for f in fields]
        if expected_next is None:
            assert arrays.next_entry is None
        else:
            rel = kind.dtype.names.index("relative_offset")
            expected = tuple(v + base if i == rel else v for i, v in enumerate(expected_next))
            assert arrays.next_entry == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 2**40), st.sampled_from([1, 8, 12, 24, 25, 96, 1 << 20]))
def test_index_scan_agrees_with_readers_on_random_bytes(data, base, window):
    _scan_agrees(data, base, window)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 2**31 - 1), st.integers(1, 2**31 - 1)), max_size=10),
    st.integers(0, 40),
    st.integers(0, 3),
    st.sampled_from([8, 12, 24, 48, 1 << 20]),
)
def test_index_scan_agrees_on_real_shapes(entries, pad, garbage, window):
    """Sorted entries (a real index), a zero tail, and garbage bytes in the tail, at window boundaries too."""
    entries = sorted(set(entries))
    base = 1000
    oi = bytearray(build_offset_index([(base + r, p) for r, p in entries], base) + bytes(pad * 8))
    ti = bytearray(build_time_index([(p, base + r) for r, p in entries], base) + bytes(pad * 12))
    for blob in (oi, ti):
        for k in range(garbage):
            if len(blob) > len(entries) * 12:
                blob[len(blob) - 1 - 7 * k] = 9
        _scan_agrees(bytes(blob), base, window)


def _sparse_file(path: Path, pieces: dict[int, bytes], size: int) -> None:
    with open(path, "wb") as fh:
        for at, data in pieces.items():
            fh.seek(at)
            fh.write(data)
    os.truncate(path, size)


@pytest.mark.parametrize(
    "pieces",
    [
        {},  # all hole: an empty preallocated index
        {0: build_offset_index([(1000 + i, 64 * i) for i in range(1, 600)], 1000)},  # entries, then a hole
        {0: build_time_index([(5000 + i, 1000 + i) for i in range(1, 600)], 1000)},
        {0: b"\x01" * 20, 3 * 65536 + 5: b"\x07"},  # garbage inside a later, slot-misaligned data block
        {200_000: b"\x01" * 40},  # a hole first, then data
    ],
)
def test_index_scan_of_a_sparse_file_skips_holes_and_agrees(tmp_path, pieces):
    path = tmp_path / "00000000000000001000.index"
    _sparse_file(path, pieces, 12 * 65536)
    data = path.read_bytes()
    fd = os.open(path, os.O_RDONLY)
    try:
        _scan_agrees(data, 1000, 4096, scan_of=lambda kind: IndexScan.of_fd(kind, fd, window=4096))
    finally:
        os.close(fd)


def test_index_scan_of_a_1_gib_sparse_index_is_fast(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    _sparse_file(path, {0: build_offset_index([(i, 100 * i) for i in range(1, 100)], 0)}, 1 << 30)
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.process_time()
        scan = IndexScan.of_fd(OFFSET_INDEX, fd)
        entries = sum(len(t) for t in scan.prefix())
        seconds = time.process_time() - start
    finally:
        os.close(fd)
    assert (entries, scan.shape.padding_slots, scan.shape.garbage_after_padding) == (99, (1 << 27) - 99, None)
    assert seconds < 1.0, seconds


def test_index_scan_keeps_at_most_max_entries():
    data = build_offset_index([(i, 10 * i) for i in range(1, 1001)], 0)
    shape, table = IndexScan.of_bytes(OFFSET_INDEX, data, window=64).run(max_entries=100)
    assert shape.entries == 1000 and len(table) == 100
    assert table["relative_offset"].tolist() == list(range(1, 101))
    arrays = index_arrays(IndexScan.of_bytes(OFFSET_INDEX, data, window=64), 7, max_entries=100)
    assert arrays.truncated and arrays.entries == 1000
    assert arrays.columns["offset"].tolist() == list(range(8, 108))
    assert arrays.columns["position"].tolist() == list(range(10, 1010, 10))


@pytest.mark.parametrize("base", [2**63 - 2**20, 2**63 - 1])
def test_index_arrays_saturate_offsets_at_the_int64_limit(base):
    """A segment named near the int64 limit: columnar offsets past it saturate instead of wrapping negative;
    the in-memory reader keeps exact Python ints."""
    data = build_offset_index([(base + 5, 100), (base + 2**20 + 9, 200)], base)
    arrays = index_arrays(IndexScan.of_bytes(OFFSET_INDEX, data), base)
    assert arrays.columns["offset"].tolist() == [min(base + 5, 2**63 - 1), 2**63 - 1]
    assert read_offset_index(data, base).entries[0] == (base + 5, 100)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([1, 34, 68, 100, 1 << 20]))
def test_txn_iteration_agrees_with_reader(data, window):
    try:
        ref = read_txn_index(data, "f")
    except ParseError as exc:
        ref_error = (exc.message, exc.offset)
        ref = None
    got: list[AbortedTxnEntry] = []
    error = None
    try:
        for table in iter_txn_index(lambda pos, n: data[pos : pos + n], len(data), "f", window=window):
            got.extend(txn_entries(table))
    except ParseError as exc:
        error = (exc.message, exc.offset)
    if ref is None:
        assert error == ref_error
        assert len(got) == ref_error[1] // ABORTED_TXN_SIZE  # the good entries before the bad one
    else:
        assert error is None and got == ref.entries


def _dump_events(path: Path) -> list[dict]:
    from auditor.dump import Dumper, DumpOptions

    events = []
    try:
        for event in Dumper(DumpOptions()).events(path):
            events.append(event)
    except ParseError as exc:
        events.append({"kind": "failed", "offset": exc.offset})
    return events


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 2**31 - 1), st.integers(0, 2**31 - 1)), max_size=6),
    st.integers(0, 6),
    st.booleans(),
    st.integers(0, 11),
)
def test_streamed_dump_equals_the_in_memory_reader(tmp_path_factory, entries, pad, garbage, trailing):
    """``dump`` streams indexes in windows (two passes); what it prints is what ``read_*_index`` reads."""
    base = 77
    tmp = tmp_path_factory.mktemp("dump")
    for suffix, reader, build in (
        (".index", read_offset_index, lambda: build_offset_index([(base + r, p) for r, p in entries], base)),
        (".timeindex", read_time_index, lambda: build_time_index([(p, base + r) for r, p in entries], base)),
    ):
        blob = bytearray(build() + bytes(pad * 12))
        if garbage and pad:
            blob[-2] = 5
        blob += b"\x03" * trailing
        path = tmp / f"{base:020d}{suffix}"
        path.write_bytes(bytes(blob))
        ref = reader(bytes(blob), base)
        events = _dump_events(path)
        summary = next(e for e in events if e["kind"] == "summary")
        assert summary["paddingSlots"] == ref.padding_slots and summary["slots"] == ref.slots
        assert summary["garbageAfterPadding"] == ref.garbage_after_padding
        names = ("offset", "position") if suffix == ".index" else ("timestamp", "offset")
        printed = [tuple(e[n] for n in names) for e in events if e["kind"] == "entry"]
        assert printed == ref.entries
        failed = [e for e in events if e["kind"] == "failed"]
        expected = None
        if ref.trailing_bytes:
            expected = ref.slots * (8 if suffix == ".index" else 12)
        elif ref.garbage_after_padding is not None:
            expected = ref.garbage_after_padding
        assert [e["offset"] for e in failed] == ([] if expected is None else [expected])


def test_batch_positions_of_an_offset_index(tmp_path):
    """The positions of the real prefix (never the zero slots of a preallocated tail), inside the segment,
    at most one per ``gap`` bytes; none from a missing index or one that is not a regular file."""
    import os

    import numpy as np

    from parsers.indexes import batch_positions

    entries = [(10 * i, 4100 * i) for i in range(1, 41)] + [(405, 4100 * 40 + 10)]
    slots = np.array(entries, dtype=">i4").tobytes() + bytes(8 * 100)  # then preallocated zero slots
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(slots)
    assert batch_positions(index, 1 << 30).tolist() == [p for _, p in entries[:-1]]  # one per 1 KiB bucket
    assert batch_positions(index, 4100 * 20).tolist() == [4100 * i for i in range(1, 20)]
    assert batch_positions(index, 1 << 30, gap=8200).tolist() == [4100] + [8200 * k for k in range(1, 21)]
    assert batch_positions(tmp_path / "missing.index", 1 << 30).tolist() == []
    fifo = tmp_path / "fifo.index"
    os.mkfifo(fifo)
    assert batch_positions(fifo, 1 << 30).tolist() == []
