"""``partition_key`` is Spark's ``xxhash64(cluster, topic, partition)``: the key the extract's batch and
record rows carry equals the one the audit works out in Spark for the rows without it."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.observe import rows
from auditor.observe.partition_key import partition_key, with_partition_key

EDGES = [
    ("", "", 0),
    ("vyF_svkNTCmuElFZJ9FAng", "orders", 3),
    (None, "t", 1),  # Spark leaves the hash as it is at a null
    ("c", None, None),
    ("ключ", "тема-🙂", -5),
    ("a" * 31, "b" * 32, 2**31 - 1),  # around XXH64's 32-byte stripes, 8- and 4-byte words
    ("x" * 33, "y" * 100, -(2**31)),
    ("k" * 7, "z" * 12, 7),
]

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)
PARTITION = st.integers(-(2**31), 2**31 - 1)


@pytest.mark.spark
def test_partition_key_is_sparks_xxhash64(spark):
    from pyspark.sql import functions as F

    cases = list(EDGES)

    @settings(max_examples=300, database=None)
    @given(TEXT, TEXT, PARTITION)
    def collect(cluster, topic, partition):
        cases.append((cluster, topic, partition))

    collect()
    df = spark.createDataFrame(cases, "cluster string, topic string, partition int")
    spark_keys = [r[0] for r in df.select(F.xxhash64("cluster", "topic", "partition")).collect()]
    assert [partition_key(*c) for c in cases] == spark_keys


def test_an_extract_file_without_the_key_gets_it():
    table = pa.table({"cluster": ["c", "c"], "topic": ["t", "u"], "partition": pa.array([0, 1], pa.int32())})
    keyed = with_partition_key(table, rows.BATCH)
    assert keyed.column("tp").to_pylist() == [partition_key("c", "t", 0), partition_key("c", "u", 1)]
    assert with_partition_key(keyed, rows.BATCH) is keyed
    assert "tp" not in with_partition_key(table, rows.EPOCH).column_names  # a kind without the key
