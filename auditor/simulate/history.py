"""``kafka-auditor simulate history``: a month of nightly checkpoint dumps of a KRaft cluster, with injected
regressions and the findings ``kafka-auditor report --warehouse`` must give (ground truth).

The cluster (:mod:`auditor.simulate.history_model`) has ``--brokers`` brokers (even ids run two log dirs,
JBOD; ids not divisible by 3 have a collector that writes the ``kafka-auditor-capture.json`` manifest) and
``--topics`` topics of ``--partitions`` partitions, replication factor 3, replicas spread round robin. It
has been running for a while when the month starts (offsets in the millions, a few past leader epochs).
Every night at 02:00:00Z (from 2026-01-01) every broker's log dirs are captured. Between captures, producers
append, followers fetch, DeleteRecords (even-numbered topics) and retention (odd-numbered topics) move log
start offsets, leaders change cleanly now and then, brokers are restarted.

Injected events (each at a day, broker and partition chosen from the seed; all visible by the fourth-last
night, except the two at the end): an unclean leader election whose old leader rejoins (KA801, KA804,
KA805), a log start offset that goes back (KA802), a recovery point that goes back without a restart (KA803)
and one after a restart (silent), a follower stuck for three nights (KA806) and one behind for a single night
(silent), a partition reassigned from one broker to another (KA807, KA808), a log dir reformatted (KA810), a
topic deleted and recreated (KA814), a torn recovery-point checkpoint (KA812), a symlink in an archive
(KA813, archives only), a broker whose dumps stop three nights before the end (KA811) and a broker whose
cluster.id changes on the last night (KA809). Nothing else may be reported.

Ground truth (``ground-truth.json``, version 1): the run's parameters, the captures, brokers, topics, the
events (silent ones included) and ``expected_findings``: {code, cluster, broker, topic, partition, time}
where ``time`` is the ISO-8601 time of the capture in which the finding becomes visible (the later capture of
a comparison; for KA806 the capture at which the lag has lasted ``lag_duration``; for KA811 the cluster's
first capture more than ``missing_after`` after the broker's last one) and ``broker``/``topic``/``partition``
are null where the finding has none (KA809-KA813 have no partition; KA813 has no broker either: the refused
member is outside every dump; KA814 is one finding per recreated topic, with neither).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from auditor.layout.dumps import MANIFEST
from auditor.simulate.history_model import Broker, LogDir, Model, Partition, Replica, random_id
from auditor.simulate.history_write import (
    FORMATS,
    BrokerCapture,
    LogDirDump,
    iso,
    write_archive,
    write_folders,
)
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata

__all__ = [
    "HISTORY_DESCRIPTION",
    "HistoryOptions",
    "HistoryRun",
    "MANIFEST",
    "START_MS",
    "simulate_history",
    "run_history",
]

GROUND_TRUTH_VERSION = 1
START_MS = int(datetime(2026, 1, 1, 2, 0, 0, tzinfo=timezone.utc).timestamp() * 1000)
HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS
RF = 3
MAX_RATE = 2500
"""Records per partition per day at most in benign traffic: three days of it stay below the lag threshold, so
a broker whose dumps stop (KA811) does not look like a lagging replica within the run."""
LAG_RATE = 7000
"""Records per day on the partition of the sustained-lag event: above 10,000 behind from the second night."""
BURST = 15000
"""The one-night burst of the brief-lag event."""
SOLO_RECORDS = 3000
"""Records the old leader of the unclean election commits alone before it crashes."""
RETENTION_DELETE_RECORDS = 4
"""DeleteRecords topics: the log start offset follows the high watermark of this many nights before."""
RETENTION_SEGMENTS = 7
"""Retention topics: whole segments older than this many nights are deleted."""
ELECTION_PROBABILITY = 0.03
TOPIC_NAMES = (
    "orders",
    "payments",
    "page-views",
    "inventory",
    "shipments",
    "audit.events",
    "sessions",
    "billing_v2",
)

HISTORY_DESCRIPTION = (
    "Nightly checkpoint dumps (no segments) of a KRaft cluster over --days nights (from "
    "2026-01-01T02:00:00Z), as folders and/or tar.gz archives, for `ingest` and `report --warehouse`: "
    "producers, followers, DeleteRecords, retention, clean elections, restarts and JBOD log dirs evolve by "
    "Kafka's rules, and the seed injects an unclean election whose old leader rejoins (KA801, KA804, KA805), "
    "a log start offset going back (KA802), a recovery point going back without a restart (KA803) and one "
    "after a restart (silent), a follower stuck for three nights (KA806) and one behind for a single night "
    "(silent), a partition reassigned between brokers (KA807, KA808), a reformatted log dir (KA810), a topic "
    "recreated (KA814), a torn checkpoint (KA812), a symlink in an archive (KA813), a broker whose dumps "
    "stop three nights before the end (KA811) and a cluster.id change on the last night (KA809). "
    "Options: --days, --format folders|archives|both, --brokers (>= 5), --topics (>= 2), --partitions."
)


@dataclass(frozen=True)
class HistoryOptions:
    """The parameters of a run (and of the report settings its ground truth assumes)."""

    seed: int = 0
    brokers: int = 6
    topics: int = 4
    partitions: int = 8
    days: int = 30
    format: str = "both"
    lag_records: int = 10_000
    lag_duration_ms: int = DAY_MS
    missing_after_ms: int = 12 * HOUR_MS

    def validate(self) -> None:
        """Raise ``ValueError`` naming the option a run cannot honour."""
        if self.format not in FORMATS:
            raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if not 10 <= self.days <= 366:
            raise ValueError(f"--days must be between 10 and 366 for the history scenario, got {self.days}")
        if not 5 <= self.brokers <= 64:
            raise ValueError(f"the history scenario needs 5 to 64 brokers (got --brokers {self.brokers})")
        if not 2 <= self.topics <= len(TOPIC_NAMES) * 100:
            raise ValueError(f"the history scenario needs at least 2 topics (got --topics {self.topics})")
        if not 1 <= self.partitions <= 10000:
            raise ValueError(f"--partitions must be between 1 and 10000, got {self.partitions}")
        if (self.topics - 1) * self.partitions < 4:
            raise ValueError(
                "the history scenario needs at least 4 partitions outside the recreated topic "
                f"((--topics - 1) x --partitions >= 4, got {(self.topics - 1) * self.partitions})"
            )


@dataclass
class ExpectedFinding:
    """One finding the report must give (``time``: the capture that makes it visible)."""

    code: str
    broker: int | None
    topic: str | None
    partition: int | None
    time_ms: int
    cluster: str | None
    note: str = ""

    def as_json(self) -> dict:
        return {
            "code": self.code,
            "cluster": self.cluster,
            "broker": self.broker,
            "topic": self.topic,
            "partition": self.partition,
            "time": iso(self.time_ms),
            "note": self.note,
        }


@dataclass
class Event:
    kind: str
    day: int
    codes: list[str]
    description: str
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    details: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "day": self.day,
            "time": iso(capture_ms(self.day)),
            "codes": self.codes,
            "silent": not self.codes,
            "broker": self.broker,
            "topic": self.topic,
            "partition": self.partition,
            "description": self.description,
            **({"details": self.details} if self.details else {}),
        }


@dataclass
class HistoryRun:
    """What :func:`simulate_history` did: the model at the end, the captures (empty when they were written
    to disk as they were made), the events and the expected findings. ``states`` holds, per capture day,
    (broker, topic, partition) -> (log end offset, high watermark, recovery point, log start offset, epoch
    cache) of every captured replica."""

    options: HistoryOptions
    model: Model
    cluster_id: str
    new_cluster_id: str
    captures: list[BrokerCapture]
    events: list[Event]
    findings: list[ExpectedFinding]
    roles: dict[str, int]
    states: dict[int, dict[tuple[int, str, int], tuple[int, int, int, int, list[tuple[int, int]]]]]
    topic_ids: dict[str, list[str]]
    broker_days: dict[int, dict[int, tuple[int, bool]]]
    """Per capture day, captured broker -> (brokerStartTime ms, stopped cleanly at the capture)."""


def capture_ms(day: int) -> int:
    return START_MS + day * DAY_MS


# ------------------------------------------------------------------------------------------- the cluster


def _topic_name(i: int) -> str:
    base = TOPIC_NAMES[i % len(TOPIC_NAMES)]
    return base if i < len(TOPIC_NAMES) else f"{base}-{i // len(TOPIC_NAMES)}"


def _initial_model(opts: HistoryOptions, rng: random.Random) -> Model:
    cluster_id = random_id(rng)
    brokers: dict[int, Broker] = {}
    for b in range(1, opts.brokers + 1):
        names = ["data-1", "data-2"] if b % 2 == 0 else ["data"]
        formatted = START_MS - rng.randint(60, 400) * DAY_MS - rng.randint(0, DAY_MS)
        dirs = [LogDir(n, f"/var/lib/kafka/{n}", random_id(rng), formatted) for n in names]
        start = START_MS - rng.randint(2, 40) * DAY_MS - rng.randint(0, DAY_MS)
        brokers[b] = Broker(b, dirs, b % 3 != 0, start, cluster_id, broker_epoch=rng.randint(100, 5000))
    model = Model(rng, cluster_id, brokers, {})
    g = 0
    for i in range(opts.topics):
        name = _topic_name(i)
        topic_id = random_id(rng)
        for part in range(opts.partitions):
            ids = [(g + k) % opts.brokers + 1 for k in range(RF)]
            low = rng.randint(200, 800)
            p = _fresh_partition(model, name, part, topic_id, ids, g, delete_records=i % 2 == 0)
            p.rate = (low, min(MAX_RATE, low + rng.randint(300, 1700)))
            leo = rng.randint(200_000, 4_000_000)
            lineage = [(0, 0)]
            epoch = 0
            for start in sorted(rng.sample(range(1, leo - 60_000), rng.randint(0, 4))):
                epoch += rng.randint(1, 3)
                lineage.append((epoch, start))
            p.lineage, p.epoch, p.leo = lineage, epoch, leo
            p.replicas[p.leader].leo = leo
            daily = sum(p.rate) // 2
            p.hw_by_day = [leo - daily * k for k in range(RETENTION_SEGMENTS + 1, 0, -1)]
            for r in p.replicas.values():
                r.leo = leo if r.broker == p.leader else leo - rng.randint(0, 40)
                r.hw = leo - 200
                r.rp = p.floor_segment(r.leo)
            _move_log_start(p)
            model.settle(p)
            g += 1
    return model


def _fresh_partition(
    model: Model, topic: str, part: int, topic_id: str, ids: list[int], g: int, *, delete_records: bool
) -> Partition:
    p = Partition(
        topic,
        part,
        topic_id,
        leader=ids[0],
        epoch=0,
        lineage=[(0, 0)],
        leo=0,
        lso=0,
        segment=model.rng.randint(1500, 6000),
        delete_records=delete_records,
        rate=(200, 1000),
        hw_by_day=[0] * (RETENTION_SEGMENTS + 1),
    )
    for b in ids:
        jbod = len(model.brokers[b].log_dirs)
        p.replicas[b] = Replica(b, g % jbod, leo=0, hw=0, rp=0, lso=0, epochs=[(0, 0)])
    model.partitions[p.tp] = p
    return p


def _move_log_start(p: Partition) -> None:
    """DeleteRecords follows the HW of a few nights ago; retention deletes whole old segments."""
    if p.delete_records:
        target = p.hw_by_day[-RETENTION_DELETE_RECORDS]
    else:
        target = p.floor_segment(p.hw_by_day[-RETENTION_SEGMENTS])
    p.lso = max(p.lso, min(target, p.replicas[p.leader].hw))


# ------------------------------------------------------------------------------------------- the run


class _Sim:
    def __init__(self, opts: HistoryOptions, sink: Callable[[BrokerCapture], None] | None = None) -> None:
        self.opts = opts
        self.sink = sink
        self.rng = random.Random(opts.seed)
        self.model = _initial_model(opts, self.rng)
        self.cluster_id = self.model.cluster_id
        self.new_cluster_id = random_id(self.rng)
        self.events: list[Event] = []
        self.findings: list[ExpectedFinding] = []
        self.captures: list[BrokerCapture] = []
        self.states: dict[int, dict] = {}
        self.broker_days: dict[int, dict[int, tuple[int, bool]]] = {}
        self.reserved: dict[tuple[str, int], set[int]] = {}
        self.fragile: dict[tuple[str, int], set[int]] = {}
        self.last: dict[tuple[int, str, int], tuple[int, int, int]] = {}  # last captured (hw, rp, lso)
        self.last_capture_of: dict[int, int] = {}
        self.torn: dict[tuple[int, int], str] = {}  # (day, broker) -> log dir name with a torn file
        self.symlink: dict[tuple[int, int], tuple[str, str]] = {}
        # chosen on their nights
        self.unclean_partition: Partition | None = None
        self.unclean_followers: list[int] = []
        self.lag_partition: Partition | None = None
        self.lag_follower: int | None = None
        self.brief_partition: Partition | None = None
        self.brief_follower: int | None = None
        self.recovery_broker: int | None = None
        self.topic_ids = {t: [p.topic_id] for t, p in ((p.topic, p) for p in self.model.partitions.values())}
        self._plan()

    # ------------------------------------------------------------------------------------ planning

    def _plan(self) -> None:
        d, rng, brokers = self.opts.days, self.rng, sorted(self.model.brokers)
        manifests = [b for b in brokers if self.model.brokers[b].manifest]
        self.reformat_broker = rng.choice([b for b in manifests if len(self.model.brokers[b].log_dirs) > 1])
        unlisted = [b for b in brokers if b not in manifests]
        self.missing_broker = rng.choice(unlisted or [b for b in brokers if b != self.reformat_broker])
        self.renamed_broker = rng.choice([b for b in brokers if b != self.missing_broker])
        # the unclean election's old leader and the broker stopped during a capture are chosen on their
        # nights among these (see _unclean_prepare and _evening)
        self.role_candidates = [b for b in manifests if b not in (self.reformat_broker, self.missing_broker)]
        self.unclean_broker: int | None = None
        self.shutdown_broker: int | None = None
        self.recreated_topic = _topic_name(self.opts.topics - 1)
        kinds = [
            "unclean-election",
            "partition-reassigned",
            "log-start-backwards",
            "topic-recreated",
            "restart-recovery-point",
            "brief-lag",
            "recovery-point-backwards",
            "log-dir-reformatted",
            "malformed-checkpoint",
            "refused-entry",
        ]
        span = d - 5
        self.day_of = {k: 1 + round(i * span / (len(kinds) - 1)) for i, k in enumerate(kinds)}
        self.lag_start = max(0, min(d // 6, d - 8))  # stuck after this capture, caught up 4 nights later
        busy = set(self.day_of.values()) | {v - 1 for v in self.day_of.values()}
        busy |= set(range(self.lag_start, self.lag_start + 5))
        quiet = [day for day in range(1, d - 1) if day not in busy]
        others = [b for b in brokers if b not in (self.missing_broker, self.renamed_broker)]
        self.restarts: dict[int, list[int]] = {}
        for day in quiet:
            if rng.random() < 0.5:
                self.restarts.setdefault(day, []).append(rng.choice(others))

    def _reserve(self, p: Partition, days: range, *, fragile: bool = False) -> None:
        """Keep other multi-night events (and benign elections) off ``p`` on ``days``; ``fragile`` also keeps
        the one-night overrides off it (its replicas' offsets or presence change those nights)."""
        self.reserved.setdefault(p.tp, set()).update(days)
        if fragile:
            self.fragile.setdefault(p.tp, set()).update(days)

    def _candidates(self, first: int, last: int) -> list[Partition]:
        """Partitions outside the recreated topic with no other event on the nights ``first..last``."""
        window = set(range(first, last + 1))
        return [
            p
            for _, p in sorted(self.model.partitions.items())
            if p.topic != self.recreated_topic and not self.reserved.get(p.tp, set()) & window
        ]

    def _finding(
        self,
        code: str,
        day: int,
        broker: int | None,
        p: Partition | None = None,
        note: str = "",
        cluster: str | None = "",
    ) -> None:
        """Expect ``code`` at the capture of ``day`` (``cluster``: the cluster's id unless given)."""
        cluster = self.cluster_id if cluster == "" else cluster
        where = (p.topic, p.partition) if p else (None, None)
        self.findings.append(ExpectedFinding(code, broker, *where, capture_ms(day), cluster, note))

    # ------------------------------------------------------------------------------------ the days

    def run(self) -> None:
        for day in range(self.opts.days):
            self._morning(day)
            self._traffic(day)
            for p in self.model.partitions.values():
                self.model.settle(p)
            self._evening(day)
            self._overrides(day)
            self._capture(day)
        self._end_findings()

    def _morning(self, day: int) -> None:
        m, at = self.model, capture_ms(day) - 20 * HOUR_MS
        if day == self.day_of["restart-recovery-point"] and self.shutdown_broker is not None:
            m.start(self.shutdown_broker, at)
        for b in self.restarts.get(day, []):
            m.stop(b, clean=True)
            m.start(b, at + self.rng.randint(60_000, 600_000))
        if day == self.day_of["unclean-election"]:
            self._unclean_crash(day, at)
        if day == self.day_of["log-dir-reformatted"]:
            self._reformat(day, at)
        if day == self.day_of["partition-reassigned"]:
            self._reassign(day)
        if day == self.day_of["topic-recreated"]:
            self._recreate(day)
        if day == self.lag_start + 1:
            self._lag_begin(day)
        if day == self.lag_start + 4:
            assert self.lag_partition is not None and self.lag_follower is not None
            self.lag_partition.replicas[self.lag_follower].stuck = False
        if day == self.day_of["brief-lag"]:
            self._brief_begin(day)
        if day == self.day_of["brief-lag"] + 1:
            assert self.brief_partition is not None and self.brief_follower is not None
            self.brief_partition.replicas[self.brief_follower].stuck = False
        if day == self.day_of["unclean-election"] - 1:
            self._unclean_prepare(day)

    def _traffic(self, day: int) -> None:
        m, rng = self.model, self.rng
        for _tp, p in sorted(m.partitions.items()):
            n = rng.randint(*p.rate)
            if p is self.lag_partition and self.lag_start < day <= self.lag_start + 3:
                n = LAG_RATE
            if p is self.brief_partition and day == self.day_of["brief-lag"]:
                n += BURST
            if p is self.unclean_partition and day == self.day_of["unclean-election"]:
                n = rng.randint(300, 600)  # the new leader's first records: fewer than the old leader had
            first = max(1, n // 2)
            m.produce(p, first)
            if p is self.unclean_partition and day == self.day_of["unclean-election"] - 1:
                m.settle(p)
                for b in self.unclean_followers:
                    p.replicas[b].stuck = True  # fenced: the ISR shrinks to the leader
                m.produce(p, SOLO_RECORDS)
                continue
            if rng.random() < ELECTION_PROBABILITY and self._elections_allowed(p, day):
                others = [b for b in m.in_sync(p) if b != p.leader]
                if others:
                    m.elect(p, rng.choice(others))
            m.produce(p, n - first)
        for p in m.partitions.values():
            _move_log_start(p)

    def _elections_allowed(self, p: Partition, day: int) -> bool:
        return not (self.reserved.get(p.tp, set()) & {day - 1, day, day + 1})

    def _evening(self, day: int) -> None:
        if day == self.day_of["restart-recovery-point"] - 1:
            m, tomorrow = self.model, day + 1
            hosting = {
                b
                for _, p in sorted(m.partitions.items())
                if p.topic != self.recreated_topic and tomorrow not in self.fragile.get(p.tp, set())
                for b, r in p.replicas.items()
                if not m.frozen(r)
            }
            candidates = [b for b in self.role_candidates if b != self.unclean_broker]
            eligible = [b for b in candidates if b in hosting]
            self.shutdown_broker = self.rng.choice(eligible or candidates)
            self.model.stop(self.shutdown_broker, clean=True)  # stopped for maintenance during the capture
            self.events.append(
                Event(
                    "clean-shutdown-captured",
                    day,
                    [],
                    f"broker {self.shutdown_broker} is stopped cleanly during the night's capture: its "
                    "log dirs hold .kafka_cleanshutdown and recovery points at the log end",
                    broker=self.shutdown_broker,
                )
            )

    # ------------------------------------------------------------------------------------ events

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
        self.events.append(
            Event(
                "unclean-election",
                day,
                ["KA801", "KA804", "KA805"],
                f"the followers of {p.topic}-{p.partition} were fenced; broker {a} committed records alone "
                f"(HW {old_hw}), was killed; broker {new_leader} was elected uncleanly (epoch {p.epoch} from "
                f"offset {start}) and broker {a} truncated to it on restart",
                broker=a,
                topic=p.topic,
                partition=p.partition,
                details={
                    "newLeader": new_leader,
                    "epoch": p.epoch,
                    "startOffset": start,
                    "oldHighWatermark": old_hw,
                },
            )
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
        self._finding("KA810", day, b, note=f"{ld.path}: directory.id {old} -> {ld.directory_id}")
        self.events.append(
            Event(
                "log-dir-reformatted",
                day,
                ["KA810"],
                f"broker {b}'s log dir {ld.path} was replaced and formatted again (new directory.id); its "
                "partitions were fetched again from their leaders",
                broker=b,
                details={"logDir": ld.path, "before": old, "after": ld.directory_id},
            )
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
        self.events.append(
            Event(
                "partition-reassigned",
                day,
                ["KA807", "KA808"],
                f"{p.topic}-{p.partition} was reassigned from broker {old} to broker {new}",
                topic=p.topic,
                partition=p.partition,
                details={"from": old, "to": new},
            )
        )

    def _recreate(self, day: int) -> None:
        m = self.model
        topic = self.recreated_topic
        parts = sorted((p for p in m.partitions.values() if p.topic == topic), key=lambda p: p.partition)
        topic_id = random_id(self.rng)
        self.topic_ids[topic].append(topic_id)
        for p in parts:
            p.topic_id = topic_id
            p.epoch, p.lineage, p.leo, p.lso = 0, [(0, 0)], 0, 0
            p.hw_by_day = [0] * (RETENTION_SEGMENTS + 1)
            p.leader = next(iter(p.replicas))
            for b, r in p.replicas.items():
                p.replicas[b] = Replica(b, r.log_dir, leo=0, hw=0, rp=0, lso=0, epochs=[(0, 0)])
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
        """Brokers that may not be the lagging follower: the missing one (its stale dumps would extend the
        lag) and the reformatted one (its re-created replica would end it)."""
        return {self.missing_broker, self.reformat_broker}

    def _lag_begin(self, day: int) -> None:
        m = self.model
        for p in self._candidates(day - 1, day + 3):
            followers = [b for b in m.in_sync(p) if b != p.leader and b not in self._no_lag]
            if followers:
                break
        else:
            raise ValueError("no partition for the lag event (add --partitions)")
        f = self.rng.choice(followers)
        p.replicas[f].stuck = True
        self.lag_partition, self.lag_follower = p, f
        self._reserve(p, range(day - 1, day + 4))
        visible = day + 2  # above the threshold at the 2nd and 3rd nights: the run lasts 24 h at the 3rd
        self._finding("KA806", visible, f, p, f"stuck from {iso(capture_ms(day - 1))}")
        self.events.append(
            Event(
                "sustained-lag",
                visible,
                ["KA806"],
                f"broker {f} stopped fetching {p.topic}-{p.partition} after the night of "
                f"{iso(capture_ms(day - 1))} while {LAG_RATE} records a day arrived; it caught up "
                f"before the night of {iso(capture_ms(day + 3))}",
                broker=f,
                topic=p.topic,
                partition=p.partition,
            )
        )

    def _brief_begin(self, day: int) -> None:
        m = self.model
        for p in self._candidates(day - 1, day + 1):
            followers = [b for b in m.in_sync(p) if b != p.leader and b not in self._no_lag]
            if followers:
                break
        else:
            raise ValueError("no partition for the brief lag event (add --partitions)")
        g = self.rng.choice(followers)
        p.replicas[g].stuck = True
        self.brief_partition, self.brief_follower = p, g
        self._reserve(p, range(day - 1, day + 2))
        self.events.append(
            Event(
                "brief-lag",
                day,
                [],
                f"a burst of {BURST} records on {p.topic}-{p.partition} left broker {g} more than the lag "
                "threshold behind at one capture only (shorter than the lag duration: silent)",
                broker=g,
                topic=p.topic,
                partition=p.partition,
            )
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
            r.lso = rng.randint(max(0, before - 5000), before - 1)
            self._finding("KA802", day, b, p, f"{before} -> {r.lso}")
            self.events.append(
                Event(
                    "log-start-backwards",
                    day,
                    ["KA802"],
                    f"broker {b}'s log-start-offset-checkpoint takes {p.topic}-{p.partition} back "
                    f"from {before} to {r.lso}",
                    broker=b,
                    topic=p.topic,
                    partition=p.partition,
                )
            )
        if day == self.day_of["recovery-point-backwards"]:
            p, b, r = self._pick(
                day,
                lambda p, b, r, last: (
                    last[1] - r.lso >= 2 and self._prev_ok(b, day) and b != self.missing_broker
                ),
                "recovery-point-backwards",
            )
            before = self.last[(b, p.topic, p.partition)][1]
            r.rp = rng.randint(r.lso, before - 1)
            self.recovery_broker = b
            self._finding("KA803", day, b, p, f"{before} -> {r.rp}")
            self.events.append(
                Event(
                    "recovery-point-backwards",
                    day,
                    ["KA803"],
                    f"broker {b}'s recovery point of {p.topic}-{p.partition} goes back from {before} "
                    f"to {r.rp} with no restart in between",
                    broker=b,
                    topic=p.topic,
                    partition=p.partition,
                )
            )
        if day == self.day_of["restart-recovery-point"]:
            z = self.shutdown_broker
            p, b, r = self._pick(
                day, lambda p, b, r, last: b == z and last[1] - r.lso >= 2, "restart-recovery-point"
            )
            before = self.last[(b, p.topic, p.partition)][1]
            r.rp = rng.randint(r.lso, before - 1)
            self.events.append(
                Event(
                    "restart-recovery-point",
                    day,
                    [],
                    f"broker {z} restarted after the clean shutdown captured the night before: the recovery "
                    f"point of {p.topic}-{p.partition} goes back from {before} to {r.rp} (a restart: silent)",
                    broker=z,
                    topic=p.topic,
                    partition=p.partition,
                )
            )
        if day == self.day_of["malformed-checkpoint"]:
            avoid = {self.recovery_broker, self.missing_broker}
            b = rng.choice([b for b in sorted(m.brokers) if b not in avoid])
            dirs = [i for i, _ in enumerate(m.brokers[b].log_dirs) if self._replicas_in(b, i)]
            ld = m.brokers[b].log_dirs[rng.choice(dirs)]
            self.torn[(day, b)] = ld.name
            line = len(self._replicas_in(b, m.brokers[b].log_dirs.index(ld))) + 2  # the torn last line
            self._finding("KA812", day, b, note=f"{ld.path}/recovery-point-offset-checkpoint line {line}")
            self.events.append(
                Event(
                    "malformed-checkpoint",
                    day,
                    ["KA812"],
                    f"broker {b}'s {ld.path}/recovery-point-offset-checkpoint is torn: its last line "
                    "ends after the topic name",
                    broker=b,
                    details={"file": f"{ld.path}/recovery-point-offset-checkpoint", "line": line},
                )
            )
        if day == self.day_of["refused-entry"] and self.opts.format != "folders":
            b = rng.choice([b for b in sorted(m.brokers) if b != self.missing_broker])
            member = f"{m.brokers[b].log_dirs[0].path.strip('/')}/restored-0/leader-epoch-checkpoint"
            self.symlink[(day, b)] = (member, "/etc/shadow")
            self._finding("KA813", day, None, note=member, cluster=None)  # in no dump: no cluster
            self.events.append(
                Event(
                    "refused-entry",
                    day,
                    ["KA813"],
                    f"broker {b}'s archive holds {member}, a symbolic link to /etc/shadow "
                    "(refused, never read)",
                    broker=b,
                    details={"member": member},
                )
            )

    def _replicas_in(self, broker: int, log_dir: int) -> list[Partition]:
        return [
            p
            for _, p in sorted(self.model.partitions.items())
            if broker in p.replicas and p.replicas[broker].log_dir == log_dir
        ]

    # ------------------------------------------------------------------------------------ captures

    def _captured(self, b: int, day: int) -> bool:
        return not (b == self.missing_broker and day >= self.opts.days - 3)

    def _capture(self, day: int) -> None:
        m, now = self.model, capture_ms(day)
        state: dict = {}
        for b, br in sorted(m.brokers.items()):
            if not self._captured(b, day):
                continue
            cluster = (
                self.new_cluster_id
                if (b == self.renamed_broker and day == self.opts.days - 1)
                else br.cluster_id
            )
            dumps = []
            for i, ld in enumerate(br.log_dirs):
                files = self._dump_files(b, i, ld, cluster, now, day, state)
                dumps.append(LogDirDump(ld.name, ld.path, files))
            symlinks = [self.symlink[(day, b)]] if (day, b) in self.symlink else []
            capture = BrokerCapture(b, now, dumps, symlinks)
            if self.sink is not None:
                self.sink(capture)
            else:
                self.captures.append(capture)
            self.last_capture_of[b] = day
        for p in m.partitions.values():
            p.hw_by_day.append(p.replicas[p.leader].hw)
            del p.hw_by_day[0]
        self.states[day] = state
        self.broker_days[day] = {
            b: (br.start_ms, br.clean_marker) for b, br in m.brokers.items() if self._captured(b, day)
        }
        if day == self.opts.days - 1:
            self._finding(
                "KA809",
                day,
                self.renamed_broker,
                note=f"cluster.id {self.cluster_id} -> {self.new_cluster_id}",
                cluster=self.new_cluster_id,
            )
            self.events.append(
                Event(
                    "cluster-id-changed",
                    day,
                    ["KA809"],
                    f"broker {self.renamed_broker}'s meta.properties names cluster "
                    f"{self.new_cluster_id} instead of {self.cluster_id} on the last night",
                    broker=self.renamed_broker,
                    details={"before": self.cluster_id, "after": self.new_cluster_id},
                )
            )

    def _dump_files(self, b: int, i: int, ld: LogDir, cluster: str, now: int, day: int, state: dict) -> dict:
        br = self.model.brokers[b]
        parts = self._replicas_in(b, i)
        files: dict[str, bytes] = {
            "meta.properties": format_meta_properties(
                1, b, cluster, ld.directory_id, datetime.fromtimestamp(ld.formatted_ms / 1000, timezone.utc)
            )
        }
        hw, rp, lso = [], [], []
        for p in parts:
            r = p.replicas[b]
            hw.append((p.topic, p.partition, r.hw))
            rp.append((p.topic, p.partition, r.rp))
            if p.delete_records and r.lso > 0:
                lso.append((p.topic, p.partition, r.lso))
            pdir = f"{p.topic}-{p.partition}"
            files[f"{pdir}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(r.epochs)
            files[f"{pdir}/partition.metadata"] = format_partition_metadata(p.topic_id)
            state[(b, p.topic, p.partition)] = (r.leo, r.hw, r.rp, r.lso, list(r.epochs))
            self.last[(b, p.topic, p.partition)] = (r.hw, r.rp, r.lso)
        files["replication-offset-checkpoint"] = format_offset_checkpoint(hw)
        files["recovery-point-offset-checkpoint"] = format_offset_checkpoint(rp)
        files["log-start-offset-checkpoint"] = format_offset_checkpoint(lso)
        files["cleaner-offset-checkpoint"] = format_offset_checkpoint([])
        if self.torn.get((day, b)) == ld.name:
            files["recovery-point-offset-checkpoint"] = _torn(files["recovery-point-offset-checkpoint"])
        if br.clean_marker:
            files[".kafka_cleanshutdown"] = json.dumps(
                {"version": 0, "brokerEpoch": br.broker_epoch}, separators=(",", ":")
            ).encode()
        if br.manifest:
            manifest = {
                "captureTime": iso(now),
                "broker": b,
                "cluster": cluster,
                "logDir": ld.path,
                "brokerStartTime": iso(br.start_ms),
            }
            files[MANIFEST] = (json.dumps(manifest, indent=1) + "\n").encode()
        return files

    def _end_findings(self) -> None:
        d = self.opts.days
        m_last = capture_ms(d - 4)
        visible = next(
            day for day in range(d - 3, d) if capture_ms(day) - m_last > self.opts.missing_after_ms
        )
        self._finding("KA811", visible, self.missing_broker, note=f"last capture {iso(m_last)}")
        self.events.append(
            Event(
                "broker-missing",
                visible,
                ["KA811"],
                f"broker {self.missing_broker}'s dumps stop after the night of {iso(m_last)} (its collector "
                "broke; the broker keeps running)",
                broker=self.missing_broker,
            )
        )


def _torn(data: bytes) -> bytes:
    """A checkpoint whose last line ends after its first token (a torn write): Kafka's reader fails with
    ``Malformed line in checkpoint file``."""
    lines = data.split(b"\n")
    # data ends with "\n": lines[-1] == b""; lines[-2] is the last entry
    last = lines[-2]
    return b"\n".join(lines[:-2]) + b"\n" + last.split(b" ")[0]


# ------------------------------------------------------------------------------------------- entry points


def simulate_history(opts: HistoryOptions, out_dir: Path | None = None) -> HistoryRun:
    """Run the simulation; with ``out_dir``, write the dumps there (``dumps/`` and/or ``archives/``) as the
    nights go (captures are then not kept in memory)."""
    opts.validate()

    def write(capture: BrokerCapture) -> None:
        assert out_dir is not None
        if opts.format in ("folders", "both"):
            write_folders(out_dir, capture)
        if opts.format in ("archives", "both"):
            write_archive(out_dir, capture)

    sim = _Sim(opts, write if out_dir is not None else None)
    sim.run()
    sim.findings.sort(key=lambda f: (f.time_ms, f.code, f.broker or 0, f.topic or "", f.partition or 0))
    roles = {
        "unclean_old_leader": sim.unclean_broker,
        "clean_shutdown": sim.shutdown_broker,
        "reformatted": sim.reformat_broker,
        "missing": sim.missing_broker,
        "cluster_id_changed": sim.renamed_broker,
        "lag_follower": sim.lag_follower,
        "brief_lag_follower": sim.brief_follower,
    }
    return HistoryRun(
        opts,
        sim.model,
        sim.cluster_id,
        sim.new_cluster_id,
        sim.captures,
        sorted(sim.events, key=lambda e: (e.day, e.kind)),
        sim.findings,
        roles,
        sim.states,
        sim.topic_ids,
        sim.broker_days,
    )


def ground_truth(run: HistoryRun) -> dict:
    """The ``ground-truth.json`` of ``run`` (see the module docstring)."""
    opts, model = run.options, run.model
    expected = [f.as_json() for f in run.findings]
    codes = sorted({f.code for f in run.findings})
    return {
        "version": GROUND_TRUTH_VERSION,
        "generator": "kafka-auditor simulate",
        "scenario": "history",
        "description": HISTORY_DESCRIPTION,
        "options": {
            k: v
            for k, v in asdict(opts).items()
            if k not in ("lag_records", "lag_duration_ms", "missing_after_ms")
        },
        "settings": {
            "lag_records": opts.lag_records,
            "lag_duration_ms": opts.lag_duration_ms,
            "missing_after_ms": opts.missing_after_ms,
        },
        "start": iso(START_MS),
        "captures": [iso(capture_ms(d)) for d in range(opts.days)],
        "cluster_id": run.cluster_id,
        "brokers": [
            {
                "id": b,
                "log_dirs": [
                    {"name": ld.name, "path": ld.path, "directory_id": ld.directory_id} for ld in br.log_dirs
                ],
                "manifest": br.manifest,
                "last_capture": iso(
                    capture_ms(opts.days - 4 if b == run.roles["missing"] else opts.days - 1)
                ),
            }
            for b, br in sorted(model.brokers.items())
        ],
        "topics": [
            {
                "name": t,
                "topic_ids": ids,
                "partitions": opts.partitions,
                "log_start": "delete-records" if i % 2 == 0 else "retention",
            }
            for i, (t, ids) in enumerate(run.topic_ids.items())
        ],
        "roles": run.roles,
        "events": [e.as_json() for e in run.events],
        "expected_codes": codes,
        "expected_findings": expected,
        "summary": {
            "nights": opts.days,
            "dumps": sum(
                len(br.log_dirs) * (opts.days - (3 if b == run.roles["missing"] else 0))
                for b, br in model.brokers.items()
            ),
            "expected_findings": len(expected),
            "codes": codes,
        },
    }


def run_history(out_dir: Path | str, opts: HistoryOptions) -> dict:
    """Write the dumps and ``ground-truth.json`` into ``out_dir`` (which must not exist or be empty) and
    return the ground truth."""
    out_dir = Path(out_dir)
    opts.validate()
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ValueError(f"output directory {out_dir} is not empty (choose a new or empty directory)")
    out_dir.mkdir(parents=True, exist_ok=True)
    truth = ground_truth(simulate_history(opts, out_dir))
    (out_dir / "ground-truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth
