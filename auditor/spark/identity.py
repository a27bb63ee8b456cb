"""The audit's first step after loading: every replica judged by Kafka's identity
(``auditor.kafka.identity``), the ones set apart reported (KA605-KA610, KA609 per cluster) and removed from
every table before any comparison, so that no later step can compare, count as loss or elect them.

:func:`identity_findings` is pure Python (the rule cases run it without Spark); :func:`set_apart` runs it on
the collected replica and metadata rows (one row per replica and per metadata record: small) and filters the
DataFrames with a broadcast anti-join on (cluster, log dir, topic, partition), which is unique among live
partition directories (``-future``, ``-delete`` and ``-stray`` directories have a replica row only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.kafka.identity import (
    OTHER_INCARNATION,
    cluster_identities,
    directory_mismatch,
    identify_rows,
)
from auditor.rules import runner
from auditor.rules.replica.identity import ClusterCoverage, PartitionCoverage, ReplicaFacts

REPLICA_KEY = ("cluster", "log_dir", "topic", "partition")
"""What identifies a live partition directory in every extract table."""


@dataclass
class IdentityResult:
    """The identity step's findings (``rows.FINDING`` dicts) and the live replicas it set apart."""

    findings: list[dict] = field(default_factory=list)
    set_apart: list[tuple] = field(default_factory=list)  # REPLICA_KEY values of live replicas set apart
    apart_rows: list[dict] = field(default_factory=list)  # their replica rows, and the non-live ones


def identity_findings(
    replicas: Iterable[Mapping[str, Any]], metadata: Iterable[Mapping[str, Any]]
) -> IdentityResult:
    """Judge every replica row (``rows.REPLICA`` dicts, live and not) against the KRaft metadata rows; run the
    ``identity`` rules on each and the ``coverage`` rules on each cluster."""
    replicas = list(replicas)
    metadata = list(metadata)
    idents = cluster_identities(metadata)
    judged = identify_rows(replicas, metadata, idents)
    live_by: dict[tuple, dict] = {}
    for r, ident in judged:
        if (r.get("dir_kind") or "live") == "live" and ident.compared:
            live_by[(r.get("cluster"), r["topic"], int(r["partition"]), r.get("broker"))] = r
    out = IdentityResult()
    for r, ident in judged:
        live = (r.get("dir_kind") or "live") == "live"
        cluster = r.get("cluster")
        ci = idents.get(cluster)
        state = ci.partitions.get((r["topic"], int(r["partition"]))) if ci is not None else None
        twin = live_by.get((cluster, r["topic"], int(r["partition"]), r.get("broker")))
        facts = ReplicaFacts(
            cluster,
            r["topic"],
            int(r["partition"]),
            r.get("broker"),
            r.get("log_dir"),
            ident,
            dict(r),
            live_leo=twin.get("leo") if twin is not None and not live else None,
            live_log_dir=twin.get("log_dir") if twin is not None and not live else None,
            assigned_directory=(
                directory_mismatch(state, r.get("broker"), r.get("directory_id"))
                if live and ident.compared and state is not None and state.topic_id == r.get("topic_id")
                else None
            ),
        )
        out.findings += runner.rows(runner.run("identity", facts), cluster, facts.topic, facts.partition)
        if not ident.compared:
            out.apart_rows.append(dict(r))
            if live:
                out.set_apart.append(tuple(r.get(k) for k in REPLICA_KEY))
    out.findings += _replica_set_findings(judged)
    clusters = sorted({r.get("cluster") for r in replicas}, key=str)
    for cluster in clusters:
        ci = idents.get(cluster)
        mine = [(r, i) for r, i in judged if r.get("cluster") == cluster]
        subject = ClusterCoverage(
            cluster,
            ci is not None and ci.has_metadata,
            len(mine),
            sum(1 for _r, i in mine if i.status == OTHER_INCARNATION),
        )
        out.findings += runner.rows(runner.run("coverage", subject), cluster)
    return out


def _replica_set_findings(judged: list) -> list[dict]:
    """The ``replica-set`` rules (KA611) over every partition with a compared replica among the inputs and a
    known replica set."""
    present: dict[tuple, set[int]] = {}
    replica_sets: dict[tuple, tuple[int, ...]] = {}
    for r, ident in judged:
        if (r.get("dir_kind") or "live") != "live" or not ident.compared or ident.replicas is None:
            continue
        key = (r.get("cluster"), r["topic"], int(r["partition"]))
        replica_sets[key] = tuple(ident.replicas)
        if r.get("broker") is not None:
            present.setdefault(key, set()).add(int(r["broker"]))
    out = []
    for key in sorted(replica_sets, key=lambda k: (str(k[0]), k[1], k[2])):
        cluster, topic, partition = key
        subject = PartitionCoverage(cluster, topic, partition, replica_sets[key], tuple(sorted(present[key])))
        out += runner.rows(runner.run("replica-set", subject), cluster, topic, partition)
    return out


REPLICA_COLUMNS = (
    *REPLICA_KEY,
    "broker",
    "topic_id",
    "dir_name",
    "dir_kind",
    "directory_id",
    "hw",
    "log_start",
    "leo",
    "first_offset",
    "unreadable_from",
    "unreadable_to",
    "record_count",
    "bytes",
)
"""The replica columns the identity step reads (collected with the audit's other small inputs), and where
each replica's log starts and ends (``compare.Compared``)."""

IDENTITY_RECORDS = ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD")


def set_apart(tables, replicas: list[dict], metadata: list[dict]) -> IdentityResult:
    """Judge the replicas of ``tables`` (``auditor.spark.extract.Tables``; ``replicas``: their collected
    :data:`REPLICA_COLUMNS`, ``metadata``: every collected KRaft row) and remove the ones set apart, and every
    ``-future``/``-delete``/``-stray`` replica row, from every table (in place)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from auditor.spark.arrow import tuples_frame
    from auditor.spark.tuning import broadcast

    metadata = [r for r in metadata if r.get("record_type") in IDENTITY_RECORDS]
    result = identity_findings(replicas, metadata)
    live = F.coalesce(F.col("dir_kind"), F.lit("live")) == "live"
    tables.replica = tables.replica.where(live)
    if result.set_apart:
        spark = tables.replica.sparkSession
        schema = pa.schema([(k, pa.int32() if k == "partition" else pa.string()) for k in REPLICA_KEY])
        keys = broadcast(tuples_frame(spark, [tuple(k) for k in result.set_apart], schema))
        for kind in ("batch", "epoch", "replica", "record", "commit", "txn_state"):
            df = getattr(tables, kind, None)
            if df is not None:
                setattr(tables, kind, df.join(keys, list(REPLICA_KEY), "left_anti"))
    return result
