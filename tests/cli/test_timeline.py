"""``kafka-auditor timeline`` end to end (in-process): the JSON and JSON Lines of a simulated unclean
election parse and tell it, the text names it, and errors are one line (exit 2)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate import SimOptions, run_scenario


def test_cli_json_and_jsonl_parse(tmp_path):
    run_scenario("unclean-election", tmp_path / "c", SimOptions(records=100))
    runner = CliRunner()
    res = runner.invoke(app, ["timeline", str(tmp_path / "c"), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (cluster,) = doc["clusters"]
    (part,) = cluster["partitions"]
    assert any(c.get("unclean") and c["leaderRecoveryState"] == 1 for c in part["changes"])
    ends = [n["endOffset"] for n in cluster["nodes"]]
    assert cluster["source"]["endOffset"] == max(ends) and len(ends) == 4 and doc["errors"] == []
    res = runner.invoke(
        app, ["timeline", str(tmp_path / "c"), "-f", "jsonl", "--topic", "t0", "--partition", "0"]
    )
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert {"node", "broker", "config", "change", "epoch"} <= {line["kind"] for line in lines}
    res = runner.invoke(app, ["timeline", str(tmp_path / "c"), "-f", "text", "--topic", "nope"])
    assert res.exit_code == 0 and "no partition matches" in res.stdout
    res = runner.invoke(app, ["timeline", str(tmp_path / "c"), "-f", "text"])
    assert "UNCLEAN election" in res.stdout and "epoch 2: leader" in res.stdout


def test_cli_errors_are_one_line(tmp_path):
    res = CliRunner().invoke(app, ["timeline", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1 and "error" in res.output
    res = CliRunner().invoke(app, ["timeline", str(tmp_path), "--partition", "-1"])
    assert res.exit_code == 2
