"""The executor side of ``kafka-auditor ingest``: the ``mapInArrow`` tasks that read the captures (files of a
directory tree, or the members of an archive), parse them and stage their rows as Parquet, returning
summary rows to the driver (:mod:`auditor.spark.ingest`)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from auditor.layout.archives import Refusal
from auditor.layout.warehouse import part_file
from auditor.spark.ingest_sources import IngestRun, local_path, locate

ROWS_PER_GROUP = 262_144
"""Rows buffered per output file before a Parquet row group is written (bounds a task's memory)."""

SUMMARY = pa.schema(
    [
        pa.field("kind", pa.string()),  # capture | duplicate | refusal | seen | archive | file
        pa.field("captureId", pa.string()),
        pa.field("source", pa.string()),
        pa.field("root", pa.string()),
        pa.field("order", pa.int64()),  # the source's position among the sources (keeps the first copy)
        pa.field("files", pa.int64()),  # capture files read (kind file: rows written)
        pa.field("bytes", pa.int64()),  # their size (kind file: the Parquet file's size)
        pa.field("rows", pa.string()),  # JSON {table: rows}
        pa.field("paths", pa.list_(pa.string())),  # staged files holding the capture's rows
    ]
)

# ------------------------------------------------------------------------------------------ executors


def _file_schema(table: str) -> pa.Schema:
    from auditor.observe.history_rows import file_schema

    return file_schema(table)


class _Stager:
    """One task's output files: one Parquet file per (table, cluster, captureDate) under the staging dir,
    written in row groups of about :data:`ROWS_PER_GROUP` rows."""

    def __init__(self, run: IngestRun, tag: str) -> None:
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
            writer = self.writers[key] = pq.ParquetWriter(path, schema, **parquet_options(schema))
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


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """zstd; dictionary encoding for the string columns only (ids, topics, paths repeat; numbers do not);
    statistics for :data:`STATISTICS` only. About 1.5x faster to write than pyarrow's defaults."""
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if pa.types.is_string(f.type)],
        "write_statistics": [name for name in STATISTICS if name in schema.names],
    }


def _by_partition(data: pa.Table) -> list[tuple[tuple[str, str], pa.Table]]:
    """``data`` split by (cluster, captureDate); one capture's rows all share one."""
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


class CaptureParser:
    """Parses captures in one task: skips those already in the warehouse or already met in this task."""

    def __init__(self, run: IngestRun, known: frozenset[str], tag: str) -> None:
        self.run, self.known = run, known
        self.seen: set[str] = set()
        self.stager = _Stager(run, tag)

    def capture(
        self, order: int, label: str, root: str, files: list, archive: bool = False
    ) -> dict[str, Any]:
        from auditor.observe.captures import capture_id as capture_id_of
        from auditor.observe.captures import parse_capture

        capture_id = capture_id_of(label, root, files, archive=archive)
        size = sum(len(f.data) for f in files)
        common = {"capture_id": capture_id, "source": label, "root": root, "order": order}
        if capture_id in self.known or capture_id in self.seen:
            return _summary("duplicate", files=len(files), size=size, **common)
        self.seen.add(capture_id)
        try:
            tables = parse_capture(
                label,
                root,
                files,
                ingest_id=self.run.ingest_id,
                ingested_at_ms=self.run.ingested_at_ms,
                cluster=self.run.cluster,
                archive=archive,
            )
        except Exception as exc:  # noqa: BLE001 - one capture the parser cannot take must not fail the night
            from auditor.errors import describe_error

            reason = f"capture not ingested: {describe_error(exc)}"
            when = max((f.mtime_ms for f in files), default=self.run.ingested_at_ms)
            return self.refusals(order, label, [Refusal(root or ".", reason)], when) or _summary("seen")
        rows, paths = self.stager.add(tables)
        return _summary("capture", files=len(files), size=size, rows=rows, paths=paths, **common)

    def refusals(self, order: int, label: str, refusals: list[Refusal], capture_time_ms: int) -> dict | None:
        from auditor.observe.captures import refusal_rows

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
            return f"{st.st_size} bytes, larger than the {_cap_text(cap)} cap of a capture file; not read"
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
        return f"more than {size - 1} bytes, larger than the {_cap_text(cap)} cap of a capture file; not read"
    return st.st_mtime_ns // 1_000_000, b"".join(chunks)


def _hidden_files(run: IngestRun, order: int, root: str) -> tuple[list, list[Refusal]]:
    """The capture files of ``root`` whose names Hadoop's listing skips (``.kafka_cleanshutdown``, partition
    directories starting with ``_`` or ``.``), read here as :func:`_read_regular` reads them."""
    from auditor.layout.captures import PARTITION_FILES, capture_location
    from auditor.observe.captures import CaptureFile

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
        loc = capture_location(rel)
        if loc is None or loc[0] != root:
            continue
        got = _read_regular(source, rel, run.limits.max_member_bytes, dirs)
        if isinstance(got, str):
            refusals.append(Refusal(rel, got))
        elif got is not None:
            files.append(CaptureFile(name, *got))
    return files, refusals


def parse_dir_captures(
    batches: Iterator[pa.RecordBatch], run: IngestRun, known_ids: Any
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over the listing of the directory sources (path, modificationTime), sorted by (capture root,
    path): one capture per run of equal roots; files that are not capture files
    (:func:`auditor.layout.captures.capture_location`) are dropped; each capture file is read here by
    :func:`_read_regular` (links, special files and files above ``max_member_bytes`` become ``problems``
    rows, their content never read)."""
    from auditor.layout.captures import capture_location
    from auditor.observe.captures import CaptureFile

    parser = CaptureParser(run, known_ids.value, _task_tag("d"))
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
        out = [parser.capture(order, label, root, found)] if found else []
        when = min((f.mtime_ms for f in files), default=min(listed, default=0))
        summary = parser.refusals(order, label, refused + refusals, when)
        return out + ([summary] if summary else [])

    for batch in batches:
        out: list[dict[str, Any]] = []
        paths, mtimes = batch.column("path").to_pylist(), _mtime_ms(batch.column("modificationTime"))
        for i, uri in enumerate(paths):
            where = locate(run, local_path(uri))
            loc = capture_location(where[2]) if where is not None else None
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
                files.append(CaptureFile(loc[1], *got))
        if out:
            yield _batch(out)
    tail = finish() + parser.close()
    if tail:
        yield _batch(tail)


def parse_archives(
    batches: Iterator[pa.RecordBatch], run: IngestRun, known_ids: Any
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over binaryFile rows of archives: each read in memory, its captures parsed."""
    from auditor.layout.archives import Member, read_archive
    from auditor.layout.captures import capture_location, is_capture_file, time_from_name
    from auditor.observe.captures import CaptureFile

    parser = CaptureParser(run, known_ids.value, _task_tag("a"))
    for batch in batches:
        out: list[dict[str, Any]] = []
        paths = batch.column("path").to_pylist()
        mtimes = _mtime_ms(batch.column("modificationTime"))
        content = batch.column("content")
        for i, uri in enumerate(paths):
            path = local_path(uri)
            where = locate(run, path)
            if where is None:
                continue
            order, label, rel = where
            if rel:  # found inside a directory source
                label = f"{label.rstrip('/')}/{rel}"
            captures: dict[str, list] = defaultdict(list)
            refusals: list[Refusal] = []
            data = content[i].as_py()
            for item in read_archive(label, data, is_capture_file, run.limits):
                if isinstance(item, Member):
                    loc = capture_location(item.name)
                    if loc is not None:
                        captures[loc[0]].append(CaptureFile(loc[1], item.mtime_ms, item.data))
                else:
                    refusals.append(item)
            members = sum(len(files) for files in captures.values())
            out.append(_summary("archive", source=label, order=order, files=members, size=len(data)))
            del data
            for root in sorted(captures):
                out.append(parser.capture(order, label, root, captures.pop(root), archive=True))
            when = time_from_name(os.path.basename(path)) or mtimes[i]
            refused = parser.refusals(order, label, refusals, when)
            if refused:
                out.append(refused)
        if out:
            yield _batch(out)
    tail = parser.close()
    if tail:
        yield _batch(tail)
