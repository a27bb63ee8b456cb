"""``kafka-auditor report`` on Spark: the history checks (KA8xx) over an ingest warehouse.

:func:`run_history` reads the warehouse's tables (Hive-partitioned Parquet, ``auditor.observe.history_rows``)
with Spark and runs every selected rule of the three history scopes:

* ``history``: the six per-partition tables (the four offset checkpoints, ``leader_epochs``, ``partitions``)
  are unioned into one typed layout (:data:`UNION`, a ``kind`` column naming the table; the capture id and
  date are left out of the shuffle: the rules name captures through the broadcast ``captures`` table),
  keyed by a hash of (cluster, topic, partition) (``tp``, computed once in the JVM and used by the rules'
  views as their integer key) and repartitioned by it so that each Spark partition holds whole topic
  partitions,
  and a ``mapInArrow`` rebuilds :class:`~auditor.rules.history.model.History` frames per Spark partition,
  runs the rules vectorised over them, and, in the same pass, collects the chart data (each replica's high
  watermark over time and its leader-epoch cache at each change) of the partitions with a finding;
* ``fleet`` and ``ingest``: on the driver over ``captures``, ``brokers`` and ``problems`` (small tables).

Spark actions: one, the ``collect`` of the rules' output (none when the warehouse has no per-partition
table). The small tables (one row per capture, per meta.properties, per problem) are read on the driver with
pyarrow, which costs no Spark job; the driver and the executors must see the warehouse at the same path
(local mode, or a shared mount), as for ``ingest``. Missing tables are empty.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from auditor.findings import PLAIN_FIELDS, Finding
from auditor.observe.history_rows import PARTITION_COLUMNS, TABLES, TIMESTAMP
from auditor.rules.registry import Selection
from auditor.text import camel

PER_PARTITION = (
    "high_watermarks",
    "recovery_points",
    "log_start_offsets",
    "cleaner_offsets",
    "leader_epochs",
    "partitions",
)
"""The tables whose rows belong to one topic partition (unioned and shuffled by it)."""
SMALL = ("captures", "brokers", "problems")
"""The tables read to the driver (broadcast to the executors: captures and brokers)."""

UNION = pa.schema(
    [
        pa.field("kind", pa.int8(), nullable=False),  # index of the table in PER_PARTITION
        pa.field("tp", pa.int64()),  # xxhash64(cluster, topic, partition): the shuffle and the views' key
        pa.field("cluster", pa.string()),
        pa.field("broker", pa.int32()),
        pa.field("logDir", pa.string()),
        pa.field("captureTime", TIMESTAMP),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),  # offset, or a leader epoch's startOffset
        pa.field("epoch", pa.int32()),
        pa.field("position", pa.int32()),
        pa.field("line", pa.int32()),
        pa.field("topicId", pa.string()),
    ]
)
"""The per-partition tables in one layout (``offset`` holds ``startOffset`` for ``leader_epochs``)."""

_FINDING_INTS = {
    "broker": pa.int32(),
    "partition": pa.int32(),
    "position": pa.int64(),
    "offset_start": pa.int64(),
    "offset_end": pa.int64(),
    "epoch": pa.int32(),
}
FINDING_RECORD = pa.struct(
    [
        pa.field(camel(name), _FINDING_INTS.get(name, pa.string()))
        for name in (*PLAIN_FIELDS, "evidence", "related")
    ]
)
"""A finding of the history rules: the fields of ``Finding.to_dict`` in its order, the integers as
:data:`_FINDING_INTS` says, the others text (``evidence``, a JSON object with free-form keys per rule, and
``related``, a JSON list of locations, as JSON text)."""
_POINT = pa.struct([pa.field("broker", pa.int32()), pa.field("time", pa.int64()), pa.field("hw", pa.int64())])
_ENTRY = pa.struct([pa.field("epoch", pa.int32()), pa.field("startOffset", pa.int64())])
_CACHE = pa.struct(
    [pa.field("broker", pa.int32()), pa.field("time", pa.int64()), pa.field("entries", pa.list_(_ENTRY))]
)
CHART_RECORD = pa.struct(
    [
        pa.field("cluster", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("highWatermarks", pa.list_(_POINT)),
        pa.field("epochs", pa.list_(_CACHE)),
    ]
)
"""A :class:`PartitionChart` (:meth:`PartitionChart.to_record`)."""
PAIR_RECORD = pa.struct(
    [pa.field("cluster", pa.string())]
    + [pa.field(c, pa.int64()) for c in ("broker", "prevT", "t", "back", "forward", "reverseRewrites")]
)
"""A row of :func:`auditor.rules.history.ordering.pair_changes` (its ``CHANGES`` columns)."""
STATS_RECORD = pa.struct(
    [pa.field("rows", pa.int64()), pa.field("partitions", pa.int64()), pa.field("seconds", pa.float64())]
)
"""One per task: the rows it read, the topic partitions it held, the seconds it took."""
OUTPUT = pa.schema(
    [
        pa.field("kind", pa.string()),
        pa.field("finding", FINDING_RECORD),
        pa.field("chart", CHART_RECORD),
        pa.field("pair", PAIR_RECORD),
        pa.field("stats", STATS_RECORD),
    ]
)
"""What the executors return, one typed column per ``kind`` (the others null): ``finding``
(:data:`FINDING_RECORD`), ``chart`` (:data:`CHART_RECORD`), ``pair`` (the chunk's share of
:func:`auditor.rules.history.ordering.pair_changes`, :data:`PAIR_RECORD`) and one ``stats`` row per task."""


def finding_record(f: Finding) -> dict[str, Any]:
    """``f`` as a :data:`FINDING_RECORD` (the fields of ``Finding.to_dict``, evidence and related as JSON)."""
    data = f.to_dict()
    record = {name.name: data.get(name.name) for name in FINDING_RECORD}
    record["evidence"] = json.dumps(data["evidence"], default=str)
    record["related"] = json.dumps(data["related"], default=str)
    return record


def record_finding(record: Mapping[str, Any]) -> Finding:
    """The inverse of :func:`finding_record`."""
    data = dict(record)
    data["evidence"] = json.loads(data["evidence"] or "{}")
    data["related"] = json.loads(data["related"] or "[]")
    return Finding.from_dict(data)


@dataclass
class PartitionChart:
    """The history of one partition with a finding, for charts: ``high_watermarks`` broker -> [(capture time
    ms, HW)], ``epochs`` broker -> [(capture time ms, [(epoch, start offset)])] at the first capture and at
    every change of the cache."""

    cluster: str
    topic: str
    partition: int
    high_watermarks: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    epochs: dict[int, list[tuple[int, list[tuple[int, int]]]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "partition": self.partition,
            "highWatermarks": {str(b): [list(p) for p in s] for b, s in self.high_watermarks.items()},
            "epochs": {str(b): [[t, [list(e) for e in c]] for t, c in s] for b, s in self.epochs.items()},
        }

    def to_record(self) -> dict[str, Any]:
        """The chart as a :data:`CHART_RECORD`."""
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "partition": self.partition,
            "highWatermarks": [
                {"broker": b, "time": t, "hw": v} for b, s in self.high_watermarks.items() for t, v in s
            ],
            "epochs": [
                {"broker": b, "time": t, "entries": [{"epoch": e, "startOffset": o} for e, o in c]}
                for b, s in self.epochs.items()
                for t, c in s
            ],
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PartitionChart:
        """The inverse of :meth:`to_record`."""
        chart = cls(str(record["cluster"]), str(record["topic"]), int(record["partition"]))
        for p in record["highWatermarks"] or ():
            chart.high_watermarks.setdefault(int(p["broker"]), []).append((int(p["time"]), int(p["hw"])))
        for c in record["epochs"] or ():
            entries = [(int(e["epoch"]), int(e["startOffset"])) for e in c["entries"] or ()]
            chart.epochs.setdefault(int(c["broker"]), []).append((int(c["time"]), entries))
        return chart

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartitionChart:
        return cls(
            str(data["cluster"]),
            str(data["topic"]),
            int(data["partition"]),
            {int(b): [(int(t), int(v)) for t, v in s] for b, s in data["highWatermarks"].items()},
            {
                int(b): [(int(t), [(int(e), int(o)) for e, o in c]) for t, c in s]
                for b, s in data["epochs"].items()
            },
        )


@dataclass
class HistoryResult:
    """What ``report`` renders: findings (``time`` set), charts of the flagged partitions, the latest capture
    of every broker (cluster, broker, captureTime ms, logDirs) and counts (captures, brokers, partitions,
    rows read, seconds, and taskSeconds: the time of the executors' rule tasks, summed)."""

    findings: list[Finding]
    charts: list[PartitionChart]
    captures: list[dict[str, Any]]
    stats: dict[str, Any]


# ------------------------------------------------------------------------------------------ executors


def arrow_frame(table: pa.Table, name: str):
    """``table`` (any subset of ``name``'s columns) as a pandas frame with every column of ``name``'s full
    schema (absent ones null), the form :class:`~auditor.rules.history.model.History` holds."""
    schema = TABLES[name]
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(
        columns, schema=pa.schema([f.with_nullable(True) for f in schema])
    ).to_pandas()


def chunk_history(table: pa.Table, small: Mapping[str, Any], settings):
    """The :class:`History` of one chunk of :data:`UNION` rows (``small``: the driver's captures and
    brokers frames)."""
    import pyarrow.compute as pc

    from auditor.rules.history.model import History

    frames: dict[str, Any] = {}
    kinds = table.column("kind")
    for i, name in enumerate(PER_PARTITION):
        rows = table.filter(pc.equal(kinds, i))
        if name == "leader_epochs":
            rows = rows.rename_columns(["startOffset" if c == "offset" else c for c in rows.column_names])
        frame = arrow_frame(rows, name)
        tp = rows.column("tp") if "tp" in rows.column_names else None
        if tp is not None and tp.null_count == 0:
            frame["tp"] = tp.to_numpy()  # the views' partition key, hashed once by Spark
        frames[name] = frame
    return History(captures=small["captures"], brokers=small["brokers"], settings=settings, **frames)


def charts(h, keys: set[tuple[str, str, int]]) -> list[PartitionChart]:
    """The chart data of the partitions ``keys`` of chunk ``h``."""
    from auditor.rules.history.model import caches, replica_series

    if not keys:
        return []
    out = {k: PartitionChart(*k) for k in keys}
    hw = replica_series(h, "high_watermarks")
    for r in hw.itertuples(index=False):
        chart = out.get((r.cluster, r.topic, int(r.partition)))
        if chart is not None:
            chart.high_watermarks.setdefault(int(r.broker), []).append((int(r.t), int(r.offset)))
    c = caches(h)
    st = c.states
    last: dict[tuple, Any] = {}
    for i, r in enumerate(st.itertuples(index=False)):
        key = (r.cluster, r.topic, int(r.partition))
        chart = out.get(key)
        if chart is None:
            continue
        series = (*key, int(r.broker))
        if last.get(series) == r.sig:
            continue
        last[series] = r.sig
        chart.epochs.setdefault(int(r.broker), []).append((int(r.t), c.entries(i)))
    for chart in out.values():
        for s in chart.high_watermarks.values():
            s.sort()
        for e in chart.epochs.values():
            e.sort(key=lambda x: x[0])
    return sorted(out.values(), key=lambda c: (c.cluster, c.topic, c.partition))


def _chunk_runner(small_bc, settings, codes: list[str] | None):
    """The mapInArrow body: one History per Spark partition (whole topic partitions), every selected
    ``history`` rule, the charts of the flagged partitions and one stats row."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        from auditor.rules.history.model import run_rules

        started = time.monotonic()
        batches = [b for b in batches if b.num_rows]
        # Spark sends timestamps in microseconds: arrow_frame casts every column to its table's type
        table = pa.Table.from_batches(batches) if batches else UNION.empty_table()
        out: list[dict[str, Any]] = []
        partitions = 0
        if table.num_rows:
            from auditor.rules.history.ordering import pair_changes

            h = chunk_history(table, small_bc.value, settings)
            findings = run_rules(h, "history", codes)
            out += [{"kind": "pair", "pair": p} for p in pair_changes(h).to_dict(orient="records")]
            out += [{"kind": "finding", "finding": finding_record(f)} for f in findings]
            flagged = {
                (f.evidence.get("cluster"), f.topic, f.partition)
                for f in findings
                if f.topic is not None and f.partition is not None
            }
            for chart in charts(h, {(str(c), str(t), int(p)) for c, t, p in flagged}):
                out.append({"kind": "chart", "chart": chart.to_record()})
            partitions = pc.count_distinct(table.column("tp")).as_py() if "tp" in table.column_names else 0
        stats = {"rows": table.num_rows, "partitions": partitions, "seconds": time.monotonic() - started}
        out.append({"kind": "stats", "stats": stats})
        yield pa.RecordBatch.from_pylist(out, schema=OUTPUT)

    return run


# ------------------------------------------------------------------------------------------ driver


def _read(spark, tables: Mapping[str, str], name: str):
    """Table ``name`` as a Spark DataFrame with its full schema (partition columns from the Hive directory
    names), or None when the warehouse has no such table."""
    from auditor.observe.rows import spark_schema

    path = tables.get(name)
    if not path:
        return None
    return spark.read.schema(spark_schema(TABLES[name])).parquet(str(path))


def read_small(tables: Mapping[str, str], name: str):
    """A small table (one row per capture or problem) read on the driver with pyarrow, no Spark job: the
    Hive partition columns from the directory names (percent-decoded), every column in its table's type."""
    import pyarrow.dataset as ds

    path = tables.get(name)
    if not path:
        return TABLES[name].empty_table().to_pandas()
    partitioning = ds.partitioning(
        pa.schema([pa.field(c, pa.string()) for c in PARTITION_COLUMNS]), flavor="hive"
    )
    dataset = ds.dataset(str(path), format="parquet", partitioning=partitioning)
    return arrow_frame(dataset.to_table(), name)


def _union(spark, tables: Mapping[str, str]):
    from pyspark.sql import functions as F

    from auditor.observe.rows import spark_schema

    target = spark_schema(UNION)
    parts = []
    for i, name in enumerate(PER_PARTITION):
        df = _read(spark, tables, name)
        if df is None:
            continue
        cols = []
        for f in target.fields:
            source = "startOffset" if (name == "leader_epochs" and f.name == "offset") else f.name
            if f.name == "kind":
                cols.append(F.lit(i).cast(f.dataType).alias("kind"))
            elif f.name == "tp":
                cols.append(F.xxhash64("cluster", "topic", "partition").alias("tp"))
            elif source in df.columns:
                cols.append(F.col(source).cast(f.dataType).alias(f.name))
            else:
                cols.append(F.lit(None).cast(f.dataType).alias(f.name))
        parts.append(df.select(*cols))
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


CHUNK_BYTES = 24 * 1024 * 1024
"""Parquet bytes of the per-partition tables per Spark partition of the shuffle: a task holds its chunk in
memory as pandas frames (about 20x the compressed size), so chunks stay a few hundred MB."""


def shuffle_partitions(tables: Mapping[str, str], parallelism: int) -> int:
    """How many Spark partitions the shuffle by topic partition gets: twice the parallelism, more when the
    per-partition tables' Parquet files exceed :data:`CHUNK_BYTES` per partition."""
    size = 0
    for name in PER_PARTITION:
        path = tables.get(name)
        if not path or not os.path.isdir(path):
            continue
        for root, _dirs, files in os.walk(path):
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".parquet"))
    return max(2, parallelism * 2, -(-size // CHUNK_BYTES))


def latest_captures(captures) -> list[dict[str, Any]]:
    """The latest capture of every (cluster, broker): cluster, broker, captureTime (ms), logDirs and
    timeSource (where its time came from: the least trustworthy of its log dirs' in
    :data:`~auditor.observe.history_rows.TIME_SOURCES` order, None when unknown)."""
    from auditor.observe.history_rows import TIME_SOURCES
    from auditor.rules.history.model import History, broker_captures

    bc = broker_captures(History(captures=captures))
    if bc.empty:
        return []
    latest = bc.sort_values("t").groupby(["cluster", "broker"], sort=True).tail(1)
    rank = {source: i for i, source in enumerate(TIME_SOURCES)}
    return [
        {
            "cluster": r.cluster,
            "broker": int(r.broker),
            "captureTime": int(r.t),
            "logDirs": list(r.logDirs),
            "timeSource": max(r.timeSources, key=lambda s: rank.get(s, len(rank)), default=None),
        }
        for r in latest.sort_values(["cluster", "broker"]).itertuples(index=False)
    ]


def run_history(
    spark,
    tables: Mapping[str, str],
    settings,
    *,
    selection: Selection | None = None,
    partitions: int | None = None,
) -> HistoryResult:
    """Every selected history rule over the warehouse ``tables`` (table -> path of its Hive-partitioned
    Parquet; absent tables are empty); ``settings`` is a
    :class:`~auditor.rules.history.model.HistorySettings`. ``partitions``: Spark partitions of the shuffle by
    topic partition (default: :func:`shuffle_partitions`)."""
    import pandas as pd

    from auditor.rules.history.model import History, run_rules
    from auditor.rules.history.ordering import CHANGES, finish_findings, sum_changes

    started = time.monotonic()
    codes = None if selection is None else sorted(selection.codes)
    small = {name: read_small(tables, name) for name in SMALL}
    findings: list[Finding] = []
    chart_list: list[PartitionChart] = []
    rows_read = sum(len(f) for f in small.values())
    partition_count = 0
    task_seconds = 0.0
    pairs: list = []
    union = _union(spark, tables)
    # the chunks also sum what changed between captures for KA815 (the capture order)
    if union is not None and (codes is None or any(_scope(c) == "history" or c == "KA815" for c in codes)):
        n = partitions or shuffle_partitions(tables, spark.sparkContext.defaultParallelism)
        shared = spark.sparkContext.broadcast({"captures": small["captures"], "brokers": small["brokers"]})
        try:
            from auditor.observe.rows import spark_schema
            from auditor.spark.arrow import rows_of

            out = union.repartition(n, "tp").mapInArrow(
                _chunk_runner(shared, settings, codes), spark_schema(OUTPUT)
            )
            pair_rows = []
            for row in rows_of(out):
                kind = row["kind"]
                if kind == "finding":
                    findings.append(record_finding(row["finding"]))
                elif kind == "chart":
                    chart_list.append(PartitionChart.from_record(row["chart"]))
                elif kind == "pair":
                    pair_rows.append(row["pair"])
                else:
                    rows_read += int(row["stats"]["rows"])
                    partition_count += int(row["stats"]["partitions"])
                    task_seconds += float(row["stats"]["seconds"])
            if pair_rows:
                pairs.append(pd.DataFrame.from_records(pair_rows, columns=CHANGES))
        finally:
            shared.unpersist()
    driver = History(
        captures=small["captures"],
        brokers=small["brokers"],
        problems=small["problems"],
        settings=settings,
        pairs=sum_changes(pairs),
    )
    for scope in ("fleet", "ingest"):
        findings.extend(run_rules(driver, scope, codes))
    findings = finish_findings(driver, findings)
    findings.sort(key=lambda f: (f.time or "", f.sort_key()))
    chart_list.sort(key=lambda c: (c.cluster, c.topic, c.partition))
    caps = small["captures"]
    stats = {
        "captures": int(len(caps)),
        "brokers": int(caps[["cluster", "broker"]].dropna().drop_duplicates().shape[0]) if len(caps) else 0,
        "partitions": partition_count,
        "rows": rows_read,
        "seconds": round(time.monotonic() - started, 3),
        "taskSeconds": round(task_seconds, 3),  # the executors' rule tasks (receiving, rules, charts), summed
    }
    return HistoryResult(findings, chart_list, latest_captures(caps), stats)


def _scope(code: str) -> str:
    from auditor.rules.registry import REGISTRY, load_rules

    load_rules()
    return REGISTRY[code].scope
