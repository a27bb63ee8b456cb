"""KA710-KA711: follower records the current leader lacks, over the lost runs Spark counts
(``auditor.spark.compare.lost_runs``): committed records are lost when the follower truncates, the rest is
a divergent uncommitted tail. Committed records are plain data and the data of transactions committed in the
follower's own log; aborted and open transaction data and COMMIT/ABORT markers are named, not counted (the
markers are KA712's, ``auditor.rules.replica.transactions``)."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import LostRun


def _located(run: LostRun, message: str) -> Violation:
    """The violation of a lost run: the epoch when the run has one, and how the run was counted."""
    epoch = run.epochs[0] if len(run.epochs) == 1 else None
    evidence = {
        "epochs": run.epochs,
        "leaderSource": run.leader_source,
        "committedHighWatermark": run.committed_hw,
        "batches": run.batches,
    }
    # transactional partitions: what the run truncates besides the records it counts
    for attr, key in (
        ("aborted_records", "abortedRecords"),
        ("open_records", "openRecords"),
        ("markers", "markers"),
    ):
        if getattr(run, attr):
            evidence[key] = getattr(run, attr)
    return run.violation(message, run.lo, run.hi, epoch, evidence=evidence)


@rule(
    "KA710",
    "replication.committed-loss",
    Severity.CRITICAL,
    "Committed records held by a follower are absent from or different on the current leader",
    scope="loss",
)
def committed_loss(run: LostRun) -> Iterator[Violation]:
    """
    What it finds: records on a follower, in batches that differ from the leader's batch at the same base
    offset (or that the leader lacks), below the highest high watermark checkpointed by a replica holding
    that same batch: they were committed. Counted in records and bytes, with the replica still holding them.
    On transactional topics only the records a read_committed consumer could read count: plain data and
    data of transactions whose COMMIT marker follows in the follower's log; aborted data, data of still open
    transactions and COMMIT/ABORT markers in the same offsets are named in the message, not counted (lost
    markers: KA712).
    Why it matters: when the follower fetches from the current leader it truncates to the divergence point
    (OffsetsForLeaderEpoch) and these committed, acknowledged records are gone for good.
    What to do: before restarting the follower, export the records with ``--export-lost DIR`` (JSONL and
    Parquet) and produce them again if the application needs them.
    References: KIP-101, KIP-279, KAFKA-1211, KAFKA-7128, spec §17.6.
    """
    if run.kind == "committed" and run.records > 0:
        also = f"; {run.not_counted}" if run.not_counted else ""
        yield _located(
            run,
            f"{run.records} committed records (offsets {run.lo}..{run.hi}; {run.bytes} bytes in "
            f"{run.batches} batches; high watermark {run.committed_hw} was checkpointed by a replica "
            f"holding them) are on broker {run.broker} but absent from or different on the current leader "
            f"{run.leader} ({run.leader_source}): they are lost when broker {run.broker} truncates{also}",
        )


@rule(
    "KA711",
    "replication.divergent-uncommitted-tail",
    Severity.WARNING,
    "A follower holds a divergent tail above every high watermark",
    scope="loss",
)
def uncommitted_tail(run: LostRun) -> Iterator[Violation]:
    """
    What it finds: batches on a follower that differ from the leader's (or that the leader lacks) at or
    above the high watermarks of the replicas holding them. Records are counted as KA710 counts them
    (aborted and open transaction data and markers are named apart).
    Why it matters: this is what truncation is for; the records were never committed, but acks=1 producers
    may have been told they were written.
    What to do: check whether acks=1 producers wrote them; export them with ``--export-lost`` if needed.
    References: KIP-101, spec §17.6.
    """
    if run.kind == "uncommitted":
        also = f"; {run.not_counted}" if run.not_counted else ""
        yield _located(
            run,
            f"divergent uncommitted tail: {run.records} records (offsets {run.lo}..{run.hi}, at or above "
            f"the high watermarks of the replicas holding them) on broker {run.broker} are not on "
            f"the current leader {run.leader} and will be truncated{also}",
        )
