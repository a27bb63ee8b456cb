"""Cross-replica comparisons as Spark DataFrame jobs (the same code in local mode and on a cluster).

Inputs are the flat tables of :mod:`auditor.spark.extract`; every partition replica is keyed by
``tp = xxhash64(cluster, topic, partition)`` and its broker id. The batch rows (the only big table: every
complete batch of the log Kafka loads, ``live``; CRC failures are ``scan``'s job) are read twice, nothing
else is big:

1. digests: per (tp, broker, offset chunk of 4096, leader epoch) an XOR of batch signatures
   ``xxhash64(base offset, last offset, stored CRC, partitionLeaderEpoch)``, counts and offset ranges
   (map-side partial aggregation: a few rows per chunk leave each task);
2. candidate chunks: the (tp, chunk) where the replicas of a partition are not unanimous (a replica lacks the
   chunk, or the digests differ); the second scan keeps only their batch rows (a broadcast semi-join, with a
   predicate Parquet can push down when few partitions are concerned).

From the candidate rows: the first offset where each replica pair disagrees inside its common range
``[max(log start offsets), min(LEOs))`` (a missing batch, different batch boundaries, a different CRC, or the
same CRC with a different partitionLeaderEpoch, which the CRC does not cover). Compacted partitions are
compared by record (offset, hash of key, value, headers): an offset present on one replica only is benign
below the other replica's cleaner offset, a different record never is.

The per-partition rules (current leader from the KRaft records or inferred, high-watermark violations,
leader-epoch history, Kafka's OffsetsForLeaderEpoch truncation point) run in ``mapInArrow`` over the small
inputs of each partition, hash-partitioned by ``tp`` (``auditor.spark.partition_rules``). Truncation loss
goes back to the candidate rows: from the first divergent offset of each follower on (or the leader's LEO when
the follower is merely longer), its batches are compared with the leader's batch at the same base offset; a
differing batch's records below the highest high watermark checkpointed by a replica holding that same batch
were committed and are lost when the follower truncates, the rest is a divergent uncommitted tail. On
transactional partitions only plain data and the data of transactions committed in the follower's own log
count as committed records; aborted and open transaction data and COMMIT/ABORT markers are counted apart
(the state of each batch comes from the replica's whole log, read once more for the replicas concerned:
``txn_logs``). The batch rows are therefore read a third time, for those replicas only.

A replica that could not be read completely (an unreadable span ``[unreadable_from, unreadable_to)`` in its
replica row, ``unreadable_to`` null when it runs to the end of the log) is compared outside that span only:
batches and records overlapping it are left out of its pairs' comparison, and a follower's batches overlapping
the leader's span are never counted as lost (the leader may hold them). Lag (KA630): for every follower whose
log is a prefix of the leader's and ends below it, the leader's batches from the follower's LEO on are counted
(records, bytes, the first and newest batch timestamps).

Stages exchange typed columns: the rules' inputs are one struct column per kind (the replica, epoch-cache,
epoch-range, divergence and KRaft metadata rows, with their Spark types), their outputs one struct column per
kind (``rows.RULE_OUTPUT``); only a finding's ``evidence`` is a JSON string (free-form per rule). Small
intermediates are materialised with ``localCheckpoint`` (computed once, short plans); the findings of every
stage end in one DataFrame in the ``rows.FINDING`` layout, and those tables are what the driver collects and
``--save`` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from auditor.kafka.kraft import BROKER_RESOURCE, TIMELINE_CONFIGS, TOPIC_RESOURCE
from auditor.kafka.transactions import ABORT, ABORTED, COMMIT, COMMITTED, MARKER, MARKER_NAMES, OPEN, PLAIN
from auditor.observe import rows
from auditor.rules.registry import REGISTRY
from auditor.rules.replica.kraft import offline_partitions
from auditor.rules.replica.model import LOST_MARKERS_LISTED, PRODUCERS_LISTED
from auditor.spark.partition_rules import (
    cluster_findings,
    evaluate_rows,
    finding_row,
    lag_finding,
    loss_findings,
)
from auditor.spark.transactions import end_marker, with_txn_state
from auditor.spark.tuning import broadcast

CHUNK_BITS = 12
"""Offsets per digest chunk: 4096."""

RULE_INPUTS = ("replica", "epoch", "range", "div", "metadata")
"""The struct columns of the rules' input rows, one set per row (the kinds ``evaluate_rows`` reads)."""

AT_BATCH = "struct<last_offset:bigint,ple:int,crc:bigint,valid:boolean>"
"""What a replica holds at the first divergent base offset (``detail.a`` / ``detail.b``)."""


def with_tp(df: DataFrame) -> DataFrame:
    """Add ``tp``, the 64-bit key of a partition: ``xxhash64(cluster, topic, partition)``."""
    return df.withColumn("tp", F.xxhash64("cluster", "topic", "partition"))


RULE_BUCKETS = 64
"""Partitions are handed to the per-partition rules in this many groups (one Python call per group, not per
partition: the per-call cost dominates on thousands of small partitions)."""


def present(value: Any) -> Any:
    """``value`` without its null struct fields, at every depth: a rule sees (and its evidence shows) only
    what a replica row holds, not a null for every column of the wide input row."""
    if isinstance(value, dict):
        return {k: present(v) for k, v in value.items() if v is not None}
    return value


def python_rows(
    df: DataFrame, fn: Callable[[list[dict]], list[dict]], schema: pa.Schema, driver: bool = False
) -> DataFrame:
    """``fn`` over all the rows (as dicts) of each Spark partition of ``df``, on the executors; what it
    returns is a DataFrame of Arrow ``schema``. Hash-partition ``df`` by a key first when ``fn`` needs every
    row of a key in one call. ``driver``: small inputs, ``fn`` over all the rows at once in the driver's
    Python (:func:`auditor.spark.arrow.on_driver`: no Python worker)."""
    if driver:
        from auditor.spark.arrow import on_driver

        return on_driver(df, fn, schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pylist(fn([r for b in batches for r in b.to_pylist()]), schema=schema)

    return df.mapInArrow(run, rows.spark_schema(schema))


def each(rule: Callable[[dict], dict]) -> Callable[[list[dict]], list[dict]]:
    """A one-row-one-finding rule (``lag_finding``) over a list of rows."""
    return lambda rows_: [rule(r) for r in rows_]


def bucket_rules(tagged: list[dict]) -> list[dict]:
    """The per-partition rules (``auditor.spark.partition_rules``) over the rule input rows of a hash bucket
    of partitions, one partition at a time: one output row per finding, zone, summary, timeline and lag
    row, in its struct column of ``rows.RULE_OUTPUT``. A row's null fields are dropped first
    (:func:`present`)."""
    by_tp: dict[int, list[dict]] = {}
    for row in tagged:
        kind = next(k for k in RULE_INPUTS if row[k] is not None)
        by_tp.setdefault(row["tp"], []).append(dict(present(row[kind]), kind=kind))
    out: list[dict] = []
    for tp, inputs in by_tp.items():
        result = evaluate_rows(inputs)
        for kind, items in (
            ("finding", result.findings),
            ("zone", result.zones),
            ("summary", result.summary),
            ("timeline", result.timeline),
            ("lag", result.lags),
        ):
            out += [{"tp": tp, kind: item} for item in items]
    return out


@dataclass
class AuditFrames:
    """The DataFrames one audit computes; ``--save`` writes :meth:`saveable` (see ``audit.save_frames``)."""

    findings: DataFrame  # rows.FINDING: every finding of the audit, as reported
    replicas: DataFrame  # rows.SUMMARY: one row per replica: leader, LEO, HW, divergence, truncation point
    divergence: DataFrame  # first divergent offset per replica pair
    lost_ranges: DataFrame  # committed / uncommitted offset runs a follower holds and the leader does not
    epochs: DataFrame  # per replica and leader epoch: offsets and records in the batches
    pairs: DataFrame  # every replica pair with its common range and comparison mode
    lags: DataFrame  # rows.LAG plus the leader's records, bytes, batches and timestamps the follower lacks
    timeline: DataFrame  # rows.TIMELINE: epoch ranges of the partitions that diverged
    extra: dict = field(default_factory=dict)

    def saveable(self) -> dict[str, DataFrame]:
        """The tables ``--save`` writes, by directory name (each with cluster, topic and partition)."""
        return {
            "findings": self.findings,
            "replicas": self.replicas,
            "divergence": self.divergence,
            "lost": self.lost_ranges,
            "epochs": self.epochs,
            "pairs": self.pairs,
            "lags": self.lags,
            "timeline": self.timeline,
        }


def candidate_chunks(digest: DataFrame, replicas: DataFrame) -> DataFrame:
    """``(tp, chunk)`` where the replicas of a partition are not unanimous: a replica lacks the chunk or the
    chunk digests differ. Everything else is identical on every replica and never looked at again."""
    n_replicas = replicas.groupBy("tp").agg(F.count(F.lit(1)).alias("replicas"))
    per_broker = digest.groupBy("tp", "broker", "chunk").agg(
        F.expr("bit_xor(x)").alias("x"), F.sum("n").alias("n")
    )
    return (
        per_broker.groupBy("tp", "chunk")
        .agg(
            F.count(F.lit(1)).alias("brokers"),
            F.min("x").alias("x_min"),
            F.max("x").alias("x_max"),
            F.min("n").alias("n_min"),
            F.max("n").alias("n_max"),
        )
        .join(broadcast(n_replicas), "tp")
        .where(
            (F.col("brokers") < F.col("replicas"))
            | (F.col("x_min") != F.col("x_max"))
            | (F.col("n_min") != F.col("n_max"))
        )
        .select("tp", "chunk")
    )


def _inside(first, last, lo: str, hi: str):
    """Offsets ``first..last`` touch the unreadable span ``[lo, hi)`` (``hi`` null: to the end); false when
    there is no span."""
    return F.coalesce(
        F.col(lo).isNotNull() & (last >= F.col(lo)) & (F.col(hi).isNull() | (first < F.col(hi))), F.lit(False)
    )


def _readable(first, last):
    """Outside the unreadable spans of both members of a pair (columns ``u{a,b}_{from,to}``)."""
    return ~_inside(first, last, "ua_from", "ua_to") & ~_inside(first, last, "ub_from", "ub_to")


PAIR_KEYS = ("tp", "cluster", "topic", "partition", "a", "b", "lo", "hi")
"""A replica pair (brokers ``a < b``) of a partition and its common range ``[lo, hi)``."""


def _detail(base_offset=None, a=None, b=None, hash_a=None, hash_b=None) -> Column:
    """The ``detail`` struct of a divergence: for ``batch`` mode the first divergent base offset and what
    each replica holds there (null: no batch), for ``record`` mode the record hashes (null: no record)."""

    def typed(value, sql_type: str) -> Column:
        return (F.lit(None) if value is None else value).cast(sql_type)

    return F.struct(
        typed(base_offset, "bigint").alias("base_offset"),
        typed(a, AT_BATCH).alias("a"),
        typed(b, AT_BATCH).alias("b"),
        typed(hash_a, "bigint").alias("hash_a"),
        typed(hash_b, "bigint").alias("hash_b"),
    ).alias("detail")


def first_divergence(candidates: DataFrame, pairs: DataFrame) -> DataFrame:
    """First offset where each replica pair (mode ``batch``) disagrees inside its common range, from the
    batches of the candidate chunks only, outside what either replica could not read."""
    batch_pairs = pairs.where((F.col("mode") == "batch") & (F.col("lo") < F.col("hi"))).select(
        *PAIR_KEYS, "ua_from", "ua_to", "ub_from", "ub_to"
    )
    at = F.struct("last_offset", "ple", "crc", "valid")
    is_a = F.col("broker") == F.col("a")
    is_b = F.col("broker") == F.col("b")
    return (
        candidates.join(broadcast(batch_pairs), "tp")
        .where((is_a | is_b) & (F.col("base_offset") < F.col("hi")) & (F.col("last_offset") >= F.col("lo")))
        .where(_readable(F.col("base_offset"), F.col("last_offset")))
        .groupBy(*PAIR_KEYS, "base_offset")
        .agg(
            F.max(F.when(is_a, F.col("sig"))).alias("sa"),
            F.max(F.when(is_b, F.col("sig"))).alias("sb"),
            F.max(F.when(is_a, at)).alias("at_a"),
            F.max(F.when(is_b, at)).alias("at_b"),
        )
        .where(~F.col("sa").eqNullSafe(F.col("sb")))
        .groupBy(*PAIR_KEYS)
        .agg(F.min(F.struct("base_offset", "at_a", "at_b")).alias("first"))
        .select(
            *PAIR_KEYS,
            F.greatest(F.col("first.base_offset"), F.col("lo")).alias("offset"),
            F.lit("batch").alias("mode"),
            _detail(base_offset=F.col("first.base_offset"), a=F.col("first.at_a"), b=F.col("first.at_b")),
        )
    )


def first_record_divergence(records: DataFrame, pairs: DataFrame) -> DataFrame:
    """Compacted partitions: first offset where a pair holds different records, or where one replica lacks a
    record at or above the other's cleaner offset (below it the cleaner may have removed it)."""
    record_pairs = pairs.where((F.col("mode") == "record") & (F.col("lo") < F.col("hi"))).select(
        *PAIR_KEYS,
        "cleaner_offset_a",
        "cleaner_offset_b",
        "ua_from",
        "ua_to",
        "ub_from",
        "ub_to",
    )
    is_a = F.col("broker") == F.col("a")
    is_b = F.col("broker") == F.col("b")
    ha, hb = F.col("ha"), F.col("hb")
    return (
        records.join(broadcast(record_pairs), "tp")
        .where((is_a | is_b) & (F.col("offset") >= F.col("lo")) & (F.col("offset") < F.col("hi")))
        .where(_readable(F.col("offset"), F.col("offset")))
        .groupBy(*PAIR_KEYS, "offset", "cleaner_offset_a", "cleaner_offset_b")
        .agg(
            F.max(F.when(is_a, F.col("record_hash"))).alias("ha"),
            F.max(F.when(is_b, F.col("record_hash"))).alias("hb"),
        )
        .where(
            (ha.isNotNull() & hb.isNotNull() & (ha != hb))
            | (ha.isNotNull() & hb.isNull() & (F.col("offset") >= F.coalesce("cleaner_offset_b", F.lit(-1))))
            | (hb.isNotNull() & ha.isNull() & (F.col("offset") >= F.coalesce("cleaner_offset_a", F.lit(-1))))
        )
        .groupBy(*PAIR_KEYS)
        .agg(F.min(F.struct("offset", "ha", "hb")).alias("first"))
        .select(
            *PAIR_KEYS,
            F.col("first.offset").alias("offset"),
            F.lit("record").alias("mode"),
            _detail(hash_a=F.col("first.ha"), hash_b=F.col("first.hb")),
        )
    )


def replica_pairs(replicas: DataFrame) -> DataFrame:
    """Every pair of replicas of a partition with its common range ``[lo, hi)`` and comparison mode:
    ``record`` for compacted partitions whose replicas all have record rows, else ``batch`` (for compacted
    partitions without record rows, only above both cleaner offsets, where nothing was cleaned)."""
    cols = (
        "broker",
        "log_start",
        "leo",
        "hw",
        "cleaner_offset",
        "compacted",
        "has_records",
        "unreadable_from",
        "unreadable_to",
    )
    a = replicas.select("tp", "cluster", "topic", "partition", *[F.col(c).alias(f"{c}_a") for c in cols])
    b = replicas.select("tp", *[F.col(c).alias(f"{c}_b") for c in cols])
    compacted = F.col("compacted_a") | F.col("compacted_b")
    with_records = F.col("has_records_a") & F.col("has_records_b")
    base_lo = F.greatest("log_start_a", "log_start_b")
    return (
        a.join(b, "tp")
        .where(F.col("broker_a") < F.col("broker_b"))
        .select(
            "tp",
            "cluster",
            "topic",
            "partition",
            F.col("broker_a").alias("a"),
            F.col("broker_b").alias("b"),
            "cleaner_offset_a",
            "cleaner_offset_b",
            F.col("unreadable_from_a").alias("ua_from"),
            F.col("unreadable_to_a").alias("ua_to"),
            F.col("unreadable_from_b").alias("ub_from"),
            F.col("unreadable_to_b").alias("ub_to"),
            F.when(compacted & with_records, F.lit("record")).otherwise(F.lit("batch")).alias("mode"),
            F.when(
                compacted & ~with_records,
                F.greatest(
                    base_lo,
                    F.coalesce("cleaner_offset_a", F.lit(0)),
                    F.coalesce("cleaner_offset_b", F.lit(0)),
                ),
            )
            .otherwise(base_lo)
            .alias("lo"),
            F.least("leo_a", "leo_b").alias("hi"),
        )
    )


def txn_states(logs: DataFrame) -> DataFrame:
    """Per batch of ``logs`` (``batch_columns`` rows): ``txn_state`` (``with_txn_state``: decided by the next
    COMMIT/ABORT marker of its producer in the same replica's log) and, for a marker, ``txn_first``: the
    first offset of the data of the transaction it ends in that log (null when it has none there). Exact for
    every batch whose replica's rows in ``logs`` run from it to the replica's log end (``txn_logs``), and for
    ``txn_first`` when they also start before the transaction."""
    # with_txn_state keys a log by (cluster, topic, partition, broker): ``tp`` stands for the first three
    keyed = logs.select(
        F.lit("").alias("cluster"),
        F.lit("").alias("topic"),
        F.col("tp").alias("partition"),
        "broker",
        "base_offset",
        "producer_id",
        "is_transactional",
        "is_control",
        "control_type",
        "live",
    )
    replica_producer = Window.partitionBy("partition", "broker", "producer_id")
    before = replica_producer.orderBy("base_offset").rowsBetween(Window.unboundedPreceding, -1)
    # the transactions of a producer are separated by its markers: a marker ends the data since the previous
    ended_before = F.coalesce(F.sum(F.when(end_marker(), 1)).over(before), F.lit(0))
    data = F.col("is_transactional") & ~F.col("is_control")
    return (
        with_txn_state(keyed)
        .withColumn("txn_no", ended_before)
        .withColumn(
            "txn_first",
            F.when(
                end_marker(),
                F.min(F.when(data, F.col("base_offset"))).over(
                    Window.partitionBy("partition", "broker", "producer_id", "txn_no")
                ),
            ),
        )
        .select(
            F.col("partition").alias("s_tp"),
            F.col("broker").alias("s_broker"),
            F.col("base_offset").alias("s_base"),
            "txn_state",
            "txn_first",
        )
    )


def txn_logs(
    batch: DataFrame, candidates: DataFrame, replicas: DataFrame, zones: DataFrame, driver: bool = False
) -> DataFrame:
    """The batch rows ``txn_states`` needs to classify the batches ``lost_batches`` looks at: the candidate
    rows, except for every replica that holds transactional batches (data or markers) from its zone start on,
    whose whole live log is read again (one more scan of ``batch``, restricted to those partitions). The
    state of a batch is decided by a marker that may lie in a chunk where the replicas agree (not a
    candidate), and the first offset of a lost marker's transaction may lie before the zone. ``driver``: a
    small input, whose batch rows are all read again without the action that finds the partitions for
    Parquet to skip the others."""
    starts = zones.groupBy("tp", "broker").agg(F.min("from").alias("from"))
    needed = (
        candidates.join(broadcast(starts), ["tp", "broker"])
        .where(F.col("is_transactional") & (F.col("last_offset") >= F.col("from")))
        .select("tp", "broker")
        .distinct()
        .join(replicas.select("tp", "broker", "cluster", "topic", "partition"), ["tp", "broker"])
    )
    scoped = batch if driver else _pushed_down(batch, needed)
    if scoped is None:
        return candidates
    # fresh column names: ``needed`` comes from the same rows as both sides (a self-join Spark cannot resolve)
    keys = broadcast(needed.select(F.col("tp").alias("k_tp"), F.col("broker").alias("k_broker")))
    key = (F.col("tp") == F.col("k_tp")) & (F.col("broker") == F.col("k_broker"))
    full = batch_columns(scoped, CHUNK_BITS).join(keys, key, "left_semi")
    # ``chunk`` is not used by txn_states: the chunk size of the audit does not matter here
    return full.unionByName(candidates.join(keys, key, "left_anti"))


def _pushed_down(batch: DataFrame, needed: DataFrame) -> DataFrame | None:
    """``batch`` restricted, by a predicate Parquet can push down, to the partitions of ``needed`` (one small
    action; ``needed`` is recomputed later from the materialised candidates, which is cheap); None when it
    has none."""
    spans = sorted({(r["cluster"], r["topic"], r["partition"]) for r in needed.collect()})
    if not spans:
        return None
    if len(spans) > PUSHDOWN_PARTITIONS:
        return batch
    cond = None
    for cluster, topic, partition in spans:
        term = (F.col("cluster") == cluster) & (F.col("topic") == topic) & (F.col("partition") == partition)
        cond = term if cond is None else cond | term
    return batch.where(cond)


def lost_batches(
    batches: DataFrame,
    replicas: DataFrame,
    zones: DataFrame,
    logs: DataFrame | None = None,
    states: DataFrame | None = None,
) -> DataFrame:
    """Follower batches from the zone start on, each compared with the leader's batch at the same base
    offset; ``committed_hw``: the highest HW checkpointed by any replica holding that same batch; ``start``:
    the first offset of the batch from which this replica differs from the leader; ``txn_state`` and
    ``txn_first``: the batch's transaction state in its own replica's log (``txn_states`` over ``logs``:
    ``txn_logs``, by default ``batches`` themselves, exact when they hold each replica's log from its zone
    start to its end).

    ``zones`` may hold several leaders per partition (one row per follower and leader: the election choice
    asks what electing each candidate would cost); every leader is compared with its own followers.
    ``states``: ``txn_states(logs)`` when the caller has it already (the audit computes it once)."""
    zone = zones.groupBy("tp", "leader").agg(
        F.min("from").alias("zone_lo"),
        F.first("leader_source").alias("leader_source"),
        F.first("leader_unreadable_from").alias("lu_from"),
        F.first("leader_unreadable_to").alias("lu_to"),
    )
    # fresh column names: ``zone`` and ``own`` both come from ``zones`` (a self-join Spark cannot resolve)
    own = zones.select(
        F.col("tp").alias("o_tp"),
        F.col("leader").alias("o_leader"),
        F.col("broker").alias("o_broker"),
        F.col("from").alias("own_from"),
    )
    if states is None:
        states = txn_states(batches if logs is None else logs)
    z = batches.join(broadcast(zone), "tp").where(F.col("last_offset") >= F.col("zone_lo"))
    z = (
        z.join(
            replicas.select(
                "tp",
                "broker",
                F.coalesce("hw", F.lit(0)).alias("hw"),
                "log_dir",
                "cluster",
                "topic",
                "partition",
            ),
            ["tp", "broker"],
        )
        .join(
            broadcast(own),
            (F.col("tp") == F.col("o_tp"))
            & (F.col("leader") == F.col("o_leader"))
            & (F.col("broker") == F.col("o_broker")),
            "left",
        )
        .drop("o_tp", "o_leader", "o_broker")
        .join(
            states,
            (F.col("tp") == F.col("s_tp"))
            & (F.col("broker") == F.col("s_broker"))
            & (F.col("base_offset") == F.col("s_base")),
            "left",
        )
        .drop("s_tp", "s_broker", "s_base")
    )
    # where this replica's own difference starts inside the batch (a record offset in compacted partitions)
    start = F.greatest(F.col("base_offset"), F.coalesce(F.col("own_from"), F.col("base_offset")))
    same_batch = Window.partitionBy("tp", "leader", "base_offset", "sig")
    same_offset = Window.partitionBy("tp", "leader", "base_offset")
    return (
        z.withColumn("committed_hw", F.max("hw").over(same_batch))
        .withColumn(
            "leader_sig", F.max(F.when(F.col("broker") == F.col("leader"), F.col("sig"))).over(same_offset)
        )
        .where(F.col("broker") != F.col("leader"))
        # the leader's batches there could not be read: whether it holds them is unknown
        .where(~_inside(F.col("base_offset"), F.col("last_offset"), "lu_from", "lu_to"))
        .withColumn("start", start)
        .withColumn("differs", F.col("leader_sig").isNull() | (F.col("leader_sig") != F.col("sig")))
        .withColumn("c", F.col("differs") & (F.col("start") < F.col("committed_hw")))
        .withColumn("u", F.col("differs") & (F.col("last_offset") >= F.greatest("start", "committed_hw")))
    )


def lost_runs(
    batches: DataFrame,
    replicas: DataFrame,
    zones: DataFrame,
    logs: DataFrame | None = None,
    lost: DataFrame | None = None,
) -> DataFrame:
    """Runs of consecutive differing follower batches: ``committed`` (offsets below ``committed_hw``) and
    ``uncommitted`` (the rest), with bytes, batches and leader epochs. By the transaction state of each batch
    in the follower's own log (``lost_batches``): ``records`` counts plain and committed data only,
    ``aborted_records`` and ``open_records`` the data of aborted and still open transactions, ``markers``
    (``commit_markers`` of them COMMIT) the COMMIT/ABORT markers, listed in ``lost_markers`` (offset, marker,
    producer_id, producer_epoch, first_offset of the transaction's data, epoch; the first
    ``LOST_MARKERS_LISTED`` by offset). ``lost``: the ``lost_batches`` rows when the caller has them."""
    by_offset = Window.partitionBy("tp", "leader", "broker").orderBy("base_offset")
    lost = lost_batches(batches, replicas, zones, logs) if lost is None else lost
    lb = lost.withColumn("prev_last", F.lag("last_offset").over(by_offset))
    order = by_offset.rowsBetween(Window.unboundedPreceding, 0)
    keys = ["tp", "cluster", "topic", "partition", "broker", "log_dir", "leader", "leader_source"]
    # a run ends at a batch that does not qualify, or at a gap (the batches in between are identical on the
    # leader: their chunks were never candidates)
    gap = F.col("prev_last").isNull() | (F.col("base_offset") != F.col("prev_last") + 1)

    state = F.col("txn_state")
    is_marker = state == MARKER
    marker = F.struct(
        F.col("base_offset").alias("offset"),
        F.when(F.col("control_type") == COMMIT, F.lit(MARKER_NAMES[COMMIT]))
        .otherwise(F.lit(MARKER_NAMES[ABORT]))
        .alias("marker"),
        F.col("producer_id").alias("producer_id"),
        F.col("producer_epoch").cast("int").alias("producer_epoch"),
        F.coalesce(F.col("txn_first"), F.col("base_offset")).alias("first_offset"),
        F.col("ple").alias("epoch"),
    )

    def runs(flag: str, kind: str, lo, hi) -> DataFrame:
        n = F.least(F.col("hi") - F.col("lo") + 1, F.col("records_count"))

        def count(states) -> Column:
            return F.coalesce(F.sum(F.when(state.isin(*states), n)), F.lit(0)).cast("bigint")

        return (
            lb.withColumn("run", F.sum(F.when(~F.col(flag) | gap, 1).otherwise(0)).over(order))
            .where(F.col(flag))
            .withColumn("lo", lo)
            .withColumn("hi", hi)
            .groupBy(*keys, "run")
            .agg(
                F.min("lo").alias("lo"),
                F.max("hi").alias("hi"),
                count([PLAIN, COMMITTED]).alias("records"),
                F.sum("size").alias("bytes"),
                F.count(F.lit(1)).alias("batches"),
                F.sort_array(F.collect_set("ple")).alias("epochs"),
                F.max("committed_hw").alias("committed_hw"),
                count([ABORTED]).alias("aborted_records"),
                count([OPEN]).alias("open_records"),
                F.count(F.when(is_marker, 1)).alias("markers"),
                F.count(F.when(is_marker & (F.col("control_type") == COMMIT), 1)).alias("commit_markers"),
                F.slice(
                    F.sort_array(F.collect_list(F.when(is_marker, marker))), 1, LOST_MARKERS_LISTED
                ).alias("lost_markers"),
                # who wrote the data records and when (batch max timestamps): the producers to ask
                F.slice(
                    F.sort_array(
                        F.collect_set(F.when(~is_marker & (F.col("producer_id") >= 0), F.col("producer_id")))
                    ),
                    1,
                    PRODUCERS_LISTED,
                ).alias("producer_ids"),
                F.min(F.when(~is_marker, F.col("max_timestamp"))).alias("first_timestamp"),
                F.max(F.when(~is_marker, F.col("max_timestamp"))).alias("last_timestamp"),
            )
            .drop("run")
            .withColumn("kind", F.lit(kind))
        )

    committed = runs(
        "c", "committed", F.col("start"), F.least(F.col("last_offset"), F.col("committed_hw") - 1)
    )
    uncommitted = runs(
        "u", "uncommitted", F.greatest(F.col("start"), F.col("committed_hw")), F.col("last_offset")
    )
    return committed.unionByName(uncommitted)


def lag_counts(candidates: DataFrame, lags: DataFrame) -> DataFrame:
    """Per lag row (a follower whose log is a prefix of the leader's, from its LEO ``from`` to the leader's
    ``to``): the leader's records, bytes and batches there and the max timestamps of the first and newest of
    those batches. The leader's batches above a follower's LEO are all in candidate chunks (the follower lacks
    them, so the chunk digests differ)."""
    leader = candidates.select(
        "tp",
        F.col("broker").alias("leader"),
        F.col("base_offset").alias("b_base"),
        F.col("last_offset").alias("b_last"),
        F.col("records_count").alias("b_records"),
        F.col("size").alias("b_size"),
        F.col("max_timestamp").alias("b_ts"),
    )
    cond = (
        (lags["tp"] == leader["tp"])
        & (lags["leader"] == leader["leader"])
        & (F.col("b_last") >= F.col("from"))
        & (F.col("b_base") < F.col("to"))
    )
    keys = [lags[c] for c in lags.columns]
    first_in = F.greatest(F.col("b_base"), F.col("from"))
    return (
        lags.join(leader, cond, "left")
        .groupBy(*keys)
        .agg(
            F.sum(F.least(F.col("b_last") - first_in + 1, F.col("b_records"))).alias("records"),
            F.sum("b_size").alias("bytes"),
            F.count("b_base").alias("batches"),
            F.min_by("b_ts", "b_base").alias("first_timestamp"),
            F.max("b_ts").alias("last_timestamp"),
        )
    )


PUSHDOWN_PARTITIONS = 500
"""Up to this many partitions with candidate chunks, the second scan filters on their offset spans so that
Parquet skips the row groups (and the cache its batches) that cannot hold them."""


def batch_columns(batch: DataFrame, chunk_bits: int) -> DataFrame:
    """What the comparisons need of the batch rows: partition key, chunk, signature, sizes, location, and the
    producer and transaction fields of the batch (its transaction state, ``txn_states``; the export). Only
    the batches of the log Kafka loads (``live``: not cut by recovery, ``auditor.kafka.recovery``) take part,
    as the replica's ``leo`` is the recovered log end offset."""
    return with_tp(batch.where(F.col("live"))).select(
        "tp",
        "broker",
        "segment",
        "position",
        "base_offset",
        "last_offset",
        "crc",
        F.col("partition_leader_epoch").alias("ple"),
        "valid",
        "records_count",
        "size",
        "max_timestamp",
        F.shiftright("base_offset", chunk_bits).alias("chunk"),
        F.xxhash64("base_offset", "last_offset", "crc", "partition_leader_epoch").alias("sig"),
        "live",
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "is_control",
        "control_type",
    )


def _prune(batch: DataFrame, chunks: DataFrame, replicas: DataFrame, chunk_bits: int) -> DataFrame:
    """The batch rows restricted, by a predicate Parquet can push down, to the offset span of the candidate
    chunks of each partition that has some (the semi-join on the chunks stays the exact filter)."""
    spans = (
        chunks.join(replicas.select("tp", "cluster", "topic", "partition").distinct(), "tp")
        .groupBy("cluster", "topic", "partition")
        .agg(F.min("chunk").alias("lo"), F.max("chunk").alias("hi"))
        .collect()
    )
    if not spans:
        return batch.where(F.lit(False))
    if len(spans) > PUSHDOWN_PARTITIONS:
        return batch
    return batch.where(_superset(spans, chunk_bits) & _spans(spans, chunk_bits))


def _superset(spans: list, chunk_bits: int) -> Column:
    """A cheap superset of :func:`_spans`, tested first on every row: the integer columns (partition, then
    one offset range) before the strings, each an ``IN`` list (most rows fail at the first test)."""
    lo = min(s["lo"] for s in spans) << chunk_bits
    hi = (max(s["hi"] for s in spans) + 1) << chunk_bits

    def among(name: str) -> Column:
        return F.col(name).isin(sorted({s[name] for s in spans}))

    in_range = (F.col("base_offset") >= lo) & (F.col("base_offset") < hi)
    return among("partition") & in_range & among("topic") & among("cluster")


def _spans(spans: list, chunk_bits: int) -> Column:
    """The offset span of the candidate chunks of each partition (a term per partition, ORed)."""
    cond = None
    for s in spans:
        term = (
            (F.col("cluster") == s["cluster"])
            & (F.col("topic") == s["topic"])
            & (F.col("partition") == s["partition"])
            & (F.col("base_offset") >= s["lo"] << chunk_bits)
            & (F.col("base_offset") < (s["hi"] + 1) << chunk_bits)
        )
        cond = term if cond is None else cond | term
    return cond


def _materialize(df: DataFrame) -> DataFrame:
    """Compute a small intermediate now and cut its lineage: later plans start from its rows, which keeps
    Spark's planning time small (the full plan of an audit is large) and guarantees it is computed once."""
    return df.localCheckpoint(eager=True)


def _cached(df: DataFrame) -> DataFrame:
    """A small input's intermediate: its lineage cut now (later plans start from its rows: short plans,
    quick to analyse) and its rows kept once the first action that needs it has computed them; no job of
    its own (a job costs more than the few rows it would compute)."""
    return df.localCheckpoint(eager=False)


def audit(tables, chunk_bits: int = CHUNK_BITS, driver: bool = False) -> AuditFrames:
    """Build every comparison of one audit. Runs the two scans of the batches (the digests, then the rows of
    the candidate chunks), the per-partition rules, the lag and loss counts and the findings now: collecting
    or saving the frames reads their materialised rows (the epoch ranges and pairs are computed then).
    ``driver``: a small input, whose Python rules run in the driver (:func:`python_rows`)."""
    K = chunk_bits
    keep = _cached if driver else _materialize
    replicas = keep(with_tp(tables.replica))
    batches = batch_columns(tables.batch, K)
    # the first full scan: signatures and ranges per (partition, broker, offset chunk, leader epoch)
    digest = keep(
        batches.groupBy("tp", "broker", "chunk", "ple").agg(
            F.expr("bit_xor(sig)").alias("x"),
            F.count(F.lit(1)).alias("n"),
            F.min("base_offset").alias("first"),
            F.max("last_offset").alias("last"),
            F.sum("records_count").alias("records"),
            F.sum("size").alias("bytes"),
            F.min("max_timestamp").alias("first_timestamp"),
            F.max("max_timestamp").alias("last_timestamp"),
        )
    )
    pairs = replica_pairs(replicas)
    # the second and last scan of the batches: the rows of the chunks where replicas are not unanimous
    chunks = keep(candidate_chunks(digest, replicas))
    candidates = keep(
        batch_columns(tables.batch if driver else _prune(tables.batch, chunks, replicas, K), K).join(
            broadcast(chunks), ["tp", "chunk"], "left_semi"
        )
    )
    records = with_tp(tables.record).select("tp", "broker", "offset", "record_hash")
    divergence = keep(
        first_divergence(candidates, pairs).unionByName(first_record_divergence(records, pairs))
    )
    epoch_ranges = digest.groupBy("tp", "broker", "ple").agg(
        F.min("first").alias("first"),
        F.max("last").alias("last"),
        F.sum("records").alias("records"),
        F.sum("bytes").alias("bytes"),
        F.sum("n").alias("batches"),
        F.min("first_timestamp").alias("first_timestamp"),
        F.max("last_timestamp").alias("last_timestamp"),
    )

    rule_out = keep(rule_inputs(tables, replicas, epoch_ranges, divergence, driver))

    def part(kind: str) -> DataFrame:
        return rule_out.where(F.col(kind).isNotNull()).select("tp", f"{kind}.*")

    summary = part("summary").drop("tp")
    zones = part("zone")
    lags = keep(lag_counts(candidates, part("lag")))
    # the whole log of the replicas holding transactional batches above their zone start (one more,
    # restricted scan): the transaction state of a lost batch is decided by markers that may lie elsewhere
    logs = keep(txn_logs(tables.batch, candidates, replicas, zones, driver))
    states = keep(txn_states(logs))  # once for the loss, the export and the election's costs
    lost = keep(lost_batches(candidates, replicas, zones, logs, states))
    loss = keep(lost_runs(candidates, replicas, zones, logs, lost))
    epochs_out = epoch_ranges.withColumnRenamed("ple", "epoch").join(
        replicas.select("tp", "broker", "cluster", "topic", "partition"), ["tp", "broker"]
    )
    findings = keep(all_findings(part("finding").drop("tp"), summary, lags, loss, driver))
    timeline = part("timeline").drop("tp")
    frames = AuditFrames(findings, summary, divergence, loss, epochs_out, pairs, lags, timeline)
    frames.extra = dict(
        batches=batches,
        candidates=candidates,
        digest=digest,
        zones=zones,
        replicas=replicas,
        txn_logs=logs,
        txn_states=states,
        lost_batches=lost,
    )
    return frames


def metadata_inputs(metadata: DataFrame, replicas: DataFrame) -> DataFrame:
    """The metadata rows each partition's rules see, with ``tp``: its partition records, and the config
    records of ``kraft.TIMELINE_CONFIGS`` that apply to it (its topic's, and the broker-level and cluster-wide
    ones, repeated for every partition of the cluster; they are few)."""
    parts = with_tp(metadata.where(F.col("partition").isNotNull()))
    configs = metadata.where(
        (F.col("record_type") == "CONFIG_RECORD") & F.col("config_name").isin(*TIMELINE_CONFIGS)
    ).drop("partition")
    keys = replicas.select("tp", "cluster", "topic", "partition").distinct()
    topic_configs = configs.where(F.col("config_resource_type") == TOPIC_RESOURCE).join(
        keys, ["cluster", "topic"]
    )
    brokers = configs.where(F.col("config_resource_type") == BROKER_RESOURCE).drop("topic")
    broker_configs = brokers.join(keys, ["cluster"])
    return parts.unionByName(topic_configs).unionByName(broker_configs)


def rule_inputs(
    tables, replicas: DataFrame, epoch_ranges: DataFrame, divergence: DataFrame, driver: bool = False
) -> DataFrame:
    """The per-partition rules over their small typed inputs (one struct column per kind of
    :data:`RULE_INPUTS`), hash-partitioned by ``tp`` so that every row of a partition meets in one call."""
    metadata = metadata_inputs(tables.metadata, replicas)
    kinds = {
        "replica": replicas,
        "epoch": with_tp(tables.epoch).select("tp", "broker", "epoch", "start_offset", "ordinal"),
        "range": epoch_ranges.select(
            "tp",
            "broker",
            F.col("ple").alias("epoch"),
            "first",
            "last",
            "records",
            "bytes",
            "batches",
            "first_timestamp",
            "last_timestamp",
        ),
        "div": divergence.select("tp", "a", "b", "lo", "hi", "offset", "mode", "detail"),
        "metadata": metadata.select("tp", *[c for c in tables.metadata.columns if c != "cluster"]),
    }
    inputs = None
    for kind, df in kinds.items():
        tagged = df.select("tp", F.struct(*[c for c in df.columns if c != "tp"]).alias(kind))
        inputs = tagged if inputs is None else inputs.unionByName(tagged, allowMissingColumns=True)
    if driver:
        return python_rows(inputs, bucket_rules, rows.RULE_OUTPUT, driver=True)
    buckets = min(RULE_BUCKETS, int(inputs.sparkSession.conf.get("spark.sql.shuffle.partitions")))
    return python_rows(inputs.repartition(buckets, "tp"), bucket_rules, rows.RULE_OUTPUT)


def all_findings(
    rule_findings: DataFrame, summary: DataFrame, lags: DataFrame, loss: DataFrame, driver: bool = False
) -> DataFrame:
    """Every finding of the audit in the ``rows.FINDING`` layout: the per-partition rules' (KA621 folded
    into one per cluster), lag (KA630) and truncation loss (KA710/KA711) from the rows Spark counted, and
    the ``cluster`` rules (KA623) over the leader sources of each cluster. The loss rules include the lost
    COMMIT/ABORT markers of each run (KA712)."""
    leaders = summary.select("cluster", "topic", "leader_source").distinct()
    offline = (
        rule_findings.where(F.col("code") == "KA621")
        .groupBy("cluster")
        .agg(
            F.sort_array(F.collect_list(F.struct("topic", "partition", "broker", "epoch"))).alias(
                "partitions"
            ),
        )
    )
    stages = [
        (offline, each(offline_finding)),  # one KA621 per cluster
        (lags, each(lag_finding)),
        (loss, _loss_findings),
        (leaders if driver else leaders.repartition("cluster"), cluster_findings),  # a cluster per call
    ]
    if driver:  # their inputs collected in one action
        from auditor.spark.arrow import on_driver_each

        python = on_driver_each(stages, rows.FINDING)
    else:
        python = None
        for df, fn in stages:
            out = python_rows(df, fn, rows.FINDING)
            python = out if python is None else python.unionByName(out)
    return rule_findings.where(F.col("code") != "KA621").unionByName(python)


def _loss_findings(runs: list[dict]) -> list[dict]:
    """The ``loss`` rules (KA710, KA711, KA712) over lost-run rows: zero or more findings per run."""
    return [f for run in runs for f in loss_findings(run)]


def offline_finding(row: dict) -> dict:
    """The KA621 of one cluster (``row``: ``cluster``, ``partitions`` sorted), worded by its rule."""
    return finding_row(REGISTRY["KA621"], offline_partitions(row["partitions"]), row["cluster"])
