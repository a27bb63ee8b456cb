"""Checkpoint histories of the history cases of ``report`` (KA8xx).

A case returns a :class:`Story`: captures of brokers (each one log dir's checkpoints at one time) and
problems recorded at ingest, built into a :class:`~auditor.rules.history.model.History` exactly as the
warehouse tables read back (Arrow schemas of ``auditor.observe.history_rows``); ``finding_rows()`` runs the
rules of the three history scopes and returns ``rows.FINDING`` dicts (cluster "c"), the way
``tests.rules.test_rules`` drives every non-scan case."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import pyarrow as pa

from auditor.findings import Finding, jsonable
from auditor.observe.history_rows import OFFSET_TABLES, TABLES
from auditor.rules.history.model import History, HistorySettings
from auditor.rules.history.ordering import history_findings

CODES: list[str] = [f"KA8{n:02d}" for n in range(1, 16)]
"""The history rule codes (KA801-KA815)."""

T0 = 1_767_232_800_000  # 2026-01-01T02:00:00Z


DAY = 24 * 3600 * 1000


TP = ("ule", 0)


TOPIC_ID = "dG9waWMtdWxlLWlkLTAwMDA"


Cache = list[tuple[int, int]]


@dataclass
class Capture:
    """One capture: broker ``broker``'s log dir at ``T0 + day * DAY``; per partition its high watermark,
    recovery point, log start offset (only when given), leader-epoch cache and topic id."""

    broker: int
    day: float
    hw: dict[tuple[str, int], int] = field(default_factory=dict)
    rp: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    epochs: dict[tuple[str, int], Cache] = field(default_factory=dict)
    topic_ids: dict[tuple[str, int], str] = field(default_factory=dict)
    clean: bool = False
    started: int | None = None
    cluster: str = "c"
    cluster_id: str = "c"
    directory_id: str | None = None
    log_dir: str = "/var/lib/kafka/data"
    time_source: str = "manifest"
    ms: int = 0
    """Milliseconds added to the capture time (copies of captures a few ms apart)."""

    @property
    def time(self) -> int:
        return T0 + int(self.day * DAY) + self.ms

    def key(self) -> dict:
        cid = hashlib.sha256(f"{self.broker}|{self.log_dir}|{self.time}|{self.cluster}".encode()).hexdigest()
        date = "2026-01-01"
        return {
            "captureId": cid,
            "cluster": self.cluster,
            "broker": self.broker,
            "logDir": self.log_dir,
            "captureTime": self.time,
            "captureDate": date,
        }


def part(broker: int, day: float, hw: int, cache: Cache | None = None, **kw) -> Capture:
    """A capture of the one partition ``ule-0`` (HW, cache, topic id; ``rp=``/``log_start=`` optional)."""
    rp = kw.pop("rp", None)
    log_start = kw.pop("log_start", None)
    topic_id = kw.pop("topic_id", TOPIC_ID)
    return Capture(
        broker,
        day,
        hw={TP: hw},
        rp={} if rp is None else {TP: rp},
        log_start={} if log_start is None else {TP: log_start},
        epochs={TP: cache if cache is not None else [(0, 0)]},
        topic_ids={TP: topic_id},
        **kw,
    )


@dataclass
class Story:
    captures: list[Capture]
    problems: list[dict] = field(default_factory=list)
    settings: HistorySettings = field(default_factory=HistorySettings)

    def tables(self) -> dict[str, list[dict]]:
        rows: dict[str, list[dict]] = {t: [] for t in TABLES}
        for c in self.captures:
            key = c.key()
            rows["captures"].append(
                {
                    **key,
                    "source": "/dumps",
                    "root": f"broker-{c.broker}",
                    "timeSource": c.time_source,
                    "cleanShutdown": c.clean,
                    "brokerStartTime": c.started,
                }
            )
            rows["brokers"].append(
                {
                    **key,
                    "version": 1,
                    "nodeId": c.broker,
                    "clusterId": c.cluster_id,
                    "directoryId": c.directory_id or f"dir-{c.broker}",
                }
            )
            for table, values in (
                (OFFSET_TABLES["replication-offset-checkpoint"], c.hw),
                (OFFSET_TABLES["recovery-point-offset-checkpoint"], c.rp),
                (OFFSET_TABLES["log-start-offset-checkpoint"], c.log_start),
            ):
                for line, ((topic, p), offset) in enumerate(sorted(values.items()), start=3):
                    rows[table].append(
                        {**key, "topic": topic, "partition": p, "offset": offset, "line": line}
                    )
            for (topic, p), cache in sorted(c.epochs.items()):
                for i, (epoch, start) in enumerate(cache):
                    rows["leader_epochs"].append(
                        {
                            **key,
                            "topic": topic,
                            "partition": p,
                            "epoch": epoch,
                            "startOffset": start,
                            "position": i,
                            "line": i + 3,
                        }
                    )
            for (topic, p), topic_id in sorted(c.topic_ids.items()):
                rows["partitions"].append(
                    {**key, "topic": topic, "partition": p, "directory": f"{topic}-{p}", "topicId": topic_id}
                )
        rows["problems"] = [
            {
                "captureId": "p" * 64,
                "cluster": "c",
                "broker": None,
                "logDir": None,
                "captureTime": T0,
                "captureDate": "2026-01-01",
                **p,
            }
            for p in self.problems
        ]
        return rows

    def history(self) -> History:
        frames = {t: pa.Table.from_pylist(r, schema=TABLES[t]).to_pandas() for t, r in self.tables().items()}
        return History(**frames, settings=self.settings)

    def findings(self) -> list[Finding]:
        return history_findings(self.history())

    def finding_rows(self) -> list[dict]:
        return [finding_row(f) for f in self.findings()]


def finding_row(f: Finding) -> dict:
    """A finding in the ``rows.FINDING`` layout (cluster from its evidence)."""
    return {
        "cluster": f.evidence.get("cluster"),
        "code": f.code,
        "severity": f.severity.label,
        "topic": f.topic,
        "partition": f.partition,
        "broker": f.broker,
        "peer": None,
        "log_dir": f.log_dir,
        "offset_start": f.offset_start,
        "offset_end": f.offset_end,
        "epoch": f.epoch,
        "records": None,
        "bytes": None,
        "message": f.message,
        "evidence": json.dumps(jsonable(f.evidence)),
        "time": f.time,
    }


def steady(brokers=(1, 2, 3), days: int = 4, step: int = 1000, **kw) -> list[Capture]:
    """Every broker captured nightly, HW and recovery point growing by ``step`` a day, one epoch."""
    return [part(b, d, (d + 1) * step, rp=(d + 1) * step, **kw) for d in range(days) for b in brokers]
