"""Transactions on Spark: :func:`auditor.kafka.transactions.classify` as a column over batch rows.

The state of a batch is decided by the next COMMIT/ABORT marker of its producer in the same replica's log
(``auditor.kafka.transactions``); here that is a window over the live batches of one replica and producer,
ordered by offset. Only partitions holding a transactional or control batch are windowed; every other batch
is plain data. ``tests/kafka/test_transactions.py`` proves the column equal to ``classify``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from auditor.kafka.transactions import ABORT, ABORTED, COMMIT, COMMITTED, CONTROL, MARKER, OPEN, PLAIN
from auditor.spark.tuning import broadcast

_LOG = ["cluster", "topic", "partition", "broker"]


def end_marker(control_type: Column | str = "control_type") -> Column:
    """A COMMIT or ABORT control batch (``transactions.is_end_marker``)."""
    ct = F.col(control_type) if isinstance(control_type, str) else control_type
    return F.col("is_control") & ct.isin(ABORT, COMMIT)


def with_txn_state(batches: DataFrame) -> DataFrame:
    """``batches`` (``rows.BATCH`` columns, any subset of replicas) plus ``txn_state``: plain, committed,
    aborted, open, marker or control for live batches, null for batches Kafka would not load."""
    keyed = F.struct(*_LOG)
    txn = (
        batches.where(F.col("live") & (F.col("is_transactional") | F.col("is_control")))
        .select(keyed.alias("log"))
        .distinct()
    )
    marked = batches.join(broadcast(txn.withColumn("txn_log", F.lit(True))), keyed == F.col("log"), "left")
    after = (
        Window.partitionBy(*_LOG, "producer_id")
        .orderBy("base_offset")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    live = F.col("live")
    in_txn_log = F.coalesce(F.col("txn_log"), F.lit(False))
    next_marker = F.first(F.when(live & end_marker(), F.col("control_type")), ignorenulls=True).over(after)
    state = (
        F.when(~live, F.lit(None).cast("string"))
        .when(end_marker(), F.lit(MARKER))
        .when(F.col("is_control"), F.lit(CONTROL))
        .when(~F.col("is_transactional"), F.lit(PLAIN))
        .when(next_marker.isNull(), F.lit(OPEN))
        .when(next_marker == COMMIT, F.lit(COMMITTED))
        .otherwise(F.lit(ABORTED))
    )
    windowed = marked.where(in_txn_log).withColumn("txn_state", state)
    plain = marked.where(~in_txn_log).withColumn(
        "txn_state", F.when(live, F.lit(PLAIN)).otherwise(F.lit(None).cast("string"))
    )
    return windowed.unionByName(plain).drop("log", "txn_log")
