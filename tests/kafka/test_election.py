"""The election semantics of ``auditor.kafka.election`` on hand-made replicas: KIP-966's order, where each
replica truncates, the cost in records and committed records (transaction-aware) and Kafka's epoch-based
truncation against the real divergence."""

from __future__ import annotations

from auditor.kafka.election import (
    Candidate,
    Cost,
    LogBatch,
    choices,
    committed_records,
    epoch_check,
    ranked,
    recommendation,
    replica_cost,
    truncation_start,
    why,
)
from auditor.kafka.transactions import ABORTED, COMMITTED, MARKER, OPEN, PLAIN


def test_order_is_last_epoch_then_leo_then_lowest_broker_id():
    a = Candidate(1, leo=750, cache=((0, 0),))
    b = Candidate(2, leo=650, cache=((0, 0), (2, 500)))
    c = Candidate(3, leo=650, cache=((0, 0), (2, 500)))
    assert [x.broker for x in ranked([a, c, b])] == [2, 3, 1]
    # same epoch: the longer log wins
    d = Candidate(4, leo=700, cache=((0, 0), (2, 500)))
    assert recommendation([a, b, c, d]).broker == 4
    assert "higher log end offset (700 > 650)" in why([a, b, c, d])
    assert "lower broker id" in why([b, c])
    assert "higher last leader epoch than broker 1 (2 > 0)" in why([a, b])


def test_last_epoch_falls_back_to_the_batches_then_minus_one():
    assert Candidate(1, leo=10, cache=((3, 0), (5, 4))).last_epoch == 5
    assert Candidate(1, leo=10, cache=(), max_batch_epoch=4).last_epoch == 4
    assert Candidate(1, leo=0).last_epoch == -1
    # a replica without cache but with epoch-7 batches beats one whose cache ends at epoch 6
    assert (
        recommendation([Candidate(1, 100, cache=((6, 0),)), Candidate(2, 10, max_batch_epoch=7)]).broker == 2
    )


def test_truncation_start():
    c = Candidate(1, leo=100)
    # a divergence: there, whatever the lengths
    assert truncation_start(c, Candidate(2, leo=80), 60) == 60
    # the replica extends the candidate's log: the candidate's LEO
    assert truncation_start(c, Candidate(2, leo=120), None) == 100
    # ... not below the replica's log start
    assert truncation_start(c, Candidate(2, leo=300, log_start=150), None) == 150
    # a prefix of the candidate's log loses nothing
    assert truncation_start(c, Candidate(2, leo=90), None) is None
    assert truncation_start(c, Candidate(2, leo=100), None) is None


def _log(*batches):
    return [LogBatch(*b) for b in batches]


def test_cost_counts_differing_batches_and_committed_records():
    # KAFKA-10751's example as logs: A holds 0..9, B 0..4, C 0..1 (one-record batches, same batches)
    logs = {b: _log(*[(o, o, o, 1, 10) for o in range(n)]) for b, n in ((1, 10), (2, 5), (3, 2))}
    hws = {1: 5, 2: 5, 3: 2}
    cands = [Candidate(b, leo=len(log)) for b, log in logs.items()]

    def cost_of(c, r, start):
        return replica_cost(c, r, start, logs, hws)

    by = {ch.candidate.broker: ch for ch in choices(cands, lambda a, b: None, cost_of)}
    assert by[3].costs[1].records == 8 and by[3].costs[2].records == 3  # electing C: 8 on A, 3 on B
    assert by[3].costs[1].committed == 3  # offsets 2..4 were below the HW 5
    assert by[3].costs[2].committed == 3
    assert (by[3].costs[1].first, by[3].costs[1].last, by[3].costs[1].bytes) == (2, 9, 80)
    assert by[1].records == 0 and by[1].rank == 1
    assert by[2].costs[1].records == 5 and by[2].costs[1].committed == 0


def test_cost_of_a_divergence_uses_the_highest_hw_of_the_holders():
    same = [(0, 4, 100, 5, 50)]
    logs = {
        1: _log(*same, (5, 9, 201, 5, 50), (10, 14, 202, 5, 50)),  # old leader: 5..14, its HW 15
        2: _log(*same, (5, 7, 301, 3, 30)),  # new leader: different batch at 5
        3: _log(*same, (5, 9, 201, 5, 50)),  # a follower holding the old leader's 5..9, HW 5
    }
    hws = {1: 8, 2: 8, 3: 5}
    cost = replica_cost(2, 3, 5, logs, hws)
    # 5..9 is held by broker 1 (HW 8) and 3 (HW 5): committed below 8
    assert (cost.records, cost.committed, cost.batches) == (5, 3, 1)
    cost = replica_cost(2, 1, 5, logs, hws)
    assert (cost.records, cost.committed, cost.first, cost.last) == (10, 3, 5, 14)
    # a start inside a batch (compacted partitions: a record offset)
    assert replica_cost(2, 1, 12, logs, hws).records == 3


def test_committed_records_are_transaction_aware():
    assert committed_records(0, 9, 10, 100, PLAIN) == 10
    assert committed_records(0, 9, 10, 100, COMMITTED) == 10
    assert committed_records(0, 9, 10, 5, COMMITTED) == 5
    for state in (ABORTED, OPEN, MARKER):
        assert committed_records(0, 9, 10, 100, state) == 0
    logs = {
        1: _log((0, 0, 1, 1, 10)),
        2: _log(
            (0, 0, 1, 1, 10),
            (1, 3, 2, 3, 10, ABORTED),
            (4, 4, 3, 1, 10, MARKER),
            (5, 6, 4, 2, 10, COMMITTED),
            (7, 7, 5, 1, 10, MARKER),
        ),
    }
    cost = replica_cost(1, 2, 1, logs, {1: 1, 2: 8})
    assert isinstance(cost, Cost)
    assert (cost.records, cost.committed, cost.markers, cost.batches) == (5, 2, 2, 4)


def test_epoch_truncation_against_the_real_divergence():
    old = Candidate(1, leo=750, hw=750, cache=((0, 0),))
    new = Candidate(2, leo=650, hw=650, cache=((0, 0), (2, 500)))
    # electing the new leader: the old one truncates exactly at the divergence
    check = epoch_check(new, old, 500)
    assert (check.truncation_offset, check.diverges_silently) == (500, False)
    # electing the old leader: it cannot answer for epoch 2, the follower falls back to its HW (650) and
    # keeps 500..649 although they differ from the leader's records at those offsets
    check = epoch_check(old, new, 500)
    assert check.fallback == "high-watermark"
    assert (check.truncation_offset, check.silent_from, check.silent_to) == (650, 500, 649)
    # no divergence, a longer follower: truncation at the leader's LEO, nothing kept
    short = Candidate(3, leo=600, hw=600, cache=((0, 0), (2, 500)))
    check = epoch_check(short, new, truncation_start(short, new, None))
    assert (check.truncation_offset, check.diverges_silently) == (600, False)
