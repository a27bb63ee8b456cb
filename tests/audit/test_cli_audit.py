"""``kafka-auditor audit`` end to end (in-process, on the session SparkSession): report formats, exit codes,
``--save`` and ``--export-lost``, rule selection, evidence safety and usage errors."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import tree_state

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def audited(unclean_audit):
    """One CLI audit of the simulated unclean election with every output option (``--format json --output
    --save --export-lost``): the session's ``unclean_audit`` (tests/conftest.py), shared with the tests of
    the other outputs."""
    return unclean_audit.root, unclean_audit.out, unclean_audit.result, unclean_audit.before


def test_exit_code_and_json_report(audited):
    root, out, result, before = audited
    assert result.exit_code == 1, result.output
    doc = json.loads((out / "report.json").read_text())
    assert doc["command"] == "audit" and doc["schemaVersion"] == 2 and doc["exitCode"] == 1
    codes = {f["code"] for f in doc["findings"]}
    assert {"KA601", "KA620", "KA702", "KA704", "KA710"} <= codes
    lost = next(f for f in doc["findings"] if f["code"] == "KA710")
    assert lost["severity"] == "critical" and lost["name"] == "replication.committed-loss"
    assert (lost["offsetStart"], lost["offsetEnd"], lost["evidence"]["records"]) == (500, 749, 250)
    rows = [p for p in doc["partitions"] if p["topic"] == "t0"]
    assert {p["broker"]: p["role"] for p in rows} == {1: "follower", 2: "leader", 3: "follower"}
    assert next(p for p in rows if p["broker"] == 1)["lostRecords"] == 250
    assert any(p.get("timeline") for p in rows)
    assert tree_state(root) == before  # evidence untouched, nothing created


def test_save_and_export(audited):
    _root, out, _result, _ = audited
    saved = out / "saved"
    assert {p.name for p in saved.iterdir()} >= {
        "findings",
        "replicas",
        "divergence",
        "lost",
        "epochs",
        "pairs",
        "lags",
        "timeline",
        "extract",
    }
    findings = pq.read_table(saved / "findings").to_pylist()
    assert {f["code"] for f in findings} >= {"KA601", "KA710"}
    lost = [json.loads(line) for line in (out / "lost" / "lost-records.jsonl").read_text().splitlines()]
    assert [r["offset"] for r in lost] == list(range(500, 750))
    assert all(r["holders"] == [1] and r["keyEncoding"] == "utf8" for r in lost)
    table = pq.read_table(out / "lost" / "lost-records.parquet")
    assert table.num_rows == 250 and table.column("value")[0].as_py().decode() == lost[0]["value"]


def test_saved_extract_is_an_audit_input(audited):
    """``--save DIR/extract`` is an extract directory (``<kind>.parquet/`` part files written by Spark, the
    schema version in their footers): ``audit`` accepts it as a ROOT, and it holds every row of every input,
    as ``extract`` makes them."""
    from auditor.observe import rows
    from auditor.observe.extract import extract_tables
    from auditor.observe.extract_files import read_extract
    from auditor.spark.inputs import check_inputs, discover

    root, out, _result, _ = audited
    saved = out / "saved" / "extract"
    assert sorted(p.name for p in saved.iterdir()) == sorted(f"{kind}.parquet" for kind in rows.TABLES)
    found = discover([saved])
    assert [s.kind for s in found.sources] == ["parquet"] and not found.problems
    assert check_inputs(found) == []
    back = read_extract(saved)
    direct = [extract_tables(d) for d in sorted(root.iterdir()) if d.is_dir()]

    def canonical(tables) -> list[str]:
        return sorted(json.dumps(r, sort_keys=True) for t in tables for r in t.to_pylist())

    for kind in rows.TABLES:
        assert canonical([back[kind]]) == canonical([d[kind] for d in direct]), kind
    assert back["batch"].num_rows and back["replica"].num_rows and back["epoch"].num_rows


def test_text_and_html_reports_show_replicas_and_timeline(corpus_audit):
    """Rendered from the corpus audit already computed (no further Spark job)."""
    import io

    from auditor.cli.audit import build_report
    from auditor.cli.report_options import ReportOptions
    from auditor.report import render
    from auditor.rules.registry import AUDIT_SCOPES, select_rules
    from auditor.spark.inputs import Inputs

    selection = select_rules(None, ["KA704"], scopes=AUDIT_SCOPES)
    report = build_report(corpus_audit, selection, Inputs(), ReportOptions(exit_zero=True))
    assert report.exit_code == 0 and report.failing
    buf = io.StringIO()
    render(report, "text", buf, color=False, width=160)
    text = buf.getvalue()
    assert "ule-0 · leader 1 (KRaft metadata) · cluster ule-before" in text
    assert "Epoch timeline" in text and "(0,0) (2,1000)" in text
    assert "KA710" in text and "KA704" not in text
    assert "exit 0 (--exit-zero)" in text
    html = io.StringIO()
    render(report, "html", html)
    assert "<title>kafka-auditor audit report</title>" in html.getvalue()


def test_usage_errors_exit_2(tmp_path, sim_root):
    runner = CliRunner()
    assert runner.invoke(app, ["audit"]).exit_code == 2
    assert runner.invoke(app, ["audit", str(tmp_path / "nope")]).exit_code == 2
    assert runner.invoke(app, ["audit", str(tmp_path)]).exit_code == 2  # nothing Kafka in it
    root = sim_root[0] / "clean-1"
    assert runner.invoke(app, ["audit", str(root), "--select", "KA999"]).exit_code == 2
    inside = runner.invoke(app, ["audit", str(root), "--output", str(root / "broker-1" / "r.json")])
    assert inside.exit_code == 2 and not (root / "broker-1" / "r.json").exists()
    assert runner.invoke(app, ["audit", str(root), "--save", str(root / "saved")]).exit_code == 2
    assert not os.path.exists(root / "saved")
