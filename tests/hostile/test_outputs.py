"""Hostile names in every output: a log dir whose own path, partition directories, segments and stray files
are named with ESC sequences, bidi overrides, newlines, C1 controls, undecodable bytes and Rich markup.

``scan`` runs in a subprocess once per ``--format``; each output is read by its real consumer (json,
xml.dom.minidom plus the XML 1.0 character rule, html.parser, the Prometheus exposition grammar) and must
carry no raw control or bidi character. ``dump`` of a segment whose record key holds the same characters
shows them escaped. Each run is bounded in time and peak RSS.
"""

from __future__ import annotations

import json
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from xml.dom import minidom

import pytest

from parsers.dirfiles import segment_file_name
from parsers.record_batch import RecordSpec, build_batch
from tests.hostile.conftest import run_bounded
from tests.rules.builder import T0, LogDir, truncate

ESC = "\x1b[31mRED\x1b[0m"
RLO = "\u202eexe.txt"
MARKUP = "[blink]mk[link=https:evil]x"
TOPICS = (f"esc{ESC}", f"rlo{RLO}", MARKUP)
STRAY = (f"a\nKA999 forged{ESC}", "c1\u009b2J\x7f", f"tab\there{RLO}")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
NOT_XML10 = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{{{LABEL}(?:,{LABEL})*\}})? -?[0-9.e+]+$")
MAX_SECONDS, MAX_RSS_MB = 15, 300


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    ld = LogDir(tmp_path_factory.mktemp("hostile") / f"broker{ESC}{RLO}-1")
    parts = [ld.part(t) for t in TOPICS]
    for p in parts:
        p.data(3)
    ld.write()
    truncate(parts[0].seg_path(0), parts[0].seg_path(0).stat().st_size - 7)  # a finding on a hostile file
    for name in STRAY:
        (ld.root / name).write_bytes(b"x")
        (parts[1].path / name).write_bytes(b"x")
    (parts[2].path / (segment_file_name(0, ".log") + ESC)).write_bytes(b"x")
    os.mkdir(os.fsencode(ld.root) + b"/undecodable\xff\x80-0")
    return ld.root


def _check(run) -> None:
    assert "Traceback" not in run.stderr and not RAW.search(run.stderr), run.stderr
    assert run.seconds < MAX_SECONDS and run.peak_rss_mb < MAX_RSS_MB, (run.seconds, run.peak_rss_mb)


MACHINE_FORMATS = ("json", "jsonl", "sarif", "junit", "html", "prometheus")
EVERY_FORMAT = """
import json, sys
from auditor.cli import app
logdir, out = sys.argv[1], sys.argv[2]
codes = {}
for fmt in sys.argv[3:]:
    args = ["scan", logdir, "--format", fmt, "--no-progress", "--output", f"{out}/report.{fmt}"]
    codes[fmt] = app(args, standalone_mode=False)
print(json.dumps(codes))
"""


@pytest.fixture(scope="module")
def reports(logdir, tmp_path_factory) -> dict[str, str]:
    """``scan --output`` in every machine format, run by one process (one interpreter start-up)."""
    out = tmp_path_factory.mktemp("reports")
    run = run_bounded([sys.executable, "-c", EVERY_FORMAT, str(logdir), str(out), *MACHINE_FORMATS])
    _check(run)
    assert run.returncode == 0 and set(json.loads(run.stdout).values()) <= {0, 1}, run.stdout
    return {fmt: (out / f"report.{fmt}").read_text(encoding="utf-8") for fmt in MACHINE_FORMATS}


def _report(reports: dict[str, str], fmt: str) -> str:
    document = reports[fmt]
    assert not RAW.search(document), (fmt, RAW.search(document))
    return document


def test_text(bounded, logdir):
    run = bounded(["scan", str(logdir), "--color", "never", "--no-progress"])
    _check(run)
    assert run.returncode in (0, 1) and not RAW.search(run.stdout), RAW.search(run.stdout)
    out = run.stdout
    for shown in (
        "\\x1b[31mRED\\x1b[0m",
        "\\u202eexe.txt",
        "a\\nKA999 forged",
        "c1\\x9b2J\\x7f",
        "undecodable\\xff\\x80",
    ):
        assert shown in out, shown
    assert MARKUP in out  # printed literally, not interpreted as Rich markup
    assert not any(line.lstrip("│ ").startswith("KA999") for line in out.splitlines())


def test_json_and_jsonl_keep_exact_names(reports):
    doc = json.loads(_report(reports, "json"))
    topics = {p["topic"] for p in doc["partitions"]}
    assert set(TOPICS) <= topics and "undecodable\udcff\udc80" in topics
    assert any(STRAY[0] in f["message"] for f in doc["findings"])
    rows = [json.loads(line) for line in _report(reports, "jsonl").splitlines()]
    assert rows and {r["topic"] for r in rows} & set(TOPICS)


def test_sarif(reports):
    from tests.report.test_sarif import check_github_sarif, validate_sarif

    doc = json.loads(_report(reports, "sarif"))
    validate_sarif(doc)
    check_github_sarif(doc)
    run = doc["runs"][0]
    uri = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")
    for result in run["results"]:
        assert not RAW.search(result["message"]["text"])
        for loc in result["locations"]:
            if "physicalLocation" in loc:
                assert uri.match(loc["physicalLocation"]["artifactLocation"]["uri"])
    assert all(uri.match(b["uri"]) for b in run["originalUriBaseIds"].values())


def test_junit_is_valid_xml_10(reports):
    document = _report(reports, "junit")
    assert not NOT_XML10.search(document)
    dom = minidom.parseString(document.encode("utf-8"))
    names = {tc.getAttribute("classname") for tc in dom.getElementsByTagName("testcase")}
    assert any(n.endswith(".esc\\x1b[31mRED\\x1b[0m-0") for n in names)
    assert any(n.endswith(".rlo\\u202eexe.txt-0") for n in names)


def test_html(reports):
    page = _report(reports, "html")
    texts: list[str] = []
    parser = HTMLParser()
    parser.handle_data = texts.append  # type: ignore[method-assign]
    parser.feed(page)
    parser.close()
    shown = "".join(texts).replace("\xa0", " ")
    assert "rlo\\u202eexe.txt" in shown and MARKUP in shown


def test_prometheus(reports):
    from prometheus_client.parser import text_string_to_metric_families

    text = _report(reports, "prometheus")
    for line in text.splitlines():
        assert line.startswith("# ") or SAMPLE.match(line), line
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert samples
    for sample in samples:
        assert not any(RAW.search(v) for v in sample.labels.values()), sample


def test_dump_escapes_names_and_keys(bounded, tmp_path):
    segment = tmp_path / f"orders{ESC}-0" / segment_file_name(0, ".log")
    segment.parent.mkdir()
    key = f"k{ESC}{RLO}\nforged line".encode()
    segment.write_bytes(build_batch([RecordSpec(key, b"v\x1b]0;title\x07", T0)]))
    run = bounded(["dump", "--print-values", str(segment)])
    assert run.returncode == 0, run.stderr
    assert run.seconds < MAX_SECONDS and run.peak_rss_mb < MAX_RSS_MB
    assert not RAW.search(run.stdout) and not any(
        line.startswith("forged") for line in run.stdout.splitlines()
    )
    assert "key: k\\x1b[31mRED\\x1b[0m\\u202eexe.txt\\nforged line" in run.stdout
    assert f"Dumping {segment}".replace(ESC, "\\x1b[31mRED\\x1b[0m") in run.stdout
