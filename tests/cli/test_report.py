"""``kafka-auditor report --warehouse`` end to end on a small warehouse written with pyarrow in the
warehouse's layout (committed through :class:`auditor.layout.warehouse.Warehouse`): the old leader's high
watermark goes backwards after an unclean election. Reported once (the warehouse remembers), ``--all`` shows
it again, a baseline suppresses it, every format agrees; usage errors are one line and exit 2 before Spark."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from auditor.cli import app
from auditor.layout.warehouse import Warehouse, new_ingest_id
from auditor.observe.history_rows import TABLES
from auditor.report.page import VOID

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, nightly captures at 02:00
NIGHTS = [T0 + i * DAY + 2 * 3_600_000 for i in range(3)]
SVG = "http://www.w3.org/2000/svg"
# broker -> per night: (HW of orders-0, leader-epoch-checkpoint entries)
HISTORY = {
    1: [(900, [(0, 0)]), (1300, [(0, 0), (2, 1000)]), (1600, [(0, 0), (2, 1000)])],
    3: [(1000, [(0, 0)]), (1500, [(0, 0)]), (1300, [(0, 0), (2, 1000), (3, 1500)])],
}
QUIET = 40  # partition quiet-0: the same on both brokers every night


def _capture_rows(broker: int, night: int) -> dict[str, list[dict]]:
    t = NIGHTS[night]
    key = {
        "captureId": f"{broker}-{night}",
        "cluster": "c",
        "broker": broker,
        "logDir": "/var/lib/kafka/data",
        "captureTime": dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc),
        "captureDate": dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc).strftime("%Y-%m-%d"),
    }
    hw, epochs = HISTORY[broker][night]
    return {
        "captures": [
            {
                **key,
                "source": f"/dumps/broker-{broker}-{night}.tgz",
                "root": "",
                "timeSource": "name",
                "files": 8,
                "bytes": 500,
                "partitionDirs": 2,
                "problems": 0,
                "cleanShutdown": False,
                "brokerStartTime": dt.datetime.fromtimestamp(T0 / 1000, dt.timezone.utc),
                "ingestId": "test",
                "ingestedAt": dt.datetime.fromtimestamp((NIGHTS[-1] + 3_600_000) / 1000, dt.timezone.utc),
            }
        ],
        "brokers": [
            {**key, "version": 1, "nodeId": broker, "clusterId": "c", "directoryId": f"dir-{broker}"}
        ],
        "partitions": [
            {**key, "topic": topic, "partition": 0, "directory": f"{topic}-0", "topicId": f"id-{topic}"}
            for topic in ("orders", "quiet")
        ],
        "high_watermarks": [
            {**key, "topic": "orders", "partition": 0, "offset": hw, "line": 3},
            {**key, "topic": "quiet", "partition": 0, "offset": QUIET, "line": 4},
        ],
        "recovery_points": [
            {**key, "topic": topic, "partition": 0, "offset": off, "line": 3}
            for topic, off in (("orders", hw), ("quiet", QUIET))
        ],
        "log_start_offsets": [
            {**key, "topic": topic, "partition": 0, "offset": 0, "line": 3} for topic in ("orders", "quiet")
        ],
        "leader_epochs": [
            {
                **key,
                "topic": "orders",
                "partition": 0,
                "epoch": e,
                "startOffset": s,
                "position": i,
                "line": 3 + i,
            }
            for i, (e, s) in enumerate(epochs)
        ]
        + [{**key, "topic": "quiet", "partition": 0, "epoch": 0, "startOffset": 0, "position": 0, "line": 3}],
    }


def build_warehouse(root: Path) -> Path:
    """Six captures (two brokers, three nights) committed as one ingest."""
    rows: dict[str, list[dict]] = {}
    for broker in HISTORY:
        for night in range(len(NIGHTS)):
            for table, part in _capture_rows(broker, night).items():
                rows.setdefault(table, []).extend(part)
    wh = Warehouse.open(root, create=True)
    ingest_id = new_ingest_id(NIGHTS[-1] + 3_600_000)
    with wh.lock():  # taking the lock clears staging: stage under it
        staging = wh.staging(ingest_id)
        for table, table_rows in rows.items():
            pads.write_dataset(
                pa.Table.from_pylist(table_rows, schema=TABLES[table]),
                staging / table,
                format="parquet",
                partitioning=["cluster", "captureDate"],
                partitioning_flavor="hive",
                basename_template=f"part-{ingest_id}-{table}{{i}}.parquet",
            )
        wh.commit(ingest_id, sorted(staging.rglob("*.parquet")))
        wh.record_ingest(
            {"id": ingest_id, "startMs": NIGHTS[-1] + 3_600_000, "endMs": NIGHTS[-1] + 3_660_000}
        )
    return wh.path


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return build_warehouse(tmp_path_factory.mktemp("wh") / "warehouse")


def run(*args: str):
    return CliRunner().invoke(app, ["report", *args], env={"NO_COLOR": "1", "COLUMNS": "120"})


# ----------------------------------------------------------------------------- usage errors (no Spark)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "missing --warehouse"),
        (["--since", "yesterday"], "--since 'yesterday'"),
        (["--lag-duration", "3 days"], "--lag-duration '3 days'"),
        (["--missing-after", "12"], "--missing-after '12'"),
        (["--select", "KA999"], "KA999"),
        (["--baseline", "/nonexistent/baseline.json"], "--baseline /nonexistent/baseline.json"),
    ],
)
def test_usage_errors_are_one_line(warehouse, args, expected):
    full = args if not args else ["--warehouse", str(warehouse), *args]
    res = run(*full)
    assert res.exit_code == 2, res.output
    [line] = res.stderr.splitlines()
    assert line.startswith("kafka-auditor: error: ") and expected in line, line


def test_unreadable_warehouse_and_outputs_inside_it(warehouse, tmp_path):
    res = run("--warehouse", str(tmp_path / "none"))
    assert res.exit_code == 2 and "does not exist" in res.stderr
    res = run("--warehouse", str(warehouse), "--output", str(warehouse / "report.json"))
    assert res.exit_code == 2 and "inside" in res.stderr and not (warehouse / "report.json").exists()
    broken = build_warehouse(tmp_path / "broken")
    (broken / "state" / "reports.json").write_text('{"fingerprints": [1, 2]}')
    res = run("--warehouse", str(broken))
    assert res.exit_code == 2 and "reports.json" in res.stderr and len(res.stderr.splitlines()) == 1


# ------------------------------------------------------------------------------------ with Spark


class Balanced(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.problems.append(tag)


@pytest.fixture(scope="module")
def runs(spark, warehouse, tmp_path_factory):
    """Five reports on the one warehouse, in order. The first runs the checks on Spark; the others reuse its
    result (the warehouse does not change, nor does the result) to keep the suite's Spark time short: what
    they test is the report's state, window, baseline and formats."""
    import auditor.spark.history as history

    real = history.run_history
    results_of: list = []

    def remembered(*args, **kwargs):
        if not results_of:
            results_of.append(real(*args, **kwargs))
        return results_of[-1]

    out = tmp_path_factory.mktemp("reports")
    master = ["--master", "local[2]", "--warehouse", str(warehouse)]
    results = {}
    mp = pytest.MonkeyPatch()
    mp.setattr(history, "run_history", remembered)
    try:
        # an --all report first (the cron's HTML page, run before the mailed report): it marks nothing shown
        results["peek"] = run(*master, "--all", "--format", "json")
        results["first"] = run(*master, "--format", "json", "--output", str(out / "first.json"))
        results["second"] = run(*master, "--format", "json")
        results["html"] = run(
            *master,
            "--all",
            "--format",
            "html",
            "--output",
            str(out / "r.html"),
            "--write-baseline",
            str(out / "b.json"),
        )
        results["baseline"] = run(
            *master, "--all", "--format", "prometheus", "--baseline", str(out / "b.json")
        )
        results["since"] = run(*master, "--all", "--format", "json", "--since", "2026-01-04")
    finally:
        mp.undo()
    assert len(results_of) == 1
    return out, results


@pytest.mark.spark
def test_first_report_shows_the_regression_then_nothing_new(runs, warehouse):
    out, results = runs
    first = results["first"]
    assert first.exit_code == 1, first.output
    doc = json.loads((out / "first.json").read_text())
    codes = {(f["code"], f["broker"], f["topic"]) for f in doc["findings"]}
    assert ("KA801", 3, "orders") in codes
    assert all(f["topic"] != "quiet" for f in doc["findings"])
    [hw] = [f for f in doc["findings"] if f["code"] == "KA801"]
    assert hw["time"].startswith("2026-01-03T02:00:00")
    # the history section: a chart for the flagged partition only, the latest capture of each broker
    [chart] = doc["history"]["charts"]
    assert (chart["topic"], chart["partition"]) == ("orders", 0) and hw["fingerprint"] in chart["findings"]
    by_broker = {s["broker"]: s["points"] for s in chart["highWatermarks"]}
    assert [v for _, v in by_broker[3]] == [1000, 1500, 1300] and [t for t, _ in by_broker[3]] == NIGHTS
    assert {(c["broker"], c["captureTimeMs"]) for c in doc["history"]["captures"]} == {
        (1, NIGHTS[-1]),
        (3, NIGHTS[-1]),
    }
    [source] = doc["inputs"]
    assert source["kind"] == "warehouse" and source["path"] == str(warehouse) and source["version"] == 1
    assert source["lastIngest"] is not None
    assert doc["stats"]["alreadyReported"] == 0 and doc["stats"]["suppressed"] == 0
    # the second run: nothing new, exit 0, every finding counted as already reported
    second = results["second"]
    assert second.exit_code == 0, second.output
    again = json.loads(second.stdout)
    assert again["findings"] == [] and again["stats"]["alreadyReported"] == len(doc["findings"])
    assert again["history"]["charts"] == []
    state = json.loads((warehouse / "state" / "reports.json").read_text())
    assert set(state["fingerprints"]) >= {f["fingerprint"] for f in doc["findings"]}
    assert [r["shown"] for r in state["reports"][:3]] == [0, len(doc["findings"]), 0]
    peek = results["peek"]
    assert peek.exit_code == 1 and len(json.loads(peek.stdout)["findings"]) == len(doc["findings"])


@pytest.mark.spark
def test_all_shows_them_again_as_a_self_contained_page(runs):
    out, results = runs
    assert results["html"].exit_code == 1, results["html"].output
    page = (out / "r.html").read_text()
    parser = Balanced()
    parser.feed(page)
    assert not parser.problems and not parser.stack
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {SVG}
    assert "kafka-auditor report --warehouse" in page and "--all" in page
    [svg] = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    root = ET.fromstring(svg)
    assert len(root.findall(f".//{{{SVG}}}g[@class='series']")) == 2
    assert root.findall(f".//{{{SVG}}}g[@class='mark']")
    assert "leader-epoch-checkpoint entries" in page and "KA801" in page


@pytest.mark.spark
def test_a_baseline_suppresses_and_the_textfile_says_so(runs):
    out, results = runs
    res = results["baseline"]
    assert res.exit_code == 0, res.output
    baseline = json.loads((out / "b.json").read_text())
    n = len(baseline["fingerprints"])
    assert n >= 1
    families = {f.name: f for f in text_string_to_metric_families(res.stdout)}
    samples = {
        (s.name, s.labels.get("reason")): s.value
        for s in families["kafka_auditor_findings_suppressed"].samples
    }
    assert samples[("kafka_auditor_findings_suppressed", "baseline")] == n
    assert samples[("kafka_auditor_findings_suppressed", "reported")] == 0  # --all
    captures = {
        s.labels["broker"]: s.value for s in families["kafka_auditor_last_capture_timestamp_seconds"].samples
    }
    assert captures == {"1": NIGHTS[-1] / 1000, "3": NIGHTS[-1] / 1000}
    [ingest] = families["kafka_auditor_last_ingest_timestamp_seconds"].samples
    assert ingest.value == (NIGHTS[-1] + 3_660_000) / 1000
    assert families["kafka_auditor_last_report_timestamp_seconds"].samples


@pytest.mark.spark
def test_since_narrows_by_capture_time(runs):
    _, results = runs
    res = results["since"]
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["findings"] == [] and doc["stats"]["since"] == "2026-01-04T00:00:00Z"


def test_since_counts_back_from_the_newest_capture_not_the_clock():
    from auditor.cli.report import in_window, parse_since
    from auditor.findings import Finding, Severity

    def at(ms: int) -> Finding:
        stamp = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return Finding(code="KA801", severity=Severity.ERROR, message="m", time=stamp)

    found = [
        at(NIGHTS[0]),
        at(NIGHTS[1]),
        at(NIGHTS[2]),
        Finding(code="KA812", severity=Severity.ERROR, message="x"),
    ]
    assert parse_since("24h") == ("duration", DAY) and parse_since("30m") == ("duration", 1_800_000)
    assert parse_since("2026-01-02") == ("time", T0 + DAY)
    assert parse_since("2026-01-02T03:00:00+01:00") == ("time", T0 + DAY + 2 * 3_600_000)
    kept, cutoff = in_window(found, parse_since("24h"), NIGHTS[-1])
    assert cutoff == NIGHTS[1] and kept == found[1:]  # the newest capture minus 24 h, not now
    kept, _ = in_window(found, parse_since("1h"), NIGHTS[-1])
    assert kept == found[2:]  # a finding without a capture time stays
    assert in_window(found, None, NIGHTS[-1]) == (found, None)


def test_a_usage_error_never_loads_spark(warehouse):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from auditor.cli import app\n"
        f"r = CliRunner().invoke(app, ['report', '--warehouse', {str(warehouse)!r}, '--since', 'soon'])\n"
        "sys.stdout.write(f'{r.exit_code} {\"pyspark\" in sys.modules}\\n')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["2", "False"], res.stderr
