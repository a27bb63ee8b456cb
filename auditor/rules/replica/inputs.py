"""KA690-KA691: replicas the audit could not read completely."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import PartitionReplicas


@rule(
    "KA690",
    "replication.replica-unreadable",
    Severity.WARNING,
    "A replica could not be read completely",
    scope="replicas",
)
def replica_unreadable(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a partition replica whose leader-epoch-checkpoint, partition.metadata or (compacted
    partitions) record contents could not be read while extracting it for the audit. Unreadable segments
    are KA691.
    Why it matters: the comparison of that replica is based on what could be read only.
    What to do: run ``kafka-auditor scan`` on that log directory for the exact file and byte position.
    References: none (auditor behaviour).
    """
    for r in part.replicas:
        if r.error:
            yield Violation(f"replica could not be read completely: {r.error}", broker=r.broker)


@rule(
    "KA691",
    "replication.replica-incomplete",
    Severity.ERROR,
    "Part of a replica's log could not be read; it is compared outside that part only",
    scope="replicas",
)
def replica_incomplete(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a partition replica whose batches could not be read from some offset on: a segment that is
    not a regular file (a directory, FIFO, socket or device named like a segment), that cannot be opened or
    read (permission denied, an I/O error), whose entries do not parse, or a segment that is not the last and
    stops early (a corrupt or torn entry before the next segment's base offset). The finding names the file
    and why, and the offsets from the first unreadable one to the next readable segment (or to the end of the
    log, when the last segment is unreadable: the log end offset is then unknown, at least the base offset
    of that segment). The audit exits with status 2.
    Why it matters: the comparisons skip that span on this replica: no divergence (KA601), no loss (KA710,
    KA711) and no epoch finding (KA604) is derived from it, a replica whose log end offset is unknown gets no
    high-watermark check that needs it (KA701, KA702 as leader), no truncation point (KA602) and no lag
    (KA630). Records there may be committed and held nowhere else. Kafka itself stops on such a log: an I/O
    error on a segment takes the whole log directory offline (KafkaStorageException), and recovery truncates
    at an entry it cannot read and deletes the later segments.
    What to do: copy the file with a tool that reports read errors (ddrescue for a failing disk), fix its type
    or permissions on the copy, and audit the copy; ``kafka-auditor scan`` of the log directory gives the byte
    position. Until then, do not let this replica lead.
    References: KAFKA-4763 (log dir failure handling, KIP-112), KIP-112, ``UnifiedLog`` (``highWatermark``,
    ``logEndOffset``, ``logStartOffset``), ``Partition.maybeIncrementLeaderHW``, ``LogLoader.load``,
    ``LogSegment.recover``.
    """
    for r in part.replicas:
        if r.hole is None:
            continue
        lo, hi = r.hole
        if hi is None:
            where = (
                f"offsets from {lo} to the end of its log could not be read, so its log end offset is "
                f"unknown (at least {r.leo})"
            )
        else:
            where = f"offsets {lo}..{hi - 1} could not be read"
        yield Violation(
            f"replica incomplete from offset {lo}: {where} ({r.unreadable}); it is not compared there and "
            "no divergence, high-watermark or loss finding is derived from that span",
            broker=r.broker,
            offset_start=lo,
            offset_end=hi - 1 if hi is not None else None,
            evidence={
                "unreadable": r.unreadable,
                "unreadableFrom": lo,
                "unreadableTo": hi,
                "logEndOffsetKnown": hi is not None,
            },
        )
