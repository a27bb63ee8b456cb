"""KA701-KA704: checkpointed high watermarks against the replica's own log and the current leader's
(``auditor.kafka.hw``, spec §17.1)."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity
from auditor.kafka.hw import hw_above_leo, hw_below_log_start
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import PartitionReplicas


@rule(
    "KA701",
    "replication.hw-above-own-leo",
    Severity.ERROR,
    "A replica's checkpointed high watermark is above its own log end offset",
    scope="replicas",
)
def hw_above_own_leo(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a replica whose replication-offset-checkpoint high watermark is above the log end offset
    of its files (the next offset after the last complete batch).
    Why it matters: the high watermark is the committed offset consumers could read up to; this replica
    once knew that offsets below it were committed, but it no longer holds them (lost unflushed tail, torn
    write, stale checkpoint after a disk problem). Kafka clamps the HW at load and the evidence disappears.
    What to do: find the replica that still holds those offsets (KA710) and make sure it leads.
    References: KIP-101, KAFKA-7128, KAFKA-2143, KAFKA-9087, ``UnifiedLog`` (``highWatermark``,
    ``logEndOffset``, ``logStartOffset``), ``Partition.maybeIncrementLeaderHW``.
    """
    if part.is_metadata:
        return
    for r in part.replicas:
        if hw_above_leo(r.hw, r.leo) and r.leo_known:
            yield Violation(
                f"checkpointed high watermark {r.hw} is above this replica's log end offset {r.leo}: "
                f"{r.hw - r.leo} offsets once reported committed are not in its log",
                broker=r.broker,
                offset_start=r.leo,
                offset_end=r.hw - 1,
                evidence={"highWatermark": r.hw, "logEndOffset": r.leo, "logStartOffset": r.log_start},
            )


@rule(
    "KA702",
    "replication.hw-above-leader-leo",
    Severity.ERROR,
    "A replica's high watermark is above the current leader's log end offset",
    scope="replicas",
)
def hw_above_leader_leo(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a follower whose checkpointed high watermark is above the log end offset of the current
    leader.
    Why it matters: every offset below a high watermark was committed (in the ISR and visible to consumers);
    the leader lacks part of it, so committed records are missing from the copy Kafka will keep and serve.
    What to do: see KA710 for the records and the replica still holding them; export them before that
    replica truncates (``--export-lost``), and investigate how the leader was elected (KA620).
    References: KIP-101, KIP-966, KAFKA-7128, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``,
    ``logStartOffset``), ``Partition.maybeIncrementLeaderHW``, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    leader = part.leader
    if part.is_metadata or not leader.leo_known:
        return
    for r in part.followers:
        if hw_above_leo(r.hw, leader.leo):
            yield part.against_leader(
                r,
                f"high watermark {r.hw} of broker {r.broker} is above the log end offset {leader.leo} of the "
                f"current leader {leader.broker} ({part.leader_source}): committed data is missing from the "
                "leader",
                leader.leo,
                r.hw - 1,
                evidence={
                    "highWatermark": r.hw,
                    "logEndOffset": r.leo,
                    "leaderLogEndOffset": leader.leo,
                    "leaderHighWatermark": leader.hw,
                    "leaderSource": part.leader_source,
                },
            )


@rule(
    "KA703",
    "replication.hw-below-log-start",
    Severity.WARNING,
    "A replica's checkpointed high watermark is below its log start offset",
    scope="replicas",
)
def hw_below_log_start_offset(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a high watermark checkpoint below the replica's log start offset.
    Why it matters: Kafka clamps it up at load (benign), but it shows a stale checkpoint or a log start that
    moved without the HW following, e.g. a fully truncated and restarted log (KAFKA-9491).
    What to do: usually nothing; compare with the other replicas' high watermarks.
    References: KAFKA-9491, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``, ``logStartOffset``),
    ``Partition.maybeIncrementLeaderHW``.
    """
    if part.is_metadata:
        return
    for r in part.replicas:
        if hw_below_log_start(r.hw, r.log_start):
            yield Violation(
                f"checkpointed high watermark {r.hw} is below the log start offset {r.log_start}",
                broker=r.broker,
                offset_start=r.hw,
                offset_end=r.log_start - 1,
                evidence={"highWatermark": r.hw, "logStartOffset": r.log_start},
            )


@rule(
    "KA704",
    "replication.follower-hw-above-leader",
    Severity.WARNING,
    "A follower's high watermark is above the current leader's high watermark",
    scope="replicas",
)
def follower_hw_above_leader(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a follower whose checkpointed high watermark is higher than the leader's.
    Why it matters: followers learn the high watermark from the leader, so theirs trails; a higher one means
    the leader changed to a replica that had not seen the same commit point (an unclean or fast failover),
    or the leader lost data.
    What to do: check KA702/KA710 of the same partition.
    References: KIP-101, KAFKA-7128, ``UnifiedLog`` (``highWatermark``, ``logEndOffset``, ``logStartOffset``),
    ``Partition.maybeIncrementLeaderHW``.
    """
    leader = part.leader
    if part.is_metadata or leader.hw is None:
        return
    for r in part.followers:
        if r.hw is not None and r.hw > leader.hw:
            yield part.against_leader(
                r,
                f"follower high watermark {r.hw} is above the high watermark {leader.hw} of the current "
                f"leader {leader.broker}",
                leader.hw,
                r.hw - 1,
                evidence={"highWatermark": r.hw, "leaderHighWatermark": leader.hw},
            )
