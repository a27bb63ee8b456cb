"""KA620-KA623: what the KRaft metadata says about the partition's leader, and how the reference leader of
the audit was chosen."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity, camel_keys
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import ClusterLeaders, PartitionReplicas


@rule(
    "KA620",
    "replication.unclean-election",
    Severity.WARNING,
    "The KRaft metadata records an unclean leader election",
    scope="replicas",
)
def unclean_election(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: a PartitionChangeRecord that made a replica outside the previous ISR (and outside the
    eligible leader replicas, KIP-966) the leader, or that set leaderRecoveryState to 1 (RECOVERING, KIP-704).
    Why it matters: an unclean leader may lack committed records; everything the other replicas hold above
    its log end offset is truncated when they follow it. It explains a divergence and a truncation loss.
    What to do: see KA710 for the committed records this cost and export them; keep
    unclean.leader.election.enable off where durability matters.
    References: KIP-704, KIP-966, ``PartitionChangeBuilder``, ``LeaderRecoveryState``,
    ``PartitionChangeRecord``.
    """
    if part.kraft is None:
        return
    for u in part.kraft.unclean:
        recovering = " with leaderRecoveryState=1 (RECOVERING)" if u["leader_recovery_state"] == 1 else ""
        isr = ",".join(str(x) for x in u["previous_isr"])
        yield Violation(
            f"unclean leader election in the KRaft metadata (metadata offset {u['offset']}): broker "
            f"{u['leader']} became leader in epoch {u['leader_epoch']}{recovering} (ISR before the "
            f"change: [{isr}]); data above its log end offset on other replicas is truncated",
            broker=u["leader"],
            epoch=u["leader_epoch"],
            evidence={**camel_keys(u), "metadataOffset": u["offset"]},
        )


@rule(
    "KA621",
    "replication.no-current-leader",
    Severity.INFO,
    "The partition has no leader in the KRaft metadata; the last known leader is the reference",
    scope="cluster",
)
def no_current_leader(cluster: ClusterLeaders) -> Iterator[Violation]:
    """
    What it finds: partitions whose latest KRaft state has leader -1 (every replica was down or shut down
    when the copies were taken); the last leader each had is used as the reference replica. One finding
    per cluster (after a full shutdown every partition is offline): the first 20 partitions in the message,
    all of them (last known leader, leader epoch) in the evidence.
    Why it matters: the reference decides what counts as lost; after a clean shutdown of every broker this
    is normal.
    What to do: nothing, unless the last leader's copy is known to be damaged.
    References: ``PartitionRecord``, ``PartitionChangeRecord``, KIP-631, ``PartitionChangeBuilder``,
    ``LeaderRecoveryState``.
    """
    partitions = cluster.offline
    if not partitions:
        return
    listing = ", ".join(f"{p.topic}-{p.partition}: {p.leader}" for p in partitions[:20])
    more = f" and {len(partitions) - 20} more" if len(partitions) > 20 else ""
    yield Violation(
        f"{len(partitions)} partition(s) have no leader in the KRaft metadata (offline, e.g. every replica "
        f"shut down); the last known leader is the reference: {listing}{more}",
        log_dir=None,
        evidence={
            "partitions": [
                {"topic": p.topic, "partition": p.partition, "lastKnownLeader": p.leader, "epoch": p.epoch}
                for p in partitions
            ]
        },
    )


@rule(
    "KA622",
    "replication.leader-not-in-inputs",
    Severity.WARNING,
    "The KRaft leader's copy of the partition is not among the inputs",
    scope="replicas",
)
def leader_not_in_inputs(part: PartitionReplicas) -> Iterator[Violation]:
    """
    What it finds: the KRaft metadata names a leader whose log directory was not given to the audit; the
    replica with the highest latest leader epoch, then the highest log end offset, is used instead.
    Why it matters: findings are relative to the reference replica; without the real leader they describe
    what the most advanced copy at hand lacks, not what Kafka will keep.
    What to do: add the leader's log directory (or its extract) to the audit.
    References: ``PartitionChangeBuilder``, ``LeaderRecoveryState``.
    """
    kraft = part.kraft
    if kraft is not None and part.leader_source == "inferred-kraft-leader-absent":
        choice = kraft.leader if kraft.leader >= 0 else kraft.last_known_leader
        yield Violation(
            f"the KRaft leader {choice} is not among the inputs; broker {part.leader.broker} (highest latest "
            "epoch, then log end offset) is the reference",
            broker=part.leader.broker,
            peer=choice,
        )


@rule(
    "KA623",
    "replication.leader-inferred",
    Severity.INFO,
    "No KRaft metadata: leaders are inferred from the replicas",
    scope="cluster",
)
def leader_inferred(cluster: ClusterLeaders) -> Iterator[Violation]:
    """
    What it finds: the inputs of a cluster include no ``__cluster_metadata`` log, so the current leader of
    every partition is inferred: highest latest leader epoch, then highest log end offset, then lowest
    broker id.
    Why it matters: the inference picks the replica Kafka would most likely keep, but an unclean election or
    a controller decision can differ.
    What to do: add a controller's or broker's metadata log directory to the audit for exact leaders.
    References: ``PartitionRecord``, ``PartitionChangeRecord``, KIP-631, ``PartitionChangeBuilder``.
    """
    if cluster.leader_sources == {"inferred"}:
        yield Violation(
            "no __cluster_metadata in the inputs: the current leader of every partition is inferred (highest "
            "latest leader epoch, then highest log end offset, then lowest broker id)"
        )
