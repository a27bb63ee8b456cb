"""The pass's comparisons over held batch rows that may spill (``auditor.spark.pass_held.HeldRows``), walked
in offset order, equal those written over whole lists and dictionaries (``tests/spark/pass_reference.py``) on
random partitions: logs that agree, differ, repeat a base offset, lack batches or hold transactions; several
leaders (an election's candidates); unreadable spans; every bound on the rows kept in memory, down to none."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.kafka.transactions import ABORT, COMMIT
from auditor.spark import partition_pass, pass_divergence, pass_loss
from auditor.spark.pass_held import HeldRows
from auditor.spark.pass_rows import BatchRow
from tests.spark import pass_reference as reference

BROKERS = (1, 2, 3)


@st.composite
def partitions(draw):
    """Held rows by broker (offset order), replica rows and the bound on rows kept in memory."""
    lengths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=24))
    bases = [sum(lengths[:i]) for i in range(len(lengths))]
    logs: dict[int, list[BatchRow]] = {}
    for broker in draw(st.sampled_from([BROKERS[:2], BROKERS])):
        rows = []
        start = draw(st.integers(0, len(bases) - 1))
        end = draw(st.integers(start, len(bases)))
        for i in range(start, end):
            if draw(st.integers(0, 9)) == 0:
                continue  # a batch this replica lacks
            for _ in range(2 if draw(st.integers(0, 14)) == 0 else 1):  # a log repeating a base offset
                rows.append(_row(draw, broker, bases[i], lengths[i]))
        logs[broker] = rows
    replicas = {
        broker: {"hw": draw(st.one_of(st.none(), st.integers(0, bases[-1] + 4))), "cluster": "c",
                 "topic": "t", "partition": 0, "log_dir": f"/d{broker}"}
        for broker in logs
    }  # fmt: skip
    return logs, replicas, draw(st.integers(0, 6)), bases[-1] + lengths[-1]


def _row(draw, broker: int, base: int, length: int) -> BatchRow:
    kind = draw(st.sampled_from(["plain", "plain", "txn", "commit", "abort"]))
    pid = draw(st.sampled_from([-1, 7, 8])) if kind == "plain" else draw(st.sampled_from([7, 8]))
    return BatchRow(
        {
            "broker": broker,
            "segment": 0,
            "position": base * 100,
            "base_offset": base,
            "last_offset": base + length - 1,
            "crc": 0,
            "leader_epoch": draw(st.integers(0, 2)),
            "valid": True,
            "records_count": 1 if kind in ("commit", "abort") else draw(st.integers(0, length + 1)),
            "size": 70 * length,
            "max_timestamp": draw(st.one_of(st.none(), st.integers(0, 50))),
            "sig": draw(st.integers(0, 2)),  # few signatures: replicas often agree
            "attributes": 0,
            "producer_id": pid,
            "producer_epoch": 0,
            "base_sequence": -1,
            "is_transactional": kind != "plain",
            "is_control": kind in ("commit", "abort"),
            "control_type": {"commit": COMMIT, "abort": ABORT}.get(kind),
            "held": True,
        }
    )


def _held(logs: dict[int, list[BatchRow]], in_memory: int) -> HeldRows:
    held = HeldRows(in_memory, chunk=max(1, in_memory // 2))
    for broker in sorted(logs):
        for b in logs[broker]:
            held.append(b)
    return held


def _lost(rows) -> list[tuple]:
    return [
        (x.b.broker, x.b.base_offset, x.b.sig, x.leader, x.committed_hw, x.start, x.below_hw, x.above_hw,
         x.txn_state, x.txn_first)
        for x in rows
    ]  # fmt: skip


@st.composite
def zones(draw, brokers: list[int], end: int):
    out = []
    for leader in draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=2, unique=True)):
        unreadable = draw(st.one_of(st.none(), st.tuples(st.integers(0, end), st.integers(0, end))))
        for broker in brokers:
            if broker != leader and draw(st.booleans()):
                out.append({
                    "broker": broker, "leader": leader, "leader_source": "candidate",
                    "from": draw(st.integers(0, end)),
                    "leader_unreadable_from": unreadable[0] if unreadable else None,
                    "leader_unreadable_to": max(unreadable) if unreadable else None,
                })  # fmt: skip
    return out


@settings(max_examples=400, deadline=None, derandomize=True)
@given(data=partitions(), extra=st.data())
def test_streamed_loss_divergence_and_lag_equal_the_reference(data, extra):
    logs, replicas, in_memory, end = data
    brokers = sorted(logs)
    held = _held(logs, in_memory)
    try:
        assert held.spilled == (held.count() > in_memory)  # chunks of at most the bound
        states = {
            (b.broker, b.base_offset): extra.draw(st.sampled_from([("committed", None), ("aborted", None),
                                                                    ("open", None), ("marker", 3)]))
            for bs in logs.values() for b in bs if b.is_transactional
        }  # fmt: skip
        zs = extra.draw(zones(brokers, end))
        new = list(pass_loss.lost_batches(held, replicas, zs, states))
        old = list(reference.lost_batches(logs, replicas, zs, states))
        assert _lost(new) == _lost(old)
        assert pass_loss.lost_runs(iter(new)) == reference.lost_runs(old)

        a, b = extra.draw(st.lists(st.sampled_from(brokers), min_size=2, max_size=2, unique=True))
        lo = extra.draw(st.integers(0, end))
        hi = extra.draw(st.integers(lo, end + 1))
        spans = {}
        for side in ("ua", "ub"):
            span = extra.draw(st.one_of(st.none(), st.tuples(st.integers(0, end), st.integers(0, end))))
            spans[f"{side}_from"], spans[f"{side}_to"] = (min(span), max(span)) if span else (None, None)
        pair = {"cluster": "c", "topic": "t", "partition": 0, "a": a, "b": b, "lo": lo, "hi": hi, **spans}
        assert pass_divergence.batch_divergence(pair, held) == reference.batch_divergence(pair, logs)

        leader = extra.draw(st.sampled_from(brokers))
        lag = {"from": lo, "to": hi, "leader": leader}
        assert partition_pass.lag_counts(lag, held.get(leader, [])) == reference.lag_counts(
            lag, logs.get(leader, [])
        )
    finally:
        held.close()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=partitions(), leader=st.sampled_from(BROKERS[:2]))
def test_streamed_open_transactions_equal_the_reference(data, leader):
    logs, replicas, in_memory, _end = data
    rows = [b for broker in sorted(logs) for b in logs[broker]]
    walked = pass_loss.walk_batches(iter(rows), in_memory, chunk=max(1, in_memory // 2))
    try:
        lists = {k: list(v) for k, v in walked.by_broker.items()}
        whole = pass_loss.Walked(lists, walked.states, walked.opened)
        summary = [
            {"broker": broker, "is_leader": broker == leader, "topic": "t", "cluster": "c", "partition": 0,
             "leader_source": "kraft", "log_dir": f"/d{broker}", "hw": 0, "leo": 0, "log_start": 0}
            for broker in sorted(logs)
        ]  # fmt: skip
        assert pass_loss.open_transactions(summary, walked) == reference.open_transactions(summary, whole)
    finally:
        walked.by_broker.close()


def test_held_rows_spill_past_their_bound_and_read_back_in_order():
    """Past the bound every row is on disk, read back a chunk at a time, each replica's in offset order, as
    often as asked; closing removes the file."""
    held = HeldRows(in_memory=3, chunk=2)
    for broker in (1, 2):
        for offset in range(10):
            held.append(BatchRow({"broker": broker, "base_offset": offset, "sig": offset * broker}))
    assert held.spilled and held.count() == 20 and list(held) == [1, 2]
    for _ in range(2):
        assert [(b.base_offset, b.sig) for b in held[2]] == [(o, 2 * o) for o in range(10)]
    walks = iter(held[1]), iter(held[2])  # side by side, as the cursors of the loss walk read them
    assert [(next(walks[0]).sig, next(walks[1]).sig) for _ in range(10)] == [(o, 2 * o) for o in range(10)]
    held.close()
    assert held._file is None


def test_the_sessions_audit_with_every_held_row_spilled_is_the_same(spark, sim_audit, monkeypatch, tmp_path):
    """The session's audit of every scenario (small inputs: the pass runs in the driver over every batch row,
    all of them held) again with no held row kept in memory: every output and the exported lost records are
    the same."""
    import json

    from auditor.spark import pass_held
    from auditor.spark.audit import run_audit
    from tests.spark.test_tuning import canonical

    spilled = []
    close = pass_held.HeldRows.close

    def counted(self):
        spilled.append(self.spilled)
        close(self)

    monkeypatch.setattr(pass_held, "IN_MEMORY", 0)
    monkeypatch.setattr(pass_held, "CHUNK", 8)
    monkeypatch.setattr(pass_held.HeldRows, "close", counted)
    export = tmp_path / "export"
    other = run_audit(spark, sim_audit.inputs, export_lost=export)
    assert other.stats["smallInput"] is True and sum(spilled) > 50, sum(spilled)
    ours, theirs = canonical(sim_audit.result), canonical(other)
    assert ours["loss"] and ours["elections"] and ours["transactions"]
    for key in ours:
        assert ours[key] == theirs[key], key
    with open(export / "lost-records.jsonl", encoding="utf-8") as fh:
        exported = {(d["cluster"], d["topic"], d["partition"], d["offset"]): d for d in map(json.loads, fh)}
    assert exported == sim_audit.exported


def test_a_partition_diverging_over_300000_batches_walks_in_bounded_memory():
    """Three replicas of 100,000 batches each, broker 3's all its own (an old leader's diverged log): walked,
    compared with the leader and summed into one committed loss run in a peak well under what holding the
    rows would take (about 130 MB), past a bound of 5,000 rows in memory."""
    import tracemalloc

    def rows():
        for broker in (1, 2, 3):
            for i in range(100_000):
                sig = i * (7 if broker == 3 else 1)
                yield BatchRow.of((broker, 0, i * 70, i, i, 0, 0, True, 1, 70, i, sig, 0, -1, -1, -1, False,
                                   False, None, True))  # fmt: skip

    replica = {"hw": 100_000, "cluster": "c", "topic": "t", "partition": 0, "log_dir": "/d"}
    replicas = {b: replica for b in (1, 2, 3)}
    zones = [{"broker": 3, "leader": 1, "leader_source": "kraft", "from": 0, "leader_unreadable_from": None,
              "leader_unreadable_to": None}]  # fmt: skip
    tracemalloc.start()
    walked = pass_loss.walk_batches(rows(), in_memory=5_000, chunk=2_000)
    try:
        runs = pass_loss.lost_runs(pass_loss.lost_batches(walked.by_broker, replicas, zones, walked.states))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        walked.by_broker.close()
    assert [(r["kind"], r["batches"], r["records"]) for r in runs] == [("committed", 99_999, 99_999)]
    assert peak < 30 << 20, peak


def test_held_rows_refuse_a_row_before_their_replicas_last_and_a_failed_walk_removes_its_spill(monkeypatch):
    """Every reader walks a replica's held rows in offset order, so a row before the replica's last is
    refused (another replica starts anew); a walk that fails, spill under way, closes the spill file."""
    import pytest

    held = HeldRows(in_memory=0, chunk=1)
    held.append(BatchRow({"broker": 1, "base_offset": 5}))
    with pytest.raises(ValueError, match="offset order"):
        held.append(BatchRow({"broker": 1, "base_offset": 4}))
    held.append(BatchRow({"broker": 2, "base_offset": 0}))
    assert held.spilled
    held.close()

    closed = []
    close = HeldRows.close
    monkeypatch.setattr(HeldRows, "close", lambda self: closed.append(self.spilled) or close(self))
    rows = [BatchRow({"broker": 1, "base_offset": o, "held": True}) for o in (0, 1, 0)]
    with pytest.raises(ValueError, match="order"):
        pass_loss.walk_batches(iter(rows), in_memory=0, chunk=1)
    assert closed == [True]
