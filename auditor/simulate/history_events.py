"""The ``history`` scenario's injected events: the multi-night ones (an unclean election, a reformatted log
dir, a reassignment, a recreated topic, the lags) and the one-night overrides of a capture's checkpoints."""

from __future__ import annotations

from collections.abc import Callable

from auditor.simulate.history_model import Partition, Replica, random_id
from auditor.simulate.history_run import (
    BURST,
    LAG_RATE,
    RETENTION_SEGMENTS,
    Event,
    ExpectedFinding,
    capture_ms,
)
from auditor.simulate.history_state import SimState
from auditor.text import iso_time as iso


class Events(SimState):
    """The events, called by :class:`~auditor.simulate.history_nights.Sim` on their nights."""

    def _unclean_prepare(self, day: int) -> None:
        choices = []
        for p in self._candidates(day - 1, day + 2):
            leaders = [b for b in p.replicas if b in self.role_candidates]
            if leaders and all(not self.model.frozen(r) for r in p.replicas.values()):
                choices.append((self.missing_broker in p.replicas, p.tp, p, leaders))
        if not choices:
            raise ValueError("no partition for the unclean election (add --partitions)")
        choices.sort(key=lambda c: (c[0], c[1]))
        best = [c for c in choices if c[0] == choices[0][0]]
        _, _, p, leaders = self.rng.choice(best)
        a = self.unclean_broker = self.rng.choice(leaders)
        if p.leader != a:
            self.model.elect(p, a)  # preferred leader election: broker a leads
        self.unclean_partition = p
        self.unclean_followers = [b for b in p.replicas if b != a]
        self._reserve(p, range(day - 1, day + 3), fragile=True)  # until the night after the election

    def _unclean_crash(self, day: int, at: int) -> None:
        m, p, a = self.model, self.unclean_partition, self.unclean_broker
        assert p is not None and a is not None
        old_hw = p.replicas[a].hw
        m.stop(a, clean=False)  # kill -9: its other partitions elect in-sync followers
        new_leader = max(self.unclean_followers, key=lambda b: (p.replicas[b].leo, -b))
        start = m.unclean_elect(p, new_leader)  # unclean.leader.election.enable: the stale follower leads
        for b in self.unclean_followers:
            p.replicas[b].stuck = False  # the other fenced follower fetches from the new leader
        m.start(a, at + 15 * 60_000)
        m.truncate(p, a, start)  # the old leader rejoins as a follower and truncates to the new epoch
        note = f"old leader's HW {old_hw} > new epoch {p.epoch} start {start}"
        for code in ("KA801", "KA805", "KA804"):
            self._finding(code, day, a, p, note)
        self._event(
            "unclean-election",
            day,
            ["KA801", "KA804", "KA805"],
            f"the followers of {p.topic}-{p.partition} were fenced; broker {a} committed records alone "
            f"(HW {old_hw}), was killed; broker {new_leader} was elected uncleanly (epoch {p.epoch} from "
            f"offset {start}) and broker {a} truncated to it on restart",
            broker=a,
            p=p,
            details={
                "newLeader": new_leader,
                "epoch": p.epoch,
                "startOffset": start,
                "oldHighWatermark": old_hw,
            },
        )

    def _reformat(self, day: int, at: int) -> None:
        m, b = self.model, self.reformat_broker
        br = m.brokers[b]
        m.stop(b, clean=True)
        ld = br.log_dirs[1]
        old = ld.directory_id
        ld.directory_id = random_id(self.rng)
        ld.formatted_ms = at + 5 * 60_000
        for p in m.partitions.values():
            r = p.replicas.get(b)
            if r is not None and r.log_dir == 1:
                m.new_replica(p, b, 1)  # re-replicated from the leader
        m.start(b, at + 10 * 60_000)
        self._expect_event(
            "KA810",
            "log-dir-reformatted",
            day,
            b,
            f"broker {b}'s log dir {ld.path} was replaced and formatted again (new directory.id); its "
            "partitions were fetched again from their leaders",
            note=f"{ld.path}: directory.id {old} -> {ld.directory_id}",
            details={"logDir": ld.path, "before": old, "after": ld.directory_id},
        )

    def _reassign(self, day: int) -> None:
        m, rng = self.model, self.rng
        for p in self._candidates(day - 1, day + 1):
            movers = [b for b in m.in_sync(p) if b != p.leader]
            targets = [b for b in sorted(m.brokers) if b not in p.replicas and not m.brokers[b].stopped]
            if movers and targets:
                break
        else:
            raise ValueError("no partition to reassign (add --brokers or --partitions)")
        old, new = rng.choice(movers), rng.choice(targets)
        del p.replicas[old]
        m.new_replica(p, new, rng.randrange(len(m.brokers[new].log_dirs)))
        self._reserve(p, range(day - 1, day + 2), fragile=True)
        self._finding("KA807", day, old, p)
        self._finding("KA808", day, new, p)
        self._event(
            "partition-reassigned",
            day,
            ["KA807", "KA808"],
            f"{p.topic}-{p.partition} was reassigned from broker {old} to broker {new}",
            p=p,
            details={"from": old, "to": new},
        )

    def _recreate(self, day: int) -> None:
        m = self.model
        topic = self.recreated_topic
        parts = sorted((p for p in m.partitions.values() if p.topic == topic), key=lambda p: p.partition)
        topic_id = random_id(self.rng)
        self.topic_ids[topic].append(topic_id)
        for p in parts:
            p.topic_id = topic_id
            p.epoch, p.lineage, p.leo, p.log_start = 0, [(0, 0)], 0, 0
            p.hw_by_day = [0] * (RETENTION_SEGMENTS + 1)
            p.leader = next(iter(p.replicas))
            for b, r in p.replicas.items():
                p.replicas[b] = Replica(b, r.log_dir, leo=0, hw=0, rp=0, log_start=0, epochs=[(0, 0)])
        # one finding for the topic: its partitions and brokers are listed in it
        self.findings.append(ExpectedFinding("KA814", None, topic, None, capture_ms(day), self.cluster_id))
        self.events.append(
            Event(
                "topic-recreated",
                day,
                ["KA814"],
                f"topic {topic} was deleted and created again with the same name (new topic id "
                f"{topic_id}): its partitions start again at offset 0 in leader epoch 0",
                topic=topic,
            )
        )

    @property
    def _no_lag(self) -> set[int]:
        """Brokers that may not be the lagging follower: the missing one (its stale captures would extend the
        lag) and the reformatted one (its re-created replica would end it)."""
        return {self.missing_broker, self.reformat_broker}

    def _stop_a_follower(self, first: int, last: int, what: str) -> tuple[Partition, int]:
        """An in-sync follower (not in :attr:`_no_lag`) of a partition with no other event on the nights
        ``first..last`` stops fetching; the partition is kept for it on those nights."""
        m = self.model
        for p in self._candidates(first, last):
            followers = [b for b in m.in_sync(p) if b != p.leader and b not in self._no_lag]
            if followers:
                break
        else:
            raise ValueError(f"no partition for the {what} event (add --partitions)")
        f = self.rng.choice(followers)
        p.replicas[f].stuck = True
        self._reserve(p, range(first, last + 1))
        return p, f

    def _lag_begin(self, day: int) -> None:
        p, f = self._stop_a_follower(day - 1, day + 3, "lag")
        self.lag_partition, self.lag_follower = p, f
        visible = day + 2  # above the threshold at the 2nd and 3rd nights: the run lasts 24 h at the 3rd
        self._expect_event(
            "KA806",
            "sustained-lag",
            visible,
            f,
            f"broker {f} stopped fetching {p.topic}-{p.partition} after the night of "
            f"{iso(capture_ms(day - 1))} while {LAG_RATE} records a day arrived; it caught up "
            f"before the night of {iso(capture_ms(day + 3))}",
            p=p,
            note=f"stuck from {iso(capture_ms(day - 1))}",
        )

    def _brief_begin(self, day: int) -> None:
        p, g = self._stop_a_follower(day - 1, day + 1, "brief lag")
        self.brief_partition, self.brief_follower = p, g
        self._event(
            "brief-lag",
            day,
            [],
            f"a burst of {BURST} records on {p.topic}-{p.partition} left broker {g} more than the lag "
            "threshold behind at one capture only (shorter than the lag duration: silent)",
            broker=g,
            p=p,
        )

    # ------------------------------------------------------------------------------------ overrides

    def _prev_ok(self, b: int, day: int) -> bool:
        """Broker ``b`` was captured the night before, running, and has not restarted since."""
        br = self.model.brokers[b]
        return (
            self.last_capture_of.get(b) == day - 1
            and not br.stopped
            and br.start_ms < capture_ms(day - 1)
            and not (b == self.shutdown_broker and day - 1 == self.day_of["restart-recovery-point"] - 1)
        )

    def _pick(
        self, day: int, ok: Callable[[Partition, int, Replica, tuple[int, int, int]], bool], what: str
    ) -> tuple[Partition, int, Replica]:
        """A captured, running replica for a one-night event on ``day`` (partitions busy with another event
        that night and the recreated topic excluded) that ``ok(partition, broker, replica, last)`` accepts."""
        pool = []
        for _, p in sorted(self.model.partitions.items()):
            if p.topic == self.recreated_topic or day in self.fragile.get(p.tp, set()):
                continue
            for b, r in p.replicas.items():
                key = (b, p.topic, p.partition)
                if key in self.last and not self.model.frozen(r) and ok(p, b, r, self.last[key]):
                    pool.append((p, b, r))
        if not pool:
            raise ValueError(f"no replica for the {what} event on night {day} (add --partitions)")
        return self.rng.choice(pool)

    def _overrides(self, day: int) -> None:
        rng, m = self.rng, self.model
        if day == self.day_of["log-start-backwards"]:
            p, b, r = self._pick(
                day,
                lambda p, b, r, last: p.delete_records and last[2] > 0 and self._prev_ok(b, day),
                "log-start-backwards",
            )
            before = self.last[(b, p.topic, p.partition)][2]
            r.log_start = rng.randint(max(0, before - 5000), before - 1)
            self._expect_event(
                "KA802",
                "log-start-backwards",
                day,
                b,
                f"broker {b}'s log-start-offset-checkpoint takes {p.topic}-{p.partition} back "
                f"from {before} to {r.log_start}",
                p=p,
                note=f"{before} -> {r.log_start}",
            )
        if day == self.day_of["recovery-point-backwards"]:
            p, b, r = self._pick(
                day,
                lambda p, b, r, last: (
                    last[1] - r.log_start >= 2 and self._prev_ok(b, day) and b != self.missing_broker
                ),
                "recovery-point-backwards",
            )
            before = self.last[(b, p.topic, p.partition)][1]
            r.rp = rng.randint(r.log_start, before - 1)
            self.recovery_broker = b
            self._expect_event(
                "KA803",
                "recovery-point-backwards",
                day,
                b,
                f"broker {b}'s recovery point of {p.topic}-{p.partition} goes back from {before} "
                f"to {r.rp} with no restart in between",
                p=p,
                note=f"{before} -> {r.rp}",
            )
        if day == self.day_of["restart-recovery-point"]:
            z = self.shutdown_broker
            p, b, r = self._pick(
                day, lambda p, b, r, last: b == z and last[1] - r.log_start >= 2, "restart-recovery-point"
            )
            before = self.last[(b, p.topic, p.partition)][1]
            r.rp = rng.randint(r.log_start, before - 1)
            self._event(
                "restart-recovery-point",
                day,
                [],
                f"broker {z} restarted after the clean shutdown captured the night before: the recovery "
                f"point of {p.topic}-{p.partition} goes back from {before} to {r.rp} (a restart: silent)",
                broker=z,
                p=p,
            )
        if day == self.day_of["malformed-checkpoint"]:
            avoid = {self.recovery_broker, self.missing_broker}
            b = rng.choice([b for b in sorted(m.brokers) if b not in avoid])
            dirs = [i for i, _ in enumerate(m.brokers[b].log_dirs) if self._replicas_in(b, i)]
            ld = m.brokers[b].log_dirs[rng.choice(dirs)]
            self.torn[(day, b)] = ld.name
            line = len(self._replicas_in(b, m.brokers[b].log_dirs.index(ld))) + 2  # the torn last line
            self._expect_event(
                "KA812",
                "malformed-checkpoint",
                day,
                b,
                f"broker {b}'s {ld.path}/recovery-point-offset-checkpoint is torn: its last line "
                "ends after the topic name",
                note=f"{ld.path}/recovery-point-offset-checkpoint line {line}",
                details={"file": f"{ld.path}/recovery-point-offset-checkpoint", "line": line},
            )
        if day == self.day_of["refused-entry"] and self.opts.format != "folders":
            b = rng.choice([b for b in sorted(m.brokers) if b != self.missing_broker])
            member = f"{m.brokers[b].log_dirs[0].path.strip('/')}/restored-0/leader-epoch-checkpoint"
            self.symlink[(day, b)] = (member, "/etc/shadow")
            self._finding("KA813", day, None, note=member, cluster=None)  # in no capture: no cluster
            self._event(
                "refused-entry",
                day,
                ["KA813"],
                f"broker {b}'s archive holds {member}, a symbolic link to /etc/shadow (refused, never read)",
                broker=b,
                details={"member": member},
            )

    def _replicas_in(self, broker: int, log_dir: int) -> list[Partition]:
        return [
            p
            for _, p in sorted(self.model.partitions.items())
            if broker in p.replicas and p.replicas[broker].log_dir == log_dir
        ]
