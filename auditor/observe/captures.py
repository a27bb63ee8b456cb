"""One checkpoint capture parsed into the warehouse's rows (:mod:`auditor.observe.history_rows`), in memory
and without Spark: what ``ingest`` runs on the executors for each capture.

:func:`parse_capture` turns a capture's files (names relative to its root, see :mod:`auditor.layout.captures`)
into one Arrow table per warehouse table, built column-wise. Identity of the capture:

* ``captureId``: :func:`capture_digest`, the SHA-256 of the files' names and contents and of the capture time
  when it comes from a name or the mtimes (the source plays no part, so the same capture ingested twice, from
  anywhere, has one id, and two nights of an idle broker whose files did not change are two captures);
* ``captureTime``: the manifest's ``captureTime``, else a time in the capture root's folder names (innermost
  first) or in the source's base name (:func:`auditor.layout.captures.time_from_name`), else the newest
  modification time of its files: an archive member's (``archive``: ``tar`` and ``zip`` record the time the
  file had on the broker) or a file's in a directory (``mtime``: a copy that did not keep the times, e.g. a
  plain ``cp``, has the time of the copy), else, when no mtime lies in 2000..2100 (an archive's zero
  dates), the ingest's own time (``ingest``). ``timeSource`` (:data:`TIME_SOURCES`) records which;
* ``broker``: ``node.id`` (``broker.id``) of ``meta.properties``, else the manifest's ``broker``;
* ``cluster``: the ``cluster`` argument (``--cluster``), else ``cluster.id``, else the manifest's, else
  ``unknown``;
* ``logDir``: the manifest's ``logDir``, else the root without its time-bearing folder names (``.`` when
  nothing is left), so one log dir keeps one name from capture to capture.

A file Kafka would not load (a ParseError of its parser, invalid UTF-8, a negative leader epoch or start
offset, a bad manifest) becomes a ``problems`` row of kind ``malformed`` with its line and byte offset and
contributes no entries; a capture naming no broker gets a problem of kind ``unidentified`` and keeps only its
``captures`` and ``problems`` rows. Entries are kept as the file holds them (duplicates, and entries of
partitions without a directory in the capture: the offset checkpoints are per log dir); ``line`` is each
entry's 1-based line in its file.

Speed, measured by ``tests/observe/test_captures.py::test_speed`` (CPU time of one core, Python 3.11 on
the development machine while other jobs shared its two cores): a capture of 20,000 partitions with the four
offset checkpoints full (80,000 entries) parses at 3.4-4.5 M entries/s; a capture of 2,000 partition
directories (4,002 files: leader-epoch-checkpoint and partition.metadata each, meta.properties, one offset
checkpoint) at 23,000-37,000 files/s. The reference parser
(:func:`parsers.checkpoints.parse_offset_checkpoint`) alone does ~0.6 M entries/s, so offset checkpoints in
the shape Kafka writes are split by Arrow's CSV reader after an exact check of that shape
(:func:`offset_checkpoint_columns`, proved equal on generated files); anything else takes the reference
parser.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from auditor.layout.archives import Refusal
from auditor.layout.captures import (
    CLEAN_SHUTDOWN,
    EARLIEST_MS,
    LATEST_MS,
    LEADER_EPOCH_CHECKPOINT,
    MANIFEST,
    META_PROPERTIES,
    PARTITION_FILES,
    PARTITION_METADATA,
    TOP_FILES,
    Manifest,
    capture_location,
    parse_manifest,
    time_from_name,
)
from auditor.observe.history_rows import CAPTURE_KEY, OFFSET_TABLES, TABLES, TIMESTAMP
from parsers.checkpoints import (
    LeaderEpochCheckpoint,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
)
from parsers.dirfiles import (
    MetaProperties,
    parse_meta_properties,
    parse_partition_dir_name,
    parse_partition_metadata,
)
from parsers.errors import ParseError

_T = TypeVar("_T")


@dataclass(frozen=True)
class CaptureFile:
    """One file of a capture: ``name`` relative to the capture's root (``meta.properties``,
    ``orders-3/leader-epoch-checkpoint``), its mtime (UTC epoch ms) and its bytes."""

    name: str
    mtime_ms: int
    data: bytes


def capture_digest(files: Sequence[CaptureFile], capture_time_ms: int | None = None) -> str:
    """SHA-256 (hex) over the files' (name, bytes) pairs in sorted order, each length-prefixed, and the
    capture time when it does not come from the files themselves (a folder or archive name, the mtimes): the
    same capture gives the same id whatever its files' order or source, and two nights of an idle broker whose
    files did not change are still two captures."""
    digest = hashlib.sha256(b"kafka-auditor dump\x00")
    if capture_time_ms is not None:
        digest.update(b"time\x00" + capture_time_ms.to_bytes(8, "big", signed=True))
    latest = {f.name: f.data for f in files}  # a name met twice: the later copy, as parse_capture reads it
    for name, data in sorted(latest.items()):
        encoded = name.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------- offset checkpoints

_HEADER = re.compile(rb"0\n([0-9]{1,9})\n")
_OTHER_WHITESPACE = (b"\t", b"\r", b"\x0b", b"\x0c")
"""Java's ``\\s`` but space and ``\\n``: outside the fast shape."""
FAST_MIN_ENTRIES = 256
"""Offset checkpoints with fewer entries take the reference parser (Arrow's CSV reader costs ~0.3 ms)."""
_CSV_READ = pacsv.ReadOptions(
    column_names=["topic", "partition", "offset"], use_threads=False, block_size=1 << 26
)
_CSV_PARSE = pacsv.ParseOptions(
    delimiter=" ", quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False
)
_CSV_CONVERT = pacsv.ConvertOptions(
    column_types={"topic": pa.string(), "partition": pa.string(), "offset": pa.string()},
    null_values=[],
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
    check_utf8=False,
)


@dataclass(frozen=True)
class OffsetColumns:
    """An offset checkpoint's entries in file order, as columns; entry ``i`` is on line ``i + 3``."""

    topic: pa.Array
    partition: pa.Array
    offset: pa.Array

    def __len__(self) -> int:
        return len(self.topic)


def _fast_offset_columns(data: bytes, min_entries: int) -> OffsetColumns | None:
    """The entries of a checkpoint in exactly the shape Kafka writes, or None for anything else.

    The shape: ``0\\n<N>\\n`` then N lines ending ``\\n``, ASCII, no whitespace but ``\\n`` and spaces, each
    line three space-separated tokens with decimal numbers within int32/int64 in the last two. Arrow's CSV
    reader (space-delimited, no quoting) fails on a line of another number of tokens (a doubled or trailing
    space makes an empty one) and skips empty lines (the row count then differs from N); an empty number
    fails ``ascii_is_decimal``. Under this shape Java's ``\\s+`` split, ``Integer.parseInt`` and
    ``Long.parseLong`` give what the CSV split and Arrow's casts give (a leading space: an empty topic in
    both), so the result equals :func:`parsers.checkpoints.parse_offset_checkpoint`'s
    (``tests/observe/test_captures.py`` checks it on generated files); anything else returns None.
    """
    header = _HEADER.match(data)
    if header is None:
        return None
    count = int(header.group(1))
    body = data[header.end() :]
    if (
        count < max(min_entries, 1)
        or not body.isascii()
        or not body.endswith(b"\n")
        or any(space in body for space in _OTHER_WHITESPACE)
        or body.count(b"\n") != count
    ):
        return None
    try:
        table = pacsv.read_csv(
            pa.BufferReader(body),
            read_options=_CSV_READ,
            parse_options=_CSV_PARSE,
            convert_options=_CSV_CONVERT,
        )
        if table.num_rows != count:  # a line was skipped as empty (Kafka: "Malformed line")
            return None
        topic, partition, offset = (table.column(i).combine_chunks() for i in range(3))
        if not (
            pc.all(pc.ascii_is_decimal(partition)).as_py() and pc.all(pc.ascii_is_decimal(offset)).as_py()
        ):
            return None
        return OffsetColumns(topic, partition.cast(pa.int32()), offset.cast(pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # out of range, or a line of another shape
        return None


def offset_checkpoint_columns(
    data: bytes, path: str | None = None, *, min_fast_entries: int = FAST_MIN_ENTRIES
) -> OffsetColumns:
    """The entries of an offset checkpoint as columns: what
    :func:`parsers.checkpoints.parse_offset_checkpoint` reads (ParseError where it fails), faster for
    files in Kafka's own shape with at least ``min_fast_entries`` entries."""
    fast = _fast_offset_columns(data, min_fast_entries)
    if fast is not None:
        return fast
    entries = parse_offset_checkpoint(data, path).entries
    return OffsetColumns(
        pa.array([e[0] for e in entries], pa.string()),
        pa.array([e[1] for e in entries], pa.int32()),
        pa.array([e[2] for e in entries], pa.int64()),
    )


# ------------------------------------------------------------------------------------------------- rows


def _line_of(data: bytes, offset: int | None) -> int | None:
    """1-based line (``BufferedReader.readLine`` terminators) holding byte ``offset``."""
    if offset is None:
        return None
    offset = max(0, min(offset, len(data)))
    breaks = data.count(b"\n", 0, offset) + data.count(b"\r", 0, offset) - data.count(b"\r\n", 0, offset)
    return breaks + 1


def _one_line(message: str) -> str:
    return " ".join(message.splitlines())


def _safe(text: str) -> str:
    """``text`` as valid UTF-8 for Arrow: names decoded with ``surrogateescape`` (a tar entry, a directory
    name that is not UTF-8) or a JSON ``\\ud800`` keep their bad code points as ``\\udcXX`` escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _array(values: pa.Array | Sequence, type_: pa.DataType) -> pa.Array:
    """A column: an Arrow array as it is, a list converted (strings made safe)."""
    if isinstance(values, pa.Array):
        return values
    if pa.types.is_string(type_):
        values = [v if v is None else _safe(v) for v in values]
    return pa.array(values, type_)


@functools.cache
def _empty_tables() -> dict[str, pa.Table]:
    """An empty table of every warehouse table (Arrow tables are immutable: shared by every capture)."""
    return {name: schema.empty_table() for name, schema in TABLES.items()}


def _date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d")


@dataclass
class _Problem:
    kind: str
    file: str
    line: int | None
    offset: int | None
    message: str


@dataclass
class _Key:
    """The capture identity every row carries (``history_rows.CAPTURE_KEY``)."""

    capture_id: str
    cluster: str
    broker: int | None
    log_dir: str | None
    capture_time_ms: int
    scalars: list[pa.Scalar] = field(init=False)

    def __post_init__(self) -> None:
        values = [
            self.capture_id,
            self.cluster,
            self.broker,
            self.log_dir,
            self.capture_time_ms,
            _date(self.capture_time_ms),
        ]
        self.scalars = [
            pa.scalar(_safe(v) if isinstance(v, str) else v, f.type)
            for v, f in zip(values, CAPTURE_KEY, strict=True)
        ]

    def columns(self, rows: int) -> list[pa.Array]:
        return [pa.repeat(scalar, rows) for scalar in self.scalars]

    def table(self, name: str, rows: int, columns: Sequence[pa.Array | list]) -> pa.Table:
        schema = TABLES[name]
        own = list(schema)[len(CAPTURE_KEY) :]
        arrays = [_array(column, f.type) for column, f in zip(columns, own, strict=True)]
        return pa.Table.from_arrays(self.columns(rows) + arrays, schema=schema)


@dataclass
class _Epochs:
    """Leader-epoch entries of every partition directory, as growing columns."""

    topic: list[str] = field(default_factory=list)
    partition: list[int] = field(default_factory=list)
    epoch: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    position: list[int] = field(default_factory=list)

    def add(self, topic: str, partition: int, entries: list[tuple[int, int]]) -> None:
        count = len(entries)
        self.topic.extend([topic] * count)
        self.partition.extend([partition] * count)
        self.epoch.extend([e for e, _ in entries])
        self.start.extend([s for _, s in entries])
        self.position.extend(range(count))


class _CaptureParser:
    """The state of one :func:`parse_capture` call."""

    def __init__(self, source: str, root: str, files: Sequence[CaptureFile], archive: bool = False) -> None:
        self.source, self.root, self.archive = source, root, archive
        self.problems: list[_Problem] = []
        self.files: dict[str, CaptureFile] = {}
        self.dirs: dict[str, tuple[str, int]] = {}
        """Partition directory name -> (topic, partition), for every directory holding a capture file."""
        checked: dict[str, bool] = {}  # directory -> a partition directory of a capture
        for f in files:  # the later of two files of one name wins (an archive appended to)
            directory, slash, base = f.name.rpartition("/")
            if not slash:
                if base in TOP_FILES:
                    self.files[f.name] = f
                continue
            if base not in PARTITION_FILES or "/" in directory:
                continue
            if directory not in checked:
                checked[directory] = capture_location(f.name) == ("", f.name)
                if checked[directory]:
                    self.dirs[directory] = parse_partition_dir_name(directory)[:2]
            if checked[directory]:
                self.files[f.name] = f

    def path(self, name: str) -> str:
        """A file of the capture relative to the source."""
        return f"{self.root}/{name}" if self.root else name

    def malformed(self, name: str, data: bytes, exc: ParseError) -> None:
        self.problems.append(
            _Problem(
                "malformed", self.path(name), _line_of(data, exc.offset), exc.offset, _one_line(exc.message)
            )
        )

    def parsed(self, name: str, parse: Callable[[bytes, str], _T]) -> _T | None:
        """``parse(data, path)`` of the capture file ``name``: None when the capture has no such file or
        when its parser fails (then a ``malformed`` problem)."""
        f = self.files.get(name)
        if f is None:
            return None
        try:
            return parse(f.data, self.path(name))
        except ParseError as exc:
            self.malformed(name, f.data, exc)
            return None

    def manifest(self) -> Manifest:
        manifest = self.parsed(MANIFEST, parse_manifest)
        return manifest if manifest is not None else Manifest()

    def meta(self) -> MetaProperties | None:
        return self.parsed(META_PROPERTIES, parse_meta_properties)

    def capture_time(self, manifest: Manifest, ingested_at_ms: int) -> tuple[int, str]:
        if manifest.capture_time_ms is not None:
            return manifest.capture_time_ms, "manifest"
        names = [part for part in reversed(self.root.split("/")) if part]
        names.append(os.path.basename(self.source.rstrip("/")))
        for name in names:
            ms = time_from_name(name)
            if ms is not None:
                return ms, "name"
        newest = max((f.mtime_ms for f in self.files.values()), default=None)
        if newest is not None and EARLIEST_MS <= newest < LATEST_MS:
            return newest, "archive" if self.archive else "mtime"
        return ingested_at_ms, "ingest"  # no file, or no plausible mtime (an archive's 0)

    def log_dir(self, manifest: Manifest) -> str:
        if manifest.log_dir is not None:
            return manifest.log_dir
        kept = [part for part in self.root.split("/") if part and time_from_name(part) is None]
        return "/".join(kept) or "."

    def offsets(self, name: str) -> OffsetColumns | None:
        return self.parsed(name, offset_checkpoint_columns)

    def epochs(self, directory: str, topic: str, partition: int, out: _Epochs) -> None:
        checkpoint = self.parsed(f"{directory}/{LEADER_EPOCH_CHECKPOINT}", _leader_epochs)
        if checkpoint is not None:
            out.add(topic, partition, checkpoint.entries)

    def topic_id(self, directory: str) -> str | None:
        metadata = self.parsed(f"{directory}/{PARTITION_METADATA}", parse_partition_metadata)
        return metadata.topic_id if metadata is not None else None


def _leader_epochs(data: bytes, path: str) -> LeaderEpochCheckpoint:
    """A leader-epoch checkpoint as Kafka loads it: a negative epoch or start offset fails its load-time
    check (ParseError at the first one)."""
    checkpoint = parse_leader_epoch_checkpoint(data, path)
    if checkpoint.entries and min(min(e) for e in checkpoint.entries) < 0:
        checkpoint.normalized()  # Kafka's load-time check: raises at the first negative entry
    return checkpoint


def _id_time(capture_ms: int, time_source: str) -> int | None:
    """The capture time that enters the captureId: a time from a name or the mtimes (a manifest's time is in
    the files already; the ingest time is no property of the capture)."""
    return capture_ms if time_source in ("name", "archive", "mtime") else None


def capture_id(source: str, root: str, files: Sequence[CaptureFile], *, archive: bool = False) -> str:
    """The ``captureId`` :func:`parse_capture` gives this capture, computed without parsing its checkpoints
    (ingest skips the captures already in the warehouse with it)."""
    capture = _CaptureParser(source, root, files, archive)
    capture_ms, time_source = capture.capture_time(capture.manifest(), 0)
    return capture_digest(files, _id_time(capture_ms, time_source))


def parse_capture(
    source: str,
    root: str,
    files: Sequence[CaptureFile],
    *,
    ingest_id: str,
    ingested_at_ms: int,
    cluster: str | None = None,
    archive: bool = False,
) -> dict[str, pa.Table]:
    """The rows of one capture (module docstring): one table per name of ``history_rows.TABLES``, each with
    that table's full schema. ``source`` is the directory or archive given to ingest, ``root`` the capture's
    directory inside it ("" for the source itself), ``files`` the capture's files (names relative to ``root``;
    other names are ignored), ``archive`` whether they are members of an archive (their mtimes are the
    ones the archive recorded)."""
    capture = _CaptureParser(source, root, files, archive)
    manifest = capture.manifest()
    meta = capture.meta()
    capture_ms, time_source = capture.capture_time(manifest, ingested_at_ms)
    broker = meta.node_id if meta is not None and meta.node_id is not None else manifest.broker
    key = _Key(
        capture_id=capture_digest(files, _id_time(capture_ms, time_source)),
        cluster=cluster or (meta.cluster_id if meta is not None else None) or manifest.cluster or "unknown",
        broker=broker,
        log_dir=capture.log_dir(manifest),
        capture_time_ms=capture_ms,
    )
    tables = dict(_empty_tables())
    dirs = capture.dirs
    if broker is None:
        if META_PROPERTIES not in capture.files:
            why = "no meta.properties"
        elif meta is None:
            why = "meta.properties is malformed"
        else:
            why = "meta.properties names no node"
        capture.problems.append(
            _Problem(
                "unidentified",
                capture.path(META_PROPERTIES),
                None,
                None,
                f"{why} and no capture manifest gives a broker: the capture's entries are not kept",
            )
        )
    else:
        for file_name, table in OFFSET_TABLES.items():
            columns = capture.offsets(file_name)
            if columns is not None and len(columns):
                lines = pa.array(np.arange(3, len(columns) + 3, dtype=np.int32))
                tables[table] = key.table(
                    table, len(columns), [columns.topic, columns.partition, columns.offset, lines]
                )
        epochs = _Epochs()
        topic_ids: list[str | None] = []
        for directory, (topic, partition) in dirs.items():
            capture.epochs(directory, topic, partition, epochs)
            topic_ids.append(capture.topic_id(directory))
        if epochs.topic:
            positions = np.asarray(epochs.position, dtype=np.int32)
            tables["leader_epochs"] = key.table(
                "leader_epochs",
                len(positions),
                [
                    epochs.topic,
                    epochs.partition,
                    epochs.epoch,
                    epochs.start,
                    pa.array(positions),
                    pa.array(positions + 3),
                ],
            )
        if dirs:
            tables["partitions"] = key.table(
                "partitions",
                len(dirs),
                [
                    [tp[0] for tp in dirs.values()],
                    [tp[1] for tp in dirs.values()],
                    list(dirs),
                    topic_ids,
                ],
            )
        if meta is not None:
            tables["brokers"] = key.table(
                "brokers", 1, [[meta.version], [meta.node_id], [meta.cluster_id], [meta.directory_id]]
            )
    problems = capture.problems
    if problems:
        tables["problems"] = key.table(
            "problems",
            len(problems),
            [
                [p.kind for p in problems],
                [source] * len(problems),
                [p.file for p in problems],
                [p.line for p in problems],
                [p.offset for p in problems],
                [p.message for p in problems],
            ],
        )
    tables["captures"] = key.table(
        "captures",
        1,
        [
            [source],
            [root],
            [time_source],
            [len(capture.files)],
            [sum(len(f.data) for f in capture.files.values())],
            [len(dirs)],
            [len(problems)],
            [CLEAN_SHUTDOWN in capture.files],
            pa.array([manifest.broker_start_time_ms], TIMESTAMP),
            [ingest_id],
            pa.array([ingested_at_ms], TIMESTAMP),
        ],
    )
    return tables


def refusal_rows(
    source: str,
    refusals: Sequence[Refusal],
    *,
    ingest_id: str,
    ingested_at_ms: int,
    capture_time_ms: int,
    cluster: str = "unknown",
    archive: str | None = None,
) -> pa.Table:
    """``problems`` rows for the refused entries of an archive: kind ``corrupt`` for a damaged archive or
    entry, else ``refused``; ``file`` is ``<archive>!<entry>`` (``archive``: the archive's path relative to
    ``source``, by default the source's base name). No broker or log dir; ``captureTime`` is
    ``capture_time_ms`` (e.g. the time in the archive's name, or its mtime). ``captureId`` is the SHA-256 of
    the archive's name, the entry and the reason, so the same refusals ingested twice have the same ids."""
    name = archive if archive is not None else os.path.basename(source.rstrip("/"))
    rows = len(refusals)
    ids = []
    for refusal in refusals:
        digest = hashlib.sha256(b"kafka-auditor refusal\x00")
        for part in (name, refusal.name, refusal.reason):
            encoded = part.encode("utf-8", "surrogatepass")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
        ids.append(digest.hexdigest())
    key = _Key("", cluster, None, None, capture_time_ms)
    columns = key.columns(rows)
    columns[0] = pa.array(ids, pa.string())
    own = [
        ["corrupt" if r.reason.startswith("corrupt") else "refused" for r in refusals],
        [source] * rows,
        [f"{name}!{r.name}" for r in refusals],
        [None] * rows,
        [None] * rows,
        [r.reason for r in refusals],
    ]
    schema = TABLES["problems"]
    arrays = [_array(column, f.type) for column, f in zip(own, list(schema)[len(columns) :], strict=True)]
    return pa.Table.from_arrays(columns + arrays, schema=schema)
