"""Fire/silent cases of the history rules of ``report`` (KA8xx) over small checkpoint histories.

A case returns a :class:`Story`: captures of brokers (each one log dir's checkpoints at one time) and
problems recorded at ingest, built into a :class:`~auditor.rules.history.model.History` exactly as the
warehouse tables read back (Arrow schemas of ``auditor.observe.history_rows``); ``finding_rows()`` runs the
rules of the three history scopes and returns ``rows.FINDING`` dicts (cluster "c"), the way
``tests.rules.test_rules`` drives every non-scan case."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace

import pyarrow as pa

from auditor.findings import Finding, jsonable
from auditor.observe.history_rows import OFFSET_TABLES, TABLES
from auditor.rules.history.model import History, HistorySettings
from auditor.rules.history.ordering import history_findings

CODES: list[str] = [f"KA8{n:02d}" for n in range(1, 16)]
"""The rule codes whose fixtures live here (added to ``cases.ALL_CODES``)."""

from tests.rules.cases import fire, silent  # noqa: E402

T0 = 1_767_232_800_000  # 2026-01-01T02:00:00Z
DAY = 24 * 3600 * 1000
TP = ("ule", 0)
TOPIC_ID = "dG9waWMtdWxlLWlkLTAwMDA"

Cache = list[tuple[int, int]]


@dataclass
class Capture:
    """One dump: broker ``broker``'s log dir at ``T0 + day * DAY``; per partition its high watermark,
    recovery point, log start offset (only when given), leader-epoch cache and topic id."""

    broker: int
    day: float
    hw: dict[tuple[str, int], int] = field(default_factory=dict)
    rp: dict[tuple[str, int], int] = field(default_factory=dict)
    lso: dict[tuple[str, int], int] = field(default_factory=dict)
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
    """A capture of the one partition ``ule-0`` (HW, cache, topic id; ``rp=``/``lso=`` optional)."""
    rp = kw.pop("rp", None)
    lso = kw.pop("lso", None)
    topic_id = kw.pop("topic_id", TOPIC_ID)
    return Capture(
        broker,
        day,
        hw={TP: hw},
        rp={} if rp is None else {TP: rp},
        lso={} if lso is None else {TP: lso},
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
                (OFFSET_TABLES["log-start-offset-checkpoint"], c.lso),
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


# ------------------------------------------------------------------------------------------ baseline


@silent(*CODES)
def quiet_month(tmp, mp) -> Story:
    """Three replicas growing in step, with retention moving the log start offset and truncateFromStart
    moving the first cache entry, a clean election (epoch 1 at the leader's log end offset), and a planned
    restart (clean shutdown) lowering nothing."""
    caps = []
    for d in range(6):
        lso = 500 * d
        for b in (1, 2, 3):
            cache = [(0, 0)] if d < 3 else [(0, 0), (1, 3000)]
            if lso:
                cache = (
                    [(e, s) for e, s in cache if s > lso] if any(s <= lso for _e, s in cache[1:]) else cache
                )
                cache = [(cache[0][0], max(cache[0][1], lso)), *cache[1:]]
            caps.append(part(b, d, 1000 * (d + 1), cache, rp=1000 * (d + 1), lso=lso or None, clean=d == 2))
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA801


@fire("KA801")
@silent("KA815")
def hw_went_back(tmp, mp) -> Story:
    caps = steady(days=2)
    caps += [part(1, 2, 1500, rp=3000), part(2, 2, 3000, rp=3000), part(3, 2, 3000, rp=3000)]
    return Story(caps)


@silent("KA801", "KA802", "KA803", "KA805")
def topic_recreated_restarts_offsets(tmp, mp) -> Story:
    """The topic was deleted and recreated between two captures: a new log, HW and recovery point restart
    low, with another topic id (KA814's, not a regression)."""
    caps = steady(days=2)
    caps += [part(b, 2, 10, [(0, 0)], rp=10, lso=0, topic_id="bmV3LXRvcGljLWlkLTAwMDAwMA") for b in (1, 2, 3)]
    return Story(caps)


@silent("KA801")
def hw_back_across_a_gap(tmp, mp) -> Story:
    """The partition left broker 3 and came back empty two captures later: a new replica, not truncation."""
    caps = steady(days=2)
    caps += [part(1, 2, 3000, rp=3000), part(2, 2, 3000, rp=3000), Capture(3, 2)]
    caps += [part(1, 3, 4000, rp=4000), part(2, 3, 4000, rp=4000), part(3, 3, 1200, rp=1200)]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA802


@fire("KA802")
def log_start_went_back(tmp, mp) -> Story:
    caps = steady(days=2, lso=800)
    caps += [part(b, 2, 3000, rp=3000, lso=300 if b == 2 else 900) for b in (1, 2, 3)]
    return Story(caps)


@silent("KA802")
def log_start_absent_then_lower(tmp, mp) -> Story:
    """Broker 2's log-start-offset-checkpoint lost the partition at one capture (its log start became a
    segment base offset); no two consecutive captures to compare."""
    caps = steady(days=2, lso=800)
    caps += [
        part(1, 2, 3000, rp=3000, lso=900),
        part(2, 2, 3000, rp=3000),
        part(3, 2, 3000, rp=3000, lso=900),
    ]
    caps += [part(b, 3, 4000, rp=4000, lso=950) for b in (1, 2, 3)]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA803


@fire("KA803")
def recovery_point_back_while_running(tmp, mp) -> Story:
    caps = steady(days=2, started=T0 - DAY)
    caps += [part(b, 2, 3000, rp=1200 if b == 1 else 3000, started=T0 - DAY) for b in (1, 2, 3)]
    return Story(caps)


@silent("KA803")
def recovery_point_back_after_restart(tmp, mp) -> Story:
    """Broker 1 restarted between the captures (its start time changed): recovery may truncate."""
    caps = steady(days=2, started=T0 - DAY)
    caps += [
        part(b, 2, 3000, rp=1200 if b == 1 else 3000, started=T0 + DAY if b == 1 else T0 - DAY)
        for b in (1, 2, 3)
    ]
    return Story(caps)


@silent("KA803")
def recovery_point_back_after_clean_shutdown(tmp, mp) -> Story:
    """Broker 1 was captured stopped (.kafka_cleanshutdown), then running with a lower recovery point."""
    caps = steady(days=1)
    caps += [part(b, 1, 2000, rp=2000, clean=b == 1) for b in (1, 2, 3)]
    caps += [part(b, 2, 3000, rp=500 if b == 1 else 3000) for b in (1, 2, 3)]
    return Story(caps)


@silent("KA803")
def recovery_point_back_when_another_log_dir_was_formatted(tmp, mp) -> Story:
    """Broker 1's /d2 got a new directory.id between two captures (formatted again, so the broker was
    down): /d1's recovery point going back is recovery at the restart, not truncation while running."""
    caps = [
        part(1, d, 1000 * (d + 1), rp=1200 if d == 2 else 1000 * (d + 1), log_dir="/d1", directory_id="a1")
        for d in range(3)
    ]
    caps += [Capture(1, d, log_dir="/d2", directory_id="b1" if d < 2 else "b2") for d in range(3)]
    return Story(caps)


def reformatted_log_dir() -> list[Capture]:
    """Broker 2's only log dir was formatted again between the second and third capture (a new
    directory.id, KA810's) with no clean shutdown captured and no start time recorded: the replica it holds
    afterwards is a new one, still fetching from scratch (HW, recovery point, cache all lower)."""
    caps = steady(days=2)
    caps += [part(b, 2, 3000, rp=3000) for b in (1, 3)]
    caps += [part(2, 2, 1200, [(0, 0)], rp=900, directory_id="new-disk")]
    return caps


@fire("KA810")
@silent("KA801", "KA802", "KA803", "KA805")
def reformatted_log_dir_refetching(tmp, mp) -> Story:
    return Story(reformatted_log_dir())


def jbod_move(rp_after: int, hw_after: int, lso_after: int = 400) -> list[Capture]:
    """Broker 1 has two log dirs (distinct directory.ids); ``ule-0`` lives in /d1 (log start offset 400),
    and by the third capture it was moved to /d2 (the promoted -future log), holding HW ``hw_after``,
    recovery point ``rp_after`` and log start offset ``lso_after`` there; brokers 2 and 3 keep it in their
    one log dir."""
    caps = [c for c in steady(days=3) if c.broker != 1]
    for d in range(3):
        moved = d == 2
        hw, rp, lso = (hw_after, rp_after, lso_after) if moved else (1000 * (d + 1), 1000 * (d + 1), 400)
        held = part(1, d, hw, rp=rp, lso=lso, log_dir="/d2" if moved else "/d1")
        held = replace(held, directory_id="d2-id" if moved else "d1-id")
        empty = Capture(1, d, log_dir="/d1" if moved else "/d2", directory_id="d1-id" if moved else "d2-id")
        caps += [held, empty]
    return caps


@silent("KA801", "KA802", "KA803", "KA807", "KA808")
def jbod_move_lowers_the_recovery_point(tmp, mp) -> Story:
    """A recovery point (and log start offset) belong to one log: the promoted -future log in /d2 has a
    lower recovery point and log start offset than the log /d1 held; the partition's high watermark goes
    on."""
    return Story(jbod_move(rp_after=1500, hw_after=3000, lso_after=300))


@fire("KA801")
@silent("KA803")
def hw_back_across_a_jbod_move(tmp, mp) -> Story:
    """The high watermark is the partition's: a move between log dirs of one broker is compared."""
    return Story(jbod_move(rp_after=1500, hw_after=1500))


# ------------------------------------------------------------------------------------------ KA804/KA805


def unclean_election() -> list[Capture]:
    """The corpus run (unclean-leader-election, Kafka 4.0): broker 3 leads epoch 0 alone up to HW 1500 and
    dies; broker 1 (LEO 1000) is elected uncleanly (epoch 2) and writes 1000..1299; broker 3 rejoins,
    truncates to 1000 and re-fetches; after the controlled shutdown broker 3 holds epoch 3 at 1500."""
    before = [
        part(1, 0, 1300, [(0, 0), (2, 1000)], rp=1300),
        part(2, 0, 0, [(0, 0)], rp=0),
        part(3, 0, 1500, [(0, 0)], rp=881),
    ]
    after = [
        part(1, 1, 1500, [(0, 0), (2, 1000)], rp=1500, clean=True),
        part(2, 1, 1500, [(0, 0), (2, 1000)], rp=1500, clean=True),
        part(3, 1, 1500, [(0, 0), (2, 1000), (3, 1500)], rp=1500, clean=True),
    ]
    return before + after


@fire("KA804", "KA805")
@silent("KA801", "KA803", "KA806", "KA807", "KA808")
def corpus_unclean_election(tmp, mp) -> Story:
    return Story(unclean_election())


@fire("KA804")
@silent("KA805")
def replicas_disagree_on_an_epoch_start(tmp, mp) -> Story:
    """Brokers 1 and 2 both hold epoch 4, starting at 700 on one and at 650 on the other, below both HWs."""
    return Story([part(1, 0, 900, [(0, 0), (4, 700)]), part(2, 0, 900, [(0, 0), (3, 600), (4, 650)])])


@silent("KA804", "KA805")
def follower_without_the_new_epoch_yet(tmp, mp) -> Story:
    """A clean election: the new leader (broker 2) has epoch 5 at 2000; broker 1 has not fetched in epoch 5
    yet, so its HW is at most 2000: nothing committed differs."""
    return Story([part(1, 0, 2000, [(0, 0), (3, 1000)]), part(2, 0, 2100, [(0, 0), (3, 1000), (5, 2000)])])


@silent("KA804", "KA805")
def truncated_from_start_differently(tmp, mp) -> Story:
    """Retention moved each replica's log start to a different offset: the first entries differ (moved up
    by truncateFromStart), the lineage is the same."""
    return Story(
        [
            part(1, 0, 5000, [(3, 2500), (4, 4000)], lso=2500),
            part(2, 0, 5000, [(2, 1200), (3, 2000), (4, 4000)], lso=1200),
            part(1, 1, 6000, [(4, 4500)], lso=4500),
            part(2, 1, 6000, [(3, 3000), (4, 4000)], lso=3000),
        ]
    )


@fire("KA805")
@silent("KA804")
def entry_removed_below_hw(tmp, mp) -> Story:
    """Broker 1's cache lost epoch 2 (starting at 400, below its HW 900) between two captures."""
    return Story([part(1, 0, 900, [(0, 0), (2, 400), (3, 800)]), part(1, 1, 1200, [(0, 0), (3, 800)])])


@silent("KA805")
def uncommitted_tail_truncated(tmp, mp) -> Story:
    """Broker 1 led epoch 3 from 800 without committing anything in it (HW 800): it lost leadership,
    truncated its uncommitted tail and took epoch 4 at 800 from the new leader (KIP-101)."""
    return Story([part(1, 0, 800, [(0, 0), (3, 800)]), part(1, 1, 1000, [(0, 0), (4, 800)])])


# ------------------------------------------------------------------------------------------ KA806


def lagging(days: int, behind: int) -> list[Capture]:
    caps = []
    for d in range(days):
        for b in (1, 2, 3):
            hw = 100_000 * (d + 1) - (behind if b == 3 and 0 < d < days - 1 else 0)
            caps.append(part(b, d, hw, rp=hw))
    return caps


@fire("KA806")
def follower_lags_for_days(tmp, mp) -> Story:
    return Story(lagging(5, 50_000))


@silent("KA806")
def follower_lags_briefly(tmp, mp) -> Story:
    """Above the threshold at one capture only: a run of 0 h."""
    return Story(lagging(3, 50_000))


@silent("KA806")
def follower_spread_below_threshold(tmp, mp) -> Story:
    return Story(lagging(6, 5_000))


@silent("KA806", "KA807", "KA808")
def spread_of_a_broker_no_longer_captured(tmp, mp) -> Story:
    """Broker 3 stopped being captured: its stale HW is not lag (KA811's)."""
    caps = [
        part(b, d, 100_000 * (d + 1), rp=100_000 * (d + 1))
        for d in range(5)
        for b in (1, 2, 3)
        if b != 3 or d < 1
    ]
    return Story(caps)


@fire("KA806")
def lag_with_short_settings(tmp, mp) -> Story:
    """Both thresholds are options: 2 h runs of 1,000 records."""
    caps = [part(1, d / 24, 10_000 * (d + 1)) for d in range(4)]
    caps += [part(2, d / 24, 10_000 * (d + 1) - 2_000) for d in range(4)]
    return Story(caps, settings=HistorySettings(lag_records=1000, lag_duration_ms=2 * 3600 * 1000))


def in_sync(broker: int, day: float) -> Capture:
    """A replica exactly in sync at its capture time: 100,000 records a day."""
    hw = 100_000 * (1 + int(day * 24) / 24)
    return part(broker, day, int(hw), rp=int(hw))


@silent("KA806")
def replicas_captured_at_other_times_of_day(tmp, mp) -> Story:
    """Broker 2 is captured at 14:00, the others at 02:00; the replicas are in sync: values captured 12 h
    apart differ by 12 h of records, which is no lag."""
    return Story([in_sync(b, d + (0.5 if b == 2 else 0)) for d in range(6) for b in (1, 2, 3)])


@fire("KA806")
def follower_lags_captured_a_little_later(tmp, mp) -> Story:
    """Broker 3 is captured 30 minutes after the others (one round: within --capture-skew) and lags
    50,000 records for days."""
    caps = [c for c in lagging(5, 50_000) if c.broker != 3]
    caps += [replace(c, day=c.day + 1 / 48) for c in lagging(5, 50_000) if c.broker == 3]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA807/KA808


@fire("KA807", "KA808")
def partition_moved_from_3_to_4(tmp, mp) -> Story:
    caps = steady(brokers=(1, 2, 3, 4), days=2)
    caps = [c for c in caps if c.broker != 4]
    caps += [Capture(4, 0), Capture(4, 1)]
    caps += [part(1, 2, 3000), part(2, 2, 3000), Capture(3, 2), part(4, 2, 2500)]
    return Story(caps)


@silent("KA807", "KA808")
def log_dir_missing_from_a_capture(tmp, mp) -> Story:
    """Broker 3 has two log dirs; at day 1 only one of them was captured: its other dir's partitions are
    unknown that night, not gone; a broker's first capture does not count as partitions appearing."""
    caps = [part(b, d, 1000 * (d + 1)) for d in range(3) for b in (1, 2)]
    caps += [part(3, 0, 1000, log_dir="/d1"), Capture(3, 0, log_dir="/d2")]
    caps += [Capture(3, 1, log_dir="/d2")]
    caps += [part(3, 2, 3000, log_dir="/d1"), Capture(3, 2, log_dir="/d2")]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA809-KA811


@fire("KA809")
@silent("KA810", "KA811")
def broker_reformatted_into_another_cluster(tmp, mp) -> Story:
    caps = steady(days=2)
    caps += [part(b, 2, 3000) for b in (1, 2)]
    caps += [Capture(3, 2, cluster_id="other", directory_id="fresh")]
    return Story(caps)


@silent("KA809")
def two_clusters_side_by_side(tmp, mp) -> Story:
    """Two clusters whose brokers share ids and log dir paths, captured the same nights."""
    caps = steady(days=3)
    caps += [replace(c, cluster="d", cluster_id="d") for c in steady(days=3)]
    return Story(caps)


@fire("KA810")
def log_dir_reformatted(tmp, mp) -> Story:
    caps = steady(days=2)
    caps += [part(b, 2, 3000, directory_id="new-disk" if b == 2 else None) for b in (1, 2, 3)]
    return Story(caps)


@fire("KA811")
def broker_stopped_being_captured(tmp, mp) -> Story:
    caps = [c for c in steady(days=4) if c.broker != 3 or c.day < 2]
    return Story(caps)


@silent("KA811")
def broker_captured_a_little_later(tmp, mp) -> Story:
    """Broker 3's nightly capture ran two hours after the others (within the 12 h default)."""
    caps = [c for c in steady(days=3) if c.broker != 3] + [
        part(3, d + 1 / 12, 1000 * (d + 1)) for d in range(3)
    ]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA812/KA813


@fire("KA812")
def malformed_checkpoint(tmp, mp) -> Story:
    problem = {
        "kind": "malformed",
        "source": "/dumps",
        "file": "broker-1/replication-offset-checkpoint",
        "line": 4,
        "offset": 18,
        "message": "Malformed line in checkpoint file: 'ule 0'",
    }
    return Story(steady(days=1), problems=[problem])


@fire("KA813")
@silent("KA812")
def refused_archive_entry(tmp, mp) -> Story:
    problem = {
        "kind": "refused",
        "source": "/dumps/broker-1.tgz",
        "file": "broker-1.tgz!../etc/passwd",
        "message": "refused: a '..' component",
    }
    return Story(steady(days=1), problems=[problem])


@silent("KA813")
def malformed_is_not_refused(tmp, mp) -> Story:
    return malformed_checkpoint(tmp, mp)


# ------------------------------------------------------------------------------------------ KA814


@fire("KA814")
def topic_recreated(tmp, mp) -> Story:
    return topic_recreated_restarts_offsets(tmp, mp)


NEW_ID = "bmV3LXRvcGljLWlkLTAwMDAwMA"


def recreated_topic(partitions: int = 2) -> list[Capture]:
    """Topic ``ule`` (``partitions`` partitions on brokers 1-3) led in epoch 1 from 800 up to HW 1500, then
    deleted and created again (a new topic id) with small offsets: epoch 1 of the new incarnation starts at
    100, HW 300."""
    def capture(b: int, day: int, hw: int, cache: Cache, topic_id: str) -> Capture:
        tps = [("ule", p) for p in range(partitions)]
        return Capture(
            b,
            day,
            hw={tp: hw for tp in tps},
            rp={tp: hw for tp in tps},
            epochs={tp: cache for tp in tps},
            topic_ids={tp: topic_id for tp in tps},
        )

    caps = [capture(b, 0, 1500, [(0, 0), (1, 800)], TOPIC_ID) for b in (1, 2, 3)]
    return caps + [capture(b, 1, 300, [(0, 0), (1, 100)], NEW_ID) for b in (1, 2, 3)]


@fire("KA814")
@silent("KA801", "KA802", "KA803", "KA804", "KA805", "KA806")
def recreated_topic_compared_incarnation_by_incarnation(tmp, mp) -> Story:
    """The old incarnation's epoch 1 starts at 800, the new one's at 100: offsets 100..299 are in epoch 0
    of one and epoch 1 of the other, which is no fork: they are two logs."""
    return Story(recreated_topic())


@silent("KA806")
def replica_still_holding_the_old_incarnation(tmp, mp) -> Story:
    """Broker 3 was down while the topic was recreated and still holds the old log (HW 200,000) for days;
    brokers 1 and 2 hold the new one: no lag between two incarnations."""
    caps = [part(b, 0, 200_000) for b in (1, 2, 3)]
    for d in range(1, 5):
        caps += [part(b, d, 1000 * d, topic_id=NEW_ID) for b in (1, 2)]
        caps.append(part(3, d, 200_000, clean=True))
    return Story(caps)


@silent("KA814")
def topic_id_appears(tmp, mp) -> Story:
    """partition.metadata was written for the first time (an upgrade to Kafka 2.8+): no id before."""
    caps = steady(days=1, topic_id=None)
    for c in caps:
        c.topic_ids = {}
    caps += [part(b, 1, 2000) for b in (1, 2, 3)]
    return Story(caps)


@fire("KA809")
def jbod_broker_reformatted(tmp, mp) -> Story:
    """Both log dirs of broker 3 carry the new cluster.id: one finding for the broker (checked in
    tests/rules/test_history.py)."""
    caps = [replace(c, log_dir=d) for c in steady(days=2) for d in ("/d1", "/d2")]
    caps += [Capture(3, 2, cluster_id="other", log_dir=d, directory_id=f"n{d}") for d in ("/d1", "/d2")]
    return Story(caps)


# ------------------------------------------------------------------------------------------ KA815

TP2 = ("ule", 1)


def copied(broker: int, ms: int, hw: int, source: str = "mtime", **kw) -> Capture:
    """A capture of ``ule-0`` and ``ule-1`` (the same HW, one epoch) dated ``ms`` after T0."""
    return Capture(
        broker,
        0,
        hw={TP: hw, TP2: hw},
        rp={TP: hw, TP2: hw},
        epochs={TP: [(0, 0)], TP2: [(0, 0)]},
        topic_ids={TP: TOPIC_ID, TP2: TOPIC_ID},
        time_source=source,
        ms=ms,
        **kw,
    )


@fire("KA815")
@silent("KA801", "KA802", "KA803", "KA805")
def copies_dated_by_mtime_in_the_wrong_order(tmp, mp) -> Story:
    """The user's case: two nights' captures of brokers 1-3 copied without their times, the later night's
    first: their mtimes are 38 ms apart and the later-dated copy holds the older state (HW 0, the topic
    just created): nothing went back, the order did."""
    return Story([copied(b, 0, 1500) for b in (1, 2, 3)] + [copied(b, 38, 0) for b in (1, 2, 3)])


@fire("KA815", "KA801")
def copies_dated_by_mtime_with_values_both_ways(tmp, mp) -> Story:
    """Captures dated by mtimes a day apart: ule-0 went back while ule-1 went forward. Whichever order is
    right, one of them truncated: the regression stands beside the warning."""
    caps = [copied(1, 0, 1500)]
    later = copied(1, DAY, 0)
    later.hw[TP2] = later.rp[TP2] = 3000
    return Story([*caps, later])


@fire("KA815")
@silent("KA801", "KA803")
def named_captures_whose_content_is_older(tmp, mp) -> Story:
    """Times from the archive names a day apart, but every partition of broker 1 is lower at the later one,
    nothing went forward, no new leader epoch and no restart: the names are swapped."""
    return Story([copied(1, 0, 3000, "name"), copied(1, DAY, 1000, "name")])


@fire("KA801", "KA802")
@silent("KA815")
def log_dir_restored_from_a_backup(tmp, mp) -> Story:
    """Broker 1 was stopped (.kafka_cleanshutdown) and its log dir restored from an older backup: every
    partition went back, with a restart in between: a regression, not a wrong order."""
    first = copied(1, 0, 3000, "name", clean=False)
    first.lso = {TP: 900, TP2: 900}
    restored = copied(1, DAY, 1000, "name", clean=True)
    restored.lso = {TP: 500, TP2: 500}
    return Story([first, restored])


@silent("KA815")
def nightly_captures_with_trustworthy_times(tmp, mp) -> Story:
    """Archive-member times and names, a day apart, the content growing: nothing to doubt."""
    return Story([copied(1, d * DAY, 1000 * (d + 1), "archive" if d % 2 else "name") for d in range(3)])
