"""Extraction of log directories into Arrow tables and Parquet extracts, without Spark.

Extraction of a partly unreadable replica (no Spark): the unreadable span, why, and the log end offset
Kafka would compute; FIFOs are never opened (a blocked open would fail the time bound)."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditor.layout.logdir import read_log_dir
from auditor.observe import rows
from auditor.observe.extract import extract_log_dir, extract_tables
from auditor.observe.extract_files import KIND_KEY, VERSION_KEY, ExtractWriter, read_extract
from auditor.simulate import SimOptions, run_scenario
from auditor.spark.inputs import discover
from parsers.dirfiles import segment_file_name
from tests.conftest import corpus_path
from tests.rules.replica.logdirs import TOPIC, Replica, segments, unreadable, write_replica


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    root = tmp_path_factory.mktemp("extract-scenarios")
    out = {}
    for name in ("corrupt-batch", "torn-tail", "unclean-election", "stale-index"):
        out[name] = (root / name, run_scenario(name, root / name, SimOptions(seed=3)))
    return out


def _replica(tables, topic="t0", partition=0):
    (row,) = [r for r in tables["replica"].to_pylist() if (r["topic"], r["partition"]) == (topic, partition)]
    return row


@pytest.mark.parametrize("name", ["corrupt-batch", "torn-tail", "unclean-election", "stale-index"])
def test_replica_rows_match_the_simulators_disk_state(scenarios, name):
    root, truth = scenarios[name]
    (part,) = truth["partitions"]
    for broker, state in part["replica_state"].items():
        disk = state["disk"]
        tables = extract_tables(root / f"broker-{broker}")
        r = _replica(tables)
        assert r["leo"] == disk["recovered_log_end_offset"]
        assert r["leo_on_disk"] == disk["log_end_offset"]
        assert r["hw"] == disk["high_watermark_checkpoint"]
        assert r["recovery_point"] == disk["recovery_point_checkpoint"]
        assert r["log_start"] == disk["log_start_offset"]
        assert r["batch_count"] == disk["batches"]
        epochs = [(e["epoch"], e["start_offset"]) for e in tables["epoch"].to_pylist() if e["topic"] == "t0"]
        assert epochs == [tuple(e) for e in disk["leader_epoch_checkpoint"]]
        batches = tables["batch"].filter(pa.compute.equal(tables["batch"]["topic"], "t0"))
        assert batches.num_rows == disk["batches"]


def test_corrupt_and_torn_batches(scenarios):
    root, truth = scenarios["corrupt-batch"]
    (flip,) = [f for f in truth["faults"] if f["kind"] == "crc-flip"]
    tables = extract_tables(root / f"broker-{flip['broker']}")
    b = tables["batch"].to_pandas()
    bad = b[~b.valid]
    assert bad.base_offset.tolist() == [flip["batch_base_offset"]]
    assert bad.position.tolist() == [flip["batch_position"]]
    assert not b[b.base_offset >= flip["batch_base_offset"]].live.any()  # recovery cuts the log there
    r = _replica(tables)
    assert (r["tail_state"], r["recovered"], r["invalid_batches"]) == ("corrupt", True, 1)
    root, truth = scenarios["torn-tail"]
    (torn,) = [f for f in truth["faults"] if f["kind"] == "torn-tail"]
    r = _replica(extract_tables(root / f"broker-{torn['broker']}"))
    assert (r["tail_state"], r["tail_bytes"], r["tail_position"]) == (
        "torn-tail",
        torn["length"],
        torn["position"],
    )


def test_parquet_extract_round_trip(scenarios, tmp_path):
    """One flat Parquet file per kind (empty kinds too), each in its kind's own schema, version and kind in
    its key-value metadata; the rows read back are the rows extracted in memory."""
    root, _ = scenarios["unclean-election"]
    out = tmp_path / "broker-1"
    counts = extract_log_dir(root / "broker-1", out)
    assert sorted(os.listdir(out)) == sorted(f"{kind}.parquet" for kind in rows.TABLES)
    back = read_extract(out)
    direct = extract_tables(root / "broker-1")
    for kind, schema in rows.TABLES.items():
        assert back[kind].num_rows == counts[kind] == direct[kind].num_rows
        assert back[kind].equals(direct[kind].cast(schema)), kind
        written = pq.read_schema(out / f"{kind}.parquet")
        assert written.remove_metadata().equals(schema), kind  # flat: no kind column, no struct padding
        assert written.metadata[VERSION_KEY] == str(rows.SCHEMA_VERSION).encode()
        assert written.metadata[KIND_KEY] == kind.encode()
        meta = pq.ParquetFile(out / f"{kind}.parquet").metadata
        for g in range(meta.num_row_groups):  # the page index a reader skips pages by
            chunks = [meta.row_group(g).column(c) for c in range(meta.num_columns)]
            assert all(c.has_column_index and c.has_offset_index for c in chunks), kind
    assert counts["batch"] and counts["replica"] and not counts["commit"]


def test_extract_command(scenarios, tmp_path):
    from auditor.cli import app

    root, _ = scenarios["torn-tail"]
    before = {p: os.stat(p).st_mtime_ns for p in root.rglob("*")}
    out = tmp_path / "b2"
    result = CliRunner().invoke(app, ["extract", str(root / "broker-2"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert read_extract(out)["replica"].num_rows == 2
    assert {p: os.stat(p).st_mtime_ns for p in root.rglob("*")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b2"]  # no temporary directory left beside it
    bad = CliRunner().invoke(app, ["extract", str(root / "broker-2"), "--out", str(root / "broker-2" / "x")])
    assert bad.exit_code == 2
    assert CliRunner().invoke(app, ["extract", str(tmp_path), "--out", str(tmp_path / "y")]).exit_code == 2


def test_extract_replaces_only_an_earlier_extract_or_an_empty_directory(scenarios, tmp_path):
    """Running ``extract`` again replaces its output (as it replaced its file before); an empty directory is
    filled; a file or a directory holding anything else is refused with one line, untouched."""
    from auditor.cli import app

    root, _ = scenarios["torn-tail"]
    logdir = str(root / "broker-2")
    out = tmp_path / "b2"
    extract_log_dir(root / "broker-1", out)
    assert read_extract(out)["replica"].column("broker").to_pylist() == [1, 1]
    result = CliRunner().invoke(app, ["extract", logdir, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert read_extract(out)["replica"].column("broker").to_pylist() == [2, 2]
    (tmp_path / "empty").mkdir()
    assert CliRunner().invoke(app, ["extract", logdir, "--out", str(tmp_path / "empty")]).exit_code == 0
    assert read_extract(tmp_path / "empty")["replica"].num_rows == 2
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    (tmp_path / "old.parquet").write_bytes(b"an earlier single-file extract")
    for target, why in (
        (tmp_path / "other", "is a directory holding other files"),
        (tmp_path / "old.parquet", "exists and is not a directory"),
    ):
        refused = CliRunner().invoke(app, ["extract", logdir, "--out", str(target)])
        assert refused.exit_code == 2
        (line,) = refused.output.splitlines()
        assert line == f"kafka-auditor: error: --out {target} {why}" + line.split(why, 1)[1], line
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "old.parquet").read_bytes() == b"an earlier single-file extract"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b2", "empty", "old.parquet", "other"]


def test_extract_never_leaves_a_partial_output(scenarios, tmp_path, monkeypatch):
    """A write that fails halfway (a full disk) and a walk that raises: no output directory, no temporary
    directory beside it; an earlier extract at that path stays whole."""
    from auditor.cli import app
    from auditor.observe import extract

    root, _ = scenarios["torn-tail"]
    earlier = tmp_path / "earlier"
    extract_log_dir(root / "broker-1", earlier)
    written = {p.name: p.read_bytes() for p in earlier.iterdir()}
    flush = ExtractWriter._flush

    def full_disk(self, kind):
        if kind == "replica":
            raise OSError(errno.ENOSPC, "No space left on device")
        flush(self, kind)

    with monkeypatch.context() as m:
        m.setattr(ExtractWriter, "_flush", full_disk)
        for out in (tmp_path / "new", earlier):
            result = CliRunner().invoke(app, ["extract", str(root / "broker-2"), "--out", str(out)])
            assert result.exit_code == 2
            assert result.output == f"kafka-auditor: error: cannot write {out}: No space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier"]
    assert {p.name: p.read_bytes() for p in earlier.iterdir()} == written

    def walk_fails(task):
        yield "batch", rows.BATCH.empty_table()
        raise RuntimeError("boom")

    monkeypatch.setattr(extract, "extract_partition", walk_fails)
    with pytest.raises(RuntimeError):
        extract_log_dir(root / "broker-2", tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier"]


def test_discover_finds_log_dirs_and_extracts(scenarios, tmp_path):
    root, _ = scenarios["unclean-election"]
    found = discover([root])
    assert sorted(os.path.basename(s.path) for s in found.raw) == [
        "broker-1",
        "broker-2",
        "broker-3",
        "controller-100",
    ]
    extract_log_dir(root / "broker-1", tmp_path / "extracts" / "b1")
    extract_log_dir(root / "broker-3", tmp_path / "extracts" / "b3")
    found = discover([tmp_path / "extracts" / "b1", root / "broker-2"])
    assert [s.kind for s in found.sources] == ["parquet", "raw"]
    found = discover([tmp_path / "extracts"])  # a folder of extracts: each directory once, not its files
    assert [(s.kind, os.path.basename(s.path)) for s in found.sources] == [
        ("parquet", "b1"),
        ("parquet", "b3"),
    ]
    assert discover([tmp_path / "missing"]).problems


def test_corpus_compacted_records_and_metadata():
    corpus = corpus_path()
    tables = extract_tables(corpus / "clean/broker-1")
    compacted = _replica(tables, "compacted", 0)
    assert (compacted["compacted"], compacted["has_records"], compacted["cleaner_offset"]) == (
        True,
        True,
        2896,
    )
    assert (compacted["leo"], compacted["hw"]) == (3000, 3000)
    recs = tables["record"].filter(pa.compute.equal(tables["record"]["topic"], "compacted"))
    assert recs.num_rows == 378  # README: broker-1 holds 378 records of compacted-0
    meta = _replica(tables, "__cluster_metadata", 0)
    assert (meta["log_start"], meta["leo"]) == (0, 765)
    for broker, start in ((2, 129), (3, 251)):
        t = extract_tables(corpus / f"clean/broker-{broker}")
        assert _replica(t, "__cluster_metadata", 0)["log_start"] == start
        meta_rows = t["metadata"].to_pylist()
        assert {("plain", 0), ("compacted", 0)} <= {(m["topic"], m["partition"]) for m in meta_rows}
        assert all(m["offset"] >= start or m["from_snapshot"] for m in meta_rows)
    info = read_log_dir(corpus / "clean/broker-1")
    assert info.node == 1 and info.clean_shutdown and info.hw[("plain", 0)] == 520


def test_corpus_leos_match_the_readme():
    corpus = corpus_path()
    base = corpus / "unclean-leader-election/before-old-leader-restart"
    expected = {1: (1300, 1300, 2), 2: (1000, 0, 0), 3: (1500, 1500, 0)}
    for broker, (leo, hw, epoch) in expected.items():
        r = _replica(extract_tables(base / f"broker-{broker}"), "ule", 0)
        assert (r["leo"], r["hw"], r["latest_epoch"], r["clean_shutdown"]) == (leo, hw, epoch, False)


def test_record_hash_distinguishes_null_and_empty():
    from auditor.observe.records import record_hash
    from parsers.record_batch import Header

    values = {
        record_hash(None, b"v", []),
        record_hash(b"", b"v", []),
        record_hash(b"k", b"v", []),
        record_hash(b"k", None, []),
        record_hash(b"k", b"v", [Header("h", None)]),
        record_hash(b"k", b"v", [Header("h", b"")]),
    }
    assert len(values) == 6
    assert record_hash(b"k", b"v", []) == int.from_bytes(
        hashlib.blake2b(b"\x02k\x02v\x00", digest_size=8).digest(),  # Kafka's encoding of the content
        "big",
        signed=True,
    )


def _replica_of(root: Path) -> dict:
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
    row = _replica_of(root)
    assert _span(row) == (10, 20, 30) and row["batch_count"] == 4
    expected = "a directory" if kind == "dir" else "a FIFO"
    assert row["unreadable"].startswith("00000000000000000010.log: is " + expected)


def test_last_segment_unreadable_leaves_the_leo_unknown(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root, 20, "fifo")
    assert _span(_replica_of(root)) == (20, None, 20)


def test_middle_segment_stopping_early(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    seg = root / f"{TOPIC}-0" / segment_file_name(10, ".log")
    os.truncate(seg, seg.stat().st_size - 7)
    row = _replica_of(root)
    assert _span(row) == (15, 20, 30) and "torn-tail at byte" in row["unreadable"]


def test_last_segment_torn_tail_is_not_a_hole(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    seg = root / f"{TOPIC}-0" / segment_file_name(20, ".log")
    os.truncate(seg, seg.stat().st_size - 7)
    row = _replica_of(root)
    assert _span(row) == (None, None, 25) and row["tail_state"] == "torn-tail"


def test_complete_replica_has_no_span(tmp_path):
    row = _replica_of(write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30)))
    assert _span(row) == (None, None, 30) and row["unreadable"] is None


def test_extract_names_the_incomplete_replica(tmp_path):
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root, 10)
    counts = extract_log_dir(root, tmp_path / "b-extract")
    assert counts["errors"] == [
        f"{TOPIC}-0: incomplete from offset 10: 00000000000000000010.log: is a directory, not a regular file"
    ]
