"""KA4xx: a partition's offsets against each other (spec §17.1, §17.3): high watermark, log end offset (LEO),
recovery point, log start offset, cleaner checkpoint, and what the next start's log recovery will do.

The LEO used here is the one Kafka would load: after the truncation recovery performs when the log dir has no
``.kafka_cleanshutdown``, and after the load-time recovery of a segment without its offset index or whose
transaction index fails its sanity check (the evidence holds the LEO on disk as well).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from auditor.findings import Severity
from auditor.kafka import hw as hw_relations
from auditor.observe.context import LogDirContext, PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.registry import Violation, rule

REPLICATION_CKPT = "replication-offset-checkpoint"
MAX_CUTS = 20
"""Load-time truncations (one per segment recovered at load) kept in a finding's evidence."""


def _tracked(part: PartitionContext) -> bool:
    """Live and -future logs are checkpointed; -delete, -stray and the KRaft log are not."""
    return part.dir.kind in ("live", "future")


def _offsets(part: PartitionContext) -> dict:
    return {
        "highWatermark": part.logdir.hw,
        "logEndOffset": part.leo,
        "logEndOffsetOnDisk": part.leo_on_disk,
        "logStartOffset": part.log_start_offset,
        "recoveryPoint": part.logdir.recovery_point,
        **({"recoveryTruncation": part.recovery_truncation} if part.recovery_truncation else {}),
        **({"loadTruncations": part.load_truncations[:MAX_CUTS]} if part.load_truncations else {}),
    }


def _checkpoint_violation(
    part: PartitionContext,
    message: str,
    checkpoint: str,
    *,
    between: tuple[int, int],
    expected: str,
    found: int,
    **evidence,
) -> Violation:
    """A finding on the partition's entry in the log dir's ``checkpoint`` file: offsets ``between`` (end
    excluded) are where that entry and the log disagree; ``evidence`` adds to the partition's offsets."""
    start, end = between
    return Violation(
        message,
        file=os.path.join(part.logdir.path, checkpoint),
        offset_start=start,
        offset_end=end - 1,
        expected=expected,
        found=found,
        evidence={**_offsets(part), **evidence},
    )


@rule(
    "KA401",
    "partition.hw-above-leo",
    Severity.ERROR,
    "The checkpointed high watermark is above the log end offset",
    scope="partition",
)
def hw_above_leo(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a partition whose high watermark in ``replication-offset-checkpoint`` is above its log end
    offset (after the truncation recovery would apply).
    Why it matters: the high watermark is the offset up to which records were replicated to the whole ISR and
    exposed to consumers (committed). This replica once knew a HW of H but holds data only up to its LEO:
    committed records in [LEO, H) are gone from this copy — a lost unflushed tail after an OS crash or power
    loss, a torn write truncated by recovery, disk corruption, or an unclean-election truncation. If this
    replica was the leader or in the ISR, those records may be lost for good. Kafka clamps the HW to the LEO
    at load and the evidence disappears.
    What to do: before restarting, compare with the other replicas (``kafka-auditor audit``) to find a replica
    that still holds [LEO, H); make sure it becomes the leader (do not enable unclean leader election). Export
    the range if no replica holds it completely.
    References: KIP-101, KAFKA-1211, KAFKA-7128, KAFKA-2143, KAFKA-9087, ``UnifiedLog.updateHighWatermark``,
    ``Partition.maybeIncrementLeaderHW``.
    """
    hw = part.logdir.hw
    if not _tracked(part) or not hw_relations.hw_above_leo(hw, part.leo):
        return
    yield _checkpoint_violation(
        part,
        f"high watermark {hw} is above the log end offset {part.leo}: {hw - part.leo} committed offsets "
        f"({part.leo}..{hw - 1}) are missing from this replica"
        + (
            f" (on disk the log reaches {part.leo_on_disk}; recovery would truncate it)"
            if part.leo_on_disk != part.leo
            else ""
        ),
        REPLICATION_CKPT,
        between=(part.leo, hw),
        expected=f"high watermark <= {part.leo}",
        found=hw,
        missingOffsets=hw - part.leo,
    )


@rule(
    "KA402",
    "partition.hw-below-log-start",
    Severity.WARNING,
    "The checkpointed high watermark is below the log start offset",
    scope="partition",
)
def hw_below_log_start(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a high watermark in ``replication-offset-checkpoint`` below the partition's log start
    offset (the larger of ``log-start-offset-checkpoint`` and the first segment's base offset).
    Why it matters: Kafka never moves the log start offset above the high watermark ("Cannot increment the log
    start offset ... since it is larger than the high watermark"); a lower HW on disk is a stale checkpoint
    or the trace of a log that was fully truncated and restarted at a higher offset without its HW being
    updated (KAFKA-9491). Kafka clamps it at load, but followers of a leader with this state may stall.
    What to do: compare with the other replicas' high watermarks (``audit``); normally nothing.
    References: KAFKA-9491, KAFKA-6975, ``UnifiedLog.maybeIncrementLogStartOffset``.
    """
    hw = part.logdir.hw
    if not _tracked(part) or not hw_relations.hw_below_log_start(hw, part.log_start_offset):
        return
    yield _checkpoint_violation(
        part,
        f"high watermark {hw} is below the log start offset {part.log_start_offset}",
        REPLICATION_CKPT,
        between=(hw, part.log_start_offset),
        expected=f"high watermark >= {part.log_start_offset}",
        found=hw,
    )


@rule(
    "KA403",
    "partition.recovery-point-above-leo",
    Severity.ERROR,
    "The recovery point is above the log end offset",
    scope="partition",
)
def recovery_point_above_leo(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a recovery point in ``recovery-point-offset-checkpoint`` above the partition's log end
    offset.
    Why it matters: the recovery point is the offset below which all data was flushed to disk (fsync); it can
    never exceed the log end offset unless flushed data was lost afterwards (disk or filesystem failure, a
    segment deleted by hand), or a recovery-point bug advanced it past unflushed data (KAFKA-10101). Recovery
    trusts everything below the recovery point, so corrupt data there is never re-checked.
    What to do: treat the partition's tail as suspect: compare with the other replicas (``audit``) and check
    the filesystem for errors.
    References: KAFKA-10101, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``, ``logStartOffset``),
    ``Partition.maybeIncrementLeaderHW``, ``LogLoader.load``, ``LogSegment.recover``.
    """
    rp = part.logdir.recovery_point
    leo = part.leo_on_disk
    if rp is None or not _tracked(part) or rp <= leo:
        return
    yield _checkpoint_violation(
        part,
        f"recovery point {rp} is above the log end offset {leo}: flushed offsets {leo}..{rp - 1} are missing",
        "recovery-point-offset-checkpoint",
        between=(leo, rp),
        expected=f"recovery point <= {leo}",
        found=rp,
    )


@rule(
    "KA404",
    "partition.log-start-above-leo",
    Severity.CRITICAL,
    "The log start offset is above the log end offset: Kafka will delete every segment",
    scope="partition",
)
def log_start_above_leo(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``log-start-offset-checkpoint`` value above the partition's log end offset.
    Why it matters: at load Kafka deletes all segments of such a partition ("Deleting all segments because
    logEndOffset (X) is smaller than logStartOffset Y. This could happen if segment files were deleted from
    the file system.") and starts an empty log at the log start offset: whatever this replica holds is
    destroyed by the next start.
    What to do: do not start the broker on this directory before copying it; find out whether segments were
    deleted by hand or the checkpoint is corrupt; restore the missing segments or fix the checkpoint line.
    References: KAFKA-6975, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``, ``logStartOffset``),
    ``Partition.maybeIncrementLeaderHW``, ``LogLoader.load``, ``LogSegment.recover``.
    """
    ls = part.logdir.log_start
    if ls is None or not _tracked(part) or ls <= part.leo:
        return
    yield _checkpoint_violation(
        part,
        f"log start offset {ls} is above the log end offset {part.leo}; at the next start Kafka deletes all "
        f"{len(part.dir.log_segments)} segments of this partition",
        "log-start-offset-checkpoint",
        between=(part.leo, ls),
        expected=f"log start offset <= {part.leo}",
        found=ls,
    )


@rule(
    "KA405",
    "partition.no-clean-shutdown",
    Severity.WARNING,
    "The log dir was not shut down cleanly: recovery will run at the next start",
    scope="logdir",
)
def no_clean_shutdown(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a log dir holding partitions but no ``.kafka_cleanshutdown`` marker. The finding counts
    the partitions, segments and bytes recovery will re-read (details per partition in KA406).
    Why it matters: the marker is written at the end of a clean shutdown; without it the broker crashed, was
    killed, or the directory was copied while the broker was running (a crash-consistent copy). At the next
    start Kafka re-reads every segment from the recovery point on, truncates at the first invalid batch,
    rebuilds indexes and producer state — and the evidence of torn tails, stale indexes and lost data
    disappears.
    What to do: keep an untouched copy of the log dir before starting the broker; review the other findings
    (torn tails, HW above LEO) first.
    References: KAFKA-10471, KAFKA-15375, KIP-966, ``CleanShutdownFileHandler``, ``LogManager.loadLogs``,
    ``LogLoader.load``, ``LogSegment.recover``.
    """
    data = [p for p in ld.partitions if p.get("dirKind") in ("live", "future")]
    if ld.inventory.clean_shutdown is not None or not data:
        return
    recovering = [p for p in data if p.get("recoverySegments")]
    segments = sum(len(p["recoverySegments"]) for p in recovering)
    yield Violation(
        f"no .kafka_cleanshutdown: at the next start Kafka recovers {len(recovering)} of {len(data)} "
        "partitions "
        f"({segments} segments)",
        file=os.path.join(ld.path, ".kafka_cleanshutdown"),
        expected="a .kafka_cleanshutdown marker (written by a clean shutdown)",
        found="absent",
        evidence={
            "partitions": len(data),
            "recoveringPartitions": len(recovering),
            "recoveredSegments": segments,
        },
    )


@rule(
    "KA406",
    "partition.recovery-will-run",
    Severity.INFO,
    "Log recovery will re-read these segments at the next start",
    scope="partition",
)
def recovery_will_run(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: for each partition of a log dir without ``.kafka_cleanshutdown``, the segments Kafka's
    recovery will re-read: from the segment containing the recovery point to the last one, and where it
    would truncate (if anything is invalid). With or without the marker, the segments whose offset index
    is missing or whose transaction index fails its sanity check, which Kafka recovers at load, and where
    that load-time recovery truncates them.
    Why it matters: recovery (``LogLoader.recoverLog``) validates every batch of those segments, truncates at
    the first invalid one, deletes all later segments, rebuilds the offset, time and transaction indexes, the
    leader epoch cache and producer state. Segments below the recovery point are trusted as flushed and never
    re-checked. Before that, ``LogLoader.loadSegmentFiles`` recovers every segment whose offset index file is
    missing ("Could not find offset index file ..., recovering segment and rebuilding index files") or whose
    ``.txnindex`` fails ``TransactionIndex.sanityCheck`` ("Found a corrupted index file ..."), even after a
    clean shutdown: it truncates that segment at its first invalid batch and keeps the later ones.
    What to do: nothing by itself; it tells which data the restart may change. Keep a copy before starting.
    References: KAFKA-10471, KAFKA-10101, ``LogLoader.load``, ``LogLoader.loadSegmentFiles``,
    ``LogSegment.sanityCheck``, ``LogSegment.recover``.
    """
    if part.is_metadata or not _tracked(part):
        return
    if part.will_recover and part.recovery_segments:
        yield _recover_log(part)
    at_load = [s for s in part.segments if part.recovered_at_load(s)]
    if at_load:
        yield _recovered_at_load(part, at_load)


def _recover_log(part: PartitionContext) -> Violation:
    """What ``LogLoader.recoverLog`` re-reads and cuts."""
    names = [
        os.path.basename(s.path)
        for s in part.segments
        if s.kind == "log" and s.base_offset in part.recovery_segments
    ]
    size = sum(s.size for s in part.segments if s.kind == "log" and s.base_offset in part.recovery_segments)
    rp = part.logdir.recovery_point
    text = (
        f"recovery will re-read {len(names)} segment(s) from offset {part.recovery_start} "
        f"({'recovery point ' + str(rp) if rp is not None else 'no recovery point checkpointed: from 0'}), "
        f"{size} bytes"
    )
    if part.recovery_truncation:
        t = part.recovery_truncation
        text += f", truncating {t['bytes']} bytes of {t['segment']} at position {t['position']}"
        if t["deletedSegments"]:
            text += f" and deleting {len(t['deletedSegments'])} later segment(s)"
    return Violation(
        text,
        offset_start=part.recovery_start,
        evidence={"segments": names, "bytes": size, **_offsets(part)},
    )


def _recovered_at_load(part: PartitionContext, segments: list[SegmentFacts]) -> Violation:
    """What ``LogLoader.loadSegmentFiles`` re-reads and cuts: the segments without their offset index and
    those whose transaction index fails its sanity check; the finding points at the first cut (segment and
    byte position) when there is one."""
    cuts = part.load_truncations
    names = [os.path.basename(s.path) for s in segments]
    unindexed = [n for n, s in zip(names, segments, strict=True) if s.base_offset in part.unindexed]
    corrupt = [n for n in names if n not in unindexed]
    groups = [
        f"{len(group)} segment(s) {what} ({', '.join(group[:3])}{', ...' if len(group) > 3 else ''})"
        for group, what in (
            (unindexed, "have no offset index"),
            (corrupt, "have a transaction index that fails Kafka's sanity check"),
        )
        if group
    ]
    text = (
        f"load-time recovery: {' and '.join(groups)}, so Kafka re-reads them at load and rebuilds their "
        "indexes"
    )
    where: dict = {}
    if cuts:
        first = cuts[0]
        text += (
            f", truncating {first['bytes']} bytes of {first['segment']} at position {first['position']} "
            "(the later segments are kept)"
        )
        if len(cuts) > 1:
            text += f" and {len(cuts) - 1} other segment(s)"
        where = {
            "file": os.path.join(part.dir.path, first["segment"]),
            "position": first["position"],
            "offset_start": first["nextOffset"],
        }
    return Violation(
        text,
        **where,
        evidence={
            "segmentsWithoutOffsetIndex": unindexed[:MAX_CUTS],
            "segmentsWithCorruptTxnIndex": corrupt[:MAX_CUTS],
            "segmentCount": len(names),
            **_offsets(part),
        },
    )


@rule(
    "KA407",
    "partition.cleaner-checkpoint-out-of-range",
    Severity.WARNING,
    "The cleaner checkpoint is outside the log",
    scope="partition",
)
def cleaner_out_of_range(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``cleaner-offset-checkpoint`` value (first dirty offset of a compacted partition) above
    the log end offset or below the log start offset, or above the high watermark.
    Why it matters: the cleaner only cleans below the high watermark (last stable offset) and never past the
    log end. Above the LEO means the log lost its tail after cleaning (KAFKA-3330); above the HW means the
    cleaner ran past committed data (KAFKA-13194); below the log start is a stale value after retention or
    DeleteRecords (KAFKA-6266). The cleaner resets such values with a warning.
    What to do: compare with the other replicas (``audit``) when above the LEO or HW; otherwise nothing.
    References: KAFKA-3330, KAFKA-6266, KAFKA-13194, ``LogManager.checkpointLogStartOffsets``,
    ``UnifiedLog.maybeIncrementLogStartOffset``.
    """
    co = part.logdir.cleaner_offset
    if co is None or not _tracked(part):
        return
    hw = part.logdir.hw
    problem = None
    if co > part.leo:
        problem = f"above the log end offset {part.leo}"
    elif hw is not None and co > hw:
        problem = f"above the high watermark {hw}"
    elif co < part.log_start_offset:
        problem = f"below the log start offset {part.log_start_offset}"
    upper = part.leo if hw is None else min(part.leo, hw)
    if problem:
        yield Violation(
            f"cleaner checkpoint {co} is {problem}",
            file=os.path.join(part.logdir.path, "cleaner-offset-checkpoint"),
            offset_start=co,
            found=co,
            expected=f"{part.log_start_offset} <= cleaner offset <= {upper}",
            evidence={**_offsets(part), "cleanerOffset": co},
        )


@rule(
    "KA408",
    "partition.hw-missing",
    Severity.INFO,
    "The partition has no high watermark in replication-offset-checkpoint",
    scope="partition",
)
def hw_missing(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a live partition directory with no line in the log dir's ``replication-offset-checkpoint``
    (when that file exists and is readable).
    Why it matters: without a checkpointed high watermark Kafka starts the replica with HW 0 (clamped to the
    log start offset) until it hears from the leader; the partition was created after the last checkpoint,
    or the checkpoint lost entries (KAFKA-1647: followers then truncated to 0).
    What to do: nothing unless other replicas disagree; compare with ``audit``.
    References: KAFKA-1647, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``, ``logStartOffset``),
    ``Partition.maybeIncrementLeaderHW``.
    """
    if part.dir.kind != "live" or part.logdir.hw is not None:
        return
    if not part.logdir.checkpoint_files.get(REPLICATION_CKPT):
        return
    yield Violation(
        f"{part.dir.name} has no entry in {REPLICATION_CKPT}",
        file=os.path.join(part.logdir.path, REPLICATION_CKPT),
        evidence=_offsets(part),
    )
