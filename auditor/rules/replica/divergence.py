"""KA601-KA604: replicas that hold different data, and what the leader-epoch caches say about it."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity, camel_keys
from auditor.kafka.epochs import loaded_cache
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import PartitionReplicas


@rule(
    "KA601",
    "replication.divergence",
    Severity.ERROR,
    "Two replicas of a partition hold different data at the same offset",
    scope="replicas",
)
def divergence(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: for a pair of replicas, the first offset inside their common range [max(log start
    offsets), min(log end offsets)) where they disagree: a batch missing on one side, different batch
    boundaries, a different CRC, or the same CRC with a different partitionLeaderEpoch (the CRC does not cover
    it). Compacted partitions are compared record by record (offset, key, value, headers); an offset present
    on one replica only is benign below the other's cleaner offset. Error when committed data differs: the
    offset is below both checkpointed high watermarks, or below the one of a replica that is not the leader;
    warning when only the leader committed its data there (the other replica's data was never committed and
    is truncated: e.g. an acks=0/1 tail after a clean election) or when it is above both.
    Why it matters: followers copy the leader's batches byte for byte, so two in-sync replicas never differ.
    A difference means one replica kept data the other truncated or never had: an unclean leader election,
    a leader crash with acks=1 data, HW-based truncation (pre-KIP-101) or a Kafka bug (KAFKA-6361,
    KAFKA-6880, KAFKA-7164). Whatever the follower holds from this offset on will be truncated when it
    follows the current leader.
    What to do: look at KA710/KA711 for what is lost, and at the epoch timeline of the partition; before
    restarting brokers, export the records the current leader lacks (``--export-lost``).
    References: KIP-101, KIP-279, KIP-320, KAFKA-1211, KAFKA-6361, KAFKA-6880,
    ``LeaderEpochFileCache.endOffsetFor``, ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    for (a, b), d in sorted(part.divergences.items()):
        ra, rb = part.replica(a), part.replica(b)
        if ra is None or rb is None:
            continue
        severity, wording = _committed_sides(part, ra, rb, d.offset)
        yield Violation(
            f"replicas on brokers {a} and {b} diverge at offset {d.offset} (common range [{d.lo}, {d.hi})); "
            + wording,
            severity=severity,
            broker=a,
            peer=b,
            offset_start=d.offset,
            evidence={
                "mode": d.mode,
                "highWatermark": {a: ra.hw, b: rb.hw},
                "logEndOffset": {a: ra.leo, b: rb.leo},
                "atOffset": camel_keys(d.detail),
            },
        )


def _committed_sides(part: PartitionReplicas, ra, rb, offset: int) -> tuple[Severity | None, str]:
    """Severity and wording of a divergence at ``offset`` by which side committed its data there (the offset
    is below that replica's checkpointed high watermark). Data only the leader's lineage committed is what
    the others truncate to: the replica that will truncate never committed its data there, so no committed
    data differs (an acks=0/1 tail of a crashed leader after a clean election)."""

    def committed(r) -> bool:
        return r.hw is not None and offset < r.hw

    ca, cb = committed(ra), committed(rb)
    if ca and cb:
        return None, "below both checkpointed high watermarks: committed data differs"
    if not ca and not cb:
        return Severity.WARNING, "above both high watermarks: data no replica committed differs"
    keeper, other = (ra, rb) if ca else (rb, ra)
    lb = part.leader.broker
    agrees = part.divergence(keeper.broker, lb) if keeper.broker != lb else None
    same_as_leader = agrees is None or agrees.offset > offset
    if keeper.broker == lb or (same_as_leader and part.divergence(other.broker, lb) is not None):
        role = " (the leader)" if keeper.broker == lb else ", like the leader,"
        return Severity.WARNING, (
            f"broker {keeper.broker}{role} committed its data there, broker {other.broker}'s data was "
            f"never committed (above its high watermark {other.hw}) and is truncated when it follows"
        )
    return None, (
        f"broker {keeper.broker} committed its data there (below its high watermark {keeper.hw}), broker "
        f"{other.broker} holds different data: committed data differs"
    )


@rule(
    "KA602",
    "replication.epoch-truncation-mismatch",
    Severity.ERROR,
    "Kafka's epoch-based truncation point differs from the real divergence point",
    scope="replicas",
)
def epoch_truncation(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a follower for which the OffsetsForLeaderEpoch exchange with the current leader (run on
    the two leader-epoch caches exactly as the follower fetcher does, KIP-101/KIP-279) ends at an offset
    different from the first offset where the two logs really differ. Error when Kafka would truncate above
    the divergence (divergent data below the truncation point survives), info when below (it refetches
    identical data).
    Why it matters: epoch-based truncation is what keeps replicas consistent since Kafka 0.11; when the
    caches do not describe the logs (lost or stale leader-epoch-checkpoint, epochs missing after an unclean
    shutdown, KAFKA-7415 back-to-back elections), the follower keeps divergent data and replicas stay
    inconsistent for good, silently.
    What to do: compare the leader-epoch-checkpoint files with the batches (``kafka-auditor scan``, KA1xx),
    and repair the follower by deleting its copy of the partition so it refetches everything.
    References: KIP-101, KIP-279, KAFKA-6361, KAFKA-7415, KAFKA-14704, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    lb = part.leader.broker
    for broker, t in sorted(part.truncations.items()):
        d = part.divergence(broker, lb)
        if d is None or t.offset == d.offset:
            continue
        unsafe = t.offset > d.offset
        yield part.against_leader(
            part.replica(broker),
            f"Kafka's epoch-based truncation (OffsetsForLeaderEpoch against leader {lb}) would truncate "
            f"broker {broker} to offset {t.offset}, but the replicas first differ at offset {d.offset}: "
            + (
                "divergent data below the truncation point would survive (KIP-101/KIP-279 failure class)"
                if unsafe
                else "it would truncate and refetch identical data"
            ),
            min(t.offset, d.offset),
            max(t.offset, d.offset),
            severity=None if unsafe else Severity.INFO,
            evidence={
                "truncationOffset": t.offset,
                "divergence": d.offset,
                "fallback": t.fallback,
                "steps": camel_keys(t.steps),
                "leaderCache": t.leader_cache,
                "followerCache": t.follower_cache,
            },
        )


@rule(
    "KA603",
    "replication.epoch-start-mismatch",
    Severity.WARNING,
    "Replicas disagree on the start offset of a leader epoch",
    scope="replicas",
)
def epoch_start(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a leader epoch present in the leader-epoch caches of several replicas with different start
    offsets (entries at or beyond a replica's log end offset and entries moved up to its log start offset are
    ignored: Kafka writes and trims them routinely).
    Why it matters: an epoch starts at one offset, the first one its leader wrote; two replicas that disagree
    have different data around that offset (``LeaderEpochFileCache.assign``).
    What to do: read the epoch timeline of the partition in the report; the divergence finding (KA601) of
    the same partition says where the data differs.
    References: KIP-101, KAFKA-6361, KAFKA-7164, ``LeaderEpochFileCache.assign``,
    ``LeaderEpochFileCache.truncateFromEndAsyncFlush``, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    if part.is_metadata:
        return
    starts: dict[int, list[tuple[int, int, int]]] = {}
    for r in part.replicas:
        # the cache as Kafka loads it (entries at or past the LEO dropped, the first moved up to log start)
        for e, s in loaded_cache(part.caches.get(r.broker, []), r.log_start, r.leo):
            starts.setdefault(e, []).append((r.broker, s, r.log_start))
    for epoch, entries in sorted(starts.items()):
        low = min(s for _b, s, _ls in entries)
        odd = [b for b, s, ls in entries if s != low and not (s == ls and ls > low)]
        if odd:
            text = ", ".join(f"broker {b} at {s}" for b, s, _ls in sorted(entries))
            yield Violation(
                f"replicas disagree on where leader epoch {epoch} starts: {text}",
                broker=odd[0],
                log_dir=None,  # several replicas: the evidence lists them
                offset_start=low,
                offset_end=max(s for _b, s, _ls in entries),
                epoch=epoch,
                evidence={"starts": {b: s for b, s, _ls in entries}},
            )


@rule(
    "KA604",
    "replication.epoch-unknown-to-leader",
    Severity.WARNING,
    "A replica holds data written in a leader epoch the current leader never had",
    scope="replicas",
)
def epoch_unknown_to_leader(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: batches on a follower stamped with a partitionLeaderEpoch that is neither in the current
    leader's leader-epoch cache nor on any of its batches.
    Why it matters: the leader of that epoch wrote data no other replica of the current lineage copied (an
    acks=1 tail of a crashed leader, a zombie leader): the follower will truncate it away.
    What to do: check whether those records were acknowledged (acks=1 producers got a success); export them
    with ``--export-lost`` if they matter.
    References: KIP-101, KIP-279, KAFKA-6361, KAFKA-6880.
    """
    if part.is_metadata:
        return
    leader = part.leader
    known = {e for e, _s in part.caches.get(leader.broker, [])} | {
        g.epoch for g in part.ranges.get(leader.broker, [])
    }
    for r in part.followers:
        for g in sorted(part.ranges.get(r.broker, []), key=lambda g: g.epoch):
            if g.epoch < 0 or g.epoch in known or g.last < leader.log_start:
                continue
            if leader.overlaps_hole(g.first, g.last):
                continue  # the leader's batches there could not be read
            yield part.against_leader(
                r,
                f"broker {r.broker} holds {g.records} records (offsets {g.first}..{g.last}) written in "
                f"leader epoch {g.epoch}, an epoch the current leader {leader.broker} never had: they will "
                "be truncated when it follows the leader",
                g.first,
                g.last,
                epoch=g.epoch,
                records=g.records,
                bytes=g.bytes,
                evidence={"batches": g.batches, "leaderEpochs": sorted(known)},
            )
