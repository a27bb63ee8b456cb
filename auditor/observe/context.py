"""The per-partition and per-log-dir contexts the scan rules judge, and what Kafka would load from them
(log start offset, log end offset, recovery)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from auditor.findings import Location
from auditor.kafka import recovery
from auditor.kafka.topics import COMPACTED_TOPICS
from auditor.layout.inventory import LogDirInventory, PartitionDir
from auditor.observe.files import ParsedFile, SnapshotFacts
from auditor.observe.indexes import txn_index_corrupt
from auditor.observe.segments import SegmentFacts
from parsers.checkpoints import NormalizedEpochs, OffsetCheckpoint
from parsers.dirfiles import CleanShutdown, MetaProperties
from parsers.errors import ParseError

MAX_SUMMARY_EPOCHS = 1000
"""Leader-epoch cache entries listed in a partition's report summary (one per leader change)."""


@dataclass
class LogDirFacts:
    """Log-dir level inputs of a partition: checkpoint values for it and whether the dir was shut down
    cleanly."""

    path: str
    broker: int | None
    clean_shutdown: bool
    hw: int | None = None
    recovery_point: int | None = None
    log_start: int | None = None
    cleaner_offset: int | None = None
    checkpoint_files: dict[str, bool] = field(default_factory=dict)
    expected_topic_id: str | None = None
    metadata_source: str | None = None
    metadata_complete: bool = False
    kraft: bool = False


@dataclass
class PartitionContext:
    """Everything the partition-scope rules look at; segment facts are appended as segments are walked."""

    dir: PartitionDir
    logdir: LogDirFacts
    segments: list[SegmentFacts] = field(default_factory=list)
    kraft_snapshots: list[SegmentFacts] = field(default_factory=list)
    leader_epochs: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    normalized_epochs: NormalizedEpochs | None = None
    epoch_error: ParseError | None = None
    partition_metadata: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    quorum_state: ParsedFile = field(default_factory=lambda: ParsedFile(None))
    producer_snapshots: list[SnapshotFacts] = field(default_factory=list)
    # derived by finalize()
    log_start_offset: int = 0
    leo: int = 0
    leo_on_disk: int = 0
    recovery_start: int | None = None
    recovery_segments: list[int] = field(default_factory=list)
    recovery_truncation: dict[str, Any] | None = None
    load_truncations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def location(self) -> Location:
        return Location(
            broker=self.logdir.broker,
            log_dir=self.logdir.path,
            topic=self.dir.topic,
            partition=self.dir.partition,
        )

    @property
    def is_metadata(self) -> bool:
        return self.dir.is_metadata

    @property
    def compacted(self) -> bool:
        """Compaction is in play: a compacted internal topic, a cleaner checkpoint, or batches with gaps."""
        return (
            self.dir.topic in COMPACTED_TOPICS
            or self.logdir.cleaner_offset is not None
            or any(s.compacted_batches for s in self.segments)
        )

    @property
    def will_recover(self) -> bool:
        """Kafka's next start runs log recovery on this partition (:func:`recovery.will_recover`)."""
        return recovery.will_recover(self.logdir.clean_shutdown, self.is_metadata)

    def recovery_floor(self) -> int:
        """Base offset of the first segment recovery re-reads (:func:`recovery.recovery_floor`)."""
        bases = [s.base_offset for s in self.dir.log_segments]
        return recovery.recovery_floor(bases, self.logdir.recovery_point, self.is_metadata)

    @cached_property
    def unindexed(self) -> frozenset[int]:
        """Base offsets of the segments whose offset index is missing from the directory's listing
        (:attr:`auditor.layout.inventory.PartitionDir.unindexed`): Kafka recovers them at load."""
        return self.dir.unindexed

    @cached_property
    def txn_index_corrupt(self) -> frozenset[int]:
        """Base offsets of the segments whose ``.txnindex`` fails ``TransactionIndex.sanityCheck``
        (:func:`auditor.observe.indexes.txn_index_corrupt`, as ``extract`` reads them): Kafka recovers them
        at load."""
        bases = [s.base_offset for s in self.dir.log_segments if s.txnindex is not None]
        return txn_index_corrupt(self.dir.path, bases) if bases else frozenset()

    def load_reason(self, seg: SegmentFacts) -> str | None:
        """Why ``LogLoader.loadSegmentFiles`` recovers this segment, in words after "the segment's"
        (``auditor.kafka.recovery.LOAD_REASONS``), None when it does not."""
        if seg.kind != "log":
            return None
        if seg.base_offset in self.unindexed:
            return recovery.LOAD_REASONS[recovery.OFFSET_INDEX_MISSING]
        if seg.base_offset in self.txn_index_corrupt:
            return recovery.LOAD_REASONS[recovery.TXN_INDEX_CORRUPT]
        return None

    def recovered_at_load(self, seg: SegmentFacts) -> bool:
        """``LogLoader.loadSegmentFiles`` recovers this segment (its offset index is missing, or its
        transaction index fails its sanity check): it cuts it at its first invalid entry and keeps the later
        segments, clean shutdown or not."""
        return self.load_reason(seg) is not None

    def rebuilt_by_recovery(self, seg: SegmentFacts) -> bool:
        """Log recovery (``LogLoader.recoverLog``) re-reads this segment (and rebuilds its indexes) at the
        next start: from the recovery point, without a clean shutdown. A segment without its offset index, or
        whose transaction index fails its sanity check, is also re-read at load
        (:meth:`recovered_at_load`)."""
        return self.will_recover and seg.base_offset >= self.recovery_floor()

    def epoch_runs(self) -> list[list[int]]:
        """Runs of equal partitionLeaderEpoch over the whole log (merged across segments)."""
        out: list[list[int]] = []
        for seg in self.segments:
            for run in seg.epoch_runs:
                if out and out[-1][0] == run[0]:
                    out[-1][2] = run[2]
                else:
                    out.append(list(run))
        return out

    def finalize(self) -> None:
        """Derive the log start offset, the LEO Kafka would load, and what recovery would do, at load and in
        ``recoverLog`` (:func:`auditor.kafka.recovery.recover`, the same computation as ``audit``'s
        extraction)."""
        loaded = recovery.recover(
            (s.recovery_summary() for s in self.segments if s.kind == "log"),
            clean_shutdown=self.logdir.clean_shutdown,
            recovery_point=self.logdir.recovery_point,
            metadata_log=self.is_metadata,
            log_start_checkpoint=self.logdir.log_start,
            unindexed=self.unindexed,
            txn_index_corrupt=self.txn_index_corrupt,
        )
        self.log_start_offset = loaded.log_start
        self.leo_on_disk = loaded.leo_on_disk
        self.leo = loaded.leo
        self.recovery_start = loaded.floor
        self.recovery_segments = loaded.recovered_segments
        self.recovery_truncation = loaded.truncation.to_dict() if loaded.truncation is not None else None
        self.load_truncations = [t.to_dict() for t in loaded.load_truncations.values()]

    def summary(self) -> dict[str, Any]:
        runs = self.epoch_runs()
        cache = self.leader_epochs.value.entries if self.leader_epochs.ok else None
        return {
            "broker": self.logdir.broker,
            "logDir": self.logdir.path,
            "topic": self.dir.topic,
            "partition": self.dir.partition,
            "directory": self.dir.name,
            "dirKind": self.dir.kind,
            "segments": len([s for s in self.segments if s.kind == "log"]),
            "bytes": sum(s.size for s in self.segments),
            "batches": sum(s.batches for s in self.segments if s.kind == "log"),
            "logStartOffset": self.log_start_offset,
            "logEndOffset": self.leo,
            "logEndOffsetOnDisk": self.leo_on_disk,
            "highWatermark": self.logdir.hw,
            "recoveryPoint": self.logdir.recovery_point,
            "cleanerOffset": self.logdir.cleaner_offset,
            "latestEpoch": runs[-1][0] if runs else None,
            # at most MAX_SUMMARY_EPOCHS entries (a hostile file can hold millions); the count is beside it
            "leaderEpochCache": [list(e) for e in cache[:MAX_SUMMARY_EPOCHS]] if cache is not None else None,
            "leaderEpochCacheEntries": len(cache) if cache is not None else None,
            "topicId": self.partition_metadata.value.topic_id if self.partition_metadata.ok else None,
            "willRecover": self.will_recover and not self.is_metadata,
            "recoverySegments": self.recovery_segments,
            "recoveryTruncation": self.recovery_truncation,
            "loadTruncations": self.load_truncations,
        }


@dataclass
class LogDirContext:
    """Everything the log-dir rules look at."""

    inventory: LogDirInventory
    meta: ParsedFile
    clean_shutdown: ParsedFile
    checkpoints: dict[str, ParsedFile]
    broker: int | None = None
    partitions: list[dict[str, Any]] = field(default_factory=list)
    topic_view: Any = None
    siblings: list[LogDirContext] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.inventory.path

    @property
    def location(self) -> Location:
        return Location(broker=self.broker, log_dir=self.path)

    @property
    def meta_value(self) -> MetaProperties | None:
        return self.meta.value if self.meta.ok else None

    @property
    def clean_shutdown_value(self) -> CleanShutdown | None:
        return self.clean_shutdown.value if self.clean_shutdown.ok else None

    def checkpoint(self, name: str) -> OffsetCheckpoint | None:
        parsed = self.checkpoints.get(name)
        return parsed.value if parsed is not None and parsed.ok else None
