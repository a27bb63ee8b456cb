"""The root files of a broker log directory (meta.properties and the four offset checkpoints), read once
for every command; problems are collected, never raised."""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from auditor.layout.filetypes import METADATA_DIR
from parsers.checkpoints import parse_offset_checkpoint
from parsers.dirfiles import (
    MetaProperties,
    parse_clean_shutdown,
    parse_meta_properties,
    parse_partition_dir_name,
)
from parsers.errors import ParseError
from parsers.files import read_regular, regular_file_problem

MAX_TEXT = 16 << 20
META_PROPERTIES_LIMIT = 1 << 20
"""Bytes of ``meta.properties`` read, by every command (Kafka's own file is under 200 bytes)."""


@dataclass
class MetaPropertiesFile:
    """A log dir's ``meta.properties`` as ``MetaProperties.Builder`` reads it: ``value``, or ``error`` (an
    OSError, :class:`parsers.files.NotRegularFile` included, or Kafka's ParseError) saying why there is none.
    ``present``: the name exists (whatever its file type)."""

    path: str
    present: bool
    value: MetaProperties | None = None
    error: OSError | ParseError | None = None
    empty: bool = False

    @property
    def reason(self) -> str | None:
        """Why there is no value, without the file name (``no such file``, ``is a FIFO ...``, Kafka's)."""
        if isinstance(self.error, OSError):
            return self.error.strerror or str(self.error)
        return None if self.error is None else self.error.message


def read_meta_properties(log_dir: str | os.PathLike) -> MetaPropertiesFile:
    """``meta.properties`` (node ID, cluster ID, directory ID) of ``log_dir``: the one reader of that file for
    ``scan``, ``extract`` and ``audit``; regular files only, at most :data:`META_PROPERTIES_LIMIT` bytes."""
    path = os.path.join(os.fspath(log_dir), "meta.properties")
    meta = MetaPropertiesFile(path, os.path.lexists(path))
    if not meta.present:
        meta.error = FileNotFoundError(errno.ENOENT, "no such file", path)
        return meta
    try:
        data = read_regular(path, META_PROPERTIES_LIMIT)
        meta.empty = not data
        meta.value = parse_meta_properties(data, path)
    except (OSError, ParseError) as exc:
        meta.error = exc
    return meta


def partition_dirs(log_dir: str | os.PathLike) -> list[tuple[str, str, int, str]]:
    """(directory name, topic, partition, kind) of every partition directory of ``log_dir``, by name
    (``LocalLog.parseTopicPartitionName``): ``kind`` is ``live``, ``future``, ``delete`` or ``stray``.
    OSError when the log dir cannot be listed."""
    out = []
    for name in sorted(os.listdir(log_dir)):
        if not os.path.isdir(os.path.join(log_dir, name)):
            continue
        try:
            topic, partition, kind, _ = parse_partition_dir_name(name)
        except ParseError:
            continue
        out.append((name, topic, partition, kind))
    return out


def live_partition_dirs(log_dir: str | os.PathLike) -> list[tuple[str, str, int]]:
    """(directory name, topic, partition) of every live partition directory of ``log_dir`` (``-delete``,
    ``-future`` and ``-stray`` directories left out). OSError when the log dir cannot be listed."""
    return [(name, t, p) for name, t, p, kind in partition_dirs(log_dir) if kind == "live"]


@dataclass
class LogDirInfo:
    """The root files of one log directory (meta.properties and the four offset checkpoints)."""

    path: str
    node: int | None
    cluster_id: str | None
    clean_shutdown: bool
    hw: dict[tuple[str, int], int] = field(default_factory=dict)
    recovery: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    cleaner: dict[tuple[str, int], int] = field(default_factory=dict)
    partitions: list[tuple[str, str, int]] = field(default_factory=list)
    """(directory name, topic, partition) of the live partition directories (:func:`live_partition_dirs`)."""
    other_dirs: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(directory name, topic, partition, kind) of the ``-future``, ``-delete`` and ``-stray`` directories."""
    directory_id: str | None = None
    """``directory.id`` of ``meta.properties`` (KIP-858): what KRaft's ``directories`` assignment names."""
    errors: list[str] = field(default_factory=list)

    @property
    def has_metadata(self) -> bool:
        return any(name == METADATA_DIR for name, _topic, _partition in self.partitions)


def read_small(path: Path) -> bytes:
    """At most :data:`MAX_TEXT` bytes of the regular file ``path``; a FIFO, socket or device is never opened
    (:class:`parsers.files.NotRegularFile`, an OSError)."""
    return read_regular(path, MAX_TEXT)


def _reason(path: Path, exc: ParseError | OSError) -> str:
    """One line naming the file (and the byte, for a parse error) and what is wrong with it."""
    return str(exc) if isinstance(exc, ParseError) else f"{path}: {exc.strerror or exc}"


def _read_meta(info: LogDirInfo) -> None:
    """Node and cluster ID from ``meta.properties``; why there is none goes to ``info.errors``."""
    meta = read_meta_properties(info.path)
    if meta.error is not None:
        info.errors.append(_reason(Path(meta.path), meta.error))
        return
    props = meta.value
    info.node = props.node_id  # v0: broker.id
    info.cluster_id = props.cluster_id
    info.directory_id = props.directory_id
    why = props.identity_problem()
    if why is not None:
        empty = "is empty (0 bytes)" if meta.empty else why
        info.errors.append(f"{meta.path}: {empty}; no node.id/broker.id")


def read_log_dir(path: str | os.PathLike) -> LogDirInfo:
    """Read the root files of a log directory; problems are collected in ``errors``, never raised.

    Only regular files are read (:mod:`parsers.files`); a root file of another type is an error naming it.
    """
    root = Path(path)
    info = LogDirInfo(str(root), None, None, (root / ".kafka_cleanshutdown").exists())
    _read_meta(info)
    for name, attr in (
        ("replication-offset-checkpoint", "hw"),
        ("recovery-point-offset-checkpoint", "recovery"),
        ("log-start-offset-checkpoint", "log_start"),
        ("cleaner-offset-checkpoint", "cleaner"),
    ):
        file = root / name
        if not os.path.lexists(file):
            continue
        try:
            setattr(info, attr, parse_offset_checkpoint(read_small(file), str(file)).as_dict())
        except (ParseError, OSError) as exc:
            info.errors.append(_reason(file, exc))
    if info.clean_shutdown:
        # Kafka tests that the marker exists; its content (the broker epoch) is optional. A marker that is
        # not a regular file counts as absent, as in ``scan`` (the inventory sets special files apart).
        problem = regular_file_problem(root / ".kafka_cleanshutdown")
        if problem is not None:
            info.clean_shutdown = False
            info.errors.append(f"{root / '.kafka_cleanshutdown'}: {problem}")
        else:
            with contextlib.suppress(OSError, ParseError):
                parse_clean_shutdown(read_small(root / ".kafka_cleanshutdown"))
    try:
        found = partition_dirs(root)
        info.partitions = [(name, t, p) for name, t, p, kind in found if kind == "live"]
        info.other_dirs = [entry for entry in found if entry[3] != "live"]
    except OSError as exc:
        info.errors.append(f"cannot list {root}: {exc}")
    return info
