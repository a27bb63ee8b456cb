"""Cases of ``auditor/rules/replica/kraft.py`` (KA620-KA623): the KRaft metadata against the replicas: a
leader elected outside the ISR or recovering, an offline partition, a leader not among the inputs, a
cluster without metadata."""

from __future__ import annotations

from pathlib import Path

from auditor.spark.partition_rules import PartitionInput
from tests.rules.harness import fire, silent
from tests.rules.replica.builders import (
    CACHES,
    KRAFT,
    Audit,
    in_sync,
    metadata_row,
    one,
    partition_record,
    replica,
)


def partition_change(leader: int, isr: list[int] | None, seq: int, recovery_state: int = -1) -> dict:
    """A ``PartitionChangeRecord`` of ``t-0`` (leader -2: unchanged)."""
    return metadata_row(
        "PARTITION_CHANGE_RECORD", seq, leader=leader, isr=isr, leader_recovery_state=recovery_state
    )


@fire("KA620")
def leader_elected_outside_the_isr(tmp: Path, mp) -> Audit:
    """The ISR shrank to [1], then broker 2 became leader: an unclean election."""
    metadata = [*KRAFT, partition_change(-2, [1], 1), partition_change(2, [2], 2)]
    return one(*in_sync(), caches=CACHES, metadata=metadata)


@fire("KA620")
def leader_recovering(tmp: Path, mp) -> Audit:
    """Broker 1 re-elected with leaderRecoveryState RECOVERING (KIP-704)."""
    return one(*in_sync(), caches=CACHES, metadata=[*KRAFT, partition_change(1, [1], 1, recovery_state=1)])


@silent("KA620", "KA621", "KA622")
def clean_leader_change(tmp: Path, mp) -> Audit:
    """Leadership moves from 1 to 2, an ISR member: clean."""
    return one(*in_sync(), caches=CACHES, metadata=[*KRAFT, partition_change(2, None, 1)])


@fire("KA621")
def partition_offline(tmp: Path, mp) -> Audit:
    """Every replica shut down: leader -1, broker 2 was the last leader."""
    metadata = [*KRAFT, partition_change(2, None, 1), partition_change(-1, [2], 2)]
    return one(*in_sync(), caches=CACHES, metadata=metadata)


@fire("KA622")
def kraft_leader_not_among_the_inputs(tmp: Path, mp) -> Audit:
    """The metadata names broker 4 as leader; only brokers 1-3 were given."""
    return one(*in_sync(), caches=CACHES, metadata=[partition_record(4, [1, 2, 3, 4], [1, 2, 3, 4])])


@silent("KA622")
def no_kraft_metadata(tmp: Path, mp) -> Audit:
    """No metadata at all: the leader is inferred, which is KA623, not KA622."""
    return one(*in_sync(), caches=CACHES)


@fire("KA623")
def cluster_without_metadata(tmp: Path, mp) -> Audit:
    """Two partitions, neither with KRaft metadata: every leader is inferred."""
    other = [dict(r, partition=1) for r in in_sync()]
    return Audit([PartitionInput(replicas=in_sync()), PartitionInput(replicas=other)])


@silent("KA623")
def cluster_with_metadata(tmp: Path, mp) -> Audit:
    """The KRaft metadata names the leader of the partition; its ``__cluster_metadata`` replicas (leader
    always inferred there) do not count."""
    meta = [dict(replica(b, 10), topic="__cluster_metadata") for b in (100, 101)]
    return Audit([PartitionInput(replicas=in_sync(), metadata=KRAFT), PartitionInput(replicas=meta)])
