"""Extraction of a partly unreadable replica (no Spark): the unreadable span, why, and the log end offset
Kafka would compute; FIFOs are never opened (a blocked open would fail the time bound)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from auditor.observe.extract import extract_log_dir, extract_tables
from parsers.dirfiles import segment_file_name
from tests.audit.replica_cases import TOPIC, Replica, segments, unreadable, write_replica


def _replica(root: Path) -> dict:
    result: dict = {}

    def run() -> None:
        result["rows"] = extract_tables(root)["replica"].to_pylist()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "extraction blocked"
    (row,) = [r for r in result["rows"] if r["topic"] == TOPIC]
    return row


def _span(row: dict) -> tuple:
    return row["unreadable_from"], row["unreadable_to"], row["leo"]


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_middle_segment_not_a_regular_file(tmp_path, kind):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root, 10, kind)
    row = _replica(root)
    assert _span(row) == (10, 20, 30) and row["batch_count"] == 4
    expected = "a directory" if kind == "dir" else "a FIFO"
    assert row["unreadable"].startswith("00000000000000000010.log: is " + expected)


def test_last_segment_unreadable_leaves_the_leo_unknown(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root, 20, "fifo")
    assert _span(_replica(root)) == (20, None, 20)


def test_middle_segment_stopping_early(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    seg = root / f"{TOPIC}-0" / segment_file_name(10, ".log")
    os.truncate(seg, seg.stat().st_size - 7)
    row = _replica(root)
    assert _span(row) == (15, 20, 30) and "torn-tail at byte" in row["unreadable"]


def test_last_segment_torn_tail_is_not_a_hole(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    seg = root / f"{TOPIC}-0" / segment_file_name(20, ".log")
    os.truncate(seg, seg.stat().st_size - 7)
    row = _replica(root)
    assert _span(row) == (None, None, 25) and row["tail_state"] == "torn-tail"


def test_complete_replica_has_no_span(tmp_path):
    row = _replica(write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30)))
    assert _span(row) == (None, None, 30) and row["unreadable"] is None


def test_extract_names_the_incomplete_replica(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root, 10)
    counts = extract_log_dir(root, tmp_path / "b-extract")
    assert counts["errors"] == [
        f"{TOPIC}-0: incomplete from offset 10: 00000000000000000010.log: is a directory, not a regular file"
    ]
