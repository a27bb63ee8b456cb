"""One audit run: load the inputs, run the comparisons, collect the (small) results, optionally save the
DataFrames (``--save``) and export the lost committed records (``--export-lost``).

Only findings, the per-replica summary, loss runs, lag rows and the epoch ranges of diverged partitions come
back to the driver, as typed rows (findings through :meth:`auditor.findings.Finding.from_row`); the batch rows
stay in Spark. Exported records are decoded on the executors, from the log
directory of a replica that still holds them (it must be readable from the executors: local mode, or a
shared filesystem on a cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.findings import Finding
from auditor.layout.relocate import SegmentRoots
from auditor.spark.extract import load, remove_scratch, save_extract, ship_code
from auditor.spark.identity import REPLICA_KEY, IdentityResult, set_apart
from auditor.spark.inputs import PARQUET_WEIGHT, Inputs, input_sizes
from auditor.text import encode_bytes

LOST_FIELDS = [
    ("cluster", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "bigint"),  # ms since the epoch; a Parquet timestamp(ms, UTC) in lost-records.parquet
    ("timestampType", "string"),  # CreateTime / LogAppendTime (attributes bit 3 of the batch)
    ("key", "binary"),
    ("value", "binary"),
    ("headers", "array<struct<key: string, value: binary>>"),
    ("leaderEpoch", "int"),  # the batch's partition leader epoch
    ("batchBaseOffset", "bigint"),
    ("committedHighWatermark", "bigint"),
    ("producerId", "bigint"),
    ("producerEpoch", "int"),
    ("baseSequence", "int"),
    ("isTransactional", "boolean"),
    ("broker", "int"),
    ("error", "string"),
]
"""The columns the executors decode (Spark DDL types), in the order of ``lost-records.parquet``, which adds
``holders`` (every broker holding the record) and stores ``timestamp`` as a timestamp(ms, UTC). The rows of
``lost-records.jsonl`` have the same names, plus ``keyEncoding`` and ``valueEncoding`` (the published
schema ``auditor/schemas/lost-records.schema.json``)."""

LOG_APPEND_TIME = 0x08
"""Batch attributes bit: the timestamps are the broker's LogAppendTime (else the producer's CreateTime)."""


@dataclass
class AuditResult:
    """What an audit brings back to the driver."""

    findings: list[Finding]
    replicas: list[dict[str, Any]]
    loss: list[dict[str, Any]]
    timelines: dict[tuple, list[dict[str, Any]]]
    problems: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    exported: dict[str, Any] | None = None
    frames: Any = None
    tables: Any = None
    transactions: list[dict[str, Any]] = field(default_factory=list)  # open on the leader (spark.hanging)
    groups: list[dict[str, Any]] = field(default_factory=list)  # committed offsets (spark.groups.group_view)
    metadata: list[dict[str, Any]] = field(default_factory=list)  # rows.METADATA of every node (timeline)
    elections: list[dict[str, Any]] = field(default_factory=list)  # which replica to elect (spark.election)
    # batch epoch ranges (frames.epochs rows) of partitions with a finding above info that did not diverge
    epoch_ranges: list[dict[str, Any]] = field(default_factory=list)
    # replica rows set apart by Kafka's identity before any comparison (auditor.spark.identity)
    set_apart: list[dict[str, Any]] = field(default_factory=list)


TASKS = "Spark tasks"
"""The unit of the stages whose progress is Spark's task counts."""

NO_ADAPTIVE_BYTES = 2 << 30
"""Below this many bytes of segments or extracts, adaptive query execution costs more than it saves."""


class _small_input_settings:
    """Few shuffle partitions and no adaptive execution while auditing an input below
    :data:`NO_ADAPTIVE_BYTES`, and the small-input settings of ``auditor.spark.tuning`` below its
    ``SMALL_INPUT_BYTES`` (``driver``: the Python stages run in the driver); restored after."""

    def __init__(self, spark, inputs: Inputs) -> None:
        from auditor.spark.tuning import is_small

        self.spark = spark
        segments, parquet = input_sizes(inputs)
        self.size = segments + parquet
        self.driver = is_small(segments + parquet * PARQUET_WEIGHT, spark.sparkContext.master)
        self.saved: dict[str, str | None] = {}

    def __enter__(self):
        from auditor.spark.tuning import SMALL_INPUT_CONF

        cores = self.spark.sparkContext.defaultParallelism
        wanted = dict(SMALL_INPUT_CONF) if self.driver else {}
        if self.size < NO_ADAPTIVE_BYTES:
            wanted["spark.sql.adaptive.enabled"] = "false"
            wanted["spark.sql.shuffle.partitions"] = str(max(1, min(cores, self.size // (64 << 20) + 1)))
        for key, value in wanted.items():
            self.saved[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)
        return self

    def __exit__(self, *exc) -> None:
        for key, value in self.saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)


def run_audit(
    spark,
    inputs: Inputs,
    *,
    save: str | os.PathLike | None = None,
    export_lost: str | os.PathLike | None = None,
    chunk_bits: int | None = None,
    stages: Any = None,
    verify_crc: bool = False,
    segments_root: SegmentRoots | None = None,
) -> AuditResult:
    """Run every comparison over ``inputs`` and collect the results (small materialised tables, in one action,
    plus one per ``--save`` table and one for ``--export-lost``). ``stages``: a progress display
    (``auditor.report.progress.Stages`` or anything with its ``stage(name, poll=...)`` context manager),
    told each stage of the run; Spark's stages fill in their task counts. ``segments_root``: where the
    extracts' log dirs are on this host, for ``--export-lost``."""
    from auditor.rules.registry import load_rules

    load_rules()  # registers KA6xx/KA7xx (their names label the findings)

    stage = stages.stage if stages is not None else _no_stage
    started = time.time()
    ship_code(spark)
    with _small_input_settings(spark, inputs) as settings:
        raw, extracts = len(inputs.raw), len(inputs.parquet)
        what = [f"extracting {raw} log dir(s)"] * bool(raw)
        what += [f"reading {extracts} extract(s)"] * bool(extracts)
        with stage(", ".join(what) or "reading the inputs", unit=TASKS, poll=True):
            tables = load(spark, inputs, driver=settings.driver, verify_crc=verify_crc)
        try:
            result = _run(spark, tables, settings, stage, chunk_bits, save, export_lost, segments_root)
        finally:
            remove_scratch(tables)
    partitions = {(r["cluster"], r["topic"], r["partition"]) for r in result.replicas}
    result.stats = {
        "logDirs": len(inputs.raw),
        "extracts": len(inputs.parquet),
        "partitions": len(partitions),
        "replicas": len(result.replicas),
        "clusters": len({r["cluster"] for r in result.replicas}),
        "seconds": time.time() - started,
        "smallInput": settings.driver,  # the small-input settings of auditor.spark.tuning were used
    }
    return result


def _add_identity(result: AuditResult, frames, identity: IdentityResult) -> None:
    """The identity step's findings (KA605-KA610) first among the audit's, in ``frames.findings`` too (what
    ``--save`` writes); the replicas it set apart in ``result.set_apart``."""
    from auditor.rules.registry import REGISTRY

    result.set_apart = identity.apart_rows
    if not identity.findings:
        return
    result.findings = [
        Finding.from_row(r, REGISTRY[r["code"]].name) for r in identity.findings
    ] + result.findings
    frames.findings = list(identity.findings) + frames.findings


def _run(
    spark, tables, settings, stage, chunk_bits, save, export_lost, segments_root: SegmentRoots | None
) -> AuditResult:
    """Everything after the extraction: identity, comparisons, the driver's rules, export (where
    ``segments_root`` puts the extracts' log dirs) and save."""
    from auditor.spark import compare

    with stage("identifying the replicas (topic IDs, replica sets)", unit=TASKS, poll=True):
        early = collect_small(tables)
        keyed = early["replicas"]
        identity = set_apart(
            tables, [{k: v for k, v in r.items() if k != "tp"} for r in keyed], early["metadata"]
        )
        apart = set(identity.set_apart)
        for kind in ("commits", "txn_state"):
            early[kind] = [c for c in early[kind] if tuple(c[k] for k in REPLICA_KEY) not in apart]
        compared = [
            r
            for r in keyed
            if (r.get("dir_kind") or "live") == "live" and tuple(r[k] for k in REPLICA_KEY) not in apart
        ]
    with stage("comparing the replicas", unit=TASKS, poll=True):
        frames = compare.audit(
            tables,
            early["metadata"],
            compared,
            **({"chunk_bits": chunk_bits} if chunk_bits else {}),
            driver=settings.driver,
        )
    with stage("per-partition results: transactions, consumer groups, elections", unit=TASKS, poll=True):
        result = _assemble(frames, tables, early)
    _add_identity(result, frames, identity)
    if export_lost is not None:
        with stage("exporting the lost records", unit=TASKS, poll=True):
            result.exported = export_lost_records(spark, frames, export_lost, segments_root)
        result.problems.extend(result.exported.get("problems", []))
    if save is not None:
        with stage("saving the tables (--save)", unit=TASKS, poll=True):
            save_frames(frames, tables, save)
    return result


def collect_small(tables) -> dict[str, list[dict[str, Any]]]:
    """The small inputs every later step reads in the driver, in one Spark action: the replica rows the
    identity step judges (with the partition key ``tp``), every KRaft metadata row, the consumer group
    commits and the live transaction coordinator records (``__transaction_state``)."""
    from pyspark.sql import functions as F

    from auditor.spark.arrow import collect_tables
    from auditor.spark.compare import with_tp
    from auditor.spark.identity import REPLICA_COLUMNS

    small = {"replicas": with_tp(tables.replica).select(*REPLICA_COLUMNS, "tp"), "metadata": tables.metadata}
    if getattr(tables, "commit", None) is not None:
        small["commits"] = tables.commit
    if getattr(tables, "txn_state", None) is not None:
        small["txn_state"] = tables.txn_state.where(F.col("live"))
    got = collect_tables(small)
    got.setdefault("commits", [])
    got.setdefault("txn_state", [])
    return got


@contextlib.contextmanager
def _no_stage(name: str, total: float | None = None, unit: str = "", *, poll: bool = False):
    """The stage of a run without a progress display."""
    yield None


def _assemble(frames, tables, early: dict[str, list[dict[str, Any]]]) -> AuditResult:
    """The driver's results from the pass's collected outputs (``frames.rows``) and the small inputs
    (``early``: metadata, group commits): the transaction rules over the open transactions (and the
    coordinator records of the ``__transaction_state`` leaders: one small action when there are some), the
    group rules and the elections."""
    from auditor.rules.registry import REGISTRY
    from auditor.spark import hanging
    from auditor.spark.election import elections
    from auditor.spark.groups import group_results

    got = frames.rows
    metadata = early["metadata"]
    leaders = hanging.coordinator_leaders(got["summary"])
    records = hanging.coordinator_records(early["txn_state"], leaders)
    transactions, txn_findings = hanging.assess_transactions(got["open_txn"], leaders, records, metadata)
    frames.findings += txn_findings  # KA713/KA714 (--save writes them)
    findings = [Finding.from_row(r, REGISTRY[r["code"]].name) for r in frames.findings]
    replicas, loss = [dict(r) for r in got["summary"]], got["loss"]
    lag_by = {
        (g["cluster"], g["topic"], g["partition"], g["broker"]): int(g["records"] or 0) for g in got["lag"]
    }
    lost_by: dict[tuple, int] = {}
    for run in loss:
        if run["kind"] == "committed":
            key = (run["cluster"], run["topic"], run["partition"], run["broker"])
            lost_by[key] = lost_by.get(key, 0) + int(run["records"])
    problems = list(tables.problems)
    for r in replicas:
        key = (r["cluster"], r["topic"], r["partition"], r["broker"])
        r["lost_records"] = lost_by.get(key, 0)
        r["lag_records"] = lag_by.get(key)
        if r.get("unreadable_from") is not None:
            # the audit could not read all its input: exit 2 (KA691 has the details)
            problems.append(
                f"broker {r['broker']} {r['topic']}-{r['partition']} ({r['log_dir']}): incomplete from "
                f"offset {r['unreadable_from']}: {r.get('unreadable')}"
            )
    # epoch timelines of every partition with a divergence or a loss
    timelines: dict[tuple, list[dict[str, Any]]] = {}
    for d in got["timeline"]:
        timelines.setdefault((d["cluster"], d["topic"], d["partition"]), []).append(d)
    for rows_ in timelines.values():
        rows_.sort(key=lambda d: (d["broker"], d["first"]))
    result = AuditResult(findings, replicas, loss, timelines, problems, frames=frames, tables=tables)
    result.transactions = transactions
    result.metadata = metadata  # KRaft rows of every node: the timelines of the report
    group_rows, result.groups = group_results(early["commits"], metadata, replicas, loss)
    frames.findings += group_rows
    result.findings += [Finding.from_row(r, REGISTRY[r["code"]].name) for r in group_rows]  # KA720-KA723
    result.elections = elections(got["cost"], replicas)  # candidates, their cost and the recommendation
    result.epoch_ranges = _flagged_epoch_ranges(result, got["epochs"])
    return result


def _flagged_epoch_ranges(result: AuditResult, epochs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batch epoch ranges of every partition with a finding above info and no timeline rows (the KRaft
    timeline of the report lines them up with the metadata)."""
    from auditor.findings import Severity

    keys = {
        (f.evidence.get("cluster") or "", f.topic, f.partition)
        for f in result.findings
        if f.topic is not None and f.partition is not None and f.severity > Severity.INFO
    } - set(result.timelines)
    return [r for r in epochs if (r["cluster"] or "", r["topic"], r["partition"]) in keys]


# ------------------------------------------------------------------------------------------------ --save


def save_frames(frames, tables, directory: str | os.PathLike) -> None:
    """Write the tables the audit computed as Parquet under ``directory``, one directory each (the partition
    key ``tp`` left out), through :func:`saved_table`: camelCase names, timestamps as timestamp(ms, UTC).
    Every table has ``cluster``, ``topic`` and ``partition`` columns to join on (docs/outputs.md lists every
    column):

    * ``findings/``: every finding of the report (cluster, code, severity, topic, partition, broker, peer,
      logDir, offsetStart, offsetEnd, epoch, records, bytes, message, evidence: the report's evidence object
      as JSON text, time), before ``--select``/``--ignore``; the cluster-wide ones (KA621 folded per
      cluster, KA623) have null topic and partition;
    * ``replicas/``: one row per replica, named as the JSON report's ``partitions`` rows (``role``, leader
      and ``leaderSource``, ``logEndOffset``, ``highWatermark``, ``logStartOffset``, recovery point, cleaner
      offset, epochs, ``tail``, ``unreadableFrom``/``unreadableTo``, divergence from the leader,
      OffsetsForLeaderEpoch ``truncationOffset``, ``kraftLeader``, ``kraftLeaderEpoch``, ``kraftIsr``);
    * ``divergence/``: the first offset where each replica pair (brokers ``a < b``) differs inside its common
      range ``[lo, hi)``: ``offset``, ``mode`` (batch or record) and ``detail`` (batch: ``baseOffset`` and
      what ``a`` and ``b`` hold there: ``lastOffset``, ``leaderEpoch``, ``crc``, ``valid``; record: ``hashA``,
      ``hashB``);
    * ``pairs/``: every replica pair with its common range, comparison mode, cleaner offsets and unreadable
      spans (``uaFrom``, ``uaTo``, ``ubFrom``, ``ubTo``);
    * ``lost/``: runs of follower offsets the current leader lacks: ``kind`` (committed or uncommitted),
      broker, logDir, leader, leaderSource, ``lo``..``hi``, records (plain and committed data only), bytes,
      batches, epochs, committedHighWatermark, abortedRecords, openRecords, markers, commitMarkers and
      ``lostMarkers`` (the first 100 COMMIT/ABORT markers: offset, marker, producerId, producerEpoch,
      firstOffset of the transaction's data, epoch);
    * ``epochs/``: per replica (broker) and batch leader epoch: first and last offset, records, bytes,
      batches, first and last batch timestamps;
    * ``lags/``: followers whose log is a prefix of the leader's with the leader's records, bytes, batches
      and first/last batch timestamps from the follower's LEO on;
    * ``timeline/``: the epoch ranges of every replica of the partitions that diverged;
    * ``extract/``: every input in the layout of the ``extract`` command (``extract/<kind>.parquet/``, one
      directory of part files per table kind, its own column names: :mod:`auditor.observe.extract_files`),
      which ``audit`` accepts again.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    spark = frames.spark
    previous = spark.conf.get(_PARQUET_TIMESTAMPS, None)
    spark.conf.set(_PARQUET_TIMESTAMPS, "TIMESTAMP_MILLIS")  # Parquet timestamp(ms, UTC), not INT96
    try:
        for name, df in frames.saveable().items():
            saved_table(df.drop("tp")).write.mode("overwrite").parquet(str(out / name))
    finally:
        if previous is None:
            spark.conf.unset(_PARQUET_TIMESTAMPS)
        else:
            spark.conf.set(_PARQUET_TIMESTAMPS, previous)
    save_extract(tables.extract, out / "extract")


_PARQUET_TIMESTAMPS = "spark.sql.parquet.outputTimestampType"
_SAVED_NAMES = {
    "leo": "logEndOffset",
    "leo_on_disk": "logEndOffsetOnDisk",
    "leo_known": "logEndOffsetKnown",
    "hw": "highWatermark",
    "log_start": "logStartOffset",
    "committed_hw": "committedHighWatermark",
    "tail_state": "tail",
    "is_leader": "role",
}
"""Saved columns named as the JSON report's partitions and ``lost-records`` name them (else :func:`camel`):
one name per concept in every output (``is_leader`` is written as the JSON's ``role``, leader or follower)."""


def _camel_type(data_type):
    """``data_type`` with every struct field name at every depth through :func:`auditor.findings.camel`."""
    from pyspark.sql import types as T

    from auditor.findings import camel

    if isinstance(data_type, T.StructType):
        return T.StructType(
            [T.StructField(camel(f.name), _camel_type(f.dataType), f.nullable) for f in data_type.fields]
        )
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_camel_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        return T.MapType(data_type.keyType, _camel_type(data_type.valueType), data_type.valueContainsNull)
    return data_type


def _camel_evidence(text: str | None) -> str | None:
    """A finding's evidence (JSON object text) with camelCase keys at every depth, as the report has them."""
    from auditor.findings import camel_keys

    return None if text is None else json.dumps(camel_keys(json.loads(text)), separators=(",", ":"))


def saved_table(df):
    """``df`` as ``--save`` writes it: camelCase column and nested field names (the report's names for LEO,
    HW, log start: :data:`_SAVED_NAMES`); the ``*_timestamp`` columns (int64 ms since the epoch) as
    timestamps, written as Parquet timestamp(ms, UTC); the findings' ``evidence`` JSON text with the
    camelCase keys of the report."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from auditor.findings import camel

    columns = []
    for f in df.schema.fields:
        col = F.col(f"`{f.name}`")
        if (f.name == "timestamp" or f.name.endswith("_timestamp")) and isinstance(f.dataType, T.LongType):
            col = F.expr(f"timestamp_millis(`{f.name}`)")
        elif f.name == "evidence" and isinstance(f.dataType, T.StringType):
            col = F.udf(_camel_evidence, T.StringType())(col)
        elif f.name == "is_leader" and isinstance(f.dataType, T.BooleanType):
            col = F.when(col, F.lit("leader")).otherwise(F.lit("follower"))
        elif _camel_type(f.dataType) != f.dataType:
            col = col.cast(_camel_type(f.dataType))
        columns.append(col.alias(_SAVED_NAMES.get(f.name) or camel(f.name)))
    return df.select(*columns)


# ------------------------------------------------------------------------------------------------ export


def _decode_lost(roots: SegmentRoots):
    """mapInArrow body: decode each lost batch from its segment file (:func:`decode_lost_rows`), found
    where ``roots`` puts its log dir."""

    def decode(batches):
        import pyarrow as pa

        schema = _lost_arrow_schema(timestamps=False)
        for batch in batches:
            yield pa.RecordBatch.from_pylist(decode_lost_rows(batch.to_pylist(), roots), schema=schema)

    return decode


def decode_lost_rows(rows_: list[dict[str, Any]], roots: SegmentRoots | None = None) -> list[dict[str, Any]]:
    """The records of the lost batch rows ``rows_``, each decoded from its segment file (its log dir where
    ``roots``, the ``--segments-root`` mappings, puts it), below its committed HW (the :data:`LOST_FIELDS`
    columns, ``timestamp`` in ms; a batch that cannot be read is one row with ``error``). Only committed
    data batches reach here (``export_lost_records``), never markers or aborted data."""
    from auditor.observe.records import read_batch_records
    from parsers.errors import ParseError

    names = [n for n, _ in LOST_FIELDS]
    roots = roots or SegmentRoots()
    out: list[dict[str, Any]] = []
    for row in rows_:
        log_dir = roots.locate(row["log_dir"], row["broker"])
        path = os.path.join(log_dir, f"{row['topic']}-{row['partition']}", f"{row['segment']:020d}.log")
        base = {
            "cluster": row["cluster"],
            "topic": row["topic"],
            "partition": row["partition"],
            "broker": row["broker"],
            "leaderEpoch": row["leader_epoch"],
            "batchBaseOffset": row["base_offset"],
            "committedHighWatermark": row["committed_hw"],
            "producerId": row["producer_id"],
            "producerEpoch": row["producer_epoch"],
            "baseSequence": row["base_sequence"],
            "isTransactional": row["is_transactional"],
            "timestampType": "LogAppendTime" if row["attributes"] & LOG_APPEND_TIME else "CreateTime",
        }
        try:
            header, records = read_batch_records(path, row["position"], row["size"])
        except (ParseError, OSError) as exc:
            rec = dict(base, offset=row["base_offset"], error=f"{path}: {exc}")
            out.append({n: rec.get(n) for n in names})
            continue
        for r in records:
            if r.offset >= row["committed_hw"] or r.offset < row["start"]:
                continue
            rec = dict(
                base,
                offset=r.offset,
                timestamp=r.timestamp,
                key=r.key,
                value=r.value,
                headers=[{"key": h.key, "value": h.value} for h in r.headers],
                error=None,
            )
            out.append({n: rec.get(n) for n in names})
    return out


def _lost_arrow_schema(*, timestamps: bool = True, holders: bool = False):
    """The Arrow schema of :data:`LOST_FIELDS`: ``timestamp`` a timestamp(ms, UTC) (else int64 ms, as the
    executors hand it over), ``holders`` (list of broker ids) appended when asked."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
        "array<struct<key: string, value: binary>>": pa.list_(
            pa.struct([("key", pa.string()), ("value", pa.binary())])
        ),
    }
    fields = [
        pa.field(n, pa.timestamp("ms", tz="UTC") if n == "timestamp" and timestamps else types[t])
        for n, t in LOST_FIELDS
    ]
    if holders:
        fields.append(pa.field("holders", pa.list_(pa.int32())))
    return pa.schema(fields)


def lost_records_schema():
    """The Arrow schema of ``lost-records.parquet`` (docs/outputs.md and the published JSON Schema document
    the same columns)."""
    return _lost_arrow_schema(holders=True)


def bytes_text(value: bytes | None) -> tuple[str | None, str | None]:
    """Bytes as JSON text and the encoding that tells how to get them back (:func:`auditor.text.encode_bytes`:
    ``utf8`` or ``base64``); ``(None, None)`` for null (a tombstone value, a null key)."""
    if value is None:
        return None, None
    return encode_bytes(value)


def lost_record_json(row: dict[str, Any]) -> dict[str, Any]:
    """One ``lost-records.jsonl`` row from a ``lost-records.parquet`` row (``timestamp`` as ms since the
    epoch): the same names in the same order, bytes as :func:`bytes_text` with ``keyEncoding`` after
    ``key``, ``valueEncoding`` after ``value``, and each header's ``valueEncoding``."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if name in ("key", "value"):
            out[name], out[f"{name}Encoding"] = bytes_text(value)
        elif name == "headers":
            out[name] = []
            for h in value or ():
                text, encoding = bytes_text(h["value"])
                out[name].append({"key": h["key"], "value": text, "valueEncoding": encoding})
        else:
            out[name] = value
    return out


def export_lost_records(
    spark, frames, directory: str | os.PathLike, roots: SegmentRoots | None = None
) -> dict[str, Any]:
    """Write ``lost-records.jsonl`` and ``lost-records.parquet`` under ``directory``: every committed record a
    follower holds that the current leader lacks (KA710), one row per offset, read from the lowest-numbered
    broker holding it; ``holders`` lists every broker holding it. Committed data only, what a read_committed
    consumer could have read: plain data and data of transactions committed in the holder's log; never
    aborted or open transaction data nor control records (markers). Each record carries its batch's
    producer id and epoch, base sequence, transactional flag and timestamp type. Both files have the
    columns of :data:`LOST_FIELDS` plus ``holders``; Parquet keeps ``key``, ``value`` and header values as
    raw bytes and ``timestamp`` as a timestamp(ms, UTC), JSONL writes them as :func:`lost_record_json`.
    The batches are decoded by :func:`decode_lost_rows` (their segments found where ``roots`` puts them): on
    the executors, or in the driver when the pass ran there (a small input)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if frames.lost_plan is None:  # a small input: decoded in the driver's Python, no Python worker
        from auditor.spark.arrow import frame_of

        schema = _lost_arrow_schema(timestamps=False)
        decoded_rows = decode_lost_rows(frames.rows["lost"], roots)
        decoded = frame_of(spark, [pa.RecordBatch.from_pylist(decoded_rows, schema=schema)], schema)
    else:
        decoded = frames.frame("lost").mapInArrow(
            _decode_lost(roots or SegmentRoots()), ", ".join(f"{n} {t}" for n, t in LOST_FIELDS)
        )
    keys = ("cluster", "topic", "partition", "offset")
    rest = ["broker", *(n for n, _ in LOST_FIELDS if n not in (*keys, "broker"))]  # lowest broker first
    per_offset = (
        decoded.groupBy(*keys)
        .agg(
            F.min(F.struct(*rest)).alias("r"),
            F.sort_array(F.collect_set("broker")).alias("holders"),
        )
        .select(*keys, *(F.col(f"r.{n}").alias(n) for n in rest), "holders")
        .orderBy(*keys)
    )
    jsonl = out / "lost-records.jsonl"
    parquet = out / "lost-records.parquet"
    schema = lost_records_schema()
    count = 0
    problems: list[str] = []
    buffer: list[dict] = []
    with open(jsonl, "w", encoding="utf-8") as fh, pq.ParquetWriter(str(parquet), schema) as writer:

        def flush() -> None:
            if buffer:
                writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
                buffer.clear()

        for row in per_offset.toLocalIterator():
            d = row.asDict(recursive=True)
            d = {n: d.get(n) for n in schema.names}
            for name in ("key", "value"):
                d[name] = bytes(d[name]) if d[name] is not None else None
            d["headers"] = [
                {"key": h["key"], "value": None if h["value"] is None else bytes(h["value"])}
                for h in d["headers"] or ()
            ]
            if d["error"]:
                problems.append(f"lost records of broker {d['broker']} not exported: {d['error']}")
            fh.write(json.dumps(lost_record_json(d)) + "\n")
            buffer.append(d)
            count += 1
            if len(buffer) >= 10000:
                flush()
        flush()
    return {"records": count, "jsonl": str(jsonl), "parquet": str(parquet), "problems": sorted(set(problems))}
