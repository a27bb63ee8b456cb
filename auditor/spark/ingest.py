"""``kafka-auditor ingest`` on Spark: checkpoint captures (directory trees and archives) parsed on the
executors into the warehouse's Parquet tables (:mod:`auditor.layout.warehouse`, schemas in
:mod:`auditor.observe.history_rows`).

The driver lists only the sources it is given; Spark lists the trees and reads the files:

* Directory sources: Spark's ``binaryFile`` source with ``recursiveFileLookup`` and ``pathGlobFilter`` =
  :data:`auditor.layout.captures.CAPTURE_FILE_GLOB` lists the captures' small files (path and mtime only:
  Spark reads no content; a segment is never opened), with a small ``spark.sql.files.openCostInBytes`` so that
  thousands of tiny files pack into few tasks. Each file is keyed by its capture root (a Spark expression on
  its path: the folder of a top file, the folder above a partition directory); the rows are repartitioned
  by that key and sorted, and a ``mapInArrow`` groups each capture's files, reads them (``lstat`` first: a
  symbolic link, on the way or the file itself, a special file or a file above
  ``ArchiveLimits.max_member_bytes`` is a refused ``problems`` row, never read; Hadoop's listing follows
  links) and parses them with :func:`auditor.observe.captures.parse_capture`. A failed job's task errors are
  not logged (the exception carries them; the CLI prints one line).
  Hadoop's listing skips every name starting with ``_`` or ``.``
  (``HadoopFSUtils.shouldFilterOutPathName``): partition directories of internal topics
  (``__consumer_offsets-0``, ``_schemas-0``) and ``.kafka_cleanshutdown``; the executor that parses a capture
  therefore reads those entries of the capture root itself (their capture files only; nothing is listed inside
  a partition directory). A capture root *below* such a name (``SOURCE/_old/broker-1``) is not seen: pack it
  in an archive or name it otherwise.
* Archive sources (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``, given directly or found inside a directory
  source): one ``binaryFile`` row per archive; a ``mapInArrow`` reads each in memory with
  :func:`auditor.layout.archives.read_archive` (never extracted to disk), groups its members by capture root
  and parses each capture; refused entries become ``problems`` rows. An archive larger than the expansion cap
  (``ArchiveLimits.max_total_bytes``, at most 2 GiB, Spark's binaryFile limit) is refused without being read.

Each task writes its rows as Parquet (zstd) under the ingest's staging directory, one file per (table,
cluster, captureDate), without the partition columns, and returns small summary rows (captureId, staged
files, row counts). A capture whose captureId (the SHA-256 of its content) is already in the warehouse (a
broadcast set) is skipped and counted as a duplicate; a capture met twice in one run is kept once (within a
task the later copy is skipped; across tasks the driver removes the later copies' rows from the staged
files before the commit). The driver then commits (:meth:`Warehouse.commit`: readers see all of the run or
none of it) and records the run in state ``ingests``. A run that adds nothing leaves the version unchanged.

Staging and warehouse must be on a filesystem the executors and the driver share (local mode, or a shared
mount at the same path on every machine of a cluster); so must the sources.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from auditor.layout.archives import ArchiveLimits, Refusal
from auditor.layout.warehouse import Warehouse, new_ingest_id
from auditor.spark.ingest_sources import (
    IngestError,
    IngestRun,
    archive_glob,
    classify_sources,
    glob_escape,
    local_path,
    locate,
)
from auditor.spark.ingest_tasks import CaptureParser, parquet_options, parse_archives, parse_dir_captures

__all__ = [
    "ENTRY_TABLES",
    "IngestError",
    "IngestResult",
    "archive_glob",
    "classify_sources",
    "ingest",
]

ENTRY_TABLES = ("high_watermarks", "recovery_points", "log_start_offsets", "cleaner_offsets", "leader_epochs")
"""The tables of checkpoint entries (the entries/s of the benchmark)."""
FILE_OPEN_COST = 8192
"""``spark.sql.files.openCostInBytes`` while listing captures: a tiny file weighs ~its size, not 4 MB, so
thousands of them share a task."""
RECORDS_PER_BATCH = 16
"""``spark.sql.execution.arrow.maxRecordsPerBatch`` of the job: few archives in a task's memory at once
(a file partition holds at most ``spark.sql.files.maxPartitionBytes`` of them, or one larger archive)."""
SPARK_BINARY_LIMIT = (1 << 31) - 1 - 1024
"""Spark's binaryFile source cannot read a file of 2 GiB or more (one Java byte array)."""

SUMMARY_DDL = (
    "kind string, captureId string, source string, root string, `order` long, files long, bytes long, "
    "rows string, paths array<string>"
)
TOO_LARGE = "too-large"


@dataclass(frozen=True)
class IngestResult:
    """What one ingest run did (``files``/``bytes``: capture files read, duplicates included; ``entries``:
    rows of the checkpoint-entry tables added; ``version``: the warehouse version after the run)."""

    ingest_id: str
    captures_added: int
    duplicates: int
    rows: dict[str, int]
    files: int
    bytes: int
    problems: int
    seconds: float
    version: int = 0
    entries: int = 0
    archives: int = 0
    sources: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """camelCase, like every JSON output of the tool."""
        data = asdict(self)
        return {
            "ingestId": data.pop("ingest_id"),
            "capturesAdded": data.pop("captures_added"),
            **data,
        }

    def line(self) -> str:
        """The one-line summary printed on stderr."""
        rows = sum(self.rows.values())
        return (
            f"ingest {self.ingest_id}: {self.captures_added} captures added, {self.duplicates} duplicates "
            f"skipped, {rows} rows ({self.entries} checkpoint entries), {self.problems} problems, "
            f"{self.files} files read in {self.seconds:.1f} s; warehouse version {self.version}"
        )


# ------------------------------------------------------------------------------------------ driver


@contextmanager
def _spark_conf(spark, values: dict[str, str]) -> Iterator[None]:
    """Session settings for the duration of one job, then restored."""
    old = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


@contextmanager
def _quiet_task_errors(spark) -> Iterator[None]:
    """Spark's ERROR log of a failed task (the Java and Python stacks, tens of lines on stderr) off for one
    job: the failure reaches the caller as an exception (the CLI reports it in one line)."""
    jvm = spark.sparkContext._jvm
    try:
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        level = jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark").getLevel()
        configurator.setLevel("org.apache.spark", jvm.org.apache.logging.log4j.Level.OFF)
    except Exception:  # noqa: BLE001 - another logging back end: its logs stay as they are
        yield
        return
    try:
        yield
    finally:
        configurator.setLevel("org.apache.spark", level)


def _directory_frame(spark, run: IngestRun, dirs: list[str], known):
    """Summary rows (a DataFrame) of the captures found in the directory sources."""
    from pyspark.sql import functions as F

    from auditor.layout.captures import CAPTURE_FILE_GLOB, TOP_FILES

    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", CAPTURE_FILE_GLOB)
        .load([glob_escape(d) for d in dirs])
    )
    # the capture root of each file by name alone (top files: their folder; partition files: the folder
    # above), so that each capture's files meet in one task, in a row; the parser checks each name again
    name = F.element_at(F.split("path", "/"), -1)
    root = F.when(name.isin(*sorted(TOP_FILES)), F.regexp_extract("path", r"^(.*)/[^/]*$", 1)).otherwise(
        F.regexp_extract("path", r"^(.*)/[^/]*/[^/]*$", 1)
    )
    grouped = (
        files.select("path", "modificationTime", root.alias("captureRoot"))  # content: read by the parser
        .repartition(max(1, spark.sparkContext.defaultParallelism), "captureRoot")
        .sortWithinPartitions("captureRoot", "path")
    )
    return grouped.mapInArrow(partial(parse_dir_captures, run=run, known_ids=known), SUMMARY_DDL)


def _archive_frame(spark, run: IngestRun, paths: list[str], known):
    """Summary rows (a DataFrame) of the archives given or found in the directories, and one row (kind
    :data:`TOO_LARGE`) per archive too large to read, listed without being read."""
    from pyspark.sql import functions as F

    cap = min(run.limits.max_total_bytes, SPARK_BINARY_LIMIT)
    archives = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", archive_glob())
        .load([glob_escape(p) for p in paths])
    )
    readable = archives.where(F.col("length") <= cap).select("path", "modificationTime", "content")
    parsed = readable.mapInArrow(partial(parse_archives, run=run, known_ids=known), SUMMARY_DDL)
    too_large = archives.where(F.col("length") > cap).select(
        F.lit(TOO_LARGE).alias("kind"),
        *[F.lit(None).cast("string").alias(c) for c in ("captureId", "source", "root")],
        *[F.lit(0).cast("long").alias(c) for c in ("order", "files")],
        F.col("length").alias("bytes"),
        F.lit("{}").alias("rows"),
        F.array(F.col("path")).alias("paths"),
    )
    return parsed.unionByName(too_large)


def _drop_rows(path: str, capture_ids: set[str]) -> int:
    """Remove the rows of ``capture_ids`` from a staged file (rewritten, or deleted when empty); rows left."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    data = pq.read_table(path)
    kept = data.filter(pc.invert(pc.is_in(data.column("captureId"), pa.array(sorted(capture_ids)))))
    if kept.num_rows == 0:
        os.unlink(path)
        return 0
    tmp = path + ".tmp"
    pq.write_table(kept, tmp, **parquet_options(kept.schema))
    os.replace(tmp, path)
    return kept.num_rows


def _settle(summaries: list[dict[str, Any]]) -> tuple[list[dict], list[dict], list[str]]:
    """(kept captures and refusals, duplicates, staged files to commit): of the copies of one capture parsed
    by several tasks, the first (source order, root) is kept and the others' rows leave the staged files."""
    parsed = [s for s in summaries if s["kind"] in ("capture", "refusal")]
    duplicates = [s for s in summaries if s["kind"] == "duplicate"]
    files = {s["paths"][0] for s in summaries if s["kind"] == "file"}
    copies: dict[str, list[dict]] = defaultdict(list)
    for s in parsed:
        if s["kind"] == "capture":
            copies[s["captureId"]].append(s)
    drop: dict[str, set[str]] = defaultdict(set)
    later: set[int] = set()
    for capture_id, group in copies.items():
        group.sort(key=lambda s: (s["order"], s["root"] or "", s["source"] or ""))
        for s in group[1:]:
            later.add(id(s))
            for path in s["paths"]:
                drop[path].add(capture_id)
    for path, ids in drop.items():
        if _drop_rows(path, ids) == 0:
            files.discard(path)
    kept = [s for s in parsed if id(s) not in later]
    duplicates += [s for s in parsed if id(s) in later]
    return kept, duplicates, sorted(files)


def ingest(
    spark,
    sources: Sequence[Path],
    warehouse: Warehouse,
    *,
    cluster: str | None = None,
    limits: ArchiveLimits = ArchiveLimits(),
) -> IngestResult:
    """Ingest ``sources`` (directories and archives of checkpoint captures) into ``warehouse`` (see the module
    docstring); holds the warehouse lock for the whole run. :class:`IngestError` for a bad source; Spark
    errors propagate (the run's staged files are then removed and nothing is committed)."""
    started = time.time()
    start_ms = int(started * 1000)
    dirs, archives = classify_sources(sources, warehouse.path)
    run_id = new_ingest_id(start_ms)
    with warehouse.lock():
        staging = warehouse.staging(run_id)
        run = IngestRun(run_id, start_ms, str(staging), cluster, limits, tuple(dirs + archives))
        # ids of the captures and of the refused archive entries already recorded
        known = spark.sparkContext.broadcast(
            frozenset(warehouse.capture_ids() | warehouse.capture_ids("problems"))
        )
        try:
            summaries, archives_read = _run_jobs(
                spark, run, [p for _, p in dirs], [p for _, p in archives], known
            )
            kept, duplicates, staged = _settle(summaries)
            version = warehouse.commit(run_id, staged)
        except BaseException:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            known.unpersist()
        rows_by_table: dict[str, int] = defaultdict(int)
        for s in kept:
            for table, n in json.loads(s["rows"]).items():
                rows_by_table[table] += n
        read = [s for s in kept + duplicates if s["kind"] != "refusal"]
        result = IngestResult(
            ingest_id=run_id,
            captures_added=sum(1 for s in kept if s["kind"] == "capture"),
            duplicates=len(duplicates),
            rows=dict(sorted(rows_by_table.items())),
            files=sum(s["files"] for s in read),
            bytes=sum(s["bytes"] for s in read),
            problems=rows_by_table.get("problems", 0),
            seconds=time.time() - started,
            version=version,
            entries=sum(rows_by_table.get(t, 0) for t in ENTRY_TABLES),
            archives=archives_read,
            sources=[label for label, _ in dirs + archives],
        )
        summary = {k: v for k, v in result.to_json().items() if k != "ingestId"}
        warehouse.record_ingest(
            {"id": run_id, "startMs": start_ms, "endMs": int(time.time() * 1000), **summary}
        )
    return result


def _run_jobs(spark, run: IngestRun, dirs: list[str], archives: list[str], known) -> tuple[list[dict], int]:
    """Summary rows of every task (one Spark job: directories and archives) and of the archives too large
    to read, and the number of archives met."""
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    settings = {
        "spark.sql.files.openCostInBytes": str(FILE_OPEN_COST),
        # about defaultParallelism file partitions (Spark packs the archives by size): few tasks, each costs
        # 0.1-0.3 s of Python worker set-up
        "spark.sql.files.minPartitionNum": str(parallelism),
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(RECORDS_PER_BATCH),
    }
    with _spark_conf(spark, settings):
        frame = _archive_frame(spark, run, dirs + archives, known)
        if dirs:
            frame = _directory_frame(spark, run, dirs, known).unionByName(frame)
        with _quiet_task_errors(spark):
            rows = [r.asDict() for r in frame.collect()]
    large = [(r["paths"][0], r["bytes"]) for r in rows if r["kind"] == TOO_LARGE]
    summaries = [r for r in rows if r["kind"] != TOO_LARGE] + _refuse_large(run, large, known.value)
    return summaries, sum(1 for s in rows if s["kind"] == "archive") + len(large)


def _refuse_large(run: IngestRun, too_large: list, known: frozenset[str]) -> list[dict[str, Any]]:
    """Problems rows (written by the driver) for archives too large to read."""
    if not too_large:
        return []
    parser = CaptureParser(run, known, "driver")
    out = []
    for uri, length in too_large:
        path = local_path(uri)
        where = locate(run, path)
        if where is None:
            continue
        order, label, rel = where
        label = f"{label.rstrip('/')}/{rel}" if rel else label
        cap = min(run.limits.max_total_bytes, SPARK_BINARY_LIMIT)
        refusal = Refusal("", f"archive of {length} bytes is above the cap of {cap} bytes; not read")
        summary = parser.refusals(order, label, [refusal], int(os.path.getmtime(path) * 1000))
        if summary:
            out.append(summary)
    return out + parser.close()
