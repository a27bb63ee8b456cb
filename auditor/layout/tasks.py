"""One task per partition replica directory: what an executor (or the single-process extract) needs to
read it."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from auditor.kafka.topics import INTERNAL_COMPACTED, METADATA_TOPIC
from auditor.layout.logdir import LogDirInfo
from parsers.dirfiles import (
    parse_partition_dir_name,
)


@dataclass
class PartitionTask:
    """Everything an executor needs to extract one partition directory (JSON-serialisable)."""

    cluster: str
    log_dir: str
    broker: int
    dir_name: str
    topic: str
    partition: int
    hw: int | None = None
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    cleaner_offset: int | None = None
    clean_shutdown: bool = False
    compacted: bool = False
    size: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def plan_tasks(
    infos: list[LogDirInfo],
    clusters: list[str] | None = None,
    compacted_topics: dict[str, set[str]] | None = None,
) -> list[PartitionTask]:
    """One task per live partition directory of ``infos`` (biggest first).

    A partition is treated as compacted on every replica when any log directory of its cluster has a
    cleaner-offset-checkpoint entry for it, its topic is an internal compacted topic, or the KRaft
    metadata configures ``cleanup.policy=compact`` (``compacted_topics``: cluster -> topics).
    """
    labels = clusters or [info.cluster_id or "" for info in infos]
    cleaned: set[tuple[str, str, int]] = set()
    for info, label in zip(infos, labels, strict=True):
        cleaned.update((label, t, p) for (t, p) in info.cleaner)
    tasks = []
    for info, label in zip(infos, labels, strict=True):
        for name in info.partition_dirs:
            topic, partition, _kind, _ = parse_partition_dir_name(name)
            key = (topic, partition)
            compacted = (
                (label, topic, partition) in cleaned
                or topic in INTERNAL_COMPACTED
                or topic in (compacted_topics or {}).get(label, set())
            )
            tasks.append(
                PartitionTask(
                    cluster=label,
                    log_dir=info.path,
                    broker=info.node if info.node is not None else -1,
                    dir_name=name,
                    topic=topic,
                    partition=partition,
                    hw=info.hw.get(key),
                    recovery_point=info.recovery.get(key),
                    log_start_checkpoint=info.log_start.get(key),
                    cleaner_offset=info.cleaner.get(key),
                    clean_shutdown=info.clean_shutdown,
                    compacted=compacted and topic != METADATA_TOPIC,
                    size=_dir_size(Path(info.path) / name),
                )
            )
    tasks.sort(key=lambda t: -t.size)
    return tasks


def _dir_size(path: Path) -> int:
    total = 0
    try:
        with os.scandir(path) as it:
            for entry in it:
                if entry.name.endswith(".log"):
                    total += entry.stat().st_size
    except OSError:
        pass
    return total


