"""KA624-KA626: the KRaft timeline of a partition against the replicas' leader-epoch caches and batches."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity, camel_keys
from auditor.kafka.timeline import cache_disagreements, epoch_lineup, isr_intervals, never_assigned
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import EpochRange, PartitionReplicas


def _lineup(part: PartitionReplicas):
    ranges = {
        b: [
            {
                "epoch": g.epoch,
                "first": g.first,
                "last": g.last,
                "first_timestamp": g.first_timestamp,
                "last_timestamp": g.last_timestamp,
            }
            for g in rs
        ]
        for b, rs in part.ranges.items()
    }
    return epoch_lineup(part.kraft, part.caches, ranges)


def _epoch_batches(part: PartitionReplicas, epoch: int, leader: int) -> tuple[int, list[EpochRange]]:
    """The batches of ``epoch`` as the leader of that epoch holds them, else as any replica does (they were
    all written by that leader): the broker they were read from and its ranges."""
    own = [g for g in part.ranges.get(leader, []) if g.epoch == epoch]
    if own:
        return leader, own
    for broker, rs in sorted(part.ranges.items()):
        found = [g for g in rs if g.epoch == epoch]
        if found:
            return broker, found
    return leader, []


def _iso(ms: int | None) -> str:
    if ms is None:
        return "?"
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


@rule(
    "KA624",
    "kraft.isr-below-min-insync",
    Severity.WARNING,
    "Records were appended while the ISR was below min.insync.replicas",
    scope="replicas",
)
def isr_below_min_insync(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a stretch of the KRaft history in which the partition's ISR was smaller than the topic's
    min.insync.replicas (the topic config as it stood then, else a dynamic broker or cluster default config
    record, else Kafka's default 1; a static server.properties value is not in the metadata) while its
    leader appended batches. Records are lined up with the stretch by leader epoch: if the ISR stayed below
    the minimum from the change that assigned the epoch to the epoch's end, every batch of that epoch (in
    the leader's log, else in any replica's) counts. If the ISR shrank within the epoch, the batches' max
    timestamps are compared with the metadata batch timestamps of the changes that begin and end the
    stretch: batches whose timestamps fall inside it count (producer CreateTime against the controller's
    clock: an approximation; without batch timestamps such a stretch is not reported).
    Why it matters: with fewer in-sync replicas than min.insync.replicas a producer with acks=all is refused
    (NOT_ENOUGH_REPLICAS), so whatever was appended then was acknowledged with acks=0 or acks=1 and existed
    on fewer replicas than the durability setting asks for: an unclean election or a disk loss erases it.
    What to do: check which producers use acks=1/0 on this topic; compare the offsets named here with the
    loss findings (KA710); restore the missing replicas to the ISR before relying on the data.
    References: KIP-966 (eligible leader replicas), Kafka docs min.insync.replicas and acks,
    ``Partition.checkEnoughReplicasReachOffset``, ``PartitionChangeBuilder``.
    """
    if part.kraft is None:
        return
    for iv in isr_intervals(part.kraft, part.configs, part.topic):
        if len(iv["isr"]) >= iv["min_insync"]:
            continue
        epoch, leader = iv["leader_epoch"], iv["leader"]
        source, batches = _epoch_batches(part, epoch, leader)
        if not batches:
            continue
        if iv["whole_epoch"]:
            if not iv["starts_epoch"]:
                continue  # reported once, with the stretch that began the epoch
            inside = batches
            how = "during the whole epoch"
        else:
            lo, hi = iv["from_timestamp"], iv["to_timestamp"]
            if lo is None:
                continue

            def within(g: EpochRange, lo=lo, hi=hi) -> bool:
                return (
                    g.last_timestamp is not None
                    and g.last_timestamp >= lo
                    and (hi is None or (g.first_timestamp is not None and g.first_timestamp < hi))
                )

            inside = [g for g in batches if within(g)]
            if not inside:
                continue
            how = f"between {_iso(lo)} and {_iso(hi) if hi is not None else 'the end of the history'}"
        first, last = min(g.first for g in inside), max(g.last for g in inside)
        records = sum(g.records for g in inside)
        yield Violation(
            f"ISR {iv['isr']} below min.insync.replicas={iv['min_insync']} in leader epoch {epoch} (leader "
            f"{leader}, from metadata offset {iv['from_offset']}) {how}, while the leader appended offsets "
            f"{first}..{last} ({records} records): acknowledged with acks=0/1 on fewer replicas than asked",
            broker=leader,
            offset_start=first,
            offset_end=last,
            epoch=epoch,
            records=records if iv["whole_epoch"] else None,
            evidence={
                "isr": iv["isr"],
                "minInsyncReplicas": iv["min_insync"],
                "metadataOffset": iv["from_offset"],
                "metadataTimestamp": iv["from_timestamp"],
                "nextMetadataOffset": iv["to_offset"],
                "nextMetadataTimestamp": iv["to_timestamp"],
                "wholeEpoch": iv["whole_epoch"],
                "batchesFromBroker": source,
                "batchTimestamps": [
                    inside[0].first_timestamp,
                    max((g.last_timestamp for g in inside if g.last_timestamp is not None), default=None),
                ],
            },
        )


@rule(
    "KA625",
    "kraft.epoch-never-assigned",
    Severity.WARNING,
    "A replica holds a leader epoch the KRaft metadata never assigned to the partition",
    scope="replicas",
)
def epoch_never_assigned(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a leader epoch in a replica's leader-epoch-checkpoint, or in the partitionLeaderEpoch of
    its batches, that no PartitionRecord or PartitionChangeRecord of the partition's replayed KRaft history
    assigned. Only epochs the history covers are checked: from the first epoch it shows (a history that
    starts at a snapshot knows nothing of earlier epochs; epochs a snapshot skips are unknown too) to the
    latest; an epoch newer than the latest only when the replica's batches of it carry timestamps before
    the history's last change of the partition (a metadata copy that ends early knows nothing of later
    epochs; producer CreateTime against the controller's clock).
    Why it matters: every epoch a broker leads in comes from the controller. An epoch the controller never
    assigned means the replica's files come from another cluster or another incarnation of the topic (a
    topic deleted and re-created with the same name), were edited or restored from a backup, or the
    metadata log given to the audit is not this cluster's. Truncation by OffsetsForLeaderEpoch then works
    from wrong premises.
    What to do: check the topic ID in partition.metadata against the metadata's; check where the log
    directory came from; do not let this replica become leader until explained.
    References: KIP-101, KIP-279, KIP-595 (KRaft), ``PartitionChangeRecord``, ``LeaderEpochFileCache.assign``.
    """
    if part.kraft is None:
        return
    for ln in never_assigned(part.kraft, _lineup(part)):
        for broker in sorted(set(ln.caches) | set(ln.batches)):
            where = []
            if broker in ln.caches:
                where.append(f"its leader-epoch cache (from offset {ln.caches[broker]})")
            if broker in ln.batches:
                f, la = ln.batches[broker]
                where.append(f"its batches at offsets {f}..{la}")
            span = ln.batches.get(broker)
            yield Violation(
                f"leader epoch {ln.epoch} is in {' and '.join(where)} but the KRaft metadata never assigned "
                f"it to the partition (it assigned {sorted(part.kraft.epochs_assigned())})",
                broker=broker,
                epoch=ln.epoch,
                offset_start=span[0] if span else ln.caches.get(broker),
                offset_end=span[1] if span else None,
                evidence={
                    "epoch": ln.epoch,
                    "cacheStart": ln.caches.get(broker),
                    "batches": list(span) if span else None,
                    "assignedEpochs": sorted(part.kraft.epochs_assigned()),
                    "firstKnownEpoch": part.kraft.first_known_epoch,
                },
            )


@rule(
    "KA626",
    "kraft.epoch-leader-disagrees",
    Severity.WARNING,
    "A replica's leader-epoch cache starts an epoch elsewhere than that epoch's leader did",
    scope="replicas",
)
def epoch_leader_disagrees(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: for a leader epoch whose leader per the KRaft metadata is L, a replica whose
    leader-epoch cache starts that epoch at another offset than L's own cache does (L wrote that entry at
    its log end offset when it became leader). A start moved up to the replica's log start offset (Kafka
    truncates the cache from the start with the log) is not reported.
    Why it matters: followers copy the epoch start from the leader's batches; a different start means the
    replica holds different data around that offset than the epoch's leader wrote (a divergence that
    OffsetsForLeaderEpoch resolves with these caches, possibly at the wrong offset), or that its cache was
    rewritten.
    What to do: compare the two replicas around both offsets (the divergence findings, ``dump``); trust the
    leader's copy of that epoch unless it was itself truncated.
    References: KIP-101, KIP-279, ``LeaderEpochFileCache.assign``, ``PartitionChangeRecord``.
    """
    if part.kraft is None:
        return
    starts = {r.broker: r.log_start for r in part.replicas}
    for d in cache_disagreements(_lineup(part), starts):
        yield Violation(
            f"broker {d['broker']}'s leader-epoch cache starts epoch {d['epoch']} at offset {d['start']}, "
            f"but the epoch's leader {d['leader']} (per KRaft metadata) started it at {d['leader_start']}",
            broker=d["broker"],
            peer=d["leader"],
            epoch=d["epoch"],
            offset_start=min(d["start"], d["leader_start"]),
            offset_end=max(d["start"], d["leader_start"]),
            evidence=camel_keys(d),
        )
