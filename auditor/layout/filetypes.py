"""Recognising Kafka files by name, the way the broker and ``kafka-dump-log.sh`` do (spec §13, §16.1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

OFFSET_CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_STATE_SUFFIXES = (".deleted", ".cleaned", ".swap")

FILE_KINDS = {
    "log": "log segment (.log)",
    "kraft-snapshot": "KRaft metadata snapshot (NNN-EEE.checkpoint, bootstrap.checkpoint)",
    "offset-index": "offset index (.index)",
    "time-index": "time index (.timeindex)",
    "txn-index": "transaction index (.txnindex)",
    "producer-snapshot": "producer state snapshot (.snapshot)",
    "offset-checkpoint": "offset checkpoint (" + ", ".join(OFFSET_CHECKPOINTS) + ")",
    "leader-epoch-checkpoint": "leader-epoch-checkpoint",
    "partition-metadata": "partition.metadata",
    "meta-properties": "meta.properties",
    "quorum-state": "quorum-state",
    "clean-shutdown": ".kafka_cleanshutdown",
}


def strip_state_suffix(name: str) -> tuple[str, str | None]:
    """``0001.log.deleted`` -> (``0001.log``, ``deleted``); other names unchanged."""
    for suffix in _STATE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, None


def classify(path: str | Path) -> str | None:
    """The kind of Kafka file ``path`` names (a key of ``FILE_KINDS``), or None if unknown."""
    name, _state = strip_state_suffix(Path(path).name)
    if name.endswith(".tmp"):
        name = name[:-4]
    if name in OFFSET_CHECKPOINTS:
        return "offset-checkpoint"
    if name == "leader-epoch-checkpoint":
        return "leader-epoch-checkpoint"
    if name == "partition.metadata":
        return "partition-metadata"
    if name == "meta.properties":
        return "meta-properties"
    if name == "quorum-state":
        return "quorum-state"
    if name == ".kafka_cleanshutdown":
        return "clean-shutdown"
    if name == "bootstrap.checkpoint" or _KRAFT_SNAPSHOT.match(name):
        return "kraft-snapshot"
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return {
        "log": "log",
        "index": "offset-index",
        "timeindex": "time-index",
        "txnindex": "txn-index",
        "snapshot": "producer-snapshot",
    }.get(suffix)


def kraft_snapshot_id(path: str | Path) -> tuple[int, int] | None:
    """(end offset, epoch) of a KRaft snapshot file name, or None (e.g. ``bootstrap.checkpoint``)."""
    m = _KRAFT_SNAPSHOT.match(strip_state_suffix(Path(path).name)[0])
    return (int(m.group(1)), int(m.group(2))) if m else None


def partition_topic(path: str | Path) -> str | None:
    """Topic of the partition directory holding ``path`` (``my-topic.v2-3`` -> ``my-topic.v2``)."""
    parent = Path(path).resolve().parent.name
    for suffix in ("-delete", "-future", "-stray"):
        if parent.endswith(suffix) and "." in parent:
            parent = parent[: parent.rindex(".")]
            break
    if "-" not in parent:
        return None
    topic, _, part = parent.rpartition("-")
    return topic if part.isdigit() and topic else None


LOG_DIR_MARKERS = ("meta.properties", "replication-offset-checkpoint")
"""Files at the root of a broker or controller log directory (spec §12)."""


def is_log_dir(path: str | os.PathLike) -> bool:
    """A Kafka log directory: ``meta.properties`` or an offset checkpoint at its root, whatever its file type
    (a FIFO named ``meta.properties`` still makes a log dir, which is then reported, never read)."""
    return any(os.path.lexists(Path(path) / name) for name in LOG_DIR_MARKERS)

