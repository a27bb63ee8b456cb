"""Kafka's semantics in ``auditor.kafka``: the valid-batch predicate, recovery over segment summaries, the
high-watermark relations. Each case states what Kafka does (fire) and the neighbouring case where it does not
(silent).

Recovery on real files: scan's partition summary and audit's replica row report the same log end offset,
the one Kafka loads (``auditor.kafka.recovery``), for a torn tail, a corrupt batch, a clean shutdown and the
KRaft metadata log (always recovered from offset 0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.hw import clamp_high_watermark, hw_above_leo, hw_below_log_start
from auditor.kafka.recovery import (
    ALL_OFFSETS,
    LogRecovery,
    RecoveryTruncation,
    SegmentSummary,
    log_start_offset,
    recover,
    recovery_floor,
    will_recover,
)
from auditor.kafka.topics import METADATA_TOPIC
from auditor.observe.extract import extract_tables
from auditor.scan import scan
from parsers.dirfiles import segment_file_name
from parsers.segment import HEADER_DTYPE, SegmentWalker
from tests.rules.builder import LogDir, append, flip, topic_id


def _headers(*rows: tuple[int, int, int, int]) -> np.ndarray:
    """(base offset, last offset delta, magic, crc) per row; 100-byte entries."""
    h = np.zeros(len(rows), dtype=HEADER_DTYPE)
    for i, (base, delta, magic, crc) in enumerate(rows):
        h[i]["base_offset"], h[i]["last_offset_delta"], h[i]["magic"], h[i]["crc"] = base, delta, magic, crc
        h[i]["batch_length"] = 88
    return h


# ------------------------------------------------------------------------------------------------ batches


@pytest.mark.parametrize(
    "magic, stored, computed, valid",
    [
        (2, 7, 7, True),  # v2, CRC-32C matches
        (2, 7, 8, False),  # DefaultRecordBatch.ensureValid: "Record is corrupt"
        (1, 7, 7, True),  # legacy v1, CRC-32 matches
        (0, 7, 8, False),  # legacy v0, CRC mismatch
        (3, 7, 7, False),  # unknown magic: damage, even with a matching CRC field
        (-1, 7, 7, False),
    ],
)
def test_valid_batch_predicate(magic, stored, computed, valid):
    h = _headers((0, 0, magic, stored))
    assert valid_batches(h, np.array([computed], dtype=np.uint32)).tolist() == [valid]


def test_valid_prefix_over_blocks():
    prefix = ValidPrefix()
    h1 = _headers((0, 2, 2, 1), (3, 2, 2, 1))
    assert prefix.feed(np.array([0, 100]), h1, np.array([True, True])) is None
    assert (prefix.recovered_next_offset, prefix.next_offset_raw, prefix.end) == (6, 6, 200)
    h2 = _headers((6, 2, 2, 1), (9, 2, 2, 1), (12, 2, 2, 1))
    assert prefix.feed(np.array([200, 300, 400]), h2, np.array([True, False, True])) == 1
    h3 = _headers((15, 0, 2, 1))
    assert prefix.feed(np.array([500]), h3, np.array([False])) is None  # not the first invalid entry
    assert (prefix.first_invalid, prefix.recovered_next_offset, prefix.next_offset_raw) == (300, 9, 16)
    assert prefix.valid_end(stop_position=600) == 300


def test_valid_prefix_without_invalid_entry_ends_where_the_walk_stopped():
    prefix = ValidPrefix()
    prefix.feed(np.array([0]), _headers((0, 4, 2, 1)), np.array([True]))
    assert prefix.valid_end(stop_position=100) == 100  # every byte read
    assert prefix.valid_end(stop_position=None) == 100


# ------------------------------------------------------------------------------------------------ recovery


def _seg(base: int, size: int, valid_end: int | None = None, next_raw: int | None = None, rec="raw"):
    """A segment of ``size`` bytes valid up to ``valid_end``; ``rec``: the next offset of that prefix."""
    valid_end = size if valid_end is None else valid_end
    next_raw = base + 10 if next_raw is None else next_raw
    recovered = next_raw if rec == "raw" else rec
    return SegmentSummary(f"{base:020d}.log", base, size, valid_end, recovered, next_raw)


def test_will_recover():
    assert will_recover(clean_shutdown=False, metadata_log=False)
    assert not will_recover(clean_shutdown=True, metadata_log=False)
    # KafkaMetadataLog.apply: UnifiedLog(recoveryPoint = 0, lastShutdownClean = false)
    assert will_recover(clean_shutdown=True, metadata_log=True)


@pytest.mark.parametrize(
    "rp, metadata, floor",
    [(0, False, 0), (25, False, 20), (20, False, 20), (19, False, 10), (None, False, 0), (99, True, 0)],
)
def test_recovery_floor_is_the_segment_containing_the_recovery_point(rp, metadata, floor):
    assert recovery_floor([0, 10, 20, 30], rp, metadata) == floor


def test_recovery_floor_below_every_segment_is_the_first_one():
    assert recovery_floor([50, 60], 5, False) == 50


@pytest.mark.parametrize(
    ("clean", "rp", "metadata", "trusted"),
    [
        (True, 25, False, [0, 10]),  # below the segment holding the recovery point
        (True, 20, False, [0, 10]),
        (True, 99, False, [0, 10, 20]),  # the last segment is always read whole
        (True, None, False, []),  # no recovery point: nothing is known to be flushed
        (True, 5, False, []),
        (False, 25, False, []),  # no clean shutdown: read whole, as recovery would
        (True, 25, True, []),  # the metadata log is always recovered
    ],
)
def test_trusted_segments(clean, rp, metadata, trusted):
    state = LogRecovery([0, 10, 20, 30], clean, rp, metadata)
    assert [b for b in (0, 10, 20, 30) if state.trusts(b)] == trusted
    assert not any(state.trusts(b) and state.recovers(b) for b in (0, 10, 20, 30))


@pytest.mark.parametrize(
    ("clean", "rp", "metadata", "below"),
    [
        (True, 25, False, [ALL_OFFSETS, ALL_OFFSETS, 25, None]),  # the segment holding it: below it
        (True, 99, False, [ALL_OFFSETS, ALL_OFFSETS, ALL_OFFSETS, 99]),  # the last segment's batches too
        (True, 20, False, [ALL_OFFSETS, ALL_OFFSETS, 20, None]),
        (True, None, False, [None] * 4),
        (False, 25, False, [None] * 4),
        (True, 25, True, [None] * 4),
    ],
)
def test_trusted_batches(clean, rp, metadata, below):
    """The batches Kafka's next load takes as they are: every batch of a trusted segment, the batches below
    the recovery point in the segment holding it, none after it nor without a clean shutdown."""
    state = LogRecovery([0, 10, 20, 30], clean, rp, metadata)
    assert [state.trusted_below_in(b) for b in (0, 10, 20, 30)] == below


def test_log_start_offset():
    assert log_start_offset(None, 10) == 10
    assert log_start_offset(15, 10) == 15
    assert log_start_offset(5, 10) == 10
    assert log_start_offset(7, None) == 7
    assert log_start_offset(None, None) == 0


def test_torn_tail_without_clean_shutdown_is_truncated():
    segs = [_seg(0, 1000), _seg(10, 900, valid_end=600, next_raw=20, rec=16)]
    r = recover(segs, clean_shutdown=False, recovery_point=10)
    assert (r.leo_on_disk, r.leo) == (20, 16)
    t = r.truncation
    assert (t.segment, t.position, t.bytes, t.deleted_segments, t.leo) == (
        "00000000000000000010.log",
        600,
        300,
        [],
        16,
    )
    assert r.recovered_segments == [10]


def test_clean_shutdown_keeps_the_torn_tail():
    segs = [_seg(0, 1000), _seg(10, 900, valid_end=600, next_raw=20, rec=16)]
    r = recover(segs, clean_shutdown=True, recovery_point=10)
    assert (r.leo_on_disk, r.leo, r.truncation, r.floor) == (20, 20, None, None)


def test_corruption_in_a_middle_segment_deletes_the_later_ones():
    segs = [_seg(0, 1000), _seg(10, 1000, valid_end=0, next_raw=20, rec=None), _seg(20, 500), _seg(30, 500)]
    r = recover(segs, clean_shutdown=False, recovery_point=0)
    assert (r.leo_on_disk, r.leo) == (40, 10)  # emptied segment: its base offset
    assert r.truncation.deleted_segments == [20, 30]


def test_corruption_below_the_recovery_point_is_not_rechecked():
    segs = [_seg(0, 1000, valid_end=100, next_raw=10, rec=2), _seg(10, 500)]
    r = recover(segs, clean_shutdown=False, recovery_point=15)
    assert (r.leo, r.truncation, r.recovered_segments) == (20, None, [10])


def test_metadata_log_is_recovered_from_zero_even_after_a_clean_shutdown():
    segs = [_seg(0, 1000, valid_end=400, next_raw=10, rec=4), _seg(10, 500)]
    r = recover(segs, clean_shutdown=True, recovery_point=10**9, metadata_log=True)
    assert (r.leo, r.truncation.deleted_segments, r.floor) == (4, [10], 0)
    silent = recover(segs, clean_shutdown=True, recovery_point=10**9, metadata_log=False)
    assert (silent.leo, silent.truncation) == (20, None)


def test_no_segments_leaves_the_log_start_offset():
    r = recover([], clean_shutdown=False, recovery_point=None, log_start_checkpoint=42)
    assert (r.log_start, r.leo, r.leo_on_disk, r.truncation) == (42, 42, 42, None)


# a middle segment (base 10) with an invalid batch at byte 400 (next offset 14 before it), the log's end at 40
_MIDDLE_BAD = [
    _seg(0, 1000),
    _seg(10, 1000, valid_end=400, next_raw=20, rec=14),
    _seg(20, 500),
    _seg(30, 500),
]


@pytest.mark.parametrize("clean", [True, False])
def test_a_segment_without_its_offset_index_is_cut_at_load_and_the_later_ones_kept(clean):
    """LogLoader.loadSegmentFiles: LogSegment.sanityCheck throws NoSuchFileException, recoverSegment cuts the
    segment at its valid prefix; no other segment is deleted. recoverLog (no clean shutdown) re-reads it
    afterwards, finds nothing more to cut, and goes on."""
    r = recover(_MIDDLE_BAD, clean_shutdown=clean, recovery_point=0, unindexed={10})
    (cut,) = r.load_truncations.values()
    assert (cut.position, cut.bytes, cut.next_offset) == (400, 600, 14)
    assert cut.to_dict() == {
        "segment": "00000000000000000010.log",
        "position": 400,
        "bytes": 600,
        "nextOffset": 14,
        "reason": "offset index missing",
    }
    assert (r.truncation, r.leo, r.leo_on_disk) == (None, 40, 40)  # the last segment's next offset
    assert r.cuts and r.recovers(10) and r.recovers_at_load(10) and not r.recovers_at_load(20)
    assert [r.keeps(10, pos) for pos in (0, 399, 400, 900)] == [True, True, False, False]
    assert r.keeps(20, 0) and r.keeps(30, 400) and r.keeps(0, 999)


def test_with_its_offset_index_recover_log_cuts_and_deletes_the_later_segments():
    r = recover(_MIDDLE_BAD, clean_shutdown=False, recovery_point=0)
    assert (r.load_truncations, r.leo, r.truncation.deleted_segments) == ({}, 14, [20, 30])
    assert not r.keeps(20, 0) and not r.keeps(10, 400) and r.keeps(10, 399)


def test_with_its_offset_index_after_a_clean_shutdown_nothing_is_cut():
    r = recover(_MIDDLE_BAD, clean_shutdown=True, recovery_point=40)
    assert (r.load_truncations, r.truncation, r.leo, r.cuts) == ({}, None, 40, False)
    assert r.keeps(10, 900) and not r.recovers(10)


def test_a_cut_at_load_below_a_recover_log_cut_keeps_the_segments_between():
    """Both cuts: the segment without its index is cut at load; recoverLog then cuts the first segment it
    finds invalid and deletes those after it."""
    segs = [*_MIDDLE_BAD[:3], _seg(30, 500, valid_end=100, next_raw=40, rec=32), _seg(40, 500)]
    r = recover(segs, clean_shutdown=False, recovery_point=0, unindexed={10})
    assert list(r.load_truncations) == [10]
    assert (r.truncation.base_offset, r.truncation.deleted_segments, r.leo) == (30, [40], 32)
    assert r.keeps(20, 0) and not r.keeps(10, 400) and not r.keeps(40, 0)


def test_a_cut_at_load_after_a_recover_log_cut_is_deleted_with_its_segment():
    segs = [_seg(0, 1000, valid_end=100, next_raw=10, rec=2), *_MIDDLE_BAD[1:]]
    r = recover(segs, clean_shutdown=False, recovery_point=0, unindexed={10})
    assert (r.load_truncations, r.truncation.deleted_segments, r.leo) == ({}, [10, 20, 30], 2)


def test_the_last_segment_cut_at_load_gives_the_log_end_offset():
    segs = [_seg(0, 1000), _seg(10, 900, valid_end=600, next_raw=20, rec=16)]
    r = recover(segs, clean_shutdown=True, recovery_point=20, unindexed=[10])
    assert (r.leo, r.leo_on_disk, r.truncation, r.load_truncations[10].bytes) == (16, 20, None, 300)


def test_an_intact_segment_without_its_offset_index_is_not_cut():
    r = recover([_seg(0, 1000), _seg(10, 500)], clean_shutdown=True, recovery_point=20, unindexed={0, 10})
    assert (r.load_truncations, r.truncation, r.leo, r.cuts) == ({}, None, 20, False)


@pytest.mark.parametrize("metadata", [False, True])
def test_a_segment_recovered_at_load_is_never_trusted(metadata):
    """The header-only walk trusts no batch of a segment Kafka recovers at load (it must be validated)."""
    state = LogRecovery([0, 10, 20, 30], True, 25, metadata, unindexed={0, 20})
    assert [state.trusts(b) for b in (0, 10, 20, 30)] == [False, not metadata, False, False]
    below = [state.trusted_below_in(b) for b in (0, 10, 20, 30)]
    assert below == ([None, ALL_OFFSETS, None, None] if not metadata else [None] * 4)
    assert all(state.recovers(b) for b in (0, 20))


def test_unreadable_segment_is_neither_cut_nor_extended():
    segs = [_seg(0, 1000), SegmentSummary("00000000000000000010.log", 10, 0, 0, None, None)]
    r = recover(segs, clean_shutdown=False, recovery_point=0)
    assert (r.leo, r.leo_on_disk, r.truncation) == (10, 10, None)


# -------------------------------------------------------------------------------------------- high watermark


@pytest.mark.parametrize(
    "hw, log_start, leo, loaded",
    [(50, 0, 100, 50), (150, 0, 100, 100), (5, 10, 100, 10), (None, 10, 100, 10), (None, 0, 100, 0)],
)
def test_clamp_high_watermark(hw, log_start, leo, loaded):
    """UnifiedLog.updateHighWatermark from Partition.createLog: into [logStartOffset, LEO]."""
    assert clamp_high_watermark(hw, log_start, leo) == loaded


def test_hw_relations():
    assert hw_above_leo(101, 100) and not hw_above_leo(100, 100) and not hw_above_leo(None, 100)
    assert hw_below_log_start(9, 10) and not hw_below_log_start(10, 10) and not hw_below_log_start(None, 10)


def _both(root: Path, topic: str) -> tuple[dict, dict]:
    (summary,) = [s for s in scan([str(root)]).partitions if s["topic"] == topic]
    (row,) = [r for r in extract_tables(root)["replica"].to_pylist() if r["topic"] == topic]
    return summary, row


def _data_log(tmp_path: Path, clean: bool):
    ld = LogDir(tmp_path / "b1", clean=clean)
    p = ld.part()
    p.data(4).roll().data(4)
    p.recovery_point = 0
    ld.write()
    return ld, p


def test_corrupt_batch_without_clean_shutdown(tmp_path):
    ld, p = _data_log(tmp_path, clean=False)
    w = p.written[6]  # third batch of the last segment
    flip(p.seg_path(1), w.position + 70)
    summary, row = _both(ld.root, "orders")
    assert (summary["logEndOffset"], summary["logEndOffsetOnDisk"]) == (w.base_offset, p.leo)
    assert (row["leo"], row["leo_on_disk"], row["recovered"]) == (w.base_offset, p.leo, True)
    assert summary["recoveryTruncation"]["position"] == row["tail_position"] == w.position


def test_corrupt_batch_after_a_clean_shutdown_is_not_recovered(tmp_path):
    ld, p = _data_log(tmp_path, clean=True)
    flip(p.seg_path(1), p.written[6].position + 70)
    summary, row = _both(ld.root, "orders")
    assert summary["logEndOffset"] == row["leo"] == row["leo_on_disk"] == p.leo
    assert summary["recoveryTruncation"] is None and not row["recovered"]


def test_corruption_in_a_middle_segment_drops_the_later_segments(tmp_path):
    ld, p = _data_log(tmp_path, clean=False)
    w = p.written[1]
    flip(p.seg_path(0), w.position + 70)
    summary, row = _both(ld.root, "orders")
    assert summary["logEndOffset"] == row["leo"] == w.base_offset
    assert summary["recoveryTruncation"]["deletedSegments"] == [p.bases[1]]
    batches = extract_tables(ld.root)["batch"].to_pylist()
    assert not any(b["live"] for b in batches if b["segment"] == p.bases[1])


def test_torn_tail_without_clean_shutdown(tmp_path):
    ld, p = _data_log(tmp_path, clean=False)
    append(p.seg_path(1), b"\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\xff" + b"x" * 20)
    summary, row = _both(ld.root, "orders")
    # a torn entry holds no offset: the LEO stays, the bytes are cut
    assert summary["logEndOffset"] == row["leo"] == row["leo_on_disk"] == p.leo
    assert summary["recoveryTruncation"]["bytes"] == row["tail_bytes"] == 32
    assert row["tail_state"] == "torn-tail" and row["recovered"]


def _metadata_with_corrupt_batch(tmp_path: Path) -> tuple[Path, int]:
    ld = LogDir(tmp_path / "b1", clean=True)
    ld.part().data(2)
    ld.extra_topics = {"a": topic_id("a"), "b": topic_id("b"), "c": topic_id("c")}
    root = ld.write()
    log = root / f"{METADATA_TOPIC}-0" / segment_file_name(0, ".log")
    second = list(SegmentWalker(log))[1]
    flip(log, second.position + 70)
    return root, second.base_offset


def test_metadata_log_is_recovered_even_after_a_clean_shutdown(tmp_path):
    root, corrupt_at = _metadata_with_corrupt_batch(tmp_path)
    summary, row = _both(root, METADATA_TOPIC)
    assert summary["logEndOffset"] == row["leo"] == corrupt_at
    assert row["leo_on_disk"] == 4 and row["clean_shutdown"]
    metadata = extract_tables(root)["metadata"].to_pylist()
    # the records after the cut are not replayed: only the first topic is known
    assert {r["topic"] for r in metadata} == {"a"} and {r["end_offset"] for r in metadata} == {corrupt_at}


def test_metadata_topic_view_stops_at_the_cut(tmp_path):
    root, corrupt_at = _metadata_with_corrupt_batch(tmp_path)
    result = scan([str(root)])
    (logdir,) = result.logdirs
    assert logdir["metadataEndOffset"] == corrupt_at


def test_a_truncation_is_written_with_its_published_keys():
    cut = RecoveryTruncation("00000000000000000100.log", 100, 4096, 61, [200, 300], 117)
    assert cut.to_dict() == {
        "segment": "00000000000000000100.log",
        "position": 4096,
        "bytes": 61,
        "deletedSegments": [200, 300],
        "leo": 117,
    }
