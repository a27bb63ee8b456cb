"""Options of a simulation run and the Kafka settings they map to."""

from __future__ import annotations

from dataclasses import dataclass, field

COMPRESSION_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TRUNCATION_MODES = ("hw", "epoch")
PRODUCER_KINDS = ("plain", "idempotent", "transactional")


@dataclass
class SimOptions:
    """Everything ``kafka-auditor simulate`` can vary; defaults mirror the corpus cluster.

    Kafka settings are named after their broker/topic configs: ``segment_bytes`` (segment.bytes),
    ``index_interval_bytes`` (index.interval.bytes), ``segment_index_bytes`` (segment.index.bytes, the
    preallocated size of an active segment's indexes; Kafka's default is 10 MiB, the corpus used 65536),
    ``min_insync_replicas``, ``replica_lag_time_max_ms``, ``hw_checkpoint_interval_ms``
    (replica.high.watermark.checkpoint.interval.ms), ``recovery_checkpoint_interval_ms``
    (log.flush.offset.checkpoint.interval.ms), ``flush_messages``/``flush_ms`` (flush.messages/flush.ms,
    ``None`` = never, Kafka's default: only segment rolls and shutdowns flush).
    ``truncation`` forces the follower truncation mode of every scenario: ``"hw"`` (before Kafka 0.11:
    truncate to the own high watermark) or ``"epoch"`` (KIP-101/KIP-279 OffsetsForLeaderEpoch).
    """

    seed: int = 0
    brokers: int = 3
    topics: int = 1
    partitions: int = 1
    records: int = 1000
    segment_bytes: int = 16384
    compression: str = "none"
    scale: bool = False
    truncation: str | None = None
    replication_factor: int | None = None
    batch_records: int = 5
    value_bytes: int = 60
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 65536
    min_insync_replicas: int = 2
    replica_lag_time_max_ms: int = 30000
    hw_checkpoint_interval_ms: int = 5000
    recovery_checkpoint_interval_ms: int = 60000
    flush_messages: int | None = None
    flush_ms: int | None = None
    file_delete_delay_ms: int = 60000
    produce_interval_ms: int = 10
    start_time_ms: int = 1_700_000_000_000
    producer_kinds: tuple[str, ...] = ("plain", "idempotent", "transactional")
    txn_batches: int = 2
    abort_every: int = 3
    kraft: bool = True
    controller_id: int = 100
    scale_batches: int = 50000
    check_invariants: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def compression_id(self) -> int:
        return COMPRESSION_IDS[self.compression]

    @property
    def rf(self) -> int:
        return self.replication_factor if self.replication_factor is not None else min(3, self.brokers)

    def validate(self) -> None:
        """Raise ``ValueError`` with a clear message for options a run cannot honour."""

        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ValueError(msg)

        need(
            self.compression in COMPRESSION_IDS,
            f"unknown compression {self.compression!r} (expected one of {', '.join(COMPRESSION_IDS)})",
        )
        need(
            self.truncation is None or self.truncation in TRUNCATION_MODES,
            f"unknown truncation mode {self.truncation!r} (expected 'hw' or 'epoch')",
        )
        need(1 <= self.brokers <= 64, f"--brokers must be between 1 and 64, got {self.brokers}")
        need(1 <= self.topics <= 1000, f"--topics must be between 1 and 1000, got {self.topics}")
        need(
            1 <= self.partitions <= 10000, f"--partitions must be between 1 and 10000, got {self.partitions}"
        )
        need(self.records >= 0, f"--records must not be negative, got {self.records}")
        need(
            1 <= self.rf <= self.brokers,
            f"replication factor {self.rf} must be between 1 and the number of brokers ({self.brokers})",
        )
        need(self.min_insync_replicas >= 1, "min.insync.replicas must be at least 1")
        need(self.segment_bytes >= 14 + 61, f"--segment-bytes must be at least 75, got {self.segment_bytes}")
        need(self.segment_index_bytes >= 24, "segment.index.bytes must be at least 24")
        need(self.index_interval_bytes >= 0, "index.interval.bytes must not be negative")
        need(1 <= self.batch_records <= 10000, "batch_records must be between 1 and 10000")
        need(0 <= self.value_bytes <= 1 << 20, "value_bytes must be between 0 and 1 MiB")
        need(
            self.hw_checkpoint_interval_ms > 0 and self.recovery_checkpoint_interval_ms > 0,
            "checkpoint intervals must be positive",
        )
        need(self.replica_lag_time_max_ms > 0, "replica.lag.time.max.ms must be positive")
        need(
            all(k in PRODUCER_KINDS for k in self.producer_kinds) and len(self.producer_kinds) > 0,
            f"producer_kinds must be a non-empty subset of {PRODUCER_KINDS}",
        )
        need(
            self.controller_id not in range(1, self.brokers + 1),
            f"controller id {self.controller_id} collides with a broker id",
        )
        need(self.scale_batches >= 1, "scale_batches must be at least 1")
