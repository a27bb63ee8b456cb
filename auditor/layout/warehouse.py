"""The ingest warehouse on disk: immutable Parquet files, versions committed atomically, one writer at a time.

Layout of a warehouse ``W`` (written by ``kafka-auditor ingest``, read by ``kafka-auditor report``)::

    W/warehouse.json      {"format": "kafka-auditor-warehouse", "version": 1, "created": ..., "layout": ...}
    W/current             symlink -> versions/<n>, the newest committed version
    W/versions/<n>/<table>/cluster=<c>/captureDate=<YYYY-MM-DD>/part-<ingestId>-<k>.parquet
    W/_staging/<ingestId>/...   files of an ingest in progress (same tree as a version)
    W/state/<name>.json   small JSON state (``ingests``: the runs; ``reports``: what report already showed)
    W/.lock               flock'ed (exclusive) by the run that writes: ingests are serialised

Readers use ``W/current/<table>`` (tables of :mod:`auditor.observe.history_rows`), Hive-partitioned by
``cluster`` and ``captureDate`` (those two columns are in the directory names, not in the files):
``spark.read.parquet("W/current/high_watermarks")``, ``pandas.read_parquet("W/current/high_watermarks")``,
DuckDB ``read_parquet('W/current/high_watermarks/**/*.parquet', hive_partitioning=true)``. Spark and DuckDB
infer partition types (``captureDate`` becomes a date, a numeric cluster label an integer) unless told not to
(Spark: ``spark.sql.sources.partitionColumnTypeInference.enabled=false``). A cluster value that is not
``[A-Za-z0-9._-]+`` is percent-encoded (UTF-8, Hive style) in its directory name; pyarrow and DuckDB decode
it, Spark decodes each ``%XX`` as one character (exact for ASCII).

Commit (:meth:`Warehouse.commit`): executors write an ingest's files under ``_staging/<ingestId>``; the driver
then builds ``versions/<n+1>`` from hard links to every file of version ``n`` plus the staged files, fsyncs
the files and directories, and switches ``current`` by creating a new symlink and ``os.replace``-ing it over
``current`` (atomic on POSIX). A reader sees the old version or the new one, never part of one; files are
never rewritten once committed (they are made read-only). A run that crashes leaves only
``_staging/<ingestId>`` or an unreferenced ``versions/<m>`` (m > current); the next run that takes the lock
removes both. The newest :data:`KEEP_VERSIONS` versions are kept (a reader that resolved ``current`` just
before a commit keeps its files); older ones are deleted after a commit. A run that adds nothing does not
create a version.

Concurrency: every writer (ingest, report's state) holds an exclusive ``fcntl.flock`` on ``W/.lock`` for the
whole run; a second run waits, saying so once on stderr. Readers take no lock. The warehouse must be on a
filesystem the Spark driver and executors share (local mode, or a shared mount) and that supports hard links,
symlinks and flock (any local POSIX filesystem; NFS v4 for a cluster).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from auditor.layout.durable import write_and_replace

FORMAT = "kafka-auditor-warehouse"
WAREHOUSE_VERSION = 1
"""Version of the warehouse's tables (``auditor.observe.history_rows``) and layout, in ``warehouse.json``;
bumped on incompatible changes (a warehouse of another version is refused)."""
KEEP_VERSIONS = 3
"""Committed versions kept (the newest); older ones are deleted after each commit."""
INGESTS_KEPT = 1000
"""Runs kept in state ``ingests`` (the oldest are dropped)."""

MANIFEST = "warehouse.json"
CURRENT = "current"
VERSIONS = "versions"
STAGING = "_staging"
STATE = "state"
LOCK = ".lock"
PARQUET_SUFFIX = ".parquet"
LAYOUT = "versions/<n>/<table>/cluster=<c>/captureDate=<YYYY-MM-DD>/part-<ingestId>-<k>.parquet"

_NAME = re.compile(r"[A-Za-z0-9._-]+")
_SAFE = "._-"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


class WarehouseError(Exception):
    """A warehouse that cannot be opened, read or written; the message is one line naming the path."""


def encode_value(value: str) -> str:
    """A partition value as a directory name component: itself when ``[A-Za-z0-9._-]+``, else percent-encoded
    UTF-8 (``/``, ``=``, ``%``, blanks and every other byte); the empty string is Hive's null."""
    if value == "":
        return HIVE_NULL
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return value if _NAME.fullmatch(value) else quote(value, safe=_SAFE)


def decode_value(text: str) -> str:
    """The inverse of :func:`encode_value`."""
    return "" if text == HIVE_NULL else unquote(text)


def partition_dir(cluster: str, capture_date: str) -> str:
    """``cluster=<c>/captureDate=<d>``, values encoded by :func:`encode_value`."""
    return f"cluster={encode_value(cluster)}/captureDate={encode_value(capture_date)}"


def part_file(table: str, cluster: str, capture_date: str, ingest_id: str, k: str) -> str:
    """The path of a data file relative to a version (or staging) directory."""
    check_name(ingest_id, "ingest id")
    check_name(k, "file tag")
    return f"{table}/{partition_dir(cluster, capture_date)}/part-{ingest_id}-{k}{PARQUET_SUFFIX}"


def check_name(name: str, what: str) -> str:
    """``name`` when it is a plain ``[A-Za-z0-9._-]+`` file name component, else ValueError."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"invalid {what} {name!r}")
    return name


def new_ingest_id(now_ms: int | None = None) -> str:
    """A new ingest id: UTC start time and 8 random hex digits (``20260105T020000Z-1a2b3c4d``)."""
    now = time.gmtime((now_ms if now_ms is not None else time.time() * 1000) / 1000)
    return time.strftime("%Y%m%dT%H%M%SZ", now) + "-" + secrets.token_hex(4)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root`` (relative paths), in a stable order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames):
            yield (base / name).relative_to(root)


def _say_waiting(message: str) -> None:
    print(f"kafka-auditor: {message}", file=sys.stderr, flush=True)


class Warehouse:
    """An opened warehouse (see the module docstring). Create with :meth:`open`."""

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        self.path = path
        self.info = info
        self._lock_fd: int | None = None
        self._lock_depth = 0

    # ------------------------------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool) -> Warehouse:
        """The warehouse at ``path``; with ``create``, a missing or empty directory becomes one.

        :class:`WarehouseError` (one line) for a file, a non-empty directory that is not a warehouse, a
        warehouse of another format or version, or a missing one when ``create`` is false."""
        root = Path(os.path.abspath(path))
        manifest = root / MANIFEST
        try:
            if root.exists() and not root.is_dir():
                raise WarehouseError(f"warehouse {root} is not a directory")
            if manifest.is_file():
                return cls(root, cls._read_manifest(manifest))
            if not root.exists():
                if not create:
                    raise WarehouseError(f"warehouse {root} does not exist (`kafka-auditor ingest` makes it)")
                root.mkdir(parents=True)
            elif any(root.iterdir()):
                raise WarehouseError(
                    f"{root} is not empty and not a kafka-auditor warehouse (no {MANIFEST}); "
                    "choose a new or empty directory"
                )
            elif not create:
                raise WarehouseError(f"{root} is not a kafka-auditor warehouse (no {MANIFEST})")
            info = {
                "format": FORMAT,
                "version": WAREHOUSE_VERSION,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "layout": LAYOUT,
            }
            _atomic_write(manifest, json.dumps(info, indent=1) + "\n")  # first: a crash leaves a warehouse
            for sub in (VERSIONS, STAGING, STATE):
                (root / sub).mkdir(exist_ok=True)
            return cls(root, info)
        except OSError as exc:
            raise WarehouseError(f"warehouse {root}: {exc.strerror or exc}") from None

    @staticmethod
    def _read_manifest(manifest: Path) -> dict[str, Any]:
        try:
            info = json.loads(manifest.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise WarehouseError(f"{manifest}: line {exc.lineno}: not JSON ({exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise WarehouseError(f"{manifest}: byte {exc.start}: not UTF-8") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise WarehouseError(f"{manifest}: not a kafka-auditor warehouse (format is not {FORMAT!r})")
        if info.get("version") != WAREHOUSE_VERSION:
            raise WarehouseError(
                f"{manifest}: a version {info.get('version')!r} warehouse; this kafka-auditor reads and "
                f"writes version {WAREHOUSE_VERSION}"
            )
        return info

    # ------------------------------------------------------------------------------------------ locking

    @contextmanager
    def lock(self, on_wait: Callable[[str], None] | None = _say_waiting) -> Iterator[Warehouse]:
        """Hold the exclusive lock on ``W/.lock`` (re-entrant in this object). When another process holds
        it, ``on_wait`` is told once and the call waits. On taking it, what crashed runs left (staging
        directories, unreferenced versions, temporary links) is removed."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield self
            finally:
                self._lock_depth -= 1
            return
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait(f"waiting for the lock on warehouse {self.path} (another run holds it)")
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd, self._lock_depth = fd, 1
            self.collect_garbage()
            yield self
        finally:
            self._lock_fd, self._lock_depth = None, 0
            os.close(fd)  # releases the flock

    def _require_lock(self) -> None:
        if not self._lock_depth:
            raise RuntimeError("the warehouse lock is not held (use `with warehouse.lock():`)")

    # ------------------------------------------------------------------------------------------ versions

    def current_version(self) -> int:
        """The committed version ``current`` points at (0: nothing committed yet)."""
        try:
            target = os.readlink(self.path / CURRENT)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise WarehouseError(f"{self.path / CURRENT}: {exc.strerror or exc}") from None
        name = os.path.basename(target.rstrip("/"))
        if not name.isdigit():
            raise WarehouseError(f"{self.path / CURRENT} points at {target!r}, not {VERSIONS}/<n>")
        return int(name)

    def versions(self) -> list[int]:
        """Every version directory present (committed or not), ascending."""
        try:
            names = os.listdir(self.path / VERSIONS)
        except FileNotFoundError:
            return []
        return sorted(int(n) for n in names if n.isdigit())

    def version_dir(self, version: int | None = None) -> Path | None:
        """The directory of ``version`` (default: the current one); None when nothing is committed."""
        n = self.current_version() if version is None else version
        return self.path / VERSIONS / str(n) if n else None

    def table_path(self, table: str) -> Path | None:
        """``W/versions/<current>/<table>`` when the table has at least one file, else None. The path is
        resolved from ``current`` at the call: a reader keeps a consistent version even if a commit
        follows (see :meth:`tables`)."""
        base = self.version_dir()
        return self._table_in(base, table) if base is not None else None

    @staticmethod
    def _table_in(base: Path, table: str) -> Path | None:
        check_name(table, "table")
        path = base / table
        if not path.is_dir():
            return None
        for _dirpath, _dirs, files in os.walk(path):
            if any(f.endswith(PARQUET_SUFFIX) for f in files):
                return path
        return None

    def tables(self) -> dict[str, str]:
        """Table -> directory of every table present in the current version (all from one version, for
        ``spark.read.parquet``)."""
        base = self.version_dir()
        if base is None or not base.is_dir():
            return {}
        found = {}
        for name in sorted(os.listdir(base)):
            path = self._table_in(base, name) if _NAME.fullmatch(name) else None
            if path is not None:
                found[name] = str(path)
        return found

    def capture_ids(self, table: str = "captures") -> set[str]:
        """The ``captureId`` values of ``table`` (default: every capture) in the current version (only that
        column is read)."""
        import pyarrow.dataset as ds

        path = self.table_path(table)
        if path is None:
            return set()
        try:
            column = ds.dataset(str(path), format="parquet").to_table(columns=["captureId"]).column(0)
        except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on a bad file
            raise WarehouseError(f"{path}: cannot read captureId: {str(exc).splitlines()[0]}") from None
        return set(column.to_pylist())

    # ------------------------------------------------------------------------------------------ committing

    def staging(self, ingest_id: str) -> Path:
        """``W/_staging/<ingestId>`` (created): where the run's executors write its files."""
        path = self.path / STAGING / check_name(ingest_id, "ingest id")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def commit(self, ingest_id: str, staged_files: Iterable[str | os.PathLike]) -> int:
        """Commit ``staged_files`` (files under :meth:`staging`) as a new version and return it; with no
        files, nothing changes and the current version is returned. Needs the lock."""
        self._require_lock()
        staging = self.staging(ingest_id)
        staged = sorted({Path(os.path.abspath(f)) for f in staged_files})
        current = self.current_version()
        if not staged:
            shutil.rmtree(staging, ignore_errors=True)
            return current
        relative = []
        for path in staged:
            try:
                rel = path.relative_to(staging)
            except ValueError:
                raise WarehouseError(f"{path} is not under the staging directory {staging}") from None
            if path.suffix != PARQUET_SUFFIX or not path.is_file():
                raise WarehouseError(f"{path}: not a staged Parquet file")
            relative.append(rel)
        version = max([current, *self.versions()]) + 1
        self._build_version(version, current, staging, relative)
        self._switch(version)
        shutil.rmtree(staging, ignore_errors=True)
        self._drop_old_versions(version)
        return version

    def _build_version(self, version: int, current: int, staging: Path, relative: list[Path]) -> None:
        """``versions/<version>``: hard links to every file of ``current`` and to the staged files, all
        read-only and fsynced with their directories."""
        target = self.path / VERSIONS / str(version)
        target.mkdir(parents=True)
        sources: list[tuple[Path, Path]] = []
        if current:
            old = self.path / VERSIONS / str(current)
            sources += [(old / rel, rel) for rel in _files(old)]
        sources += [(staging / rel, rel) for rel in relative]
        dirs = {target}
        for _src, rel in sources:
            dirs.update(target / parent for parent in rel.parents)
        for d in sorted(dirs, key=lambda p: len(p.parts)):
            d.mkdir(exist_ok=True)
        for src, rel in sources:
            dst = target / rel
            if dst.exists():
                raise WarehouseError(f"{dst} exists already (the same file committed twice)")
            os.link(src, dst)
        for src, _rel in sources[len(sources) - len(relative) :]:
            os.chmod(src, 0o444)
            _fsync_file(src)
        for d in sorted(dirs, key=lambda p: -len(p.parts)):
            _fsync_dir(d)
        _fsync_dir(target.parent)

    def _switch(self, version: int) -> None:
        """Point ``current`` at ``versions/<version>``: a new symlink renamed over the old one (atomic)."""
        link = self.path / f".{CURRENT}-{secrets.token_hex(4)}"
        os.symlink(f"{VERSIONS}/{version}", link)
        os.replace(link, self.path / CURRENT)
        _fsync_dir(self.path)

    def _drop_old_versions(self, current: int) -> None:
        committed = [v for v in self.versions() if v <= current]
        for v in committed[:-KEEP_VERSIONS]:
            shutil.rmtree(self.path / VERSIONS / str(v), ignore_errors=True)

    def collect_garbage(self) -> None:
        """Remove what crashed runs left: staging directories, versions newer than ``current`` (never
        committed), temporary links and state files, versions beyond the newest kept. Needs the lock."""
        self._require_lock()
        for entry in (self.path / STAGING).glob("*"):
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        for entry in list(self.path.glob(f".{CURRENT}-*")) + list((self.path / STATE).glob(".*.tmp")):
            entry.unlink(missing_ok=True)
        current = self.current_version()
        for v in self.versions():
            if v > current:
                shutil.rmtree(self.path / VERSIONS / str(v), ignore_errors=True)
        self._drop_old_versions(current)

    # ------------------------------------------------------------------------------------------ state

    def _state_path(self, name: str) -> Path:
        return self.path / STATE / f"{check_name(name, 'state name')}.json"

    def read_state(self, name: str) -> dict[str, Any]:
        """The JSON object in ``W/state/<name>.json`` ({} when absent)."""
        path = self._state_path(name)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError as exc:
            raise WarehouseError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise WarehouseError(f"{path}: byte {exc.start}: not UTF-8") from None
        except OSError as exc:
            raise WarehouseError(f"{path}: {exc.strerror or exc}") from None
        if not isinstance(data, dict):
            raise WarehouseError(f"{path}: line 1: not a JSON object")
        return data

    def write_state(self, name: str, data: dict[str, Any]) -> None:
        """Replace ``W/state/<name>.json`` atomically (temporary file, fsync, rename; mode from the umask)."""
        path = self._state_path(name)
        path.parent.mkdir(exist_ok=True)
        _atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def record_ingest(self, summary: dict[str, Any]) -> None:
        """Append one run to state ``ingests`` (keeps the newest :data:`INGESTS_KEPT`). ``summary`` holds at
        least ``id``, ``startMs`` and ``endMs`` (see :mod:`auditor.spark.ingest` for the rest). Needs the
        lock."""
        self._require_lock()
        missing = [k for k in ("id", "startMs", "endMs") if k not in summary]
        if missing:
            raise ValueError(f"ingest summary lacks {', '.join(missing)}")
        runs = self._ingests()
        runs = [*runs, dict(summary)][-INGESTS_KEPT:]
        self.write_state("ingests", {"ingests": runs})

    def last_ingest(self) -> dict[str, Any] | None:
        """The newest run of state ``ingests``, or None."""
        runs = self._ingests()
        return runs[-1] if runs else None

    def _ingests(self) -> list[dict[str, Any]]:
        """State ``ingests``: a list of runs, each an object whose ``id`` is a string and whose ``startMs``
        and ``endMs`` are integers; anything else is refused in one line naming the file."""
        runs = self.read_state("ingests").get("ingests", [])
        path = self._state_path("ingests")
        if not isinstance(runs, list):
            raise WarehouseError(f'{path}: "ingests" is not a list')
        for i, run in enumerate(runs):
            ok = (
                isinstance(run, dict)
                and isinstance(run.get("id"), str)
                and all(
                    isinstance(run.get(k), int) and not isinstance(run.get(k), bool)
                    for k in ("startMs", "endMs")
                )
            )
            if not ok:
                raise WarehouseError(f"{path}: ingest run {i} is not an object with id, startMs and endMs")
        return runs


def _atomic_write(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file beside it (created with mode 0666 less the umask),
    fsynced, renamed over ``path``, the directory fsynced."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    write_and_replace(fd, tmp, path, text)
    _fsync_dir(path.parent)
