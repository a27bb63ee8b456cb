"""KA630: a follower behind the current leader, over the lag rows Spark counts."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.findings import Severity
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import LagRow

REPLICA_LAG_TIME_MAX_MS = 30_000
"""Kafka's default ``replica.lag.time.max.ms`` (30 s since Kafka 2.5, KIP-537): a follower that has not
caught up with the leader's log end offset for that long leaves the ISR (``Partition.maybeShrinkIsr``).
KA630 is a warning beyond it."""


@rule(
    "KA630",
    "replication.replica-lag",
    Severity.INFO,
    "A follower is behind the current leader (its log is a prefix of the leader's)",
    scope="lag",
)
def replica_lag(lag: LagRow) -> Iterator[Violation]:
    """
    What it finds: a follower whose log end offset is below the current leader's while its log is a prefix of
    the leader's (no divergence, KA601): the records, bytes and batches the leader holds from the follower's
    log end offset on, the leader epoch at that offset, and whether the KRaft metadata has the follower in
    the ISR. Warning when the metadata has it out of the ISR, or when the leader's newest batch is more than
    replica.lag.time.max.ms (Kafka's default, 30 s) newer than the first batch the follower lacks (batch max
    timestamps: CreateTime unless the topic uses LogAppendTime, so approximate); info otherwise (a copy of a
    running cluster always shows followers a few batches behind). Not reported for a replica whose log end
    offset is unknown (KA691).
    Why it matters: nothing is lost, the follower catches up by fetching; but a follower out of the ISR does
    not count towards min.insync.replicas, and if the leader fails now an unclean election of this follower
    would lose these records (they would become KA710). A follower far behind after a crash (SIGKILL,
    power loss) is the usual explanation of a shrunk ISR.
    What to do: nothing if the broker is running and the lag shrinks; otherwise check the follower's fetcher
    (replica fetcher threads, network, disk) and keep unclean.leader.election.enable off while it is out of
    the ISR.
    References: KIP-16 (ISR by time, replica.lag.time.max.ms), KIP-537 (30 s default), KIP-966,
    ``Partition.maybeShrinkIsr``, ``Partition.getOutOfSyncReplicas``.
    """
    behind_ms = None
    if lag.first_timestamp is not None and lag.last_timestamp is not None:
        behind_ms = max(0, lag.last_timestamp - lag.first_timestamp)
    out_of_isr = lag.in_isr is False
    slow = behind_ms is not None and behind_ms > REPLICA_LAG_TIME_MAX_MS
    why = []
    if lag.in_isr is not None:
        why.append(("out of" if out_of_isr else "in") + " the ISR in the KRaft metadata")
    if behind_ms is not None:
        why.append(f"the leader's newest batch is {behind_ms / 1000:.1f} s newer than the first one it lacks")
    yield lag.violation(
        f"follower {lag.broker} is {lag.records} records ({lag.bytes} bytes, offsets "
        f"{lag.start}..{lag.end - 1}"
        + (f", from leader epoch {lag.epoch}" if lag.epoch is not None else "")
        + f") behind the current leader {lag.leader} ({lag.leader_source}); its log is a prefix of the "
        "leader's, so nothing is lost: it catches up by fetching" + (f" ({'; '.join(why)})" if why else ""),
        lag.start,
        lag.end - 1,
        lag.epoch,
        severity=Severity.WARNING if out_of_isr or slow else None,
        evidence={
            "followerLogEndOffset": lag.start,
            "leaderLogEndOffset": lag.end,
            "batches": lag.batches,
            "inIsr": lag.in_isr,
            "isr": lag.isr,
            "behindMs": behind_ms,
            "replicaLagTimeMaxMs": REPLICA_LAG_TIME_MAX_MS,
            "leaderSource": lag.leader_source,
        },
    )
