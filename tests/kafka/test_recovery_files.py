"""Recovery on real files: scan's partition summary and audit's replica row report the same log end offset,
the one Kafka loads (``auditor.kafka.recovery``), for a torn tail, a corrupt batch, a clean shutdown and the
KRaft metadata log (always recovered from offset 0)."""

from __future__ import annotations

from pathlib import Path

from auditor.kafka.topics import METADATA_TOPIC
from auditor.observe.extract import extract_tables
from auditor.scan import scan
from parsers.dirfiles import segment_file_name
from parsers.segment import SegmentWalker
from tests.rules.builder import LogDir, append, flip, topic_id


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
