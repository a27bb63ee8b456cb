"""auditor.report.escape: every control, bidi and surrogate character becomes a visible escape, and the text,
HTML, JUnit, Prometheus and audit renderers draw only escaped strings (built here as unit-level Reports)."""

from __future__ import annotations

import io
import json
import re
import unicodedata
from html.parser import HTMLParser
from xml.dom import minidom
from xml.etree import ElementTree as ET

import pytest

from auditor.findings import Finding, Severity
from auditor.report import Report, render
from auditor.report.escape import escaped
from auditor.rules.registry import REGISTRY, load_rules
from auditor.text import UNSAFE, visible, visible_data

ESC_NAME = "notes\x1b[31mRED\x1b[0m.txt"
RLO_NAME = "invoice\u202etxt.exe"
NEWLINE_NAME = "a\nKA999 forged finding"
MARKUP_NAME = "[bold red]markup[/bold red][link=https://evil.example]click[/link]"
BYTE_NAME = "bad\udcff\udc80"  # os.fsdecode of b"bad\xff\x80"
HOSTILE = (ESC_NAME, RLO_NAME, NEWLINE_NAME, MARKUP_NAME, BYTE_NAME, "c1\x9b31m\x7f\x00", "<b>&amp;</b>")
RAW = re.compile("[\x1b\u202e\u202d\x9b\x00\x7f\ud800-\udfff]")

# XML 1.0 section 2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
NOT_XML10 = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("x\u202ey\u202dz\u202a\u202b\u202c", "x\\u202ey\\u202dz\\u202a\\u202b\\u202c"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("l1\nl2\r\t", "l1\\nl2\\r\\t"),
        ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),
        ("bad\udcff", "bad\\xff"),
        ("\ud800", "\\ud800"),
        ("\ufeff\ufffe\uffff\u2028", "\\ufeff\\ufffe\\uffff\\u2028"),
        ("orders-0/00000000000000000000.log", "orders-0/00000000000000000000.log"),
        ("caf\u00e9 \u65e5\u672c \U0001f600", "caf\u00e9 \u65e5\u672c \U0001f600"),
    ],
)
def test_visible(raw, shown):
    assert visible(raw) == shown
    assert visible(shown) == shown  # idempotent: escaping twice changes nothing


def test_plain_strings_are_returned_as_they_are():
    text = "orders-0"
    assert visible(text) is text
    data = {"topic": "orders", "files": ["a.log", ("b", 1)]}
    assert visible_data(data) is data
    assert visible_data({"k\x1b": ["\u202e"]}) == {"k\\x1b": ["\\u202e"]}


def test_no_code_point_survives_that_a_terminal_or_xml_would_misread():
    everything = visible("".join(map(chr, range(0x110000))))  # escapes apply character by character
    assert not NOT_XML10.search(everything)
    # Unicode has control (Cc), surrogate (Cs) and bidi-control characters in the BMP only
    for ch in set(everything[: everything.index("\U00010000")]):
        assert unicodedata.category(ch) not in ("Cc", "Cs"), hex(ord(ch))
        bidi = unicodedata.bidirectional(ch)
        assert bidi not in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI", "B"), hex(ord(ch))


# --------------------------------------------------------------------------------------- a hostile report


def _finding(code: str, name: str, **kw) -> Finding:
    rule = REGISTRY[code]
    return Finding(
        code,
        rule.severity,
        f"unknown file {name} in the log dir",
        name=rule.name,
        broker=1,
        log_dir=f"/evidence/{name}/broker-1",
        file=f"/evidence/{name}/broker-1/{name}",
        position=0,
        evidence={"file": name, "nested": [name, {"k": name}]},
        **kw,
    )


@pytest.fixture(scope="module")
def hostile() -> Report:
    load_rules()
    findings = [_finding("KA501", n) for n in HOSTILE]
    findings += [
        _finding("KA002", n, topic=f"t{n}", partition=0, offset_start=3, offset_end=9, epoch=2)
        for n in HOSTILE
    ]
    partitions = [
        {
            "broker": 1,
            "logDir": f"/evidence/{n}/broker-1",
            "topic": f"t{n}",
            "partition": 0,
            "directory": f"t{n}-0",
        }
        for n in HOSTILE
    ]
    return Report(
        command="scan",
        findings=findings,
        rules=[REGISTRY["KA501"], REGISTRY["KA002"]],
        partitions=partitions,
        inputs=[{"logDir": f"/evidence/{n}/broker-1", "broker": 1} for n in HOSTILE],
        stats={"logDirs": len(HOSTILE)},
        partition_columns=[("broker", "broker"), ("directory", "partition"), ("logDir", "log dir")],
        errors=[f"cannot read /evidence/{n}: Permission denied" for n in HOSTILE],
    )


def _render(report: Report, fmt: str, **kw) -> str:
    out = io.StringIO()
    render(report, fmt, out, **kw)
    return out.getvalue()


def test_escaped_copies_and_leaves_the_report_alone(hostile):
    before = [f.to_dict() for f in hostile.findings]
    safe = escaped(hostile)
    assert [f.to_dict() for f in hostile.findings] == before
    for f in safe.findings:
        for value in (
            f.message,
            f.log_dir,
            f.file,
            f.topic or "",
            json.dumps(f.evidence, ensure_ascii=False),
        ):
            assert not UNSAFE.search(value), value
    assert not any(UNSAFE.search(e) for e in safe.errors)
    assert not any(UNSAFE.search(json.dumps(p, ensure_ascii=False)) for p in safe.partitions)


@pytest.mark.parametrize("color", [False, True])
def test_text(hostile, color, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    text = _render(hostile, "text", color=color)
    if color:
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the renderer's own colour codes
    assert not RAW.search(text)
    assert "\\x1b[31mRED\\x1b[0m" in text and "invoice\\u202etxt.exe" in text and "bad\\xff\\x80" in text
    assert "a\\nKA999 forged finding" in text
    assert not any(line.lstrip("│ ").startswith("KA999") for line in text.splitlines())
    assert "[bold red]markup[/bold red]" in text and "[link=https://evil.example]click[/link]" in text


def test_html(hostile):
    page = _render(hostile, "html")
    assert not RAW.search(page)

    class Collect(HTMLParser):
        data: list[str] = []

        def handle_data(self, data: str) -> None:
            self.data.append(data)

    parser = Collect()
    parser.feed(page)
    parser.close()
    shown = "".join(parser.data).replace("\xa0", " ")
    assert "<b>&amp;</b>" in shown  # escaped by the page, shown literally by the browser
    assert "[bold red]markup[/bold red]" in shown and "invoice\\u202etxt.exe" in shown
    assert "<b>" not in page


def test_junit_is_xml_10_whatever_the_names(hostile):
    document = _render(hostile, "junit")
    assert not NOT_XML10.search(document)
    minidom.parseString(document.encode("utf-8"))
    root = ET.fromstring(document)
    names = {tc.get("classname") for tc in root.iter("testcase")}
    assert any(n.endswith(".tinvoice\\u202etxt.exe-0") for n in names)
    assert any(n.endswith(".tnotes\\x1b[31mRED\\x1b[0m.txt-0") for n in names)
    text = " ".join((e.text or "") + " ".join(e.attrib.values()) for e in root.iter())
    assert "a\\nKA999 forged finding" in text and "bad\\xff\\x80" in text


def test_json_keeps_the_exact_names_escaped_by_the_encoder(hostile):
    for fmt in ("json", "sarif"):
        document = _render(hostile, fmt)
        assert document.isascii() and not RAW.search(document)
        json.loads(document)
    doc = json.loads(_render(hostile, "json"))
    assert {f["evidence"]["file"] for f in doc["findings"]} == set(HOSTILE)
    for line in _render(hostile, "jsonl").splitlines():
        assert json.loads(line)["evidence"]["file"] in HOSTILE


def test_sarif_uris_are_percent_encoded_and_messages_visible(hostile):
    from tests.report.test_sarif import check_github_sarif, validate_sarif

    doc = json.loads(_render(hostile, "sarif"))
    validate_sarif(doc)
    check_github_sarif(doc)
    run = doc["runs"][0]
    uri = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")  # RFC 3986 characters only
    for result in run["results"]:
        art = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert uri.match(art["uri"]), art["uri"]
        assert not UNSAFE.search(result["message"]["text"])
    for base in run["originalUriBaseIds"].values():
        assert uri.match(base["uri"]), base["uri"]
    assert any(r["properties"]["evidence"]["file"] == RLO_NAME for r in run["results"])  # exact in properties


LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{{{LABEL}(?:,{LABEL})*\}})? -?[0-9.e+]+$")


def test_prometheus_label_values_follow_the_exposition_format(hostile):
    import dataclasses

    weird = dataclasses.replace(hostile, command='scan"\\\n\x1b\u202e')
    text = _render(weird, "prometheus")
    assert not RAW.search(text)
    for line in text.splitlines():
        assert line.startswith("# ") or SAMPLE.match(line), line
    assert 'command="scan\\"\\\\\\\\n\\\\x1b\\\\u202e"' in text
    from prometheus_client.parser import text_string_to_metric_families

    commands = {
        s.labels["command"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if "command" in s.labels
    }
    assert commands == {'scan"\\\\n\\x1b\\u202e'}, commands


# ------------------------------------------------------------------------------------------- audit renderers


@pytest.fixture(scope="module")
def audit_report() -> Report:
    load_rules()
    topic = f"orders{ESC_NAME}{RLO_NAME}{MARKUP_NAME}{BYTE_NAME}"
    rows = [
        {
            "cluster": "c\x1b1",
            "topic": topic,
            "partition": 0,
            "broker": b,
            "role": role,
            "leaderSource": "inferred",
            "logEndOffset": leo,
            "highWatermark": 8,
            "logStartOffset": 0,
            "latestEpoch": 2,
            "divergence": 8 if b == 2 else None,
            "truncationOffset": 8 if b == 2 else None,
            "lostRecords": 2 if b == 2 else 0,
            "tail": "torn\x1b[2J" if b == 2 else "end",
            "timeline": [{"epoch": 2, "first": 0, "last": leo - 1, "records": leo}],
            "epochs": [(2, 0)],
        }
        for b, role, leo in ((1, "leader", 12), (2, "follower", 10))
    ]
    finding = Finding(
        "KA002",
        Severity.ERROR,
        f"{topic}-0 diverges",
        name=REGISTRY["KA002"].name,
        broker=2,
        log_dir=f"/evidence/{NEWLINE_NAME}",
        topic=topic,
        partition=0,
        evidence={"cluster": "c\x1b1"},
    )
    return Report(
        command="audit",
        findings=[finding],
        rules=[REGISTRY["KA002"]],
        partitions=rows,
        partition_columns=[("broker", "broker"), ("topic", "topic"), ("tail", "tail")],
    )


def test_audit_text_and_html_are_escaped(audit_report):
    out = io.StringIO()
    render(audit_report, "text", out, color=False, width=400)
    text = out.getvalue()
    assert "Epoch timeline" in text  # the diverged-partition panel was drawn
    assert not RAW.search(text)
    assert "orders" + visible(ESC_NAME) in text and "torn\\x1b[2J" in text and "[bold red]markup" in text
    page = io.StringIO()
    render(audit_report, "html", page)
    assert not RAW.search(page.getvalue()) and "Epoch timeline" in page.getvalue()


def test_exceptions_in_evidence_become_one_line():
    java = RuntimeError(
        "An error occurred while calling o7.x.\n: java.io.IOException: gone\n\tat a.B(B.java:1)"
    )
    f = Finding("KA002", Severity.ERROR, "m", evidence={"error": java, "more": [ValueError("v\nw")]})
    assert f.to_dict()["evidence"] == {
        "error": "RuntimeError: An error occurred while calling o7.x. java.io.IOException: gone",
        "more": ["ValueError: v"],
    }
    assert "B.java" not in json.dumps(f.to_dict())


def test_colour_on_request_even_on_a_dumb_terminal(hostile, monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert re.search(r"\x1b\[[0-9;]*m", _render(hostile, "text", color=True))
    assert "\x1b" not in _render(hostile, "text")  # not a terminal: plain
