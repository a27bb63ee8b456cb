"""``run_history`` on Spark finds exactly what the pure-Python evaluation of the same history finds, with
charts of the flagged partitions (a tiny Hive-partitioned warehouse written with pyarrow)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from auditor.observe.history_rows import TABLES, file_schema
from auditor.rules.registry import select_rules
from tests.rules.history.builders import Story
from tests.rules.history.cases_epochs import unclean_election
from tests.rules.history.cases_fleet import broker_stopped_being_captured, malformed_checkpoint
from tests.rules.history.cases_offsets import follower_lags_for_days, hw_went_back


def combined() -> Story:
    """Four histories in four clusters: the corpus's unclean election, a HW going back, lag over days and a
    broker no longer captured, plus a malformed file recorded at ingest."""
    stories = {
        "c": Story(unclean_election()),
        "d": hw_went_back(None, None),
        "e": follower_lags_for_days(None, None),
        "f": broker_stopped_being_captured(None, None),
    }
    caps = [replace(c, cluster=name, cluster_id=name) for name, s in stories.items() for c in s.captures]
    return Story(caps, problems=malformed_checkpoint(None, None).problems)


def write_warehouse(story: Story, root: Path) -> dict[str, str]:
    """The story's tables as Hive-partitioned Parquet (cluster, captureDate), as ingest writes them."""
    out = {}
    for name, rows in story.tables().items():
        if not rows:
            continue
        table = pa.Table.from_pylist(rows, schema=TABLES[name])
        path = root / name
        ds.write_dataset(
            table,
            path,
            format="parquet",
            partitioning=ds.partitioning(
                pa.schema([pa.field("cluster", pa.string()), pa.field("captureDate", pa.string())]),
                flavor="hive",
            ),
            existing_data_behavior="overwrite_or_ignore",
        )
        assert file_schema(name).names == [
            n for n in TABLES[name].names if n not in ("cluster", "captureDate")
        ]
        out[name] = str(path)
    return out


def _keys(findings) -> list[tuple]:
    return sorted(
        (f.code, f.evidence.get("cluster"), f.broker, f.topic, f.partition, f.time, f.offset_start, f.message)
        for f in findings
    )


@pytest.mark.spark
def test_spark_matches_pure_python(spark, tmp_path):
    from auditor.spark.history import run_history

    story = combined()
    tables = write_warehouse(story, tmp_path / "w")
    result = run_history(spark, tables, story.settings, partitions=3)
    expected = story.findings()
    assert _keys(result.findings) == _keys(expected)
    codes = {f.code for f in result.findings}
    assert {"KA801", "KA804", "KA805", "KA806", "KA811", "KA812"} <= codes
    assert all(f.time and f.name.startswith("history.") for f in result.findings)

    # charts: every flagged partition, each replica's HW over time and the epoch cache at each change
    flagged = {(f.evidence["cluster"], f.topic, f.partition) for f in result.findings if f.topic}
    assert {(c.cluster, c.topic, c.partition) for c in result.charts} == flagged
    ule = next(c for c in result.charts if c.cluster == "c")
    assert sorted(ule.high_watermarks) == [1, 2, 3]
    assert [hw for _t, hw in ule.high_watermarks[3]] == [1500, 1500]
    assert [cache for _t, cache in ule.epochs[3]] == [[(0, 0)], [(0, 0), (2, 1000), (3, 1500)]]
    assert [cache for _t, cache in ule.epochs[1]] == [[(0, 0), (2, 1000)]]

    latest = {(c["cluster"], c["broker"]): c for c in result.captures}
    assert len(latest) == 4 * 3 and latest[("c", 3)]["logDirs"] == ["/var/lib/kafka/data"]
    assert result.stats["captures"] == len(story.captures)
    assert result.stats["rows"] == sum(len(r) for r in story.tables().values())
    assert result.stats["partitions"] == 4

    # rule selection reaches the executors and the driver
    only = run_history(
        spark, tables, story.settings, selection=select_rules(["KA804", "KA812"]), partitions=1
    )
    assert {f.code for f in only.findings} == {"KA804", "KA812"}


@pytest.mark.spark
def test_missing_tables_are_empty(spark, tmp_path):
    from auditor.spark.history import run_history

    story = Story(unclean_election())
    tables = write_warehouse(story, tmp_path / "w")
    result = run_history(spark, {"captures": tables["captures"]}, story.settings)
    assert result.findings == [] and result.charts == []
    assert result.stats["partitions"] == 0 and len(result.captures) == 3
