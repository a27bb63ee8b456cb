"""Arrow rows between the driver's Python and Spark's JVM without a Python worker: how the small-input
audit (``auditor.spark.tuning``) hands its driver-side extraction to Spark and collects its inputs for the
per-partition pass in the driver, instead of ``mapInArrow`` tasks, each of which starts a Python worker per
core (about half a second each, importing pyarrow and pandas); and how any audit collects its small tables.

Both directions are pyspark 3.5's own Arrow paths (those of ``toPandas`` and of ``createDataFrame`` from
pandas), without pandas in between: Arrow record batches are written as an Arrow IPC stream to the JVM (a
file in Spark's temporary directory, or an authenticated socket when Spark's I/O encryption is on) and read
back into a DataFrame of the given schema; a DataFrame is collected as Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def tuples_frame(spark: SparkSession, tuples: list[tuple], schema: pa.Schema) -> DataFrame:
    """A small DataFrame of the driver's ``tuples`` (fields in ``schema``'s order) by :func:`frame_of`:
    broadcasting it runs no Python worker, where ``createDataFrame`` of a list pickles its rows through one
    per default-parallelism task (0.2-0.3 s each time in a warm session, up to a second in a new JVM:
    ``bench/bench_divergence_duckdb.py``)."""
    columns = list(zip(*tuples, strict=True)) if tuples else [() for _ in schema]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return frame_of(spark, [pa.RecordBatch.from_arrays(arrays, schema=schema)], schema)


def arrow_batches(df: DataFrame) -> list[pa.RecordBatch]:
    """Every row of ``df`` collected as Arrow record batches (one Spark action)."""
    return df._collect_as_arrow()


def rows_of(df: DataFrame) -> list[dict]:
    """Every row of ``df`` as the dicts ``mapInArrow`` hands a task (``RecordBatch.to_pylist``), collected
    through Arrow."""
    batches = arrow_batches(df)
    return [row for b in batches for row in b.to_pylist()]


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
