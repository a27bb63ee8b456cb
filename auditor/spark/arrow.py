"""Arrow rows between the driver's Python and Spark's JVM without a Python worker: what the small-input
audit (``auditor.spark.tuning``) uses to run its Python stages (extraction, per-partition rules) on the
driver instead of in ``mapInArrow`` tasks, each of which starts a Python worker per core (about half a
second each, importing pyarrow and pandas).

Both directions are pyspark 3.5's own Arrow paths (those of ``toPandas`` and of ``createDataFrame`` from
pandas), without pandas in between: Arrow record batches are written as an Arrow IPC stream to the JVM (a
file in Spark's temporary directory, or an authenticated socket when Spark's I/O encryption is on) and read
back into a DataFrame of the given schema; a DataFrame is collected as Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.serializers import ArrowStreamSerializer
from pyspark.sql.types import StructType


def frame_of(spark: SparkSession, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> DataFrame:
    """A DataFrame of ``batches`` (every one of Arrow ``schema``), made in the JVM from their Arrow IPC
    stream: no Python worker, no row-by-row conversion."""
    from auditor.observe import rows

    data = [b for b in batches if b.num_rows] or [pa.RecordBatch.from_pylist([], schema=schema)]
    sc, jvm = spark.sparkContext, spark.sparkContext._jvm
    spark_schema: StructType = rows.spark_schema(schema)
    jiter = sc._serialize_to_jvm(
        data,
        ArrowStreamSerializer(),
        jvm.PythonSQLUtils.readArrowStreamFromFile,
        jvm.ArrowIteratorServer,
    )
    jdf = jvm.PythonSQLUtils.toDataFrame(jiter, spark_schema.json(), spark._jsparkSession)
    return DataFrame(jdf, spark)


def rows_of(df: DataFrame) -> list[dict]:
    """Every row of ``df`` as the dicts ``mapInArrow`` hands a task (``RecordBatch.to_pylist``), collected
    through Arrow."""
    batches = df._collect_as_arrow()
    return [row for b in batches for row in b.to_pylist()]


def on_driver(df: DataFrame, fn: Callable[[list[dict]], list[dict]], schema: pa.Schema) -> DataFrame:
    """``fn`` over every row of ``df`` at once, in the driver's Python: the DataFrame of what it returns
    (Arrow ``schema``). The small-input counterpart of ``compare.python_rows``: one call sees all the rows,
    so ``fn`` must accept any grouping of them that keeps a key's rows together."""
    out = pa.RecordBatch.from_pylist(fn(rows_of(df)), schema=schema)
    return frame_of(df.sparkSession, [out], schema)


def collect_tables(tables: Mapping[str, DataFrame]) -> dict[str, list[dict]]:
    """The rows of several small DataFrames in one Spark action: each becomes one struct column of a union
    (every row holds one of them), collected through Arrow (:func:`rows_of`) and split again by name. The
    DataFrames' stages run in one job, and the plans they share are planned once."""
    from pyspark.sql import functions as F

    union = None
    for name, df in tables.items():
        tagged = df.select(F.struct(*[F.col(f"`{c}`") for c in df.columns]).alias(name))
        union = tagged if union is None else union.unionByName(tagged, allowMissingColumns=True)
    out: dict[str, list[dict]] = {name: [] for name in tables}
    if union is None:
        return out
    for row in rows_of(union):
        name = next(n for n, value in row.items() if value is not None)
        out[name].append(row[name])
    return out


def on_driver_each(
    stages: Sequence[tuple[DataFrame, Callable[[list[dict]], list[dict]]]], schema: pa.Schema
) -> DataFrame:
    """:func:`on_driver` over several inputs at once: every ``(df, fn)`` of ``stages`` is ``fn`` over all the
    rows of its ``df``; their inputs are collected in one Spark action (:func:`collect_tables`) and what they
    return is one DataFrame (Arrow ``schema``)."""
    got = collect_tables({f"in{i}": df for i, (df, _) in enumerate(stages)})
    out = [r for i, (_, fn) in enumerate(stages) for r in fn(got[f"in{i}"])]
    spark = stages[0][0].sparkSession
    return frame_of(spark, [pa.RecordBatch.from_pylist(out, schema=schema)], schema)
