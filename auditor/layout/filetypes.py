"""Kafka's file kinds by name: one table for the inventory, the dump command and the log-dir test (spec §12,
§13, §16.1).

Names are parsed by :mod:`parsers.dirfiles` (``LocalLog.parseTopicPartitionName``, segment and KRaft snapshot
file names); this module only maps what those parsers return to a kind and recognises a log directory by the
files Kafka keeps at its root.
"""

from __future__ import annotations

import os
from pathlib import Path

from parsers.checkpoints import OFFSET_CHECKPOINT_FILES
from parsers.dirfiles import (
    SEGMENT_STATES,
    SEGMENT_SUFFIXES,
    parse_kraft_snapshot_file_name,
    parse_partition_dir_name,
)
from parsers.errors import ParseError

METADATA_DIR = "__cluster_metadata-0"
REMOTE_INDEX_CACHE = "remote-log-index-cache"

_SEGMENT_KIND_NAMES = ("log", "offset-index", "time-index", "txn-index", "producer-snapshot")
SEGMENT_KINDS = dict(zip(SEGMENT_SUFFIXES, _SEGMENT_KIND_NAMES, strict=True))
"""Segment file suffix (``parsers.dirfiles.SEGMENT_SUFFIXES``) -> kind."""
ROOT_FILES = {
    "meta.properties": "meta-properties",
    ".lock": "lock",
    ".kafka_cleanshutdown": "clean-shutdown",
    "bootstrap.checkpoint": "bootstrap-checkpoint",
    **{name: "offset-checkpoint" for name in sorted(OFFSET_CHECKPOINT_FILES)},
}
"""Files Kafka keeps at the root of a log directory (``LogManager``, ``ReplicaManager``, ``LogLoader``,
``kafka-storage format``) -> kind."""
PARTITION_FILES = {
    "leader-epoch-checkpoint": "leader-epoch-checkpoint",
    "partition.metadata": "partition-metadata",
    "quorum-state": "quorum-state",
}
"""Fixed-name files of a partition directory -> kind (``quorum-state`` only in ``__cluster_metadata-0``)."""

FILE_KINDS = {
    "log": "log segment (.log)",
    "kraft-snapshot": "KRaft metadata snapshot (NNN-EEE.checkpoint, bootstrap.checkpoint)",
    "offset-index": "offset index (.index)",
    "time-index": "time index (.timeindex)",
    "txn-index": "transaction index (.txnindex)",
    "producer-snapshot": "producer state snapshot (.snapshot)",
    "offset-checkpoint": "offset checkpoint (" + ", ".join(sorted(OFFSET_CHECKPOINT_FILES)) + ")",
    "leader-epoch-checkpoint": "leader-epoch-checkpoint",
    "partition-metadata": "partition.metadata",
    "meta-properties": "meta.properties",
    "quorum-state": "quorum-state",
    "clean-shutdown": ".kafka_cleanshutdown",
}
"""The kinds a single file can be read as (``kafka-auditor dump``), with a human description."""

LOG_DIR_MARKERS = tuple(name for name in ROOT_FILES if name != ".lock")
"""Root files that make a directory a Kafka log directory (spec §12). ``.lock`` alone does not: any program
may leave one."""


def strip_state_suffix(name: str) -> tuple[str, str | None]:
    """``0001.log.deleted`` -> (``0001.log``, ``deleted``); other names unchanged (``SEGMENT_STATES``)."""
    for suffix, state in SEGMENT_STATES.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], state
    return name, None


def classify(path: str | Path) -> str | None:
    """The kind of Kafka file ``path`` names (a key of ``FILE_KINDS``), or None if unknown.

    Like ``DumpLogSegments``, by the name's suffix (a ``.log`` copy under any name is a segment); a
    ``.deleted``/``.cleaned``/``.swap`` state or a ``.tmp`` suffix does not change the kind.
    """
    name = strip_state_suffix(Path(path).name)[0].removesuffix(".tmp")
    if name == "bootstrap.checkpoint" or kraft_snapshot_id(name) is not None:
        return "kraft-snapshot"
    kind = ROOT_FILES.get(name) or PARTITION_FILES.get(name)
    if kind in FILE_KINDS:
        return kind
    return SEGMENT_KINDS.get("." + name.rsplit(".", 1)[1]) if "." in name else None


def kraft_snapshot_id(path: str | Path) -> tuple[int, int] | None:
    """(end offset, epoch) of a complete KRaft snapshot file name, or None (e.g. ``bootstrap.checkpoint``)."""
    try:
        end, epoch, state = parse_kraft_snapshot_file_name(strip_state_suffix(Path(path).name)[0])
    except ParseError:
        return None
    return (end, epoch) if state is None else None


def partition_topic(path: str | Path) -> str | None:
    """Topic of the partition directory holding ``path`` (``my-topic.v2-3`` -> ``my-topic.v2``), or None."""
    try:
        return parse_partition_dir_name(Path(path).resolve().parent.name)[0]
    except ParseError:
        return None


def is_partition_dir(path: str | os.PathLike) -> bool:
    """A directory Kafka would load as a partition: a ``topic-partition`` name (or ``__cluster_metadata-0``)
    and at least one segment, index or fixed-name partition file inside."""
    name = os.path.basename(os.fspath(path).rstrip(os.sep))
    try:
        parse_partition_dir_name(name)
        with os.scandir(path) as it:
            return any(
                e.name in PARTITION_FILES or e.name.endswith((".log", ".index", ".log.deleted")) for e in it
            )
    except (ParseError, OSError):
        return False


def is_log_dir(path: str | os.PathLike) -> bool:
    """A Kafka log directory: one of :data:`LOG_DIR_MARKERS` at its root, whatever its file type (a FIFO named
    ``meta.properties`` still makes a log dir, which is then reported, never read), or a child directory that
    is a partition directory (a log dir that lost its root files)."""
    root = Path(path)
    if not root.is_dir():
        return False
    if any(os.path.lexists(root / name) for name in LOG_DIR_MARKERS):
        return True
    try:
        with os.scandir(root) as it:
            return any(entry_is_dir(e) and is_partition_dir(e.path) for e in it)
    except OSError:
        return False


def entry_is_dir(entry: os.DirEntry) -> bool:
    """``entry.is_dir()`` (links followed), False when it cannot be told (permissions, a dangling link)."""
    try:
        return entry.is_dir()
    except OSError:
        return False
