"""One audit run: load the inputs, run the comparisons, collect the (small) results, optionally save the
DataFrames (``--save``) and export the lost committed records (``--export-lost``).

Only findings, the per-replica summary, loss runs, lag rows and the epoch ranges of diverged partitions come
back to the driver, as typed rows (findings through :meth:`auditor.findings.Finding.from_row`); the batch rows
stay in Spark. Exported records are decoded on the executors, from the log
directory of a replica that still holds them (it must be readable from the executors: local mode, or a
shared filesystem on a cluster).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.findings import Finding
from auditor.spark.extract import load, ship_code
from auditor.spark.inputs import Inputs

LOST_FIELDS = [
    ("cluster", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "bigint"),
    ("key", "binary"),
    ("value", "binary"),
    ("headers", "string"),  # JSON list of {"key": str, "value": base64 | null}
    ("broker", "int"),
    ("epoch", "int"),
    ("batch_base_offset", "bigint"),
    ("committed_hw", "bigint"),
    ("producer_id", "bigint"),
    ("producer_epoch", "int"),
    ("base_sequence", "int"),
    ("is_transactional", "boolean"),
    ("timestamp_type", "string"),  # CreateTime / LogAppendTime (attributes bit 3 of the batch)
    ("error", "string"),
]
"""The columns of ``lost-records.parquet`` (the JSONL file has the same values under camelCase names)."""

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


SMALL_INPUT_BYTES = 2 << 30
"""Below this many bytes of segments or extracts, adaptive query execution costs more than it saves."""


def input_bytes(inputs: Inputs) -> int:
    total = 0
    for source in inputs.sources:
        if source.kind == "parquet":
            paths = [Path(source.path)]
        else:
            paths = [p for p in Path(source.path).glob("*/*.log")]
        for p in paths:
            with contextlib.suppress(OSError):
                total += p.stat().st_size
    return total


class _small_input_settings:
    """Few shuffle partitions and no adaptive execution while auditing a small input (restored after)."""

    def __init__(self, spark, inputs: Inputs) -> None:
        self.spark = spark
        self.size = input_bytes(inputs)
        self.saved: dict[str, str | None] = {}

    def __enter__(self):
        if self.size >= SMALL_INPUT_BYTES:
            return self
        cores = self.spark.sparkContext.defaultParallelism
        wanted = {
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.shuffle.partitions": str(max(1, min(cores, self.size // (64 << 20) + 1))),
        }
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
) -> AuditResult:
    """Run every comparison over ``inputs`` and collect the results (small materialised tables, one action
    each, plus one per ``--save`` table and one for ``--export-lost``)."""
    from auditor.rules.registry import load_rules
    from auditor.spark import compare

    load_rules()  # registers KA6xx/KA7xx (their names label the findings)

    started = time.time()
    ship_code(spark)
    with _small_input_settings(spark, inputs):
        tables = load(spark, inputs)
        frames = compare.audit(tables, **({"chunk_bits": chunk_bits} if chunk_bits else {}))
        result = _assemble(frames, tables)
        if export_lost is not None:
            result.exported = export_lost_records(spark, frames, export_lost)
            result.problems.extend(result.exported.get("problems", []))
        if save is not None:
            save_frames(frames, tables, save)
        if tables.extract is not None and tables.extract.is_cached:
            tables.extract.unpersist()
    partitions = {(r["cluster"], r["topic"], r["partition"]) for r in result.replicas}
    result.stats = {
        "logDirs": len(inputs.raw),
        "extracts": len(inputs.parquet),
        "partitions": len(partitions),
        "replicas": len(result.replicas),
        "clusters": len({r["cluster"] for r in result.replicas}),
        "seconds": time.time() - started,
    }
    return result


def _collect(df) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.drop("tp").collect()]


def _assemble(frames, tables) -> AuditResult:
    """The driver's copy of the audit's small tables: findings, replica summary, loss runs, lag, timeline."""
    from auditor.rules.registry import REGISTRY
    from auditor.spark.election import elections
    from auditor.spark.groups import group_results
    from auditor.spark.hanging import audit_transactions

    transactions = audit_transactions(frames, tables)  # adds KA713/KA714 to frames.findings
    findings = [Finding.from_row(r, REGISTRY[r["code"]].name) for r in _collect(frames.findings)]
    replicas = _collect(frames.replicas)
    loss = _collect(frames.lost_ranges)
    lag_by = {
        (g["cluster"], g["topic"], g["partition"], g["broker"]): int(g["records"] or 0)
        for g in _collect(frames.lags)
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
    for d in _collect(frames.timeline):
        timelines.setdefault((d["cluster"], d["topic"], d["partition"]), []).append(d)
    for rows_ in timelines.values():
        rows_.sort(key=lambda d: (d["broker"], d["first"]))
    result = AuditResult(findings, replicas, loss, timelines, problems, frames=frames, tables=tables)
    result.transactions = transactions
    result.metadata = _collect(tables.metadata)  # KRaft rows of every node: the timelines of the report
    group_rows, result.groups = group_results(tables, replicas, loss)  # KA720-KA723 and the groups
    result.findings += [Finding.from_row(r, REGISTRY[r["code"]].name) for r in group_rows]
    result.elections = elections(frames, replicas)  # candidates, their cost and the recommendation
    result.epoch_ranges = _flagged_epoch_ranges(frames, result)
    return result


def _flagged_epoch_ranges(frames, result: AuditResult) -> list[dict[str, Any]]:
    """The batch epoch ranges of every partition with a finding above info and no timeline rows yet (the
    KRaft timeline of the report lines them up with the metadata): one small collect, none when empty."""
    from pyspark.sql import functions as F

    from auditor.findings import Severity

    keys = {
        (f.evidence.get("cluster") or "", f.topic, f.partition)
        for f in result.findings
        if f.topic is not None and f.partition is not None and f.severity > Severity.INFO
    } - set(result.timelines)
    if not keys:
        return []
    wanted = F.struct("cluster", "topic", "partition").isin(
        [F.struct(F.lit(c), F.lit(t), F.lit(p)) for c, t, p in sorted(keys)]
    )
    return _collect(frames.epochs.where(wanted).drop("tp"))


# ------------------------------------------------------------------------------------------------ --save


def save_frames(frames, tables, directory: str | os.PathLike) -> None:
    """Write the tables the audit computed as Parquet under ``directory``, one directory each (the partition
    key ``tp`` left out); every table has ``cluster``, ``topic`` and ``partition`` columns to join on:

    * ``findings/``: every finding of the report, layout ``rows.FINDING`` (cluster, code, severity, topic,
      partition, broker, peer, log_dir, offset_start, offset_end, epoch, records, bytes, message, evidence as
      JSON text), before ``--select``/``--ignore``; the cluster-wide ones (KA621 folded per cluster, KA623)
      have null topic and partition;
    * ``replicas/``: one row per replica, layout ``rows.SUMMARY`` (leader and how it was chosen, LEO, HW, log
      start, recovery point, cleaner offset, epochs, tail, unreadable span, divergence from the leader,
      OffsetsForLeaderEpoch truncation offset, the KRaft leader, epoch and ISR);
    * ``divergence/``: the first offset where each replica pair (brokers ``a < b``) differs inside its common
      range ``[lo, hi)``: ``offset``, ``mode`` (batch or record) and ``detail`` (batch: ``base_offset`` and
      what ``a`` and ``b`` hold there: ``last_offset``, ``ple``, ``crc``, ``valid``; record: ``hash_a``,
      ``hash_b``);
    * ``pairs/``: every replica pair with its common range, comparison mode, cleaner offsets and unreadable
      spans (``ua_from``, ``ua_to``, ``ub_from``, ``ub_to``);
    * ``lost/``: runs of follower offsets the current leader lacks: ``kind`` (committed or uncommitted),
      broker, log_dir, leader, leader_source, ``lo``..``hi``, records (plain and committed data only),
      bytes, batches, epochs, committed_hw, aborted_records, open_records, markers, commit_markers and
      ``lost_markers`` (the first 100 COMMIT/ABORT markers: offset, marker, producer_id, producer_epoch,
      first_offset of the transaction's data, epoch);
    * ``epochs/``: per replica (broker) and batch leader epoch: first and last offset, records, bytes,
      batches;
    * ``lags/``: followers whose log is a prefix of the leader's (layout ``rows.LAG``) with the leader's
      records, bytes, batches and first/last batch timestamps from the follower's LEO on;
    * ``timeline/``: the epoch ranges of every replica of the partitions that diverged (``rows.TIMELINE``);
    * ``extract/``: every input in the extract layout (``rows.EXTRACT``), which ``audit`` accepts again.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in frames.saveable().items():
        df.drop("tp").write.mode("overwrite").parquet(str(out / name))
    tables.extract.write.mode("overwrite").parquet(str(out / "extract"))


# ------------------------------------------------------------------------------------------------ export


def _decode_lost(batches):
    """mapInArrow body: decode each lost batch from its segment file; keep records below its committed HW.
    Only committed data batches reach here (``export_lost_records``), never markers or aborted data."""
    import pyarrow as pa

    from auditor.observe.extract import read_batch_records
    from parsers.errors import ParseError

    names = [n for n, _ in LOST_FIELDS]
    for batch in batches:
        out: dict[str, list] = {n: [] for n in names}
        for row in batch.to_pylist():
            path = os.path.join(
                row["log_dir"], f"{row['topic']}-{row['partition']}", f"{row['segment']:020d}.log"
            )
            base = {
                "cluster": row["cluster"],
                "topic": row["topic"],
                "partition": row["partition"],
                "broker": row["broker"],
                "epoch": row["ple"],
                "batch_base_offset": row["base_offset"],
                "committed_hw": row["committed_hw"],
                "producer_id": row["producer_id"],
                "producer_epoch": row["producer_epoch"],
                "base_sequence": row["base_sequence"],
                "is_transactional": row["is_transactional"],
                "timestamp_type": "LogAppendTime" if row["attributes"] & LOG_APPEND_TIME else "CreateTime",
            }
            try:
                header, records = read_batch_records(path, row["position"], row["size"])
            except (ParseError, OSError) as exc:
                rec = dict(
                    base,
                    offset=row["base_offset"],
                    timestamp=None,
                    key=None,
                    value=None,
                    headers=None,
                    error=f"{path}: {exc}",
                )
                for n in names:
                    out[n].append(rec.get(n))
                continue
            for r in records:
                if r.offset >= row["committed_hw"] or r.offset < row["start"]:
                    continue
                headers = [
                    {"key": h.key, "value": None if h.value is None else base64.b64encode(h.value).decode()}
                    for h in r.headers
                ]
                rec = dict(
                    base,
                    offset=r.offset,
                    timestamp=r.timestamp,
                    key=r.key,
                    value=r.value,
                    headers=json.dumps(headers),
                    error=None,
                )
                for n in names:
                    out[n].append(rec.get(n))
        yield pa.RecordBatch.from_pydict(out, schema=_lost_arrow_schema())


def _lost_arrow_schema():
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
    }
    return pa.schema([(n, types[t]) for n, t in LOST_FIELDS])


def _text(value: bytes | None) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    try:
        return value.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return base64.b64encode(value).decode(), "base64"


def export_lost_records(spark, frames, directory: str | os.PathLike) -> dict[str, Any]:
    """Write ``lost-records.jsonl`` and ``lost-records.parquet`` under ``directory``: every committed record a
    follower holds that the current leader lacks (KA710), one row per offset, read from the lowest-numbered
    broker holding it; ``holders`` lists every broker holding it. Committed data only, what a read_committed
    consumer could have read: plain data and data of transactions committed in the holder's log; never
    aborted or open transaction data nor control records (markers). Each record carries its batch's
    producer id and epoch, base sequence, transactional flag and timestamp type."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from auditor.kafka.transactions import COMMITTED, PLAIN
    from auditor.spark.compare import lost_batches

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    extra = frames.extra
    lb = lost_batches(extra["candidates"], extra["replicas"], extra["zones"], extra.get("txn_logs")).where(
        F.col("c") & F.col("txn_state").isin(PLAIN, COMMITTED)
    )
    todo = lb.select(
        "cluster",
        "topic",
        "partition",
        "broker",
        "log_dir",
        "segment",
        "position",
        "size",
        "base_offset",
        "ple",
        "committed_hw",
        "start",
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
    )
    ddl = ", ".join(f"{n} {t}" for n, t in LOST_FIELDS)
    decoded = todo.mapInArrow(_decode_lost, ddl)
    per_offset = (
        decoded.groupBy("cluster", "topic", "partition", "offset")
        .agg(
            F.min(
                F.struct(
                    *[
                        F.col(n)
                        for n, _ in LOST_FIELDS
                        if n not in ("cluster", "topic", "partition", "offset")
                    ]
                )
            ).alias("r"),
            F.sort_array(F.collect_set("broker")).alias("holders"),
        )
        .select("cluster", "topic", "partition", "offset", "r.*", "holders")
        .orderBy("cluster", "topic", "partition", "offset")
    )
    jsonl = out / "lost-records.jsonl"
    parquet = out / "lost-records.parquet"
    schema = pa.schema(list(_lost_arrow_schema()) + [pa.field("holders", pa.list_(pa.int32()))])
    count = 0
    problems: list[str] = []
    buffer: list[dict] = []
    with open(jsonl, "w", encoding="utf-8") as fh, pq.ParquetWriter(str(parquet), schema) as writer:

        def flush() -> None:
            if buffer:
                writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
                buffer.clear()

        for row in per_offset.toLocalIterator():
            d = row.asDict()
            d["key"] = bytes(d["key"]) if d["key"] is not None else None
            d["value"] = bytes(d["value"]) if d["value"] is not None else None
            if d["error"]:
                problems.append(f"lost records of broker {d['broker']} not exported: {d['error']}")
            key, key_enc = _text(d["key"])
            value, value_enc = _text(d["value"])
            fh.write(
                json.dumps(
                    {
                        "cluster": d["cluster"],
                        "topic": d["topic"],
                        "partition": d["partition"],
                        "offset": d["offset"],
                        "timestamp": d["timestamp"],
                        "key": key,
                        "keyEncoding": key_enc,
                        "value": value,
                        "valueEncoding": value_enc,
                        "headers": json.loads(d["headers"]) if d["headers"] else [],
                        "leaderEpoch": d["epoch"],
                        "broker": d["broker"],
                        "holders": d["holders"],
                        "committedHighWatermark": d["committed_hw"],
                        "producerId": d["producer_id"],
                        "producerEpoch": d["producer_epoch"],
                        "baseSequence": d["base_sequence"],
                        "isTransactional": d["is_transactional"],
                        "timestampType": d["timestamp_type"],
                    },
                    sort_keys=False,
                )
                + "\n"
            )
            buffer.append({n: d.get(n) for n in schema.names})
            count += 1
            if len(buffer) >= 10000:
                flush()
        flush()
    return {"records": count, "jsonl": str(jsonl), "parquet": str(parquet), "problems": sorted(set(problems))}
