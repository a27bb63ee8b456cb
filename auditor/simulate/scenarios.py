"""Named scenarios: scripted event sequences on a simulated cluster, each with a one-paragraph description
for ``kafka-auditor simulate --list``.

Conventions: ``--records`` counts records per partition; scenario topics are named ``t0``, ``t1``...; in
the fault scenarios every partition has the replicas ``[1, 2, ..., rf]`` so broker 1 starts as the leader
of all of them and the story is the same for each partition. ``--truncation`` overrides a scenario's
follower truncation mode.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from auditor.simulate.cluster import Cluster
from auditor.simulate.config import SimOptions
from auditor.simulate.model import TP


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: Callable[[SimOptions], Cluster]
    default_truncation: str = "epoch"
    min_brokers: int = 1
    scale: bool = False


def _cluster(opts: SimOptions, default_mode: str, log_dirs: int = 1) -> Cluster:
    return Cluster(
        opts, truncation=opts.truncation or default_mode, rng=random.Random(opts.seed), log_dirs=log_dirs
    )


def _topics(
    c: Cluster,
    *,
    fixed: bool,
    unclean: bool = False,
    min_insync: int | None = None,
    replicas: list[int] | None = None,
) -> list[TP]:
    """Create ``--topics`` topics of ``--partitions`` partitions (producer kinds cycle through
    ``producer_kinds``); ``fixed`` gives every partition the replicas ``[1..rf]`` (or ``replicas``)."""
    opts = c.options
    rf = len(replicas) if replicas else opts.rf
    reps = replicas or list(range(1, rf + 1))
    mi = min(opts.min_insync_replicas if min_insync is None else min_insync, rf)
    tps: list[TP] = []
    for i in range(opts.topics):
        kind = opts.producer_kinds[i % len(opts.producer_kinds)]
        assignment = {p: list(reps) for p in range(opts.partitions)} if fixed else None
        spec = c.add_topic(
            f"t{i}",
            opts.partitions,
            kind=kind,
            unclean=unclean,
            min_insync=mi,
            replicas=assignment,
            topic_index=i,
        )
        tps += [(spec.name, p) for p in range(opts.partitions)]
    return tps


def _records(c: Cluster, tps: list[TP], fraction: float) -> int:
    """``fraction`` of ``--records`` per partition, as a total over ``tps`` (at least one per partition)."""
    per = max(1, int(c.options.records * fraction)) if c.options.records else 0
    return per * len(tps)


def _settle(c: Cluster, rounds: int = 3) -> None:
    """Let followers catch up and the HW propagate, then pass one HW checkpoint interval."""
    c.replicate(rounds)
    c.tick(c.options.hw_checkpoint_interval_ms)
    c.replicate(rounds)


def _shutdown_all(c: Cluster) -> None:
    for b in sorted(c.brokers):
        if c.brokers[b].alive:
            c.shutdown(b)


def _need(opts: SimOptions, brokers: int, name: str) -> None:
    if opts.brokers < brokers:
        raise ValueError(f"scenario {name!r} needs at least {brokers} brokers (got --brokers {opts.brokers})")
    if opts.rf < min(brokers, 2):
        raise ValueError(f"scenario {name!r} needs a replication factor of at least 2")


def _fault_cluster(opts: SimOptions, name: str, mode: str = "epoch", **topics) -> tuple[Cluster, list[TP]]:
    """The cluster of fault scenario ``name`` (two brokers at least, truncation ``mode`` unless
    ``--truncation`` says otherwise) and its partitions, each on the replicas ``[1..rf]`` (``topics``: the
    other options of :func:`_topics`)."""
    _need(opts, 2, name)
    c = _cluster(opts, mode)
    return c, _topics(c, fixed=True, **topics)


# ------------------------------------------------------------------------------------------- scenarios


def clean(opts: SimOptions) -> Cluster:
    c = _cluster(opts, "epoch")
    tps = _topics(c, fixed=False)
    c.run_traffic(tps, _records(c, tps, 1.0), acks="all", label="A")
    _settle(c)
    c.tick(INITIAL_CHECKPOINT_WAIT)
    _shutdown_all(c)
    return c


INITIAL_CHECKPOINT_WAIT = 30000


def follower_crash(opts: SimOptions) -> Cluster:
    c, tps = _fault_cluster(opts, "follower-crash")
    follower = opts.rf
    c.run_traffic(tps, _records(c, tps, 0.5), acks="all", label="A")
    c.crash(follower, lose_unflushed=True, torn_bytes=23)
    c.run_traffic(tps, _records(c, tps, 0.25), acks="all", label="B")
    c.tick(1000)
    c.restart(follower)
    _settle(c)
    c.run_traffic(tps, _records(c, tps, 0.25), acks="all", label="C")
    _settle(c)
    _shutdown_all(c)
    return c


def _classic(opts: SimOptions, mode: str) -> Cluster:
    """KIP-101's first scenario: A (leader) and B hold offsets 0 and 1, A's HW is 2 but B's is 1."""
    a, b = 1, 2
    c, tps = _fault_cluster(opts, "hw-truncation-loss", mode, min_insync=1, replicas=[a, b])
    for label in ("m", "m"):
        for tp in tps:
            c.produce(tp[0], tp[1], 1, acks="all", label=label)
        for tp in tps:
            c.fetch(b, tp)  # B fetches the record: its HW is min(leader HW, own LEO)
        c.tick(opts.produce_interval_ms)
    for tp in tps:
        c.fetch(b, tp, deliver=False)  # the leader sees B's LEO 2 (HW -> 2), B never gets the response
    c.checkpoint_hw(c.brokers[a])  # the HW checkpoint threads run: A writes HW 2,
    c.checkpoint_hw(c.brokers[b])  # B (which never saw the response) writes HW 1
    c.crash(b, fence=False)  # B restarts before the controller notices: it stays in the ISR
    c.restart(b)  # mode a: B truncates to its HW (1); mode b: OffsetsForLeaderEpoch keeps offset 1
    for tp in tps:
        c.fetch(b, tp, deliver=False)  # the restarted follower's first fetch (epoch validation)
    c.crash(a)  # A dies; B, still in the ISR, becomes leader in epoch 1
    c.tick(1000)
    c.restart(a)  # A comes back as follower of B and truncates
    _settle(c)
    rest = max(0, opts.records - 2)
    c.run_traffic(tps, rest * len(tps), acks="all", label="n")
    _settle(c)
    _shutdown_all(c)
    return c


def _classic_scenario(name: str, mode: str, description: str) -> Scenario:
    """KIP-101's first scenario (:func:`_classic`) in follower truncation ``mode`` unless ``--truncation``
    says otherwise."""
    return Scenario(name, description, lambda o: _classic(o, mode), default_truncation=mode, min_brokers=2)


def unclean_election(opts: SimOptions) -> Cluster:
    c, tps = _fault_cluster(opts, "unclean-election", unclean=True, min_insync=1)
    leader, stale = 1, 2
    others = list(range(2, opts.rf + 1))
    c.run_traffic(tps, _records(c, tps, 0.5), acks="all", label="A")
    _settle(c)
    for f in others:
        c.crash(f)  # kill -9: the followers are fenced, the ISR shrinks to the leader
    c.run_traffic(tps, _records(c, tps, 0.25), acks="1", label="B")  # acknowledged and committed (ISR = [1])
    c.tick(opts.hw_checkpoint_interval_ms)
    c.crash(leader)  # the partition is leaderless
    c.tick(60000)
    c.restart(stale)  # unclean election: the stale broker becomes leader, leaderRecoveryState=1
    c.run_traffic(tps, _records(c, tps, 0.15), acks="1", label="C")
    _settle(c)
    for f in others[1:]:
        c.restart(f)  # the other follower catches up from the new leader
        _settle(c)
    c.tick(opts.hw_checkpoint_interval_ms)
    return c  # the old leader stays down with its committed epoch-0 tail


def acks1_leader_crash(opts: SimOptions) -> Cluster:
    c, tps = _fault_cluster(opts, "acks1-leader-crash", min_insync=1)
    followers = set(range(2, opts.rf + 1))
    c.run_traffic(tps, _records(c, tps, 0.6), acks="all", label="A")
    _settle(c)
    c.run_traffic(tps, _records(c, tps, 0.2), acks="1", label="B", skip=followers)  # never replicated
    c.crash(1)  # clean election of a follower from the ISR
    c.run_traffic(tps, _records(c, tps, 0.2), acks="all", label="C")
    _settle(c)
    return c


def torn_tail(opts: SimOptions) -> Cluster:
    c, tps = _fault_cluster(opts, "torn-tail")
    followers = set(range(2, opts.rf + 1))
    c.run_traffic(tps, _records(c, tps, 0.8), acks="all", label="A")
    _settle(c)
    for tp in tps:
        c.produce(tp[0], tp[1], opts.batch_records, acks="all", label="T")  # in flight when the crash hits
    tear = {}
    for tp in tps:
        last = c.replica(1, tp).log.active.batches[-1]
        tear[tp] = c.rng.randrange(1, last.size)
    c.crash(1, tear_last=tear)
    c.run_traffic(tps, _records(c, tps, 0.2), acks="all", label="B")
    _settle(c)
    del followers
    return c


def corrupt_batch(opts: SimOptions) -> Cluster:
    c, tps = _fault_cluster(opts, "corrupt-batch")
    victim = opts.rf
    c.run_traffic(tps, _records(c, tps, 0.6), acks="all", label="A")
    c.tick(INITIAL_CHECKPOINT_WAIT)  # the recovery-point checkpoint is written
    c.run_traffic(tps, _records(c, tps, 0.4), acks="all", label="B")
    _settle(c)
    c.crash(victim)
    for tp in tps:
        c.corrupt(victim, tp)
    return c


def _fill_active_segment(c: Cluster, tps: list[TP], broker: int, min_entries: int, label: str) -> None:
    """Produce until ``broker``'s active segments hold at least ``min_entries`` offset index entries
    (and some data), keeping the segment below its roll size."""
    for _ in range(100000):
        if all(
            len(c.replica(broker, tp).log.active.index) >= min_entries
            and c.replica(broker, tp).log.active.batches
            for tp in tps
        ):
            return
        c.run_traffic(tps, len(tps), acks="all", label=label)


def _unflushed_power_loss(opts: SimOptions, name: str, *, index_entries: int, keep_index: bool) -> Cluster:
    """The last replica loses power once its active segment holds data (and ``index_entries`` offset index
    entries) that was never flushed, after the HW checkpoint (fsynced every 5 s) covered it: that data is
    gone; with ``keep_index`` the memory-mapped index pages were written back and survive."""
    c, tps = _fault_cluster(opts, name)
    victim = opts.rf
    c.run_traffic(tps, _records(c, tps, 1.0), acks="all", label="A")
    _fill_active_segment(c, tps, victim, index_entries, "F")
    _settle(c)
    c.crash(victim, lose_unflushed=True, keep_index=keep_index)
    return c


def stale_index(opts: SimOptions) -> Cluster:
    return _unflushed_power_loss(opts, "stale-index", index_entries=1, keep_index=True)


def hw_ahead_of_log(opts: SimOptions) -> Cluster:
    return _unflushed_power_loss(opts, "hw-ahead-of-log", index_entries=0, keep_index=False)


def random_scenario(opts: SimOptions) -> Cluster:
    c = _cluster(opts, "epoch")
    rng = random.Random(opts.seed * 7919 + 17)
    unclean = rng.random() < 0.4
    tps = _topics(c, fixed=False, unclean=unclean, min_insync=rng.choice([1, 2]))
    random_events(c, tps, rng, allow_power_loss=True, allow_corrupt=True)
    return c


def random_events(
    c: Cluster,
    tps: list[TP],
    rng: random.Random,
    *,
    allow_power_loss: bool = True,
    allow_corrupt: bool = True,
    steps: int | None = None,
    final_shutdown: float = 0.3,
) -> None:
    """Random produce bursts (acks 0/1/all), follower stalls, crashes (kill -9 or power loss with
    torn tails and surviving index pages), clean restarts, waits and disk corruption, from ``rng``."""
    opts = c.options
    total = _records(c, tps, 1.0)
    steps = steps or max(6, min(40, 4 + total // max(1, 25 * len(tps))))
    chunk = max(len(tps), total // steps)
    ids = sorted(c.brokers)
    for _ in range(steps):
        alive = [b for b in ids if c.brokers[b].alive]
        down = [b for b in ids if not c.brokers[b].alive]
        action = rng.choices(
            ["traffic", "crash", "restart", "shutdown", "tick"],
            weights=[6, 1.2 if len(alive) > 1 else 0.2, 2 if down else 0, 0.6, 1],
        )[0]
        if action == "traffic":
            acks = rng.choices(["all", "1", "0"], weights=[5, 3, 1])[0]
            skip = set(rng.sample(ids, rng.randint(0, 1))) if rng.random() < 0.3 else set()
            c.run_traffic(tps, chunk, acks=acks, label=rng.choice("ABCDEFGH"), skip=skip)
        elif action == "crash" and alive:
            b = rng.choice(alive)
            power = allow_power_loss and rng.random() < 0.5
            c.crash(
                b,
                lose_unflushed=power,
                torn_bytes=rng.randint(1, 60) if power and rng.random() < 0.5 else None,
                keep_index=power and rng.random() < 0.5,
                fence_after_ms=rng.choice([0, 0, 9000]),
            )
            if allow_corrupt and rng.random() < 0.25:
                tp = rng.choice([tp for tp in tps if tp in c.brokers[b].replicas] or [None])
                if tp is not None and _has_batch_above_recovery_point(c, b, tp):
                    c.corrupt(b, tp)
        elif action == "restart" and down:
            c.restart(rng.choice(down))
            c.replicate(rng.randint(1, 3))
        elif action == "shutdown" and alive:
            c.shutdown(rng.choice(alive))
        else:
            c.tick(rng.choice([100, 1000, 5000, 12000, 31000]))
    c.replicate(3)
    c.tick(opts.hw_checkpoint_interval_ms)
    if rng.random() < final_shutdown:
        _shutdown_all(c)


def _has_batch_above_recovery_point(c: Cluster, b: int, tp: TP) -> bool:
    br = c.brokers[b]
    rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(tp, 0)
    return any(bt.base_offset >= rp and bt.size > 61 for bt in br.replicas[tp].log.all_batches())


# ------------------------------------------------------------- consumer groups and transactions (issue 10)


def _consequence_cluster(
    opts: SimOptions,
    name: str,
    *,
    kind: str,
    data_replicas: list[int],
    unclean: bool,
    internal_replicas: list[int],
    offsets_partitions: int = 3,
    txn_partitions: int = 3,
) -> tuple[Cluster, list[TP]]:
    """Three brokers at least: topic ``t0`` (``--partitions`` partitions of producer ``kind`` on
    ``data_replicas``, min.insync.replicas=1) and the coordinators' internal topics on
    ``internal_replicas``."""
    if opts.brokers < 3:
        raise ValueError(f"scenario {name!r} needs at least 3 brokers (got --brokers {opts.brokers})")
    c = _cluster(opts, "epoch")
    c.add_coordinators(
        offsets_partitions=offsets_partitions, txn_partitions=txn_partitions, replicas=internal_replicas
    )
    spec = c.add_topic(
        "t0",
        opts.partitions,
        kind=kind,
        unclean=unclean,
        min_insync=1,
        replicas={p: list(data_replicas) for p in range(opts.partitions)},
    )
    return c, [(spec.name, p) for p in range(opts.partitions)]


def _per_partition(c: Cluster, fraction: float) -> int:
    return max(1, int(c.options.records * fraction)) if c.options.records else 1


def same_partition_groups(partitions: int, stem: str, count: int = 2) -> list[str]:
    """``count`` group ids ``<stem>-<i>`` that the same ``__consumer_offsets`` partition coordinates."""
    from auditor.simulate.coordinators import coordinator_partition

    by_part: dict[int, list[str]] = {}
    for i in range(10000):
        name = f"{stem}-{i}"
        found = by_part.setdefault(coordinator_partition(name, partitions), [])
        found.append(name)
        if len(found) == count:
            return found
    raise RuntimeError("no group ids share an offsets partition")


def _unclean_pair(opts: SimOptions, name: str, kind: str) -> tuple[Cluster, list[TP]]:
    """Topic ``t0`` (producer ``kind``) on brokers 1 and 2 with unclean leader election enabled, the
    coordinators' internal topics on broker 3; phase A (half of ``--records``, acks=all) replicated."""
    c, tps = _consequence_cluster(
        opts, name, kind=kind, data_replicas=[1, 2], unclean=True, internal_replicas=[3]
    )
    c.run_traffic(tps, _records(c, tps, 0.5), acks="all", label="A")
    _settle(c)
    return c, tps


def _unclean_failover(c: Cluster, tps: list[TP], fraction: float, new_producer: str | None = None) -> None:
    """Broker 1, the lone leader, is killed; a minute later broker 2 (fenced earlier) restarts and is elected
    uncleanly, from the end of what it holds (``new_producer``: the topic whose producer application is
    replaced meanwhile by one with a new transactional id), and takes phase C (``fraction`` of
    ``--records``, acks=1); the followers settle and an HW checkpoint interval passes."""
    c.crash(1)
    c.tick(60000)
    if new_producer is not None:
        c.new_producer(new_producer)
    c.restart(2)
    c.run_traffic(tps, _records(c, tps, fraction), acks="1", label="C")
    _settle(c)
    c.tick(c.options.hw_checkpoint_interval_ms)


def group_commit_lost_range(opts: SimOptions) -> Cluster:
    c, tps = _unclean_pair(opts, "group-commit-lost-range", "plain")
    groups = c.coordinators.groups
    b_start = {tp: c.replica(1, tp).log.leo for tp in tps}
    for tp in tps:  # this group stays inside phase A: its records survive
        groups.consume_and_commit("safe-app", tp, upto=b_start[tp] - _per_partition(c, 0.1))
    c.crash(2)  # the follower is fenced: ISR = [1]
    c.run_traffic(tps, _records(c, tps, 0.3), acks="1", label="B")  # committed by the lone leader
    c.tick(opts.hw_checkpoint_interval_ms)
    for tp in tps:
        # one group read half of phase B, another all of it, and committed
        groups.consume_and_commit("orders-app", tp, upto=b_start[tp] + _per_partition(c, 0.15))
        groups.consume_and_commit("reports-app", tp)
    _settle(c)
    _unclean_failover(c, tps, 0.2)  # broker 2 leads from the end of phase A, takes fewer records than B had
    return c  # broker 1 stays down with phase B


def txn_marker_lost(opts: SimOptions) -> Cluster:
    c, tps = _unclean_pair(opts, "txn-marker-lost", "transactional")
    for tp in tps:  # the data of transaction T reaches both replicas
        c.produce(tp[0], tp[1], c.options.batch_records, acks="all", label="T")
    c.replicate(2)
    c.crash(2)  # the follower is fenced: ISR = [1]
    c.end_transaction(
        "t0", commit=True
    )  # T's COMMIT markers reach broker 1 only; the coordinator completes T
    c.run_traffic(tps, _records(c, tps, 0.1), acks="1", label="B")  # more transactions on broker 1 only
    c.tick(opts.hw_checkpoint_interval_ms)
    _unclean_failover(c, tps, 0.15, new_producer="t0")  # broker 2 leads with T's data but without its marker
    return c  # broker 1 stays down holding T's marker and phase B


def offsets_commit_lost(opts: SimOptions) -> Cluster:
    c, tps = _consequence_cluster(
        opts,
        "offsets-commit-lost",
        kind="plain",
        data_replicas=[3, 2],
        unclean=False,
        internal_replicas=[1, 2],
    )
    groups = c.coordinators.groups
    lost_group, other_group = same_partition_groups(groups.partitions, "ledger-app")
    c.run_traffic(tps, _records(c, tps, 0.6), acks="all", label="A")
    _settle(c)
    for tp in tps:
        groups.consume_and_commit(lost_group, tp, upto=_per_partition(c, 0.3))
    _settle(c)  # that commit is replicated to both offsets-partition replicas
    c.run_traffic(tps, _records(c, tps, 0.4), acks="all", label="B")
    _settle(c)
    for tp in tps:  # appended by the coordinator (broker 1) before its follower fetched it
        groups.consume_and_commit(lost_group, tp)
    c.crash(1)  # the coordinator dies: broker 2 (in the ISR) leads the offsets partitions without the commit
    for tp in tps:  # another group of the same offsets partition commits through the new coordinator
        groups.consume_and_commit(other_group, tp, upto=_per_partition(c, 0.5))
    _settle(c)
    c.tick(opts.hw_checkpoint_interval_ms)
    return c  # broker 1 stays down holding the lost commit


# --------------------------------------------------------------- replicas by Kafka's identity (issue 6)

IDENTITY_PARTITIONS = 3
"""At least this many partitions of ``t0`` in the recreated-topic scenarios."""


def _recreated_topic(opts: SimOptions, name: str) -> tuple[Cluster, list[TP]]:
    """Topic ``t0`` on brokers 1-3 (``__consumer_offsets`` on 1 and 2) is produced to and consumed; broker 3
    stops cleanly; ``t0`` is deleted and re-created with a new topic ID on brokers 1 and 2 only, which take
    fewer records at the same offsets; a group commits on both incarnations."""
    if opts.brokers < 3:
        raise ValueError(f"scenario {name!r} needs at least 3 brokers (got --brokers {opts.brokers})")
    c = _cluster(opts, "epoch")
    c.add_coordinators(offsets_partitions=3, txn_partitions=1, replicas=[1, 2])
    n = max(IDENTITY_PARTITIONS, opts.partitions)
    tps = [("t0", p) for p in range(n)]
    c.add_topic("t0", n, kind="plain", min_insync=2, replicas={p: [1, 2, 3] for p in range(n)})
    groups = c.coordinators.groups
    c.run_traffic(tps, _records(c, tps, 0.6), acks="all", label="A")
    _settle(c)
    for tp in tps:
        groups.consume_and_commit("orders-app", tp)  # all of the old incarnation
        groups.consume_and_commit("billing-app", tp, upto=_per_partition(c, 0.3))
    _settle(c)
    c.shutdown(3)  # broker 3 stops with the old incarnation (and its HW checkpoints)
    c.tick(1000)
    c.delete_topic("t0")  # brokers 1 and 2 rename their replicas -delete; broker 3 is down
    c.tick(1000)
    c.add_topic("t0", n, kind="plain", min_insync=2, replicas={p: [1, 2] for p in range(n)})
    c.run_traffic(tps, _records(c, tps, 0.3), acks="all", label="N")  # fewer records, offsets from 0
    _settle(c)
    for tp in tps:
        groups.consume_and_commit("orders-app", tp)  # from 0 again: its old offsets were tombstoned
    _settle(c)
    return c, tps


def recreated_topic(opts: SimOptions) -> Cluster:
    c, _ = _recreated_topic(opts, "recreated-topic")
    _shutdown_all(c)  # within file.delete.delay.ms of the deletion: the -delete directories stay
    return c


def recreated_topic_restarted(opts: SimOptions) -> Cluster:
    c, _ = _recreated_topic(opts, "recreated-topic-restarted")
    c.tick(opts.file_delete_delay_ms)  # brokers 1 and 2 remove their -delete directories
    c.restart(3)  # the old incarnation's topic ID is unknown: its logs are renamed -stray
    _settle(c)
    _shutdown_all(c)
    return c


def jbod_move(opts: SimOptions) -> Cluster:
    _need(opts, 3, "jbod-move")
    c = _cluster(opts, "epoch", log_dirs=2)
    tps = _topics(c, fixed=True, replicas=[1, 2, 3])
    c.run_traffic(tps, _records(c, tps, 0.6), acks="all", label="A")
    _settle(c)
    moved, promoted = tps[0], tps[-1]
    c.start_log_dir_move(2, moved)
    c.copy_to_future(2, moved, upto=c.replica(2, moved).log.leo // 3)  # throttled: a third is copied
    c.start_log_dir_move(3, promoted)
    c.run_traffic(tps, _records(c, tps, 0.4), acks="all", label="B")
    _settle(c)
    c.copy_to_future(3, promoted)  # caught up: the controller accepts the new directory
    c.accept_future_dir(3, promoted)
    _shutdown_all(c)  # both moves interrupted; broker 3 stops before promoting its future log
    return c


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "clean",
            "Healthy cluster: every record is produced with acks=all and replicated to the whole "
            "ISR, HW checkpoints catch up, then the brokers shut down cleanly one after the other "
            "(leadership moves during the shutdown, leaving benign trailing leader-epoch entries at the "
            "log end). "
            "Expected findings: none.",
            clean,
            scale=True,
        ),
        Scenario(
            "follower-crash",
            "A follower loses power halfway through: its unflushed tail is gone (with a "
            "torn partial batch). It is fenced, the ISR shrinks, production goes on with acks=all; it "
            "restarts, recovery truncates the torn tail, epoch-based truncation and re-fetching bring it "
            "back into the ISR, and everything shuts down cleanly. Expected findings: none; no record lost.",
            follower_crash,
            min_brokers=2,
        ),
        _classic_scenario(
            "hw-truncation-loss",
            "hw",
            "KIP-101's classic data loss in HW truncation mode (Kafka before 0.11): "
            "leader A and follower B hold offsets 0 and 1, A's HW is 2 but B's is still 1; B restarts and "
            "truncates to its HW (1); A dies; B becomes leader; A returns and truncates to 1: offset 1, "
            "acknowledged with acks=all, is lost on both replicas (then overwritten by newer records).",
        ),
        _classic_scenario(
            "epoch-truncation-safe",
            "epoch",
            "The same events as hw-truncation-loss with leader-epoch truncation "
            "(KIP-101/KIP-279): the restarted follower asks the leader for the end offset of its epoch "
            "instead of trusting its HW, so offset 1 is kept on both replicas. Nothing is lost.",
        ),
        Scenario(
            "unclean-election",
            "Unclean leader election (like the corpus scenario): phase A is "
            "replicated with acks=all; the followers are killed; phase B (acks=1) is committed by the lone "
            "leader; the leader is killed; a stale follower restarts and is elected uncleanly "
            "(leaderRecoveryState=1) and takes phase C at the same offsets. The old leader stays down "
            "holding committed phase-B records: divergence at the start of phase B, HW above the new "
            "leader's LEO, committed truncation loss.",
            unclean_election,
            min_brokers=2,
            scale=True,
        ),
        Scenario(
            "acks1-leader-crash",
            "Records acknowledged with acks=1 by the leader before any follower "
            "fetched them: the leader is killed, a follower from the ISR is elected cleanly and the next "
            "records reuse those offsets. The old leader (down) keeps the acknowledged but never committed "
            "tail: divergence, divergent uncommitted data, acknowledged records lost.",
            acks1_leader_crash,
            min_brokers=2,
        ),
        Scenario(
            "torn-tail",
            "The leader crashes in the middle of appending a batch: only a prefix of the batch "
            "reached its active segment (a torn tail). A follower takes over; the crashed leader stays down "
            "with the partial batch at the end of its .log, which recovery would truncate.",
            torn_tail,
            min_brokers=2,
        ),
        Scenario(
            "corrupt-batch",
            "After a recovery-point checkpoint, more data is written; a follower is "
            "killed and one bit inside a batch above its checkpointed recovery point is flipped on disk "
            "(the CRC-32C no longer matches). Kafka's recovery would truncate the segment at that batch.",
            corrupt_batch,
            min_brokers=2,
        ),
        Scenario(
            "stale-index",
            "A follower loses power: its active segment's data was never flushed and is "
            "gone, but the memory-mapped offset/time index pages were written back, so the index holds "
            "entries pointing beyond the end of the .log (an unclean-shutdown artefact).",
            stale_index,
            min_brokers=2,
        ),
        Scenario(
            "hw-ahead-of-log",
            "A follower loses power after its replication-offset-checkpoint (fsynced "
            "every 5 s) recorded a high watermark covering data that was never flushed: the checkpoint "
            "claims more than the log holds (HW above LEO).",
            hw_ahead_of_log,
            min_brokers=2,
        ),
        Scenario(
            "random",
            "Composes random faults from the seed: produce bursts with acks 0/1/all, stalled "
            "followers (ISR shrink/expand), kill -9 and power-loss crashes with torn tails and surviving "
            "index pages, delayed fencing, restarts with recovery, controlled shutdowns, bit flips, and "
            "sometimes unclean leader election. The ground truth records whatever resulted.",
            random_scenario,
        ),
        Scenario(
            "group-commit-lost-range",
            "Consumer groups through an unclean election: topic t0 on brokers 1 and 2, "
            "__consumer_offsets on broker 3. Phase A is replicated; the follower is killed; phase B "
            "(acks=1) is committed by the lone leader. Group safe-app committed inside phase A, orders-app "
            "half-way through phase B, reports-app at its end. The leader is killed, broker 2 is elected "
            "uncleanly and takes the fewer records of phase C at phase B's offsets. Expected findings: "
            "KA710 (phase B lost on broker 1), KA721 for orders-app (it consumed records that no longer "
            "exist and will skip the different records now at those offsets), KA720 and KA721 for "
            "reports-app (its committed offset is above the new leader's log end offset, and it consumed "
            "all of phase B), nothing for safe-app; plus the unclean election's KA601, KA620, KA702, KA704.",
            group_commit_lost_range,
            min_brokers=3,
        ),
        Scenario(
            "txn-marker-lost",
            "A transaction whose data was replicated but whose COMMIT marker only reached the "
            "old leader: transactional topic t0 on brokers 1 and 2, __transaction_state on broker 3. "
            "After committed and aborted transactions (phase A), transaction T writes its data to both "
            "replicas; the follower is killed; T's COMMIT marker and more transactions (phase B) reach "
            "broker 1 only; the coordinator completes T and those transactions. Broker 1 is killed, the "
            "producer is replaced, broker 2 is elected uncleanly and takes phase C. Expected findings: "
            "KA713 (T hangs on the new leader: its last stable offset is frozen at T's first offset), "
            "KA714 (the coordinator no longer tracks T as ongoing), KA712 (the markers broker 1 holds "
            "are lost), KA710 counting only the committed data records of phase B (aborted records and "
            "markers excluded); plus the unclean election's KA601 and KA620.",
            txn_marker_lost,
            min_brokers=3,
        ),
        Scenario(
            "offsets-commit-lost",
            "A commit that only the truncated __consumer_offsets replica had: the offsets "
            "partitions are on brokers 1 (leader, the group coordinator) and 2, topic t0 on brokers 3 "
            "and 2. A group commits inside phase A (replicated), then commits the end of phase B, which "
            "broker 1 appends but broker 2 never fetches: broker 1 is killed, broker 2 (in the ISR) "
            "becomes the coordinator cleanly and another group of the same offsets partition commits "
            "at that offset. Expected findings: KA723 (the group's last commit exists only on broker "
            "1, which truncates; the group falls back to its earlier commit and re-reads the records in "
            "between), KA601 and KA711 for the divergent uncommitted commit record.",
            offsets_commit_lost,
            min_brokers=3,
        ),
        Scenario(
            "recreated-topic",
            "A topic deleted and re-created while a broker was down: t0 (3 partitions or --partitions) on "
            "brokers 1-3 is produced with acks=all and consumed (groups orders-app and billing-app commit); "
            "broker 3 shuts down cleanly; t0 is deleted (RemoveTopicRecord: brokers 1 and 2 rename their "
            "replicas <topic>-<p>.<uuid>-delete, the group coordinator writes offset tombstones) and "
            "re-created with a new topic ID on brokers 1 and 2 only, which take fewer records at the same "
            "offsets from 0; orders-app consumes and commits the new incarnation; the brokers shut down "
            "within file.delete.delay.ms, so the -delete directories stay. Broker 3 still holds the old "
            "incarnation (old topic ID in partition.metadata, its old HW checkpoints). Expected findings: "
            "KA605 for each of broker 3's old-incarnation replicas, KA608 for each -delete directory, "
            "nothing else for t0 (no divergence, loss or HW violation: replicas are compared within the "
            "current topic ID) and no group consequence; scan: KA510 on broker 3's t0 directories, KA509 "
            "on the -delete directories.",
            recreated_topic,
            min_brokers=3,
        ),
        Scenario(
            "recreated-topic-restarted",
            "recreated-topic, then broker 3 comes back after file.delete.delay.ms (brokers 1 and 2 have "
            "removed their -delete directories): its old-incarnation logs have a topic ID the metadata no "
            "longer knows, so Kafka renames them <topic>-<p>.<uuid>-stray at load (their checkpoint entries "
            "are dropped), and it shuts down cleanly. Expected findings: KA605 for each of broker 3's -stray "
            "replicas (an old incarnation: their topic ID is not t0's current one), nothing else for t0 and "
            "no group consequence; scan: KA508 on the -stray directories.",
            recreated_topic_restarted,
            min_brokers=3,
        ),
        Scenario(
            "jbod-move",
            "Every broker has two log dirs (meta.properties with the same node.id and cluster.id, each "
            "with its own directory.id); the controller records in PartitionRecord/PartitionChangeRecord "
            "directories which one holds each replica (KIP-858). After acks=all traffic, broker 2 starts "
            "moving its replica of the first partition to its other log dir (AlterReplicaLogDirs): the "
            "throttled copy stops at a third of the log (a <topic>-<p>.<uuid>-future directory with its own "
            "partition.metadata), the live replica stays where it was; broker 3 moves its replica of the "
            "last partition, the copy catches up and the controller accepts the new directory, but the "
            "brokers shut down before the future log is promoted, so the assignment names the log dir of "
            "the -future copy rather than the one holding the live replica. Expected findings: KA607 for "
            "each -future directory, KA610 for broker 3's replica, no divergence or loss; scan: KA509 on "
            "the -future directories.",
            jbod_move,
            min_brokers=3,
        ),
    ]
}
