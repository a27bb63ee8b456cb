"""Cross-replica comparisons as Spark DataFrame jobs (the same code in local mode and on a cluster).

Inputs are the flat tables of :mod:`auditor.spark.extract`; every partition replica is keyed by
``tp = xxhash64(cluster, topic, partition)`` and its broker id. The batch rows (the only big table: every
complete batch in the files, CRC not checked, that is ``scan``'s job) are read twice, nothing else is big:

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
leader-epoch history, Kafka's OffsetsForLeaderEpoch truncation point) run in ``applyInPandas`` over small
tagged rows (``auditor.replication``). Truncation loss goes back to the candidate rows: from the first
divergent offset of each follower on (or the leader's LEO when the follower is merely longer), its batches are
compared with the leader's batch at the same base offset; a differing batch's records below the highest high
watermark checkpointed by a replica holding that same batch were committed and are lost when the follower
truncates, the rest is a divergent uncommitted tail.

A replica that could not be read completely (an unreadable span ``[unreadable_from, unreadable_to)`` in its
replica row, ``unreadable_to`` null when it runs to the end of the log) is compared outside that span only:
batches and records overlapping it are left out of its pairs' comparison, and a follower's batches overlapping
the leader's span are never counted as lost (the leader may hold them). Lag (KA630): for every follower whose
log is a prefix of the leader's and ends below it, the leader's batches from the follower's LEO on are counted
(records, bytes, the first and newest batch timestamps).

Small intermediates are materialised with ``localCheckpoint`` (computed once, short plans); findings come out
as rows in the ``rows.FINDING`` layout, collected with the per-replica summary in one action.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from auditor.observe import rows

CHUNK_BITS = 12
"""Offsets per digest chunk: 4096."""

FINDING_SCHEMA = rows.spark_schema(rows.FINDING)

RULES_SCHEMA = T.StructType(
    [
        T.StructField("tp", T.LongType()),
        T.StructField("kind", T.StringType()),
        T.StructField("payload", T.StringType()),
    ]
)

ZONE_SCHEMA = T.StructType(
    [
        T.StructField("broker", T.IntegerType()),
        T.StructField("leader", T.IntegerType()),
        T.StructField("leader_source", T.StringType()),
        T.StructField("from", T.LongType()),
        T.StructField("leader_unreadable_from", T.LongType()),
        T.StructField("leader_unreadable_to", T.LongType()),
    ]
)

LAG_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("log_dir", T.StringType()),
        T.StructField("leader", T.IntegerType()),
        T.StructField("leader_source", T.StringType()),
        T.StructField("from", T.LongType()),
        T.StructField("to", T.LongType()),
        T.StructField("epoch", T.IntegerType()),
        T.StructField("in_isr", T.BooleanType()),
        T.StructField("isr", T.StringType()),
    ]
)

SUMMARY_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("log_dir", T.StringType()),
        T.StructField("is_leader", T.BooleanType()),
        T.StructField("leader", T.IntegerType()),
        T.StructField("leader_source", T.StringType()),
        T.StructField("leo", T.LongType()),
        T.StructField("hw", T.LongType()),
        T.StructField("log_start", T.LongType()),
        T.StructField("recovery_point", T.LongType()),
        T.StructField("cleaner_offset", T.LongType()),
        T.StructField("latest_epoch", T.IntegerType()),
        T.StructField("max_batch_epoch", T.IntegerType()),
        T.StructField("clean_shutdown", T.BooleanType()),
        T.StructField("compacted", T.BooleanType()),
        T.StructField("tail_state", T.StringType()),
        T.StructField("tail_bytes", T.LongType()),
        T.StructField("leo_known", T.BooleanType()),
        T.StructField("unreadable_from", T.LongType()),
        T.StructField("unreadable_to", T.LongType()),
        T.StructField("unreadable", T.StringType()),
        T.StructField("divergence", T.LongType()),
        T.StructField("truncation_offset", T.LongType()),
        T.StructField("epochs", T.StringType()),
        T.StructField("kraft_leader", T.IntegerType()),
        T.StructField("kraft_leader_epoch", T.IntegerType()),
        T.StructField("kraft_isr", T.StringType()),
        T.StructField("kraft_leader_recovery_state", T.IntegerType()),
    ]
)


def with_tp(df: DataFrame) -> DataFrame:
    """Add ``tp``, the 64-bit key of a partition: ``xxhash64(cluster, topic, partition)``."""
    return df.withColumn("tp", F.xxhash64("cluster", "topic", "partition"))


RULE_BUCKETS = 64
"""Partitions are handed to the per-partition rules in this many groups (one pandas call per group, not per
partition: the per-call cost of applyInPandas dominates on thousands of small partitions)."""


def _rules(pdf: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas over the tagged rows of a bucket of partitions: every per-partition rule
    (``auditor.replication``), one partition at a time."""
    import json

    from auditor.replication import evaluate_rows

    by_tp: dict[int, list[dict]] = {}
    for tp, kind, payload in zip(pdf["tp"], pdf["kind"], pdf["payload"], strict=True):
        by_tp.setdefault(int(tp), []).append(dict(json.loads(payload), kind=kind))
    rows_out = []
    for tp, tagged in by_tp.items():
        out = evaluate_rows(tagged)
        rows_out += [(tp, "finding", json.dumps(f)) for f in out.findings]
        rows_out += [(tp, "zone", json.dumps(x)) for x in out.zones]
        rows_out += [(tp, "summary", json.dumps(x)) for x in out.summary]
        rows_out += [(tp, "timeline", json.dumps(x)) for x in out.timeline]
        rows_out += [(tp, "lag", json.dumps(x)) for x in out.lags]
    return pd.DataFrame(rows_out, columns=["tp", "kind", "payload"])


@dataclass
class AuditFrames:
    """Every intermediate and final DataFrame of one audit (``--save`` writes them as Parquet)."""

    findings: DataFrame
    replicas: DataFrame  # one row per replica: leader, LEO, HW, divergence, truncation point, loss
    divergence: DataFrame  # first divergent offset per replica pair
    lost_ranges: DataFrame  # committed / uncommitted offset runs a follower holds and the leader does not
    epochs: DataFrame  # per replica and leader epoch: offsets and records in the batches
    pairs: DataFrame
    results: DataFrame  # (kind, payload JSON): finding, summary, timeline and loss rows, collected at once
    extra: dict = field(default_factory=dict)

    def saveable(self) -> dict[str, DataFrame]:
        return {
            "findings": self.findings,
            "replicas": self.replicas,
            "divergence": self.divergence,
            "lost_ranges": self.lost_ranges,
            "epochs": self.epochs,
            "pairs": self.pairs,
        }


def _json_rows(df: DataFrame, kind: str, *columns) -> DataFrame:
    return df.select("tp", F.lit(kind).alias("kind"), F.to_json(F.struct(*columns)).alias("payload"))


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
        .join(F.broadcast(n_replicas), "tp")
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


def first_divergence(candidates: DataFrame, pairs: DataFrame) -> DataFrame:
    """First offset where each replica pair (mode ``batch``) disagrees inside its common range, from the
    batches of the candidate chunks only, outside what either replica could not read."""
    batch_pairs = pairs.where((F.col("mode") == "batch") & (F.col("lo") < F.col("hi"))).select(
        "tp", "a", "b", "lo", "hi", "ua_from", "ua_to", "ub_from", "ub_to"
    )
    at = F.struct("last_offset", "ple", "crc", "valid")
    is_a = F.col("broker") == F.col("a")
    is_b = F.col("broker") == F.col("b")
    return (
        candidates.join(F.broadcast(batch_pairs), "tp")
        .where((is_a | is_b) & (F.col("base_offset") < F.col("hi")) & (F.col("last_offset") >= F.col("lo")))
        .where(_readable(F.col("base_offset"), F.col("last_offset")))
        .groupBy("tp", "a", "b", "lo", "hi", "base_offset")
        .agg(
            F.max(F.when(is_a, F.col("sig"))).alias("sa"),
            F.max(F.when(is_b, F.col("sig"))).alias("sb"),
            F.max(F.when(is_a, at)).alias("at_a"),
            F.max(F.when(is_b, at)).alias("at_b"),
        )
        .where(~F.col("sa").eqNullSafe(F.col("sb")))
        .groupBy("tp", "a", "b", "lo", "hi")
        .agg(F.min(F.struct("base_offset", "at_a", "at_b")).alias("first"))
        .select(
            "tp",
            "a",
            "b",
            "lo",
            "hi",
            F.greatest(F.col("first.base_offset"), F.col("lo")).alias("offset"),
            F.lit("batch").alias("mode"),
            F.to_json(
                F.struct(
                    F.col("first.base_offset").alias("base_offset"),
                    F.col("first.at_a").alias("a"),
                    F.col("first.at_b").alias("b"),
                )
            ).alias("detail"),
        )
    )


def first_record_divergence(records: DataFrame, pairs: DataFrame) -> DataFrame:
    """Compacted partitions: first offset where a pair holds different records, or where one replica lacks a
    record at or above the other's cleaner offset (below it the cleaner may have removed it)."""
    record_pairs = pairs.where((F.col("mode") == "record") & (F.col("lo") < F.col("hi"))).select(
        "tp",
        "a",
        "b",
        "lo",
        "hi",
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
        records.join(F.broadcast(record_pairs), "tp")
        .where((is_a | is_b) & (F.col("offset") >= F.col("lo")) & (F.col("offset") < F.col("hi")))
        .where(_readable(F.col("offset"), F.col("offset")))
        .groupBy("tp", "a", "b", "lo", "hi", "offset", "cleaner_offset_a", "cleaner_offset_b")
        .agg(
            F.max(F.when(is_a, F.col("record_hash"))).alias("ha"),
            F.max(F.when(is_b, F.col("record_hash"))).alias("hb"),
        )
        .where(
            (ha.isNotNull() & hb.isNotNull() & (ha != hb))
            | (ha.isNotNull() & hb.isNull() & (F.col("offset") >= F.coalesce("cleaner_offset_b", F.lit(-1))))
            | (hb.isNotNull() & ha.isNull() & (F.col("offset") >= F.coalesce("cleaner_offset_a", F.lit(-1))))
        )
        .groupBy("tp", "a", "b", "lo", "hi")
        .agg(F.min(F.struct("offset", "ha", "hb")).alias("first"))
        .select(
            "tp",
            "a",
            "b",
            "lo",
            "hi",
            F.col("first.offset").alias("offset"),
            F.lit("record").alias("mode"),
            F.to_json(F.struct(F.col("first.ha").alias("hash_a"), F.col("first.hb").alias("hash_b"))).alias(
                "detail"
            ),
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
    a = replicas.select("tp", *[F.col(c).alias(f"{c}_a") for c in cols])
    b = replicas.select("tp", *[F.col(c).alias(f"{c}_b") for c in cols])
    compacted = F.col("compacted_a") | F.col("compacted_b")
    with_records = F.col("has_records_a") & F.col("has_records_b")
    base_lo = F.greatest("log_start_a", "log_start_b")
    return (
        a.join(b, "tp")
        .where(F.col("broker_a") < F.col("broker_b"))
        .select(
            "tp",
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


def lost_batches(batches: DataFrame, replicas: DataFrame, zones: DataFrame) -> DataFrame:
    """Follower batches from the zone start on, each compared with the leader's batch at the same base
    offset; ``committed_hw``: the highest HW checkpointed by any replica holding that same batch; ``start``:
    the first offset of the batch from which this replica differs from the leader."""
    zone = zones.groupBy("tp").agg(
        F.min("from").alias("zone_lo"),
        F.first("leader").alias("leader"),
        F.first("leader_source").alias("leader_source"),
        F.first("leader_unreadable_from").alias("lu_from"),
        F.first("leader_unreadable_to").alias("lu_to"),
    )
    own = zones.select("tp", "broker", F.col("from").alias("own_from"))
    z = batches.join(F.broadcast(zone), "tp").where(F.col("last_offset") >= F.col("zone_lo"))
    z = z.join(
        replicas.select(
            "tp", "broker", F.coalesce("hw", F.lit(0)).alias("hw"), "log_dir", "cluster", "topic", "partition"
        ),
        ["tp", "broker"],
    ).join(F.broadcast(own), ["tp", "broker"], "left")
    # where this replica's own difference starts inside the batch (a record offset in compacted partitions)
    start = F.greatest(F.col("base_offset"), F.coalesce(F.col("own_from"), F.col("base_offset")))
    same_batch = Window.partitionBy("tp", "base_offset", "sig")
    same_offset = Window.partitionBy("tp", "base_offset")
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


def lost_runs(batches: DataFrame, replicas: DataFrame, zones: DataFrame) -> DataFrame:
    """Runs of consecutive differing follower batches: ``committed`` (records below ``committed_hw``) and
    ``uncommitted`` (the rest), with records, bytes, batches and leader epochs."""
    by_offset = Window.partitionBy("tp", "broker").orderBy("base_offset")
    lb = lost_batches(batches, replicas, zones).withColumn("prev_last", F.lag("last_offset").over(by_offset))
    order = by_offset.rowsBetween(Window.unboundedPreceding, 0)
    keys = ["tp", "cluster", "topic", "partition", "broker", "log_dir", "leader", "leader_source"]
    # a run ends at a batch that does not qualify, or at a gap (the batches in between are identical on the
    # leader: their chunks were never candidates)
    gap = F.col("prev_last").isNull() | (F.col("base_offset") != F.col("prev_last") + 1)

    def runs(flag: str, kind: str, lo, hi) -> DataFrame:
        return (
            lb.withColumn("run", F.sum(F.when(~F.col(flag) | gap, 1).otherwise(0)).over(order))
            .where(F.col(flag))
            .withColumn("lo", lo)
            .withColumn("hi", hi)
            .groupBy(*keys, "run")
            .agg(
                F.min("lo").alias("lo"),
                F.max("hi").alias("hi"),
                F.sum(F.least(F.col("hi") - F.col("lo") + 1, F.col("records_count"))).alias("records"),
                F.sum("size").alias("bytes"),
                F.count(F.lit(1)).alias("batches"),
                F.sort_array(F.collect_set("ple")).alias("epochs"),
                F.max("committed_hw").alias("committed_hw"),
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
    """What the comparisons need of the batch rows: partition key, chunk, signature, sizes, location."""
    return with_tp(batch).select(
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
    return batch.where(cond)


def _materialize(df: DataFrame) -> DataFrame:
    """Compute a small intermediate now and cut its lineage: later plans start from its rows, which keeps
    Spark's planning time small (the full plan of an audit is large) and guarantees it is computed once."""
    return df.localCheckpoint(eager=True)


def audit(tables, chunk_bits: int = CHUNK_BITS) -> AuditFrames:
    """Build every comparison of one audit. Runs the two scans of the batches (the digests, then the rows of
    the candidate chunks) and the per-partition rules now; the rest runs when ``results`` is collected."""
    K = chunk_bits
    replicas = _materialize(with_tp(tables.replica))
    batches = batch_columns(tables.batch, K)
    # the first full scan: signatures and ranges per (partition, broker, offset chunk, leader epoch)
    digest = _materialize(
        batches.groupBy("tp", "broker", "chunk", "ple").agg(
            F.expr("bit_xor(sig)").alias("x"),
            F.count(F.lit(1)).alias("n"),
            F.min("base_offset").alias("first"),
            F.max("last_offset").alias("last"),
            F.sum("records_count").alias("records"),
            F.sum("size").alias("bytes"),
        )
    )
    pairs = replica_pairs(replicas)
    # the second and last scan of the batches: the rows of the chunks where replicas are not unanimous
    chunks = _materialize(candidate_chunks(digest, replicas))
    candidates = _materialize(
        batch_columns(_prune(tables.batch, chunks, replicas, K), K).join(
            F.broadcast(chunks), ["tp", "chunk"], "left_semi"
        )
    )
    records = with_tp(tables.record).select("tp", "broker", "offset", "record_hash")
    divergence = first_divergence(candidates, pairs).unionByName(first_record_divergence(records, pairs))
    epoch_ranges = digest.groupBy("tp", "broker", "ple").agg(
        F.min("first").alias("first"),
        F.max("last").alias("last"),
        F.sum("records").alias("records"),
        F.sum("bytes").alias("bytes"),
        F.sum("n").alias("batches"),
    )

    # every small per-partition input, tagged, in one group per partition
    replica_cols = [c for c in replicas.columns if c != "tp"]
    metadata = with_tp(tables.metadata.where(F.col("partition").isNotNull()))
    tagged = (
        _json_rows(replicas, "replica", *replica_cols)
        .unionByName(_json_rows(with_tp(tables.epoch), "epoch", "broker", "epoch", "start_offset", "ordinal"))
        .unionByName(
            _json_rows(
                epoch_ranges,
                "range",
                "broker",
                F.col("ple").alias("epoch"),
                "first",
                "last",
                "records",
                "bytes",
                "batches",
            )
        )
        .unionByName(_json_rows(divergence, "div", "a", "b", "lo", "hi", "offset", "mode", "detail"))
        .unionByName(
            _json_rows(metadata, "metadata", *[c for c in tables.metadata.columns if c != "cluster"])
        )
    )
    rule_out = _materialize(
        tagged.groupBy(F.pmod(F.col("tp"), F.lit(RULE_BUCKETS)).alias("bucket")).applyInPandas(
            _rules, RULES_SCHEMA
        )
    )

    def part(kind: str, schema: T.StructType) -> DataFrame:
        return rule_out.where(F.col("kind") == kind).select("tp", F.from_json("payload", schema).alias("r"))

    rule_findings = part("finding", FINDING_SCHEMA).select("r.*")
    summary = part("summary", SUMMARY_SCHEMA).select("r.*")
    zones = part("zone", ZONE_SCHEMA).select("tp", "r.*")
    lags = lag_counts(candidates, part("lag", LAG_SCHEMA).select("tp", "r.*"))
    runs = lost_runs(candidates, replicas, zones)
    loss = runs

    def loss_finding(kind: str, code: str, severity: str, text) -> DataFrame:
        df = loss.where(F.col("kind") == kind)
        return df.select(
            "cluster",
            F.lit(code).alias("code"),
            F.lit(severity).alias("severity"),
            "topic",
            "partition",
            "broker",
            F.col("leader").alias("peer"),
            "log_dir",
            F.col("lo").alias("offset_start"),
            F.col("hi").alias("offset_end"),
            F.when(F.size("epochs") == 1, F.col("epochs")[0]).cast("int").alias("epoch"),
            F.col("records").cast("long").alias("records"),
            F.col("bytes").cast("long").alias("bytes"),
            text.alias("message"),
            F.to_json(F.struct("epochs", "leader_source", "committed_hw", "batches")).alias("evidence"),
        )

    committed = loss_finding(
        "committed",
        "KA710",
        "critical",
        F.format_string(
            "%d committed records (offsets %d..%d; %d bytes in %d batches; high watermark %d was "
            "checkpointed by "
            "a replica holding them) are on broker %d but absent from or different on the current leader %d "
            "(%s): they are lost when broker %d truncates",
            "records",
            "lo",
            "hi",
            "bytes",
            "batches",
            "committed_hw",
            "broker",
            "leader",
            "leader_source",
            "broker",
        ),
    )
    uncommitted = loss_finding(
        "uncommitted",
        "KA711",
        "warning",
        F.format_string(
            "divergent uncommitted tail: %d records (offsets %d..%d, at or above the high watermarks of the "
            "replicas holding them) on broker %d are not on the current leader %d and will be truncated",
            "records",
            "lo",
            "hi",
            "broker",
            "leader",
        ),
    )
    findings = rule_findings.unionByName(committed).unionByName(uncommitted)
    epochs_out = epoch_ranges.withColumnRenamed("ple", "epoch").join(
        replicas.select("tp", "broker", "cluster", "topic", "partition"), ["tp", "broker"]
    )
    results = (
        findings.select(
            F.lit("finding").alias("kind"), F.to_json(F.struct(*findings.columns)).alias("payload")
        )
        .unionByName(rule_out.where(F.col("kind").isin("summary", "timeline")).select("kind", "payload"))
        .unionByName(
            loss.select(
                F.lit("loss").alias("kind"),
                F.to_json(F.struct(*[c for c in loss.columns if c != "tp"])).alias("payload"),
            )
        )
        .unionByName(
            lags.select(
                F.lit("lag").alias("kind"),
                F.to_json(F.struct(*[c for c in lags.columns if c != "tp"])).alias("payload"),
            )
        )
    )
    return AuditFrames(
        results=results,
        findings=findings,
        replicas=summary,
        divergence=divergence,
        lost_ranges=loss,
        epochs=epochs_out,
        pairs=pairs,
        extra={
            "batches": batches,
            "candidates": candidates,
            "digest": digest,
            "zones": zones,
            "lags": lags,
            "replicas": replicas,
        },
    )
