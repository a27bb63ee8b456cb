"""How few Spark actions and stages an audit takes (a small audit is mostly Spark's per-stage overheads):
small tables come back in one action, the small-input settings leave no broadcast or Bloom-filter job, and
the comparisons are two scans and one pass per partition.

``audit``'s outputs under the data contract (issue 12, point 5): the JSON report and JSON Lines match the
published schemas with camelCase keys at every depth; ``--export-lost`` writes the same camelCase names in
``lost-records.jsonl`` (schema ``lost-records``) and ``lost-records.parquet`` (the documented Arrow schema);
``--save`` tables have camelCase columns and nested fields, real nested types and timestamp(ms, UTC)
columns, each joinable back on (cluster, topic, partition), the findings table holding exactly the findings
of the report (issue 9, point 5)."""

from __future__ import annotations

import itertools
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from auditor.simulate import SimOptions, run_scenario
from auditor.spark.arrow import collect_tables, tuples_frame
from auditor.spark.audit import lost_record_json, run_audit
from auditor.spark.inputs import discover
from auditor.spark.tuning import SMALL_INPUT_CONF, SMALL_INPUT_ENV, broadcast
from tests.report.contract import schema, snake_keys, validate, validate_lines

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


@pytest.mark.parametrize(
    "tuples",
    [
        [(1, "a", 7, True), (-(2**63), "ключ", None, False), (2**63 - 1, None, -1, None)],
        [],
    ],
    ids=["rows", "empty"],
)
def test_tuples_frame_gives_the_drivers_tuples_to_a_broadcast_join(spark, tuples):
    import pyarrow as pa

    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("n", pa.int32()), ("b", pa.bool_())])
    frame = tuples_frame(spark, tuples, schema)
    assert [tuple(r) for r in frame.collect()] == tuples
    assert frame.schema.simpleString() == "struct<k:bigint,s:string,n:int,b:boolean>"
    keys = spark.createDataFrame([(t[0],) for t in tuples] + [(0,)], "k bigint")
    joined = keys.join(broadcast(frame), "k").select("k", "s").collect()
    assert sorted(tuple(r) for r in joined) == sorted((t[0], t[1]) for t in tuples)


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


TABLES = ("findings", "replicas", "divergence", "pairs", "lost", "epochs", "lags", "timeline")
KEYS = ("cluster", "topic", "partition")
TIMESTAMP = pa.timestamp("ms", tz="UTC")

LOST_RECORDS = pa.schema(
    [
        ("cluster", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TIMESTAMP),
        ("timestampType", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        ("leaderEpoch", pa.int32()),
        ("batchBaseOffset", pa.int64()),
        ("committedHighWatermark", pa.int64()),
        ("producerId", pa.int64()),
        ("producerEpoch", pa.int32()),
        ("baseSequence", pa.int32()),
        ("isTransactional", pa.bool_()),
        ("broker", pa.int32()),
        ("error", pa.string()),
        ("holders", pa.list_(pa.int32())),
    ]
)
"""``lost-records.parquet`` as docs/outputs.md documents it."""


@pytest.fixture(scope="module")
def saved(unclean_audit, tmp_path_factory):
    """The session's audit of a simulated unclean election (divergence, committed loss, a lagging follower)
    through the CLI with ``--save`` and ``--export-lost`` and ``-f json`` (``unclean_audit``,
    tests/conftest.py), then ``-f jsonl`` of the same result (the Spark run is reused): the report, the JSON
    Lines text, every saved table and the export directory."""
    out = unclean_audit.out
    assert unclean_audit.result.exit_code == 1, unclean_audit.result.output
    jsonl = tmp_path_factory.mktemp("save-jsonl") / "r.jsonl"
    result = unclean_audit.again("--format", "jsonl", "--output", str(jsonl))
    assert result.exit_code == 1, result.output
    tables = {name: pq.read_table(out / "saved" / name) for name in TABLES}
    report = json.loads((out / "report.json").read_text())
    return report, jsonl.read_text(encoding="utf-8"), tables, out / "lost"


def _names(data_type: pa.DataType, prefix: str) -> list[str]:
    """Every nested field name of a column type, as ``column.field.field``."""
    if pa.types.is_struct(data_type):
        return [n for f in data_type for n in (f"{prefix}.{f.name}", *_names(f.type, f"{prefix}.{f.name}"))]
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return _names(data_type.value_type, prefix)
    return []


# ---------------------------------------------------------------------------------- report and JSONL


def test_audit_json_and_jsonl_match_the_schemas(saved):
    report, jsonl, _tables, _lost = saved
    validate("report", report, "audit json")
    rows = validate_lines("finding", jsonl, "audit jsonl")
    assert not snake_keys(report) and not snake_keys(rows), (snake_keys(report)[:5], snake_keys(rows)[:5])
    assert [{k: v for k, v in r.items() if k not in ("schemaVersion", "command")} for r in rows] == report[
        "findings"
    ]
    assert {"timelines", "elections", "transactions", "groups"} <= set(report)
    # camelCase at the source (the rules) and in every output, the names of the scan rules
    evidence = {f["code"]: f["evidence"] for f in report["findings"]}
    assert "atOffset" in evidence["KA601"] and "baseOffset" in evidence["KA601"]["atOffset"]
    assert {"committedHighWatermark", "leaderSource"} <= set(evidence["KA710"])


# -------------------------------------------------------------------------------------- lost records


def test_lost_records_jsonl_and_parquet_share_names_and_values(saved):
    report, _jsonl, _tables, lost = saved
    parquet = pq.read_table(lost / "lost-records.parquet")
    assert parquet.schema.remove_metadata().equals(LOST_RECORDS), parquet.schema
    rows = validate_lines("lost-records", (lost / "lost-records.jsonl").read_text(encoding="utf-8"), "lost")
    assert rows and len(rows) == parquet.num_rows == report["stats"]["exportedRecords"]
    assert not snake_keys(rows)
    documented = [n for n in schema("lost-records")["required"] if not n.endswith("Encoding")]
    assert documented == parquet.column_names == [n for n in rows[0] if not n.endswith("Encoding")]
    as_ms = parquet.set_column(4, "timestamp", parquet.column("timestamp").cast(pa.int64()))
    assert [json.loads(json.dumps(lost_record_json(r))) for r in as_ms.to_pylist()] == rows
    assert all(r["committedHighWatermark"] > r["offset"] and r["holders"] for r in rows)


# ------------------------------------------------------------------------------------------- --save


def test_saved_tables_are_camel_case_nested_and_timestamped(saved):
    _report, _jsonl, tables, _lost = saved
    for name, table in tables.items():
        nested = [n for f in table.schema for n in (f.name, *_names(f.type, f.name))]
        assert not [n for n in nested if "_" in n], (name, nested)
        assert not [f.name for f in table.schema if f.name.endswith("Timestamp") and f.type != TIMESTAMP], (
            name
        )
    for name in ("epochs", "lags", "timeline"):
        assert {"firstTimestamp", "lastTimestamp"} <= set(tables[name].column_names), name
    timeline = [r for r in tables["timeline"].to_pylist() if r["records"]]
    assert timeline and all(r["firstTimestamp"].year >= 2023 for r in timeline)
    replicas = tables["replicas"].schema
    assert replicas.field("epochs").type == pa.list_(
        pa.struct([("epoch", pa.int32()), ("startOffset", pa.int64())])
    )
    assert replicas.field("kraftIsr").type == pa.list_(pa.int32())
    assert replicas.field("role").type == pa.string() and replicas.field("tail").type == pa.string()
    assert pa.types.is_list(tables["lost"].schema.field("lostMarkers").type)
    assert {"logDir", "offsetStart", "offsetEnd"} <= set(tables["findings"].column_names)
    assert {"logEndOffset", "highWatermark", "logStartOffset"} <= set(tables["replicas"].column_names)
    assert "committedHighWatermark" in tables["lost"].column_names


def test_every_saved_table_joins_back_on_cluster_topic_partition(saved):
    _report, _jsonl, tables, _lost = saved
    for name, table in tables.items():
        assert set(KEYS) <= set(table.column_names), name
        assert "tp" not in table.column_names, name
    for name in ("replicas", "divergence", "pairs", "lost", "epochs", "timeline"):
        assert tables[name].num_rows > 0, name
        assert None not in tables[name].column("partition").to_pylist(), name


def test_saved_findings_are_the_reported_findings(saved):
    """Each saved row is a reported finding: the location columns and the evidence (JSON text with the
    report's camelCase keys; the row's cluster, records, bytes and peer columns join it, as in the report)."""
    report, _jsonl, tables, _lost = saved
    columns = (
        "code",
        "severity",
        "message",
        "topic",
        "partition",
        "broker",
        "logDir",
        "offsetStart",
        "offsetEnd",
    )

    def of_row(r: dict) -> str:
        evidence = json.loads(r["evidence"] or "{}")
        for key in ("cluster", "records", "bytes", "peer"):
            if r[key] is not None:
                evidence.setdefault(key, r[key])
        return json.dumps([[r[c] for c in columns], r["epoch"], evidence], sort_keys=True)

    def of_finding(f: dict) -> str:
        return json.dumps([[f[c] for c in columns], f["epoch"], f["evidence"]], sort_keys=True)

    rows = tables["findings"].to_pylist()
    assert sorted(map(of_row, rows)) == sorted(map(of_finding, report["findings"]))
    assert {"KA601", "KA620", "KA710"} <= {r["code"] for r in rows}
    assert not snake_keys([json.loads(r["evidence"]) for r in rows])


def test_saved_replicas_name_each_concept_as_the_json_partitions(saved):
    """One name per concept (issue 12, point 5): the ``replicas`` table has the columns of the JSON report's
    ``partitions`` rows, with the same values, except ``maxBatchEpoch`` (saved only) and ``epochs`` (a list of
    structs there, ``[epoch, startOffset]`` pairs in the JSON)."""
    report, _jsonl, tables, _lost = saved
    rows = {tuple(r[k] for k in (*KEYS, "broker")): r for r in report["partitions"]}
    saved_rows = tables["replicas"].to_pylist()
    assert set(tables["replicas"].column_names) - set(report["partitions"][0]) == {"maxBatchEpoch"}
    assert {"role", "tail", "unreadableFrom", "unreadableTo", "kraftLeader", "kraftIsr"} <= set(saved_rows[0])
    assert len(saved_rows) == len(rows)
    for r in saved_rows:
        row = rows[tuple(r[k] for k in (*KEYS, "broker"))]
        assert row["epochs"] == [[e["epoch"], e["startOffset"]] for e in r["epochs"]]
        shared = set(r) - {"maxBatchEpoch", "epochs"}
        assert {k: r[k] for k in shared} == {k: row[k] for k in shared}
    assert sorted(r["role"] for r in saved_rows).count("leader") == len({k[:3] for k in rows})


def test_pairs_and_divergence_join_the_replicas(saved):
    report, _jsonl, tables, _lost = saved
    replicas = {tuple(r[k] for k in (*KEYS, "broker")) for r in tables["replicas"].to_pylist()}
    for name in ("pairs", "divergence"):
        for row in tables[name].to_pylist():
            for side in ("a", "b"):
                assert (row["cluster"], row["topic"], row["partition"], row[side]) in replicas, (name, row)
    divergence = {(r["topic"], r["partition"], r["a"], r["b"]) for r in tables["divergence"].to_pylist()}
    reported = {
        (f["topic"], f["partition"], f["broker"], f["evidence"]["peer"])
        for f in report["findings"]
        if f["code"] == "KA601"
    }
    assert divergence == reported
    detail = next(r["detail"] for r in tables["divergence"].to_pylist() if r["mode"] == "batch")
    assert set(detail) == {"baseOffset", "a", "b", "hashA", "hashB"} and detail["baseOffset"] is not None
    assert set(detail["a"]) == {"lastOffset", "leaderEpoch", "crc", "valid"}
