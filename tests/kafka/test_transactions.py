"""The transaction model (``auditor.kafka.transactions``) and its Spark twins: ``with_txn_state`` (the state
of every batch) and ``compare.txn_states`` (plus the first data offset of each marker's transaction) equal
the model on hypothesis-generated logs of several producers (interleaved transactions, markers with and
without data, plain batches, KRaft control batches, non-live tails)."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
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


# ------------------------------------------------------------------------------- Spark equals the model

SPEC = st.one_of(
    st.tuples(st.just("d"), st.integers(1, 4)),
    st.tuples(st.just("t"), st.integers(1, 3), st.integers(1, 4)),
    st.tuples(st.sampled_from(["c", "a"]), st.integers(1, 3)),
    st.tuples(st.just("k")),
)
LOG = st.tuples(st.lists(SPEC, min_size=1, max_size=25), st.integers(0, 3))  # specs, non-live tail length
LOGS = st.lists(LOG, min_size=60, max_size=80)


def _rows(logs: list[tuple[list[tuple], int]]) -> tuple[list[dict], dict, dict]:
    """Batch rows of every generated log (partition i, broker 1) and the model's expectations: the state of
    every batch (None beyond the live prefix) and the first data offset of each live marker's transaction."""
    rows, states, firsts = [], {}, {}
    for i, (specs, tail) in enumerate(logs):
        batches = log(*specs)
        n_live = max(0, len(batches) - tail)
        live = batches[:n_live]
        for b, s in zip(batches, classify(live) + [None] * (len(batches) - n_live), strict=True):
            states[(i, b.base_offset)] = s
        for t in transactions(live):
            if t.marker_offset is not None:
                firsts[(i, t.marker_offset)] = t.first_offset
        for j, b in enumerate(batches):
            rows.append(
                {
                    "cluster": "c",
                    "topic": "t",
                    "partition": i,
                    "tp": i,
                    "broker": 1,
                    "live": j < n_live,
                    "base_offset": b.base_offset,
                    "producer_id": b.producer_id,
                    "is_transactional": b.is_transactional,
                    "is_control": b.is_control,
                    "control_type": b.control_type,
                }
            )
    return rows, states, firsts


SCHEMA = (
    "cluster string, topic string, partition int, tp bigint, broker int, live boolean, base_offset bigint, "
    "producer_id bigint, is_transactional boolean, is_control boolean, control_type tinyint"
)


@settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(logs=LOGS)
def test_spark_transaction_state_equals_the_model(spark, logs):
    from auditor.spark.compare import txn_states

    rows, states, firsts = _rows(logs)
    # one action: txn_states is with_txn_state (the state; null beyond the live prefix) plus the first data
    # offset of each marker's transaction (read for live markers only)
    out = txn_states(spark.createDataFrame(rows, SCHEMA)).collect()
    assert {(r["s_tp"], r["s_base"]): r["txn_state"] for r in out} == states
    got_firsts = {
        (r["s_tp"], r["s_base"]): (r["s_base"] if r["txn_first"] is None else r["txn_first"])
        for r in out
        if r["txn_state"] == MARKER
    }
    assert got_firsts == firsts
