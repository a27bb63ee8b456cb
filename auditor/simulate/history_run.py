"""The ``history`` scenario's parameters and what a run records: the options, the cluster's rates and
retention, the injected events, the findings the report must give and the run itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from auditor.simulate.history_model import Model
from auditor.simulate.history_write import FORMATS, BrokerCapture
from auditor.text import iso_time as iso

GROUND_TRUTH_VERSION = 1
START_MS = int(datetime(2026, 1, 1, 2, 0, 0, tzinfo=timezone.utc).timestamp() * 1000)
HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS
RF = 3
MAX_RATE = 2500
"""Records per partition per day at most in benign traffic: three days of it stay below the lag threshold, so
a broker whose captures stop (KA811) does not look like a lagging replica within the run."""
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
