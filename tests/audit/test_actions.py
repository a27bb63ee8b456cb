"""How few Spark actions and stages an audit takes (a small audit is mostly Spark's per-stage overheads):
small tables come back in one action, the small-input settings leave no broadcast or Bloom-filter job, and
the comparisons are two scans and one pass per partition."""

from __future__ import annotations

import itertools

import pytest
from pyspark.sql import functions as F

from auditor.simulate import SimOptions, run_scenario
from auditor.spark.arrow import collect_tables
from auditor.spark.audit import run_audit
from auditor.spark.inputs import discover
from auditor.spark.tuning import SMALL_INPUT_CONF, SMALL_INPUT_ENV, broadcast

pytestmark = pytest.mark.spark


_GROUPS = itertools.count()


def _jobs(spark, action) -> tuple[object, list[int]]:
    """What ``action()`` returns and the ids of the Spark jobs it ran."""
    sc = spark.sparkContext
    group = f"test-actions-{next(_GROUPS)}"
    sc.setJobGroup(group, group)
    try:
        out = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, list(sc.statusTracker().getJobIdsForGroup(group))


def test_collect_tables_gives_each_frames_rows_in_one_job(spark):
    nested = spark.createDataFrame(
        [(1, "a", [(1, "x")], None), (2, None, [], (3, None))],
        "n int, s string, items array<struct<k: int, v: string>>, pair struct<a: bigint, b: string>",
    )
    grouped = nested.groupBy(F.col("n") % 2).agg(F.count("*").alias("c"))
    empty = nested.where(F.lit(False)).select("s")
    tables = {"nested": nested, "grouped": grouped, "empty": empty}
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # as the audit has it below 2 GiB: a job per action
    try:
        got, jobs = _jobs(spark, lambda: collect_tables(tables))
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert len(jobs) == 1
    for name, df in tables.items():
        expected = [r.asDict(recursive=True) for r in df.collect()]
        assert sorted(map(repr, got[name])) == sorted(map(repr, expected)), name
    assert got["empty"] == [] and len(got["nested"]) == 2


def test_broadcast_hints_follow_the_small_input_settings(spark):
    left = spark.range(100).withColumnRenamed("id", "k")
    right = spark.range(10).withColumnRenamed("id", "k")

    def plan() -> str:
        return left.join(broadcast(right), "k")._jdf.queryExecution().executedPlan().toString()

    saved = {key: spark.conf.get(key, None) for key in SMALL_INPUT_CONF}
    assert "BroadcastExchange" in plan()
    try:
        for key, value in SMALL_INPUT_CONF.items():
            spark.conf.set(key, value)
        assert "Broadcast" not in plan()  # each broadcast would be a Spark job of its own
    finally:
        for key, value in saved.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def _stages(spark, jobs: list[int]) -> int:
    tracker = spark.sparkContext.statusTracker()
    return sum(len(tracker.getJobInfo(j).stageIds) for j in jobs)


def test_a_small_audit_runs_in_two_spark_jobs(spark, tmp_path):
    """A small input: the extraction in the driver, then one action collecting the small inputs (replicas,
    metadata, commits, coordinator records) and one collecting every batch row for the per-partition pass,
    which runs in the driver (there were 27 jobs, then 5 and 93 stages, before the pass)."""
    run_scenario("unclean-election", tmp_path / "c", SimOptions(seed=7))
    inputs = discover([tmp_path / "c"])
    saved = {key: spark.conf.get(key, None) for key in ("spark.sql.shuffle.partitions",)}
    result, jobs = _jobs(spark, lambda: run_audit(spark, inputs))
    assert result.stats["smallInput"] is True
    assert any(f.code == "KA710" for f in result.findings) and result.elections
    assert len(jobs) <= 2 and _stages(spark, jobs) <= 2, jobs
    assert {key: spark.conf.get(key, None) for key in saved} == saved


def test_a_large_audit_runs_in_at_most_ten_stages(spark, tmp_path, monkeypatch):
    """The large-input path, whatever the size: the extraction on the executors, the small inputs, the
    digest scan, the candidate chunks, the second scan with the pass over each partition (one shuffle)."""
    run_scenario("txn-marker-lost", tmp_path / "c", SimOptions(seed=7))
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    inputs = discover([tmp_path / "c"])
    result, jobs = _jobs(spark, lambda: run_audit(spark, inputs))
    assert result.stats["smallInput"] is False
    assert any(f.code == "KA712" for f in result.findings)
    assert _stages(spark, jobs) <= 10, _stages(spark, jobs)
