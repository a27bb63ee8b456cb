"""One audit run: load the inputs, run the comparisons, collect the (small) results, optionally save the
DataFrames (``--save``) and export the lost committed records (``--export-lost``).

Only findings, the per-replica summary, loss runs and the epoch ranges of diverged partitions come back to
the driver; the batch rows stay in Spark. Exported records are decoded on the executors, from the log
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

from auditor.findings import Finding, Severity
from auditor.kafka.topics import METADATA_TOPIC
from auditor.spark.extract import Inputs, load, ship_code

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
    ("error", "string"),
]


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


def finding_from_row(row: dict[str, Any]) -> Finding:
    """A ``rows.FINDING`` row (from Spark) as an issue-4 :class:`Finding` (peer replica in ``related``)."""
    from auditor.rules.registry import REGISTRY

    evidence = json.loads(row.get("evidence") or "{}")
    for key in ("cluster", "records", "bytes", "peer"):
        if row.get(key) is not None:
            evidence.setdefault(key, row[key])
    related = []
    if row.get("peer") is not None:
        related.append({"broker": row["peer"], "topic": row.get("topic"), "partition": row.get("partition")})
    rule = REGISTRY.get(row["code"])
    return Finding(
        code=row["code"],
        severity=Severity.parse(row["severity"]),
        message=row["message"],
        name=rule.name if rule else "",
        broker=row.get("broker"),
        log_dir=row.get("log_dir"),
        topic=row.get("topic"),
        partition=row.get("partition"),
        offset_start=row.get("offset_start"),
        offset_end=row.get("offset_end"),
        epoch=row.get("epoch"),
        evidence=evidence,
        related=related,
    )


def _aggregate_offline(findings: list[Finding]) -> list[Finding]:
    """One KA621 per cluster instead of one per offline partition (after a full shutdown, all of them)."""
    offline: dict[str, list[Finding]] = {}
    out = []
    for f in findings:
        if f.code == "KA621":
            offline.setdefault(f.evidence.get("cluster") or "", []).append(f)
        else:
            out.append(f)
    for cluster, group in sorted(offline.items()):
        group.sort(key=lambda f: (f.topic or "", f.partition or 0))
        listing = ", ".join(f"{f.topic}-{f.partition}: {f.broker}" for f in group[:20])
        more = f" and {len(group) - 20} more" if len(group) > 20 else ""
        first = group[0]
        out.append(
            Finding(
                code="KA621",
                severity=first.severity,
                message=f"{len(group)} partition(s) have no leader in the KRaft metadata (offline, e.g. "
                "every "
                f"replica shut down); the last known leader is the reference: {listing}{more}",
                name=first.name,
                evidence={
                    "cluster": cluster,
                    "partitions": [
                        {
                            "topic": f.topic,
                            "partition": f.partition,
                            "lastKnownLeader": f.broker,
                            "epoch": f.epoch,
                        }
                        for f in group
                    ],
                },
            )
        )
    return out


def _inferred_clusters(replicas: list[dict[str, Any]]) -> list[str]:
    """Clusters whose partitions all have an inferred leader (no KRaft metadata about them)."""
    sources: dict[str, set[str]] = {}
    for r in replicas:
        if r["topic"] != METADATA_TOPIC:
            sources.setdefault(r["cluster"], set()).add(r["leader_source"])
    return sorted(c for c, s in sources.items() if s == {"inferred"})


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
    """Run every comparison over ``inputs`` and collect the results (one Spark action, plus one per
    ``--save`` table and one for ``--export-lost``)."""
    from auditor.rules import replication as _rules  # noqa: F401  (registers KA6xx/KA7xx)
    from auditor.spark import compare

    started = time.time()
    ship_code(spark)
    with _small_input_settings(spark, inputs):
        tables = load(spark, inputs)
        frames = compare.audit(tables, **({"chunk_bits": chunk_bits} if chunk_bits else {}))
        collected: dict[str, list[dict]] = {
            "finding": [],
            "summary": [],
            "timeline": [],
            "loss": [],
            "lag": [],
        }
        for row in frames.results.collect():
            collected[row["kind"]].append(json.loads(row["payload"]))
        result = _assemble(collected, tables, frames)
        if export_lost is not None:
            result.exported = export_lost_records(spark, frames, export_lost)
            result.problems.extend(result.exported.get("problems", []))
        if save is not None:
            save_frames(spark, frames, tables, result.findings, save)
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


def _assemble(collected: dict[str, list[dict]], tables, frames) -> AuditResult:
    from auditor.replication import lag_finding

    replicas = collected["summary"]
    loss = collected["loss"]
    findings = _aggregate_offline([finding_from_row(r) for r in collected["finding"]])
    findings += [finding_from_row(lag_finding(row)) for row in collected["lag"]]
    lag_by = {
        (g["cluster"], g["topic"], g["partition"], g["broker"]): int(g["records"] or 0)
        for g in collected["lag"]
    }
    for cluster in _inferred_clusters(replicas):
        findings.append(
            finding_from_row(
                {
                    "code": "KA623",
                    "severity": "info",
                    "cluster": cluster,
                    "message": "no __cluster_metadata in the inputs: the current leader of every "
                    "partition is inferred (highest latest leader epoch, then highest log end offset, "
                    "then lowest broker id)",
                }
            )
        )
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
    for d in collected["timeline"]:
        timelines.setdefault((d["cluster"], d["topic"], d["partition"]), []).append(d)
    for rows_ in timelines.values():
        rows_.sort(key=lambda d: (d["broker"], d["first"]))
    return AuditResult(findings, replicas, loss, timelines, problems, frames=frames, tables=tables)


# ------------------------------------------------------------------------------------------------ --save


def save_frames(spark, frames, tables, findings: list[Finding], directory: str | os.PathLike) -> None:
    """Write the findings and every intermediate table as Parquet under ``directory``: ``findings/``,
    ``replicas/``, ``divergence/``, ``lost/``, ``epochs/``, ``pairs/`` and ``extract/`` (the extract layout,
    which ``audit`` accepts again as input)."""
    from auditor.observe import rows as rowschemas

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    schema = rowschemas.spark_schema(rowschemas.FINDING)
    finding_rows = []
    for f in findings:
        ev = dict(f.evidence)
        finding_rows.append(
            (
                ev.pop("cluster", None),
                f.code,
                f.severity.label,
                f.topic,
                f.partition,
                f.broker,
                ev.pop("peer", None),
                f.log_dir,
                f.offset_start,
                f.offset_end,
                f.epoch,
                ev.get("records"),
                ev.get("bytes"),
                f.message,
                json.dumps(ev, sort_keys=True, default=str),
            )
        )
    spark.createDataFrame(finding_rows, schema).coalesce(1).write.mode("overwrite").parquet(
        str(out / "findings")
    )
    for name, df in frames.saveable().items():
        if name == "findings":
            continue
        target = "lost" if name == "lost_ranges" else name
        df.drop("tp").write.mode("overwrite").parquet(str(out / target))
    tables.extract.write.mode("overwrite").parquet(str(out / "extract"))


# ------------------------------------------------------------------------------------------------ export


def _decode_lost(batches):
    """mapInArrow body: decode each lost batch from its segment file; keep records below its committed HW."""
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

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary()}
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
    broker holding it; ``holders`` lists every broker holding it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from auditor.spark.compare import lost_batches

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    lb = lost_batches(frames.extra["candidates"], frames.extra["replicas"], frames.extra["zones"]).where(
        F.col("c")
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
