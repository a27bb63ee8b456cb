"""The transaction model (``auditor.kafka.transactions``), and the audit's per-partition pass using it
(``pass_loss.walk_batches``: the state of every held batch plus the first data offset of each marker's
transaction, and each replica's open transactions, from one walk that keeps only the held rows) equal to the
model on hypothesis-generated logs of several producers (interleaved transactions,
markers with and without data, plain batches, KRaft control batches)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.kafka.transactions import (
    ABORT,
    ABORTED,
    COMMIT,
    COMMITTED,
    CONTROL,
    MARKER,
    OPEN,
    PLAIN,
    AbortedTxn,
    Batch,
    aborted_transactions,
    classify,
    last_stable_offset,
    open_transactions,
    transactions,
)


def log(*specs: tuple) -> list[Batch]:
    """Batches at consecutive offsets from ``specs``: ("d", n) plain data of n records, ("t", pid, n)
    transactional data, ("c"|"a", pid) COMMIT/ABORT marker, ("k",) a KRaft control batch."""
    out: list[Batch] = []
    offset = 0
    for spec in specs:
        kind = spec[0]
        if kind == "d":
            b = Batch(offset, offset + spec[1] - 1, records=spec[1])
        elif kind == "t":
            b = Batch(offset, offset + spec[2] - 1, spec[1], 0, is_transactional=True, records=spec[2])
        elif kind in ("c", "a"):
            ct = COMMIT if kind == "c" else ABORT
            b = Batch(offset, offset, spec[1], 0, is_transactional=True, is_control=True, control_type=ct)
        else:
            b = Batch(offset, offset, is_control=True, control_type=3)
        out.append(b)
        offset = b.last_offset + 1
    return out


# ------------------------------------------------------------------------------------------ the model


def test_classify_by_the_next_marker_of_the_same_producer():
    # offsets: t1 0-1, t2 2-4, d 5, c1 6, t1 7, a2 8, k 9, t2 10-11, t1 12
    batches = log(
        ("t", 1, 2), ("t", 2, 3), ("d", 1), ("c", 1), ("t", 1, 1), ("a", 2), ("k",), ("t", 2, 2), ("t", 1, 1)
    )
    assert classify(batches) == [
        COMMITTED,
        ABORTED,
        PLAIN,
        MARKER,
        OPEN,  # producer 1's data after its COMMIT: no marker of producer 1 after it
        MARKER,
        CONTROL,
        OPEN,
        OPEN,
    ]


def test_transactions_in_start_order_with_markers_and_open_ones():
    batches = log(("t", 1, 2), ("t", 2, 3), ("c", 1), ("t", 2, 1), ("a", 2), ("t", 1, 4))
    txns = transactions(batches)
    assert [(t.producer_id, t.first_offset, t.last_offset, t.batches, t.outcome) for t in txns] == [
        (1, 0, 1, 1, COMMITTED),
        (2, 2, 6, 2, ABORTED),
        (1, 8, 11, 1, OPEN),
    ]
    assert (txns[0].marker_offset, txns[0].marker_name) == (5, "COMMIT")
    assert (txns[1].marker_offset, txns[1].marker_name) == (7, "ABORT")
    assert txns[2].is_open and txns[2].marker_offset is None


def test_a_marker_without_data_is_a_transaction_without_batches():
    """As ``ProducerAppendInfo.appendEndTxnMarker`` records it: first and last offsets are the marker's."""
    batches = log(("d", 3), ("a", 5), ("t", 5, 2), ("c", 5))
    txns = transactions(batches)
    assert [(t.producer_id, t.first_offset, t.last_offset, t.batches, t.marker) for t in txns] == [
        (5, 3, 3, 0, ABORT),
        (5, 4, 5, 1, COMMIT),
    ]
    assert aborted_transactions(batches) == [AbortedTxn(5, 3, 3)]


def test_last_stable_offset_is_the_first_offset_of_the_oldest_open_transaction_below_the_hw():
    batches = log(("d", 2), ("t", 1, 2), ("c", 1), ("t", 2, 3), ("d", 1), ("t", 3, 2))
    # producer 2 open from 5, producer 3 open from 9
    assert [t.first_offset for t in open_transactions(batches)] == [5, 9]
    assert last_stable_offset(batches, high_watermark=11) == 5
    assert last_stable_offset(batches, high_watermark=5) == 5  # capped by the high watermark
    assert last_stable_offset(batches, high_watermark=3) == 3
    assert open_transactions(batches, below=9) == open_transactions(batches)[:1]
    committed_only = log(("t", 1, 2), ("c", 1), ("d", 4))
    assert last_stable_offset(committed_only, high_watermark=7) == 7


def test_aborted_transactions_are_the_txnindex_entries_by_marker_offset():
    batches = log(("t", 1, 2), ("t", 2, 2), ("a", 2), ("a", 1), ("t", 1, 1), ("c", 1), ("t", 3, 1), ("a", 3))
    assert aborted_transactions(batches) == [AbortedTxn(2, 2, 4), AbortedTxn(1, 0, 5), AbortedTxn(3, 8, 9)]


# ------------------------------------------------------------ the audit's per-partition pass equals the model

SPEC = st.one_of(
    st.tuples(st.just("d"), st.integers(1, 4)),
    st.tuples(st.just("t"), st.integers(1, 3), st.integers(1, 4)),
    st.tuples(st.sampled_from(["c", "a"]), st.integers(1, 3)),
    st.tuples(st.just("k")),
)
LOGS = st.lists(st.lists(SPEC, min_size=1, max_size=25), min_size=1, max_size=4)  # one log per broker


@settings(max_examples=300, deadline=None, derandomize=True)
@given(logs=LOGS, held=st.lists(st.booleans(), min_size=100, max_size=100))
def test_pass_transaction_state_equals_the_model(logs, held):
    """``pass_loss.walk_batches`` (the audit's, per replica log of a partition, over the rows Spark ships in
    (broker, offset) order, only some of them held): every held batch's state is ``classify``'s, each held
    marker's first data offset is its transaction's (``transactions``), the held rows are kept in offset order
    and nothing else, and each replica's open transactions are the model's."""
    from auditor.spark.pass_loss import state_of, walk_batches
    from auditor.spark.pass_rows import BatchRow

    rows, states, firsts, opened = [], {}, {}, {}
    for broker, specs in enumerate(logs):
        batches = log(*specs)
        for b, s in zip(batches, classify(batches), strict=True):
            states[(broker, b.base_offset)] = s
        for t in transactions(batches):
            if t.marker_offset is not None:
                firsts[(broker, t.marker_offset)] = t.first_offset
            elif t.batches:
                opened[(broker, t.producer_id)] = (t.first_offset, t.producer_epoch, t.last_offset, t.batches)
        rows += [
            BatchRow(
                {
                    "broker": broker,
                    "base_offset": b.base_offset,
                    "last_offset": b.last_offset,
                    "records_count": b.records,
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "is_transactional": b.is_transactional,
                    "is_control": b.is_control,
                    "control_type": b.control_type,
                    "sig": 0,
                    "held": held[i % len(held)],
                }
            )
            for i, b in enumerate(batches)
        ]
    # what Spark ships: the held rows and every transactional or control one
    shipped = [b for b in rows if b.held or b.is_transactional or b.is_control]
    walked = walk_batches(iter(shipped))
    kept = [b for b in shipped if b.held]
    assert [b for bs in walked.by_broker.values() for b in bs] == kept
    got = {(b.broker, b.base_offset): state_of(walked.states, b) for b in kept}
    assert {k: state for k, (state, _) in got.items()} == {k: states[k] for k in got}
    got_firsts = {k: (k[1] if f is None else f) for k, (state, f) in got.items() if state == MARKER}
    assert got_firsts == {k: firsts[k] for k in got if states[k] == MARKER}
    got_open = {
        (broker, pid): (t.first[0], t.first[1], t.last_offset, t.batches)
        for broker, txns in walked.opened.items()
        for pid, t in txns.items()
    }
    assert got_open == opened


def test_pass_walks_a_partitions_transactions_in_bounded_memory():
    """600,000 transactional batches of three replicas (an exactly-once partition), none held but the last of
    each, walk in a peak of under 1 MiB (the pass kept every one before: about 270 MB), and rows out of order
    are refused."""
    import tracemalloc

    import pytest

    from auditor.spark.pass_loss import walk_batches
    from auditor.spark.pass_rows import BATCH_FIELDS, BatchRow

    def rows(n):
        template = dict.fromkeys(BATCH_FIELDS)
        template.update(records_count=1, producer_epoch=0, is_transactional=True)
        at = {name: i for i, name in enumerate(BATCH_FIELDS)}
        base = list(template[k] for k in BATCH_FIELDS)
        for broker in (1, 2, 3):
            for i in range(n):
                v = base.copy()
                v[at["broker"]], v[at["base_offset"]], v[at["last_offset"]] = broker, i, i
                v[at["producer_id"]], v[at["held"]] = i % 3, i == n - 1
                if i % 4 == 3:
                    v[at["is_control"]], v[at["control_type"]] = True, COMMIT
                yield BatchRow.of(tuple(v))

    tracemalloc.start()
    walked = walk_batches(rows(200_000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sorted(walked.by_broker) == [1, 2, 3] and all(len(list(v)) == 1 for v in walked.by_broker.values())
    assert peak < 1 << 20, peak
    with pytest.raises(ValueError, match="order"):
        walk_batches(iter([BatchRow({"broker": 1, "base_offset": o}) for o in (5, 4)]))
