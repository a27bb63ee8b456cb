"""The warehouse on disk (auditor.layout.warehouse): opening, committing versions atomically, garbage of
crashed runs, state files, the lock. No Spark."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from auditor.layout import warehouse as wh
from auditor.layout.warehouse import Warehouse, WarehouseError, decode_value, encode_value, part_file
from auditor.observe.history_rows import TABLES, WAREHOUSE_VERSION, file_schema


def _stage(
    w: Warehouse, ingest_id: str, ids: list[str], cluster: str = "c1", date: str = "2026-01-05"
) -> Path:
    """One staged captures file holding ``ids``."""
    schema = file_schema("captures")
    rows = [{"captureId": i, "captureTime": 1_767_578_400_000, "source": "s", "files": 1} for i in ids]
    path = w.staging(ingest_id) / part_file("captures", cluster, date, ingest_id, "t0")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def _ids(path: str | Path) -> list[str]:
    return sorted(
        ds.dataset(str(path), format="parquet").to_table(columns=["captureId"]).column(0).to_pylist()
    )


def test_open_creates_and_reopens(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    info = json.loads((tmp_path / "w" / "warehouse.json").read_text())
    assert info["format"] == "kafka-auditor-warehouse" and info["version"] == WAREHOUSE_VERSION
    assert w.current_version() == 0 and w.tables() == {} and w.table_path("captures") is None
    assert w.capture_ids() == set() and w.last_ingest() is None
    again = Warehouse.open(tmp_path / "w", create=False)
    assert again.info == info


@pytest.mark.parametrize(
    "setup, create, message",
    [
        (lambda p: None, False, "does not exist"),
        (lambda p: p.write_text("x"), True, "not a directory"),
        (lambda p: (p.mkdir(), (p / "data.txt").write_text("x")), True, "not empty and not a kafka-auditor"),
        (lambda p: p.mkdir(), False, "not a kafka-auditor warehouse"),
        (lambda p: (p.mkdir(), (p / "warehouse.json").write_text("{\n oops")), True, "line 2: not JSON"),
        (lambda p: (p.mkdir(), (p / "warehouse.json").write_text('{"format": "x"}')), True, "format is not"),
        (
            lambda p: (
                p.mkdir(),
                (p / "warehouse.json").write_text('{"format": "kafka-auditor-warehouse", "version": 99}'),
            ),
            True,
            "a version 99 warehouse",
        ),
    ],
)
def test_open_refuses(tmp_path, setup, create, message):
    path = tmp_path / "w"
    setup(path)
    with pytest.raises(WarehouseError) as err:
        Warehouse.open(path, create=create)
    text = str(err.value)
    assert message in text and "\n" not in text and str(path) in text


def test_commit_versions_links_and_keeps_three(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    with w.lock():
        first = _stage(w, "run1", ["a", "b"])
        assert w.commit("run1", [first]) == 1
    assert (tmp_path / "w" / "current").is_symlink()
    assert os.readlink(tmp_path / "w" / "current") == "versions/1"
    assert not (tmp_path / "w" / "_staging" / "run1").exists()
    table = w.table_path("captures")
    assert table == tmp_path / "w" / "versions" / "1" / "captures"
    committed = next(table.rglob("*.parquet"))
    assert committed.relative_to(table).parts[:2] == ("cluster=c1", "captureDate=2026-01-05")
    assert not committed.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)  # immutable
    assert w.capture_ids() == {"a", "b"}
    for n in range(2, 6):
        with w.lock():
            staged = _stage(w, f"run{n}", [f"x{n}"], date=f"2026-01-0{n}")
            assert w.commit(f"run{n}", [staged]) == n
    # every version holds its predecessors' files (hard links: one inode), only the newest 3 are kept
    assert w.versions() == [3, 4, 5]
    assert w.capture_ids() == {"a", "b", "x2", "x3", "x4", "x5"}
    v5 = tmp_path / "w" / "versions" / "5" / "captures"
    v3 = tmp_path / "w" / "versions" / "3" / "captures"
    inode = {p.relative_to(v5): p.stat().st_ino for p in v5.rglob("*.parquet")}
    assert all(inode[p.relative_to(v3)] == p.stat().st_ino for p in v3.rglob("*.parquet"))
    assert w.tables() == {"captures": str(v5)}
    # readers: pandas through `current`, with the Hive partition columns
    import pandas as pd

    frame = pd.read_parquet(tmp_path / "w" / "current" / "captures")
    assert sorted(frame["captureId"]) == ["a", "b", "x2", "x3", "x4", "x5"]
    assert set(frame["cluster"].astype(str)) == {"c1"}
    # nothing staged: no new version
    with w.lock():
        assert w.commit("run9", []) == 5
    assert w.versions() == [3, 4, 5]


def test_commit_refuses_foreign_files_and_needs_the_lock(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    staged = _stage(w, "run1", ["a"])
    with pytest.raises(RuntimeError, match="lock"):
        w.commit("run1", [staged])
    outside = tmp_path / "elsewhere.parquet"
    outside.write_bytes(b"PAR1")
    with w.lock(), pytest.raises(WarehouseError, match="not under the staging directory"):
        w.commit("run1", [outside])
    with pytest.raises(ValueError, match="invalid ingest id"):
        w.staging("../x")


def test_failed_switch_leaves_current_and_next_run_cleans_up(tmp_path, monkeypatch):
    w = Warehouse.open(tmp_path / "w", create=True)
    with w.lock():
        w.commit("run1", [_stage(w, "run1", ["a"])])

    def crash(version: int) -> None:
        raise OSError("simulated crash before the switch")

    monkeypatch.setattr(Warehouse, "_switch", lambda self, version: crash(version))
    with pytest.raises(OSError, match="simulated"), w.lock():
        w.commit("run2", [_stage(w, "run2", ["b"])])
    monkeypatch.undo()
    # readers still see version 1; the unreferenced version 2 and the staging dir are left behind
    assert w.current_version() == 1 and w.capture_ids() == {"a"}
    assert w.versions() == [1, 2] and (tmp_path / "w" / "_staging" / "run2").is_dir()
    with w.lock():  # the next run removes them
        assert w.versions() == [1] and not (tmp_path / "w" / "_staging" / "run2").exists()
        assert w.commit("run3", [_stage(w, "run3", ["c"])]) == 2
    assert w.capture_ids() == {"a", "c"}


def test_state_is_atomic_json_with_the_umask_mode(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    old = os.umask(0o027)
    try:
        w.write_state("reports", {"seen": ["f1"]})
    finally:
        os.umask(old)
    path = tmp_path / "w" / "state" / "reports.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert w.read_state("reports") == {"seen": ["f1"]} and w.read_state("absent") == {}
    assert [p.name for p in path.parent.iterdir()] == ["reports.json"]  # no temporary file left
    path.write_text('{"seen": [\n1,,]}')
    with pytest.raises(WarehouseError, match=r"reports\.json: line 2: not JSON"):
        w.read_state("reports")
    with pytest.raises(ValueError):
        w.write_state("../escape", {})


def test_record_ingest_keeps_the_newest(tmp_path, monkeypatch):
    monkeypatch.setattr(wh, "INGESTS_KEPT", 3)
    w = Warehouse.open(tmp_path / "w", create=True)
    with pytest.raises(RuntimeError):
        w.record_ingest({"id": "r0", "startMs": 1, "endMs": 2})
    with w.lock():
        for n in range(5):
            w.record_ingest({"id": f"r{n}", "startMs": n, "endMs": n + 1, "capturesAdded": n})
        with pytest.raises(ValueError, match="endMs"):
            w.record_ingest({"id": "bad", "startMs": 1})
    assert [r["id"] for r in w.read_state("ingests")["ingests"]] == ["r2", "r3", "r4"]
    assert w.last_ingest() == {"id": "r4", "startMs": 4, "endMs": 5, "capturesAdded": 4}


@pytest.mark.parametrize("value", ["QgxNy_HmRciFoMjvSeDK3w", "prod eu/1", "a=b%c", "", ".", "..", "zürich"])
def test_partition_values_round_trip_through_pyarrow(tmp_path, value):
    encoded = encode_value(value)
    assert "/" not in encoded and encoded not in (".", "..") and decode_value(encoded) == value
    if value == "":
        return  # Hive's null partition
    w = Warehouse.open(tmp_path / "w", create=True)
    with w.lock():
        w.commit("run1", [_stage(w, "run1", ["a"], cluster=value)])
    table = ds.dataset(w.table_path("captures"), format="parquet", partitioning="hive").to_table()
    assert table.column("cluster").to_pylist() == [value]


def test_capture_ids_names_a_bad_file(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    with w.lock():
        staged = _stage(w, "run1", ["a"])
        staged.chmod(0o644)
        staged.write_bytes(b"not parquet")
        w.commit("run1", [staged])
    with pytest.raises(WarehouseError, match="cannot read captureId"):
        w.capture_ids()


HOLDER = textwrap.dedent(
    """
    import sys, time
    from auditor.layout.warehouse import Warehouse
    w = Warehouse.open(sys.argv[1], create=False)
    with w.lock():
        print("locked", flush=True)
        time.sleep(float(sys.argv[2]))
        open(sys.argv[3], "w").close()  # the last thing done under the lock
    """
)


def hold_lock(path: Path, seconds: float, marker: Path) -> subprocess.Popen:
    """A subprocess holding ``path``'s warehouse lock for ``seconds``, then creating ``marker`` just before
    releasing it (returns once it holds the lock)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds), str(marker)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "locked"
    return child


def test_lock_waits_for_another_process_and_says_so_once(tmp_path):
    w = Warehouse.open(tmp_path / "w", create=True)
    child = hold_lock(tmp_path / "w", 1.0, tmp_path / "released")
    said: list[str] = []
    started = time.monotonic()
    try:
        with w.lock(on_wait=said.append):
            waited = time.monotonic() - started
            assert (tmp_path / "released").exists()  # taken only after the holder was done
    finally:
        child.wait(10)
    assert waited > 0.5
    assert len(said) == 1 and "waiting for the lock" in said[0] and str(tmp_path / "w") in said[0]
    with w.lock(on_wait=said.append), w.lock(on_wait=said.append):  # re-entrant, no wait
        pass
    assert len(said) == 1


def test_every_table_schema_has_a_file_schema():
    # what the executors write: the full schema less the Hive partition columns
    for table in TABLES:
        names = file_schema(table).names
        assert "cluster" not in names and "captureDate" not in names and "captureId" in names


@pytest.mark.parametrize(
    "content",
    ['{"ingests": 5}', '{"ingests": [1]}', '{"ingests": [{"id": "x", "startMs": 1, "endMs": "x"}]}'],
)
def test_an_ingests_state_of_the_wrong_shape_is_one_line_naming_the_file(tmp_path, content):
    w = Warehouse.open(tmp_path / "w", create=True)
    (tmp_path / "w" / "state").mkdir(exist_ok=True)
    (tmp_path / "w" / "state" / "ingests.json").write_text(content)
    with pytest.raises(WarehouseError, match="ingests.json") as info:
        w.last_ingest()
    assert "\n" not in str(info.value)
