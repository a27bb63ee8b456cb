"""The simulated cluster's data model: constants, errors, and the state of topics, partitions, replicas
and brokers with the record of what happened (writes, leader changes, metadata events, topic deletions).

The model and its Kafka sources: ``docs/simulator.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from auditor.simulate.log import LogConfig, ReplicaLog, SimBatch

ACKS = ("0", "1", "all")
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


def tp_fields(tp: TP) -> dict[str, str | int]:
    """A topic-partition as the events, faults and ground truth name it (``topic``, ``partition``)."""
    return {"topic": tp[0], "partition": tp[1]}


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
        self.fetch_failed = False
        """The fetcher marked the partition failed (``AbstractFetcherThread.markPartitionFailed``): no more
        fetches until the replica becomes a follower again or its broker restarts."""
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
