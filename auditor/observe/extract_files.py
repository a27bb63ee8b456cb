"""The extract on disk: a directory holding one flat Parquet file per table kind.

``kafka-auditor extract LOGDIR --out DIR`` writes ``DIR/batch.parquet``, ``DIR/epoch.parquet``,
``DIR/replica.parquet``, ``DIR/record.parquet``, ``DIR/metadata.parquet``, ``DIR/commit.parquet`` and
``DIR/txn_state.parquet``: every kind, the empty ones too (a few KB each), so that a directory is an
extract when it holds ``replica.parquet`` and a reader never guesses whether a table is missing. Each file
has its kind's own flat schema (``rows.TABLES``) and, in its key-value metadata, the schema version
(:data:`VERSION_KEY`) and its kind (:data:`KIND_KEY`). ``audit --save DIR`` writes the same layout under
``DIR/extract`` with Spark, where each ``<kind>.parquet`` is a directory of part files and the version sits
in the field metadata of ``cluster`` (Spark writes no other key-value metadata); readers take either.

An extract of an earlier layout (a single Parquet file with a ``kind`` column and one struct column per
kind, schema version 2 and before) or of another schema version is refused by :func:`extract_problem` with
one line naming the file: the rows are re-made from the log dir, never converted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import uuid

import pyarrow as pa

from auditor.observe import rows
from auditor.observe.partition_key import with_partition_key
from parsers.files import open_regular_file

SUFFIX = ".parquet"
VERSION_KEY = b"kafka-auditor.schema-version"
KIND_KEY = b"kafka-auditor.kind"
_SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"
AGAIN = "extract it again with `kafka-auditor extract LOGDIR --out DIR`"

ROW_GROUP = 1 << 17
"""Rows per row group of an extract file: rows wait in memory per kind until a row group fills (a batch row
is ~130 bytes in Arrow, so ~17 MB for the batch kind)."""


def kind_path(root: str | os.PathLike, kind: str) -> str:
    """Where the table ``kind`` of the extract ``root`` is (a file, or a directory of part files)."""
    return os.path.join(os.fspath(root), kind + SUFFIX)


def spark_field_metadata() -> dict[str, str]:
    """The field metadata of ``cluster`` in an extract written by Spark (``audit --save``): the version."""
    return {VERSION_KEY.decode(): str(rows.SCHEMA_VERSION)}


def file_version(metadata: dict[bytes, bytes] | None) -> int | None:
    """The schema version in a Parquet footer's key-value ``metadata`` (pyarrow's, or Spark's field
    metadata), None when it has none."""
    metadata = metadata or {}
    raw = metadata.get(VERSION_KEY)
    if raw is None and _SPARK_ROW_METADATA in metadata:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            for f in json.loads(metadata[_SPARK_ROW_METADATA]).get("fields", []):
                raw = (f.get("metadata") or {}).get(VERSION_KEY.decode(), raw)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def part_files(path: str) -> list[str]:
    """The Parquet files of one table: ``path`` itself, or the part files of a directory (Spark's output;
    names starting with ``_`` or ``.``, such as ``_SUCCESS``, left out, as Spark does)."""
    if not os.path.isdir(path):
        return [path]
    return sorted(
        os.path.join(path, n) for n in os.listdir(path) if n.endswith(SUFFIX) and not n.startswith(("_", "."))
    )


# ------------------------------------------------------------------------------------------------- checks


def extract_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not an extract this version reads (one line naming the file), None when it is. Reads
    the Parquet footers only."""
    found = _problem(os.fspath(path))
    return None if found is None else f"{found[0]}: {found[1]}"


def _problem(path: str) -> tuple[str, str] | None:
    """(file, why) of :func:`extract_problem`."""
    import pyarrow.parquet as pq

    if not os.path.isdir(path):
        return path, _single_file_problem(path)
    for kind, schema in rows.TABLES.items():
        table = kind_path(path, kind)
        if not os.path.exists(table):
            return table, f"missing: {path} is not a whole extract; {AGAIN}"
        for file in part_files(table):
            try:
                with open_regular_file(file) as fh:
                    meta = pq.ParquetFile(fh).metadata
                    names = set(meta.schema.to_arrow_schema().names)
            except (pa.ArrowException, ValueError, OSError) as exc:
                return file, f"not a readable Parquet extract: {_first_line(exc)}"
            version = file_version(meta.metadata)
            if version != rows.SCHEMA_VERSION:
                found = "no schema version" if version is None else f"schema version {version}"
                return file, f"{found}, this kafka-auditor reads version {rows.SCHEMA_VERSION}; {AGAIN}"
            written = (meta.metadata or {}).get(KIND_KEY)
            lacking = [n for n in schema.names if n not in names and n not in rows.DERIVED]
            if (written is not None and written.decode(errors="replace") != kind) or lacking:
                return file, f"not the {kind} table of an extract; {AGAIN}"
    return None


def _single_file_problem(path: str) -> str:
    """Why a file given as an extract is not one: an earlier single-file extract, one table of an extract,
    or neither."""
    import pyarrow.parquet as pq

    try:
        with open_regular_file(path) as fh:
            pf = pq.ParquetFile(fh)
            names, metadata = pf.schema_arrow.names, pf.metadata.metadata or {}
    except (pa.ArrowException, ValueError, OSError) as exc:
        return f"not a readable Parquet extract: {_first_line(exc)}"
    if "kind" in names and "replica" in names:
        version = file_version(metadata)
        found = f"schema version {version}" if version is not None else "no schema version"
        return (
            f"an extract in the earlier single-file layout ({found}; this kafka-auditor reads "
            f"directories of version {rows.SCHEMA_VERSION}): {AGAIN}"
        )
    if KIND_KEY in metadata:
        return f"one table of an extract: give the directory {os.path.dirname(path) or '.'}"
    return "not an extract of `kafka-auditor extract` (no replica rows)"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def output_problem(out: str | os.PathLike) -> str | None:
    """Why ``out`` cannot receive an extract, None when it can: it must not exist, or be an empty directory
    or an earlier extract (only ``<kind>.parquet`` files), which is replaced as a whole."""
    out = os.fspath(out)
    if os.path.islink(out):
        return f"--out {out} is a symbolic link; give the directory to write"
    if not os.path.lexists(out):
        return None
    if not os.path.isdir(out):
        return f"--out {out} exists and is not a directory (an extract is a directory of Parquet files)"
    names = {kind + SUFFIX for kind in rows.TABLES}
    try:
        entries = os.listdir(out)
    except OSError as exc:
        return f"--out {out}: cannot read: {exc.strerror or exc}"
    if all(e in names and os.path.isfile(os.path.join(out, e)) for e in entries):
        return None
    return f"--out {out} is a directory holding other files; give a new or empty directory, or an extract"


# ------------------------------------------------------------------------------------------------ writing

_ASCENDING = frozenset(
    {"segment", "position", "base_offset", "last_offset", "offset", "batch_base_offset", "seq"}
    | {"max_timestamp", "timestamp"}
)
"""Integer columns that grow along a partition's log (timestamps about so), stored as deltas
(``DELTA_BINARY_PACKED``, which Spark 3.3+, DuckDB and Arrow read): on a broker's log dir, a fifth less time
to write the batch rows and 40 % fewer bytes than zstd over plain values (offsets and positions take a few
bits a row instead of 8 bytes)."""


PAGE_ROWS = 20_000
"""Rows per data page, at most (a page also ends past 256 KiB), each page's bounds in the file's page index:
the audit's second scan of the batch rows (``auditor.spark.compare.scan_batches``: the candidate chunks'
offsets) reads the pages that can hold them, where whole row groups had to be read without it. On the fleet
benchmark's extracts (``bench/bench_divergence_duckdb.py``, 30 M batch rows) it reads 1.1 M rows instead of
7.5 M, 0.5-0.7 s instead of 1.5 s; the extract writes as fast and 2 % more bytes. 20,000 is pyarrow's own
cap since it has one (``max_rows_per_page``), stated so that the pages do not depend on the version where
it can be set; an older pyarrow cuts pages by their bytes only (coarser skipping, the same rows)."""


def page_options() -> dict:
    """The page options of every Parquet writer of batch rows (:class:`ExtractWriter`, the executors' streamed
    extraction of raw log dirs): pages of at most :data:`PAGE_ROWS` rows where this pyarrow takes the option,
    and their index."""
    import inspect

    import pyarrow.parquet as pq

    options = {"write_page_index": True, "write_batch_size": 1 << 15, "data_page_size": 256 << 10}
    if "max_rows_per_page" in inspect.signature(pq.ParquetWriter.__init__).parameters:
        options["max_rows_per_page"] = PAGE_ROWS
    return options


class ExtractWriter:
    """Writes an extract directory at ``out``, in bounded memory: the rows of each kind wait until a row
    group of ``row_group`` rows fills, which is then written to that kind's file.

    Everything goes to a new directory beside ``out`` (``.NAME.<random>.tmp``), renamed to ``out`` by
    :meth:`close` (an empty directory or earlier extract there is replaced); on an error, or when the
    ``with`` block raises, it is removed: ``out`` is never partial."""

    def __init__(self, out: str | os.PathLike, row_group: int = ROW_GROUP) -> None:
        problem = output_problem(out)
        if problem is not None:
            raise FileExistsError(errno.EEXIST, problem, os.fspath(out))
        self.out = os.path.abspath(os.fspath(out))
        parent, name = os.path.split(self.out)
        self.tmp = os.path.join(parent, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        os.makedirs(parent, exist_ok=True)  # as ``audit --save DIR`` does
        os.mkdir(self.tmp)
        self.row_group = max(1, row_group)
        self.writers: dict = {}
        self.pending: dict[str, list[pa.Table]] = {kind: [] for kind in rows.TABLES}
        self.sizes = dict.fromkeys(rows.TABLES, 0)

    def add(self, kind: str, table: pa.Table) -> None:
        """Rows of one kind (in ``rows.TABLES[kind]``'s schema, or one that casts to it)."""
        if not table.num_rows:
            return
        self.pending[kind].append(table)
        self.sizes[kind] += table.num_rows
        if self.sizes[kind] >= self.row_group:
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        tables, self.pending[kind], self.sizes[kind] = self.pending[kind], [], 0
        if not tables:
            return
        schema = rows.TABLES[kind]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        if not table.schema.equals(schema):
            table = table.cast(schema)
        self._writer(kind).write_table(table, row_group_size=self.row_group)

    def _writer(self, kind: str):
        import pyarrow.parquet as pq

        if kind not in self.writers:
            schema = rows.TABLES[kind]
            metadata = {VERSION_KEY: str(rows.SCHEMA_VERSION).encode(), KIND_KEY: kind.encode()}
            self.writers[kind] = pq.ParquetWriter(
                kind_path(self.tmp, kind),
                schema.with_metadata(metadata),
                compression="zstd",
                # dictionaries only where values repeat (strings: the key columns, states, names);
                # offsets, CRCs and positions are nearly unique: a dictionary there costs more than it saves
                use_dictionary=[f.name for f in schema if pa.types.is_string(f.type)],
                column_encoding={f.name: "DELTA_BINARY_PACKED" for f in schema if f.name in _ASCENDING},
                **page_options(),
            )
        return self.writers[kind]

    def close(self) -> None:
        """Write what waits, give every kind its file (empty ones too) and rename the directory to ``out``."""
        try:
            for kind in rows.TABLES:
                self._flush(kind)
                self._writer(kind)
            while self.writers:
                self.writers.popitem()[1].close()
            self._commit()
        except BaseException:
            self.abort()
            raise

    def _commit(self) -> None:
        problem = output_problem(self.out)
        if problem is not None:
            raise FileExistsError(errno.EEXIST, problem, self.out)
        if not os.path.isdir(self.out) or not os.listdir(self.out):
            os.replace(self.tmp, self.out)  # onto nothing, or onto an empty directory
            return
        old = f"{self.tmp}.old"
        os.rename(self.out, old)
        os.rename(self.tmp, self.out)
        shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Drop everything written (``out`` is left as it was)."""
        while self.writers:
            with contextlib.suppress(Exception):
                self.writers.popitem()[1].close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> ExtractWriter:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


# ------------------------------------------------------------------------------------------------ reading


def read_extract(path: str | os.PathLike) -> dict[str, pa.Table]:
    """The tables of an extract directory, each in its kind's schema (for tests and small tools; ``audit``
    reads the files with Spark). Raises ``ParseError`` (one line naming the file) for anything else."""
    import pyarrow.parquet as pq

    from parsers.errors import ParseError

    problem = _problem(os.fspath(path))
    if problem is not None:
        raise ParseError(problem[1], path=problem[0])
    out = {}
    for kind, schema in rows.TABLES.items():
        files = part_files(kind_path(path, kind))
        tables = [with_partition_key(pq.read_table(f), schema) for f in files]
        parts = [t.select(schema.names).cast(schema) for t in tables]
        out[kind] = pa.concat_tables(parts) if parts else schema.empty_table()
    return out
