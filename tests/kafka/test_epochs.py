"""Kafka's leader-epoch algorithms (spec §17.6) and the KRaft replay, without Spark."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.kafka.epochs import end_offset_for, follower_truncation, loaded_cache
from auditor.kafka.kraft import replay_partitions
from auditor.observe.metadata import extract_metadata
from auditor.simulate.truth.oracles import epoch_truncation_offset
from tests.conftest import corpus_path

LEADER = [(0, 0), (2, 750), (4, 985)]


def test_end_offset_for_follows_the_spec():
    assert end_offset_for(LEADER, 1200, 4) == (4, 1200)  # latest epoch: the LEO
    assert end_offset_for(LEADER, 1200, 2) == (2, 985)
    assert end_offset_for(LEADER, 1200, 3) == (2, 985)  # KIP-279: largest epoch <= requested
    assert end_offset_for(LEADER, 1200, 5) == (-1, -1)  # newer than the leader's
    assert end_offset_for(LEADER, 1200, -1) == (-1, -1)
    assert end_offset_for([(3, 100)], 200, 1) == (1, 100)  # older than any cached epoch


def test_unclean_election_truncation():
    """The corpus case: the old leader (epoch 0 up to 1500) truncates to 1000 where epoch 2 starts."""
    t = follower_truncation([(0, 0), (2, 1000)], 1300, [(0, 0)], 1500, 1500)
    assert t.offset == 1000 and t.fallback is None
    assert t.steps[0] == {
        "asked": 0,
        "leader_epoch": 0,
        "leader_end": 1000,
        "follower_epoch": 0,
        "follower_end": 1500,
    }


def test_kip_279_loop_asks_again_with_an_older_epoch():
    # follower saw epochs 0 and 1 (1 never reached the leader); leader went 0 -> 2
    t = follower_truncation([(0, 0), (2, 100)], 300, [(0, 0), (1, 90)], 120, 80)
    assert t.offset == 90
    assert len(t.steps) == 1  # leader answers (0, 100); follower's end of epoch 0 is 90: done
    t = follower_truncation([(0, 0), (3, 50)], 300, [(0, 0), (1, 60), (2, 70)], 120, 0)
    assert t.offset == 50


def test_unknown_epoch_falls_back_to_the_high_watermark():
    t = follower_truncation([(0, 0)], 100, [(0, 0), (5, 90)], 120, 70)
    assert (t.offset, t.fallback) == (70, "high-watermark")


def test_loaded_cache_trims_like_kafka():
    assert loaded_cache([(0, 0), (2, 750), (4, 985)], 0, 985) == [(0, 0), (2, 750)]
    assert loaded_cache([(0, 0), (2, 750), (4, 985)], 800, 1000) == [(2, 800), (4, 985)]
    assert loaded_cache([(0, 0), (2, 750)], 750, 1000) == [(2, 750)]
    assert loaded_cache([], 0, 10) == []


caches = (
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 60)), max_size=6)
    .map(lambda xs: sorted({e: s for e, s in sorted(xs)}.items()))
    .filter(lambda c: all(a[1] < b[1] for a, b in zip(c, c[1:], strict=False)))
)


@settings(max_examples=300, deadline=None)
@given(caches, st.integers(0, 80), caches, st.integers(0, 80), st.integers(0, 80))
def test_same_answer_as_the_simulator(l_cache, l_leo, f_cache, f_leo, f_hw):
    """Two independent implementations of the follower loop agree (the simulator's writes ground truth)."""
    l_cache = [(e, s) for e, s in l_cache if s < l_leo]
    f_cache = [(e, s) for e, s in f_cache if s < f_leo]
    f_hw = min(f_hw, f_leo)
    ours = follower_truncation(l_cache, l_leo, f_cache, f_leo, f_hw).offset
    assert ours == epoch_truncation_offset(l_cache, l_leo, f_cache, f_leo, f_hw)


def test_replay_of_the_real_unclean_election():
    corpus = corpus_path()
    root = corpus / "unclean-leader-election/before-old-leader-restart/controller-100"
    rows = extract_metadata(str(root), 100, "c").to_pylist()
    state = replay_partitions(rows)[("ule", 0)]
    assert (state.leader, state.leader_epoch, state.isr, state.leader_recovery_state) == (1, 2, [1], 1)
    assert [u["leader"] for u in state.unclean] == [1]
    assert state.unclean[0]["previous_isr"] == [3]
    assert [h["leader_epoch"] for h in state.history] == [0, 0, 0, 1, 2]
    after = corpus / "unclean-leader-election/after-old-leader-rejoined/controller-100"
    state = replay_partitions(extract_metadata(str(after), 100, "c").to_pylist())[("ule", 0)]
    assert (state.leader, state.last_known_leader, state.leader_epoch) == (-1, 3, 4)


def test_replay_resets_on_a_new_topic_incarnation():
    rows = [
        {
            "record_type": "PARTITION_RECORD",
            "topic": "t",
            "partition": 0,
            "topic_id": "A",
            "leader": 1,
            "leader_epoch": 3,
            "isr": [1, 2],
            "replicas": [1, 2],
            "leader_recovery_state": 0,
            "seq": 0,
        },
        {"record_type": "REMOVE_TOPIC_RECORD", "topic": "t", "topic_id": "A", "seq": 1},
        {
            "record_type": "PARTITION_RECORD",
            "topic": "t",
            "partition": 0,
            "topic_id": "B",
            "leader": 2,
            "leader_epoch": 0,
            "isr": [2],
            "replicas": [2],
            "leader_recovery_state": 0,
            "seq": 2,
        },
        {
            "record_type": "PARTITION_CHANGE_RECORD",
            "topic": "t",
            "partition": 0,
            "topic_id": "B",
            "leader": -2,
            "isr": [2, 1],
            "leader_recovery_state": -1,
            "seq": 3,
        },
    ]
    state = replay_partitions(rows)[("t", 0)]
    assert (state.topic_id, state.leader, state.leader_epoch, state.isr) == ("B", 2, 0, [2, 1])
    assert state.unclean == []
