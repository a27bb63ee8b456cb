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


def test_record_rows_without_offset_are_left_out_alike_on_both_paths(spark, tmp_path, monkeypatch):
    """A damaged extract's record row without its offset or hash (the extraction never writes one) compares
    with nothing on both paths: the same findings in the driver (small input) and on the executors, where the
    row once crashed the one and was dropped unseen by the other."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from auditor.observe.extract import extract_log_dir
    from auditor.observe.extract_files import kind_path
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import Inputs, discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from tests.support.handmade import write_cluster

    root = write_cluster(tmp_path / "c")
    inputs = Inputs()
    for broker_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        out = tmp_path / "x" / broker_dir.name
        extract_log_dir(broker_dir, out)
        path = kind_path(out, "record")
        table = pq.read_table(path)
        if table.num_rows:
            offsets = table.column("offset").to_pylist()
            hashes = table.column("record_hash").to_pylist()
            offsets[0], hashes[-1] = None, None
            table = table.set_column(table.schema.get_field_index("offset"), "offset", pa.array(offsets))
            hashes_at = table.schema.get_field_index("record_hash")
            table = table.set_column(hashes_at, "record_hash", pa.array(hashes, pa.int64()))
            pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)
        inputs.sources += discover([out]).sources

    def codes(result):
        return sorted((f.code, f.topic, f.partition, f.broker, f.offset_start) for f in result.findings)

    small = run_audit(spark, inputs)
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    large = run_audit(spark, inputs)
    assert small.stats["smallInput"] is True and large.stats["smallInput"] is False
    assert codes(small) == codes(large) and any(c[0] == "KA601" for c in codes(small))
