"""``audit --save``: the tables the Spark job computed, each joinable back on (cluster, topic, partition), the
findings table holding exactly the findings of the report (issue 9, point 5)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding
from auditor.rules.registry import REGISTRY, load_rules
from auditor.simulate import SimOptions, run_scenario

pytestmark = pytest.mark.spark

TABLES = ("findings", "replicas", "divergence", "pairs", "lost", "epochs", "lags", "timeline")
KEYS = ("cluster", "topic", "partition")


@pytest.fixture(scope="module")
def saved(spark, tmp_path_factory):
    """One CLI audit of a simulated unclean election (divergence, committed loss, a lagging follower) with
    ``--save``: the report and every saved table as Python rows."""
    root = tmp_path_factory.mktemp("save") / "ule"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    out = root.parent
    report = ["--format", "json", "--output", str(out / "report.json")]
    result = CliRunner().invoke(app, ["audit", str(root), *report, "--save", str(out / "s")])
    assert result.exit_code == 1, result.output
    tables = {name: pq.read_table(out / "s" / name) for name in TABLES}
    return json.loads((out / "report.json").read_text()), tables


def test_every_saved_table_joins_back_on_cluster_topic_partition(saved):
    _report, tables = saved
    for name, table in tables.items():
        assert set(KEYS) <= set(table.column_names), name
        assert "tp" not in table.column_names, name
    for name in ("replicas", "divergence", "pairs", "lost", "epochs", "timeline"):
        assert tables[name].num_rows > 0, name
        assert None not in tables[name].column("partition").to_pylist(), name


def test_saved_findings_are_the_reported_findings(saved):
    report, tables = saved
    load_rules()
    rows = tables["findings"].to_pylist()
    from_table = [Finding.from_row(r, REGISTRY[r["code"]].name).to_dict() for r in rows]

    def order(d: dict) -> str:
        return json.dumps(d, sort_keys=True)

    assert sorted(from_table, key=order) == sorted(report["findings"], key=order)
    assert {"KA601", "KA620", "KA710"} <= {r["code"] for r in rows}
    assert all(r["severity"] == REGISTRY[r["code"]].severity.label for r in rows if r["code"] == "KA710")


def test_pairs_and_divergence_join_the_replicas(saved):
    _report, tables = saved
    replicas = {tuple(r[k] for k in (*KEYS, "broker")) for r in tables["replicas"].to_pylist()}
    for name in ("pairs", "divergence"):
        for row in tables[name].to_pylist():
            for side in ("a", "b"):
                assert (row["cluster"], row["topic"], row["partition"], row[side]) in replicas, (name, row)
    divergence = {(r["topic"], r["partition"], r["a"], r["b"]) for r in tables["divergence"].to_pylist()}
    reported = {
        (f["topic"], f["partition"], f["broker"], f["evidence"]["peer"])
        for f in saved[0]["findings"]
        if f["code"] == "KA601"
    }
    assert divergence == reported
    detail = next(r["detail"] for r in tables["divergence"].to_pylist() if r["mode"] == "batch")
    assert set(detail) == {"base_offset", "a", "b", "hash_a", "hash_b"} and detail["base_offset"] is not None
