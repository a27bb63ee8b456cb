"""Finding the log directories (and, for ``audit``, the extracts) under the paths an operator gives: one
walk for ``scan``, ``extract`` and ``audit``. An extract is a directory holding :data:`EXTRACT_MARKER` (the
``extract`` command writes one Parquet file per table kind, ``replica.parquet`` always among them); a loose
``.parquet`` file is found too, so that ``audit`` can say why it is not one (an earlier single-file extract).

A log directory is recognised by Kafka's own markers (:func:`auditor.layout.filetypes.is_log_dir`), never by
a folder's name: a folder called ``dumps`` holding ``meta.properties`` is a log dir, one holding text files is
not. The walk stops at a log dir (its partition directories are the inventory's business) and goes at most
:data:`DISCOVERY_DEPTH` levels below a root (``cluster/moment/broker-1``); symbolic links are followed, so a
link loop ends at that depth. Paths are made absolute with ``os.path.abspath``, not ``realpath``: a log dir
reached through a link keeps the name the operator gave, and executors of a Spark cluster, which run in
their own working directories, get absolute paths.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from auditor.layout.filetypes import entry_is_dir, is_log_dir, is_partition_dir
from parsers.files import regular_file_problem

DISCOVERY_DEPTH = 2
"""Directory levels searched below a root that is not itself a log dir."""
LOG_DIR = "log-dir"
EXTRACT = "extract"
EXTRACT_SUFFIX = ".parquet"
EXTRACT_MARKER = "replica" + EXTRACT_SUFFIX
"""The file (or, as ``audit --save`` writes it, directory) that makes a directory an extract."""


@dataclass
class Discovery:
    """What :func:`discover` found: ``found`` holds (kind, absolute path) in walk order, each path once;
    ``problems`` one line per root that names nothing usable (the commands exit 2 on any); ``skipped`` one
    line per folder below a root that could not be listed (e.g. a root-only ``lost+found`` beside the log
    dirs of a mounted disk): the commands go on with what was found and warn that a log dir in it, if any,
    is not read."""

    found: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def log_dirs(self) -> list[str]:
        return [path for kind, path in self.found if kind == LOG_DIR]

    @property
    def extracts(self) -> list[str]:
        return [path for kind, path in self.found if kind == EXTRACT]


def discover(
    roots: Iterable[str | os.PathLike], *, depth: int = DISCOVERY_DEPTH, extracts: bool = False
) -> Discovery:
    """The log directories under ``roots`` (and extracts, and loose ``.parquet`` files, when ``extracts``).

    A root is a log dir, an extract, or a folder holding those up to ``depth`` levels down. A log dir given
    twice, lying inside another root, or reached again through a symbolic link, is found once, under the
    first name met. Problems: a missing or unreadable root or folder below it, a file that is not an
    extract, a partition directory given instead of its log dir, a root with nothing found.
    """
    out = Discovery()
    seen: set[str] = set()
    for root in roots:
        _Walk(out, seen, depth, extracts).root(root)
    return out


@dataclass
class _Walk:
    out: Discovery
    seen: set[str]
    depth: int
    extracts: bool

    @property
    def wanted(self) -> str:
        return "Kafka log directory or extract" if self.extracts else "Kafka log directory"

    def add(self, kind: str, path: str) -> None:
        """Record ``path`` unless the same file was found before under any name (links resolved)."""
        real = os.path.realpath(path)
        if real not in self.seen:
            self.seen.add(real)
            self.out.found.append((kind, path))

    def root(self, root: str | os.PathLike) -> None:
        path = os.path.abspath(os.fspath(root))
        try:
            os.stat(path)
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            why = "no such file or directory" if missing else f"cannot read: {exc.strerror or exc}"
            self.out.problems.append(f"{root}: {why}")
            return
        if not os.path.isdir(path):
            self.file(root, path)
            return
        before, skipped = len(self.out.problems), len(self.out.skipped)
        if self.visit(path, 0) or len(self.out.problems) > before:
            return
        # nothing found: what could not be listed below this root is why, so it is a problem too
        self.out.problems.extend(self.out.skipped[skipped:])
        if is_partition_dir(path):
            why = "this is a partition directory; give the log directory that holds it"
        else:
            why = (
                f"no {self.wanted} found (no meta.properties, offset checkpoint or partition directory in it "
                f"or in the directories up to {self.depth} levels below)"
            )
        self.out.problems.append(f"{root}: {why}")

    def file(self, root: str | os.PathLike, path: str) -> None:
        """A root that is not a directory: an extract, or a problem."""
        problem = f"not a directory (give a {self.wanted})"
        if self.extracts and path.endswith(EXTRACT_SUFFIX):
            problem = regular_file_problem(path) or ""
        if problem:
            self.out.problems.append(f"{root}: {problem}")
        else:
            self.add(EXTRACT, path)

    def visit(self, path: str, level: int) -> bool:
        """Whether ``path`` is, or holds within the depth, a log dir or an extract (each found is added)."""
        if is_log_dir(path):
            self.add(LOG_DIR, path)
            return True
        if self.extracts and os.path.exists(os.path.join(path, EXTRACT_MARKER)):
            self.add(EXTRACT, path)  # its Parquet files are its tables, never extracts of their own
            return True
        if level >= self.depth:
            return False
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            line = f"{path}: cannot read: {exc.strerror or exc}"
            (self.out.problems if level == 0 else self.out.skipped).append(line)
            return False
        hit = False
        for entry in entries:
            if entry_is_dir(entry):
                hit = self.visit(os.path.join(path, entry.name), level + 1) or hit
            elif self.extracts and entry.name.endswith(EXTRACT_SUFFIX) and os.path.isfile(entry.path):
                # a regular file, through a link too: a FIFO or device named *.parquet is never opened
                self.add(EXTRACT, os.path.join(path, entry.name))
                hit = True
        return hit
