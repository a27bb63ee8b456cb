"""Getting extracts into Spark: raw log directories parsed by the executors, or Parquet extracts.

Raw directories: the driver reads only the root files of each log directory (meta.properties and the
offset checkpoints, a few KB) and the KRaft metadata log (to learn which topics are compacted), then
ships one task per partition directory; executors run
:func:`auditor.observe.extract.extract_partition` through
``mapInArrow`` (Arrow batches straight into Spark, no Python row objects). On a cluster the directories
must be readable at the same path from every executor (a shared filesystem).

Parquet extracts (``kafka-auditor extract``) are read with ``spark.read.parquet``. Both give a DataFrame
in the ``rows.EXTRACT`` layout, which :func:`split` turns into one flat DataFrame per table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.layout.logdir import LogDirInfo, read_log_dir
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.extract import metadata_for
from auditor.spark.inputs import Inputs, Source

SLICE_BYTES = 64 << 20
"""Segment bytes per extraction slice on small inputs."""


def plan_raw(sources: list[Source]) -> tuple[list[LogDirInfo], list[PartitionTask], list[str]]:
    """Root files of every raw source and the partition tasks for the executors (driver side, small)."""
    infos, labels, problems = [], [], []
    for source in sources:
        info = read_log_dir(source.path)
        if info.node is None:
            why = info.errors[0] if info.errors else "no node.id/broker.id in meta.properties"
            problems.append(f"{source.path}: {why}; skipped")
            continue
        problems.extend(f"{source.path}: {err}" for err in info.errors)
        infos.append(info)
        labels.append(source.label if source.label is not None else (info.cluster_id or ""))
    compacted: dict[str, set[str]] = {}
    for info, label in zip(infos, labels, strict=True):
        if label in compacted:
            continue
        meta = metadata_for(info, label)
        if meta is not None:
            compacted[label] = compacted_topics(meta)
    return infos, plan_tasks(infos, labels, compacted), problems


def _extract_tasks(batches):
    """mapInArrow body: every input row is one JSON task; yields ``rows.EXTRACT`` record batches."""
    from auditor.layout.tasks import PartitionTask
    from auditor.observe.extract import extract_partition_wrapped

    for batch in batches:
        for text in batch.column(0).to_pylist():
            yield from extract_partition_wrapped(PartitionTask(**json.loads(text)))


def raw_extract(spark, sources: list[Source]):
    """The extract DataFrame of raw log directories, parsed on the executors; also the problems found."""
    _infos, tasks, problems = plan_raw(sources)
    schema = rows.spark_schema(rows.EXTRACT)
    if not tasks:
        return spark.createDataFrame([], schema), problems
    total = sum(t.size for t in tasks)
    # enough slices to keep every core busy on big inputs, few on small ones (every later stage that
    # reads the persisted extract runs one task per slice)
    slices = max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 4, total // SLICE_BYTES + 1))
    # round-robin over slices; tasks come biggest first, so every slice gets a share of the big ones
    ordered = [json.dumps(t.to_dict()) for t in tasks]
    rdd = spark.sparkContext.parallelize(
        [(text,) for i in range(slices) for text in ordered[i::slices]], slices
    )
    task_df = spark.createDataFrame(rdd, "task string")
    return task_df.mapInArrow(_extract_tasks, schema), problems


def driver_extract(spark, sources: list[Source]):
    """Small inputs: the raw log directories parsed in the driver's Python (the tasks of
    :func:`raw_extract`, as an executor receives them) and handed to the JVM as Arrow
    (:func:`auditor.spark.arrow.frame_of`: no Python worker). Returns the extract DataFrame (what ``--save``
    writes), one flat DataFrame per table (``split`` of it, made in Arrow: plans over flat columns are
    quicker to optimise than over the nested extract) and the problems found."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from auditor.observe.extract import extract_partition_wrapped
    from auditor.spark.arrow import frame_of

    _infos, tasks, problems = plan_raw(sources)
    batches = [
        b
        for t in tasks
        for b in extract_partition_wrapped(PartitionTask(**json.loads(json.dumps(t.to_dict()))))
    ]
    table = pa.Table.from_batches(batches, schema=rows.EXTRACT)
    flat = {}
    for kind in rows.TABLES:
        fields = list(rows.EXTRACT.field(kind).type)
        rows_of_kind = table.filter(pc.equal(table.column("kind"), kind)).column(kind).combine_chunks()
        columns = [rows_of_kind.field(i) for i in range(len(fields))]
        schema = pa.schema(fields)
        flat[kind] = frame_of(spark, [pa.RecordBatch.from_arrays(columns, schema=schema)], schema)
    return frame_of(spark, batches, rows.EXTRACT), flat, problems


def parquet_extract(spark, sources: list[Source]):
    """The extract DataFrame of Parquet extracts (cluster labels applied where a source sets one)."""
    from pyspark.sql import functions as F

    frames = []
    by_label: dict[str | None, list[str]] = {}
    for source in sources:
        by_label.setdefault(source.label, []).append(source.path)
    schema = rows.spark_schema(rows.EXTRACT)
    for label, paths in by_label.items():
        df = spark.read.schema(schema).parquet(*paths)
        if label is not None:
            df = df.select(
                "kind",
                *[
                    F.when(F.col(kind).isNotNull(), F.col(kind).withField("cluster", F.lit(label))).alias(
                        kind
                    )
                    for kind in rows.TABLES
                ],
            )
        frames.append(df)
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


@dataclass
class Tables:
    """One flat DataFrame per extract table (``rows.TABLES``)."""

    batch: object
    epoch: object
    replica: object
    record: object
    metadata: object
    commit: object = None  # rows.COMMIT: group coordinator records of __consumer_offsets replicas
    txn_state: object = None  # rows.TXN_STATE: transaction coordinator records
    problems: list[str] = field(default_factory=list)
    extract: object = None

    def frames(self) -> dict[str, object]:
        return {kind: getattr(self, kind) for kind in rows.TABLES}


def split(extract) -> dict[str, object]:
    from pyspark.sql import functions as F

    return {kind: extract.where(F.col("kind") == kind).select(f"{kind}.*") for kind in rows.TABLES}


def load(spark, inputs: Inputs, persist: bool = True, driver: bool = False) -> Tables:
    """Load every source of ``inputs`` into :class:`Tables`; raw extraction is persisted (parsed once), or
    done in the driver's Python when ``driver`` (:func:`driver_extract`)."""
    frames = []
    problems = list(inputs.problems)
    flat = None
    if inputs.raw and driver:
        raw, flat, raw_problems = driver_extract(spark, inputs.raw)
        problems.extend(raw_problems)
        frames.append(raw)
    elif inputs.raw:
        raw, raw_problems = raw_extract(spark, inputs.raw)
        problems.extend(raw_problems)
        frames.append(raw)
    parquet = parquet_extract(spark, inputs.parquet) if inputs.parquet else None
    if parquet is not None:
        frames.append(parquet)
    if not frames:
        frames.append(spark.createDataFrame([], rows.spark_schema(rows.EXTRACT)))
    extract = frames[0]
    for df in frames[1:]:
        extract = extract.unionByName(df)
    if flat is not None:
        # the tables from their flat Arrow rows (and from the Parquet extracts, if any), not from ``extract``
        parts = flat
        if parquet is not None:
            tables = split(parquet)
            parts = {kind: df.unionByName(tables[kind]) for kind, df in flat.items()}
        return Tables(**parts, problems=problems, extract=extract)
    if persist and inputs.raw:
        from pyspark import StorageLevel

        extract = extract.persist(StorageLevel.MEMORY_AND_DISK)
    parts = split(extract)
    return Tables(**parts, problems=problems, extract=extract)


_SHIPPED: set[str] = set()
"""Spark applications the code was sent to (Spark refuses a second archive of the same name)."""


def ship_code(spark) -> None:
    """On a non-local master, send the ``auditor`` and ``parsers`` packages to the executors, once per
    Spark application (a second audit in the same session reuses them)."""
    master = spark.sparkContext.master
    if master.startswith("local") or spark.sparkContext.applicationId in _SHIPPED:
        return
    import atexit
    import shutil
    import tempfile

    import auditor
    import parsers

    tmp = Path(tempfile.mkdtemp(prefix="kafka-auditor-"))
    atexit.register(shutil.rmtree, tmp, True)
    for package in (auditor, parsers):
        src = Path(package.__file__).resolve().parent
        shutil.copytree(src, tmp / "pkg" / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    archive = shutil.make_archive(str(tmp / "kafka_auditor_code"), "zip", tmp / "pkg")
    spark.sparkContext.addPyFile(archive)
    _SHIPPED.add(spark.sparkContext.applicationId)
