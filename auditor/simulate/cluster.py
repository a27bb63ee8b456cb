"""A deterministic, event-driven model of Kafka replication (issue 3, spec §17).

Producers write to the partition leader with acks=0, 1 or all; the leader tracks each follower's log end
offset (the fetch offset of its last fetch) and raises the high watermark to the minimum LEO over the ISR,
never lowering it; followers append what they fetched and set their HW to min(leader HW, own LEO), one
fetch round behind. Followers leave the ISR after ``replica.lag.time.max.ms`` without catching up and
rejoin once they reach the leader's HW. Every leader change bumps the leader epoch; the new leader
assigns (epoch, LEO) in its leader-epoch cache (KAFKA-7415). A replica that becomes (or restarts as) a
follower truncates either to its own HW (``truncation="hw"``, Kafka before 0.11) or at the divergence
point found with OffsetsForLeaderEpoch (``"epoch"``, KIP-101/KIP-279, spec §17.6). The controller
(KRaft) fences and unfences brokers, elects leaders (uncleanly when a topic allows it) and records every
change as metadata records. Brokers crash (losing unflushed data or not, optionally tearing the last
batch), shut down cleanly (``.kafka_cleanshutdown``) and restart with log recovery (spec §17.3).
HW and recovery-point checkpoints are written on their own schedules, so on-disk values can be stale.

Replicas by Kafka's identity: brokers may have several log dirs (JBOD, each with its own
``directory.id``, KIP-858: the controller records in ``directories`` which one holds each replica); a topic
can be deleted (``RemoveTopicRecord``: running brokers rename their replicas ``-delete``, a broker that is
down keeps them as an old incarnation, renamed ``-stray`` when it starts again) and re-created under a new
topic ID; a replica can be moved to another log dir of its broker (AlterReplicaLogDirs, KIP-113: a
``-future`` copy).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from auditor.simulate.batches import encode_data_batch, encode_marker_batch
from auditor.simulate.config import SimOptions
from auditor.simulate.log import LogConfig, ReplicaLog, SimBatch, SimRecord

ACKS = ("0", "1", "all")
SESSION_TIMEOUT_MS = 9000
REQUEST_TIMEOUT_MS = 30000
INITIAL_TASK_DELAY_MS = 30000
REPLICA_FETCH_MAX_BYTES = 1 << 20
REPLICA_FETCH_WAIT_MAX_MS = 500
LEADER_RECOVERY_RECOVERED = 0
LEADER_RECOVERY_RECOVERING = 1
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"
"""``DirectoryId.UNASSIGNED`` (0/1): the controller's directory of a replica on a broker with several log dirs
until the broker says where it created it (``ClusterControlManager.defaultDir``)."""
DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX = "-delete", "-future", "-stray"
MAX_DIR_NAME = 255

TP = tuple[str, int]


class SimulationError(RuntimeError):
    """A scenario asked for something the model cannot do (a bug in the scenario, not bad user input)."""


class InvariantViolation(AssertionError):
    """The replication model broke one of Kafka's invariants (a bug in the model)."""


def random_uuid(rng: random.Random) -> str:
    """A random Kafka UUID in text form (never one of the reserved first 100 values)."""
    from parsers.primitives import uuid_to_str

    while True:
        raw = rng.getrandbits(128).to_bytes(16, "big")
        if int.from_bytes(raw[:8], "big") != 0 and not uuid_to_str(raw).startswith("-"):
            return uuid_to_str(raw)


def random_dir_unique_id(rng: random.Random) -> str:
    """``UUID.randomUUID().toString().replaceAll("-", "")``: the unique id of a renamed partition directory
    (32 lowercase hex digits of a version 4 UUID)."""
    raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def suffixed_dir_name(tp: TP, unique_id: str, suffix: str) -> str:
    """``LocalLog.logDeleteDirName``/``logStrayDirName`` (topic cut so that the name fits in 255 characters)
    and ``logFutureDirName`` (never cut): ``<topic>-<partition>.<unique id><suffix>``."""
    tail = f"-{tp[1]}.{unique_id}{suffix}"
    topic = tp[0] if suffix == FUTURE_DIR_SUFFIX else tp[0][: max(0, MAX_DIR_NAME - len(tail))]
    return topic + tail


def java_uuid_order(text: str) -> tuple[int, int]:
    """``Uuid.compareTo``: by the most, then the least significant 64 bits, both signed."""
    from parsers.primitives import uuid_from_str

    raw = uuid_from_str(text)
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


@dataclass
class TopicSpec:
    name: str
    partitions: int
    replicas: dict[int, list[int]]
    topic_id: str
    kind: str = "plain"
    unclean: bool = False
    min_insync: int = 1
    compression: int = 0


@dataclass
class Write:
    """One produce request (or transaction marker) and what the producer was told."""

    tp: TP
    batch: SimBatch | None
    acks: str
    status: str  # acked | pending | failed | rejected | unacked
    leader: int
    epoch: int
    sent_ms: int
    done_ms: int | None = None
    error: str | None = None

    @property
    def acknowledged(self) -> bool:
        return self.status == "acked"


@dataclass
class RemoteState:
    """What a leader knows about one follower (``Replica`` in Kafka's ``Partition``)."""

    leo: int | None = None
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0


class Replica:
    """One partition replica on one broker."""

    def __init__(self, broker: int, tp: TP, config: LogConfig, now_ms: int) -> None:
        self.broker = broker
        self.tp = tp
        self.log = ReplicaLog(config, now_ms)
        self.hw = 0
        self.is_leader = False
        self.leader_epoch = -1
        self.remote: dict[int, RemoteState] = {}
        self.needs_truncation = False
        self.disk_epoch_cache: list[tuple[int, int]] = []
        self.pending: list[Write] = []
        self.term_hw_floor = 0
        self.log_dir = 0
        """Index of the broker's log dir holding this replica."""

    @property
    def leo(self) -> int:
        return self.log.leo

    def sync_epoch_file(self) -> None:
        """leader-epoch-checkpoint is rewritten (and fsynced) whenever the cache changes."""
        self.disk_epoch_cache = list(self.log.epoch_cache)


@dataclass
class PartitionState:
    """The controller's view of a partition (``PartitionRegistration``)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED
    directories: list[str] = field(default_factory=list)
    """The directory.id of each replica's log dir, parallel to ``replicas`` (KIP-858)."""


@dataclass
class LeaderChange:
    epoch: int
    leader: int
    start_offset: int | None
    time_ms: int
    isr: list[int]
    unclean: bool
    reason: str


@dataclass
class MetadataEvent:
    """Records the controller appended to ``__cluster_metadata`` in one batch."""

    time_ms: int
    records: list[tuple[str, int, dict]]
    alive: frozenset[int] = frozenset()


@dataclass
class FutureReplica:
    """A replica being moved to another log dir of its broker (AlterReplicaLogDirs, KIP-113): the
    ``<topic>-<partition>.<id>-future`` log the broker's ReplicaAlterLogDirsThread copies the current log
    into. Its checkpoint values go to the checkpoint files of its own log dir."""

    tp: TP
    log: ReplicaLog
    log_dir: int
    dir_name: str
    started_ms: int
    hw: int = 0
    disk_epoch_cache: list[tuple[int, int]] = field(default_factory=list)
    ckpt_hw: int | None = None
    ckpt_recovery: int | None = None
    ckpt_log_start: int | None = None


@dataclass
class RetiredReplica:
    """A replica of a deleted topic still on a broker's disk: ``deleted`` (renamed ``-delete`` by a
    running broker, removed ``file.delete.delay.ms`` later), ``old-incarnation`` (the broker was down when the
    topic was deleted: its directory is unchanged) or ``stray`` (renamed ``-stray`` when that broker started
    again)."""

    replica: Replica
    topic_id: str
    state: str
    dir_name: str
    since_ms: int
    deletion: int
    """Index of the :class:`TopicDeletion` in ``Cluster.topic_deletions``."""


@dataclass
class TopicDeletion:
    """One DeleteTopics: the topic as it was, the metadata event holding its ``RemoveTopicRecord`` and the
    offset tombstones the group coordinators wrote for its partitions."""

    spec: TopicSpec
    partitions: dict[int, PartitionState]
    leader_history: dict[int, list[LeaderChange]]
    writes: list[Write]
    time_ms: int
    metadata_index: int
    tombstones: list[dict] = field(default_factory=list)
    deleted_on: list[int] = field(default_factory=list)
    """The brokers that renamed their replicas ``-delete`` (running at the time)."""
    kept_on: list[int] = field(default_factory=list)
    """The brokers that were down and kept their replicas as they were (old incarnations)."""


class Broker:
    """A broker process and its log directories (the first one is also its metadata.log.dir)."""

    def __init__(self, broker_id: int, dir_id: str) -> None:
        self.id = broker_id
        self.dir_id = dir_id
        self.dir_ids: list[str] = [dir_id]
        self.futures: dict[TP, FutureReplica] = {}
        self.retired: list[RetiredReplica] = []
        self.alive = True
        self.replicas: dict[TP, Replica] = {}
        self.clean_marker = False
        self.broker_epoch = 0
        self.ckpt_hw: dict[TP, int] | None = None
        self.ckpt_recovery: dict[TP, int] | None = None
        self.ckpt_log_start: dict[TP, int] | None = None
        self.ckpt_cleaner: dict[TP, int] | None = None
        self.next_hw_ckpt_ms = 0
        self.next_flush_ckpt_ms = 0
        self.started_ms = 0
        self.down_intervals: list[list[int | None]] = []
        self.crash_kind: str | None = None

    @property
    def down_since(self) -> int | None:
        if self.down_intervals and self.down_intervals[-1][1] is None:
            return self.down_intervals[-1][0]
        return None


class Cluster:
    """The whole cluster: brokers, controller and producers, driven by explicit events."""

    def __init__(
        self,
        options: SimOptions,
        truncation: str = "epoch",
        rng: random.Random | None = None,
        log_dirs: int = 1,
    ) -> None:
        """``log_dirs``: log directories per broker (JBOD when more than one)."""
        self.options = options
        self.truncation = truncation
        self.rng = rng or random.Random(options.seed)
        self.now = 0
        self.log_config = LogConfig(
            options.segment_bytes,
            options.index_interval_bytes,
            options.segment_index_bytes,
            options.flush_messages,
            options.flush_ms,
        )
        self.cluster_id = random_uuid(self.rng)
        self.brokers: dict[int, Broker] = {}
        for b in range(1, options.brokers + 1):
            br = Broker(b, random_uuid(self.rng))
            br.next_hw_ckpt_ms = self.rng.randrange(options.hw_checkpoint_interval_ms)
            br.next_flush_ckpt_ms = INITIAL_TASK_DELAY_MS
            self.brokers[b] = br
        self.controller_dir_id = random_uuid(self.rng)
        for br in self.brokers.values():
            br.dir_ids += [random_uuid(self.rng) for _ in range(log_dirs - 1)]
        self.topic_deletions: list[TopicDeletion] = []
        self.topics: dict[str, TopicSpec] = {}
        self.partitions: dict[TP, PartitionState] = {}
        self.fenced: set[int] = set()
        self.leader_history: dict[TP, list[LeaderChange]] = {}
        self.writes: list[Write] = []
        self.metadata: list[MetadataEvent] = []
        self.events: list[dict] = []
        self.faults: list[dict] = []
        self.pending_fences: list[tuple[int, int]] = []
        self.unclean_elections: set[TP] = set()
        self.data_loss_crashes: int = 0
        self._committed: dict[int, int] = {}
        self._stopping: set[int] = set()
        self.stalled: set[int] = set()
        self._next_batch_id = 0
        self._next_pid = 0
        self._seq: dict[TP, int] = {}
        self._producers: dict[str, dict] = {}
        self.retired_producers: list[dict] = []
        self.txn_outcome: dict[int, str] = {}
        self.coordinators = None  # auditor.simulate.coordinators.Coordinators, when a scenario enables them
        self.coordinator_records: dict[int, list] = {}  # batch id -> coordinator records it holds
        self._bootstrap_metadata()

    # ------------------------------------------------------------------------------ helpers

    @property
    def wall_ms(self) -> int:
        return self.options.start_time_ms + self.now

    def _event(self, event: str, /, **info) -> None:
        self.events.append({"time_ms": self.now, "event": event, **info})

    def _metadata(self, *records: tuple[str, int, dict]) -> None:
        alive = frozenset(b for b, br in self.brokers.items() if br.alive)
        self.metadata.append(MetadataEvent(self.now, list(records), alive))

    def _batch_id(self) -> int:
        self._next_batch_id += 1
        return self._next_batch_id

    def replica(self, broker: int, tp: TP) -> Replica:
        return self.brokers[broker].replicas[tp]

    def leader_replica(self, tp: TP) -> Replica | None:
        ps = self.partitions[tp]
        if ps.leader < 0 or not self.brokers[ps.leader].alive:
            return None
        rep = self.brokers[ps.leader].replicas[tp]
        return rep if rep.is_leader else None

    def all_tps(self) -> list[TP]:
        return list(self.partitions)

    # ---------------------------------------------------------------------------- metadata / topics

    def _bootstrap_metadata(self) -> None:
        self._metadata(
            ("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 25}),
            ("FeatureLevelRecord", 0, {"name": "group.version", "featureLevel": 1}),
            ("FeatureLevelRecord", 0, {"name": "transaction.version", "featureLevel": 2}),
        )
        for b in self.brokers.values():
            self._register(b)
            self._unfence_record(b)

    def _register(self, b: Broker) -> None:
        # BrokerEpoch is the offset of the RegisterBrokerRecord; the writer fills it in.
        dirs = sorted(b.dir_ids, key=java_uuid_order) if len(b.dir_ids) > 1 else list(b.dir_ids)
        self._metadata(("RegisterBrokerRecord", 3, {"brokerId": b.id, "logDirs": dirs}))

    def _unfence_record(self, b: Broker) -> None:
        self._metadata(("BrokerRegistrationChangeRecord", 0, {"brokerId": b.id, "fenced": -1}))

    def add_topic(
        self,
        name: str,
        partitions: int,
        *,
        kind: str = "plain",
        unclean: bool = False,
        min_insync: int | None = None,
        replicas: dict[int, list[int]] | None = None,
        compression: int | None = None,
        topic_index: int = 0,
        configs: dict[str, str] | None = None,
    ) -> TopicSpec:
        """Create a topic; replicas default to Kafka's round-robin assignment; ``configs`` are more topic
        configs for its ConfigRecords (``cleanup.policy`` of the internal topics)."""
        ids = sorted(self.brokers)
        rf = self.options.rf
        if replicas is None:
            replicas = {}
            for p in range(partitions):
                start = (topic_index + p) % len(ids)
                replicas[p] = [ids[(start + i) % len(ids)] for i in range(rf)]
        spec = TopicSpec(
            name,
            partitions,
            replicas,
            random_uuid(self.rng),
            kind,
            unclean,
            self.options.min_insync_replicas if min_insync is None else min_insync,
            self.options.compression_id if compression is None else compression,
        )
        self.topics[name] = spec
        records: list[tuple[str, int, dict]] = [("TopicRecord", 0, {"name": name, "topicId": spec.topic_id})]
        configs = {
            "min.insync.replicas": str(spec.min_insync),
            "segment.bytes": str(self.options.segment_bytes),
            **(configs or {}),
        }
        if unclean:
            configs["unclean.leader.election.enable"] = "true"
        for key, value in sorted(configs.items()):
            records.append(
                ("ConfigRecord", 0, {"resourceType": 2, "resourceName": name, "name": key, "value": value})
            )
        for p in range(partitions):
            tp = (name, p)
            reps = replicas[p]
            live = [r for r in reps if r not in self.fenced and self.brokers[r].alive]
            leader = live[0] if live else -1
            dirs = [self._default_dir(r) for r in reps]
            ps = PartitionState(list(reps), list(reps), leader, directories=list(dirs))
            self.partitions[tp] = ps
            self._seq[tp] = 0
            records.append(
                (
                    "PartitionRecord",
                    2,
                    {
                        "partitionId": p,
                        "topicId": spec.topic_id,
                        "replicas": list(reps),
                        "isr": list(reps),
                        "removingReplicas": [],
                        "addingReplicas": [],
                        "leader": leader,
                        "leaderEpoch": 0,
                        "partitionEpoch": 0,
                        "directories": dirs,
                    },
                )
            )
            for r in reps:
                br = self.brokers[r]
                if any(x.replica.tp == tp and x.state == "old-incarnation" for x in br.retired):
                    raise SimulationError(
                        f"broker {r} still holds an old incarnation of {tp} (not modelled: restart it first)"
                    )
                rep = Replica(r, tp, self.log_config, self.now)
                rep.log_dir = self._next_log_dir(br)
                br.replicas[tp] = rep
            self.leader_history[tp] = [
                LeaderChange(0, leader, 0 if leader >= 0 else None, self.now, list(reps), False, "created")
            ]
            for r in reps:
                if self.brokers[r].alive:
                    if r == leader:
                        self._become_leader(self.brokers[r].replicas[tp], 0)
                    else:
                        self._become_follower(self.brokers[r].replicas[tp], 0)
        self._metadata(*records)
        self._event("create-topic", topic=name, partitions=partitions, producer=kind, unclean=unclean)
        self._assign_dirs([(name, p) for p in range(partitions)])
        return spec

    # ------------------------------------------------------------------------ log dirs (KIP-858)

    def _default_dir(self, b: int) -> str:
        """``ClusterControlManager.defaultDir``: the broker's only log dir, else UNASSIGNED."""
        dirs = self.brokers[b].dir_ids
        return dirs[0] if len(dirs) == 1 else UNASSIGNED_DIR

    @staticmethod
    def _next_log_dir(br: Broker) -> int:
        """``LogManager.nextLogDirs``: the log dir holding the fewest logs (current and future)."""
        counts = [0] * len(br.dir_ids)
        for rep in br.replicas.values():
            counts[rep.log_dir] += 1
        for fut in br.futures.values():
            counts[fut.log_dir] += 1
        return counts.index(min(counts))

    def _directory_change(self, tp: TP, b: int, dir_id: str) -> tuple[str, int, dict] | None:
        """The controller's PartitionChangeRecord for AssignReplicasToDirs (``PartitionChangeBuilder
        .setDirectory``): the partition's directories with ``b``'s replaced; the partition epoch goes up."""
        ps = self.partitions[tp]
        dirs = list(ps.directories)
        dirs[ps.replicas.index(b)] = dir_id
        if dirs == ps.directories:
            return None
        ps.directories = dirs
        ps.partition_epoch += 1
        data = {"partitionId": tp[1], "topicId": self.topics[tp[0]].topic_id, "directories": list(dirs)}
        return "PartitionChangeRecord", 2, data

    def _assign_dirs(self, tps: list[TP], brokers: list[int] | None = None) -> None:
        """Every running broker (of ``brokers``) with several log dirs tells the controller where it created
        its replicas of ``tps`` (one AssignReplicasToDirs request, one metadata batch per broker)."""
        for b, br in sorted(self.brokers.items()):
            if len(br.dir_ids) < 2 or not br.alive or (brokers is not None and b not in brokers):
                continue
            records = []
            for tp in tps:
                rep = br.replicas.get(tp)
                if rep is not None:
                    rec = self._directory_change(tp, b, br.dir_ids[rep.log_dir])
                    if rec is not None:
                        records.append(rec)
            if records:
                self._metadata(*records)
                self._event("assign-replicas-to-dirs", broker=b, partitions=len(records))

    def start_log_dir_move(self, b: int, tp: TP, log_dir: int | None = None) -> FutureReplica:
        """AlterReplicaLogDirs: broker ``b`` creates ``<topic>-<partition>.<uuid>-future`` (with the
        topic's partition.metadata) in ``log_dir`` (default: its first other log dir) for its
        ReplicaAlterLogDirsThread to copy the current log into; the controller's assignment still names the
        current log dir."""
        br = self.brokers[b]
        rep = br.replicas[tp]
        others = [k for k in range(len(br.dir_ids)) if k != rep.log_dir]
        target = log_dir if log_dir is not None else (others[0] if others else rep.log_dir)
        if not br.alive or target == rep.log_dir or tp in br.futures or not 0 <= target < len(br.dir_ids):
            raise SimulationError(f"broker {b} cannot move {tp} to log dir {target}")
        name = suffixed_dir_name(tp, random_dir_unique_id(self.rng), FUTURE_DIR_SUFFIX)
        fut = FutureReplica(tp, ReplicaLog(self.log_config, self.now), target, name, self.now)
        br.futures[tp] = fut
        self._event(
            "alter-replica-log-dirs",
            broker=b,
            topic=tp[0],
            partition=tp[1],
            from_dir=br.dir_ids[rep.log_dir],
            to_dir=br.dir_ids[target],
            future_dir=name,
        )
        return fut

    def copy_to_future(self, b: int, tp: TP, upto: int | None = None) -> int:
        """The ReplicaAlterLogDirsThread fetches from the current log (at most replica.fetch.max.bytes of one
        segment per fetch) and appends to the future log, whole batches below ``upto`` (default: the current
        log end offset); the future high watermark is min(current HW, future LEO). Returns the future LEO."""
        br = self.brokers[b]
        rep, fut = br.replicas[tp], br.futures[tp]
        target = rep.log.leo if upto is None else min(upto, rep.log.leo)
        while fut.log.leo < target:
            batches = rep.log.read(fut.log.leo, REPLICA_FETCH_MAX_BYTES)
            if batches:  # a read never crosses a segment end (LocalLog.read)
                seg_end = rep.log.segments[rep.log._segment_for(batches[0].base_offset)].next_offset
                batches = [x for x in batches if x.base_offset < seg_end and x.next_offset <= target]
            if not batches:
                break
            fut.log.append(batches, self.now)
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
            fut.hw = min(rep.hw, fut.log.leo)
        self._event("future-log-copy", broker=b, topic=tp[0], partition=tp[1], log_end_offset=fut.log.leo)
        return fut.log.leo

    def accept_future_dir(self, b: int, tp: TP) -> None:
        """The future log caught up: the broker asks the controller to assign the replica to the future log's
        dir (AssignReplicasToDirs before the promotion) and the controller records it."""
        br = self.brokers[b]
        rep, fut = br.replicas[tp], br.futures[tp]
        if fut.log.leo != rep.log.leo:
            raise SimulationError(f"the future log of {tp} on broker {b} has not caught up")
        rec = self._directory_change(tp, b, br.dir_ids[fut.log_dir])
        if rec is not None:
            self._metadata(rec)
        self._event("assign-replicas-to-dirs", broker=b, partitions=1, future=True)

    # ------------------------------------------------------------------------ topic deletion

    def delete_topic(self, name: str) -> TopicDeletion:
        """DeleteTopics in KRaft: one ``RemoveTopicRecord``. Each running broker stops its replicas,
        renames their directories ``<topic>-<partition>.<uuid>-delete`` (removed file.delete.delay.ms later)
        and rewrites the recovery-point and log-start-offset checkpoints (the model rewrites those of all its
        log dirs, Kafka only those of the dirs concerned); a broker that is down keeps its replicas untouched
        (an old incarnation). The group coordinators write offset
        tombstones for the deleted partitions (``OffsetMetadataManager.onPartitionsDeleted``)."""
        spec = self.topics.pop(name)
        tps = [(name, p) for p in range(spec.partitions)]
        self._metadata(("RemoveTopicRecord", 0, {"topicId": spec.topic_id}))
        deletion = TopicDeletion(
            spec,
            {tp[1]: self.partitions.pop(tp) for tp in tps},
            {tp[1]: self.leader_history.pop(tp) for tp in tps},
            [w for w in self.writes if w.tp[0] == name],
            self.now,
            len(self.metadata) - 1,
        )
        index = len(self.topic_deletions)
        self.topic_deletions.append(deletion)
        self.writes = [w for w in self.writes if w.tp[0] != name]
        deleted_on, kept_on = deletion.deleted_on, deletion.kept_on
        for b, br in sorted(self.brokers.items()):
            mine = [tp for tp in tps if tp in br.replicas]
            if any(tp in br.futures for tp in mine):
                raise SimulationError(
                    f"deleting {name} while broker {b} moves one of its replicas (not modelled)"
                )
            for tp in mine:
                rep = br.replicas.pop(tp)
                self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
                rep.is_leader = False
                rep.remote = {}
                if br.alive:
                    dir_name = suffixed_dir_name(tp, random_dir_unique_id(self.rng), DELETE_DIR_SUFFIX)
                    retired = RetiredReplica(rep, spec.topic_id, "deleted", dir_name, self.now, index)
                else:
                    retired = RetiredReplica(
                        rep, spec.topic_id, "old-incarnation", f"{tp[0]}-{tp[1]}", self.now, index
                    )
                br.retired.append(retired)
            if mine and br.alive:
                self.checkpoint_recovery(br)
                deleted_on.append(b)
            elif mine:
                kept_on.append(b)
        for tp in tps:
            self.unclean_elections.discard(tp)
        old = self._producers.pop(name, None)
        if old is not None:
            self.retired_producers.append(old)
        self._event(
            "delete-topic", topic=name, topic_id=spec.topic_id, deleted_on=deleted_on, kept_on=kept_on
        )
        self._tombstone_offsets(deletion, set(tps))
        return deletion

    def _tombstone_offsets(self, deletion: TopicDeletion, tps: set[TP]) -> None:
        """Each group coordinator shard appends one batch of offset tombstones (OffsetCommit key, null value)
        for the offsets its groups committed on ``tps``; the consumers' positions are forgotten."""
        co = self.coordinators
        if co is None:
            return
        from auditor.simulate.coordinators import OFFSET_COMMIT_KEY_TYPE, OFFSETS_TOPIC, CoordinatorRecord
        from parsers.consumer_offsets import encode_offsets_key

        groups = co.groups
        by_shard: dict[int, dict[tuple[str, TP], None]] = {}
        for cm in groups.commits:
            if cm.tp in tps and cm.status == "acked":
                by_shard.setdefault(cm.offsets_partition, {})[(cm.group, cm.tp)] = None
        for part in sorted(by_shard):
            keys = sorted(by_shard[part])
            payload = [{"group": g, "topic": tp[0], "partition": tp[1]} for g, tp in keys]
            records = [
                SimRecord(encode_offsets_key(OFFSET_COMMIT_KEY_TYPE, k), None, self.wall_ms) for k in payload
            ]
            write = self.produce(OFFSETS_TOPIC, part, len(records), acks="all", records=records)
            if write.batch is not None:
                self.coordinator_records[write.batch.batch_id] = [
                    CoordinatorRecord("offset-commit", k, None) for k in payload
                ]
            for g, tp in keys:
                deletion.tombstones.append(
                    {
                        "group": g,
                        "tp": tp,
                        "offsets_partition": part,
                        "write": write,
                        "commits": len(groups.commits),
                    }
                )
            self._event("offset-tombstones", offsets_partition=part, count=len(keys), status=write.status)
        for key in [k for k in groups.position if k[1] in tps]:
            del groups.position[key]

    def add_coordinators(
        self,
        *,
        offsets_partitions: int = 3,
        txn_partitions: int = 3,
        replicas: list[int] | None = None,
        min_insync: int = 1,
        unclean: bool = False,
    ):
        """Create ``__consumer_offsets`` and ``__transaction_state`` (compacted, every partition on
        ``replicas``, default the first rf brokers) and start their group and transaction coordinators."""
        from auditor.simulate.coordinators import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, Coordinators

        reps = list(replicas or sorted(self.brokers)[: self.options.rf])
        for name, n in ((OFFSETS_TOPIC, offsets_partitions), (TRANSACTION_STATE_TOPIC, txn_partitions)):
            self.add_topic(
                name,
                n,
                kind="internal",
                unclean=unclean,
                min_insync=min(min_insync, len(reps)),
                replicas={p: list(reps) for p in range(n)},
                compression=0,
                configs={"cleanup.policy": "compact"},
            )
        self.coordinators = Coordinators(self, offsets_partitions, txn_partitions)
        return self.coordinators

    # ---------------------------------------------------------------------------- leadership

    def _become_leader(self, rep: Replica, epoch: int) -> None:
        ps = self.partitions[rep.tp]
        rep.is_leader = True
        rep.leader_epoch = epoch
        rep.needs_truncation = False
        if rep.log.assign_epoch(epoch, rep.log.leo):
            rep.sync_epoch_file()
        rep.remote = {}
        for r in ps.replicas:
            if r != rep.broker:
                rep.remote[r] = RemoteState(None, self.now if r in ps.isr else 0, -1, 0)
        rep.term_hw_floor = rep.hw
        self._maybe_increment_hw(rep)

    def _become_follower(self, rep: Replica, epoch: int) -> None:
        was_leader = rep.is_leader
        rep.is_leader = False
        rep.leader_epoch = epoch
        rep.remote = {}
        if was_leader:
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
        if self.truncation == "hw":
            # before KIP-101 a new follower truncated to its own high watermark right away
            self._truncate(rep, rep.hw, "hw")
            rep.needs_truncation = False
        else:
            rep.needs_truncation = True

    def _fail_pending(self, rep: Replica, error: str) -> None:
        for w in rep.pending:
            w.status, w.error, w.done_ms = "failed", error, self.now
        rep.pending = []

    def _truncate(self, rep: Replica, target: int, why: str) -> None:
        before = rep.log.leo
        if target < before:
            rep.log.truncate_to(target, self.now)
            rep.sync_epoch_file()
            self._event(
                "truncate",
                broker=rep.broker,
                topic=rep.tp[0],
                partition=rep.tp[1],
                from_offset=before,
                to_offset=rep.log.leo,
                mode=why,
            )
        rep.hw = min(rep.hw, rep.log.leo)

    def _truncate_follower_by_epoch(self, f: Replica, leader: Replica) -> None:
        """The follower side of OffsetsForLeaderEpoch, iterated as in KIP-279 (spec §17.6)."""
        requested = f.log.latest_epoch()
        for _ in range(1000):
            if requested < 0:
                self._truncate(f, f.hw, "epoch-undefined")
                return
            e_l, o_l = leader.log.end_offset_for(requested)
            if o_l < 0:
                self._truncate(f, f.hw, "epoch-unknown")
                return
            if e_l < 0:
                self._truncate(f, min(o_l, f.leo), "epoch")
                return
            e_f, o_f = f.log.end_offset_for(e_l)
            if e_f < 0:
                self._truncate(f, min(o_l, f.leo), "epoch")
                return
            if e_f != e_l:
                self._truncate(f, min(o_f, f.leo), "epoch")
                requested = e_f
                continue
            self._truncate(f, min(o_l, o_f, f.leo), "epoch")
            return
        raise SimulationError("OffsetsForLeaderEpoch loop did not terminate")

    def _apply(self, tp: TP, old_leader: int, old_epoch: int) -> None:
        """Brokers act on a partition change they learnt from the metadata log."""
        ps = self.partitions[tp]
        for r in ps.replicas:
            br = self.brokers[r]
            if not br.alive or r in self._stopping:
                continue
            rep = br.replicas[tp]
            if ps.leader_epoch != old_epoch or ps.leader != old_leader:
                if r == ps.leader:
                    self._become_leader(rep, ps.leader_epoch)
                else:
                    self._become_follower(rep, ps.leader_epoch)
        leader = self.leader_replica(tp)
        if leader is not None:
            self._maybe_increment_hw(leader)

    def _change(
        self,
        tp: TP,
        *,
        isr: list[int] | None = None,
        leader: int | None = None,
        lrs: int | None = None,
        reason: str = "",
        unclean: bool = False,
    ) -> None:
        """Apply and record one PartitionChangeRecord (leader epoch bumps on a leader change)."""
        ps = self.partitions[tp]
        old_leader, old_epoch = ps.leader, ps.leader_epoch
        data: dict = {"partitionId": tp[1], "topicId": self.topics[tp[0]].topic_id}
        changed = False
        if isr is not None and isr != ps.isr:
            ps.isr = list(isr)
            data["isr"] = list(isr)
            changed = True
        if leader is not None and leader != ps.leader:
            ps.leader = leader
            ps.leader_epoch += 1
            data["leader"] = leader
            changed = True
        if lrs is not None and lrs != ps.leader_recovery_state:
            ps.leader_recovery_state = lrs
            data["leaderRecoveryState"] = lrs
            changed = True
        if not changed:
            return
        ps.partition_epoch += 1
        self._metadata(("PartitionChangeRecord", 2, data))
        if ps.leader_epoch != old_epoch:
            start = None
            if ps.leader >= 0 and self.brokers[ps.leader].alive:
                start = self.brokers[ps.leader].replicas[tp].log.leo
            self.leader_history[tp].append(
                LeaderChange(ps.leader_epoch, ps.leader, start, self.now, list(ps.isr), unclean, reason)
            )
            if unclean:
                self.unclean_elections.add(tp)
        self._event(
            "partition-change",
            topic=tp[0],
            partition=tp[1],
            leader=ps.leader,
            leader_epoch=ps.leader_epoch,
            isr=list(ps.isr),
            reason=reason,
            unclean=unclean,
        )
        self._apply(tp, old_leader, old_epoch)

    def _eligible(self, b: int) -> bool:
        return b not in self.fenced and b not in self._stopping and self.brokers[b].alive

    def _elect(self, tp: TP, reason: str) -> None:
        """Controller election: first live ISR member in replica order, else unclean if allowed."""
        ps = self.partitions[tp]
        if ps.leader >= 0 and self._eligible(ps.leader):
            return
        candidates = [r for r in ps.replicas if r in ps.isr and self._eligible(r)]
        if candidates:
            self._change(tp, leader=candidates[0], reason=reason)
            return
        if self.topics[tp[0]].unclean:
            live = [r for r in ps.replicas if self._eligible(r)]
            if live:
                self._change(
                    tp,
                    leader=live[0],
                    isr=[live[0]],
                    lrs=LEADER_RECOVERY_RECOVERING,
                    reason="unclean-election",
                    unclean=True,
                )
                return
        if ps.leader != -1:
            self._change(tp, leader=-1, reason=reason)

    # -------------------------------------------------------------------------------- producing

    def _producer(self, topic: str) -> dict:
        prod = self._producers.get(topic)
        if prod is None:
            prod = {
                "pid": self._next_pid,
                "epoch": 0,
                "seq": {},
                "open": {},
                "coordinator_epoch": 0,
                "topic": topic,
                "transactional_id": f"{topic}-producer-{self._next_pid}",
                "txn_batches": [],
                "txn_started_ms": None,
            }
            self._next_pid += 1
            self._producers[topic] = prod
        return prod

    def new_producer(self, topic: str) -> dict:
        """The producer application of ``topic`` dies and a new one (new producer id and transactional id)
        takes over; a transaction the old one left open stays open."""
        old = self._producers.pop(topic, None)
        if old is not None:
            self.retired_producers.append(old)
            self._event("producer-replaced", topic=topic, producer_id=old["pid"], open=sorted(old["open"]))
        return self._producer(topic)

    def make_records(self, tp: TP, count: int, label: str) -> list[SimRecord]:
        out = []
        ts = self.wall_ms
        for _ in range(count):
            seq = self._seq[tp]
            self._seq[tp] = seq + 1
            head = f"{label}-{tp[1]}-{seq:07d}".encode()
            pad = max(0, self.options.value_bytes - len(head) - 1)
            out.append(SimRecord(str(seq).encode(), head + b"|" + b"x" * pad, ts))
        return out

    def produce(
        self,
        topic: str,
        partition: int,
        count: int,
        *,
        acks: str = "all",
        label: str = "r",
        transactional: bool | None = None,
        records: list[SimRecord] | None = None,
    ) -> Write:
        """One produce request of ``count`` records (one batch) to the current leader; ``records`` gives
        the records themselves (a coordinator's writes) instead of generated ones."""
        if acks not in ACKS:
            raise SimulationError(f"bad acks {acks!r}")
        tp = (topic, partition)
        spec = self.topics[topic]
        ps = self.partitions[tp]
        leader = self.leader_replica(tp)
        write = Write(tp, None, acks, "pending", ps.leader, ps.leader_epoch, self.now)
        self.writes.append(write)
        if leader is None:
            write.status, write.error, write.done_ms = "failed", "NOT_LEADER_OR_FOLLOWER", self.now
            return write
        if acks == "all" and len(ps.isr) < spec.min_insync:
            write.status, write.error, write.done_ms = "rejected", "NOT_ENOUGH_REPLICAS", self.now
            return write
        records = self.make_records(tp, count, label) if records is None else records
        count = len(records)
        kind = spec.kind
        txn = kind == "transactional" if transactional is None else transactional
        pid = pepoch = base_seq = -1
        if kind in ("idempotent", "transactional"):
            prod = self._producer(topic)
            pid, pepoch = prod["pid"], prod["epoch"]
            base_seq = prod["seq"].get(partition, 0)
            entry = leader.log.producers.get(pid)
            if entry is None or entry.epoch < pepoch:
                in_order = base_seq == 0
            else:
                in_order = entry.epoch == pepoch and entry.last_sequence == base_seq - 1
            if not in_order:
                # OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID after lost batches: the producer bumps
                # its epoch and restarts its sequences at 0 (KIP-360), then resends
                prod["epoch"] += 1
                prod["seq"] = {}
                pid, pepoch, base_seq = prod["pid"], prod["epoch"], 0
                self._event(
                    "producer-epoch-bump",
                    topic=topic,
                    partition=partition,
                    producer_id=pid,
                    producer_epoch=pepoch,
                )
            prod["seq"][partition] = base_seq + count
            if txn:
                if partition not in prod["open"] and self.coordinators is not None:
                    self.coordinators.transactions.add_partition(prod, tp)
                prod["open"].setdefault(partition, True)
        base = leader.log.leo
        data = encode_data_batch(
            records,
            base_offset=base,
            epoch=leader.leader_epoch,
            compression=spec.compression,
            producer_id=pid,
            producer_epoch=pepoch,
            base_sequence=base_seq,
            transactional=txn,
        )
        batch = SimBatch(
            self._batch_id(),
            base,
            base + count - 1,
            leader.leader_epoch,
            records,
            data,
            max(r.timestamp for r in records),
            pid,
            pepoch,
            base_seq,
            txn,
            None,
            -1,
            acks,
            leader.broker,
            self.now,
        )
        write.batch = batch
        if txn:
            self._producer(topic)["txn_batches"].append(batch.batch_id)
        self._leader_append(leader, batch)
        if acks == "0":
            write.status = "unacked"
        elif acks == "1":
            write.status, write.done_ms = "acked", self.now
        else:
            leader.pending.append(write)
        self._maybe_increment_hw(leader)
        return write

    def end_transaction(self, topic: str, commit: bool) -> list[Write]:
        """The transaction coordinator writes COMMIT/ABORT markers to every partition of the open txn."""
        prod = self._producer(topic)
        out = []
        if prod["open"] and self.coordinators is not None:
            self.coordinators.transactions.prepare(prod, commit)
        for partition in sorted(prod["open"]):
            tp = (topic, partition)
            ps = self.partitions[tp]
            leader = self.leader_replica(tp)
            write = Write(tp, None, "all", "pending", ps.leader, ps.leader_epoch, self.now)
            self.writes.append(write)
            out.append(write)
            if leader is None:
                write.status, write.error, write.done_ms = "failed", "NOT_LEADER_OR_FOLLOWER", self.now
                continue
            base = leader.log.leo
            data, rec = encode_marker_batch(
                commit=commit,
                coordinator_epoch=prod["coordinator_epoch"],
                base_offset=base,
                epoch=leader.leader_epoch,
                producer_id=prod["pid"],
                producer_epoch=prod["epoch"],
                timestamp=self.wall_ms,
            )
            batch = SimBatch(
                self._batch_id(),
                base,
                base,
                leader.leader_epoch,
                [rec],
                data,
                self.wall_ms,
                prod["pid"],
                prod["epoch"],
                -1,
                True,
                "COMMIT" if commit else "ABORT",
                prod["coordinator_epoch"],
                "all",
                leader.broker,
                self.now,
            )
            write.batch = batch
            self.txn_outcome[batch.batch_id] = "marker"
            self._leader_append(leader, batch)
            leader.pending.append(write)
            self._maybe_increment_hw(leader)
        if prod["open"] and self.coordinators is not None:
            self.coordinators.transactions.complete(prod, commit)
        for batch_id in prod["txn_batches"]:
            self.txn_outcome[batch_id] = "committed" if commit else "aborted"
        prod["open"] = {}
        prod["txn_batches"] = []
        return out

    def _leader_append(self, leader: Replica, batch: SimBatch) -> None:
        leader.log.append([batch], self.now)
        leader.sync_epoch_file()

    def _maybe_increment_hw(self, leader: Replica) -> None:
        """``Partition.maybeIncrementLeaderHW``: HW := min LEO over the ISR when that is higher."""
        ps = self.partitions[leader.tp]
        new_hw = leader.log.leo
        for r in ps.isr:
            if r == leader.broker:
                continue
            rs = leader.remote.get(r)
            if rs is None or rs.leo is None:
                return
            new_hw = min(new_hw, rs.leo)
        if new_hw > leader.hw:
            old = leader.hw
            leader.hw = new_hw
            for b in leader.log.read(old, 1 << 62) if old < leader.log.leo else []:
                if b.base_offset >= new_hw:
                    break
                self._committed.setdefault(b.batch_id, self.now)
            self._complete_pending(leader)

    def _complete_pending(self, leader: Replica) -> None:
        ps = self.partitions[leader.tp]
        spec = self.topics[leader.tp[0]]
        still = []
        for w in leader.pending:
            if w.batch is not None and leader.hw >= w.batch.next_offset:
                w.done_ms = self.now
                if len(ps.isr) >= spec.min_insync:
                    w.status = "acked"
                else:
                    w.status, w.error = "failed", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
            else:
                still.append(w)
        leader.pending = still

    def committed_ms(self, batch: SimBatch) -> int | None:
        return self._committed.get(batch.batch_id)

    # ---------------------------------------------------------------------------------- fetching

    def fetch(self, follower: int, tp: TP, *, deliver: bool = True) -> None:
        """One follower fetch: the leader records the fetch offset, may raise the HW and answers with
        data and its HW; with ``deliver=False`` the response is lost (the follower never sees it)."""
        br = self.brokers[follower]
        if not br.alive or tp not in br.replicas:
            return
        f = br.replicas[tp]
        ps = self.partitions[tp]
        if ps.leader == follower or f.is_leader:
            return
        leader = self.leader_replica(tp)
        if leader is None or leader.leader_epoch != f.leader_epoch:
            return
        if f.needs_truncation:
            self._truncate_follower_by_epoch(f, leader)
            f.needs_truncation = False
        fetch_offset = f.log.leo
        if fetch_offset > leader.log.leo:
            # OFFSET_OUT_OF_RANGE: the leader's log ends below ours; truncate to the leader's end offset
            self._truncate(f, leader.log.leo, "out-of-range")
            return
        self._on_follower_fetch(leader, follower, fetch_offset)
        batches = (
            leader.log.read(fetch_offset, REPLICA_FETCH_MAX_BYTES) if fetch_offset < leader.log.leo else []
        )
        leader_hw = leader.hw
        if not deliver:
            return
        if batches:
            f.log.append(batches, self.now)
            f.sync_epoch_file()
        f.hw = min(leader_hw, f.log.leo)

    def _on_follower_fetch(self, leader: Replica, fid: int, fetch_offset: int) -> None:
        rs = leader.remote.setdefault(fid, RemoteState())
        leader_leo = leader.log.leo
        if fetch_offset >= leader_leo:
            rs.last_caught_up_ms = self.now
        elif fetch_offset >= rs.last_fetch_leader_leo:
            rs.last_caught_up_ms = max(rs.last_caught_up_ms, rs.last_fetch_ms)
        rs.last_fetch_leader_leo = leader_leo
        rs.last_fetch_ms = self.now
        rs.leo = fetch_offset
        self._maybe_expand_isr(leader, fid)
        self._maybe_increment_hw(leader)

    def _maybe_expand_isr(self, leader: Replica, fid: int) -> None:
        ps = self.partitions[leader.tp]
        if fid in ps.isr or not self._eligible(fid):
            return
        rs = leader.remote[fid]
        epoch_start = next((s for e, s in leader.log.epoch_cache if e == leader.leader_epoch), 0)
        if rs.leo is not None and rs.leo >= leader.hw and rs.leo >= epoch_start:
            lrs = (
                LEADER_RECOVERY_RECOVERED if ps.leader_recovery_state == LEADER_RECOVERY_RECOVERING else None
            )
            self._change(leader.tp, isr=ps.isr + [fid], lrs=lrs, reason="isr-expand")

    def fetch_round(
        self, *, skip: set[int] | frozenset[int] = frozenset(), tps: list[TP] | None = None
    ) -> None:
        """Every live follower (except ``skip``) fetches once from its leader, in broker order."""
        for tp in tps if tps is not None else self.partitions:
            for r in self.partitions[tp].replicas:
                if r not in skip and r not in self.stalled:
                    self.fetch(r, tp)
        self._check()

    def replicate(self, rounds: int = 3, *, skip: set[int] | frozenset[int] = frozenset()) -> None:
        for _ in range(rounds):
            self.fetch_round(skip=skip)

    # ------------------------------------------------------------------------------------ time

    def tick(self, ms: int) -> None:
        """Advance the clock, running periodic tasks (HW/recovery-point checkpoints, ISR expiry,
        time-based flushes, request timeouts, delayed fencing) at the times they fall due.

        Followers keep fetching while time passes (a fetch waits at most replica.fetch.wait.max.ms), so
        a tick of at least that long lets every live follower that is not in :attr:`stalled` catch up;
        stalled followers fall out of the ISR after replica.lag.time.max.ms.
        """
        target = self.now + ms
        while True:
            due = [target]
            for br in self.brokers.values():
                if br.alive:
                    due += [br.next_hw_ckpt_ms, br.next_flush_ckpt_ms]
            due += [t for t, _ in self.pending_fences]
            t = min(due)
            if t > target:
                t = target
            self.now = max(self.now, t)
            for when, b in list(self.pending_fences):
                if when <= self.now:
                    self.pending_fences.remove((when, b))
                    self.fence(b)
            for br in self.brokers.values():
                if not br.alive:
                    continue
                if br.next_hw_ckpt_ms <= self.now:
                    self.checkpoint_hw(br)
                    br.next_hw_ckpt_ms += self.options.hw_checkpoint_interval_ms
                if br.next_flush_ckpt_ms <= self.now:
                    self.checkpoint_recovery(br)
                    br.next_flush_ckpt_ms += self.options.recovery_checkpoint_interval_ms
            if self.now >= target:
                break
        if ms >= REPLICA_FETCH_WAIT_MAX_MS:
            self._idle_fetch()
        self._periodic()
        self._check()

    def _idle_fetch(self, max_rounds: int = 1000) -> None:
        """Fetch rounds of the non-stalled followers until nothing changes (they caught up)."""
        for _ in range(max_rounds):
            before = [(rep.log.leo, rep.hw) for br in self.brokers.values() for rep in br.replicas.values()]
            self.fetch_round(skip=self.stalled)
            after = [(rep.log.leo, rep.hw) for br in self.brokers.values() for rep in br.replicas.values()]
            if before == after:
                return

    def _periodic(self) -> None:
        lag = self.options.replica_lag_time_max_ms
        for tp, ps in self.partitions.items():
            leader = self.leader_replica(tp)
            if leader is None:
                continue
            leader.log.maybe_time_flush(self.now)
            out = [
                r
                for r in ps.isr
                if r != leader.broker
                and self.now - leader.remote.get(r, RemoteState()).last_caught_up_ms > lag
            ]
            if out:
                self._change(tp, isr=[r for r in ps.isr if r not in out], reason="isr-shrink")
                self._maybe_increment_hw(leader)
            for w in list(leader.pending):
                if self.now - w.sent_ms > REQUEST_TIMEOUT_MS:
                    w.status, w.error, w.done_ms = "failed", "REQUEST_TIMED_OUT", self.now
                    leader.pending.remove(w)
        for br in self.brokers.values():
            if br.alive:
                for rep in br.replicas.values():
                    if not rep.is_leader:
                        rep.log.maybe_time_flush(self.now)
            if br.alive and br.retired:  # LogManager.deleteLogs: -delete dirs go file.delete.delay.ms later
                delay = self.options.file_delete_delay_ms
                br.retired = [r for r in br.retired if r.state != "deleted" or self.now - r.since_ms < delay]

    def checkpoint_hw(self, br: Broker) -> None:
        """replication-offset-checkpoint: the HW of every partition in the log dir (future logs in theirs)."""
        br.ckpt_hw = {tp: rep.hw for tp, rep in br.replicas.items()}
        for fut in br.futures.values():
            fut.ckpt_hw = fut.hw

    def checkpoint_recovery(self, br: Broker) -> None:
        """recovery-point-offset-checkpoint and log-start-offset-checkpoint (flush checkpoint task)."""
        br.ckpt_recovery = {tp: rep.log.recovery_point for tp, rep in br.replicas.items()}
        br.ckpt_log_start = {
            tp: rep.log.log_start_offset
            for tp, rep in br.replicas.items()
            if rep.log.log_start_offset > rep.log.segments[0].base_offset
        }
        for fut in br.futures.values():
            fut.ckpt_recovery = fut.log.recovery_point
            start = fut.log.log_start_offset
            fut.ckpt_log_start = start if start > fut.log.segments[0].base_offset else None

    def run_traffic(
        self,
        tps: list[TP],
        records: int,
        *,
        acks: str = "all",
        label: str = "r",
        skip: set[int] | frozenset[int] = frozenset(),
        replicate: bool = True,
    ) -> list[Write]:
        """Produce ``records`` records spread over ``tps`` in batches of 1..batch_records records;
        after each batch every follower fetches once (unless ``replicate`` is off or it is in
        ``skip``) and the clock advances by the produce interval. Transactional topics commit (or
        every ``abort_every``-th time abort) after ``txn_batches`` batches per partition."""
        out: list[Write] = []
        if not tps or records <= 0:
            return out
        share = [records // len(tps) + (1 if i < records % len(tps) else 0) for i in range(len(tps))]
        in_txn = {tp: 0 for tp in tps}
        txn_count: dict[str, int] = {}
        while any(share):
            for i, tp in enumerate(tps):
                if not share[i]:
                    continue
                n = min(share[i], self.rng.randint(1, self.options.batch_records))
                share[i] -= n
                out.append(self.produce(tp[0], tp[1], n, acks=acks, label=label))
                if self.topics[tp[0]].kind == "transactional":
                    in_txn[tp] += 1
                    if in_txn[tp] >= self.options.txn_batches or not share[i]:
                        txn_count[tp[0]] = txn_count.get(tp[0], 0) + 1
                        commit = txn_count[tp[0]] % self.options.abort_every != 0
                        out += self.end_transaction(tp[0], commit)
                        in_txn[tp] = 0
            if replicate:
                self.fetch_round(skip=skip, tps=tps)
            self.tick(self.options.produce_interval_ms)
        return out

    # ------------------------------------------------------------------------ broker lifecycle

    def fence(self, b: int) -> None:
        """The controller fences a broker (session expired): out of every ISR it is not the last member
        of, leaderships moved (or leader -1)."""
        if b in self.fenced:
            return
        self.fenced.add(b)
        self._metadata(("BrokerRegistrationChangeRecord", 0, {"brokerId": b, "fenced": 1}))
        self._event("fence", broker=b)
        for tp, ps in self.partitions.items():
            if b not in ps.replicas:
                continue
            new_isr = [r for r in ps.isr if r != b] if b in ps.isr and len(ps.isr) > 1 else list(ps.isr)
            if ps.leader == b:
                cands = [r for r in ps.replicas if r in new_isr and self._eligible(r)]
                if cands:
                    self._change(tp, isr=new_isr, leader=cands[0], reason=f"broker {b} fenced")
                else:
                    self._change(tp, isr=new_isr, leader=-1, reason=f"broker {b} fenced")
                    self._elect(tp, f"broker {b} fenced")
            elif new_isr != ps.isr:
                self._change(tp, isr=new_isr, reason=f"broker {b} fenced")

    def unfence(self, b: int) -> None:
        if b not in self.fenced:
            return
        self.fenced.discard(b)
        self._unfence_record(self.brokers[b])
        self._event("unfence", broker=b)
        for tp, ps in self.partitions.items():
            if b in ps.replicas and ps.leader < 0:
                self._elect(tp, f"broker {b} unfenced")

    def crash(
        self,
        b: int,
        *,
        lose_unflushed: bool = False,
        torn_bytes: int | None = None,
        keep_index: bool = False,
        tear_last: dict[TP, int] | None = None,
        fence: bool = True,
        fence_after_ms: int = 0,
    ) -> list[dict]:
        """kill -9 (``lose_unflushed=False``: the page cache survives) or a machine crash
        (``lose_unflushed=True``: data above each log's flushed point is gone, optionally with a torn
        first lost batch and, with ``keep_index``, index entries that outlived their data).
        ``tear_last`` maps partitions to a byte count: the last batch of that replica only partly
        reached the disk (the crash hit during its append)."""
        br = self.brokers[b]
        if not br.alive:
            raise SimulationError(f"broker {b} is already down")
        br.alive = False
        br.crash_kind = "power-loss" if lose_unflushed else "kill-9"
        br.down_intervals.append([self.now, None])
        torn_faults = []
        for tp, rep in br.replicas.items():
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
            rep.is_leader = False
            rep.remote = {}
            if tear_last and tp in tear_last:
                torn = rep.log.tear_last_batch(tear_last[tp])
                if torn:
                    torn_faults.append({"broker": b, "topic": tp[0], "partition": tp[1], **torn})
            if lose_unflushed:
                lost_from = rep.log.recovery_point
                had = rep.log.leo
                torn = rep.log.lose_unflushed(torn_bytes, keep_index)
                if had > lost_from:
                    self.data_loss_crashes += 1
                    self._event(
                        "lost-unflushed",
                        broker=b,
                        topic=tp[0],
                        partition=tp[1],
                        from_offset=lost_from,
                        to_offset=had,
                    )
                if torn:
                    torn_faults.append({"broker": b, "topic": tp[0], "partition": tp[1], **torn})
        self._event(
            "crash", broker=b, lose_unflushed=lose_unflushed, torn_bytes=torn_bytes, keep_index=keep_index
        )
        for t in torn_faults:
            self.faults.append({"kind": "torn-tail", **t})
        if fence:
            if fence_after_ms:
                self.pending_fences.append((self.now + fence_after_ms, b))
            else:
                self.fence(b)
        self._check()
        return torn_faults

    def shutdown(self, b: int) -> None:
        """Controlled shutdown: leadership moved away, out of the ISRs, logs flushed and closed,
        checkpoints written, ``.kafka_cleanshutdown`` created, then fenced."""
        br = self.brokers[b]
        if not br.alive:
            raise SimulationError(f"broker {b} is already down")
        self._metadata(("BrokerRegistrationChangeRecord", 1, {"brokerId": b, "inControlledShutdown": 1}))
        self._event("controlled-shutdown", broker=b)
        self._stopping.add(b)
        for tp, ps in self.partitions.items():
            if b not in ps.replicas:
                continue
            new_isr = [r for r in ps.isr if r != b] if b in ps.isr and len(ps.isr) > 1 else list(ps.isr)
            if ps.leader == b:
                cands = [r for r in ps.replicas if r in new_isr and r != b and self._eligible(r)]
                self._change(tp, isr=new_isr, leader=cands[0] if cands else -1, reason=f"broker {b} shutdown")
            elif new_isr != ps.isr:
                self._change(tp, isr=new_isr, reason=f"broker {b} shutdown")
        for rep in br.replicas.values():
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
            rep.is_leader = False
            rep.log.close()
            rep.sync_epoch_file()
        for fut in br.futures.values():
            fut.log.close()
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
        self.checkpoint_hw(br)
        self.checkpoint_recovery(br)
        br.ckpt_cleaner = br.ckpt_cleaner or {}
        br.clean_marker = True
        br.alive = False
        br.crash_kind = None
        br.down_intervals.append([self.now, None])
        self._stopping.discard(b)
        if b not in self.fenced:
            self.fenced.add(b)
            self._metadata(("BrokerRegistrationChangeRecord", 0, {"brokerId": b, "fenced": 1}))
        self._check()

    def restart(self, b: int) -> dict:
        """Start a stopped broker: load (and after a crash, recover) its logs, register, unfence, and
        become leader or follower of each of its partitions."""
        br = self.brokers[b]
        if br.alive:
            raise SimulationError(f"broker {b} is already running")
        clean = br.clean_marker
        br.clean_marker = False
        reports = {}
        for tp, rep in br.replicas.items():
            rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(tp, 0)
            rep_report = rep.log.recover(rp, clean, self.now, rep.disk_epoch_cache)
            rep.sync_epoch_file()
            ckpt = 0 if br.ckpt_hw is None else br.ckpt_hw.get(tp, 0)
            rep.hw = min(max(ckpt, rep.log.log_start_offset), rep.log.leo)
            rep.is_leader = False
            rep.leader_epoch = -1
            rep.needs_truncation = False
            if rep_report.truncated_at is not None:
                self.data_loss_crashes += 1
                reports[f"{tp[0]}-{tp[1]}"] = {
                    "truncated_at": rep_report.truncated_at,
                    "reason": rep_report.reason,
                    "deleted_segments": rep_report.deleted_segments,
                }
        for fut in br.futures.values():  # future logs are loaded (and recovered) like the current ones
            fut.log.recover(fut.ckpt_recovery or 0, clean, self.now, fut.disk_epoch_cache)
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
        self._load_retired(br, clean)
        br.alive = True
        br.crash_kind = None
        br.started_ms = self.now
        if br.down_intervals and br.down_intervals[-1][1] is None:
            br.down_intervals[-1][1] = self.now
        br.next_hw_ckpt_ms = self.now + self.rng.randrange(self.options.hw_checkpoint_interval_ms)
        br.next_flush_ckpt_ms = self.now + INITIAL_TASK_DELAY_MS
        self._event("restart", broker=b, clean=clean, recovery=reports)
        self._register(br)
        was_fenced = b in self.fenced
        # partitions whose leadership did not change while we were away: learn the current state
        for tp, rep in br.replicas.items():
            ps = self.partitions[tp]
            if ps.leader == b and not was_fenced:
                self._become_leader(rep, ps.leader_epoch)
            elif ps.leader >= 0:
                self._become_follower(rep, ps.leader_epoch)
        if was_fenced:
            self.unfence(b)
        else:
            self._unfence_record(br)
        unassigned = [tp for tp in br.replicas if UNASSIGNED_DIR in self.partitions[tp].directories]
        self._assign_dirs(unassigned, [b])
        self._check()
        return reports

    def _load_retired(self, br: Broker, clean: bool) -> None:
        """At start-up (KRaft 3.7+, ``LogManager.loadLog`` with ``isStrayKraftReplica``) a log whose
        topic ID the metadata does not know, or whose partition is not assigned to this broker, is loaded and
        renamed ``<topic>-<partition>.<uuid>-stray``; it is never served, checkpointed or closed again.
        ``-delete`` logs are loaded and deleted file.delete.delay.ms later."""
        for r in br.retired:
            if r.state == "deleted":
                r.since_ms = self.now
                continue
            if r.state != "old-incarnation":
                continue
            rep = r.replica
            rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(rep.tp, 0)
            rep.log.recover(rp, clean, self.now, rep.disk_epoch_cache)
            rep.sync_epoch_file()
            spec = self.topics.get(rep.tp[0])
            current = spec is not None and spec.topic_id == r.topic_id
            if current and br.id in self.partitions[rep.tp].replicas:
                continue
            old_name = r.dir_name
            r.state = "stray"
            r.dir_name = suffixed_dir_name(rep.tp, random_dir_unique_id(self.rng), STRAY_DIR_SUFFIX)
            r.since_ms = self.now
            self._event(
                "stray-log",
                broker=br.id,
                topic=rep.tp[0],
                partition=rep.tp[1],
                topic_id=r.topic_id,
                from_dir=old_name,
                to_dir=r.dir_name,
            )

    # ------------------------------------------------------------------------------- disk faults

    def corrupt(self, b: int, tp: TP, *, above_recovery_point: bool = True) -> dict:
        """Flip one bit inside a batch's records (breaking its CRC-32C) in a broker's log on disk.

        The batch is chosen above the broker's checkpointed recovery point, where Kafka's recovery would
        find it after an unclean shutdown.
        """
        br = self.brokers[b]
        rep = br.replicas[tp]
        rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(tp, 0)
        lo = rp if above_recovery_point else 0
        entries = [
            (seg, i, bt)
            for seg, i, bt in rep.log.iter_entries()
            if bt.base_offset >= lo and bt.size > 61 and i not in seg.damaged
        ]
        if not entries:
            raise SimulationError(f"no batch above offset {lo} to corrupt on broker {b} {tp}")
        seg, i, bt = entries[self.rng.randrange(len(entries))]
        rel = self.rng.randrange(61, bt.size)
        bit = self.rng.randrange(8)
        raw = bytearray(bt.data)
        raw[rel] ^= 1 << bit
        seg.damaged[i] = bytes(raw)
        fault = {
            "kind": "crc-flip",
            "broker": b,
            "topic": tp[0],
            "partition": tp[1],
            "segment_base_offset": seg.base_offset,
            "position": seg.positions[i] + rel,
            "bit": bit,
            "batch_position": seg.positions[i],
            "batch_base_offset": bt.base_offset,
            "batch_last_offset": bt.last_offset,
        }
        self.faults.append(fault)
        self._event("corrupt", **{k: v for k, v in fault.items() if k != "kind"})
        return fault

    # -------------------------------------------------------------------------------- invariants

    def _check(self) -> None:
        if self.options.check_invariants:
            self.check_invariants()

    def check_invariants(self) -> None:
        """Kafka's replication invariants (issue 3 item 7); raises :class:`InvariantViolation`."""

        def fail(msg: str) -> None:
            raise InvariantViolation(f"t={self.now}ms: {msg}")

        for br in self.brokers.values():
            if not br.alive:
                continue
            for tp, rep in br.replicas.items():
                leo = rep.log.leo
                if not 0 <= rep.hw <= leo:
                    fail(f"broker {br.id} {tp}: HW {rep.hw} not within [0, LEO {leo}]")
                cache = rep.log.epoch_cache
                for (e1, s1), (e2, s2) in zip(cache, cache[1:], strict=False):
                    if not (e2 > e1 and s2 > s1):
                        fail(f"broker {br.id} {tp}: epoch cache not increasing: {cache}")
                if cache and cache[-1][1] > leo:
                    fail(f"broker {br.id} {tp}: epoch cache entry {cache[-1]} beyond LEO {leo}")
                prev_epoch, expect = -1, rep.log.segments[0].base_offset
                for b in rep.log.all_batches():
                    if b.base_offset != expect:
                        fail(
                            f"broker {br.id} {tp}: gap/overlap at offset {expect} (batch at {b.base_offset})"
                        )
                    if b.epoch < prev_epoch:
                        fail(f"broker {br.id} {tp}: partitionLeaderEpoch decreases at offset {b.base_offset}")
                    prev_epoch, expect = b.epoch, b.next_offset
        for tp, ps in self.partitions.items():
            leader = self.leader_replica(tp)
            if leader is None:
                continue
            if leader.hw < leader.term_hw_floor:
                fail(f"{tp}: leader HW lowered from {leader.term_hw_floor} to {leader.hw}")
            leos = [leader.log.leo]
            known = True
            for r in ps.isr:
                if r == leader.broker:
                    continue
                rs = leader.remote.get(r)
                if rs is None or rs.leo is None:
                    known = False
                    break
                leos.append(rs.leo)
            if leader.hw > leader.log.leo:
                fail(f"{tp}: leader HW {leader.hw} above its LEO {leader.log.leo}")
            if known:
                floor = min(leos)
                if leader.hw < floor:
                    fail(f"{tp}: leader HW {leader.hw} below min LEO over ISR {floor}")
                # an ISR member's LEO can only fall below the HW through HW truncation (mode a) or a
                # follower that lost unflushed data and came back without being fenced
                strict = self.truncation == "epoch" and self.data_loss_crashes == 0
                if strict and leader.hw != floor:
                    fail(f"{tp}: leader HW {leader.hw} != min LEO over ISR {floor}")
            leader.term_hw_floor = leader.hw
        for tp, hist in self.leader_history.items():
            for a, b in zip(hist, hist[1:], strict=False):
                if b.epoch <= a.epoch:
                    fail(f"{tp}: leader epochs not increasing: {a.epoch} -> {b.epoch}")
