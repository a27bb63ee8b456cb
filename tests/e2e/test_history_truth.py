"""`simulate history` -> `ingest` -> `report --warehouse`: the report finds exactly the ground truth's
findings (code, broker, topic, partition, capture time; nothing else), and a second ingest and report of the
same captures add nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.simulate.history import HistoryOptions, run_history

pytestmark = pytest.mark.spark

OPTIONS = HistoryOptions(seed=1, brokers=5, topics=2, partitions=4, days=10, format="both")
MASTER = ("--master", "local[2]")


def invoke(*args: str | Path):
    from auditor.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], env={"NO_COLOR": "1", "COLUMNS": "120"})


def key(f: dict) -> tuple:
    return (f["code"], f["broker"], f["topic"], f["partition"], f["time"])


def findings(path: Path) -> list[tuple]:
    return sorted(map(key, json.loads(path.read_text())["findings"]), key=repr)


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict:
    """Ten nights of captures as folders and archives; ingest the archives, report, ingest the same captures
    again (the folders and the archives), report, then report --all: each command once, through the CLI, in
    this order."""
    root = tmp_path_factory.mktemp("history-truth")
    out, warehouse = root / "sim", root / "warehouse"
    truth = run_history(out, OPTIONS)
    sources = (out / "dumps", out / "archives")
    result = {"truth": truth}
    result["ingest"] = invoke("ingest", out / "archives", "--into", warehouse, *MASTER)
    report = ("report", "--warehouse", warehouse, "--format", "json", *MASTER, "--output")
    result["first"] = invoke(*report, root / "first.json")
    result["again"] = invoke("ingest", *sources, "--into", warehouse, *MASTER, "--format", "json")
    result["second"] = invoke(*report, root / "second.json")
    result["all"] = invoke(*report, root / "all.json", "--all")
    result["root"] = root
    return result


def test_report_finds_exactly_the_ground_truth(runs):
    assert runs["ingest"].exit_code == 0, runs["ingest"].output
    expected = sorted(map(key, runs["truth"]["expected_findings"]), key=repr)
    assert {e[0] for e in expected} == {f"KA{n}" for n in range(801, 815)}
    for name in ("first", "all"):
        assert runs[name].exit_code == 1, runs[name].output  # findings at --fail-on (error)
        got = findings(runs["root"] / f"{name}.json")
        assert [f for f in got if f not in expected] == [], f"{name}: reported but not injected"
        assert [f for f in expected if f not in got] == [], f"{name}: injected but not reported"
        assert len(got) == len(expected)


def test_ingest_and_report_twice_report_each_finding_once(runs):
    again = runs["again"]
    assert again.exit_code == 0, again.output
    text = again.stdout
    summary = json.loads(text[text.index("{") :])
    nightly = runs["truth"]["summary"]["dumps"]
    assert summary["capturesAdded"] == 0 and summary["duplicates"] == 2 * nightly  # in a folder and a .tgz
    assert runs["second"].exit_code == 0, runs["second"].output
    assert findings(runs["root"] / "second.json") == []
