"""The partition tasks of ``extract`` and ``audit``: one per partition directory, with whether
compaction is in play for its partition (Kafka's rule, hence here and not in :mod:`auditor.layout`)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pyarrow as pa

from auditor.kafka.identity import checkpointed
from auditor.kafka.topics import COMPACTED_TOPICS
from auditor.layout.filetypes import METADATA_DIR
from auditor.layout.inventory import segment_logs
from auditor.layout.logdir import LogDirInfo
from auditor.layout.tasks import PartitionTask

HW_FILE, RECOVERY_FILE = "replication-offset-checkpoint", "recovery-point-offset-checkpoint"
LOG_START_FILE, CLEANER_FILE = "log-start-offset-checkpoint", "cleaner-offset-checkpoint"


def plan_tasks(
    infos: list[LogDirInfo],
    clusters: list[str] | None = None,
    compacted_topics: dict[str, set[str]] | None = None,
) -> list[PartitionTask]:
    """One task per partition directory of ``infos`` (biggest first): every live one, and the ``-future``,
    ``-delete`` and ``-stray`` ones (``dir_kind``), whose replica row says what they hold.

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
        dirs = [(name, t, p, "live") for name, t, p in info.partitions] + list(info.other_dirs)
        for name, topic, partition, kind in dirs:
            key = (topic, partition)
            compacted = (
                (label, topic, partition) in cleaned
                or topic in COMPACTED_TOPICS
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
                    hw=info.hw.get(key) if checkpointed(kind, HW_FILE) else None,
                    recovery_point=info.recovery.get(key) if checkpointed(kind, RECOVERY_FILE) else None,
                    log_start_checkpoint=(
                        info.log_start.get(key) if checkpointed(kind, LOG_START_FILE) else None
                    ),
                    cleaner_offset=info.cleaner.get(key) if checkpointed(kind, CLEANER_FILE) else None,
                    clean_shutdown=info.clean_shutdown,
                    compacted=compacted and name != METADATA_DIR and kind == "live",
                    size=_dir_size(Path(info.path) / name),
                    dir_kind=kind,
                    directory_id=info.directory_id,
                )
            )
    tasks.sort(key=lambda t: -t.size)
    return tasks


def _dir_size(path: Path) -> int:
    """Bytes of the ``.log`` segments of a partition directory (0 when it cannot be listed)."""
    total = 0
    with contextlib.suppress(OSError):
        for _base, log in segment_logs(path):
            with contextlib.suppress(OSError):
                total += log.stat().st_size
    return total


def compacted_topics(metadata: pa.Table) -> set[str]:
    """Topics whose latest ``cleanup.policy`` config in the KRaft metadata rows (``rows.METADATA``, in replay
    order) includes ``compact`` (``LogConfig``: ``cleanup.policy`` is a list; ``compact,delete`` compacts
    too)."""
    policy: dict[str, str | None] = {}
    for rec in metadata.select(["record_type", "topic", "config_name", "config_value"]).to_pylist():
        if rec["record_type"] == "CONFIG_RECORD" and rec["config_name"] == "cleanup.policy":
            policy[rec["topic"]] = rec["config_value"]
    return {t for t, v in policy.items() if v and "compact" in [p.strip() for p in v.split(",")]}
