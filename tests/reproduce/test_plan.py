"""The plan of a ``lost-records.jsonl`` (``auditor.reproduce.plan``) and the text of a run
(``auditor.reproduce.render``), without a cluster: the facts a cluster would give are set by hand."""

from __future__ import annotations

import pytest

from auditor.reproduce.plan import build_plan
from auditor.reproduce.records import ReproduceError
from auditor.reproduce.render import lines, spans
from tests.reproduce.rows import parquet_row, write_jsonl

HEADERS = [{"key": "h", "value": b"x"}]


def _rows() -> list[dict]:
    """orders-0: offsets 10..13 (13 unreadable), key a twice; orders-1: offset 5 with a null key."""
    return [
        parquet_row(offset=10, batchBaseOffset=10, key=b"a", value=b"1", timestamp=2000),
        parquet_row(offset=11, batchBaseOffset=10, key=b"b", value=b"22", timestamp=1000),
        parquet_row(offset=12, batchBaseOffset=12, key=b"a", value=None, headers=HEADERS),
        parquet_row(offset=13, batchBaseOffset=13, timestamp=None, key=None, value=None, error="gone"),
        parquet_row(partition=1, offset=5, batchBaseOffset=5, key=None, value=b"v"),
    ]  # fmt: skip


@pytest.fixture
def plan(tmp_path):
    return build_plan(str(write_jsonl(tmp_path / "lost-records.jsonl", _rows())))


def test_the_plan_groups_the_records_per_partition(plan):
    assert list(plan.partitions) == [("orders", 0), ("orders", 1)] and plan.cluster == "c1"
    p0, p1 = plan.partitions.values()
    assert [e.offset for e in p0.entries] == [10, 11, 12] and p0.unreadable == [13]
    assert (p0.first_offset, p0.last_offset, p0.first_base_offset, p0.min_timestamp) == (10, 13, 10, 1000)
    assert p0.size == (1 + 1) + (1 + 2) + (1 + 0 + 1 + 1)
    assert p0.entries[0].key == p0.entries[2].key != p0.entries[1].key  # the same key, the same digest
    assert (p1.line, p1.entries[0].key) == (5, None)
    assert [e.line for e in p0.to_produce()] == [1, 2, 3]


def test_what_is_left_out(plan):
    p0, p1 = plan.partitions.values()
    p0.present.add(p0.entries[0].fingerprint)
    p0.superseded.update({10, 12})
    assert [e.offset for e in p0.to_produce()] == [11]
    assert [e.offset for e in p0.to_produce(include_superseded=True)] == [11, 12]
    assert [e.offset for e in p1.to_produce()] == [5]
    p1.compacted = True  # a compacted topic refuses a null key, even with --include-superseded
    assert p1.keyless() == [5] and p1.to_produce(include_superseded=True) == []


def test_the_dry_run_says_what_would_be_produced_and_why_not(plan):
    p0, p1 = plan.partitions.values()
    p0.compacted, p0.scanned, p0.timestamp_type = True, (4, 20), "LogAppendTime"
    p0.superseded.update({10, 12})
    p1.scanned = (0, 0)
    text = lines(plan, "broker:9092")
    assert text[0] == f"Lost records of cluster c1 in {plan.path}, checked against broker:9092:"
    assert text[2:5] == [
        "  partition  records  offsets  bytes  already there  superseded  left out  to produce",
        "  orders-0         4   10..13      8              0           2         1           1",
        "  orders-1         1        5      1              0           0         0           1",
    ]
    assert "orders-0: read offsets 4..19 of the current leader; 0 of the records already there" in text
    assert (
        "orders-0: 2 records left out: compacted topic and the key has a newer record on the current leader: "
        "offsets 10, 12"
    ) in text
    assert (
        "orders-0: 1 record left out: the audit could not read their batch (error in the file): offsets 13"
        in text
    )
    assert any(
        line.startswith("orders-0: the topic has message.timestamp.type=LogAppendTime") for line in text
    )
    assert (
        "orders-1: read nothing (high watermark 0) of the current leader; 0 of the records already there"
        in text
    )
    assert text[-1] == (
        "Dry run: 2 records (4 bytes) would be produced to 2 partitions, each with the header "
        "kafka-auditor-reproduced. Produce them with --execute."
    )
    plan.include_superseded = True
    text = lines(plan, "broker:9092")
    assert any("2 records produced anyway (--include-superseded)" in line for line in text)
    assert text[-1].startswith("Dry run: 4 records (9 bytes) would be produced to 2 partitions")


def test_a_second_run_says_everything_is_there(plan):
    for p in plan.partitions.values():
        p.present.update(e.fingerprint for e in p.entries)
    plan.executed = True
    assert lines(plan, "b:1")[-1] == (
        "Nothing to produce: 4 records already on the cluster, 1 left out (listed above)."
    )  # offset 13 of orders-0 is unreadable
    next(iter(plan.partitions.values())).unreadable.clear()
    assert lines(plan, "b:1")[-1] == (
        "Nothing to produce: all 4 records are already on the cluster (header kafka-auditor-reproduced)."
    )


def test_after_execute_the_offsets_and_the_failures(plan):
    p0, p1 = plan.partitions.values()
    plan.executed = True
    p0.produced = [40, 41, 42]
    p1.failed = [(5, "Broker: Invalid record")]
    text = lines(plan, "b:1")
    assert "orders-0: produced 3 records at offsets 40..42" in text
    assert "orders-1: offset 5 not produced: Broker: Invalid record" in text
    assert text[-1] == (
        "Produced 3 records; 1 record could not be produced (listed above): run the same command again, the "
        "records already produced are skipped."
    )
    p1.failed, p1.produced = [], [7]
    assert lines(plan, "b:1")[-1].startswith(
        "Produced 4 records (9 bytes) to 2 partitions, each with the header"
    )


def test_offset_spans():
    assert spans([5, 1, 2, 3, 9, 10]) == "1..3, 5, 9..10"
    assert spans(list(range(0, 40, 2))) == "0, 2, 4, 6, 8, 10, 12, 14 and 12 more range(s)"


def test_an_empty_file(tmp_path):
    (tmp_path / "lost-records.jsonl").write_text("")
    plan = build_plan(str(tmp_path / "lost-records.jsonl"))
    assert lines(plan, "b:1")[-2:] == ["No records in the file.", "Nothing to produce."]


@pytest.mark.parametrize(
    "rows,message",
    [
        ([parquet_row(offset=2), parquet_row(offset=1)], "line 2: offset 1 of orders-0 comes after offset 2"),
        ([parquet_row(offset=2), parquet_row(offset=2)], "line 2: offset 2 of orders-0 comes twice"),
        (
            [parquet_row(cluster="a"), parquet_row(cluster="b")],
            "line 2: cluster 'b', line 1 cluster 'a': the file holds the lost records of several clusters; "
            "choose one with --cluster",
        ),
    ],
)
def test_what_the_export_never_writes_is_refused(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "lost-records.jsonl", rows)
    with pytest.raises(ReproduceError) as err:
        build_plan(str(path))
    assert str(err.value).startswith(f"{path} {message}")


def test_one_cluster_of_several(tmp_path):
    rows = [parquet_row(cluster="a", offset=1), parquet_row(cluster="b", offset=1, partition=3)]
    path = str(write_jsonl(tmp_path / "lost-records.jsonl", rows))
    assert list(build_plan(path, "b").partitions) == [("orders", 3)]
    with pytest.raises(ReproduceError, match=r"no record of cluster 'z' \(clusters in the file: a, b\)"):
        build_plan(path, "z")
