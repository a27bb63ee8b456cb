"""Getting extracts into Spark: raw log directories parsed by the executors, or extract directories.

Raw directories: the driver reads only the root files of each log directory (meta.properties and the
offset checkpoints, a few KB) and the KRaft metadata log (to learn which topics are compacted), then
ships one task per partition directory; executors run :func:`auditor.observe.extract.extract_partition` and
stream its pieces into Parquet files under a scratch directory, one per executor task and table kind
(:func:`spilled_extract`), which Spark reads back as flat tables: nothing of the extract is held in memory
or shipped through the driver. Small inputs are extracted in the driver's Python instead
(:func:`driver_extract`). On a cluster the log directories and the scratch directory must be readable at
the same path from every executor (a shared filesystem).

Extracts (``kafka-auditor extract``: a directory with one flat Parquet file per table kind,
:mod:`auditor.observe.extract_files`) are read with Spark's Parquet reader, each kind's files of every
extract at once (:func:`parquet_extract`), straight into the flat tables.
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
from auditor.observe.extract_files import kind_path, part_files
from auditor.spark.inputs import Inputs, Source

SLICE_BYTES = 64 << 20
"""Segment bytes per extraction slice on small inputs."""


def plan_raw(
    sources: list[Source], verify_crc: bool = False
) -> tuple[list[LogDirInfo], list[PartitionTask], list[str]]:
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
    tasks = plan_tasks(infos, labels, compacted)
    for task in tasks:
        task.verify_crc = verify_crc  # else the batches Kafka trusts are read header by header
    return infos, tasks, problems


def _task_frame(spark, tasks: list[PartitionTask]):
    """One row per task (its JSON), in slices: enough to keep every core busy on big inputs, few on small
    ones; round-robin over the slices, the tasks coming biggest first, so every slice gets big ones."""
    total = sum(t.size for t in tasks)
    slices = max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 4, total // SLICE_BYTES + 1))
    ordered = [json.dumps(t.to_dict()) for t in tasks]
    rdd = spark.sparkContext.parallelize(
        [(text,) for i in range(slices) for text in ordered[i::slices]], slices
    )
    return spark.createDataFrame(rdd, "task string")


WRITTEN = "kind string, path string, rows bigint"
"""What each executor task of :func:`spilled_extract` reports: the Parquet file it wrote per table kind."""


def _spill_tasks(scratch: str):
    """mapInArrow body of :func:`spilled_extract`: every partition task of the slice extracted in turn and
    streamed, piece by piece, into one Parquet file per table kind under ``scratch`` (flat, the kind's own
    schema); yields one row per file written. Memory: the pieces ``extract_partition`` yields, one at a
    time."""

    def run(batches):
        import os
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        from auditor.layout.tasks import PartitionTask
        from auditor.observe.extract import extract_partition
        from auditor.observe.extract_files import page_options

        writers: dict[str, pq.ParquetWriter] = {}
        pages = page_options()
        counts: dict[str, int] = {}
        paths: dict[str, str] = {}
        name = uuid.uuid4().hex
        try:
            for batch in batches:
                for text in batch.column(0).to_pylist():
                    for kind, table in extract_partition(PartitionTask(**json.loads(text))):
                        if not table.num_rows:
                            continue
                        if kind not in writers:
                            os.makedirs(os.path.join(scratch, kind), exist_ok=True)
                            paths[kind] = os.path.join(scratch, kind, f"{name}.parquet")
                            schema = rows.TABLES[kind]
                            writers[kind] = pq.ParquetWriter(paths[kind], schema, compression="lz4", **pages)
                            counts[kind] = 0
                        writers[kind].write_table(table.cast(rows.TABLES[kind]))
                        counts[kind] += table.num_rows
        finally:
            for writer in writers.values():
                writer.close()
        kinds = sorted(writers)
        yield pa.RecordBatch.from_pydict(
            {"kind": kinds, "path": [paths[k] for k in kinds], "rows": [counts[k] for k in kinds]},
            schema=pa.schema([("kind", pa.string()), ("path", pa.string()), ("rows", pa.int64())]),
        )

    return run


def spilled_extract(
    spark, sources: list[Source], scratch: str, verify_crc: bool = False
) -> tuple[dict[str, object], list[str]]:
    """Raw log directories extracted on the executors and streamed to Parquet under ``scratch`` (one file per
    executor task and table kind): one flat DataFrame per kind read back from those files, so no step holds
    the extract in memory, whatever its size. ``scratch`` must be readable by the driver and the executors
    (local mode; a shared filesystem on a cluster, like the log dirs)."""
    _infos, tasks, problems = plan_raw(sources, verify_crc)
    written: dict[str, list[str]] = {}
    if tasks:
        for row in _task_frame(spark, tasks).mapInArrow(_spill_tasks(scratch), WRITTEN).collect():
            written.setdefault(row["kind"], []).append(row["path"])
    frames = {}
    for kind, schema in rows.TABLES.items():
        spark_schema = rows.spark_schema(schema)
        paths = written.get(kind)
        reader = spark.read.schema(spark_schema)
        frames[kind] = reader.parquet(*paths) if paths else spark.createDataFrame([], spark_schema)
    return frames, problems


def driver_extract(
    spark, sources: list[Source], verify_crc: bool = False
) -> tuple[dict[str, object], list[str]]:
    """Small inputs: the raw log directories parsed in the driver's Python (the tasks of
    :func:`spilled_extract`, as an executor receives them) and handed to the JVM as Arrow
    (:func:`auditor.spark.arrow.frame_of`: no Python worker): one flat DataFrame per table kind, and the
    problems found."""
    import pyarrow as pa

    from auditor.observe.extract import extract_partition
    from auditor.spark.arrow import frame_of

    _infos, tasks, problems = plan_raw(sources, verify_crc)
    pieces: dict[str, list[pa.RecordBatch]] = {kind: [] for kind in rows.TABLES}
    for t in tasks:
        for kind, table in extract_partition(PartitionTask(**json.loads(json.dumps(t.to_dict())))):
            pieces[kind] += table.cast(rows.TABLES[kind]).to_batches()
    flat = {kind: frame_of(spark, pieces[kind], schema) for kind, schema in rows.TABLES.items()}
    return flat, problems


def parquet_extract(spark, sources: list[Source]) -> dict[str, object]:
    """One flat DataFrame per table kind of the extract directories ``sources``: the kind's files of every
    extract read in one ``spark.read.parquet`` per cluster label (the label, where a source sets one,
    replacing ``cluster``)."""
    from pyspark.sql import functions as F

    from auditor.spark.compare import with_tp

    frames = {}
    for kind, schema in rows.TABLES.items():
        reader = spark.read.schema(rows.spark_schema(schema))
        # per cluster label, and per whether the files hold the partition key (rows.DERIVED): the key of
        # rows without it, or relabelled, is worked out in Spark, as compare.with_tp does
        groups: dict[tuple[str | None, bool], list[str]] = {}
        for source in sources:
            path = kind_path(source.path, kind)
            keyed = "tp" in schema.names and all("tp" in _names(f) for f in part_files(path))
            groups.setdefault((source.label, keyed), []).append(path)
        parts = []
        for (label, keyed), paths in groups.items():
            df = reader.parquet(*paths)
            if label is not None:
                df = df.withColumn("cluster", F.lit(label))
            if "tp" in schema.names and (label is not None or not keyed):
                df = with_tp(df.drop("tp"))
            parts.append(df)
        frames[kind] = _union(parts)
    return frames


def _names(file: str) -> list[str]:
    """The column names of one Parquet file (its footer only)."""
    import pyarrow.parquet as pq

    return pq.read_schema(file).names


def _union(frames: list):
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
    extract: dict[str, object] | None = None  # the tables as loaded, by kind (``--save``'s ``extract/``)
    scratch: str | None = None  # where the executors streamed a large raw extraction (removed after)

    def frames(self) -> dict[str, object]:
        return {kind: getattr(self, kind) for kind in rows.TABLES}


def load(spark, inputs: Inputs, driver: bool = False, verify_crc: bool = False) -> Tables:
    """Load every source of ``inputs`` into :class:`Tables`: raw log dirs extracted in the driver's Python
    when ``driver`` (a small input, :func:`driver_extract`), else on the executors, streamed to Parquet under
    a scratch directory (:func:`spilled_extract`: parsed once, memory bounded), read back as flat tables;
    extract directories read by :func:`parquet_extract`. ``Tables.extract`` keeps the tables as loaded (what
    ``--save`` writes as ``extract/``, before the audit sets replicas apart)."""
    problems = list(inputs.problems)
    parts: list[dict[str, object]] = []
    scratch = None
    if inputs.raw and driver:
        flat, raw_problems = driver_extract(spark, inputs.raw, verify_crc)
        problems.extend(raw_problems)
        parts.append(flat)
    elif inputs.raw:
        scratch = scratch_dir()
        flat, raw_problems = spilled_extract(spark, inputs.raw, scratch, verify_crc)
        problems.extend(raw_problems)
        parts.append(flat)
    if inputs.parquet:
        parts.append(parquet_extract(spark, inputs.parquet))
    if not parts:
        parts.append({k: spark.createDataFrame([], rows.spark_schema(s)) for k, s in rows.TABLES.items()})
    frames = {kind: _union([p[kind] for p in parts]) for kind in rows.TABLES}
    return Tables(**frames, problems=problems, extract=dict(frames), scratch=scratch)


def save_extract(frames: dict[str, object], directory: str | Path) -> None:
    """The tables ``frames`` (by kind) written as an extract directory (:mod:`auditor.observe.extract_files`):
    each kind by Spark as ``<kind>.parquet/``, the schema version in the field metadata of ``cluster``."""
    import shutil

    from pyspark.sql import functions as F

    from auditor.observe.extract_files import spark_field_metadata

    shutil.rmtree(directory, ignore_errors=True)  # replaced as a whole, as Spark's overwrite of one path does
    version = spark_field_metadata()
    for kind, df in frames.items():
        cols = [F.col(c).alias(c, metadata=version) if c == "cluster" else F.col(c) for c in df.columns]
        df.select(*cols).write.mode("overwrite").parquet(kind_path(directory, kind))


SCRATCH_ENV = "KAFKA_AUDITOR_SCRATCH"
"""Where large raw extractions are streamed (default: the system's temporary directory); never inside the
audited log dirs. On a Spark cluster it must be a filesystem every executor and the driver share."""


def scratch_dir() -> str:
    """A new private directory for one audit's extraction (:data:`SCRATCH_ENV`, else the temp directory)."""
    import os
    import tempfile

    base = os.environ.get(SCRATCH_ENV) or None
    if base is not None:
        os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix="kafka-auditor-extract-", dir=base)


def remove_scratch(tables: Tables) -> None:
    """Remove the scratch directory of ``tables`` (if any)."""
    import shutil

    if tables.scratch is not None:
        shutil.rmtree(tables.scratch, ignore_errors=True)
        tables.scratch = None


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
