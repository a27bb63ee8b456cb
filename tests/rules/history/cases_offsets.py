"""Cases of ``auditor/rules/history/offsets.py`` (KA801-KA803, KA806-KA808, KA814): high watermark, log
start offset and recovery point going back between captures, replicas lagging for days, partitions
moving, topics recreated; and the quiet month every history rule must leave silent."""

from __future__ import annotations

from dataclasses import replace

from auditor.rules.history.model import HistorySettings
from tests.rules.harness import fire, silent
from tests.rules.history.builders import CODES, DAY, T0, TOPIC_ID, Cache, Capture, Story, part, steady


@silent(*CODES)
def quiet_month(tmp, mp) -> Story:
    """Three replicas growing in step, with retention moving the log start offset and truncateFromStart
    moving the first cache entry, a clean election (epoch 1 at the leader's log end offset), and a planned
    restart (clean shutdown) lowering nothing."""
    caps = []
    for d in range(6):
        log_start = 500 * d
        for b in (1, 2, 3):
            cache = [(0, 0)] if d < 3 else [(0, 0), (1, 3000)]
            if log_start:
                cache = (
                    [(e, s) for e, s in cache if s > log_start]
                    if any(s <= log_start for _e, s in cache[1:])
                    else cache
                )
                cache = [(cache[0][0], max(cache[0][1], log_start)), *cache[1:]]
            caps.append(
                part(
                    b, d, 1000 * (d + 1), cache, rp=1000 * (d + 1), log_start=log_start or None, clean=d == 2
                )
            )
    return Story(caps)


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
    caps += [
        part(b, 2, 10, [(0, 0)], rp=10, log_start=0, topic_id="bmV3LXRvcGljLWlkLTAwMDAwMA") for b in (1, 2, 3)
    ]
    return Story(caps)


@silent("KA801")
def hw_back_across_a_gap(tmp, mp) -> Story:
    """The partition left broker 3 and came back empty two captures later: a new replica, not truncation."""
    caps = steady(days=2)
    caps += [part(1, 2, 3000, rp=3000), part(2, 2, 3000, rp=3000), Capture(3, 2)]
    caps += [part(1, 3, 4000, rp=4000), part(2, 3, 4000, rp=4000), part(3, 3, 1200, rp=1200)]
    return Story(caps)


@fire("KA802")
def log_start_went_back(tmp, mp) -> Story:
    caps = steady(days=2, log_start=800)
    caps += [part(b, 2, 3000, rp=3000, log_start=300 if b == 2 else 900) for b in (1, 2, 3)]
    return Story(caps)


@silent("KA802")
def log_start_absent_then_lower(tmp, mp) -> Story:
    """Broker 2's log-start-offset-checkpoint lost the partition at one capture (its log start became a
    segment base offset); no two consecutive captures to compare."""
    caps = steady(days=2, log_start=800)
    caps += [
        part(1, 2, 3000, rp=3000, log_start=900),
        part(2, 2, 3000, rp=3000),
        part(3, 2, 3000, rp=3000, log_start=900),
    ]
    caps += [part(b, 3, 4000, rp=4000, log_start=950) for b in (1, 2, 3)]
    return Story(caps)


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


def jbod_move(rp_after: int, hw_after: int, log_start_after: int = 400) -> list[Capture]:
    """Broker 1 has two log dirs (distinct directory.ids); ``ule-0`` lives in /d1 (log start offset 400),
    and by the third capture it was moved to /d2 (the promoted -future log), holding HW ``hw_after``,
    recovery point ``rp_after`` and log start offset ``log_start_after`` there; brokers 2 and 3 keep it in
    their one log dir."""
    caps = [c for c in steady(days=3) if c.broker != 1]
    for d in range(3):
        moved = d == 2
        hw, rp, log_start = (
            (hw_after, rp_after, log_start_after) if moved else (1000 * (d + 1), 1000 * (d + 1), 400)
        )
        held = part(1, d, hw, rp=rp, log_start=log_start, log_dir="/d2" if moved else "/d1")
        held = replace(held, directory_id="d2-id" if moved else "d1-id")
        empty = Capture(1, d, log_dir="/d1" if moved else "/d2", directory_id="d1-id" if moved else "d2-id")
        caps += [held, empty]
    return caps


@silent("KA801", "KA802", "KA803", "KA807", "KA808")
def jbod_move_lowers_the_recovery_point(tmp, mp) -> Story:
    """A recovery point (and log start offset) belong to one log: the promoted -future log in /d2 has a
    lower recovery point and log start offset than the log /d1 held; the partition's high watermark goes
    on."""
    return Story(jbod_move(rp_after=1500, hw_after=3000, log_start_after=300))


@fire("KA801")
@silent("KA803")
def hw_back_across_a_jbod_move(tmp, mp) -> Story:
    """The high watermark is the partition's: a move between log dirs of one broker is compared."""
    return Story(jbod_move(rp_after=1500, hw_after=1500))


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
