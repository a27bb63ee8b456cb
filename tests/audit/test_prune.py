"""The second scan's pushed-down predicate (``compare._prune``) keeps every batch row of the candidate chunks:
restricted by it or not, the candidate rows of the session's scenarios are the same."""

from __future__ import annotations

from pyspark.sql import functions as F

from auditor.spark import compare
from auditor.spark.extract import load

CHUNK_BITS = 3
"""Small chunks, as the session's audit uses: many partitions have candidate chunks, each a narrow span."""


def _candidate_rows(batch, chunks) -> list:
    rows = compare.batch_columns(batch, CHUNK_BITS).join(F.broadcast(chunks), ["tp", "chunk"], "left_semi")
    return sorted(rows.select("tp", "broker", "base_offset", "sig").collect())


def test_pruned_scan_keeps_every_candidate_row(spark, sim_audit):
    tables = load(spark, sim_audit.inputs)
    replicas = compare.with_tp(tables.replica)
    digest = (
        compare.batch_columns(tables.batch, CHUNK_BITS)
        .groupBy("tp", "broker", "chunk", "ple")
        .agg(F.expr("bit_xor(sig)").alias("x"), F.count(F.lit(1)).alias("n"))
    )
    chunks = compare.candidate_chunks(digest, replicas).cache()
    partitions = chunks.select("tp").distinct().count()
    assert 1 < partitions <= compare.PUSHDOWN_PARTITIONS  # the predicate is built, over several partitions
    pruned = compare._prune(tables.batch, chunks, replicas, CHUNK_BITS)
    assert pruned.count() < tables.batch.count()
    whole = _candidate_rows(tables.batch, chunks)
    assert whole and _candidate_rows(pruned, chunks) == whole
    chunks.unpersist()
