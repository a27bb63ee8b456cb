"""The state a month of nightly checkpoint captures is drawn from: brokers, log dirs and replicas evolving by
Kafka's rules (``kafka-auditor simulate history``).

Each replica keeps what its log dir's small files record: the high watermark
(``replication-offset-checkpoint``), the recovery point, the log start offset and the leader epoch cache,
plus its log end offset (LEO, never captured). The rules the model keeps (spec §11-§12):

* the leader appends; in-sync followers fetch to within a few records of its LEO; the leader's high watermark
  is the smallest LEO of the ISR, a follower's is the leader's as of its last fetch (never above its LEO);
* a new leader (controlled or clean election) assigns ``(epoch, LEO)`` to its epoch cache at once; followers
  get the entry when they append the first offset of the epoch (so a follower's cache holds the entries below
  its LEO); entries are assigned as ``LeaderEpochFileCache.assign`` does (a new entry removes tail entries
  with an epoch or start offset not below its own);
* the log start offset only rises (retention deletes whole segments, DeleteRecords moves it inside one);
  the epoch cache is then truncated from the start (``truncateFromStart``: entries starting at or below the
  new log start offset are removed and the last of them comes back starting at the log start offset); the
  recovery point is raised to the log start offset when below it (``UnifiedLog.updateLogStartOffset``);
* the recovery point is the base offset of the active segment (flushed at each roll), the LEO after a clean
  shutdown, and follows the log down when a replica is truncated;
* a replica that is stuck (out of the ISR) or whose broker is stopped keeps its files as they were.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field

TP = tuple[str, int]
Epochs = list[tuple[int, int]]

FOLLOWER_LAG = 40
"""In-sync followers end a day at most this many records behind the leader's LEO."""
HW_PROPAGATION = 30
"""A follower's high watermark trails the leader's by at most this many records (one fetch round trip)."""


def random_id(rng: random.Random) -> str:
    """A random UUID as Kafka prints it (base64url, no padding), never the zero or a reserved one."""
    raw = bytearray(rng.getrandbits(8) for _ in range(16))
    raw[0] |= 0x10  # keep it far from the reserved first 100 UUIDs
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def assign(epochs: Epochs, epoch: int, start: int) -> None:
    """``LeaderEpochFileCache.assign``: drop tail entries whose epoch >= ``epoch`` or start >= ``start``,
    then append ``(epoch, start)`` (a repeated latest epoch at a later offset is ignored)."""
    if epochs and epochs[-1][0] == epoch and start >= epochs[-1][1]:
        return
    while epochs and (epochs[-1][0] >= epoch or epochs[-1][1] >= start):
        epochs.pop()
    epochs.append((epoch, start))


def truncate_from_start(epochs: Epochs, log_start: int) -> Epochs:
    """``truncateFromStart``: entries starting at or below ``log_start`` go; the last of them comes back
    starting at ``log_start``."""
    kept = [e for e in epochs if e[1] > log_start]
    removed = [e for e in epochs if e[1] <= log_start]
    return ([(removed[-1][0], log_start)] if removed else []) + kept


@dataclass
class LogDir:
    name: str  # the capture's folder name ("data", "data-1")
    path: str  # the log dir as configured ("/var/lib/kafka/data-1")
    directory_id: str
    formatted_ms: int  # when meta.properties was last written (kafka-storage format, or the 3.7+ upgrade)


@dataclass
class Broker:
    id: int
    log_dirs: list[LogDir]
    manifest: bool  # its collector writes kafka-auditor-capture.json
    start_ms: int  # brokerStartTime
    cluster_id: str
    stopped: bool = False
    clean_marker: bool = False  # .kafka_cleanshutdown present (stopped cleanly)
    broker_epoch: int = 0


@dataclass
class Replica:
    broker: int
    log_dir: int  # index into Broker.log_dirs
    leo: int
    hw: int
    rp: int
    log_start: int
    epochs: Epochs
    stuck: bool = False  # out of the ISR, not fetching


@dataclass
class Partition:
    topic: str
    partition: int
    topic_id: str
    leader: int
    epoch: int
    lineage: Epochs  # the leader's epoch cache from offset 0 (never truncated from the start)
    leo: int  # the leader's LEO
    log_start: int  # the partition's log start offset (the leader's)
    segment: int  # records per segment (the recovery point is a multiple of it)
    delete_records: bool  # DeleteRecords moves the log start offset (listed in log-start-offset-checkpoint)
    rate: tuple[int, int]  # records produced per day, low..high
    hw_by_day: list[int] = field(default_factory=list)  # the leader's HW at each capture (retention)
    replicas: dict[int, Replica] = field(default_factory=dict)  # broker -> replica, in assignment order

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)

    def floor_segment(self, offset: int) -> int:
        return offset - offset % self.segment


@dataclass
class Model:
    """The cluster at one moment: brokers and partitions (see the module docstring)."""

    rng: random.Random
    cluster_id: str
    brokers: dict[int, Broker]
    partitions: dict[TP, Partition]

    # ----------------------------------------------------------------------------------------- queries

    def frozen(self, r: Replica) -> bool:
        return r.stuck or self.brokers[r.broker].stopped

    def in_sync(self, p: Partition) -> list[int]:
        return [b for b, r in p.replicas.items() if not self.frozen(r)]

    def led_by(self, broker: int) -> list[Partition]:
        return [p for p in self.partitions.values() if p.leader == broker]

    # ----------------------------------------------------------------------------------------- changes

    def produce(self, p: Partition, records: int) -> None:
        """The leader appends ``records`` records (its LEO moves; followers catch up at :meth:`settle`)."""
        leader = p.replicas[p.leader]
        if self.frozen(leader):
            raise RuntimeError(f"{p.topic}-{p.partition}: producing to a stopped leader")
        p.leo += records
        leader.leo = p.leo

    def elect(self, p: Partition, new_leader: int) -> int:
        """A clean election (controlled shutdown, preferred leader, reassignment): the in-sync followers are
        caught up, the new leader starts epoch+1 at its LEO. Returns the new epoch's start offset."""
        for b in self.in_sync(p):
            p.replicas[b].leo = p.leo
        p.epoch += 1
        p.leader = new_leader
        assign(p.lineage, p.epoch, p.leo)
        self._refresh_epochs(p, p.replicas[new_leader])
        return p.leo

    def unclean_elect(self, p: Partition, new_leader: int) -> int:
        """The stuck replica ``new_leader`` is elected although it is not in the ISR: the log continues from
        its LEO in epoch+1; replicas with more data will truncate to it. Returns the epoch's start offset."""
        r = p.replicas[new_leader]
        r.stuck = False
        p.epoch += 1
        p.leader = new_leader
        p.leo = r.leo
        assign(p.lineage, p.epoch, p.leo)
        self._refresh_epochs(p, r)
        return p.leo

    def truncate(self, p: Partition, broker: int, offset: int) -> None:
        """Follower truncation to ``offset`` (``truncateTo``): LEO, HW, recovery point and epoch cache
        follow."""
        r = p.replicas[broker]
        r.leo = min(r.leo, offset)
        r.hw = min(r.hw, offset)
        r.rp = min(r.rp, offset)
        r.epochs = [e for e in r.epochs if e[1] < offset]

    def stop(self, broker: int, *, clean: bool) -> list[tuple[Partition, int]]:
        """Stop ``broker``: leadership moves to an in-sync follower of every partition it leads (when there
        is one), its replicas stop changing; a clean stop flushes (recovery point = LEO) and leaves
        ``.kafka_cleanshutdown``. Returns the elections as (partition, new leader)."""
        moved = []
        for p in self.led_by(broker):
            others = [b for b in self.in_sync(p) if b != broker]
            if others:
                new = self.rng.choice(others)
                self.elect(p, new)
                moved.append((p, new))
        br = self.brokers[broker]
        br.stopped = True
        br.clean_marker = clean
        if clean:
            for p in self.partitions.values():
                r = p.replicas.get(broker)
                if r is not None:
                    r.rp = r.leo
        return moved

    def start(self, broker: int, when_ms: int) -> None:
        """Start ``broker`` (deleting ``.kafka_cleanshutdown``); its replicas fetch again."""
        br = self.brokers[broker]
        br.stopped = False
        br.clean_marker = False
        br.start_ms = when_ms
        br.broker_epoch += 1 + self.rng.randrange(40)

    def new_replica(self, p: Partition, broker: int, log_dir: int) -> Replica:
        """A replica created empty on ``broker`` (reassignment, reformatted log dir): it fetches from the
        leader's log start offset (``truncateFullyAndStartAt``)."""
        r = Replica(broker, log_dir, leo=p.log_start, hw=0, rp=p.log_start, log_start=p.log_start, epochs=[])
        p.replicas[broker] = r
        return r

    def settle(self, p: Partition) -> None:
        """The end of a day's fetching: followers catch up, high watermarks, log start offsets, recovery
        points and epoch caches follow. Stuck replicas and stopped brokers keep their state."""
        rng = self.rng
        leader = p.replicas[p.leader]
        for b in self.in_sync(p):
            r = p.replicas[b]
            if b != p.leader:
                if r.leo < p.log_start:  # fell off the leader's log: start again at its log start offset
                    r.leo, r.rp, r.log_start, r.epochs = p.log_start, p.log_start, p.log_start, []
                r.leo = min(p.leo, max(r.leo, p.leo - rng.randint(0, FOLLOWER_LAG)))
        isr_min = min(p.replicas[b].leo for b in self.in_sync(p))
        leader.hw = max(leader.hw, isr_min)
        for b in self.in_sync(p):
            r = p.replicas[b]
            if b != p.leader:
                r.hw = max(r.hw, min(leader.hw - rng.randint(0, HW_PROPAGATION), r.leo))
            r.log_start = max(r.log_start, min(p.log_start, r.hw))
            r.rp = min(r.leo, max(r.rp, p.floor_segment(r.leo), r.log_start))
            self._refresh_epochs(p, r)

    def _refresh_epochs(self, p: Partition, r: Replica) -> None:
        limit = r.leo if r.broker == p.leader else r.leo - 1  # a follower has the entries it appended
        r.epochs = truncate_from_start([e for e in p.lineage if e[1] <= limit], r.log_start)
