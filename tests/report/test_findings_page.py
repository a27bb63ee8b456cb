"""The HTML page of ``scan`` and ``audit`` (no Spark, no browser): parsed with :mod:`html.parser` it is
balanced and self-contained, has the header, summary, findings (every one, most severe first, each with its
location, evidence and the rule's explanation) and, for ``audit``, the diverged partitions with their replica
table and an epoch timeline SVG whose divergence line, marks and legend agree with the data; every name from
the evidence is escaped. ``scan -f html`` end to end on simulated clusters (clean, corrupt, with a hostile
file name)."""

from __future__ import annotations

import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding, Severity
from auditor.report import Report, render
from auditor.report.epoch_chart import DIVERGENCE_COLOUR, epoch_timeline_svg, first_divergence
from auditor.report.page import OPEN_FINDINGS, VOID, finding_order
from auditor.rules.registry import REGISTRY, load_rules
from auditor.text import visible

SVG = "http://www.w3.org/2000/svg"
HOSTILE = 'evil<b>&amp;</b>\x1b[31m\u202etxt.exe"\n<script>alert(1)</script>'
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x1b\u202a-\u202e\u2066-\u2069\x7f-\x9f]")
SECTIONS = ("What it finds", "Why it matters", "What to do", "References")


class Page(HTMLParser):
    """The parsed page: balance problems, tags with attributes, the text inside each element with an id,
    and every ``div.finding`` in document order (its id, data-severity and text)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.problems: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.findings: list[dict] = []
        self.text: list[str] = []
        self._finding: dict | None = None
        self._depth = 0
        self.feed(text)
        self.close()
        if self.stack:
            self.problems.append(f"unclosed: {[t for t, _ in self.stack]}")

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag in VOID:
            return
        self.stack.append((tag, a))
        if tag == "div" and "finding" in (a.get("class") or "").split():
            self._finding = {"id": a.get("id"), "severity": a.get("data-severity"), "text": []}
            self._depth = len(self.stack)
            self.findings.append(self._finding)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID and not any(t == "svg" for t, _ in self.stack):  # SVG elements may self-close
            self.problems.append(f"<{tag} /> is not a void element")

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        if self._finding is not None and len(self.stack) == self._depth:
            self._finding["text"] = "".join(self._finding["text"])
            self._finding = None
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self._finding is not None:
            self._finding["text"].append(data)

    def ids(self) -> list[str]:
        return [a["id"] for _, a in self.tags if a.get("id")]

    def shown(self) -> str:
        return "".join(self.text)


def html_of(report: Report) -> str:
    out = io.StringIO()
    render(report, "html", out)
    return out.getvalue()


def well_formed(page: str) -> Page:
    """The page parsed, with the checks every page passes: doctype, balanced tags, one inline script and
    style, a Content-Security-Policy, no resource outside the page, no raw control or bidi character."""
    assert page.startswith("<!DOCTYPE html>")
    parsed = Page(page)
    assert not parsed.problems, parsed.problems[:5]
    assert not RAW.search(page), RAW.search(page)
    assert [t for t, _ in parsed.tags].count("script") == 1
    assert all(not a.get("src") for t, a in parsed.tags), "no external script, image or frame"
    assert all(not a.get("href") or a["href"].startswith("#") for _, a in parsed.tags)
    assert not any(t == "link" for t, _ in parsed.tags)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= {SVG}
    csp = next(a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv"))
    assert "default-src 'none'" in csp
    ids = parsed.ids()
    assert len(ids) == len(set(ids)), "duplicate ids"
    return parsed


# ------------------------------------------------------------------------------------------------ scan


@pytest.fixture(scope="module")
def rules():
    load_rules()
    return [REGISTRY[c] for c in ("KA101", "KA401", "KA405", "KA406", "KA501", "KA601")]


def _finding(code: str, message: str, **where) -> Finding:
    rule = REGISTRY[code]
    return Finding(code, rule.severity, message, name=rule.name, **where)


@pytest.fixture(scope="module")
def scan_report(rules) -> Report:
    logdir = f"/evidence/{HOSTILE}/broker-1"
    findings = [
        _finding(
            "KA406", "recovery will re-read 1 segment", broker=1, log_dir=logdir, topic="t0", partition=0
        ),
        _finding("KA405", "no .kafka_cleanshutdown", broker=1, log_dir=logdir, file=f"{logdir}/x"),
        _finding(
            "KA501",
            f"unknown file {HOSTILE}",
            broker=1,
            log_dir=logdir,
            file=f"{logdir}/{HOSTILE}",
            evidence={"name": HOSTILE, HOSTILE: [HOSTILE]},
        ),
        _finding(
            "KA101",
            "batch at position 548 fails its CRC check",
            broker=3,
            log_dir="/evidence/broker-3",
            topic="t0",
            partition=0,
            file="/evidence/broker-3/t0-0/00000000000000000715.log",
            position=548,
            offset_start=721,
            offset_end=723,
            epoch=0,
            evidence={"expected": 597994790, "found": 3283385971, "batch": {"magic": 2}},
        ),
        _finding(
            "KA401", "high watermark 1000 is above the log end offset 721", broker=3, topic="t0", partition=0
        ),
        # the same location and code twice (two KA601 of one follower against two peers): one id each
        _finding("KA601", "brokers 1 and 2 diverge", broker=1, topic="t0", partition=0, offset_start=500),
        _finding("KA601", "brokers 1 and 3 diverge", broker=1, topic="t0", partition=0, offset_start=500),
    ]
    rows = [
        {"broker": b, "logDir": f"/evidence/broker-{b}", "topic": "t0", "partition": 0, "directory": "t0-0"}
        | {"segments": 6, "logStartOffset": 0, "logEndOffset": 1000, "highWatermark": 1000, "findings": b % 2}
        for b in (1, 2, 3)
    ]
    return Report(
        command="scan",
        findings=findings,
        rules=rules,
        partitions=rows,
        inputs=[
            {"logDir": logdir, "broker": 1, "clusterId": "c1"},
            {"logDir": "/evidence/broker-3", "broker": 3},
        ],
        stats={"logDirs": 2, "partitions": 3},
        command_line=f"kafka-auditor scan '/evidence/{visible(HOSTILE)}' --format html",
        generated_at=1_767_225_600.0,
    )


def test_scan_page_header_summary_and_sections(scan_report):
    page = html_of(scan_report)
    parsed = well_formed(page)
    assert "<title>kafka-auditor scan report</title>" in page
    header = page[page.index("<header>") : page.index("</header>")]
    assert f"kafka-auditor {scan_report.tool_version}" in header
    assert "2026-01-01T00:00:00Z" in header and "kafka-auditor scan &#x27;/evidence/" in header
    assert "log dir /evidence/broker-3 (broker 3)" in header and "clusterId c1" in header
    assert "1: 4 finding(s) at or above error" in header
    ids = set(parsed.ids())
    assert {"summary", "findings", "partitions", "inputs"} <= ids
    for section in ("summary", "findings", "partitions", "inputs"):
        assert f'href="#{section}"' in header  # the table of contents
    summary = page[page.index('id="summary"') : page.index('id="inputs"')]
    for code in ("KA101", "KA401", "KA405", "KA406", "KA501", "KA601"):
        assert f">{code}</a>" in summary
    assert re.search(r"sev-critical\">critical</span></td><td>1</td>", summary)
    assert re.search(r">KA601</a></td><td>replication.divergence</td>.*?<td>2</td>", summary)


def test_scan_page_lists_every_finding_most_severe_first(scan_report):
    parsed = well_formed(html_of(scan_report))
    found = parsed.findings
    assert len(found) == len(scan_report.findings)
    severities = [Severity.parse(f["severity"]) for f in found]
    assert severities == sorted(severities, reverse=True)
    expected = sorted(scan_report.findings, key=finding_order)
    for block, f in zip(found, expected, strict=True):
        assert visible(f.message) in block["text"]
        assert block["id"].startswith(f"f-{f.fingerprint()}")
        rule = REGISTRY[f.code]
        # the rule's explanation: the four sections of its doc
        for name in SECTIONS:
            assert f"{name}: " in block["text"]
        assert rule.title in block["text"]
    crc = next(b for b in found if "CRC" in b["text"])
    for where in ("broker3", "partitiont0-0", "00000000000000000715.log @ byte 548", "offsets721..723"):
        assert where in crc["text"], where
    assert "leader epoch0" in crc["text"]
    assert "597994790" in crc["text"] and "3283385971" in crc["text"]  # the evidence table
    # two findings sharing a fingerprint keep distinct ids
    twins = [b["id"] for b in found if "diverge" in b["text"]]
    assert len(twins) == 2 and twins[0] != twins[1]


def test_scan_page_escapes_hostile_names(scan_report):
    page = html_of(scan_report)
    parsed = well_formed(page)
    assert "<script>alert" not in page and "<b>&amp;" not in page
    shown = parsed.shown()
    assert visible(HOSTILE) in shown  # shown literally, control and bidi characters as escapes
    assert "\\x1b[31m" in shown and "\\u202etxt.exe" in shown and "<b>&amp;</b>" in shown
    assert not any(t == "b" for t, _ in parsed.tags)
    assert [t for t, _ in parsed.tags].count("script") == 1


def test_min_severity_lists_fewer_and_counts_all(scan_report):
    import dataclasses

    page = html_of(dataclasses.replace(scan_report, min_severity=Severity.ERROR))
    parsed = well_formed(page)
    assert len(parsed.findings) == 4  # critical, error, the two KA601 errors
    assert "3 finding(s) below error are counted in the summary, not listed" in parsed.shown()


def test_clean_scan_page(rules):
    report = Report(command="scan", findings=[], rules=rules, inputs=[{"logDir": "/d", "broker": 1}])
    page = html_of(report)
    parsed = well_formed(page)
    assert parsed.findings == [] and "No findings." in parsed.shown() and "0: no findings" in page
    assert 'class="filters"' not in page


# ----------------------------------------------------------------------------------------------- audit


def replica(broker: int, role: str, leo: int, spans, epochs, **more) -> dict:
    return {
        "cluster": "c1",
        "topic": "t0",
        "partition": 0,
        "partitionKey": "t0-0",
        "broker": broker,
        "logDir": f"/evidence/broker-{broker}",
        "role": role,
        "leaderSource": "kraft",
        "logEndOffset": leo,
        "highWatermark": leo,
        "logStartOffset": 0,
        "latestEpoch": max(e for e, _ in epochs),
        "divergence": None,
        "truncationOffset": None,
        "lostRecords": 0,
        "epochs": epochs,
        "timeline": [
            {"epoch": e, "first": a, "last": b, "records": b - a + 1, "batches": 1} for e, a, b in spans
        ],
        **more,
    }


UNCLEAN_REPLICAS = [
    replica(2, "leader", 650, [(0, 0, 499), (2, 500, 649)], [[0, 0], [2, 500]]),
    replica(
        1,
        "follower",
        750,
        [(0, 0, 749)],
        [[0, 0]],
        divergence=500,
        truncationOffset=500,
        lostRecords=250,
    ),
    replica(3, "follower", 650, [(0, 0, 499), (2, 500, 649)], [[0, 0], [2, 500]], truncationOffset=650),
]


def _timeline_section(topic: str = "t0") -> dict:
    change = {"replicas": [1, 2, 3], "elr": [], "lastKnownElr": [], "fromSnapshot": False}
    return {
        "cluster": "c1",
        "topic": topic,
        "partition": 0,
        "source": {"node": 2, "logDir": "/evidence/broker-2", "endOffset": 27, "records": 23},
        "nodes": [{"node": 1, "endOffset": 19}, {"node": 2, "endOffset": 27}],
        "disagreements": [],
        "partitions": [
            {
                "topic": topic,
                "partition": 0,
                "historyGaps": [],
                "changes": [
                    {**change, "metadataOffset": 14, "time": "2023-11-14T22:13:20.000Z"}
                    | {"type": "PARTITION_RECORD", "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}
                    | {"isr": [1, 2, 3], "leaderRecoveryState": 0},
                    {**change, "metadataOffset": 23, "time": "2023-11-14T22:14:32.470Z"}
                    | {"type": "PARTITION_CHANGE_RECORD", "leader": 2, "leaderEpoch": 2, "partitionEpoch": 4}
                    | {"isr": [2], "leaderRecoveryState": 1, "previousIsr": [1], "unclean": True},
                ],
                "epochs": [
                    {
                        "epoch": 0,
                        "inMetadata": True,
                        "covered": True,
                        "unclean": False,
                        "text": "epoch 0: leader 1",
                    },
                    {
                        "epoch": 2,
                        "inMetadata": True,
                        "covered": True,
                        "unclean": True,
                        "text": "epoch 2: unclean",
                    },
                ],
            }
        ],
    }


def _election(topic: str = "t0") -> dict:
    def cost(b, records, committed):
        return {"broker": b, "records": records, "committedRecords": committed, "markers": 0}

    return {
        "cluster": "c1",
        "topic": topic,
        "partition": 0,
        "why": "broker 2: same last leader epoch 2 and log end offset 650 as broker 3, lower broker id",
        "leastLoss": 2,
        "candidates": [
            {
                "broker": 2,
                "recommended": True,
                "currentLeader": True,
                "lastLeaderEpoch": 2,
                "logEndOffset": 650,
            }
            | {"recordsLost": 250, "committedRecordsLost": 250, "costs": [cost(1, 250, 250), cost(3, 0, 0)]},
            {
                "broker": 1,
                "recommended": False,
                "currentLeader": False,
                "lastLeaderEpoch": 0,
                "logEndOffset": 750,
            }
            | {
                "recordsLost": 300,
                "committedRecordsLost": 300,
                "costs": [cost(2, 150, 150), cost(3, 150, 150)],
            },
        ],
    }


@pytest.fixture(scope="module")
def audit_report() -> Report:
    load_rules()
    codes = ("KA601", "KA620", "KA702", "KA710", "KA713", "KA721")
    ev = {"cluster": "c1"}
    findings = [
        _finding(
            "KA710",
            "250 committed records are lost",
            broker=1,
            topic="t0",
            partition=0,
            offset_start=500,
            offset_end=749,
            epoch=0,
            evidence={**ev, "records": 250, "peer": 2},
        ),
        _finding("KA601", "brokers 1 and 2 diverge at 500", broker=1, topic="t0", partition=0, evidence=ev),
        _finding("KA620", "unclean leader election", broker=2, topic="t0", partition=0, epoch=2, evidence=ev),
        _finding("KA713", "transaction hangs", broker=2, topic="t0", partition=0, evidence=ev),
        _finding(
            "KA721",
            "group orders-app consumed lost records",
            broker=3,
            topic="t0",
            partition=0,
            evidence={**ev, "group": "orders-app"},
        ),
    ]
    transactions = [
        {"cluster": "c1", "topic": "t0", "partition": 0, "leader": 2, "producerId": 7, "producerEpoch": 0}
        | {"firstOffset": 581, "records": 5, "lastStableOffset": 581, "highWatermark": 761}
        | {"markersElsewhere": [{"broker": 1, "offset": 586, "marker": "COMMIT"}], "findings": ["KA713"]}
        | {"coordinatorView": "the coordinator has 't0-producer-0' in state CompleteAbort"},
        {"cluster": "c1", "topic": "t9", "partition": 0, "leader": 2, "producerId": 8, "findings": []},
    ]
    groups = [
        {"cluster": "c1", "group": "orders-app", "offsetsPartition": 12, "offsetsPartitions": 50}
        | {"offsetsPartitionsSource": "kraft", "coordinator": 3, "coordinatorSource": "kraft"}
        | {"topic": "t0", "partition": 0, "committedOffset": 620, "leaderEpoch": 0, "metadata": ""}
        | {"commitTime": "2023-11-14T22:14:00.000Z", "heldBy": [3], "replicas": [3], "leaderHolds": True}
        | {"leader": 2, "leaderLogEndOffset": 650, "lag": 30, "aboveLogEndOffset": False},
        {"cluster": "c1", "group": "safe-app", "offsetsPartition": 3, "topic": "t0", "partition": 0},
    ]
    other = [
        replica(b, "leader" if b == 1 else "follower", 100, [(0, 0, 99)], [[0, 0]]) | {"topic": "quiet"}
        for b in (1, 2)
    ]
    return Report(
        command="audit",
        findings=findings,
        rules=[REGISTRY[c] for c in codes],
        partitions=UNCLEAN_REPLICAS + other,
        inputs=[{"kind": "raw", "path": f"/evidence/broker-{b}"} for b in (1, 2, 3)],
        sections={
            "timelines": [_timeline_section()],
            "elections": [_election()],
            "transactions": transactions,
            "groups": groups,
        },
        command_line="kafka-auditor audit /evidence --format html",
    )


def test_audit_page_has_the_findings_then_the_diverged_partition(audit_report):
    page = html_of(audit_report)
    parsed = well_formed(page)
    assert "<title>kafka-auditor audit report</title>" in page
    order = [i for i in parsed.ids() if i in ("summary", "diverged", "findings", "partitions", "inputs")]
    assert order == ["findings", "diverged", "partitions", "summary", "inputs"]
    header = page[page.index("<header>") : page.index("</header>")]
    assert "log dir /evidence/broker-1 (broker 1)" in header  # the broker of each input, from the rows
    diverged = page[page.index('id="diverged"') : page.index('id="transactions"')]
    assert diverged.count('class="partition ') == 1  # t0-0 only: "quiet" has no finding
    assert "t0-0 · leader 2 (KRaft metadata) · cluster c1" in diverged
    assert "Reference leaders: " in diverged and "2 KRaft metadata" in diverged
    # the replica table: leader first, the diverged follower highlighted with its lost records
    table = re.search(r'<table class="replicas">.*?</table>', diverged, flags=re.S).group(0)
    brokers = re.findall(r"<tr(?: class=\"\w+\")?><td>(\d+)</td><td>(leader|follower)</td>", table)
    assert brokers == [("2", "leader"), ("1", "follower"), ("3", "follower")]
    assert re.search(r'<tr class="diverged"><td>1</td>.*?<td class="num">500</td>.*?>250</strong>', table)
    # each finding of the partition linked to its block
    for f in audit_report.findings:
        assert f'href="#f-{f.fingerprint()}"' in diverged
    assert "Epoch timeline" in diverged and "first divergent offset 500" in diverged
    # KRaft timeline (the unclean change highlighted), the epoch line-up, the election
    assert re.search(
        r'<tr class="unclean"><td class="num">23</td>.*?UNCLEAN election \(previous ISR \[1\]\)', diverged
    )
    assert '<li class="alert">epoch 2: unclean</li>' in diverged
    assert re.search(
        r'<tr class="recommended"><td><span>2 <span class="tag">Kafka&#x27;s choice</span> '
        r'<span class="tag ok">least committed loss</span>',
        diverged,
    )
    assert "Kafka&#x27;s choice: </strong>broker 2: same last leader epoch" in diverged


def test_audit_page_transactions_and_groups_concerned_by_findings(audit_report):
    page = html_of(audit_report)
    txn = page[page.index('id="transactions"') :]
    txn = txn[: txn.index("</section>")]
    assert "7/0" in txn and "COMMIT at 586 on broker 1" in txn and "KA713" in txn
    assert "t9-0" not in txn  # an open transaction no finding concerns
    groups = page[page.index('id="groups"') :]
    groups = groups[: groups.index("</section>")]
    assert (
        "group orders-app" in groups and "__consumer_offsets-12 of 50" in groups and "safe-app" not in groups
    )


def test_audit_page_escapes_hostile_topic_names():
    load_rules()
    rows = [
        {**r, "topic": HOSTILE, "partitionKey": f"{HOSTILE}-0", "cluster": HOSTILE} for r in UNCLEAN_REPLICAS
    ]
    f = _finding(
        "KA601", f"{HOSTILE} diverges", broker=1, topic=HOSTILE, partition=0, evidence={"cluster": HOSTILE}
    )
    report = Report(
        command="audit",
        findings=[f],
        rules=[REGISTRY["KA601"]],
        partitions=rows,
        sections={
            "timelines": [_timeline_section(HOSTILE) | {"cluster": HOSTILE}],
            "elections": [_election(HOSTILE) | {"cluster": HOSTILE}],
        },
    )
    page = html_of(report)
    parsed = well_formed(page)
    assert "<script>alert" not in page and "<b>" not in page
    assert f"{visible(HOSTILE)}-0 · leader 2" in parsed.shown()
    svg = re.search(r"<svg\b.*?</svg>", page, flags=re.S).group(0)
    ET.fromstring(svg)  # the SVG stays well-formed XML
    assert "first divergent offset 500" in svg


# ------------------------------------------------------------------------------------- the epoch timeline


def _svg(replicas, **kw) -> ET.Element:
    return ET.fromstring(epoch_timeline_svg(replicas, **kw))


def _ns(tag: str) -> str:
    return f"{{{SVG}}}{tag}"


def _classes(root: ET.Element) -> set[str]:
    return {el.get("class") for el in root.iter() if el.get("class")}


def test_epoch_timeline_marks_the_first_divergent_offset():
    root = _svg(UNCLEAN_REPLICAS, title="t0-0")
    assert root.tag == _ns("svg") and root.get("data-first-divergent-offset") == "500"
    lanes = root.findall(f"{_ns('g')}[@class='lane']")
    assert [lane.get("data-broker") for lane in lanes] == ["2", "1", "3"]
    # an epoch range per span, coloured per epoch: epochs 0 and 2 differ, equal epochs share a colour
    spans = {
        (lane.get("data-broker"), r.get("data-epoch")): r.get("fill")
        for lane in lanes
        for r in lane.iter(_ns("rect"))
        if r.get("class") == "epoch"
    }
    assert set(spans) == {("2", "0"), ("2", "2"), ("1", "0"), ("3", "0"), ("3", "2")}
    assert spans[("2", "0")] == spans[("1", "0")] != spans[("2", "2")]
    # the divergence: one line across the lanes, in its colour, labelled, at x of offset 500
    div = root.find(f"{_ns('g')}[@class='divergence']")
    assert div is not None and div.get("data-offset") == "500"
    line = div.find(_ns("line"))
    assert line.get("stroke") == DIVERGENCE_COLOUR and float(line.get("stroke-width")) >= 2
    assert "".join(div.find(_ns("text")).itertext()) == "first divergent offset 500"
    top_lane_bar = lanes[0].find(_ns("rect"))
    x0, width = float(top_lane_bar.get("x")), float(top_lane_bar.get("width"))
    assert abs(float(line.get("x1")) - (x0 + width * 500 / 750)) < 1  # offsets 0..750 across the bar
    # the diverged records of broker 1 (500..749) outlined, on its lane only
    diverged = [
        lane.get("data-broker")
        for lane in lanes
        if any(r.get("class") == "diverged" for r in lane.iter(_ns("rect")))
    ]
    assert diverged == ["1"]
    # HW, LEO and cache marks on every lane; HW and LEO values written at the lane's end
    for lane in lanes:
        kinds = [p.get("class") for p in lane.iter(_ns("polygon"))]
        assert kinds.count("hw") == 1 and kinds.count("leo") == 1 and "cache" in kinds
    texts = ["".join(t.itertext()) for t in root.iter(_ns("text"))]
    assert "HW 750 · LEO 750" in texts and texts.count("HW 650 · LEO 650") == 2


def test_epoch_timeline_legend_matches_what_is_drawn():
    root = _svg(UNCLEAN_REPLICAS)
    legend = {
        g.get("data-item"): "".join(g.itertext())
        for g in root.iter(_ns("g"))
        if g.get("class") == "legend-item"
    }
    assert legend == {
        "epoch-0": "epoch 0",
        "epoch-2": "epoch 2",
        "cache": "leader-epoch cache entry",
        "hw": "HW (high watermark)",
        "leo": "LEO (log end offset)",
        "divergence": "first divergent offset",
        "diverged": "diverged records (truncated)",
    }
    # each legend sample has the colour of the mark it names
    samples = {g.get("data-item"): g[0] for g in root.iter(_ns("g")) if g.get("class") == "legend-item"}
    fills = {r.get("data-epoch"): r.get("fill") for r in root.iter(_ns("rect")) if r.get("class") == "epoch"}
    assert samples["epoch-0"].get("fill") == fills["0"] and samples["epoch-2"].get("fill") == fills["2"]
    assert samples["divergence"].get("stroke") == DIVERGENCE_COLOUR


def test_epoch_timeline_without_divergence_draws_and_lists_none():
    agreeing = [replica(b, "leader" if b == 1 else "follower", 650, [(0, 0, 649)], [[0, 0]]) for b in (1, 2)]
    assert first_divergence(agreeing) is None
    svg = epoch_timeline_svg(agreeing)
    root = ET.fromstring(svg)
    assert root.get("data-first-divergent-offset") is None and DIVERGENCE_COLOUR not in svg
    items = {g.get("data-item") for g in root.iter(_ns("g")) if g.get("class") == "legend-item"}
    assert items == {"epoch-0", "cache", "hw", "leo"}
    assert "divergence" not in _classes(root) and "diverged" not in _classes(root)


def test_epoch_timeline_marks_a_replica_diverging_later():
    reps = [dict(r) for r in UNCLEAN_REPLICAS]
    reps[2] = {**reps[2], "divergence": 600, "logEndOffset": 650}
    root = _svg(reps)
    assert root.get("data-first-divergent-offset") == "500"
    own = [el for el in root.iter(_ns("line")) if el.get("class") == "divergence-own"]
    assert len(own) == 1 and own[0].get("stroke") == DIVERGENCE_COLOUR


# ------------------------------------------------------------------------------------ scan end to end


def _scan(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["scan", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def clusters(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html-scan")
    for name in ("clean", "corrupt-batch"):
        result = CliRunner().invoke(app, ["simulate", name, "--out", str(root / name), "--seed", "7"])
        assert result.exit_code == 0, result.output
    hostile = root / "hostile"
    shutil.copytree(root / "corrupt-batch", hostile)
    (hostile / "broker-1" / HOSTILE.replace("/", "_")).write_bytes(b"stray")
    return root


@pytest.mark.parametrize("name", ["clean", "corrupt-batch", "hostile"])
def test_scan_cli_html_of_simulated_clusters(clusters, tmp_path, name):
    out_html, out_json = tmp_path / "page.html", tmp_path / "report.json"
    code, output = _scan([str(clusters / name), "--format", "html", "--output", str(out_html), "--exit-zero"])
    assert code == 0, output
    code, output = _scan([str(clusters / name), "--format", "json", "--output", str(out_json), "--exit-zero"])
    assert code == 0, output
    page = out_html.read_text(encoding="utf-8")
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    parsed = well_formed(page)
    # every finding of the JSON report has its entry (near-identical ones share one), most severe first
    blocks = parsed.findings
    grouped = [b for b in blocks if b["id"].startswith("fact-")]
    assert len(blocks) - len(grouped) + sum(
        int(re.search(r"×(\d+)", b["text"]).group(1)) for b in grouped
    ) == (len(doc["findings"]))
    anchors = {i.split("-")[1] for i in parsed.ids() if i.startswith("f-")}
    assert anchors == {f["fingerprint"] for f in doc["findings"]}
    severities = [Severity.parse(b["severity"]) for b in blocks]
    assert severities == sorted(severities, reverse=True)
    shown = parsed.shown()
    for f in doc["findings"]:
        assert visible(f["message"]) in shown
    for row in doc["inputs"]:
        assert visible(row["logDir"]) in page[: page.index("</header>")].replace("&amp;", "&")
    assert re.search(r'<details open=""?>|<details open>', page), (
        "a small scan's replica table starts unfolded"
    )
    assert shown.count("t0-0") >= 3
    if name == "clean":
        assert doc["findings"] == [] and "0: no findings" in page
    else:
        assert {"KA101", "KA401"} <= {f["code"] for f in doc["findings"]}
    if name == "hostile":
        ka501 = next(b for b in blocks if "KA501" in b["text"])
        assert visible(HOSTILE.replace("/", "_")) in ka501["text"]
        assert "<script>alert" not in page


def test_rule_explanations_show_literals_as_code_not_as_double_back_quotes():
    from auditor.report.page import doc_text, join

    expected = "no <code>.kafka_cleanshutdown</code> marker"
    assert join(doc_text("no ``.kafka_cleanshutdown`` marker")) == expected
    assert join(doc_text("a < b & ``<x>``")) == "a &lt; b &amp; <code>&lt;x&gt;</code>"


def test_audit_page_shows_evidence_as_fields_with_iso_times(audit_report):
    import dataclasses

    loss = audit_report.findings[0]
    timed = dataclasses.replace(
        loss,
        evidence={
            **loss.evidence,
            "firstTimestamp": 1_700_000_006_630,
            "highWatermark": {"1": 750, "2": 650},
        },
    )
    report = dataclasses.replace(audit_report, findings=[timed, *audit_report.findings[1:]])
    page = html_of(report)
    parsed = well_formed(page)
    [block] = [b for b in parsed.findings if "250 committed records are lost" in b["text"]]
    assert "first timestamp2023-11-14T22:13:26.630Z" in block["text"]
    assert '<span title="1700000006630 ms since the epoch">2023-11-14T22:13:26.630Z</span>' in page
    # a nested object as a nested list, never JSON
    assert (
        '<dt title="highWatermark">high watermark</dt><dd><dl class="fields"><dt>1</dt><dd>750</dd>' in page
    )
    findings = page[page.index('id="findings"') : page.index('id="diverged"')]
    assert "{&quot;" not in findings and "[[" not in findings
    # more findings than OPEN_FINDINGS: each one's detail folded; a few: unfolded
    assert len(report.findings) > OPEN_FINDINGS and findings.count("<details open>") == 0
    few = html_of(dataclasses.replace(report, findings=report.findings[:OPEN_FINDINGS]))
    few = few[few.index('id="findings"') : few.index('id="diverged"')]
    assert few.count("<details open>") == OPEN_FINDINGS
