"""The replication model: Kafka's HW/ISR/epoch rules, both truncation modes, and property tests over
many seeds (issue 3 item 7)."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from auditor.simulate.cluster import Cluster
from auditor.simulate.config import SimOptions
from auditor.simulate.scenarios import _topics, random_events
from auditor.simulate.truth.partition import partition_truth

TP = ("t", 0)


def two_replicas(mode: str) -> Cluster:
    c = Cluster(SimOptions(brokers=2, min_insync_replicas=1, check_invariants=True), truncation=mode)
    c.add_topic("t", 1, replicas={0: [1, 2]})
    return c


def values(c: Cluster, broker: int) -> list[bytes]:
    return [r.value.split(b"|")[0] for b in c.replica(broker, TP).log.all_batches() for r in b.records]


@pytest.mark.parametrize("mode", ["hw", "epoch"])
def test_classic_kip101_example(mode):
    """A (leader) and B hold offsets 0 and 1; A's HW is 2, B's is 1; B restarts; A dies; B leads;
    A returns."""
    c = two_replicas(mode)
    a, b = 1, 2
    c.produce("t", 0, 1, label="m")
    c.fetch(b, TP)
    c.fetch(b, TP)
    c.produce("t", 0, 1, label="m")
    c.fetch(b, TP)
    c.fetch(b, TP, deliver=False)
    assert (c.replica(a, TP).hw, c.replica(b, TP).hw) == (2, 1)
    assert [w.status for w in c.writes] == ["acked", "acked"]  # offset 1 was acknowledged with acks=all
    c.checkpoint_hw(c.brokers[a])
    c.checkpoint_hw(c.brokers[b])
    c.crash(b, fence=False)
    c.restart(b)
    c.fetch(b, TP, deliver=False)
    c.crash(a)
    assert c.partitions[TP].leader == b and c.partitions[TP].leader_epoch == 1
    c.restart(a)
    c.replicate(3)
    if mode == "hw":
        assert values(c, a) == values(c, b) == [b"m-0-0000000"]  # offset 1 lost on both
    else:
        assert values(c, a) == values(c, b) == [b"m-0-0000000", b"m-0-0000001"]


def test_follower_hw_trails_the_leader_by_one_fetch_round():
    c = Cluster(SimOptions(check_invariants=True), truncation="epoch")
    c.add_topic("t", 1, replicas={0: [1, 2, 3]})
    c.produce("t", 0, 3)
    c.fetch_round()
    assert c.replica(1, TP).hw == 0 and c.replica(2, TP).hw == 0  # leader saw fetch offsets 0
    c.fetch_round()  # broker 2 fetches first (HW still 0), broker 3's fetch then moves the HW to 3
    assert [c.replica(b, TP).hw for b in (1, 2, 3)] == [3, 0, 3]
    assert c.writes[0].status == "acked"
    c.fetch_round()  # broker 2 learns the HW one round later
    assert [c.replica(b, TP).hw for b in (1, 2, 3)] == [3, 3, 3]


def test_acks_all_needs_min_insync_and_waits_for_the_hw():
    c = Cluster(SimOptions(check_invariants=True, min_insync_replicas=2), truncation="epoch")
    c.add_topic("t", 1, replicas={0: [1, 2, 3]})
    w = c.produce("t", 0, 2, acks="all")
    assert w.status == "pending"
    c.replicate(2)
    assert w.status == "acked"
    c.crash(2)
    c.crash(3)
    assert c.partitions[TP].isr == [1]
    assert c.produce("t", 0, 1, acks="all").status == "rejected"
    assert c.produce("t", 0, 1, acks="1").status == "acked"


def test_isr_shrinks_after_replica_lag_time_max_and_expands_when_caught_up():
    c = Cluster(SimOptions(check_invariants=True, replica_lag_time_max_ms=10000), truncation="epoch")
    c.add_topic("t", 1, replicas={0: [1, 2, 3]})
    c.stalled.add(3)
    for _ in range(5):
        c.produce("t", 0, 2, acks="1")
        c.tick(3000)
    assert c.partitions[TP].isr == [1, 2]
    c.stalled.clear()
    c.tick(1000)
    assert c.partitions[TP].isr == [1, 2, 3]
    assert c.replica(3, TP).leo == c.replica(1, TP).leo


def stale_follower_elected(replicated: int, leader_only: int) -> Cluster:
    """Three replicas with unclean election enabled: ``replicated`` records reach all of them, brokers 2 and 3
    crash, broker 1 alone takes ``leader_only`` records with acks=1 and crashes; broker 2 restarts and is
    elected uncleanly."""
    c = Cluster(SimOptions(check_invariants=True, min_insync_replicas=1), truncation="epoch")
    c.add_topic("t", 1, replicas={0: [1, 2, 3]}, unclean=True)
    c.produce("t", 0, replicated)
    c.replicate(2)
    c.crash(2)
    c.crash(3)
    c.produce("t", 0, leader_only, acks="1")
    c.crash(1)
    c.restart(2)
    return c


def test_unclean_election_sets_leader_recovery_state_then_recovers():
    c = stale_follower_elected(5, 5)
    ps = c.partitions[TP]
    assert (ps.leader, ps.leader_epoch, ps.isr, ps.leader_recovery_state) == (2, 2, [2], 1)
    assert c.leader_history[TP][-1].unclean and c.leader_history[TP][-1].start_offset == 5
    assert c.replica(2, TP).log.epoch_cache == [(0, 0), (2, 5)]
    c.restart(3)
    c.replicate(2)
    assert ps.isr == [2, 3] and ps.leader_recovery_state == 0
    changes = [r[2] for e in c.metadata for r in e.records if r[0] == "PartitionChangeRecord"]
    assert {
        "partitionId": 0,
        "topicId": c.topics["t"].topic_id,
        "isr": [2],
        "leader": 2,
        "leaderRecoveryState": 1,
    } in changes


def test_epoch_truncation_follows_kip279_over_missed_epochs():
    """A follower that missed epochs truncates at the end of its last epoch as the leader saw it."""
    c = stale_follower_elected(4, 6)  # epoch 0 on broker 1 only: offsets 4..9; broker 2: epoch 2 from 4
    c.produce("t", 0, 2, acks="1")
    c.shutdown(2)  # leaderless (epoch 3)
    c.restart(3)  # broker 3 was out of the ISR too: unclean again, epoch 4 from offset 4
    c.restart(2)  # asks for epoch 2's end: the leader answers (0, 4); truncates its epoch-2 tail
    c.restart(1)
    c.replicate(3)
    logs = {b: [(x.base_offset, x.epoch) for x in c.replica(b, TP).log.all_batches()] for b in (1, 2, 3)}
    assert logs[1] == logs[2] == logs[3]
    assert all(e != 0 or off < 4 for off, e in logs[1])  # broker 1's epoch-0 tail was truncated


def _random_cluster(seed: int, mode: str, safe: bool) -> Cluster:
    opts = SimOptions(seed=seed, records=120, partitions=2, topics=2, batch_records=3, check_invariants=True)
    rng = random.Random(seed)
    c = Cluster(opts, truncation=mode, rng=random.Random(seed))
    tps = _topics(c, fixed=False, unclean=not safe and rng.random() < 0.5, min_insync=2)
    random_events(c, tps, rng, allow_power_loss=not safe, allow_corrupt=not safe, steps=18)
    return c


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), mode=st.sampled_from(["hw", "epoch"]))
@example(seed=25486, mode="hw")  # a follower's log ending inside the new leader's batch: its fetch fails
def test_invariants_hold_under_random_faults(seed, mode):
    """check_invariants runs after every event: HW <= LEO everywhere; leader HW = min LEO over the ISR
    (raised as far as allowed, never lowered); epoch caches and epochs strictly increasing; logs
    contiguous."""
    c = _random_cluster(seed, mode, safe=False)
    c.check_invariants()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_epoch_mode_never_loses_acks_all_writes_without_unclean_election(seed):
    """min.insync.replicas=2, epoch truncation, kill -9 crashes (page cache survives), restarts, stalls,
    controlled shutdowns, no unclean election: no record acknowledged with acks=all is ever lost."""
    c = _random_cluster(seed, "epoch", safe=True)
    assert not c.unclean_elections
    for tp in c.partitions:
        truth = partition_truth(c, tp)
        lost = [x for x in truth["acknowledged_lost"] if x["acks"] == "all"]
        assert lost == []
        committed_acks_all = [w for w in c.writes if w.tp == tp and w.acks == "all" and w.acknowledged]
        assert all(c.committed_ms(w.batch) is not None for w in committed_acks_all)


def test_leader_epochs_and_epoch_start_offsets_increase():
    for seed in range(8):
        c = _random_cluster(seed, "epoch", safe=False)
        for tp, hist in c.leader_history.items():
            epochs = [h.epoch for h in hist]
            assert epochs == sorted(set(epochs))
            starts = [h.start_offset for h in hist if h.start_offset is not None and not h.unclean]
            if tp not in c.unclean_elections and not c.data_loss_crashes:
                assert starts == sorted(starts)
        for br in c.brokers.values():
            for rep in br.replicas.values():
                cache = rep.disk_epoch_cache
                assert all(e2 > e1 and s2 > s1 for (e1, s1), (e2, s2) in zip(cache, cache[1:], strict=False))


def test_same_seed_same_cluster():
    a = _random_cluster(7, "epoch", safe=False)
    b = _random_cluster(7, "epoch", safe=False)
    assert a.events == b.events
    assert [(w.tp, w.status, w.batch.data if w.batch else None) for w in a.writes] == [
        (w.tp, w.status, w.batch.data if w.batch else None) for w in b.writes
    ]
