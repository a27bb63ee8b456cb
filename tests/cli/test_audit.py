"""``kafka-auditor audit`` end to end (in-process, on the session SparkSession): report formats, exit codes,
``--save`` and ``--export-lost``, rule selection, evidence safety and usage errors.

``audit EXTRACTS --export-lost DIR`` on a host where the segments are not at the paths the extracts record:
one line naming the log dir, exit 2, before Spark starts, no file written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import tree_state


@pytest.fixture(scope="module")
def audited(unclean_audit):
    """One CLI audit of the simulated unclean election with every output option (``--format json --output
    --save --export-lost``): the session's ``unclean_audit`` (tests/conftest.py), shared with the tests of
    the other outputs."""
    return unclean_audit.root, unclean_audit.out, unclean_audit.result, unclean_audit.before


@pytest.mark.spark
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


@pytest.mark.spark
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


@pytest.mark.spark
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


@pytest.mark.spark
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


@pytest.mark.spark
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


EXE = str(Path(sys.executable).with_name("kafka-auditor"))


def test_export_from_extracts_whose_segments_are_elsewhere_is_refused_in_one_line(tmp_path):
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path / "c"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    extracts = []
    for broker in ("broker-1", "broker-2", "broker-3"):
        out = tmp_path / "extracts" / broker
        res = subprocess.run([EXE, "extract", str(root / broker), "--out", str(out)], capture_output=True)
        assert res.returncode == 0, res.stderr
        extracts.append(str(out))
    root.rename(tmp_path / "moved")  # the segments are no longer where the extracts say
    export = tmp_path / "lost"
    res = subprocess.run(
        [EXE, "audit", *extracts, "--export-lost", str(export)], capture_output=True, text=True
    )
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("kafka-auditor: error: --export-lost reads the lost records from the segments")
    assert str(root / "broker-") in line and "Traceback" not in res.stderr
    assert not export.exists()


@pytest.mark.spark
def test_segments_root_maps_the_recorded_log_dirs_and_the_export_is_the_same(spark, tmp_path):
    """The log dirs moved after extraction: ``--segments-root`` per broker finds them, and the export equals
    the one made while they were in place (both audits through the CLI, in-process on the session's Spark)."""
    from auditor.observe.extract import extract_log_dir
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path / "c"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    extracts = []
    for broker in ("broker-1", "broker-2", "broker-3"):
        out = tmp_path / "extracts" / broker
        extract_log_dir(root / broker, out)
        extracts.append(str(out))

    def export(to: Path, *more: str) -> list[str]:
        args = ["audit", *extracts, "--export-lost", str(to), *more, "--exit-zero", "-q"]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        return (to / "lost-records.jsonl").read_text().splitlines()

    before = export(tmp_path / "lost-before")
    moved = tmp_path / "moved"
    root.rename(moved)
    mappings = [
        a for b in (1, 2, 3) for a in ("--segments-root", f"{b}:{root}/broker-{b}={moved}/broker-{b}")
    ]
    after = export(tmp_path / "lost-after", *mappings)
    assert after and after == before
    assert '"error": null' in after[0]


def test_segments_root_malformed_or_without_export_is_one_line(tmp_path):
    for args, words in (
        (
            ["--segments-root", "nothing-to-map", "--export-lost", str(tmp_path / "x")],
            "expected [BROKER:]FROM=TO",
        ),
        (["--segments-root", "/a=/b"], "add --export-lost DIR"),
    ):
        res = subprocess.run([EXE, "audit", str(tmp_path), *args], capture_output=True, text=True)
        assert res.returncode == 2
        (line,) = res.stderr.strip().splitlines()
        assert words in line, line


def test_segment_roots_locate():
    from auditor.layout.relocate import SegmentRoots

    roots = SegmentRoots.parse(["2:/var/lib/kafka=/mnt/b2", "/var/lib/kafka/=/mnt/any", "/data=rel"])
    assert roots.locate("/var/lib/kafka/data", 2) == "/mnt/b2/data"
    assert roots.locate("/var/lib/kafka/data", 1) == "/mnt/any/data"
    assert roots.locate("/var/lib/kafka", 1) == "/mnt/any"
    assert roots.locate("/var/lib/kafkaX/data", 1) == "/var/lib/kafkaX/data"  # a prefix of a name is no match
    assert roots.locate("/data/x", None).endswith("/rel/x")
    assert SegmentRoots.parse(None).locate("/a", 1) == "/a"
