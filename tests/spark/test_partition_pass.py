"""Pieces of the per-partition pass (``auditor.spark.partition_pass``) the scenarios do not single out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.spark.pass_divergence import digest_of, epoch_ranges
from auditor.spark.pass_rows import BATCH_FIELDS, BatchRow


def _row(i: int) -> dict:
    return {name: i * 100 + n for n, name in enumerate(BATCH_FIELDS)}


def test_a_batch_row_from_values_equals_one_from_a_mapping():
    row = _row(3)
    a, b = BatchRow(row), BatchRow.of(tuple(row[name] for name in BATCH_FIELDS))
    values = list(row.values())
    assert [getattr(a, n) for n in BATCH_FIELDS] == [getattr(b, n) for n in BATCH_FIELDS] == values
    assert a["sig"] == row["sig"]


def test_epoch_ranges_of_chunk_digests_equal_those_of_the_batches():
    """What Spark's digest gives per chunk, summed per leader epoch, equals the ranges of the batch rows
    themselves (what the driver computes for a small input)."""
    batches = [
        {"broker": 1, "leader_epoch": e, "base_offset": o, "last_offset": o + 1, "records_count": 2,
         "size": 80, "max_timestamp": 1000 + o}
        for e, o in ((0, 0), (0, 2), (0, 4), (1, 6), (1, 8))
    ]  # fmt: skip
    chunks = [digest_of(batches[:2]), digest_of(batches[2:4]), digest_of(batches[4:])]
    assert epoch_ranges([d for c in chunks for d in c]) == epoch_ranges(digest_of(batches))
    (e0, e1) = epoch_ranges(digest_of(batches))
    assert (e0["epoch"], e0["first"], e0["last"], e0["records"], e0["batches"]) == (0, 0, 5, 6, 3)
    assert (e1["first_timestamp"], e1["last_timestamp"]) == (1006, 1008)


def _pair(a: int, b: int, lo: int, hi: int, ca, cb, unreadable=(None, None, None, None)) -> dict:
    ua_from, ua_to, ub_from, ub_to = unreadable
    return {
        "cluster": "c", "topic": "t", "partition": 0, "a": a, "b": b, "mode": "record", "lo": lo, "hi": hi,
        "cleaner_offset_a": ca, "cleaner_offset_b": cb,
        "ua_from": ua_from, "ua_to": ua_to, "ub_from": ub_from, "ub_to": ub_to,
    }  # fmt: skip


def _reference(p: dict, records: list[dict]) -> tuple[int, int | None, int | None] | None:
    """The first record divergence of pair ``p`` by definition, over every offset either replica holds."""
    from auditor.spark.pass_divergence import inside

    held: dict[int, dict[int, int]] = {}
    for r in records:
        mine = held.setdefault(r["broker"], {})
        mine[r["offset"]] = max(mine.get(r["offset"], r["record_hash"]), r["record_hash"])

    def readable(o):
        return not inside(o, o, p["ua_from"], p["ua_to"]) and not inside(o, o, p["ub_from"], p["ub_to"])

    ra = {o: h for o, h in held.get(p["a"], {}).items() if p["lo"] <= o < p["hi"] and readable(o)}
    rb = {o: h for o, h in held.get(p["b"], {}).items() if p["lo"] <= o < p["hi"] and readable(o)}
    ca = -1 if p["cleaner_offset_a"] is None else p["cleaner_offset_a"]
    cb = -1 if p["cleaner_offset_b"] is None else p["cleaner_offset_b"]
    for o in sorted(ra.keys() | rb.keys()):
        a, b = ra.get(o), rb.get(o)
        if (a is not None and b is not None and a != b) or (b is None and o >= cb) or (a is None and o >= ca):
            return o, a, b
    return None


@settings(max_examples=300, deadline=None)
@given(
    held=st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 40), st.integers(0, 2)), max_size=120
    ),
    cleaner=st.tuples(*[st.none() | st.integers(0, 40)] * 3),
    lo=st.integers(0, 10),
    span=st.integers(1, 40),
    hole=st.none() | st.tuples(st.integers(0, 40), st.none() | st.integers(0, 40)),
)
def test_record_divergence_walks_the_records_once_in_offset_order(held, cleaner, lo, span, hole):
    """The streaming walk (one offset's records in memory) finds, for every pair, the first record divergence
    the definition gives over every offset either replica holds: differing hashes, or a record missing at or
    above the other replica's cleaner offset, inside the common range, outside unreadable spans."""
    from auditor.spark.pass_divergence import first_divergences

    records = sorted(
        ({"broker": b, "offset": o, "record_hash": h} for b, o, h in held), key=lambda r: r["offset"]
    )
    unreadable = (None, None, *hole) if hole else (None, None, None, None)
    pairs = [
        _pair(a, b, lo, lo + span, cleaner[a - 1], cleaner[b - 1], unreadable if a == 1 else (None,) * 4)
        for a, b in ((1, 2), (1, 3), (2, 3))
    ]
    found = {(d["a"], d["b"]): (d["offset"], d["detail"]["hash_a"], d["detail"]["hash_b"])
             for d in first_divergences(pairs, {}, iter(records))}  # fmt: skip
    assert found == {(p["a"], p["b"]): r for p in pairs if (r := _reference(p, records)) is not None}


def test_record_divergence_holds_one_offset_at_a_time():
    """Two million record rows of three replicas stream through the walk in bounded memory (it held them all,
    in dicts, before), and rows out of offset order are refused rather than misjudged."""
    import tracemalloc

    import pytest

    from auditor.spark.pass_divergence import record_divergences

    def rows(n):
        for o in range(n):
            for broker in (1, 2, 3):
                yield {"broker": broker, "offset": o, "record_hash": o * 7 + (broker == 3 and o == n - 1)}

    pairs = [_pair(1, 2, 0, 1 << 40, None, None), _pair(1, 3, 0, 1 << 40, None, None)]
    tracemalloc.start()
    found = record_divergences(pairs, rows(700_000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert list(found) == [1] and found[1]["offset"] == 699_999
    assert peak < 1 << 20, peak
    with pytest.raises(ValueError, match="offset order"):
        record_divergences(pairs, iter([{"broker": 1, "offset": 5, "record_hash": 1}] * 2 + [
            {"broker": 1, "offset": 4, "record_hash": 1}]))


def test_grouped_streams_each_partitions_batches_then_records():
    """A task's rows, grouped: lists of every kind but the batches and records, which stream in that order
    (a stream skips the unread rows of the kinds before it, what a consumer leaves is skipped, the next
    partition is whole), and a row of a listed kind after the streamed ones is refused."""
    import pytest

    from auditor.spark.compare import _grouped

    rows = [
        (1, "replica", {"broker": 1}), (1, "batch", "b1"), (1, "batch", "b2"), (1, "record", {"offset": 0}),
        (1, "record", {"offset": 1}), (2, "replica", {"broker": 2}), (2, "record", {"offset": 5}),
        (3, "replica", {"broker": 3}), (3, "batch", "b3"), (4, "replica", {"broker": 4}),
        (4, "batch", "b4"), (4, "batch", "b5"),
    ]  # fmt: skip
    seen = []
    for tp, group in _grouped(iter(rows)):
        if tp == 2:
            batches = []
            first = next(group["record"], None)
        elif tp == 4:  # the records first: the batches are skipped
            first = next(group["record"], None)
            batches = list(group["batch"])
        else:
            batches = [next(group["batch"], None)]  # read one batch at most
            first = next(group["record"], None)  # read one record at most
        seen.append((tp, group.get("replica"), batches, first))
    assert seen == [
        (1, [{"broker": 1}], ["b1"], {"offset": 0}),
        (2, [{"broker": 2}], [], {"offset": 5}),
        (3, [{"broker": 3}], ["b3"], None),
        (4, [{"broker": 4}], [], None),
    ]
    with pytest.raises(ValueError, match="after its streamed rows"):
        for _tp, group in _grouped(iter([(1, "replica", {}), (1, "batch", "b"), (1, "epoch", {})])):
            list(group["batch"])


def _gap_row(broker: int, chunk: int, first: int, last: int) -> dict:
    n = last - first + 1
    return {"broker": broker, "chunk": chunk, "leader_epoch": 0, "first": first, "last": last, "n": n,
            "records": n, "bytes": 70 * n, "first_timestamp": 5, "last_timestamp": 9,
            "rows_needed": False}  # fmt: skip


def test_lag_counts_add_the_gap_chunks_and_refuse_what_the_driver_never_leaves_out():
    """A lag's counts from the leader's held batch rows and the digest rows of its gap chunks; refused: a gap
    chunk across the follower's log end, or holding the lag's first batch (the driver leaves out only chunks
    wholly past it, after the first one), and a gap chunk the pass's leader does not hold."""
    import pytest

    from auditor.spark.partition_pass import LagChunks, lag_counts

    gap = LagChunks([_gap_row(1, 3, 24, 31), _gap_row(2, 3, 24, 31), _gap_row(1, 9, 72, 79)], {3})
    assert [d["chunk"] for d in gap.by_broker[1]] == [3] and gap.holders == {3: {1, 2}}
    held = [BatchRow({"base_offset": o, "last_offset": o, "records_count": 1, "size": 70,
                      "max_timestamp": 11 + o}) for o in (14, 15, 16)]  # fmt: skip
    lag = {"from": 15, "to": 32, "leader": 1}
    counted = lag_counts(lag, held, gap.by_broker[1])
    assert (counted["records"], counted["bytes"], counted["batches"]) == (10, 700, 10)
    assert (counted["first_timestamp"], counted["last_timestamp"]) == (26, 27)
    with pytest.raises(ValueError, match="straddles"):
        lag_counts({**lag, "from": 28}, held, gap.by_broker[1])
    with pytest.raises(ValueError, match="first batch"):
        lag_counts({**lag, "from": 17}, held, gap.by_broker[1])
    with pytest.raises(ValueError, match="does not hold"):
        gap.check_leader(3)
    gap.check_leader(2)
