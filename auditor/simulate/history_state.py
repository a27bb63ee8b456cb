"""The ``history`` scenario's cluster when the month starts and the state of a run: the plan of the injected
events (their nights and brokers) and the bookkeeping the events and the nights share."""

from __future__ import annotations

import random
from collections.abc import Callable

from auditor.simulate.history_model import Broker, LogDir, Model, Partition, Replica, random_id
from auditor.simulate.history_run import (
    DAY_MS,
    MAX_RATE,
    RETENTION_DELETE_RECORDS,
    RETENTION_SEGMENTS,
    RF,
    START_MS,
    TOPIC_NAMES,
    Event,
    ExpectedFinding,
    HistoryOptions,
    capture_ms,
)
from auditor.simulate.history_write import BrokerCapture

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
            move_log_start(p)
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
        log_start=0,
        segment=model.rng.randint(1500, 6000),
        delete_records=delete_records,
        rate=(200, 1000),
        hw_by_day=[0] * (RETENTION_SEGMENTS + 1),
    )
    for b in ids:
        jbod = len(model.brokers[b].log_dirs)
        p.replicas[b] = Replica(b, g % jbod, leo=0, hw=0, rp=0, log_start=0, epochs=[(0, 0)])
    model.partitions[p.tp] = p
    return p


def move_log_start(p: Partition) -> None:
    """DeleteRecords follows the HW of a few nights ago; retention deletes whole old segments."""
    if p.delete_records:
        target = p.hw_by_day[-RETENTION_DELETE_RECORDS]
    else:
        target = p.floor_segment(p.hw_by_day[-RETENTION_SEGMENTS])
    p.log_start = max(p.log_start, min(target, p.replicas[p.leader].hw))


# ------------------------------------------------------------------------------------------- the run


class SimState:
    """The state of a run; :class:`~auditor.simulate.history_nights.Sim` runs it."""

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
        self.last: dict[tuple[int, str, int], tuple[int, int, int]] = {}  # last captured (hw, rp, log_start)
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

    def _event(
        self,
        kind: str,
        day: int,
        codes: list[str],
        description: str,
        broker: int | None = None,
        p: Partition | None = None,
        details: dict | None = None,
    ) -> None:
        """Record the event ``kind`` of ``day`` (on the topic and partition of ``p`` when given)."""
        where = (p.topic, p.partition) if p else (None, None)
        self.events.append(Event(kind, day, codes, description, broker, *where, details=details or {}))

    def _expect_event(
        self,
        code: str,
        kind: str,
        day: int,
        broker: int | None,
        description: str,
        p: Partition | None = None,
        note: str = "",
        details: dict | None = None,
        cluster: str | None = "",
    ) -> None:
        """Record the event ``kind`` of ``day`` and expect the one finding ``code`` it gives at that night's
        capture (on the same broker and partition)."""
        self._finding(code, day, broker, p, note, cluster)
        self._event(kind, day, [code], description, broker, p, details)
