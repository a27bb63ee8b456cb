"""Cases of ``auditor/rules/replica/groups.py`` (KA720-KA723): committed consumer-group offsets against the
replicas of the partitions they name: above the log end offset, inside a lost range, of an epoch the
metadata never had, or only on a truncating follower of ``__consumer_offsets``."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.kafka.groups import partition_for
from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.spark.groups import GroupInputs, group_findings
from tests.rules.harness import fire, silent

GROUP = "billing"


P = partition_for(GROUP, 50)


T0 = 1_795_000_000_000


def commit_row(
    broker: int,
    record_offset: int,
    offset: int,
    *,
    epoch: int = 0,
    group: str = GROUP,
    topic: str = "orders",
    partition: int = 0,
    tombstone: bool = False,
    txn_state: str | None = "plain",
) -> dict:
    """A ``rows.COMMIT`` row of broker ``broker``'s replica of the group's offsets partition."""
    return {
        "cluster": "c",
        "topic": OFFSETS_TOPIC,
        "partition": partition_for(group, 50),
        "broker": broker,
        "log_dir": f"/data/b{broker}",
        "offset": record_offset,
        "live": True,
        "tombstone": tombstone,
        "txn_state": txn_state,
        "record_type": 1,
        "group": group,
        "commit_topic": topic,
        "commit_partition": partition,
        "committed_offset": None if tombstone else offset,
        "committed_leader_epoch": epoch,
        "commit_metadata": "",
        "commit_timestamp": T0 + record_offset,
        "expire_timestamp": -1,
        "error": None,
    }


def replica(
    broker: int,
    leo: int,
    *,
    topic: str = "orders",
    partition: int = 0,
    leader: int = 1,
    epochs: list[tuple[int, int]] | None = None,
) -> dict:
    """A ``rows.SUMMARY``-shaped row: broker ``broker``'s replica with ``leader`` the audit's leader."""
    epochs = [(0, 0)] if epochs is None else epochs
    return {
        "cluster": "c",
        "topic": topic,
        "partition": partition,
        "broker": broker,
        "log_dir": f"/data/b{broker}",
        "is_leader": broker == leader,
        "leader": leader,
        "leader_source": "kraft",
        "leo": leo,
        "log_start": 0,
        "latest_epoch": epochs[-1][0] if epochs else None,
        "max_batch_epoch": epochs[-1][0] if epochs else -1,
        "epochs": [{"epoch": e, "start_offset": s} for e, s in epochs],
    }


def lost(
    broker: int, lo: int, hi: int, *, topic: str = "orders", partition: int = 0, leader: int = 1
) -> dict:
    return {
        "cluster": "c",
        "topic": topic,
        "partition": partition,
        "broker": broker,
        "log_dir": f"/data/b{broker}",
        "leader": leader,
        "lo": lo,
        "hi": hi,
        "kind": "committed",
        "records": hi - lo + 1,
    }


@dataclass
class Groups:
    """A small audit of consumer groups (see the module docstring)."""

    commits: list[dict]
    replicas: list[dict]
    lost_runs: list[dict] = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)

    def finding_rows(self) -> list[dict]:
        return group_findings(GroupInputs(self.commits, self.replicas, self.lost_runs, self.metadata))


def _offsets_replicas(leader: int = 1, leo: int = 10) -> list[dict]:
    return [replica(b, leo, topic=OFFSETS_TOPIC, partition=P, leader=leader) for b in (1, 2)]


def _healthy() -> Groups:
    """Broker 1 leads orders-0 (LEO 100) and the group's offsets partition; the group committed 60."""
    return Groups(
        [commit_row(b, 3, 60) for b in (1, 2)],
        [replica(1, 100), replica(2, 100)] + _offsets_replicas(),
    )


@fire("KA720")
def above_leo(tmp, mp) -> Groups:
    g = _healthy()
    g.commits = [commit_row(b, 3, 130) for b in (1, 2)]
    return g


@silent("KA720")
def at_leo(tmp, mp) -> Groups:
    g = _healthy()
    g.commits = [commit_row(b, 3, 100) for b in (1, 2)]  # the group read everything
    return g


@silent("KA720", "KA721", "KA722", "KA723")
def healthy(tmp, mp) -> Groups:
    return _healthy()


@silent("KA720")
def above_leo_but_deleted(tmp, mp) -> Groups:
    """The offset above the LEO was deleted afterwards (offset tombstone): the coordinator forgot it."""
    g = _healthy()
    g.commits = [commit_row(b, 3, 130) for b in (1, 2)] + [
        commit_row(b, 4, 0, tombstone=True) for b in (1, 2)
    ]
    return g


@silent("KA720")
def above_leo_aborted(tmp, mp) -> Groups:
    """A TxnOffsetCommit above the LEO whose transaction was aborted never took effect."""
    g = _healthy()
    g.commits += [commit_row(b, 5, 130, txn_state="aborted") for b in (1, 2)]
    return g


def _diverged(committed: int) -> Groups:
    """Broker 2 (old leader) holds 80..119 in epoch 0, which broker 1 (leader, epoch 1 from 80, LEO 90)
    lacks; the group committed ``committed``."""
    return Groups(
        [commit_row(b, 3, committed) for b in (1, 2)],
        [replica(1, 90, epochs=[(0, 0), (1, 80)]), replica(2, 120)] + _offsets_replicas(),
        [lost(2, 80, 119)],
    )


@fire("KA721")
def consumed_lost_records(tmp, mp) -> Groups:
    return _diverged(100)


@silent("KA721")
def committed_before_the_lost_range(tmp, mp) -> Groups:
    return _diverged(80)  # the next record to read is the first lost one: nothing lost was consumed


@silent("KA721")
def committed_on_the_new_lineage(tmp, mp) -> Groups:
    """After the unclean election the group read the new leader: its commit carries leader epoch 1, the
    epoch of the leader's data from offset 80 on (KIP-320), so it consumed nothing of the lost range."""
    g = _diverged(88)
    g.commits = [commit_row(b, 3, 88, epoch=1) for b in (1, 2)]
    return g


@fire("KA721")
def committed_on_the_old_lineage(tmp, mp) -> Groups:
    """The same offset committed with leader epoch 0: read from the old leader's lost records."""
    g = _diverged(88)
    g.commits = [commit_row(b, 3, 88, epoch=0) for b in (1, 2)]
    return g


@silent("KA720", "KA721", "KA722")
def commit_of_a_deleted_incarnation(tmp, mp) -> Groups:
    """The group committed 100 on orders before the topic was deleted and re-created (the KRaft metadata's
    TopicRecord of the new topic ID is newer than the commit): a commit of a deleted incarnation, never
    judged against the new one."""
    g = _diverged(100)
    g.metadata = [
        _topic_record("orders", "old-orders-id", 0, T0 - 10_000),
        {**_topic_record("orders", "old-orders-id", 1, T0 + 500), "record_type": "REMOVE_TOPIC_RECORD"},
        _topic_record("orders", "new-orders-id", 2, T0 + 1_000),
    ]
    return g


def _topic_record(topic: str, topic_id: str, seq: int, timestamp: int) -> dict:
    return {
        "cluster": "c",
        "node": 100,
        "seq": seq,
        "offset": seq,
        "end_offset": 10,
        "timestamp": timestamp,
        "record_type": "TOPIC_RECORD",
        "topic": topic,
        "topic_id": topic_id,
    }


@silent("KA721")
def lost_range_on_the_leader_itself(tmp, mp) -> Groups:
    g = _diverged(100)
    g.lost_runs = [lost(1, 80, 89)]  # a run held by the leader is not lost
    return g


@fire("KA722")
def epoch_from_the_future(tmp, mp) -> Groups:
    g = _healthy()
    g.commits = [commit_row(b, 3, 60, epoch=7) for b in (1, 2)]  # caches: epoch 0 only
    return g


@silent("KA722")
def epoch_known_to_kraft(tmp, mp) -> Groups:
    g = _healthy()
    g.commits = [commit_row(b, 3, 60, epoch=3) for b in (1, 2)]
    g.metadata = [
        {
            "cluster": "c",
            "node": 100,
            "seq": 0,
            "offset": 5,
            "end_offset": 40,
            "timestamp": T0,
            "record_type": "PARTITION_RECORD",
            "topic": "orders",
            "topic_id": "t",
            "partition": 0,
            "leader": 1,
            "leader_epoch": 3,
            "isr": [1, 2],
            "replicas": [1, 2],
            "leader_recovery_state": 0,
        }
    ]
    return g


@silent("KA722")
def no_epoch_in_commit(tmp, mp) -> Groups:
    g = _healthy()
    g.commits = [commit_row(b, 3, 60, epoch=-1) for b in (1, 2)]  # value version < 3
    return g


def _offsets_diverged(follower_commit: int, leader_commit: int | None) -> Groups:
    """The group's offsets partition: broker 1 leads (LEO 4); broker 2 holds records 4..6 it lacks."""
    commits = [commit_row(b, 3, 40) for b in (1, 2)]
    if leader_commit is not None:
        commits.append(commit_row(1, 4, leader_commit, epoch=1))
    commits.append(commit_row(2, 5, follower_commit))
    return Groups(
        commits,
        [replica(1, 100), replica(2, 100)] + _offsets_replicas(),
        [lost(2, 5, 6, topic=OFFSETS_TOPIC, partition=P)],
    )


@fire("KA723")
def commit_only_on_truncating_follower(tmp, mp) -> Groups:
    return _offsets_diverged(70, None)


@silent("KA723")
def same_commit_on_the_leader(tmp, mp) -> Groups:
    g = _offsets_diverged(70, None)
    g.commits.append(commit_row(1, 4, 70))  # the leader committed the same offset at another position
    return g


@silent("KA723")
def follower_commit_not_in_lost_range(tmp, mp) -> Groups:
    g = _offsets_diverged(70, None)
    g.lost_runs = [lost(2, 8, 9, topic=OFFSETS_TOPIC, partition=P)]
    return g
