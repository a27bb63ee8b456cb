"""KA710-KA711: follower records the current leader lacks, over the lost runs Spark counts
(``pass_loss.lost_runs``): committed records are lost when the follower truncates, the rest is
a divergent uncommitted tail. Committed records are plain data and the data of transactions committed in the
follower's own log; aborted and open transaction data and COMMIT/ABORT markers are named, not counted (the
markers are KA712's, ``auditor.rules.replica.transactions``)."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import LostRun
from auditor.text import iso_ms


def _located(run: LostRun, message: str) -> Violation:
    """The violation of a lost run: the epoch when the run has one, and how the run was counted."""
    epoch = run.epochs[0] if len(run.epochs) == 1 else None
    evidence = {
        "epochs": run.epochs,
        "leaderSource": run.leader_source,
        "committedHighWatermark": run.committed_hw,
        "batches": run.batches,
    }
    if run.producer_ids:
        evidence["producerIds"] = list(run.producer_ids)
    if run.first_timestamp is not None:
        evidence["firstTimestamp"] = run.first_timestamp
        evidence["lastTimestamp"] = run.last_timestamp
    # transactional partitions: what the run truncates besides the records it counts
    for attr, key in (
        ("aborted_records", "abortedRecords"),
        ("open_records", "openRecords"),
        ("markers", "markers"),
    ):
        if getattr(run, attr):
            evidence[key] = getattr(run, attr)
    if run.span != (run.lo, run.hi):  # the offsets the follower's truncation removes, markers included
        evidence["truncatedOffsets"] = list(run.span)
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
    References: KIP-101, KIP-279, KAFKA-1211, KAFKA-7128, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    if run.kind == "committed" and run.records > 0:
        also = f"; {run.not_counted}" if run.not_counted else ""
        if run.span != (run.lo, run.hi):
            also += f" (offsets {run.span[0]}..{run.span[1]} truncated in all)"
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
    "Records acknowledged only by the old leader, never committed, are truncated",
    scope="loss",
)
def uncommitted_tail(run: LostRun) -> Iterator[Violation]:
    """
    What it finds: batches on a follower that differ from the current leader's (or that it lacks) at or
    above the high watermark of every replica holding them: no replica ever committed them. Records are
    counted as KA710 counts them (aborted and open transaction data and markers are named apart), with the
    producer ids and the time window (batch timestamps) that wrote them.
    Why it matters: a clean election never loses committed data, and these records were never committed:
    the leader of their epoch appended them and then lost leadership before any follower in the ISR copied
    them (a crash, a partition). Producers with acks=all got an error or a timeout for them and retried;
    producers with acks=1 (or acks=0) were told they were written, so for them these are acknowledged writes
    that Kafka truncates: possible only with acks=0/1, never with acks=all.
    What to do: find out which producers used acks=1 (the producer ids and the time window help); export the
    records with ``--export-lost`` if the application needs them and produce them again; use acks=all with
    ``min.insync.replicas`` >= 2 where acknowledged writes must survive a leader crash.
    References: KIP-101, KIP-279, ``acks``, ``min.insync.replicas``, ``Partition.maybeIncrementLeaderHW``.
    """
    if run.kind != "uncommitted":
        return
    also = f"; {run.not_counted}" if run.not_counted else ""
    epochs = ", ".join(str(e) for e in run.epochs)
    who = ""
    if run.producer_ids:
        who = f"; producer ids {', '.join(str(p) for p in run.producer_ids)}"
    if run.first_timestamp is not None and run.last_timestamp is not None:
        who += f", written {iso_ms(run.first_timestamp)} to {iso_ms(run.last_timestamp)}"
    yield _located(
        run,
        f"{run.records} records (offsets {run.lo}..{run.hi}) on broker {run.broker} were acknowledged only "
        f"by the old leader (leader epoch {epochs}), never committed: above the high watermark of every "
        f"replica holding them, possible only with acks=0/1 (acks=1 producers were told they were "
        f"written); the current leader {run.leader} lacks them and broker {run.broker} truncates them"
        f"{also}{who}",
    )
