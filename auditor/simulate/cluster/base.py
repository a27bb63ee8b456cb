"""The cluster's state (brokers, topics, partitions, writes, events) and the helpers every concern uses:
the event log, the metadata records, batch ids and replica look-ups."""

from __future__ import annotations

import random

from auditor.simulate.config import SimOptions
from auditor.simulate.log import LogConfig
from auditor.simulate.model import (
    INITIAL_TASK_DELAY_MS,
    TP,
    Broker,
    LeaderChange,
    MetadataEvent,
    PartitionState,
    Replica,
    TopicDeletion,
    TopicSpec,
    Write,
    java_uuid_order,
    random_uuid,
)


class ClusterBase:
    """The state of the whole cluster; the behaviour is in the mixins composed into
    :class:`~auditor.simulate.cluster.Cluster`."""

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
