"""The history checks without Spark: Kafka's cache semantics (``auditor.kafka.history``), the vectorised
filter in front of the fork comparison, the evidence every finding carries, and the executors' chunk path
(``auditor.spark.history.chunk_history``) giving what one whole evaluation gives."""

from __future__ import annotations

import random
from dataclasses import replace

import pyarrow as pa
import pytest

from auditor.kafka.history import (
    cache_rewrite,
    epoch_at,
    first_disagreement,
    restart_evidence,
    truncate_from_start,
)
from auditor.observe.history_rows import TABLES
from auditor.rules.history import epochs as epoch_rules
from auditor.rules.history.model import History, HistorySettings, caches, formatted_dirs, iso, run_rules
from auditor.rules.history.offsets import capture_rounds, lag_spread
from auditor.rules.registry import REGISTRY
from tests.rules.history.builders import DAY, T0, TOPIC_ID, TP, Story, part, steady
from tests.rules.history.cases_epochs import unclean_election
from tests.rules.history.cases_fleet import (
    broker_stopped_being_captured,
    jbod_broker_reformatted,
    malformed_checkpoint,
    reformatted_log_dir,
)
from tests.rules.history.cases_offsets import (
    NEW_ID,
    follower_lags_for_days,
    hw_back_across_a_jbod_move,
    hw_went_back,
    lagging,
    quiet_month,
    recreated_topic,
    replicas_captured_at_other_times_of_day,
)

# ------------------------------------------------------------------------------------------ kafka.history


def test_epoch_at_and_unknown_below_the_first_entry():
    cache = [(3, 500), (5, 900)]
    assert epoch_at(cache, 499) is None
    assert [epoch_at(cache, o) for o in (500, 899, 900, 10**12)] == [3, 3, 5, 5]


def test_truncate_from_start_is_kafkas():
    cache = [(0, 0), (2, 100), (4, 300)]
    assert truncate_from_start(cache, 50) == [(0, 50), (2, 100), (4, 300)]
    assert truncate_from_start(cache, 100) == [(2, 100), (4, 300)]
    assert truncate_from_start(cache, 350) == [(4, 350)]


def test_first_disagreement_corpus_and_bounds():
    # the corpus: broker 3 (0,0) HW 1500 against broker 1 (0,0)(2,1000) HW 1300
    assert first_disagreement([(0, 0)], [(0, 0), (2, 1000)], 1300) == (1000, 0, 2)
    # the offset must be below both high watermarks
    assert first_disagreement([(0, 0)], [(0, 0), (2, 1000)], 1000) is None
    # a moved-up first entry is no epoch start: offsets below it are unknown
    assert first_disagreement([(3, 2500), (4, 4000)], [(2, 1200), (3, 2000), (4, 4000)], 5000) is None
    # disagreeing on the start offset of one epoch
    assert first_disagreement([(0, 0), (4, 700)], [(0, 0), (3, 600), (4, 650)], 900) == (600, 0, 3)


def test_cache_rewrite_kafka_changes_are_benign():
    assert cache_rewrite([(0, 0), (2, 100)], [(2, 150)], 400) is None  # truncateFromStart
    assert cache_rewrite([(0, 0), (3, 800)], [(0, 0), (4, 800)], 800) is None  # uncommitted tail
    assert cache_rewrite([(0, 0)], [(0, 0), (5, 2000)], 2000) is None  # clean election at the HW
    assert cache_rewrite([(0, 0)], [(3, 5000)], 100) is None  # truncateFullyAndStartAt above the HW
    assert cache_rewrite([(0, 0)], [(0, 0), (2, 10)], None) is None  # nothing known committed
    rewrite = cache_rewrite([(0, 0)], [(0, 0), (2, 1000), (3, 1500)], 1500)
    assert rewrite == {
        "offset": 1000,
        "before": 0,
        "after": 2,
        "removed": [],
        "added": [(2, 1000), (3, 1500)],
    }
    removed = cache_rewrite([(0, 0), (2, 400), (3, 800)], [(0, 0), (3, 800)], 900)
    assert removed is not None and removed["offset"] == 400 and removed["removed"] == [(2, 400)]


def test_restart_evidence():
    assert restart_evidence(False, False, None, None) is None
    assert restart_evidence(False, False, 5, 5) is None
    assert restart_evidence(True, False, None, None)
    assert restart_evidence(False, True, None, None)
    assert restart_evidence(False, False, 5, 6) == "the broker start time changed"
    assert "directory.id" in restart_evidence(False, False, 5, 5, formatted=True)


def test_iso_times():
    assert iso(T0) == "2026-01-01T02:00:00Z"
    assert iso(T0 + 123) == "2026-01-01T02:00:00.123Z"


# ------------------------------------------------------------------------------------------ the fork filter


def _random_story(rng: random.Random) -> Story:
    """Replicas of one partition with caches drawn from one lineage, truncated from the start, missing
    their newest epochs, sometimes rewritten: the filter must never hide a fork the full comparison
    finds."""
    lineage = [(0, 0)]
    for _ in range(rng.randint(0, 4)):
        lineage.append((lineage[-1][0] + rng.randint(1, 3), lineage[-1][1] + rng.randint(1, 400)))
    caps = []
    for day in range(3):
        for broker in (1, 2, 3):
            upto = rng.randint(1, len(lineage))
            cache = list(lineage[:upto])
            end = cache[-1][1] + rng.randint(0, 400)
            if rng.random() < 0.4:
                cache = truncate_from_start(cache, rng.randint(0, end))
            if rng.random() < 0.15 and len(cache) > 1:  # a rewritten start
                i = rng.randint(1, len(cache) - 1)
                lo = cache[i - 1][1] + 1
                hi = cache[i + 1][1] - 1 if i + 1 < len(cache) else cache[i][1] + 50
                if lo <= hi:
                    cache[i] = (cache[i][0], rng.randint(lo, hi))
            if rng.random() < 0.1:  # an epoch of its own
                cache.append((cache[-1][0] + 1, cache[-1][1] + rng.randint(1, 50)))
            caps.append(part(broker, day, rng.randint(cache[0][1], end + 200), cache))
    return Story(caps)


def test_the_fork_filter_hides_no_fork(monkeypatch):
    rng = random.Random(11)
    seen_forks = 0
    for _ in range(20):  # 15 of these 20 stories fork
        story = _random_story(rng)
        with_filter = [
            (f["broker"], f["offset"], f["epoch"], f["t"]) for f in epoch_rules.forks(story.history())
        ]
        monkeypatch.setattr(epoch_rules, "suspects", lambda c: [True] * len(c.states))
        without = [(f["broker"], f["offset"], f["epoch"], f["t"]) for f in epoch_rules.forks(story.history())]
        monkeypatch.undo()
        assert with_filter == without
        seen_forks += bool(without)
    assert seen_forks >= 4  # the generator does make forks


def test_one_lineage_is_not_compared():
    """Clean histories (leader changes, retention) are cleared by the vectorised filter."""
    story = quiet_month(None, None)
    c = caches(story.history())
    assert not any(epoch_rules.suspects(c))


# ------------------------------------------------------------------------------------------ findings


def test_findings_name_both_captures_and_their_time():
    findings = Story(unclean_election()).findings()
    by_code = {f.code: f for f in findings}
    assert sorted(by_code) == ["KA804", "KA805"]
    fork = by_code["KA804"]
    assert fork.name == REGISTRY["KA804"].name == "history.epoch-fork"
    assert (fork.broker, fork.offset_start, fork.epoch, fork.time) == (3, 1000, 0, "2026-01-01T02:00:00Z")
    assert fork.file == "ule-0/leader-epoch-checkpoint" and fork.log_dir == "/var/lib/kafka/data"
    assert fork.evidence["capture"]["broker"] == 3 and fork.evidence["peerCapture"]["broker"] == 1
    assert fork.evidence["capture"]["captureIds"] and fork.evidence["peers"] == [1, 2]
    rewrite = by_code["KA805"]
    assert (rewrite.broker, rewrite.offset_start, rewrite.epoch) == (3, 1000, 2)
    assert rewrite.time == "2026-01-02T02:00:00Z"
    assert rewrite.evidence["before"]["time"] == "2026-01-01T02:00:00Z"
    assert rewrite.evidence["before"]["leaderEpochs"] == [(0, 0)]


def test_hw_backwards_evidence_and_fingerprints():
    findings = [f for f in hw_went_back(None, None).findings() if f.code == "KA801"]
    assert len(findings) == 1
    f = findings[0]
    assert f.file == "replication-offset-checkpoint" and (f.offset_start, f.offset_end) == (1500, 1999)
    assert f.evidence["before"]["highWatermark"] == 2000 and f.evidence["after"]["highWatermark"] == 1500
    assert f.time == f.evidence["time"] == "2026-01-03T02:00:00Z"
    # the same event at another capture time is another finding
    g = replace(f, time="2026-01-04T02:00:00Z")
    assert f.fingerprint() != g.fingerprint()


def test_findings_are_stable_when_history_grows():
    """A report over more nights keeps the findings of the earlier ones (the same fingerprints): they are
    dated at the capture that first showed them."""
    short = Story(unclean_election() + lagging(5, 50_000)[:0])
    longer = Story(
        unclean_election()
        + [part(b, 2, 1600, [(0, 0), (2, 1000)] + ([(3, 1500)] if b == 3 else [])) for b in (1, 2, 3)]
    )
    assert {f.fingerprint() for f in short.findings()} <= {f.fingerprint() for f in longer.findings()}
    lag = [f for f in Story(lagging(6, 50_000)).findings() if f.code == "KA806"]
    lag_longer = [f for f in Story(lagging(8, 50_000)).findings() if f.code == "KA806"]
    assert len(lag) == 1 and [f.fingerprint() for f in lag] == [f.fingerprint() for f in lag_longer]


@pytest.mark.parametrize("scope", ["history", "fleet", "ingest"])
def test_every_finding_has_a_time(scope):
    story = Story(
        unclean_election() + [replace(c, broker=7) for c in steady(days=1)],
        problems=malformed_checkpoint(None, None).problems,
    )
    for f in run_rules(story.history(), scope):
        assert f.time and f.time == f.evidence["time"] and f.evidence["cluster"] == "c"


# ------------------------------------------------------------------------------------------ chunks


def _union(story: Story) -> pa.Table:
    from auditor.spark.history import PER_PARTITION, UNION

    tables = []
    for i, name in enumerate(PER_PARTITION):
        rows = story.tables()[name]
        if not rows:
            continue
        t = pa.Table.from_pylist(rows, schema=TABLES[name])
        if name == "leader_epochs":
            t = t.rename_columns(["offset" if c == "startOffset" else c for c in t.column_names])
        cols = [
            pa.array([i] * t.num_rows, pa.int8())
            if f.name == "kind"
            else (t.column(f.name).cast(f.type) if f.name in t.column_names else pa.nulls(t.num_rows, f.type))
            for f in UNION
        ]
        tables.append(pa.Table.from_arrays(cols, schema=UNION))
    return pa.concat_tables(tables)


def test_chunks_of_whole_partitions_find_what_the_whole_finds():
    from auditor.spark.history import charts, chunk_history

    caps = [
        replace(
            c,
            epochs={("a", 0): c.epochs[TP]},
            hw={("a", 0): c.hw[TP]},
            topic_ids={("a", 0): TOPIC_ID},
            rp={},
        )
        for c in unclean_election()
    ]
    caps = [*unclean_election(), *lagging(5, 50_000)[:0], *caps]
    story = Story(caps)
    whole = sorted(f.fingerprint() for f in run_rules(story.history(), "history"))
    union = _union(story)
    small = {"captures": story.history().captures, "brokers": story.history().brokers}
    parts = []
    for topic in ("ule", "a"):
        chunk = union.filter(pa.compute.equal(union.column("topic"), topic))
        h = chunk_history(chunk, small, story.settings)
        assert isinstance(h, History) and set(h.leader_epochs["topic"]) == {topic}
        found = run_rules(h, "history")
        parts += [f.fingerprint() for f in found]
        drawn = charts(h, {("c", topic, 0)})
        assert drawn[0].high_watermarks[3] == [(T0, 1500), (T0 + DAY, 1500)]
    assert sorted(parts) == whole and len(whole) == 4


def test_one_fork_finding_per_diverged_replica_and_epochs():
    """Later captures of the new leader, truncated from the start, show the same fork at higher offsets:
    still one finding, at the earliest pair of captures and the first offset (the simulator's case)."""
    later = [part(1, d, 1600 + d, [(2, 1100 + d)], log_start=1100 + d) for d in (2, 3)]
    forks = [f for f in Story(unclean_election() + later).findings() if f.code == "KA804"]
    assert [(f.broker, f.offset_start, f.epoch, f.time) for f in forks] == [(3, 1000, 0, iso(T0))]


def test_a_recreated_topic_is_one_finding_listing_its_partitions():
    [found] = [f for f in Story(recreated_topic(partitions=3)).findings() if f.code == "KA814"]
    assert (found.topic, found.partition, found.broker) == ("ule", None, None)
    assert found.evidence["partitions"] == [0, 1, 2] and found.evidence["brokers"] == [1, 2, 3]
    assert found.evidence["replicaCount"] == 9 and len(found.evidence["replicas"]) == 9
    assert (found.evidence["expected"], found.evidence["found"]) == (TOPIC_ID, NEW_ID)
    assert found.time == iso(T0 + DAY) and "3 partitions (0, 1, 2)" in found.message


def test_chunks_of_a_recreated_topic_merge_into_one_finding():
    """On Spark each chunk holds some of the topic's partitions and finds the change in its own: the driver
    merges them into the finding one whole evaluation gives, and sums the chunks' capture-pair changes."""
    from auditor.rules.history.ordering import finish_findings, pair_changes, sum_changes
    from auditor.spark.history import chunk_history

    story = Story(recreated_topic(partitions=4) + steady(days=2))
    whole = story.findings()
    union = _union(story)
    small = {"captures": story.history().captures, "brokers": story.history().brokers}
    found, pairs = [], []
    for keep in ((0, 2), (1, 3)):
        mask = pa.compute.is_in(union.column("partition"), pa.array(keep, pa.int32()))
        chunk = chunk_history(union.filter(mask), small, story.settings)
        found += run_rules(chunk, "history")
        pairs.append(pair_changes(chunk))
    assert len([f for f in found if f.code == "KA814"]) == 2
    driver = History(captures=small["captures"], brokers=small["brokers"], pairs=sum_changes(pairs))
    found += run_rules(driver, "fleet") + run_rules(driver, "ingest")
    merged = finish_findings(driver, found)
    assert sorted(f.fingerprint() for f in merged) == sorted(f.fingerprint() for f in whole)
    [one] = [f for f in merged if f.code == "KA814"]
    assert one.evidence["partitions"] == [0, 1, 2, 3] and one.evidence["replicaCount"] == 12
    assert sum_changes(pairs).equals(pair_changes(story.history()))


def test_cluster_id_change_is_one_finding_per_broker():
    found = [f for f in jbod_broker_reformatted(None, None).findings() if f.code == "KA809"]
    assert len(found) == 1 and found[0].broker == 3 and found[0].evidence["logDirs"] == ["/d1", "/d2"]
    assert found[0].time == iso(T0 + 2 * DAY)


# ------------------------------------------------------------------------------------------ pairing values


def test_capture_rounds_hold_captures_within_the_skew():
    """A round opens at a capture time and holds the later ones at most --capture-skew after it; each
    cluster has its own rounds."""
    caps = [part(b, d + {1: 0, 2: 1 / 48, 3: 0.5}[b], 1000) for d in range(2) for b in (1, 2, 3)]
    caps += [replace(c, cluster="d") for c in caps if c.broker == 1]
    h = Story(caps).history()
    rounds = capture_rounds(h)
    by = {(int(r.c), int(r.broker), int(r.t)): int(r.round) for r in rounds.itertuples()}
    c = 0  # cluster "c" sorts first
    day = [T0 + d * DAY for d in range(2)]
    assert by[(c, 1, day[0])] == by[(c, 2, day[0] + DAY // 48)]  # 30 minutes apart: one round
    assert by[(c, 3, day[0] + DAY // 2)] not in (by[(c, 1, day[0])], by[(c, 1, day[1])])
    assert by[(1, 1, day[0])] != by[(c, 1, day[0])]
    assert rounds["last"].all()
    tight = Story(caps, settings=HistorySettings(capture_skew_ms=10 * 60_000)).history()
    rounds = capture_rounds(tight)
    assert rounds[rounds["c"] == 0]["round"].nunique() == 6


def test_lag_compares_values_of_one_round_only():
    """Broker 2 captured at 14:00, the others at 02:00, in sync: no spread combines values 12 h apart."""
    story = replicas_captured_at_other_times_of_day(None, None)
    spread = lag_spread(story.history())
    assert set(spread["replicas"]) == {1, 2} and (spread["high"] == spread["low"]).all()
    assert str(spread["low"].dtype) == "int64" and str(spread["lagging"].dtype) == "int64"


def test_lag_message_prints_offsets_as_integers():
    caps = [c for c in lagging(5, 50_000) if not (c.broker == 3 and c.day == 0)]
    (f,) = [f for f in Story(caps).findings() if f.code == "KA806"]
    assert f.message.endswith("broker 3 lags at 250000, the highest replica is at 300000")
    assert (f.offset_start, f.offset_end, f.broker) == (250_000, 299_999, 3)


def test_a_new_directory_id_ends_the_series():
    """The reformatted log dir: KA810 names the change, the offsets after it are not compared."""
    story = Story(reformatted_log_dir())
    h = story.history()
    assert formatted_dirs(h)[["broker", "t"]].values.tolist() == [[2, T0 + 2 * DAY]]
    codes = [f.code for f in story.findings()]
    assert codes == ["KA810"]


def test_a_jbod_move_compares_the_high_watermark_only():
    (f,) = hw_back_across_a_jbod_move(None, None).findings()
    assert (f.code, f.broker, f.log_dir, f.offset_start) == ("KA801", 1, "/d2", 1500)
    assert f.evidence["before"]["logDirs"] == ["/d1", "/d2"]


# ------------------------------------------------------------------------------------------ ordering, open


def test_order_doubts_reasons_and_what_the_other_order_explains():
    from auditor.kafka.history import order_doubts

    def doubts(**kw):
        base = {"unreliable_source": False, "interval_ms": 86_400_000, "restart": None}
        base |= {"back": 0, "forward": 0, "reverse_rewrites": 0}
        return order_doubts(**{**base, **kw})

    assert doubts() == ([], False)
    assert doubts(unreliable_source=True) == (["mtime"], False)  # content in time order: nothing to explain
    assert doubts(interval_ms=38, back=1) == (["interval"], True)
    assert doubts(interval_ms=38, back=1, forward=1) == (["interval"], False)  # both ways: regressions stand
    assert doubts(interval_ms=38, back=1, reverse_rewrites=1) == (["interval"], False)
    assert doubts(back=1) == ([], False)  # one partition between trusted times: a truncation
    assert doubts(back=2) == (["content"], True)
    assert doubts(back=2, restart="the later capture was taken after a clean shutdown") == ([], False)


def test_open_conditions_are_marked_in_the_evidence():
    def flag(story: Story, code: str) -> list[bool]:
        return [f.evidence["open"] for f in story.findings() if f.code == code]

    ongoing = [c for c in lagging(5, 50_000) if not (c.broker == 3 and c.day == 4)]
    ongoing.append(part(3, 4, 500_000 - 50_000, rp=450_000))
    assert flag(Story(ongoing), "KA806") == [True]
    assert flag(follower_lags_for_days(None, None), "KA806") == [False]  # back in sync by the last night
    assert flag(broker_stopped_being_captured(None, None), "KA811") == [True]
    newest = dict(malformed_checkpoint(None, None).problems[0], broker=1, captureTime=T0 + DAY)
    older = dict(newest, captureTime=T0)
    assert flag(Story(steady(days=2), problems=[newest]), "KA812") == [True]
    assert flag(Story(steady(days=2), problems=[older]), "KA812") == [False]


def test_the_textfile_counts_open_conditions_the_report_does_not_list():
    import io

    from prometheus_client.parser import text_string_to_metric_families

    from auditor.report.model import Report
    from auditor.report.prometheus import render_prometheus
    from auditor.rules.registry import HISTORY_SCOPES, select_rules

    found = broker_stopped_being_captured(None, None).findings()
    rules = select_rules([], [], scopes=HISTORY_SCOPES).rules()
    texts = {}
    for name, listed, standing in (("listed", found, []), ("open", [], found), ("audit", [], None)):
        out = io.StringIO()
        render_prometheus(Report("report", listed, rules, open_findings=standing), out)
        texts[name] = {f.name: f.samples for f in text_string_to_metric_families(out.getvalue())}
    for name in ("listed", "open"):
        checks = {s.labels["code"]: s.value for s in texts[name]["kafka_auditor_check_findings"]}
        assert checks["KA811"] == 1 and set(checks) == {r.code for r in rules}, name
    opened = {s.labels["code"]: s.value for s in texts["open"]["kafka_auditor_open_findings"]}
    assert opened["KA811"] == 1 and sum(opened.values()) == 1
    assert "kafka_auditor_open_findings" not in texts["audit"]  # a command without open conditions
