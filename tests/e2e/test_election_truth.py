"""``result.elections`` of a real audit (the shared Spark session) on two generated clusters, checked against
the simulator's ground truth:

* ``unclean-election`` seed 7 (the demo's cluster): broker 1, down, holds committed phase-B records the new
  leader (broker 2, epoch 2) lacks; electing broker 2 (the recommendation: highest last leader epoch, then
  lowest id) costs broker 1 those records, electing broker 1 costs brokers 2 and 3 their phase-C records,
  which Kafka's epoch-based truncation would not even remove (broker 1's cache cannot answer for epoch 2);
* an offline partition (KRaft leader -1): the followers were killed, the lone leader took acks=1 records and
  was killed too; the followers' logs are prefixes of its log.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from rich.console import Console

from auditor.kafka.election import truncation_start
from auditor.report.election import election_json, election_renderable
from auditor.simulate import SimOptions
from auditor.simulate.cluster import Cluster
from auditor.simulate.truth import ground_truth
from auditor.simulate.writer import write_cluster
from auditor.spark.election import candidate_of

SEED = 7
UNCLEAN, OFFLINE = "unclean-election-7", "offline-7"


def offline_cluster(out: Path) -> dict:
    """One partition on brokers 1..3: phase A with acks=all, the followers killed, phase B (acks=1) on the
    lone leader, whose HW checkpoint covers it, then the leader killed: no leader, no unclean election."""
    opts = SimOptions(seed=SEED)
    c = Cluster(opts, truncation="epoch", rng=random.Random(SEED))
    c.add_topic("t0", 1, kind="plain", min_insync=1, replicas={0: [1, 2, 3]})
    tps = [("t0", 0)]
    c.run_traffic(tps, 100, acks="all", label="A")
    c.replicate(3)
    c.tick(opts.hw_checkpoint_interval_ms)
    c.replicate(3)
    c.crash(2)
    c.crash(3)
    c.run_traffic(tps, 40, acks="1", label="B")
    c.tick(opts.hw_checkpoint_interval_ms)
    c.crash(1)
    write_cluster(c, out)
    return ground_truth(c, scenario="offline", description="offline partition", options={})


@pytest.fixture
def audited(consequences_audit):
    """The clusters ``UNCLEAN`` and ``OFFLINE`` of the one consequences audit
    (``tests.support.consequences``)."""
    return consequences_audit.result, consequences_audit.truths


def _election(result, cluster: str) -> dict:
    found = [e for e in result.elections if e["cluster"] == cluster]
    assert len(found) == 1, [(e["cluster"], e["topic"], e["partition"]) for e in result.elections]
    return found[0]


def _committed(writes, leader: int, epoch: int, lo: int, hi: int) -> int:
    """Committed records of ``leader`` in ``epoch`` at offsets [lo, hi) (the ground truth's writes)."""
    return sum(
        w["records"]
        for w in writes
        if w["leader"] == leader
        and w["epoch"] == epoch
        and w["committed"]
        and w["control"] is None
        and lo <= w["first_offset"] < hi
    )


def _candidate(e: dict, broker: int) -> dict:
    return next(c for c in e["candidates"] if c["broker"] == broker)


def _cost(candidate: dict, broker: int) -> dict:
    return next(c for c in candidate["costs"] if c["broker"] == broker)


def test_unclean_election_costs_match_the_ground_truth(audited):
    result, truths = audited
    e = _election(result, UNCLEAN)
    p = truths[UNCLEAN]["partitions"][0]
    state = {int(b): s["disk"] for b, s in p["replica_state"].items()}
    unclean = next(h for h in p["leader_history"] if h["unclean"])
    new_leader, diverged = unclean["leader"], unclean["start_offset"]
    old_leo, new_leo = state[1]["log_end_offset"], state[new_leader]["log_end_offset"]
    phase_b = _committed(p["writes"], 1, 0, diverged, old_leo)
    phase_c = _committed(p["writes"], new_leader, unclean["epoch"], diverged, new_leo)
    assert (phase_b, phase_c) == (250, 150)

    assert (e["topic"], e["partition"], e["reasons"]) == ("t0", 0, ["divergence"])
    assert e["kraft_leader"] == p["final"]["leader"] == new_leader
    assert [c["broker"] for c in e["candidates"]] == [2, 3, 1]
    assert e["recommended"] == 2 and e["current_is_recommended"] is True
    assert "higher last leader epoch than broker 1 (2 > 0)" in e["why"]

    # electing the current leader costs broker 1 its committed phase-B records; broker 3 nothing
    two = _candidate(e, 2)
    assert (two["last_epoch"], two["leo"], two["recommended"], two["current"]) == (2, new_leo, True, True)
    b1 = _cost(two, 1)
    assert (b1["records"], b1["committed"]) == (old_leo - diverged, phase_b)
    assert (b1["from"], b1["first"], b1["last"]) == (diverged, diverged, old_leo - 1)
    assert b1["epoch_truncation"] == diverged and b1["silent_from"] is None
    assert (_cost(two, 3)["records"], _cost(two, 3)["from"]) == (0, None)
    assert (two["records_lost"], two["committed_lost"]) == (phase_b, phase_b)

    # electing broker 1 costs brokers 2 and 3 their phase-C records, and Kafka would not truncate them:
    # broker 1's cache has no epoch 2, the followers fall back to their HW and keep 500..649 diverged
    one = _candidate(e, 1)
    assert (one["last_epoch"], one["leo"], one["rank"]) == (0, old_leo, 3)
    for b in (2, 3):
        cost = _cost(one, b)
        assert (cost["records"], cost["committed"], cost["from"]) == (phase_c, phase_c, diverged)
        assert (cost["epoch_truncation"], cost["epoch_fallback"]) == (new_leo, "high-watermark")
        assert (cost["silent_from"], cost["silent_to"]) == (diverged, new_leo - 1)
    assert one["committed_lost"] == 2 * phase_c


def test_offline_partition(audited):
    result, truths = audited
    e = _election(result, OFFLINE)
    p = truths[OFFLINE]["partitions"][0]
    assert p["final"]["leader"] == -1
    leo = {int(b): s["disk"]["log_end_offset"] for b, s in p["replica_state"].items()}
    assert (leo[1], leo[2], leo[3]) == (140, 100, 100)
    assert e["reasons"] == ["offline"] and e["kraft_leader"] == -1
    assert e["recommended"] == 1 and e["current_is_recommended"] is None
    assert not any(c["current"] for c in e["candidates"])
    assert "higher log end offset (140 > 100)" in e["why"]
    lost_b = _committed(p["writes"], 1, 0, 100, 140)  # phase B, epoch 0, committed by the lone leader
    assert lost_b == 40
    assert _candidate(e, 1)["records_lost"] == 0
    for b in (2, 3):
        cand = _candidate(e, b)
        cost = _cost(cand, 1)
        assert (cost["records"], cost["committed"], cost["from"], cost["last"]) == (40, lost_b, 100, 139)
        assert cost["silent_from"] is None
        other = 5 - b
        assert _cost(cand, other)["records"] == 0


def test_spark_zones_start_where_the_model_truncates(audited):
    """The zone start Spark counted from (``from``) is ``election.truncation_start`` of every pair."""
    result, _ = audited
    summary = {(r["cluster"], r["topic"], r["partition"], r["broker"]): r for r in result.replicas}
    pairs = 0
    for e in result.elections:
        if e["cluster"] not in (UNCLEAN, OFFLINE):
            continue  # the other clusters of the shared audit
        key = (e["cluster"], e["topic"], e["partition"])
        for cand in e["candidates"]:
            c = candidate_of(summary[(*key, cand["broker"])])
            for cost in cand["costs"]:
                f = candidate_of(summary[(*key, cost["broker"])])
                assert cost["from"] == truncation_start(c, f, cost["first_difference"])
                pairs += 1
    assert pairs == 12


def test_report_renderers(audited):
    result, _ = audited
    doc = election_json(result.elections)
    e = next(d for d in doc if d["cluster"] == UNCLEAN)
    assert (e["recommended"], e["currentIsRecommended"], e["kraftLeader"]) == (2, True, 2)
    one = next(c for c in e["candidates"] if c["broker"] == 1)
    cost = next(c for c in one["costs"] if c["broker"] == 2)
    assert cost["silentDivergence"] == {"firstOffset": 500, "lastOffset": 649}
    assert (one["lastLeaderEpoch"], one["logEndOffset"], one["committedRecordsLost"]) == (0, 750, 300)
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(election_renderable(result.elections))
    text = out.getvalue()
    assert "Kafka's choice" in text and "current" in text and "no leader (offline)" in text
    assert "b1 500..749: 250 (250 committed)" in text
    assert "500..649 stay diverged (truncated to 650)" in text
