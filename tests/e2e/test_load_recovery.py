"""Kafka's load-time recovery of a segment whose offset index is missing or whose transaction index fails its
sanity check, end to end: ``kafka-auditor scan`` and ``kafka-auditor extract`` on a log dir written by the
project's builder, with the middle segment's ``.index`` deleted (or a ``.txnindex`` entry ending below its
base offset written) and one of its batches corrupted.

What Kafka 4.0 does (``LogLoader.loadSegmentFiles``): ``LogSegment.sanityCheck`` throws
``NoSuchFileException`` for a segment without its offset index, and ``TransactionIndex.sanityCheck``
``CorruptIndexException`` for an aborted transaction whose last offset is below the segment's base offset,
with or without ``.kafka_cleanshutdown``, and
``recoverSegment`` -> ``LogSegment.recover`` truncates that segment at its first invalid batch; no other
segment is deleted, and ``LogLoader.recoverLog`` (no clean shutdown), re-reading it afterwards, has nothing
left to cut. With the index present, a clean shutdown cuts nothing and ``recoverLog`` cuts the segment and
deletes the later ones. Both commands must say the same: the log end offset, the cut, which batches are
live."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from parsers.indexes import build_txn_index
from tests.rules.builder import LogDir, Part, flip


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def _log_dir(root: Path, clean: bool, index: str) -> tuple[LogDir, Part, int]:
    """Three segments of four batches; the middle one corrupted at its third batch (returned: its index in
    ``written``), its ``.index`` ``present``, ``missing``, or present with a ``.txnindex`` that fails Kafka's
    sanity check (``txn-corrupt``)."""
    ld = LogDir(root, clean=clean)
    p = ld.part()
    p.data(4).roll().data(4).roll().data(4)
    p.recovery_point = 0
    ld.write()
    bad = 6
    assert [w.segment for w in p.written[bad : bad + 3]] == [1, 1, 2]
    flip(p.seg_path(1), p.written[bad].position + 70)
    if index == "missing":
        p.seg_path(1, ".index").unlink()
    elif index == "txn-corrupt":
        base = p.bases[1]
        p.seg_path(1, ".txnindex").write_bytes(build_txn_index([(7, 0, base - 1, base)]))
    return ld, p, bad


@pytest.mark.parametrize(
    ("clean", "index", "expect"),
    [
        (True, "missing", "load"),  # a clean shutdown does not spare a segment without its index
        (False, "missing", "load"),  # cut at load; recoverLog finds nothing more to cut there, keeps the rest
        (True, "txn-corrupt", "load"),  # nor one whose transaction index fails its sanity check
        (False, "txn-corrupt", "load"),
        (False, "present", "recover-log"),  # recoverLog cuts and deletes the later segments
        (True, "present", "none"),  # flushed and indexed: served as it is
    ],
)
def test_scan_and_extract_agree_with_kafkas_load(tmp_path, clean, index, expect):
    ld, p, bad = _log_dir(tmp_path / "broker-1", clean, index)
    cut = p.written[bad]
    scanned = _run("scan", str(ld.root), "--format", "json", "--exit-zero")
    assert scanned.exit_code == 0, scanned.output
    report = json.loads(scanned.stdout)
    (summary,) = [s for s in report["partitions"] if s["topic"] == "orders"]
    out = tmp_path / "extract"
    extracted = _run("extract", str(ld.root), "--out", str(out))
    assert extracted.exit_code == 0, extracted.output
    (replica,) = [r for r in pq.read_table(out / "replica.parquet").to_pylist() if r["topic"] == "orders"]
    batches = [b for b in pq.read_table(out / "batch.parquet").to_pylist() if b["topic"] == "orders"]
    live = {(b["segment"], b["position"]): b["live"] for b in batches}
    at = [(p.bases[w.segment], w.position) for w in p.written]
    cut_from, cut_to = {"load": (bad, 8), "recover-log": (bad, len(at)), "none": (0, 0)}[expect]
    kept = {key: not cut_from <= i < cut_to for i, key in enumerate(at)}
    assert live == kept
    leo = cut.base_offset if expect == "recover-log" else p.leo
    assert summary["logEndOffset"] == replica["leo"] == leo
    assert summary["logEndOffsetOnDisk"] == replica["leo_on_disk"] == p.leo
    assert replica["recovered"] == (expect != "none")
    if expect != "none":
        assert (replica["tail_state"], replica["tail_segment"]) == ("corrupt", p.bases[1])
        assert replica["tail_position"] == cut.position
    kafka406 = [f for f in report["findings"] if f["code"] == "KA406"]
    if expect == "load":
        assert summary["recoveryTruncation"] is None
        (at_load,) = summary["loadTruncations"]
        assert at_load["segment"] == p.seg_path(1).name and at_load["position"] == cut.position
        reason = "offset index missing" if index == "missing" else "transaction index corrupt"
        assert at_load["nextOffset"] == cut.base_offset and at_load["reason"] == reason
        (finding,) = [f for f in kafka406 if f["message"].startswith("load-time recovery")]
        assert finding["file"] == str(p.seg_path(1)) and finding["position"] == cut.position
        said = "no offset index" if index == "missing" else "a transaction index that fails Kafka's sanity"
        assert said in finding["message"] and "later segments are kept" in finding["message"]
        (crc,) = [f for f in report["findings"] if f["code"] == "KA101"]
        assert crc["evidence"]["recoveredAtLoad"] and crc["evidence"]["truncateBytes"] == at_load["bytes"]
    else:
        assert summary["loadTruncations"] == []
        assert not [f for f in kafka406 if f["message"].startswith("load-time recovery")]
    if expect == "recover-log":
        assert summary["recoveryTruncation"]["deletedSegments"] == [p.bases[2]]
    no_index = [f for f in report["findings"] if f["code"] == "KA208" and f["file"] == str(p.seg_path(1))]
    assert bool(no_index) == (index == "missing")
