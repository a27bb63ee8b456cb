"""KA720-KA723: consumer group offsets against the partitions' logs after an incident.

The subject of every rule is one :class:`GroupCommit`: a committed offset of a (group, topic, partition) as
the coordinator loads it from the leader of its ``__consumer_offsets`` partition, with what the audit knows
of the data partition (its current leader's log end offset and log start offset, the runs of offsets a
truncating replica holds and the leader lacks, the leader epochs its history had) -- or, for KA723, a commit
as a truncating follower of the offsets partition holds it, with what the leader holds instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from auditor.findings import Severity
from auditor.kafka.groups import Commit
from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.rules.forward import Forward
from auditor.rules.registry import Violation, rule


@dataclass(frozen=True)
class LostSpan:
    """Offsets ``lo..hi`` of a partition that replica ``broker`` holds and its current leader lacks."""

    broker: int
    lo: int
    hi: int
    kind: str  # committed | uncommitted (auditor.spark.pass_loss.lost_runs)
    records: int | None = None
    log_dir: str | None = None
    lineage_epoch: int | None = None  # the current leader's leader epoch at ``lo``: the new lineage's there

    def read_by(self, commit: Commit) -> bool:
        """The commit was made on the lineage that lost these offsets: its leader epoch (KIP-320, the epoch of
        the last record the group consumed) is below the epoch the current leader's data has at ``lo``. A
        commit at or above it was made reading the current leader and lost nothing; a commit without an
        epoch cannot tell and counts as the old lineage's."""
        lineage = self.lineage_epoch
        return commit.leader_epoch < 0 or lineage is None or commit.leader_epoch < lineage

    def violation(self, message: str, peer: int | None, first: int, last: int, **kw) -> Violation:
        """A violation of the replica holding the span (``broker`` and its log dir) about offsets
        ``first..last``, ``peer`` the replica it is compared with."""
        return Violation(
            message,
            broker=self.broker,
            log_dir=self.log_dir,
            peer=peer,
            offset_start=first,
            offset_end=last,
            **kw,
        )


@dataclass(frozen=True)
class GroupCommit:
    """One committed offset and what the audit knows around it (see the module docstring)."""

    cluster: str | None
    commit: Commit
    offsets_partition: int
    coordinator: int | None  # broker whose replica of the offsets partition the commit was read from
    leader: int | None = None  # the data partition's current leader (None: not among the inputs)
    leader_source: str | None = None
    leader_leo: int | None = None
    log_start: int | None = None
    lost: tuple[LostSpan, ...] = ()
    epochs: frozenset[int] | None = None  # leader epochs the partition's history had (None: unknown)
    epoch_horizon: int | None = None  # highest epoch that history covers (caches, batches, KRaft)
    epoch_sources: tuple[str, ...] = ()
    # KA723: the commit as a truncating follower of the offsets partition holds it
    lost_on: LostSpan | None = None
    coordinator_commit: Commit | None = None  # what the offsets partition's leader holds for the key
    evidence: dict[str, Any] = field(default_factory=dict)

    topic = Forward[str]("commit.topic")
    partition = Forward[int]("commit.partition")

    def where(self) -> str:
        c = self.commit
        return f"group {c.group!r} on {c.topic}-{c.partition}"

    def evidence_dict(self, **more: Any) -> dict[str, Any]:
        """The evidence of a finding about this commit, camelCase like every output; ``more`` (camelCase
        keyword names) adds the rule's own keys."""
        c = self.commit
        return {
            "group": c.group,
            "committedOffset": c.offset,
            "committedLeaderEpoch": c.leader_epoch,
            "commitTimestamp": c.commit_timestamp,
            "commitMetadata": c.metadata,
            "offsetsPartition": self.offsets_partition,
            "commitRecordOffset": c.record_offset,
            "coordinator": self.coordinator,
            "leaderSource": self.leader_source,
            **self.evidence,
            **more,
        }


@rule(
    "KA720",
    "group.offset-above-leo",
    Severity.WARNING,
    "A consumer group's committed offset is above the current leader's log end offset",
    scope="groups",
)
def offset_above_leo(g: GroupCommit) -> Iterator[Violation]:
    """
    What it finds: a committed offset of a consumer group (the latest one the group coordinator loads from
    ``__consumer_offsets``) above the log end offset of the partition's current leader.
    Why it matters: the group consumed offsets the current leader no longer has (an unclean election, a
    truncation, a restored disk). Its next fetch gets OFFSET_OUT_OF_RANGE and the consumer resets per
    ``auto.offset.reset``: ``earliest`` re-reads the whole log from the log start offset, ``latest`` jumps to
    the log end offset at the time of the reset (records appended before the reset are skipped), ``none``
    fails. New records will reuse the offsets between the log end offset and the committed offset.
    What to do: reset the group's offset deliberately (``kafka-consumer-groups --reset-offsets``) to the
    position the application needs, after checking which records it already processed.
    References: KIP-320, KIP-101, ``auto.offset.reset``, ``UnifiedLog.logEndOffset``,
    ``ReplicaManager.handleOffsetOutOfRangeError``.
    """
    c, leo = g.commit, g.leader_leo
    if g.lost_on is not None or leo is None or c.offset <= leo:
        return
    start = g.log_start if g.log_start is not None else 0
    yield Violation(
        f"{g.where()} committed offset {c.offset} is above the log end offset {leo} of the current "
        f"leader {g.leader}: the consumer gets OFFSET_OUT_OF_RANGE and resets; with "
        f"auto.offset.reset=earliest it re-reads {leo - start} records (offsets {start}..{leo - 1}), with "
        f"latest it resumes at the log end offset and skips what is appended before the reset; the "
        f"{c.offset - leo} offsets {leo}..{c.offset - 1} will be reused by new records",
        broker=g.leader,
        peer=g.coordinator,
        offset_start=leo,
        offset_end=c.offset - 1,
        epoch=c.leader_epoch if c.leader_epoch >= 0 else None,
        records=c.offset - leo,
        evidence=g.evidence_dict(leaderLogEndOffset=leo, logStartOffset=start, rereadEarliest=leo - start),
    )


@rule(
    "KA721",
    "group.offset-in-lost-range",
    Severity.ERROR,
    "A consumer group consumed records that are lost or replaced on the current leader",
    scope="groups",
)
def offset_in_lost_range(g: GroupCommit) -> Iterator[Violation]:
    """
    What it finds: a committed offset past the start of a run of offsets that a replica which will truncate
    holds and the current leader lacks or holds differently (a lost or divergent range): the group consumed
    records from the old leader that no longer exist. Records are counted as the loss is (transaction-aware:
    a run holding only COMMIT/ABORT markers or aborted records gave the group nothing and is not reported).
    Why it matters: the group processed N records that are gone (downstream effects without a source record)
    and, resuming at its committed offset, it will never read the M different records the current leader now
    holds at those offsets.
    A commit whose leader epoch (KIP-320) is at or above the epoch of the current leader's data at the first
    lost offset was made on the new lineage and is not at risk; only commits from the old lineage (or
    without an epoch) are reported.
    What to do: export the lost records (``audit --export-lost``), and re-read the leader's records at those
    offsets (reset the group to the first lost offset) if the application must process them.
    References: KIP-101, KIP-279, KIP-320, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    c = g.commit
    if g.lost_on is not None:
        return
    for span in g.lost:
        if c.offset <= span.lo or span.records == 0:
            continue  # nothing consumed there, or only transaction markers and aborted records
        if not span.read_by(c):
            continue  # committed reading the current leader's lineage (KIP-320 leader epoch)
        last = min(c.offset - 1, span.hi)
        offsets = last - span.lo + 1
        if span.records is None:
            consumed, what = offsets, f"{offsets} offsets"
        elif last >= span.hi:
            consumed, what = span.records, f"{span.records} records"
        else:
            consumed = min(offsets, span.records)
            what = f"up to {consumed} records"
        leo = g.leader_leo
        replaced = max(0, min(c.offset, leo) - span.lo) if leo is not None else None
        skip = (
            f"and will skip the {replaced} different records now at offsets "
            f"{span.lo}..{span.lo + replaced - 1} on the leader"
            if replaced
            else "and the leader holds no records at those offsets yet"
        )
        yield span.violation(
            f"{g.where()} committed offset {c.offset}: the group consumed {what} (offsets {span.lo}..{last}, "
            f"{span.kind} on broker {span.broker}) that the current leader {g.leader} lacks or holds "
            f"differently; they are lost when broker {span.broker} truncates, {skip}",
            g.leader,
            span.lo,
            last,
            epoch=c.leader_epoch if c.leader_epoch >= 0 else None,
            records=consumed,
            evidence=g.evidence_dict(
                lostFrom=span.lo, lostTo=span.hi, kind=span.kind, skipped=replaced, leaderLogEndOffset=leo
            ),
        )


@rule(
    "KA722",
    "group.offset-unknown-epoch",
    Severity.WARNING,
    "A consumer group's commit carries a leader epoch the partition never had",
    scope="groups",
)
def offset_unknown_epoch(g: GroupCommit) -> Iterator[Violation]:
    """
    What it finds: a committed offset whose leader epoch (KIP-320, the epoch of the last record the group
    consumed) is above every leader epoch of the partition's history: no replica's leader-epoch cache or
    batches hold it, and the KRaft metadata never assigned it (only where that history reaches the epoch).
    Why it matters: the group read from a partition this cluster does not know (a recreated topic with the
    same name, a restored or swapped disk, a cluster whose metadata was rebuilt); the consumer's
    OffsetsForLeaderEpoch validation fails and it resets or raises a LogTruncationException.
    What to do: check which cluster and topic incarnation the group consumed from, then reset its offsets.
    References: KIP-320, KIP-101, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    c = g.commit
    if g.lost_on is not None or c.leader_epoch < 0 or g.epochs is None or g.epoch_horizon is None:
        return
    if c.leader_epoch in g.epochs or c.leader_epoch <= g.epoch_horizon:
        return
    yield Violation(
        f"{g.where()} committed offset {c.offset} with leader epoch {c.leader_epoch}, but the partition's "
        f"history ({', '.join(g.epoch_sources) or 'caches'}) never went above epoch {g.epoch_horizon}",
        broker=g.leader,
        peer=g.coordinator,
        offset_start=c.offset,
        offset_end=c.offset,
        epoch=c.leader_epoch,
        evidence=g.evidence_dict(knownEpochs=sorted(g.epochs), epochHorizon=g.epoch_horizon),
    )


@rule(
    "KA723",
    "group.commit-lost",
    Severity.ERROR,
    "A consumer group's commit exists only on a __consumer_offsets replica that will truncate",
    scope="groups",
)
def commit_lost(g: GroupCommit) -> Iterator[Violation]:
    """
    What it finds: the latest commit of a (group, topic, partition) on a follower of its
    ``__consumer_offsets`` partition, in a run of offsets that follower holds and the offsets partition's
    current leader lacks: the follower truncates it away and the coordinator knows only the leader's view.
    Why it matters: the group resumes from the older offset the leader holds (re-reading the records in
    between: duplicates downstream) or, when the leader holds none, resets per ``auto.offset.reset``.
    What to do: commit the offset again for the group (``kafka-consumer-groups --reset-offsets --to-offset``)
    before its consumers restart, or make the application idempotent for the re-read range.
    References: KIP-101, KIP-279, ``GroupMetadataManager`` loading, ``OffsetMetadataManager.replay``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    span, c = g.lost_on, g.commit
    if span is None or c.same_commit(g.coordinator_commit):
        return
    older = g.coordinator_commit
    if older is None:
        then = "the leader holds no commit for it: the group resets per auto.offset.reset"
        reread = None
    elif older.offset <= c.offset:
        reread = c.offset - older.offset
        then = f"the group resumes from offset {older.offset} held by the leader, re-reading {reread} offsets"
    else:
        reread = None
        then = f"the leader holds offset {older.offset} instead"
    yield span.violation(
        f"{g.where()}: commit of offset {c.offset} (record {c.record_offset} of __consumer_offsets-"
        f"{g.offsets_partition}) exists only on broker {span.broker}, which truncates it (offsets "
        f"{span.lo}..{span.hi} are not on the leader {g.coordinator}); {then}",
        g.coordinator,
        c.record_offset,
        c.record_offset,
        topic=OFFSETS_TOPIC,
        partition=g.offsets_partition,
        records=reread,
        evidence=g.evidence_dict(
            dataTopic=c.topic,
            dataPartition=c.partition,
            leaderCommittedOffset=older.offset if older is not None else None,
            lostFrom=span.lo,
            lostTo=span.hi,
        ),
    )
