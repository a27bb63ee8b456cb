"""The renderers of ``report`` on history-shaped data (no Spark): the self-contained HTML page (balanced
tags, SVG charts that parse as XML, no external resource, everything from the evidence escaped), the text
high-watermark table, the JSON section ``history`` and the Prometheus textfile's gauges."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from auditor.findings import Finding, Severity
from auditor.report import render
from auditor.report.baseline import suppress
from auditor.report.history import compact, history_gauges, history_section, hw_rounds
from auditor.report.json import report_dict
from auditor.report.model import Gauge, Report
from auditor.report.page import VOID, tag
from auditor.report.svg import format_offset, step_chart, time_ticks, value_ticks
from auditor.rules.registry import Rule

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOSTILE = 'x<script>alert(1)</script>"\x1b[31m\u202e'
SVG = "http://www.w3.org/2000/svg"


def iso(ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def rule(code: str, name: str, severity: Severity) -> Rule:
    doc = (
        f"{name} check.\n\nWhat it finds: a {name} case.\n\nWhy it matters: committed data.\n\n"
        "What to do: look.\n\nReferences: KIP-101."
    )
    return Rule(code=code, name=name, severity=severity, title=f"{name} title", scope="history", doc=doc)


RULES = [
    rule("KA801", "history.hw-backwards", Severity.ERROR),
    rule("KA805", "history.epoch-cache-rewritten", Severity.WARNING),
    rule("KA811", "history.broker-missing", Severity.ERROR),
]


def charts() -> list[SimpleNamespace]:
    """Broker 3 (the old leader) at HW 1500, then 1300 after the unclean election; broker 1 stays ahead;
    their epoch caches fork at offset 1000. A second partition without a finding (no chart expected)."""
    t = [T0 + i * DAY for i in range(3)]
    flagged = SimpleNamespace(
        cluster="c",
        topic="orders",
        partition=0,
        high_watermarks={
            1: [(t[0], 900), (t[1], 1300), (t[2], 1600)],
            3: [(t[0], 1000), (t[1], 1500), (t[2], 1300)],
        },
        epochs={
            1: [(t[0], [(0, 0)]), (t[1], [(0, 0), (2, 1000)])],
            3: [(t[0], [(0, 0)]), (t[2], [(0, 0), (2, 1000), (3, 1500)])],
        },
    )
    quiet = SimpleNamespace(
        cluster="c",
        topic="quiet",
        partition=1,
        high_watermarks={1: [(t[0], 5)]},
        epochs={1: [(t[0], [(0, 0)])]},
    )
    hostile = SimpleNamespace(
        cluster="c",
        topic=HOSTILE,
        partition=2,
        high_watermarks={1: [(t[0], 10), (t[1], 20)], 2: [(t[0], 10), (t[1], 20)]},
        epochs={},
    )
    return [flagged, quiet, hostile]


def findings() -> list[Finding]:
    t2 = T0 + 2 * DAY
    return [
        Finding(
            code="KA801",
            name="history.hw-backwards",
            severity=Severity.ERROR,
            message="high watermark of orders-0 on broker 3 went from 1500 to 1300",
            broker=3,
            topic="orders",
            partition=0,
            file="replication-offset-checkpoint",
            offset_start=1300,
            offset_end=1499,
            time=iso(t2),
            evidence={"cluster": "c", "before": 1500, "after": 1300, "beforeTime": iso(T0 + DAY)},
        ),
        Finding(
            code="KA805",
            name="history.epoch-cache-rewritten",
            severity=Severity.WARNING,
            message="leader-epoch-checkpoint of orders-0 on broker 3 rewritten",
            broker=3,
            topic="orders",
            partition=0,
            file="orders-0/leader-epoch-checkpoint",
            epoch=2,
            time=iso(t2),
            evidence={"cluster": "c"},
        ),
        Finding(
            code="KA801",
            name="history.hw-backwards",
            severity=Severity.ERROR,
            message=f"topic {HOSTILE} went backwards",
            broker=2,
            topic=HOSTILE,
            partition=2,
            file=f"{HOSTILE}-2/leader-epoch-checkpoint",
            time=iso(T0 + DAY),
            evidence={"cluster": "c", "note": HOSTILE},
        ),
        Finding(
            code="KA811",
            name="history.broker-missing",
            severity=Severity.ERROR,
            message="broker 4 missing from the latest captures",
            broker=4,
            time=iso(T0),
            evidence={"cluster": "c"},
        ),
    ]


CAPTURES = [
    {"cluster": "c", "broker": 1, "captureTime": T0 + 2 * DAY, "logDirs": ["/var/kafka/data"]},
    {"cluster": "c", "broker": 3, "captureTime": T0 + 2 * DAY + 60_000, "logDirs": ["/var/kafka/data"]},
    {"cluster": HOSTILE, "broker": 2, "captureTime": T0 + DAY, "logDirs": [HOSTILE]},
]


@pytest.fixture
def report() -> Report:
    found = findings()
    section = history_section(charts(), CAPTURES, found)
    rep = Report(
        command="report",
        findings=found,
        rules=RULES,
        inputs=[{"kind": "warehouse", "path": f"/w/{HOSTILE}", "version": 1, "lastIngest": iso(T0)}],
        stats={"captures": 3, "brokers": 3, "partitions": 3},
        sections={"history": section},
        gauges=history_gauges(section["captures"], T0 + 3 * DAY, 1_767_600_000.5),
        command_line=f"kafka-auditor report --warehouse '/w/{HOSTILE}' --format html",
    )
    return suppress(rep, set(), reason="reported", stat="alreadyReported")


def rendered(report: Report, fmt: str) -> str:
    out = io.StringIO()
    render(report, fmt, out, color=False, width=120)
    return out.getvalue()


class Balanced(HTMLParser):
    """Every element closed in order (void elements self-closed or in the void list); SVGs collected."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


def test_html_page_is_balanced_self_contained_and_escaped(report):
    page = rendered(report, "html")
    assert page.startswith("<!DOCTYPE html>")
    parser = Balanced()
    parser.feed(page)
    parser.close()
    assert not parser.problems and not parser.stack, (parser.problems, parser.stack)
    # our one inline script, nothing from the evidence became markup
    assert parser.scripts == 1
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\u202e" not in page and "\\x1b[31m\\u202e" in page
    # no resource from the network: the only URL is the SVG namespace
    urls = re.findall(r"https?://[^\s\"'<>]+", page)
    assert set(urls) == {SVG}, urls
    for tag_name, attrs in parser.tags:
        for key in ("src", "href"):
            assert not attrs.get(key) or attrs[key].startswith("#"), (tag_name, attrs)
    assert "Content-Security-Policy" in page
    # header: version, time, command line, inputs
    assert "kafka-auditor report --warehouse" in page and report.iso_time() in page
    # the verdict, then the findings: most severe first, each with the rule's explanation
    verdict, findings = page.index('id="verdict"'), page.index('id="findings"')
    assert verdict < findings < page.index('id="history"') < page.index('id="summary"')
    listed = page[findings : page.index('id="history"')]
    order = [m.group(1) for m in re.finditer(r'data-severity="(\w+)"', listed)]
    assert order == sorted(order, key=lambda s: -int(Severity.parse(s))) and order[-1] == "warning"
    assert listed.count('<div class="finding ') == 4 and listed.count("What it finds: ") == 4
    # the history charts folded per topic, closed: orders and the hostile topic
    assert page.count('<details class="topic"') == 2 and '<details class="topic" open' not in page


def test_html_has_a_chart_and_an_epoch_table_per_flagged_partition(report):
    page = rendered(report, "html")
    svgs = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    assert len(svgs) == 2  # orders-0 and the hostile partition; "quiet" has no finding
    root = ET.fromstring(svgs[0])
    assert root.tag == f"{{{SVG}}}svg"
    ns = {"s": SVG}
    paths = root.findall(".//s:g[@class='series']/s:path", ns)
    assert len(paths) == 2  # one step line per broker
    assert all(re.fullmatch(r"M[\d.]+,[\d.]+(H[\d.]+V[\d.]+)+", p.get("d")) for p in paths)
    texts = ["".join(t.itertext()) for t in root.iter(f"{{{SVG}}}text")]
    assert "broker 1" in texts and "broker 3" in texts  # legend
    assert "01-02 00:00" in texts and "1,400" in texts  # time and offset axes
    assert "capture time (UTC), 2026-01-01 to 2026-01-03" in texts
    marks = root.findall(".//s:g[@class='mark']", ns)
    [mark] = marks  # both findings at the same capture time: one line
    assert mark.find("s:text", ns).text == "KA801, KA805"
    drops = [c for c in root.iter(f"{{{SVG}}}circle") if c.get("stroke")]
    assert len(drops) == 1 and "1,300" in "".join(drops[0].itertext())
    for svg in svgs:
        ET.fromstring(svg)
    # the epoch history: new entries marked, the finding's epoch outlined
    assert '<mark class="fork">(2, 1,000)</mark>' in page and "<mark>(3, 1,500)</mark>" in page


def test_text_adds_a_compact_high_watermark_table(report):
    text = rendered(report, "text")
    assert "High watermarks · orders-0 (cluster c)" in text
    assert "1,300 ↓" in text and "broker 3" in text
    assert "quiet" not in text
    assert "\x1b" not in text and "\\x1b[31m" in text  # the hostile topic name made visible


def test_json_history_section(report):
    doc = json.loads(rendered(report, "json"))
    hist = doc["history"]
    [orders] = [c for c in hist["charts"] if c["topic"] == "orders"]
    assert orders["highWatermarks"][1] == {
        "broker": 3,
        "points": [[T0, 1000], [T0 + DAY, 1500], [T0 + 2 * DAY, 1300]],
    }
    assert orders["epochs"][1]["changes"][-1] == {
        "time": T0 + 2 * DAY,
        "entries": [[0, 0], [2, 1000], [3, 1500]],
    }
    fingerprints = {f["fingerprint"] for f in doc["findings"] if f["topic"] == "orders"}
    assert set(orders["findings"]) == fingerprints
    assert {(c["cluster"], c["broker"], c["captureTime"]) for c in hist["captures"]} >= {
        ("c", 3, iso(T0 + 2 * DAY + 60_000))
    }
    assert doc["stats"]["alreadyReported"] == 0
    assert report_dict(report)["history"] == hist


NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def test_prometheus_textfile_parses_with_help_and_type_for_every_family(report):
    text = rendered(report, "prometheus")
    families = list(text_string_to_metric_families(text))
    names = {f.name for f in families}
    for fam in families:
        assert NAME.fullmatch(fam.name), fam.name
        assert f"# HELP {fam.name} " in text and f"# TYPE {fam.name} gauge" in text, fam.name
    assert {
        "kafka_auditor_findings",
        "kafka_auditor_last_capture_timestamp_seconds",
        "kafka_auditor_last_ingest_timestamp_seconds",
        "kafka_auditor_last_report_timestamp_seconds",
        "kafka_auditor_findings_suppressed",
    } <= names
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in families for s in fam.samples}
    key = (
        "kafka_auditor_last_capture_timestamp_seconds",
        (("broker", "3"), ("cluster", "c"), ("command", "report")),
    )
    assert samples[key] == (T0 + 2 * DAY + 60_000) / 1000
    assert (
        samples[("kafka_auditor_last_ingest_timestamp_seconds", (("command", "report"),))]
        == (T0 + 3 * DAY) / 1000
    )
    assert (
        samples[("kafka_auditor_findings_suppressed", (("command", "report"), ("reason", "reported")))] == 0
    )
    # a hostile cluster id stays one label value
    hostile = [s for fam in families for s in fam.samples if s.labels.get("broker") == "2"]
    assert any("\\x1b[31m" in s.labels.get("cluster", "") for s in hostile)


def test_invalid_gauge_names_are_refused(report):
    import dataclasses

    bad = dataclasses.replace(report, gauges=[Gauge("kafka auditor", "x", 1)])
    with pytest.raises(ValueError):
        rendered(bad, "prometheus")


def test_rounds_and_compaction():
    chart = {
        "highWatermarks": [
            {"broker": 1, "points": [[T0 + i * DAY, 100 * i] for i in range(40)]},
            {
                "broker": 2,
                "points": [[T0 + i * DAY + 5000, 100 * i - (50 if i == 20 else 0)] for i in range(40)],
            },
        ]
    }
    brokers, rounds = hw_rounds(chart)
    assert brokers == [1, 2] and len(rounds) == 40
    assert rounds[21][1][2] == (2100, False) and rounds[20][1][2] == (1950, False)
    # 1950 then 2100: no drop; 1900 -> 1950 no drop; make one explicit drop
    chart["highWatermarks"][1]["points"][25][1] = 10
    _, rounds = hw_rounds(chart)
    assert rounds[25][1][2] == (10, True)
    shown = compact(rounds, [T0 + 30 * DAY + 10])
    assert shown[0] == 0 and shown[-1] == 39
    assert {24, 25, 29, 30} <= set(shown) and None in shown and len(shown) < 12


def test_svg_axes_and_numbers():
    assert format_offset(1500) == "1,500" and format_offset(2_500_000) == "2.5M"
    lo, hi, ticks = value_ticks(1300, 1600)
    assert lo <= 1300 and hi >= 1600 and ticks[0] == lo and ticks[-1] == hi and len(ticks) <= 8
    day_ticks, fmt = time_ticks(T0, T0 + 30 * DAY)
    assert fmt == "%Y-%m-%d" and all(t % DAY == 0 for t in day_ticks) and 2 <= len(day_ticks) <= 7
    _, hour_fmt = time_ticks(T0, T0 + 6 * 3_600_000)
    assert hour_fmt == "%m-%d %H:%M"
    # one point, huge offsets that only differ a little: labels stay distinct
    svg = step_chart({"a": [(T0, 10**12 + 1)], "b": [(T0, 10**12 + 3)]}, title=HOSTILE)
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{{{SVG}}}text") if t.get("text-anchor") == "end"]
    assert len(labels) == len(set(labels)) and "<script>" not in svg
    assert ET.fromstring(step_chart({}, title="empty")) is not None


def test_tag_escapes_attributes_and_text():
    html = tag("a", "<b>", href='"><script>', data_x="\x1b")
    assert html == '<a href="&quot;&gt;&lt;script&gt;" data-x="\\x1b">&lt;b&gt;</a>'


@pytest.mark.parametrize("fmt", ["jsonl", "sarif", "junit"])
def test_every_other_format_renders_the_report(report, fmt):
    text = rendered(report, fmt)
    assert "KA801" in text and "\x1b" not in text
    if fmt == "sarif":
        from tests.report.test_sarif import check_github_sarif, validate_sarif

        validate_sarif(json.loads(text))
        check_github_sarif(json.loads(text))


def test_charts_are_capped_most_severe_first(report, monkeypatch):
    monkeypatch.setattr("auditor.report.history.HTML_CHARTS", 1)
    monkeypatch.setattr("auditor.report.history.TEXT_CHARTS", 1)
    page = rendered(report, "html")
    [svg] = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    assert "orders-0" in svg  # its KA801 ties the hostile partition's on severity; orders sorts first
    assert "1 more partition(s) with findings not drawn here" in page
    text = rendered(report, "text")
    assert text.count("High watermarks ·") == 1 and "1 more partition(s)" in text


def test_text_gives_the_verdict_then_the_findings_then_their_tables(report):
    text = rendered(report, "text")
    verdict, counts = text.index("Verdict"), text.index("Findings: ")
    first_finding, first_table = text.index("╭"), text.index("High watermarks ·")
    assert verdict < counts < first_finding < first_table
    flat = " ".join(text[verdict:counts].split())
    assert "Checked 3 partition(s) on 3 broker(s) over 3 capture(s)" in flat
    assert "orders-0: TRUNCATED BELOW THE HIGH WATERMARK (error)" in flat
    assert "broker 4: MISSING (error)" in flat
    assert "1. Copy the log dirs of the replicas of orders-0 (broker(s) 1, 3)" in flat
    assert "--export-lost ./lost-orders-0" in flat
    assert "1 other partition(s) and 2 other broker(s): consistent, nothing at warning or above" in flat
    # the most severe verdicts first: errors before the warning-only ones
    assert flat.index("(error)") < flat.rindex("(error)") < flat.index("other partition(s)")


def test_a_table_or_chart_only_for_a_finding_listed(report):
    import dataclasses

    warning_only = [f for f in report.findings if f.code == "KA805"]
    quiet = dataclasses.replace(report, findings=warning_only, min_severity=Severity.ERROR)
    text = rendered(quiet, "text")
    assert "High watermarks ·" not in text and "Not listed below: 1 warning" in text
    page = rendered(quiet, "html")
    assert "<svg" not in page and '<details class="topic"' not in page
    # listed: its table and chart are there
    listed = dataclasses.replace(report, findings=warning_only)
    assert "High watermarks · orders-0" in rendered(listed, "text")
    assert rendered(listed, "html").count('<details class="topic"') == 1


def test_nothing_new_says_how_many_were_already_reported(report):
    import dataclasses

    stats = {**report.stats, "alreadyReported": 5}
    text = rendered(dataclasses.replace(report, findings=[], stats=stats), "text")
    flat = " ".join(text.split())
    assert (
        "3 partition(s) and 3 broker(s): nothing new at warning or above; 5 finding(s) already reported "
        "(--all shows them)" in flat
    )
    assert "High watermarks" not in text and "consistent" not in flat


def test_html_evidence_is_fields_with_iso_times_never_json(report):
    import dataclasses

    f = report.findings[0]
    timed = dataclasses.replace(
        f,
        evidence={
            **f.evidence,
            "firstTimestamp": 1_700_000_006_630,
            "before": {"time": iso(T0 + DAY), "captureIds": ["c1", "c2"]},
            "durationMs": 86_400_000,
        },
    )
    page = rendered(dataclasses.replace(report, findings=[timed, *report.findings[1:]]), "html")
    listed = page[page.index('id="findings"') : page.index('id="history"')]
    assert '<span title="1700000006630 ms since the epoch">2023-11-14T22:13:26.630Z</span>' in listed
    assert (
        "<dt>first timestamp</dt>" not in listed
        and '<dt title="firstTimestamp">first timestamp</dt>' in listed
    )
    assert '<dt title="captureIds">capture ids</dt><dd>c1, c2</dd>' in listed
    assert '<dt title="durationMs">duration (ms)</dt><dd>86400000</dd>' in listed
    assert "{&quot;" not in page and '{"' not in listed  # no JSON anywhere in the findings
