"""The nightly flow end to end on real files (``ingest`` then ``report``, through the CLI, on Spark):

* the user's case: two nights of three brokers copied without their times, the later night first, so that
  the copies' mtimes are 38 ms apart in the wrong order: no high watermark "went back", one KA815 warning
  naming file modification times, and every output says where the capture times came from;
* the Prometheus textfile of ``report --all --since 24h``: a broker last captured 72 h before the newest
  capture keeps its KA811 series (an open condition), every check that ran has a series (0 when clean),
  read back with prometheus_client's parser.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from auditor.cli import app
from auditor.rules.registry import EVERY_COMMAND, HISTORY_SCOPES, REGISTRY, load_rules
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata

pytestmark = pytest.mark.spark

CLUSTER = "QgxNy_HmRciFoMjvSeDK3w"
TOPIC_ID = "AbCdEfGhIjKlMnOpQrStUw"
DIRECTORY_ID = "e54YZRl8UUamg6XyB1rOTw"
FORMATTED = datetime(2025, 12, 1, tzinfo=timezone.utc)
COPIED_MS = 1_767_600_000_000  # 2026-01-05T08:00:00Z: when the copies were made
MASTER = ("--master", "local[2]")
HOUR = 3_600_000


def invoke(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args], env={"NO_COLOR": "1", "COLUMNS": "200"})


def capture_files(broker: int, hw: int, epochs: list[tuple[int, int]]) -> dict[str, bytes]:
    """A broker's small files with one partition, ``orders-0``, at high watermark ``hw``."""
    return {
        "meta.properties": format_meta_properties(1, broker, CLUSTER, DIRECTORY_ID, date=FORMATTED),
        "replication-offset-checkpoint": format_offset_checkpoint([("orders", 0, hw)]),
        "recovery-point-offset-checkpoint": format_offset_checkpoint([("orders", 0, hw)]),
        "log-start-offset-checkpoint": format_offset_checkpoint([]),
        "orders-0/leader-epoch-checkpoint": format_leader_epoch_checkpoint(epochs),
        "orders-0/partition.metadata": format_partition_metadata(TOPIC_ID),
    }


def write(root: Path, files: dict[str, bytes], mtime_ms: int | None = None) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mtime_ms is not None:
            os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


# ---------------------------------------------------------------------------------- the user's case


@pytest.fixture(scope="module")
def copies(spark, tmp_path_factory) -> dict:
    """Night 2 (HW 1500) copied first, night 1 (the topic just created, HW 0) 38 ms later, each broker's
    files under ``copy-a/broker-N`` and ``copy-b/broker-N`` (no time in any name, no manifest); ingested
    from both folders, then reported as JSON, text and HTML."""
    root = tmp_path_factory.mktemp("copies")
    for b in (1, 2, 3):
        write(root / "copy-a" / f"broker-{b}", capture_files(b, 1500, [(0, 0)]), COPIED_MS)
        write(root / "copy-b" / f"broker-{b}", capture_files(b, 0, [(0, 0)]), COPIED_MS + 38)
    warehouse = root / "warehouse"
    out = {"root": root}
    out["ingest"] = invoke("ingest", root / "copy-a", root / "copy-b", "--into", warehouse, *MASTER)
    report = ("report", "--warehouse", warehouse, "--all", *MASTER)
    out["json"] = invoke(*report, "-f", "json", "-o", root / "r.json")
    out["html"] = invoke(*report, "-f", "html", "-o", root / "r.html")
    out["text"] = invoke(*report, "-f", "text", "-v")
    return out


def test_copies_in_the_wrong_order_raise_no_regression_and_one_warning(copies):
    assert copies["ingest"].exit_code == 0, copies["ingest"].output
    assert copies["json"].exit_code == 0, copies["json"].output  # a warning does not reach --fail-on error
    doc = json.loads((copies["root"] / "r.json").read_text())
    codes = [f["code"] for f in doc["findings"]]
    assert "KA801" not in codes and "KA803" not in codes and "KA805" not in codes
    assert not any("went back from" in f["message"] for f in doc["findings"])
    [warning] = [f for f in doc["findings"] if f["code"] == "KA815"]
    assert warning["severity"] == "warning" and warning["broker"] is None
    assert "file modification times" in warning["message"] and "the closest 38 ms" in warning["message"]
    assert "3 partitions went back only in that order" in warning["message"]
    evidence = warning["evidence"]
    assert evidence["brokers"] == [1, 2, 3] and evidence["open"] is True
    assert {p["intervalMs"] for p in evidence["pairs"]} == {38}
    assert all(p["notCompared"] and p["reasons"] == ["mtime", "interval"] for p in evidence["pairs"])
    assert all(p["after"]["timeSources"] == ["mtime"] for p in evidence["pairs"])
    # where each broker's latest capture time came from
    assert {(c["broker"], c["timeSource"]) for c in doc["history"]["captures"]} == {
        (1, "mtime"),
        (2, "mtime"),
        (3, "mtime"),
    }


def test_every_format_says_where_capture_times_came_from(copies):
    assert copies["html"].exit_code == 0, copies["html"].output
    page = (copies["root"] / "r.html").read_text()
    assert "time from" in page and "file mtimes (suspect)" in page and "KA815" in page
    text = copies["text"].stdout
    assert copies["text"].exit_code == 0 and "KA815" in text and "file modification times" in text


# ------------------------------------------------------------------------------------------ Prometheus


@pytest.fixture(scope="module")
def textfile(spark, tmp_path_factory) -> dict:
    """Nightly captures at 02:00 named by time (folders ``<time>/broker-N``) of brokers 1 and 2 for six
    nights and of broker 3 for the first three: broker 3 was last captured 72 h before the newest capture.
    Ingested, then reported as a textfile with ``--all --since 24h`` and as JSON with ``--since 24h``."""
    root = tmp_path_factory.mktemp("textfile")
    night0 = 1_767_232_800_000  # 2026-01-01T02:00:00Z
    for night in range(6):
        stamp = f"2026-01-0{night + 1}T02:00:00Z"
        for b in (1, 2, 3):
            if b == 3 and night > 2:
                continue
            write(root / "captures" / stamp / f"broker-{b}", capture_files(b, 1000 * (night + 1), [(0, 0)]))
    warehouse = root / "warehouse"
    out = {"root": root, "newest": night0 + 5 * 24 * HOUR}
    out["ingest"] = invoke("ingest", root / "captures", "--into", warehouse, *MASTER)
    report = ("report", "--warehouse", warehouse, *MASTER, "--since", "24h")
    out["prom"] = invoke(*report, "--all", "-f", "prometheus", "-o", root / "k.prom", "--exit-zero")
    out["json"] = invoke(*report, "-f", "json", "-o", root / "r.json")
    return out


def _samples(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_a_broker_still_missing_keeps_its_series_whatever_since(textfile):
    assert textfile["ingest"].exit_code == 0, textfile["ingest"].output
    assert textfile["prom"].exit_code == 0, textfile["prom"].output
    families = _samples((textfile["root"] / "k.prom").read_text())
    checks = {s.labels["code"]: s.value for s in families["kafka_auditor_check_findings"]}
    assert checks["KA811"] == 1
    opened = {s.labels["code"]: s.value for s in families["kafka_auditor_open_findings"]}
    assert opened["KA811"] == 1 and sum(opened.values()) == 1
    [missing] = [s for s in families["kafka_auditor_findings"] if s.labels["code"] == "KA811"]
    assert (missing.labels["broker"], missing.labels["cluster"], missing.value) == ("3", CLUSTER, 1)
    last = {s.labels["broker"]: s.value for s in families["kafka_auditor_last_capture_timestamp_seconds"]}
    assert last["3"] == (textfile["newest"] - 72 * HOUR) / 1000
    # the JSON report of the same window does not list the finding (it was raised 60 h before the newest
    # capture), and counts it as an open condition
    doc = json.loads((textfile["root"] / "r.json").read_text())
    assert [f["code"] for f in doc["findings"]] == [] and doc["stats"]["openConditions"] == 1


def test_every_check_that_ran_has_a_series(textfile):
    families = _samples((textfile["root"] / "k.prom").read_text())
    load_rules()
    # the history checks, and KA002 (a check that crashed), which every command runs
    expected = {code for code, r in REGISTRY.items() if r.scope in HISTORY_SCOPES} | set(EVERY_COMMAND)
    for family in ("kafka_auditor_check_findings", "kafka_auditor_open_findings"):
        samples = families[family]
        assert {s.labels["code"] for s in samples} == expected, family
        assert all(s.labels["command"] == "report" for s in samples)
    clean = {s.labels["code"] for s in families["kafka_auditor_check_findings"] if s.value == 0}
    assert clean == expected - {"KA811"}
