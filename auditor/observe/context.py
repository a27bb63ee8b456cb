"""The per-partition and per-log-dir contexts the scan rules judge, and what Kafka would load from them
(log start offset, log end offset, recovery)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from auditor.findings import Location
from auditor.kafka.topics import COMPACTED_TOPICS
from auditor.layout.inventory import LogDirInventory, PartitionDir
from auditor.observe.files import ParsedFile, SnapshotFacts
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

    @property
    def location(self) -> Location:
        return Location(self.logdir.broker, self.logdir.path, self.dir.topic, self.dir.partition)

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
        """True when Kafka's next start runs log recovery on this partition (no clean-shutdown marker; the
        KRaft metadata log is always recovered from offset 0)."""
        return self.is_metadata or not self.logdir.clean_shutdown

    def recovery_floor(self) -> int:
        """Base offset of the first segment recovery re-reads: the one containing the recovery point."""
        rp = 0 if self.is_metadata else (self.logdir.recovery_point or 0)
        bases = [s.base_offset for s in self.dir.log_segments]
        floor = None
        for b in bases:
            if b <= rp:
                floor = b
        return floor if floor is not None else (bases[0] if bases else 0)

    def rebuilt_by_recovery(self, seg: SegmentFacts) -> bool:
        """Kafka re-reads this segment (and rebuilds its indexes) at the next start."""
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
        """Derive the log start offset, the LEO Kafka would load, and what recovery would do."""
        segs = [s for s in self.segments if s.kind == "log"]
        first_base = segs[0].base_offset if segs else 0
        ckpt = self.logdir.log_start
        self.log_start_offset = max(ckpt, first_base) if ckpt is not None else first_base
        if segs:
            last = segs[-1]
            self.leo_on_disk = last.next_offset_raw if last.next_offset_raw is not None else last.base_offset
        else:
            self.leo_on_disk = self.log_start_offset
        self.leo = self.leo_on_disk
        if not self.will_recover or not segs:
            return
        floor = self.recovery_floor()
        self.recovery_start = floor
        self.recovery_segments = [s.base_offset for s in segs if s.base_offset >= floor]
        for seg in segs:
            if seg.base_offset < floor:
                continue
            if seg.truncate_bytes:
                later = [s.base_offset for s in segs if s.base_offset > seg.base_offset]
                leo = seg.recovered_next_offset if seg.recovered_next_offset is not None else seg.base_offset
                self.recovery_truncation = {
                    "segment": os.path.basename(seg.path),
                    "position": seg.valid_end,
                    "bytes": seg.truncate_bytes,
                    "deletedSegments": later,
                    "leo": leo,
                }
                self.leo = leo
                return
        last = segs[-1]
        self.leo = last.recovered_next_offset if last.recovered_next_offset is not None else last.base_offset

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
        return Location(self.broker, self.path, None, None)

    @property
    def meta_value(self) -> MetaProperties | None:
        return self.meta.value if self.meta.ok else None

    @property
    def clean_shutdown_value(self) -> CleanShutdown | None:
        return self.clean_shutdown.value if self.clean_shutdown.ok else None

    def checkpoint(self, name: str) -> OffsetCheckpoint | None:
        parsed = self.checkpoints.get(name)
        return parsed.value if parsed is not None and parsed.ok else None
