"""The root files of a broker log directory (meta.properties and the four offset checkpoints), read once
for every command; problems are collected, never raised."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from auditor.kafka.topics import METADATA_TOPIC
from parsers.checkpoints import parse_offset_checkpoint
from parsers.dirfiles import (
    parse_clean_shutdown,
    parse_meta_properties,
    parse_partition_dir_name,
)
from parsers.errors import ParseError
from parsers.files import read_regular, regular_file_problem

MAX_TEXT = 16 << 20



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
    partition_dirs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def has_metadata(self) -> bool:
        return f"{METADATA_TOPIC}-0" in self.partition_dirs


def read_small(path: Path) -> bytes:
    """At most :data:`MAX_TEXT` bytes of the regular file ``path``; a FIFO, socket or device is never opened
    (:class:`parsers.files.NotRegularFile`, an OSError)."""
    return read_regular(path, MAX_TEXT)


def _reason(path: Path, exc: ParseError | OSError) -> str:
    """One line naming the file (and the byte, for a parse error) and what is wrong with it."""
    return str(exc) if isinstance(exc, ParseError) else f"{path}: {exc.strerror or exc}"


def _read_meta(info: LogDirInfo, meta: Path) -> None:
    """Node and cluster ID from ``meta.properties``; why there is none goes to ``info.errors``."""
    if not os.path.lexists(meta):
        info.errors.append(f"{meta}: no such file")
        return
    try:
        data = read_small(meta)
        props = parse_meta_properties(data, str(meta))
    except (ParseError, OSError) as exc:
        info.errors.append(_reason(meta, exc))
        return
    info.node = props.node_id  # v0: broker.id
    info.cluster_id = props.cluster_id
    why = props.identity_problem()
    if why is not None:
        empty = "is empty (0 bytes)" if not data else why
        info.errors.append(f"{meta}: {empty}; no node.id/broker.id")


def read_log_dir(path: str | os.PathLike) -> LogDirInfo:
    """Read the root files of a log directory; problems are collected in ``errors``, never raised.

    Only regular files are read (:mod:`parsers.files`); a root file of another type is an error naming it.
    """
    root = Path(path)
    info = LogDirInfo(str(root), None, None, (root / ".kafka_cleanshutdown").exists())
    _read_meta(info, root / "meta.properties")
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
        entries = sorted(os.listdir(root))
    except OSError as exc:
        info.errors.append(f"cannot list {root}: {exc}")
        entries = []
    for name in entries:
        if not (root / name).is_dir():
            continue
        try:
            _topic, _partition, kind, _ = parse_partition_dir_name(name)
        except ParseError:
            continue
        if kind == "live":
            info.partition_dirs.append(name)
    return info


