"""``kafka-auditor ingest`` on Spark (auditor.spark.ingest): captures from a folder and from archives into the
warehouse, read back by Spark, pandas and DuckDB; re-ingesting adds nothing; a failed commit changes nothing
readers see; the lock serialises runs; the CLI's refusals."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.layout.archives import ArchiveLimits
from auditor.layout.warehouse import Warehouse
from auditor.observe.history_rows import TABLES
from auditor.spark.ingest import IngestError, archive_glob, classify_sources, ingest
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata

CLUSTER_ID = "QgxNy_HmRciFoMjvSeDK3w"
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
PARTITIONS = [("orders", 0), ("orders", 1), ("__consumer_offsets", 0)]
CHECKPOINTS = {
    "replication-offset-checkpoint": 0,
    "recovery-point-offset-checkpoint": -5,
    "log-start-offset-checkpoint": -100,
    "cleaner-offset-checkpoint": -200,
}


def capture_files(broker: int, night: int, *, malformed: bool = False) -> dict[str, bytes]:
    """One broker log dir's small files (plus a segment that must never be read), relative to its root."""
    files = {"meta.properties": format_meta_properties(1, node_id=broker, cluster_id=CLUSTER_ID)}
    for name, delta in CHECKPOINTS.items():
        files[name] = format_offset_checkpoint(
            (t, p, max(0, 1000 * night + 10 * broker + p + delta)) for t, p in PARTITIONS
        )
    if malformed:
        files["recovery-point-offset-checkpoint"] = (
            b"0\n3\norders 0 5\norders one 7\n__consumer_offsets 0 1\n"
        )
    for t, p in PARTITIONS:
        files[f"{t}-{p}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(
            [(0, 0), (night, 100 * night)]
        )
        files[f"{t}-{p}/partition.metadata"] = format_partition_metadata(TOPIC_ID)
        files[f"{t}-{p}/00000000000000000000.log"] = b"\xff" * 64  # not a capture file
    return files


def write_tree(base: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def write_archive(path: Path, members: dict[str, bytes], extra: list[tarfile.TarInfo] = ()) -> Path:
    if path.suffix == ".zip":
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
        return path
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_767_600_000
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return path


def nightly(night: int, brokers=(1, 2), **kw) -> dict[str, bytes]:
    """The members of one night's archive: ``2026-01-0<night>T020000Z/broker-<b>/data/...``."""
    return {
        f"2026-01-0{night}T020000Z/broker-{b}/data/{name}": data
        for b in brokers
        for name, data in capture_files(b, night, **kw).items()
    }


def row_counts(warehouse: Warehouse) -> dict[str, int]:
    return {t: pd.read_parquet(p).shape[0] for t, p in warehouse.tables().items()}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ingest")
    folder = base / "captures"
    for b in (1, 2):
        write_tree(folder / "2026-01-05T020000Z" / f"broker-{b}", capture_files(b, 5, malformed=b == 2))
    # a hidden name, skipped by Hadoop's listing, read by the executor
    (folder / "2026-01-05T020000Z" / "broker-2" / ".kafka_cleanshutdown").write_bytes(b'{"version":0}')
    link = tarfile.TarInfo("2026-01-06T020000Z/broker-1/data/evil")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    archive = write_archive(base / "fleet-2026-01-06.tgz", nightly(6), [link])
    # the same capture as the folder's broker 1, under another root: met twice in one run, kept once
    copy = write_archive(
        base / "copy.zip",
        {
            f"again/2026-01-05T020000Z/{n}": d
            for n, d in capture_files(1, 5).items()
            if not n.endswith(".log")
        },
    )
    later = write_archive(base / "fleet-2026-01-07.tgz", nightly(7))
    latest = write_archive(base / "fleet-2026-01-08.tgz", nightly(8))
    huge = write_archive(base / "huge.zip", {"blob": os.urandom(300_000)})  # stored: 300 kB on disk
    return {
        "huge": huge,
        "folder": folder,
        "archive": archive,
        "copy": copy,
        "later": later,
        "latest": latest,
        "base": base,
    }


@pytest.fixture(scope="module")
def first(spark, sources, tmp_path_factory):
    """A warehouse after ingesting the folder (2 captures), the archive (2 captures), the copy (1 repeat)."""
    warehouse = Warehouse.open(tmp_path_factory.mktemp("wh") / "w", create=True)
    result = ingest(spark, [sources["folder"], sources["archive"], sources["copy"]], warehouse)
    return warehouse, result


@pytest.mark.spark
def test_first_ingest_adds_four_captures(first, sources):
    warehouse, result = first
    assert result.captures_added == 4 and result.duplicates == 1 and result.version == 1
    counts = row_counts(warehouse)
    assert counts["captures"] == 4 and counts["brokers"] == 4
    assert counts["partitions"] == 4 * len(PARTITIONS)
    assert counts["high_watermarks"] == 4 * len(PARTITIONS)
    # leader epochs of every partition dir, internal topics included (Hadoop's listing skips `_` names)
    assert counts["leader_epochs"] == 4 * len(PARTITIONS) * 2
    epochs = pd.read_parquet(warehouse.table_path("leader_epochs"))
    assert set(epochs["topic"]) == {"orders", "__consumer_offsets"}
    assert {k: v for k, v in result.rows.items() if v} == counts
    assert result.entries == sum(counts[t] for t in CHECKPOINTS_TABLES)
    # per capture: meta.properties, 4 checkpoints, 2 files per partition directory; 5 captures read, and one
    # .kafka_cleanshutdown
    assert result.files == 5 * (1 + 4 + 2 * len(PARTITIONS)) + 1 and result.archives == 2
    captures = pd.read_parquet(warehouse.table_path("captures"))
    assert sorted(captures["broker"]) == [1, 1, 2, 2]
    assert sorted(captures["captureDate"].astype(str)) == ["2026-01-05"] * 2 + ["2026-01-06"] * 2
    assert set(captures["source"]) == {str(sources["folder"]), str(sources["archive"])}  # the copy: dropped
    clean = captures[captures["cleanShutdown"].fillna(False).astype(bool)]
    assert list(clean["broker"]) == [2] and list(clean["source"]) == [str(sources["folder"])]
    assert warehouse.last_ingest()["id"] == result.ingest_id


CHECKPOINTS_TABLES = (
    "high_watermarks",
    "recovery_points",
    "log_start_offsets",
    "cleaner_offsets",
    "leader_epochs",
)


@pytest.mark.spark
def test_problems_of_malformed_files_and_refused_entries(first):
    warehouse, result = first
    problems = pd.read_parquet(warehouse.table_path("problems"))
    assert result.problems == len(problems) >= 2
    malformed = problems[problems["kind"] == "malformed"]
    assert len(malformed) == 1
    assert malformed.iloc[0]["file"].endswith("broker-2/recovery-point-offset-checkpoint")
    assert malformed.iloc[0]["line"] == 4
    refused = problems[problems["kind"] == "refused"]
    assert any("evil" in f for f in refused["file"]) and all(
        "fleet-2026-01-06.tgz" in f for f in refused["file"]
    )


@pytest.mark.spark
def test_spark_pandas_and_duckdb_read_the_same_rows(first, spark):
    import duckdb

    warehouse, _ = first
    expected = row_counts(warehouse)
    base = warehouse.path / "current"
    for table in expected:
        if table in ("captures", "leader_epochs"):  # Spark: two of them (time)
            assert spark.read.parquet(str(base / table)).count() == expected[table], table
        query = f"select count(*) from read_parquet('{base / table}/**/*.parquet', hive_partitioning=true)"
        assert duckdb.sql(query).fetchall()[0][0] == expected[table], table
    files = f"{base}/high_watermarks/**/*.parquet"
    query = f"select distinct cluster from read_parquet('{files}', hive_partitioning=true)"
    hw = duckdb.sql(query).fetchall()
    assert hw == [(CLUSTER_ID,)]
    assert set(expected) <= set(TABLES)


@pytest.mark.spark
def test_ingesting_the_same_sources_again_adds_nothing(first, spark, sources):
    warehouse, _ = first
    before = row_counts(warehouse)
    version = warehouse.current_version()
    again = ingest(spark, [sources["folder"], sources["archive"], sources["copy"]], warehouse)
    assert again.captures_added == 0 and again.duplicates == 5 and sum(again.rows.values()) == 0
    # the version does not change when nothing is added
    assert again.version == version == warehouse.current_version()
    assert row_counts(warehouse) == before
    assert warehouse.last_ingest()["id"] == again.ingest_id


@pytest.mark.spark
def test_failed_commit_leaves_current_and_readers_see_the_old_data(first, spark, sources, monkeypatch):
    warehouse, _ = first
    before, version = row_counts(warehouse), warehouse.current_version()

    def crash(self, version):
        raise OSError("simulated crash after staging")

    monkeypatch.setattr(Warehouse, "_switch", crash)
    with pytest.raises(OSError, match="simulated"):
        ingest(spark, [sources["later"]], warehouse)
    monkeypatch.undo()
    assert warehouse.current_version() == version and row_counts(warehouse) == before
    assert not any((warehouse.path / "_staging").iterdir())
    # the unreferenced version it built is removed by the next run, which then adds the captures; an archive
    # above the expansion cap is refused without being read
    cap = ArchiveLimits(max_total_bytes=200_000)
    result = ingest(spark, [sources["later"], sources["huge"]], warehouse, limits=cap)
    assert result.captures_added == 2 and warehouse.versions()[-1] == result.version == version + 1
    assert result.archives == 2 and result.problems == 1
    problems = pd.read_parquet(warehouse.table_path("problems"))
    huge = problems[problems["file"].str.startswith("huge.zip!")]
    assert len(huge) == 1 and "above the cap" in huge.iloc[0]["message"]


@pytest.mark.spark
def test_a_second_run_waits_for_the_lock(first, spark, sources, capfd):
    from tests.layout.test_warehouse import hold_lock

    warehouse, _ = first
    marker = sources["base"] / "released"
    child = hold_lock(warehouse.path, 2.0, marker)
    try:
        result = ingest(spark, [sources["latest"]], warehouse)
    finally:
        child.wait(30)
    assert result.captures_added == 2
    err = capfd.readouterr().err
    assert err.count("waiting for the lock on warehouse") == 1
    runs = warehouse.read_state("ingests")["ingests"]
    assert runs[-1]["id"] == result.ingest_id and runs[-1]["startMs"] <= marker.stat().st_mtime * 1000


@pytest.mark.spark
def test_cli_ingests_a_folder_with_glob_characters_and_an_archive_inside(spark, sources, tmp_path):
    folder = tmp_path / "odd [1]{a,b}*"
    write_tree(folder / "2026-01-09T020000Z" / "broker-3", capture_files(3, 9))
    (folder / "nested").mkdir()
    (folder / "nested" / "fleet.tgz").write_bytes(sources["later"].read_bytes())
    into = tmp_path / "w"
    run = CliRunner().invoke(
        app, ["ingest", str(folder), "--into", str(into), "--master", "local[2]", "--format", "json"]
    )
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    assert data["capturesAdded"] == 3 and data["version"] == 1 and data["rows"]["captures"] == 3
    assert data["archives"] == 1 and data["sources"] == [str(folder)]
    assert "3 captures added, 0 duplicates skipped" in run.stderr and run.stderr.count("\n") == 1
    captures = pd.read_parquet(into / "current" / "captures")
    assert sorted(captures["source"]) == [str(folder)] + [f"{folder}/nested/fleet.tgz"] * 2
    assert sorted(captures["captureDate"].astype(str)) == ["2026-01-07"] * 2 + ["2026-01-09"]


@pytest.mark.parametrize(
    "args, message",
    [
        (lambda s, t: ["ingest", str(s["folder"]), "--into", str(s["folder"] / "w")], "is inside the source"),
        (lambda s, t: ["ingest", str(t / "w" / "x"), "--into", str(t / "w")], "does not exist"),
        (
            lambda s, t: ["ingest", str(s["base"]), "--into", str(s["base"] / "captures" / "w")],
            "inside the source",
        ),
        (lambda s, t: ["ingest", str(s["folder"])], "missing --into"),
        (lambda s, t: ["ingest", "--into", str(t / "w")], "missing SOURCE"),
        (lambda s, t: ["ingest", str(s["folder"]), "--into", str(t / "w"), "--cluster", "a\tb"], "--cluster"),
        (lambda s, t: ["ingest", str(s["folder"]), "--into", str(t / "w"), "--master", "locl"], "--master"),
    ],
)
def test_cli_refusals_are_one_line_before_spark(sources, tmp_path, args, message):
    (tmp_path / "w").mkdir()
    run = CliRunner().invoke(app, args(sources, tmp_path))
    assert run.exit_code == 2, run.output
    assert message in run.stderr and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert not (sources["folder"] / "w").exists()


def test_cli_refuses_a_source_inside_the_warehouse_and_other_files(sources, tmp_path):
    into = tmp_path / "w"
    Warehouse.open(into, create=True)
    (into / "state" / "x.tgz").write_bytes(b"")
    run = CliRunner().invoke(app, ["ingest", str(into / "state" / "x.tgz"), "--into", str(into)])
    assert run.exit_code == 2 and "is inside the warehouse" in run.stderr
    text = tmp_path / "notes.txt"
    text.write_text("x")
    run = CliRunner().invoke(app, ["ingest", str(text), "--into", str(into)])
    assert run.exit_code == 2 and "neither a directory nor an archive" in run.stderr


def test_sources_are_classified_without_reading_them(sources, tmp_path):
    dirs, archives = classify_sources(
        [sources["folder"], sources["folder"] / "2026-01-05T020000Z", sources["archive"]]
    )
    assert [p for _, p in dirs] == [str(sources["folder"])] and [p for _, p in archives] == [
        str(sources["archive"])
    ]
    with pytest.raises(IngestError, match="overlap"):
        classify_sources([sources["folder"]], sources["folder"] / "w")
    assert archive_glob().startswith("{*.[tT][aA][rR],")


def test_a_capture_the_parser_cannot_take_becomes_a_problem(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    import auditor.observe.captures as captures
    from auditor.spark.ingest_sources import IngestRun
    from auditor.spark.ingest_tasks import CaptureParser

    def broken(*args, **kwargs):
        raise RuntimeError("unexpected\nsecond line")

    monkeypatch.setattr(captures, "parse_capture", broken)
    run = IngestRun("r1", 1_767_578_400_000, str(tmp_path), None, ArchiveLimits(), (("src", str(tmp_path)),))
    parser = CaptureParser(run, frozenset(), "t0")
    files = [captures.CaptureFile("meta.properties", 1_767_578_400_000, b"node.id=1\n")]
    summary = parser.capture(0, "src", "broker-1", files)
    written = parser.close()
    assert summary["kind"] == "refusal" and summary["paths"] == [written[0]["paths"][0]]
    rows = pq.read_table(written[0]["paths"][0]).to_pylist()
    assert len(rows) == 1 and rows[0]["message"] == "capture not ingested: RuntimeError: unexpected"
    assert rows[0]["file"] == "src!broker-1"


@pytest.mark.spark
def test_links_special_and_oversize_files_of_a_folder_are_refused_never_read(spark, tmp_path):
    secret = tmp_path / "secret"
    marker = "MARKER-7f3a-not-for-the-warehouse"
    secret.write_text(f"0\n1\n{marker} 0 1\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "leader-epoch-checkpoint").write_text(f"0\n1\n0 {marker}\n")
    folder = tmp_path / "captures"
    b1 = folder / "2026-01-10T020000Z" / "broker-1"
    b2 = folder / "2026-01-10T020000Z" / "broker-2"
    write_tree(b1, {n: d for n, d in capture_files(1, 10).items() if not n.endswith(".log")})
    write_tree(b2, {n: d for n, d in capture_files(2, 10).items() if not n.endswith(".log")})
    (b1 / "recovery-point-offset-checkpoint").unlink()
    (b1 / "recovery-point-offset-checkpoint").symlink_to(secret)
    (b1 / "orders-7").symlink_to(tmp_path / "elsewhere", target_is_directory=True)  # a linked folder
    (b1 / "log-start-offset-checkpoint").unlink()
    os.mkfifo(b1 / "log-start-offset-checkpoint")  # not listed by Hadoop (opening it would block)
    (b1 / ".kafka_cleanshutdown").symlink_to(secret)  # a hidden name, read by the executor
    (b2 / "replication-offset-checkpoint").write_bytes(b"0\n0\n" + b"\n" * 5000)  # above the cap
    warehouse = Warehouse.open(tmp_path / "w", create=True)
    result = ingest(spark, [folder], warehouse, limits=ArchiveLimits(max_member_bytes=4096))
    assert result.captures_added == 2 and result.problems == 4
    problems = pd.read_parquet(warehouse.table_path("problems")).sort_values("file")
    assert list(problems["kind"]) == ["refused"] * 4
    names = [".kafka_cleanshutdown", "orders-7/leader-epoch-checkpoint", "recovery-point-offset-checkpoint"]
    assert list(problems["file"]) == [f"captures!2026-01-10T020000Z/broker-1/{name}" for name in names] + [
        "captures!2026-01-10T020000Z/broker-2/replication-offset-checkpoint"
    ]
    messages = list(problems["message"])
    assert "symbolic link (not followed)" in messages[0] and messages[0] == messages[2]
    assert messages[1] == "folder orders-7 on its path is a symbolic link (not followed); not read"
    assert messages[3] == "5004 bytes, larger than the 4096 bytes cap of a capture file; not read"
    assert sorted(pd.read_parquet(warehouse.table_path("log_start_offsets"))["broker"].unique()) == [2]
    # the rest of both captures is in
    recovery = pd.read_parquet(warehouse.table_path("recovery_points"))
    assert sorted(recovery["broker"].unique()) == [2]
    hw = pd.read_parquet(warehouse.table_path("high_watermarks"))
    assert sorted(hw["broker"].unique()) == [1]
    assert len(pd.read_parquet(warehouse.table_path("leader_epochs"))) == 2 * 2 * len(PARTITIONS)
    for table, path in warehouse.tables().items():
        assert marker not in pd.read_parquet(path).to_csv(), table
    assert marker not in json.dumps(warehouse.read_state("ingests"))
