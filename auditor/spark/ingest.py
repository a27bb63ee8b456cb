"""``kafka-auditor ingest`` on Spark: checkpoint dumps (directory trees and archives) parsed on the executors
into the warehouse's Parquet tables (:mod:`auditor.layout.warehouse`, schemas in
:mod:`auditor.observe.history_rows`).

The driver lists only the sources it is given; Spark lists the trees and reads the files:

* Directory sources: Spark's ``binaryFile`` source with ``recursiveFileLookup`` and ``pathGlobFilter`` =
  :data:`auditor.layout.dumps.DUMP_FILE_GLOB` lists the dumps' small files (path and mtime only: Spark
  reads no content; a segment is never opened), with a small ``spark.sql.files.openCostInBytes`` so that
  thousands of tiny files pack into few tasks. Each file is keyed by its dump root (a Spark expression on
  its path: the folder of a top file, the folder above a partition directory); the rows are repartitioned
  by that key and sorted, and a ``mapInArrow`` groups each dump's files, reads them (``lstat`` first: a
  symbolic link, on the way or the file itself, a special file or a file above
  ``ArchiveLimits.max_member_bytes`` is a refused ``problems`` row, never read; Hadoop's listing follows
  links) and parses them with :func:`auditor.observe.dumps.parse_dump`. A failed job's task errors are
  not logged (the exception carries them; the CLI prints one line).
  Hadoop's listing skips every name starting with ``_`` or ``.``
  (``HadoopFSUtils.shouldFilterOutPathName``): partition directories of internal topics
  (``__consumer_offsets-0``, ``_schemas-0``) and ``.kafka_cleanshutdown``; the executor that parses a dump
  therefore reads those entries of the dump root itself (their dump files only; nothing is listed inside a
  partition directory). A dump root *below* such a name (``SOURCE/_old/broker-1``) is not seen: pack it in
  an archive or name it otherwise.
* Archive sources (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``, given directly or found inside a directory
  source): one ``binaryFile`` row per archive; a ``mapInArrow`` reads each in memory with
  :func:`auditor.layout.archives.read_archive` (never extracted to disk), groups its members by dump root and
  parses each dump; refused entries become ``problems`` rows. An archive larger than the expansion cap
  (``ArchiveLimits.max_total_bytes``, at most 2 GiB, Spark's binaryFile limit) is refused without being read.

Each task writes its rows as Parquet (zstd) under the ingest's staging directory, one file per (table,
cluster, captureDate), without the partition columns, and returns small summary rows (captureId, staged
files, row counts). A dump whose captureId (the SHA-256 of its content) is already in the warehouse (a
broadcast set) is skipped and counted as a duplicate; a dump met twice in one run is kept once (within a
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

from auditor.layout.archives import ARCHIVE_SUFFIXES, ArchiveLimits, Refusal, is_archive
from auditor.layout.warehouse import Warehouse, new_ingest_id, part_file

ENTRY_TABLES = ("high_watermarks", "recovery_points", "log_start_offsets", "cleaner_offsets", "leader_epochs")
"""The tables of checkpoint entries (the entries/s of the benchmark)."""
FILE_OPEN_COST = 8192
"""``spark.sql.files.openCostInBytes`` while listing dumps: a tiny file weighs ~its size, not 4 MB, so
thousands of them share a task."""
RECORDS_PER_BATCH = 16
"""``spark.sql.execution.arrow.maxRecordsPerBatch`` of the job: few archives in a task's memory at once
(a file partition holds at most ``spark.sql.files.maxPartitionBytes`` of them, or one larger archive)."""
ROWS_PER_GROUP = 262_144
"""Rows buffered per output file before a Parquet row group is written (bounds a task's memory)."""
SPARK_BINARY_LIMIT = (1 << 31) - 1 - 1024
"""Spark's binaryFile source cannot read a file of 2 GiB or more (one Java byte array)."""

SUMMARY = pa.schema(
    [
        pa.field("kind", pa.string()),  # capture | duplicate | refusal | seen | archive | file
        pa.field("captureId", pa.string()),
        pa.field("source", pa.string()),
        pa.field("root", pa.string()),
        pa.field("order", pa.int64()),  # the source's position among the sources (keeps the first copy)
        pa.field("files", pa.int64()),  # dump files read (kind file: rows written)
        pa.field("bytes", pa.int64()),  # their size (kind file: the Parquet file's size)
        pa.field("rows", pa.string()),  # JSON {table: rows}
        pa.field("paths", pa.list_(pa.string())),  # staged files holding the capture's rows
    ]
)
SUMMARY_DDL = (
    "kind string, captureId string, source string, root string, `order` long, files long, bytes long, "
    "rows string, paths array<string>"
)
TOO_LARGE = "too-large"


class IngestError(ValueError):
    """A source that cannot be ingested (missing, neither a directory nor an archive, overlapping the
    warehouse); one line."""


@dataclass(frozen=True)
class IngestResult:
    """What one ingest run did (``files``/``bytes``: dump files read, duplicates included; ``entries``: rows
    of the checkpoint-entry tables added; ``version``: the warehouse version after the run)."""

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


@dataclass(frozen=True)
class _Run:
    """What the executors need (plain data, pickled into the tasks)."""

    ingest_id: str
    ingested_at_ms: int
    staging: str
    cluster: str | None
    limits: ArchiveLimits
    sources: tuple[tuple[str, str], ...]  # (label as given, absolute path), directories and archives


def archive_glob() -> str:
    """A Hadoop glob of the archive names :func:`is_archive` accepts (case-insensitive)."""

    def insensitive(suffix: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in suffix)

    return "{" + ",".join(f"*{insensitive(s)}" for s in ARCHIVE_SUFFIXES) + "}"


def classify_sources(
    sources: Sequence[str | os.PathLike], warehouse: Path | None = None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(directories, archives) as (label as given, absolute path); :class:`IngestError` for a missing
    source, one that is neither, or one that holds the warehouse or lies inside it. A source inside another
    directory source is read once, as part of the outer one."""
    dirs: list[tuple[str, str]] = []
    archives: list[tuple[str, str]] = []
    for source in sources:
        label, path = os.fspath(source), os.path.abspath(source)
        if not os.path.exists(path):
            raise IngestError(f"source {label} does not exist")
        if warehouse is not None:
            real, home = os.path.realpath(path), os.path.realpath(warehouse)
            if _inside(home, real) or _inside(real, home):
                raise IngestError(f"source {label} and the warehouse {warehouse} overlap")
        if os.path.isdir(path):
            dirs.append((label, path))
        elif os.path.isfile(path) and is_archive(path):
            archives.append((label, path))
        else:
            raise IngestError(
                f"source {label} is neither a directory nor an archive ({', '.join(ARCHIVE_SUFFIXES)})"
            )
    outer = [(label, path) for label, path in dirs if not any(_inside(path, d) for _, d in dirs if d != path)]
    unique_dirs = list({path: (label, path) for label, path in outer}.values())
    unique_archives = list(
        {
            path: (label, path)
            for label, path in archives
            if not any(_inside(path, d) for _, d in unique_dirs)
        }.values()
    )
    return unique_dirs, unique_archives


def _glob_escape(path: str) -> str:
    """``path`` for ``DataFrameReader.load``, which reads Hadoop glob patterns: special characters escaped."""
    return "".join("\\" + c if c in "\\{}[]*?" else c for c in path)


def _inside(path: str, directory: str) -> bool:
    """``path`` is ``directory`` or below it (plain prefix test on absolute paths)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _local_path(uri: str) -> str:
    """The local path of a Hadoop ``file:`` path as Spark reports it (not percent-encoded)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return uri[len("file:") :] if uri.startswith("file:") else uri


def _locate(run: _Run, path: str) -> tuple[int, str, str] | None:
    """(source index, label, path relative to the source) of a file Spark listed; the longest source wins."""
    best = None
    for i, (_label, root) in enumerate(run.sources):
        if _inside(path, root) and (best is None or len(root) > len(run.sources[best][1])):
            best = i
    if best is None:
        return None
    label, root = run.sources[best]
    rel = os.path.relpath(path, root) if path != root else ""
    return best, label, rel.replace(os.sep, "/") if rel != "." else ""


# ------------------------------------------------------------------------------------------ executors


def _file_schema(table: str) -> pa.Schema:
    from auditor.observe.history_rows import file_schema

    return file_schema(table)


class _Stager:
    """One task's output files: one Parquet file per (table, cluster, captureDate) under the staging dir,
    written in row groups of about :data:`ROWS_PER_GROUP` rows."""

    def __init__(self, run: _Run, tag: str) -> None:
        self.run, self.tag = run, tag
        self.pending: dict[tuple[str, str, str], list[pa.Table]] = defaultdict(list)
        self.pending_rows: dict[tuple[str, str, str], int] = defaultdict(int)
        self.written: dict[tuple[str, str, str], int] = defaultdict(int)
        self.writers: dict[tuple[str, str, str], Any] = {}

    def path(self, key: tuple[str, str, str]) -> str:
        return os.path.join(self.run.staging, part_file(*key, self.run.ingest_id, self.tag))

    def add(self, tables: dict[str, pa.Table]) -> tuple[dict[str, int], list[str]]:
        """Queue the rows of ``tables``; their counts per table and the files they go to."""
        rows: dict[str, int] = {}
        paths: set[str] = set()
        for table, data in tables.items():
            if data.num_rows == 0:
                continue
            rows[table] = data.num_rows
            for (cluster, date), part in _by_partition(data):
                key = (table, cluster, date)
                self.pending[key].append(part)
                self.pending_rows[key] += part.num_rows
                paths.add(self.path(key))
                if self.pending_rows[key] >= ROWS_PER_GROUP:
                    self._flush(key)
        return rows, sorted(paths)

    def _flush(self, key: tuple[str, str, str]) -> None:
        import pyarrow.parquet as pq

        parts = self.pending.pop(key, [])
        self.pending_rows.pop(key, None)
        if not parts:
            return
        schema = _file_schema(key[0])
        data = pa.concat_tables([p.select(schema.names) for p in parts])
        if not data.schema.equals(schema):
            data = data.cast(schema)
        writer = self.writers.get(key)
        if writer is None:
            path = self.path(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            writer = self.writers[key] = pq.ParquetWriter(path, schema, **_parquet_options(schema))
        writer.write_table(data)
        self.written[key] += data.num_rows

    def close(self) -> list[dict[str, Any]]:
        """Write what is queued, close every file; one summary row (kind ``file``) per file."""
        for key in list(self.pending):
            self._flush(key)
        out = []
        for key, writer in self.writers.items():
            writer.close()
            path = self.path(key)
            out.append(_summary("file", paths=[path], files=self.written[key], size=os.path.getsize(path)))
        return out


STATISTICS = ("broker", "captureTime", "topic", "partition")
"""Columns with Parquet min/max statistics (what readers filter on); statistics of the others cost time."""


def _parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """zstd; dictionary encoding for the string columns only (ids, topics, paths repeat; numbers do not);
    statistics for :data:`STATISTICS` only. About 1.5x faster to write than pyarrow's defaults."""
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if pa.types.is_string(f.type)],
        "write_statistics": [name for name in STATISTICS if name in schema.names],
    }


def _by_partition(data: pa.Table) -> list[tuple[tuple[str, str], pa.Table]]:
    """``data`` split by (cluster, captureDate); one dump's rows all share one."""
    import pyarrow.compute as pc

    clusters, dates = data.column("cluster"), data.column("captureDate")
    first = (clusters[0].as_py(), dates[0].as_py())
    if pc.all(pc.equal(clusters, first[0])).as_py() and pc.all(pc.equal(dates, first[1])).as_py():
        return [(first, data)]
    keys = pc.binary_join_element_wise(clusters, dates, "\x00")
    return [
        (tuple(k.split("\x00", 1)), data.filter(pc.equal(keys, k)))  # type: ignore[misc]
        for k in pc.unique(keys).to_pylist()
    ]


def _summary(
    kind: str,
    *,
    capture_id: str | None = None,
    source: str | None = None,
    root: str | None = None,
    order: int = 0,
    files: int = 0,
    size: int = 0,
    rows: dict[str, int] | None = None,
    paths: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "captureId": capture_id,
        "source": source,
        "root": root,
        "order": order,
        "files": files,
        "bytes": size,
        "rows": json.dumps(rows or {}, sort_keys=True),
        "paths": paths or [],
    }


class _Parser:
    """Parses dumps in one task: skips those already in the warehouse or already met in this task."""

    def __init__(self, run: _Run, known: frozenset[str], tag: str) -> None:
        self.run, self.known = run, known
        self.seen: set[str] = set()
        self.stager = _Stager(run, tag)

    def dump(self, order: int, label: str, root: str, files: list, archive: bool = False) -> dict[str, Any]:
        from auditor.observe.dumps import capture_id as capture_id_of
        from auditor.observe.dumps import parse_dump

        capture_id = capture_id_of(label, root, files, archive=archive)
        size = sum(len(f.data) for f in files)
        common = {"capture_id": capture_id, "source": label, "root": root, "order": order}
        if capture_id in self.known or capture_id in self.seen:
            return _summary("duplicate", files=len(files), size=size, **common)
        self.seen.add(capture_id)
        try:
            tables = parse_dump(
                label,
                root,
                files,
                ingest_id=self.run.ingest_id,
                ingested_at_ms=self.run.ingested_at_ms,
                cluster=self.run.cluster,
                archive=archive,
            )
        except Exception as exc:  # noqa: BLE001 - one dump the parser cannot take must not fail the night
            from auditor.errors import describe_error

            reason = f"dump not ingested: {describe_error(exc)}"
            when = max((f.mtime_ms for f in files), default=self.run.ingested_at_ms)
            return self.refusals(order, label, [Refusal(root or ".", reason)], when) or _summary("seen")
        rows, paths = self.stager.add(tables)
        return _summary("capture", files=len(files), size=size, rows=rows, paths=paths, **common)

    def refusals(self, order: int, label: str, refusals: list[Refusal], capture_time_ms: int) -> dict | None:
        from auditor.observe.dumps import refusal_rows

        if not refusals:
            return None
        table = refusal_rows(
            label,
            refusals,
            ingest_id=self.run.ingest_id,
            ingested_at_ms=self.run.ingested_at_ms,
            capture_time_ms=capture_time_ms,
            cluster=self.run.cluster or "unknown",
        )
        ids = table.column("captureId").to_pylist()
        new = [i not in self.known and i not in self.seen for i in ids]
        common = {"capture_id": min(ids), "source": label, "root": "", "order": order}
        if not any(new):
            return _summary("seen", **common)  # refusals recorded by an earlier run
        table = table.filter(pa.array(new))
        self.seen.update(ids)
        rows, paths = self.stager.add({"problems": table})
        return _summary("refusal", rows=rows, paths=paths, **common)

    def close(self) -> list[dict[str, Any]]:
        return self.stager.close()


def _batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=SUMMARY)


def _task_tag(prefix: str) -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:  # called outside Spark (tests)
        return f"{prefix}local"
    return f"{prefix}{ctx.partitionId():05d}-{ctx.attemptNumber()}"


def _mtime_ms(column: pa.ChunkedArray | pa.Array) -> list[int]:
    """Spark's ``modificationTime`` (an Arrow timestamp) as epoch ms."""
    import pyarrow.compute as pc

    return pc.divide(pc.cast(pc.cast(column, pa.timestamp("us")), pa.int64()), 1000).to_pylist()


def _cap_text(cap: int) -> str:
    """The member cap in words (``64 MiB``, or bytes when it is not a whole number of MiB)."""
    mib = 1 << 20
    return f"{cap // mib} MiB" if cap >= mib and cap % mib == 0 else f"{cap} bytes"


def _read_regular(
    base: str, rel: str, cap: int, dirs: dict[str, str | None]
) -> tuple[int, bytes] | str | None:
    """(mtime ms, content) of the regular file ``base/rel``, read without following a symbolic link (none
    of the folders from ``base`` down to it may be one either: ``dirs`` caches their verdicts); else the
    reason it is refused (a link, not a regular file, above ``cap`` bytes, unreadable), its content never
    read; None when it has vanished since the listing."""
    import stat

    path = base
    for part in rel.split("/")[:-1]:
        path = os.path.join(path, part)
        if path not in dirs:
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return None
            except OSError as exc:
                dirs[path] = f"folder {part} unreadable: {exc.strerror or exc}; not read"
            else:
                dirs[path] = (
                    None
                    if stat.S_ISDIR(mode)
                    else f"folder {part} on its path is a symbolic link (not followed); not read"
                    if stat.S_ISLNK(mode)
                    else f"folder {part} on its path is not a directory; not read"
                )
        if dirs[path]:
            return dirs[path]
    path = os.path.join(base, rel)
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return "a symbolic link (not followed); not read"
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file; not read"
        if st.st_size > cap:
            return f"{st.st_size} bytes, larger than the {_cap_text(cap)} cap of a dump file; not read"
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}; not read"
    try:
        st = os.fstat(fd)  # the file opened is the one checked (no link, still regular)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file; not read"
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}; not read"
    finally:
        os.close(fd)
    if size > cap:  # grew since the check
        return f"more than {size - 1} bytes, larger than the {_cap_text(cap)} cap of a dump file; not read"
    return st.st_mtime_ns // 1_000_000, b"".join(chunks)


def _hidden_files(run: _Run, order: int, root: str) -> tuple[list, list[Refusal]]:
    """The dump files of ``root`` whose names Hadoop's listing skips (``.kafka_cleanshutdown``, partition
    directories starting with ``_`` or ``.``), read here as :func:`_read_regular` reads them."""
    from auditor.layout.dumps import PARTITION_FILES, dump_location
    from auditor.observe.dumps import DumpFile

    source = run.sources[order][1]
    base = os.path.join(source, root)
    files, refusals = [], []
    try:
        with os.scandir(base) as listing:
            entries = [e for e in listing if e.name[:1] in "._"]
    except OSError as exc:
        return [], [Refusal(root, f"cannot list: {exc.strerror or exc}")]
    candidates = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            candidates += [f"{entry.name}/{name}" for name in sorted(PARTITION_FILES)]
        else:  # a link or a special file among them is refused by _read_regular
            candidates.append(entry.name)
    dirs: dict[str, str | None] = {}
    for name in sorted(candidates):
        rel = f"{root}/{name}" if root else name
        loc = dump_location(rel)
        if loc is None or loc[0] != root:
            continue
        got = _read_regular(source, rel, run.limits.max_member_bytes, dirs)
        if isinstance(got, str):
            refusals.append(Refusal(rel, got))
        elif got is not None:
            files.append(DumpFile(name, *got))
    return files, refusals


def _parse_dir_dumps(
    batches: Iterator[pa.RecordBatch], run: _Run, known_ids: Any
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over the listing of the directory sources (path, modificationTime), sorted by (dump root,
    path): one dump per run of equal roots; files that are not dump files
    (:func:`auditor.layout.dumps.dump_location`) are dropped; each dump file is read here by
    :func:`_read_regular` (links, special files and files above ``max_member_bytes`` become ``problems``
    rows, their content never read)."""
    from auditor.layout.dumps import dump_location
    from auditor.observe.dumps import DumpFile

    parser = _Parser(run, known_ids.value, _task_tag("d"))
    key: tuple[int, str] | None = None
    files: list = []
    refused: list[Refusal] = []
    listed: list[int] = []
    dirs: dict[str, str | None] = {}

    def finish() -> list[dict[str, Any]]:
        if key is None:
            return []
        order, root = key
        hidden, refusals = _hidden_files(run, order, root)
        label = run.sources[order][0]
        listed_names = {f.name for f in files}  # a hidden entry Spark's listing did show is read once
        found = files + [f for f in hidden if f.name not in listed_names]
        out = [parser.dump(order, label, root, found)] if found else []
        when = min((f.mtime_ms for f in files), default=min(listed, default=0))
        summary = parser.refusals(order, label, refused + refusals, when)
        return out + ([summary] if summary else [])

    for batch in batches:
        out: list[dict[str, Any]] = []
        paths, mtimes = batch.column("path").to_pylist(), _mtime_ms(batch.column("modificationTime"))
        for i, uri in enumerate(paths):
            where = _locate(run, _local_path(uri))
            loc = dump_location(where[2]) if where is not None else None
            if where is None or loc is None:
                continue
            if (where[0], loc[0]) != key:
                out += finish()
                key, files, refused, listed = (where[0], loc[0]), [], [], []
            listed.append(mtimes[i])
            got = _read_regular(run.sources[where[0]][1], where[2], run.limits.max_member_bytes, dirs)
            if isinstance(got, str):
                refused.append(Refusal(where[2], got))
            elif got is not None:
                files.append(DumpFile(loc[1], *got))
        if out:
            yield _batch(out)
    tail = finish() + parser.close()
    if tail:
        yield _batch(tail)


def _parse_archives(batches: Iterator[pa.RecordBatch], run: _Run, known_ids: Any) -> Iterator[pa.RecordBatch]:
    """mapInArrow over binaryFile rows of archives: each read in memory, its dumps parsed."""
    from auditor.layout.archives import Member, read_archive
    from auditor.layout.dumps import dump_location, is_dump_file, time_from_name
    from auditor.observe.dumps import DumpFile

    parser = _Parser(run, known_ids.value, _task_tag("a"))
    for batch in batches:
        out: list[dict[str, Any]] = []
        paths = batch.column("path").to_pylist()
        mtimes = _mtime_ms(batch.column("modificationTime"))
        content = batch.column("content")
        for i, uri in enumerate(paths):
            path = _local_path(uri)
            where = _locate(run, path)
            if where is None:
                continue
            order, label, rel = where
            if rel:  # found inside a directory source
                label = f"{label.rstrip('/')}/{rel}"
            dumps: dict[str, list] = defaultdict(list)
            refusals: list[Refusal] = []
            data = content[i].as_py()
            for item in read_archive(label, data, is_dump_file, run.limits):
                if isinstance(item, Member):
                    loc = dump_location(item.name)
                    if loc is not None:
                        dumps[loc[0]].append(DumpFile(loc[1], item.mtime_ms, item.data))
                else:
                    refusals.append(item)
            members = sum(len(files) for files in dumps.values())
            out.append(_summary("archive", source=label, order=order, files=members, size=len(data)))
            del data
            for root in sorted(dumps):
                out.append(parser.dump(order, label, root, dumps.pop(root), archive=True))
            when = time_from_name(os.path.basename(path)) or mtimes[i]
            refused = parser.refusals(order, label, refusals, when)
            if refused:
                out.append(refused)
        if out:
            yield _batch(out)
    tail = parser.close()
    if tail:
        yield _batch(tail)


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


def _directory_frame(spark, run: _Run, dirs: list[str], known):
    """Summary rows (a DataFrame) of the dumps found in the directory sources."""
    from pyspark.sql import functions as F

    from auditor.layout.dumps import DUMP_FILE_GLOB, TOP_FILES

    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", DUMP_FILE_GLOB)
        .load([_glob_escape(d) for d in dirs])
    )
    # the dump root of each file by name alone (top files: their folder; partition files: the folder
    # above), so that each dump's files meet in one task, in a row; the parser checks each name again
    name = F.element_at(F.split("path", "/"), -1)
    root = F.when(name.isin(*sorted(TOP_FILES)), F.regexp_extract("path", r"^(.*)/[^/]*$", 1)).otherwise(
        F.regexp_extract("path", r"^(.*)/[^/]*/[^/]*$", 1)
    )
    grouped = (
        files.select("path", "modificationTime", root.alias("dumpRoot"))  # content: read by the parser
        .repartition(max(1, spark.sparkContext.defaultParallelism), "dumpRoot")
        .sortWithinPartitions("dumpRoot", "path")
    )
    return grouped.mapInArrow(partial(_parse_dir_dumps, run=run, known_ids=known), SUMMARY_DDL)


def _archive_frame(spark, run: _Run, paths: list[str], known):
    """Summary rows (a DataFrame) of the archives given or found in the directories, and one row (kind
    :data:`TOO_LARGE`) per archive too large to read, listed without being read."""
    from pyspark.sql import functions as F

    cap = min(run.limits.max_total_bytes, SPARK_BINARY_LIMIT)
    archives = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", archive_glob())
        .load([_glob_escape(p) for p in paths])
    )
    readable = archives.where(F.col("length") <= cap).select("path", "modificationTime", "content")
    parsed = readable.mapInArrow(partial(_parse_archives, run=run, known_ids=known), SUMMARY_DDL)
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
    pq.write_table(kept, tmp, **_parquet_options(kept.schema))
    os.replace(tmp, path)
    return kept.num_rows


def _settle(summaries: list[dict[str, Any]]) -> tuple[list[dict], list[dict], list[str]]:
    """(kept captures and refusals, duplicates, staged files to commit): of the copies of one dump parsed
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
    """Ingest ``sources`` (directories and archives of checkpoint dumps) into ``warehouse`` (see the module
    docstring); holds the warehouse lock for the whole run. :class:`IngestError` for a bad source; Spark
    errors propagate (the run's staged files are then removed and nothing is committed)."""
    started = time.time()
    start_ms = int(started * 1000)
    dirs, archives = classify_sources(sources, warehouse.path)
    run_id = new_ingest_id(start_ms)
    with warehouse.lock():
        staging = warehouse.staging(run_id)
        run = _Run(run_id, start_ms, str(staging), cluster, limits, tuple(dirs + archives))
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


def _run_jobs(spark, run: _Run, dirs: list[str], archives: list[str], known) -> tuple[list[dict], int]:
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


def _refuse_large(run: _Run, too_large: list, known: frozenset[str]) -> list[dict[str, Any]]:
    """Problems rows (written by the driver) for archives too large to read."""
    if not too_large:
        return []
    parser = _Parser(run, known, "driver")
    out = []
    for uri, length in too_large:
        path = _local_path(uri)
        where = _locate(run, path)
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
