"""The second scan's pushed-down predicate (``compare._prune``) keeps every batch row of the candidate chunks
and every transactional batch: restricted by it or not, the rows the pass reads of the session's scenarios
are the same."""

from __future__ import annotations

from pyspark.sql import functions as F

from auditor.spark import compare
from auditor.spark.extract import load

CHUNK_BITS = 3
"""Small chunks, as the session's audit uses: many partitions have candidate chunks, each a narrow span."""


def _candidate_rows(batch, chunks) -> list:
    keys = chunks.select("tp", "chunk", F.lit(True).alias("candidate"))
    rows = (
        compare.batch_columns(batch, CHUNK_BITS)
        .join(F.broadcast(keys), ["tp", "chunk"], "left")
        .where(F.col("candidate").isNotNull() | F.col("is_transactional"))
    )
    return sorted(rows.select("tp", "broker", "base_offset", "sig").collect())


def test_pruned_scan_keeps_every_candidate_row(spark, sim_audit):
    tables = load(spark, sim_audit.inputs)
    replicas = compare.with_tp(tables.replica)
    digest = (
        compare.batch_columns(tables.batch, CHUNK_BITS)
        .groupBy("tp", "broker", "chunk", "leader_epoch")
        .agg(F.expr("bit_xor(sig)").alias("x"), F.count(F.lit(1)).alias("n"))
    )
    per_tp = replicas.groupBy("tp", "cluster", "topic", "partition").agg(F.count(F.lit(1)).alias("replicas"))
    chunks = compare.candidate_chunks(digest, per_tp).cache()
    partitions = chunks.select("tp").distinct().count()
    assert 1 < partitions <= compare.PUSHDOWN_PARTITIONS  # the predicate is built, over several partitions
    pruned = compare._prune(tables.batch, chunks.collect(), CHUNK_BITS)
    assert pruned.count() < tables.batch.count()
    whole = _candidate_rows(tables.batch, chunks)
    assert whole and _candidate_rows(pruned, chunks) == whole
    chunks.unpersist()
