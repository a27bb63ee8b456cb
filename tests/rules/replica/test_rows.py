"""Rows of the extract read into the replica model's dataclasses by their fields' declared types."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from auditor.rules.replica.model import Divergence, LagRow, LostRun, Replica
from auditor.rules.replica.rows import from_row


def test_a_replica_row_is_read_by_type_and_missing_optionals_are_none():
    r = Replica.from_row(
        {
            "cluster": "c",
            "topic": "t",
            "partition": "3",
            "broker": 2,
            "leo": 10.0,
            "log_start": 0,
            "error": "",
        }
    )
    assert (r.partition, r.broker, r.leo) == (3, 2, 10)
    assert isinstance(r.leo, int)
    assert r.hw is None and r.latest_epoch is None and r.log_dir is None and r.unreadable is None
    assert r.error is None  # an empty error is no error


def test_an_optional_int_is_null_when_nan():
    r = Replica.from_row(
        {"topic": "t", "partition": 0, "broker": 1, "leo": 5, "log_start": 0, "hw": float("nan")}
    )
    assert r.hw is None and r.cluster is None


def test_counts_with_a_default_take_it_when_the_row_has_none():
    row = {
        "kind": "committed",
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": 2,
        "leader": 1,
        "lo": 5,
        "hi": 9,
        "epochs": [3.0, 4],
        "records": 5,
        "bytes": 500,
        "batches": 2,
        "committed_hw": 8,
        "leader_source": "kraft",
        "markers": None,
        "producer_ids": [7],
    }
    run = LostRun.from_row(row)
    assert run.epochs == [3, 4] and run.markers == 0 and run.aborted_records == 0
    assert run.producer_ids == (7,) and run.lost_markers == () and run.span == (5, 9)


def test_lag_rows_rename_their_bounds_and_count_null_as_zero():
    row = {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": 2,
        "leader": 1,
        "leader_source": "inferred",
        "from": 4,
        "to": 9,
        "in_isr": 0,
        "isr": [1],
        "records": None,
    }
    lag = LagRow.from_row(row)
    assert (lag.start, lag.end, lag.records, lag.bytes) == (4, 9, 0, 0)
    assert lag.in_isr is False and lag.isr == [1] and lag.epoch is None


def test_a_field_of_a_type_without_reader_must_be_given():
    @dataclass(frozen=True)
    class Odd:
        offset: int
        shape: tuple[str, str]

    with pytest.raises(TypeError, match=r"Odd.shape"):
        from_row(Odd, {"offset": 1, "shape": ("a", "b")})
    assert from_row(Odd, {"offset": "1"}, shape=("a", "b")) == Odd(1, ("a", "b"))
    assert Divergence.from_row({"a": 1, "b": 2, "lo": 0, "hi": 5, "offset": 3}).mode is None
