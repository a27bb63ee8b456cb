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

from collections.abc import Callable, Iterable

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
