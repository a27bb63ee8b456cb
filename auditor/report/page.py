"""A self-contained HTML page built from sections as data: inline CSS, a few lines of inline script (a
severity filter and a text search over the findings), no external resource (a Content-Security-Policy
forbids any).

The builders return :class:`Markup` (HTML known to be safe); every other string handed to them is text and
is escaped (:func:`esc`: control and bidi characters made visible, then ``&<>"'`` escaped), so a topic or
file name from the evidence can never become markup. A page is a :class:`Page` of :class:`Section` objects;
:func:`report_page` gives the sections every reporting command shares (inputs, summary, findings with the
rule's explanation, errors) and takes the command's own (``report``: the history charts,
:mod:`auditor.report.history`). Void elements are written self-closed (``<meta ... />``), so the page
reads back as balanced tags.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.findings import Finding, Severity
from auditor.report import fields as evidence_fields
from auditor.report.facts import Fact, facts
from auditor.report.fields import Field
from auditor.report.model import TOOL_NAME, Report
from auditor.report.verdicts import VerdictBlock
from auditor.text import visible


class Markup(str):
    """A string of HTML that is safe as it is (built here, or by :mod:`auditor.report.svg`)."""

    __slots__ = ()


def esc(value: object) -> Markup:
    """``value`` as HTML text: :class:`Markup` as is, anything else made visible and escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(visible("" if value is None else str(value)), quote=True))


def join(parts: Iterable[object]) -> Markup:
    return Markup("".join(esc(p) for p in parts))


VOID = frozenset({"meta", "input", "br", "hr", "img", "link"})


def tag(element: str, /, *content: object, **attrs: object) -> Markup:
    """``<element attrs>content</element>`` (a void element self-closed). Attribute names lose a trailing
    ``_`` (``class_``) and turn ``_`` into ``-`` (``data_severity``); None and False drop the attribute,
    True writes it bare."""
    parts = [element]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        parts.append(attr if value is True else f'{attr}="{esc(value)}"')
    head = " ".join(parts)
    if element in VOID:
        return Markup(f"<{head} />")
    return Markup(f"<{head}>{join(content)}</{element}>")


def table(
    headers: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    class_: str | None = None,
    row_class: Callable[[int], str | None] | None = None,
) -> Markup:
    """A table: ``headers`` and ``rows`` of cells (text, or :class:`Markup`)."""
    head = tag("thead", tag("tr", *(tag("th", h) for h in headers)))
    body = [
        tag("tr", *(tag("td", c) for c in row), class_=row_class(i) if row_class else None)
        for i, row in enumerate(rows)
    ]
    return tag("table", head, tag("tbody", *body), class_=class_)


def definition_list(items: Iterable[tuple[object, object]]) -> Markup:
    return tag("dl", *(join([tag("dt", k), tag("dd", v)]) for k, v in items if v not in (None, "")))


def field_list(items: Iterable[Field], *, class_: str = "fields") -> Markup:
    """Fields (:mod:`auditor.report.fields`) as a definition list: the label (the stored key in its
    ``title``), the value as read (a time's stored value in its ``title``), a nested object as a nested
    list."""
    rows = []
    for f in items:
        value: list[object] = [tag("span", f.text, title=f.raw)] if f.raw is not None else [f.text]
        if f.fields:
            value.append(field_list(f.fields, class_=class_))
        rows.append(join([tag("dt", f.label, title=f.key if f.key != f.label else None), tag("dd", *value)]))
    return tag("dl", *rows, class_=class_)


@dataclass
class Section:
    """One part of a page: a heading and its blocks (text or :class:`Markup`), in order."""

    title: str
    blocks: list[object] = field(default_factory=list)
    id: str = ""


@dataclass
class Page:
    """A page: its title, the header's facts (label, value) and its sections."""

    title: str
    facts: list[tuple[str, object]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


CSS = """
:root{--critical:#8b0000;--error:#c62828;--warning:#a06000;--info:#00639b;--line:#d0d7de;--muted:#57606a}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2328}
header{background:#f6f8fa;border-bottom:1px solid var(--line);padding:16px 24px}
header h1{margin:0 0 8px;font-size:20px}
main{padding:8px 24px 40px;max-width:1200px}
h2{font-size:17px;border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:28px}
h3{font-size:15px;margin:18px 0 6px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:6px 0 12px;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num,th.num{text-align:right}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.sev{display:inline-block;min-width:62px;padding:1px 6px;border-radius:10px;color:#fff;font-size:12px;
text-align:center}
.sev-critical{background:var(--critical)}.sev-error{background:var(--error)}
.sev-warning{background:var(--warning)}.sev-info{background:var(--info)}
.finding{border:1px solid var(--line);border-left:5px solid var(--line);border-radius:4px;padding:5px 12px;
margin:6px 0}
.finding.critical{border-left-color:var(--critical)}.finding.error{border-left-color:var(--error)}
.finding.warning{border-left-color:var(--warning)}.finding.info{border-left-color:var(--info)}
.finding .message{font-weight:600;margin:4px 0}
details{margin-top:6px}summary{cursor:pointer;color:var(--muted)}
.filters{position:sticky;top:0;background:#fff;padding:8px 0;border-bottom:1px solid var(--line)}
.filters label{margin-right:12px}.filters input[type=search]{width:280px;margin-left:8px}
tr.changed td{background:#fff4ce}tr.drop td{background:#ffe1e1}
mark{background:#ffe08a}del{color:var(--error)}.fork{outline:2px solid var(--error)}
.muted{color:var(--muted)}svg.chart{max-width:100%;height:auto;display:block;margin:8px 0}
nav.toc{margin-top:8px}nav.toc a{margin-right:14px}
.finding>dl{display:flex;flex-wrap:wrap;gap:2px 6px}.finding>dl dd{margin-right:14px}
.partition{border:1px solid var(--line);border-left:5px solid var(--line);border-radius:4px;padding:4px 14px;
margin:14px 0}
.partition.critical{border-left-color:var(--critical)}.partition.error{border-left-color:var(--error)}
.partition.warning{border-left-color:var(--warning)}
h4{font-size:14px;margin:14px 0 4px}figure{margin:6px 0}figcaption{font-size:12px}
tr.diverged td,tr.unclean td,tr.flagged td{background:#fdecef}tr.recommended td{background:#eaf6ec}
.lost{color:var(--critical)}.warn{color:var(--warning)}.alert{color:var(--error);font-weight:600}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:#ddf4ff;font-size:12px}
.tag.ok{background:#dafbe1}ul.costs,ul.epochs{margin:0;padding-left:18px}
.verdict{font-weight:600}.verdict.fail{color:var(--error)}.verdict.pass{color:#1a7f37}
dl.fields{grid-template-columns:max-content 1fr;margin:4px 0}dl.fields dl.fields{margin:0}
dl.fields span[title]{text-decoration:underline dotted}
.finding>details{margin:0}.finding>details>summary{color:inherit}
.finding>details>summary .message{display:block;margin:2px 0 0}
.verdicts p{margin:8px 0 0}.verdicts ul,.verdicts ol{margin:0}.verdicts details.steps{margin:0 0 0 22px}
details.topic{border:1px solid var(--line);border-radius:4px;padding:4px 12px;margin:8px 0}
details.topic>summary{color:inherit}details.topic>summary ul{margin:2px 0 0;color:var(--muted)}
ul.replicas{margin:2px 0;padding-left:18px}
"""

SCRIPT = """
(function(){
  var boxes=document.querySelectorAll('.filters input[type=checkbox]');
  var search=document.getElementById('search');var shown=document.getElementById('shown');
  var root=document.documentElement;
  if(!search||!shown){root.setAttribute('data-filter','none');return;}
  function apply(){
    var on={};boxes.forEach(function(b){on[b.value]=b.checked;});
    var q=(search.value||'').toLowerCase();var n=0;
    document.querySelectorAll('.finding').forEach(function(f){
      var ok=on[f.dataset.severity]&&(!q||f.textContent.toLowerCase().indexOf(q)>=0);
      f.hidden=!ok;if(ok){n++;}
    });
    shown.textContent=n;root.setAttribute('data-filter','ready');root.setAttribute('data-shown',String(n));
  }
  boxes.forEach(function(b){b.addEventListener('change',apply);});
  search.addEventListener('input',apply);apply();
})();
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def render_page(page: Page) -> str:
    """The whole document."""
    head = join(
        [
            tag("meta", charset="utf-8"),
            tag("meta", http_equiv="Content-Security-Policy", content=CSP),
            tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
            tag("title", page.title),
            tag("style", Markup(CSS)),
        ]
    )
    links = [tag("a", s.title, href=f"#{s.id}") for s in page.sections if s.blocks and s.id]
    toc = tag("nav", *links, class_="toc") if len(links) > 1 else Markup("")
    header = tag("header", tag("h1", page.title), definition_list(page.facts), toc)
    sections = [
        tag("section", tag("h2", s.title), *s.blocks, id=s.id or None) for s in page.sections if s.blocks
    ]
    body = tag("body", header, tag("main", *sections), tag("script", Markup(SCRIPT)))
    return "<!DOCTYPE html>\n" + tag("html", tag("head", head), body, lang="en") + "\n"


# ------------------------------------------------------------------------------ report sections


def severity_badge(severity: Severity) -> Markup:
    return tag("span", severity.label, class_=f"sev sev-{severity.label}")


def report_facts(report: Report) -> list[tuple[str, object]]:
    """The header's facts: tool and version, generation time, command line, inputs, exit code."""
    return [
        ("tool", f"{TOOL_NAME} {report.tool_version}"),
        ("generated", report.iso_time()),
        ("command line", tag("code", report.command_line or f"{TOOL_NAME} {report.command}")),
        *(("input", describe_input(row)) for row in report.inputs[:MAX_INPUT_FACTS]),
        (
            "input",
            f"... and {len(report.inputs) - MAX_INPUT_FACTS} more (see Inputs)"
            if len(report.inputs) > MAX_INPUT_FACTS
            else None,
        ),
        (
            "exit code",
            tag("span", verdict(report), class_="verdict fail" if report.failing else "verdict pass"),
        ),
    ]


MAX_INPUT_FACTS = 12
"""The header names at most this many inputs; the Inputs section lists every one."""


def verdict(report: Report) -> str:
    """The exit code and why (as the text report's last line)."""
    code, failing = report.exit_code, len(report.failing)
    threshold = report.fail_on.label if report.fail_on is not None else "never"
    if report.incomplete:
        return f"2: the input could not be read completely ({len(report.errors)} input error(s))"
    if not report.findings:
        return "0: no findings"
    if code == 0 and failing:
        return f"0 (--exit-zero): {failing} finding(s) at or above {threshold}"
    if code == 0:
        return f"0: no finding at or above {threshold}"
    return f"{code}: {failing} finding(s) at or above {threshold}"


INPUT_KINDS = {"raw": "log dir", "parquet": "extract"}
"""How the header names an input's ``kind`` (``audit``'s sources); a row with a ``logDir`` is a log dir."""
INPUT_FACTS = ("broker", "clusterId", "cluster", "label", "version", "lastIngest")
"""The fields of an input the header shows beside its path (the Inputs section shows them all)."""


def describe_input(row: dict[str, Any]) -> str:
    """One input in a line: its kind and path (or log dir), then its broker, cluster and the like."""
    kind = row.get("kind") or ("log dir" if row.get("logDir") is not None else None)
    path = row.get("path") if row.get("path") is not None else row.get("logDir")
    head = " ".join(str(v) for v in (INPUT_KINDS.get(kind, kind), path) if v is not None)
    rest = [f"{k} {row[k]}" for k in INPUT_FACTS if row.get(k) not in (None, "", [], {})]
    return head + (f" ({', '.join(rest)})" if rest else "")


def _cell(value: Any, key: str = "") -> object:
    """A value of an input or statistic: an object or a list as fields, a time as ISO-8601 UTC."""
    if value is None:
        return ""
    shown = evidence_fields.field(key, value)
    if shown.fields:
        return field_list(shown.fields)
    if shown.raw is not None:
        return tag("span", shown.text, title=shown.raw)
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else shown.text


def inputs_section(report: Report) -> Section:
    """One row per input, with every key any input has."""
    keys: list[str] = []
    for row in report.inputs:
        keys += [k for k in row if k not in keys]
    blocks: list[object] = []
    if report.inputs:
        blocks.append(table(keys, ([_cell(row.get(k), k) for k in keys] for row in report.inputs)))
    if report.stats:
        blocks.append(definition_list((k, _cell(v, k)) for k, v in report.stats.items()))
    return Section("Inputs and statistics", blocks, id="inputs")


def summary_section(report: Report) -> Section:
    """Counts by severity and by check."""
    summary = report.summary()
    by_sev = table(
        ["severity", "findings"],
        [[severity_badge(Severity.parse(s)), n] for s, n in summary["bySeverity"].items()],
    )
    titles = {r.code: r.title for r in report.rules}
    first: dict[str, str] = {}
    for f in sorted(report.findings, key=finding_order):
        first.setdefault(f.code, f.fingerprint())
    blocks: list[object] = [by_sev]
    blocks += [tag("p", note, class_="muted") for note in report.suppressed_notes()]
    if summary["byCode"]:
        rows = [
            [tag("a", code, href=f"#f-{first[code]}"), info["name"]]
            + [severity_badge(Severity.parse(info["severity"])), info["count"], titles.get(code, "")]
            for code, info in summary["byCode"].items()
        ]
        blocks.append(table(["code", "check", "severity", "count", "meaning"], rows))
    else:
        blocks.append(tag("p", "No findings.", class_="muted"))
    return Section("Summary", blocks, id="summary")


def finding_order(f: Finding) -> tuple:
    """Most severe first, then by location (partition, broker, time, file, offset)."""
    return (
        -int(f.severity),
        f.topic is None,
        f.topic or "",
        f.partition if f.partition is not None else -1,
        f.broker if f.broker is not None else -1,
        f.time or "",
        f.log_dir or "",
        f.file or "",
        f.position if f.position is not None else -1,
        f.offset_start if f.offset_start is not None else -1,
        f.code,
    )


def finding_location(f: Finding) -> list[tuple[str, object]]:
    offsets = None
    if f.offset_start is not None:
        end = f.offset_end if f.offset_end not in (None, f.offset_start) else None
        offsets = f"{f.offset_start}" + (f"..{end}" if end is not None else "")
    return [
        ("broker", f.broker),
        ("partition", f.partition_key),
        ("log dir", f.log_dir),
        (
            "file",
            None if f.file is None else f.file + (f" @ byte {f.position}" if f.position is not None else ""),
        ),
        ("offsets", offsets),
        ("leader epoch", f.epoch),
        ("captured", f.time),
    ]


def doc_text(text: str) -> list[object]:
    """A rule's documentation text as HTML parts: its ``literal`` spans (reStructuredText's double back
    quotes, as the rule docstrings write file names and settings) become ``<code>``, the rest stays text."""
    parts: list[object] = []
    for i, piece in enumerate(text.split("``")):
        if piece:
            parts.append(tag("code", piece) if i % 2 else piece)
    return parts


def rule_explanation(report: Report, code: str) -> Markup:
    rule = next((r for r in report.rules if r.code == code), None)
    if rule is None:
        return Markup("")
    paras = [tag("p", tag("strong", f"{name}: "), *doc_text(text)) for name, text in rule.sections.items()]
    return tag("details", tag("summary", f"{rule.code} {rule.name}: {rule.title}"), *paras)


OPEN_FINDINGS = 3
"""A page listing at most this many entries shows each finding's details unfolded; a longer page shows each
finding's severity, code and message and folds the rest (its location, evidence and explanation), so what
follows the findings (the audit's diverged partitions, the history charts) stays near the top."""


def _related(report: Report, f: Finding) -> Markup:
    """What ``f`` is linked to: the other replica it was compared with, and the findings of the same fact,
    each a link to its entry with its message (the primary one marked)."""
    messages = {g.fingerprint(): g.message for g in report.findings}
    items = []
    for r in f.related:
        if not isinstance(r, dict):
            continue
        if r.get("fingerprint"):
            label = f"{r.get('code') or 'finding'}" + (" (the primary finding)" if r.get("primary") else "")
            said = messages.get(r["fingerprint"])
            link = tag("a", label, href=f"#f-{r['fingerprint']}")
            items.append(tag("li", link, f": {said}" if said else ""))
        elif r.get("broker") is not None:
            where = f"{r['topic']}-{r['partition']}" if r.get("topic") is not None else None
            items.append(tag("li", f"the replica on broker {r['broker']}" + (f" ({where})" if where else "")))
        else:
            items.append(tag("li", ", ".join(f"{k} {v}" for k, v in r.items())))
    return tag("ul", *items, class_="related") if items else Markup("")


def finding_body(report: Report, f: Finding) -> list[object]:
    """Where ``f`` is, its evidence as fields (times ISO-8601 UTC), the findings of the same fact, the rule's
    explanation."""
    parts: list[object] = [definition_list(finding_location(f))]
    if f.evidence:
        # the evidence as every machine format names it (camelCase keys, one data contract)
        parts += [tag("h4", "Evidence"), field_list(evidence_fields.fields(f.to_dict()["evidence"]))]
    if f.related:
        parts += [tag("h4", "Related"), _related(report, f)]
    parts.append(rule_explanation(report, f.code))
    return parts


def _head(f: Finding, message: str, extra: object = "") -> Markup:
    return tag(
        "summary",
        severity_badge(f.severity),
        " ",
        tag("code", f.code),
        " ",
        f.name,
        extra,
        tag("span", message, class_="message"),
    )


def finding_block(report: Report, f: Finding, anchor: str | None = None, *, unfolded: bool = True) -> Markup:
    """One finding: its severity, code, check and message always shown; its location, evidence, related
    findings and the rule's explanation folded unless ``unfolded``."""
    return tag(
        "div",
        tag("details", _head(f, f.message), *finding_body(report, f), open=unfolded),
        class_=f"finding {f.severity.label}",
        id=anchor or f"f-{f.fingerprint()}",
        data_severity=f.severity.label,
    )


def fact_block(report: Report, fact: Fact, anchors: Callable[[Finding], str], *, unfolded: bool) -> Markup:
    """Near-identical findings as one entry: the masked message, the partitions and brokers it covers (each
    finding's anchor on its broker), then the first finding's location, evidence and explanation."""
    first = fact.first
    rows = []
    for where, members in fact.partitions():
        links: list[object] = []
        for f in members:
            label = f"broker {f.broker}" if f.broker is not None else "here"
            links += [", " if links else "", tag("a", label, id=anchors(f), href=f"#{anchors(f)}")]
        rows.append(tag("li", where, ": ", *links))
    body = [
        tag("p", f"{len(fact.findings)} near-identical findings, one per partition replica: ", fact.where()),
        tag("ul", *rows, class_="replicas"),
        tag("h4", "The first of them"),
        *finding_body(report, first),
    ]
    return tag(
        "div",
        tag("details", _head(first, fact.message, f" ×{len(fact.findings)}"), *body, open=unfolded),
        class_=f"finding {first.severity.label} fact",
        id=f"fact-{first.fingerprint()}",
        data_severity=first.severity.label,
    )


def filters() -> Markup:
    boxes = [
        tag("label", tag("input", type="checkbox", value=s.label, checked=True), " ", s.label)
        for s in sorted(Severity, reverse=True)
    ]
    search = tag(
        "label", "search ", tag("input", type="search", id="search", placeholder="topic, code, text")
    )
    shown = tag("span", tag("span", "", id="shown"), " shown", class_="muted")
    return tag("div", *boxes, search, " ", shown, class_="filters")


def findings_section(report: Report) -> Section:
    """Every listed finding, most severe first, near-identical ones as one entry
    (:mod:`auditor.report.facts`), behind the severity filter and the search box."""
    listed = [f for f in report.findings if report.min_severity is None or f.severity >= report.min_severity]
    ordered = sorted(listed, key=finding_order)
    notes: list[object] = []
    if len(listed) < len(report.findings):
        notes.append(
            tag(
                "p",
                f"{len(report.findings) - len(listed)} finding(s) below {report.min_severity} are counted "
                "in the summary, not listed (--min-severity)",
                class_="muted",
            )
        )
    notes += [tag("p", note, class_="muted") for note in report.suppressed_notes()]
    if not ordered:
        return Section("Findings", [*notes, tag("p", "No findings.", class_="muted")], id="findings")
    entries = facts(ordered)
    if len(entries) < len(ordered):
        notes.append(
            tag(
                "p",
                f"{len(ordered)} findings as {len(entries)} entries: near-identical findings of one topic "
                "are one entry listing its partitions (--format json lists each)",
                class_="muted",
            )
        )
    ids: dict[int, str] = {}
    seen: dict[str, int] = {}
    for f in ordered:  # two findings may share a fingerprint: each gets its own id
        base = f"f-{f.fingerprint()}"
        seen[base] = seen.get(base, 0) + 1
        ids[id(f)] = base if seen[base] == 1 else f"{base}-{seen[base]}"
    unfolded = len(entries) <= OPEN_FINDINGS
    blocks = [
        fact_block(report, e, lambda f: ids[id(f)], unfolded=unfolded)
        if e.grouped
        else finding_block(report, e.first, ids[id(e.first)], unfolded=unfolded)
        for e in entries
    ]
    return Section("Findings", [*notes, filters(), *blocks], id="findings")


def errors_section(report: Report) -> Section:
    blocks = [tag("ul", *(tag("li", e) for e in report.errors))] if report.errors else []
    return Section("Errors", blocks, id="errors")


FOLDED_STEPS = Severity.WARNING
"""The next steps of a verdict at or below this severity are folded on the page (a month of warnings stays
a short answer); those of the more severe verdicts are shown."""


def verdict_section(blocks: Iterable[VerdictBlock]) -> Section:
    """The verdict (:func:`auditor.report.verdicts.verdict_blocks`): each block's head line, the lines
    under it as a list, its next steps as an ordered list (folded for the verdicts at warning or below)."""
    out: list[object] = []
    for b in blocks:
        out.append(tag("p", tag("strong", b.head)))
        if b.details:
            out.append(tag("ul", *(tag("li", d) for d in b.details)))
        if not b.steps:
            continue
        steps = tag("ol", *(tag("li", s) for s in b.steps))
        if b.severity is not None and Severity.parse(b.severity) <= FOLDED_STEPS:
            steps = tag("details", tag("summary", f"next steps ({len(b.steps)})"), steps, class_="steps")
        out.append(steps)
    return Section("Verdict", [tag("div", *out, class_="verdicts")], id="verdict")


def report_page(
    report: Report,
    extra: Callable[[Report], list[Section]] | None = None,
    *,
    verdict: Section | None = None,
) -> Page:
    """The page of ``report``: header, the ``verdict``, errors, findings, then ``extra``'s sections, the
    summary by check and the inputs. The report is used as it is (every string is escaped as the page is
    built), so the findings' anchors are their fingerprints in JSON and SARIF even when a name needed
    escaping."""
    sections = [verdict] if verdict is not None else []
    sections += [errors_section(report), findings_section(report)]
    if extra is not None:
        sections += extra(report)
    sections += [summary_section(report), inputs_section(report)]
    return Page(f"{TOOL_NAME} {report.command}", report_facts(report), sections)
