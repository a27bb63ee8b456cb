"""One task per partition replica directory: what a ``scan`` worker, an ``audit`` executor or the
single-process ``extract`` needs to read it. The same type for every command, JSON-serialisable (Spark
ships tasks as JSON strings; scan's process pool pickles them)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field


@dataclass
class PartitionTask:
    """One partition directory of one log dir with the log-dir level facts about it (checkpoint entries,
    clean shutdown, and for ``scan`` the KRaft view of its topic). JSON-serialisable."""

    cluster: str
    """cluster.id of meta.properties, or the label the operator gave."""
    log_dir: str
    broker: int | None
    """node.id (broker.id for a ZooKeeper-era log dir); None when meta.properties names none."""
    dir_name: str
    topic: str
    partition: int
    hw: int | None = None
    """This partition's entry in replication-offset-checkpoint (``ReplicaManager``)."""
    recovery_point: int | None = None
    """Its entry in recovery-point-offset-checkpoint (``LogManager``)."""
    log_start_checkpoint: int | None = None
    """Its entry in log-start-offset-checkpoint (``LogManager``)."""
    cleaner_offset: int | None = None
    """Its entry in cleaner-offset-checkpoint (``LogCleanerManager``)."""
    clean_shutdown: bool = False
    """The log dir holds ``.kafka_cleanshutdown`` (``LogLoader`` skips recovery)."""
    verify_crc: bool = False
    """Recompute every batch CRC, also in the segments Kafka's loader trusts (which the extraction otherwise
    reads header by header, ``auditor.kafka.recovery.LogRecovery.trusts``)."""
    compacted: bool = False
    """audit: compaction is in play for the partition on some replica
    (:func:`auditor.kafka.planning.plan_tasks`)."""
    size: int = 0
    """Bytes of segments, to hand out the biggest partitions first."""
    checkpoint_files: dict[str, bool] = field(default_factory=dict)
    """scan: offset checkpoint file name -> whether it parsed."""
    kraft: bool = False
    """scan: the log dir's meta.properties is version 1 (KRaft)."""
    expected_topic_id: str | None = None
    """scan: the topic ID the KRaft metadata gives the topic (``metadata_source``, complete or not)."""
    metadata_source: str | None = None
    metadata_complete: bool = False
    dir_kind: str = "live"
    """``live``, or ``future``/``delete``/``stray`` (a directory Kafka does not serve: ``audit`` reads only
    its replica row, never compares it)."""
    directory_id: str | None = None
    """``directory.id`` of the log dir's ``meta.properties`` (KIP-858)."""

    @property
    def path(self) -> str:
        """The partition directory."""
        return os.path.join(self.log_dir, self.dir_name)

    def to_dict(self) -> dict:
        return asdict(self)
