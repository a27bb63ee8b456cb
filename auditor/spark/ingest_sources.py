"""The sources of ``kafka-auditor ingest``: which are directories and which archives, and where a file
Spark lists lies among them; the run's plain data the executors get."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.layout.archives import ARCHIVE_SUFFIXES, ArchiveLimits, is_archive


class IngestError(ValueError):
    """A source that cannot be ingested (missing, neither a directory nor an archive, overlapping the
    warehouse); one line."""


@dataclass(frozen=True)
class IngestRun:
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
            if inside(home, real) or inside(real, home):
                raise IngestError(f"source {label} and the warehouse {warehouse} overlap")
        if os.path.isdir(path):
            dirs.append((label, path))
        elif os.path.isfile(path) and is_archive(path):
            archives.append((label, path))
        else:
            raise IngestError(
                f"source {label} is neither a directory nor an archive ({', '.join(ARCHIVE_SUFFIXES)})"
            )
    outer = [(label, path) for label, path in dirs if not any(inside(path, d) for _, d in dirs if d != path)]
    unique_dirs = list({path: (label, path) for label, path in outer}.values())
    unique_archives = list(
        {
            path: (label, path)
            for label, path in archives
            if not any(inside(path, d) for _, d in unique_dirs)
        }.values()
    )
    return unique_dirs, unique_archives


def glob_escape(path: str) -> str:
    """``path`` for ``DataFrameReader.load``, which reads Hadoop glob patterns: special characters escaped."""
    return "".join("\\" + c if c in "\\{}[]*?" else c for c in path)


def inside(path: str, directory: str) -> bool:
    """``path`` is ``directory`` or below it (plain prefix test on absolute paths)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def local_path(uri: str) -> str:
    """The local path of a Hadoop ``file:`` path as Spark reports it (not percent-encoded)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return uri[len("file:") :] if uri.startswith("file:") else uri


def locate(run: IngestRun, path: str) -> tuple[int, str, str] | None:
    """(source index, label, path relative to the source) of a file Spark listed; the longest source wins."""
    best = None
    for i, (_label, root) in enumerate(run.sources):
        if inside(path, root) and (best is None or len(root) > len(run.sources[best][1])):
            best = i
    if best is None:
        return None
    label, root = run.sources[best]
    rel = os.path.relpath(path, root) if path != root else ""
    return best, label, rel.replace(os.sep, "/") if rel != "." else ""
