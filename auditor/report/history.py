"""The history part of ``kafka-auditor report``: the replicas' checkpoint history of every partition with a
finding, for JSON (section ``history``), text (a compact high-watermark table per partition) and HTML (an SVG
chart of each replica's high watermark over capture time and the leader-epoch history as a table).

:func:`history_section` turns the charts and captures of the history run (objects with ``cluster``,
``topic``, ``partition``, ``high_watermarks`` {broker: [(time ms, HW)]} and ``epochs`` {broker: [(time ms,
[(epoch, start offset)])]} at each change; capture dicts with ``cluster``, ``broker``, ``captureTime``,
``logDirs``) into the JSON-ready section every renderer reads, so text, JSON and HTML show the same data.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import IO, Any

from rich import box
from rich.table import Table
from rich.text import Text

from auditor.findings import Finding
from auditor.report.facts import facts
from auditor.report.model import Gauge, Report
from auditor.report.page import (
    Markup,
    Section,
    render_page,
    report_page,
    severity_badge,
    table,
    tag,
    verdict_section,
)
from auditor.report.svg import iso_ms, step_chart
from auditor.report.terminal import Layout, verdict_renderables
from auditor.report.verdicts import history_verdict_blocks, history_verdict_lines
from auditor.text import visible

TIME_FROM = {
    "manifest": "manifest",
    "name": "folder or archive name",
    "archive": "archive member times",
    "mtime": "file mtimes (suspect)",
    "ingest": "ingest time (suspect)",
}
"""How the page names a capture's ``timeSource``."""
TEXT_CHARTS = 50
HTML_CHARTS = 200
"""At most this many flagged partitions get a table (text) or a chart (HTML), the most severe first; the
JSON report holds every one."""
TEXT_PER_TOPIC = 3
"""The text report draws the tables of at most this many partitions of one topic (a re-created topic
flags every partition alike); the HTML page draws them all."""
SUMMARY_LINES = 3
"""A topic's folded block of charts shows this many lines of what its findings say."""
TEXT_ROWS = 12
"""A partition's text table shows at most about this many capture rounds: the first and the last, each
round with a finding or a drop and the one before it; the others are elided."""


def to_ms(value: Any) -> int:
    """A capture time as ms since the epoch: an int (ms), a datetime or pandas Timestamp, or ISO-8601."""
    if isinstance(value, str):
        return to_ms(dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(round(value.timestamp() * 1000))
    return int(value)


def chart_key(cluster: Any, topic: Any, partition: Any) -> tuple[str, str, int]:
    return (str(cluster or ""), str(topic), int(partition))


def finding_cluster(f: Finding) -> str | None:
    value = f.evidence.get("cluster") if isinstance(f.evidence, dict) else None
    return None if value is None else str(value)


def belongs(f: Finding, key: tuple[str, str, int]) -> bool:
    """Whether ``f`` is about the partition ``key`` (its cluster, when the finding names one); names are
    compared as shown, so a finding whose names were made :func:`visible` still belongs."""
    if f.topic is None or f.partition is None or f.partition != key[2] or visible(f.topic) != visible(key[1]):
        return False
    cluster = finding_cluster(f)
    return cluster is None or visible(cluster) == visible(key[0])


def chart_json(chart: Any) -> dict[str, Any]:
    """One partition's history, JSON-ready (times in ms since the epoch, UTC)."""
    hws = chart.high_watermarks or {}
    epochs = chart.epochs or {}
    return {
        "cluster": chart.cluster,
        "topic": chart.topic,
        "partition": int(chart.partition),
        "highWatermarks": [
            {
                "broker": int(b),
                "points": [[to_ms(t), int(v)] for t, v in sorted(hws[b], key=lambda p: to_ms(p[0]))],
            }
            for b in sorted(hws)
        ],
        "epochs": [
            {
                "broker": int(b),
                "changes": [
                    {"time": to_ms(t), "entries": [[int(e), int(s)] for e, s in entries]}
                    for t, entries in sorted(epochs[b], key=lambda p: to_ms(p[0]))
                ],
            }
            for b in sorted(epochs)
        ],
    }


def captures_json(captures: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The latest capture of every broker: cluster, broker, capture time (ISO and ms), where that time came
    from (``timeSource``: manifest, name, archive, mtime or ingest), log dirs."""
    out = []
    for c in captures:
        ms = to_ms(c["captureTime"])
        out.append(
            {
                "cluster": c.get("cluster"),
                "broker": c.get("broker"),
                "captureTime": iso_ms(ms),
                "captureTimeMs": ms,
                "timeSource": c.get("timeSource"),
                "logDirs": list(c.get("logDirs") or []),
            }
        )
    return sorted(out, key=lambda c: (str(c["cluster"]), c["broker"] if c["broker"] is not None else -1))


def history_section(
    charts: Iterable[Any], captures: Iterable[Mapping[str, Any]], findings: list[Finding]
) -> dict:
    """Section ``history``: the charts of the partitions ``findings`` are about (each with the fingerprints
    of its findings) and the latest capture per broker."""
    out = []
    for chart in charts:
        key = chart_key(chart.cluster, chart.topic, chart.partition)
        mine = [f.fingerprint() for f in findings if belongs(f, key)]
        if mine:
            out.append({**chart_json(chart), "findings": mine})
    out.sort(key=lambda c: chart_key(c["cluster"], c["topic"], c["partition"]))
    return {"charts": out, "captures": captures_json(captures)}


def history_gauges(
    captures: list[dict[str, Any]], last_ingest_ms: int | None, report_time: float
) -> list[Gauge]:
    """The ``report`` textfile's gauges: the last capture per broker, the last ingest, this report."""
    gauges = [
        Gauge(
            "kafka_auditor_last_capture_timestamp_seconds",
            "Capture time of the newest capture of each broker in the warehouse.",
            c["captureTimeMs"] / 1000,
            {"cluster": c["cluster"], "broker": c["broker"]},
        )
        for c in captures
    ]
    if last_ingest_ms is not None:
        gauges.append(
            Gauge(
                "kafka_auditor_last_ingest_timestamp_seconds",
                "End of the last successful ingest into the warehouse.",
                last_ingest_ms / 1000,
            )
        )
    gauges.append(
        Gauge(
            "kafka_auditor_last_report_timestamp_seconds",
            "When this report was generated (the file is replaced only by a successful report).",
            round(report_time, 3),
        )
    )
    return gauges


# ------------------------------------------------------------------------------------------- rounds


def hw_rounds(chart: dict[str, Any]) -> tuple[list[int], list[tuple[int, dict[int, tuple[int, bool]]]]]:
    """The brokers and the capture rounds of a chart: captures in time order, a new round starting when a
    broker already in the current one is captured again (a nightly run of every broker is one round). Each
    round: its first capture time and, per broker, (HW, lower than that broker's capture before)."""
    points = sorted((t, s["broker"], v) for s in chart["highWatermarks"] for t, v in s["points"])
    brokers = sorted({b for _, b, _ in points})
    rounds: list[tuple[int, dict[int, tuple[int, bool]]]] = []
    current: dict[int, tuple[int, bool]] = {}
    start = 0
    last: dict[int, int] = {}
    for t, b, v in points:
        if b in current or not current:
            if current:
                rounds.append((start, current))
            current, start = {}, t
        current[b] = (v, b in last and v < last[b])
        last[b] = v
    if current:
        rounds.append((start, current))
    return brokers, rounds


def compact(rounds: list, marked: Iterable[int], limit: int = TEXT_ROWS) -> list[int | None]:
    """Indexes of the rounds to show (None: an elided run): all when few, else the first, the last, every
    round with a drop or a ``marked`` time (a finding) and the round before each."""
    n = len(rounds)
    if n <= limit:
        return list(range(n))
    marks = set(marked)
    keep = {0, n - 1}
    for i, (start, cells) in enumerate(rounds):
        end = rounds[i + 1][0] if i + 1 < n else None
        hit = any(start <= m and (end is None or m < end) for m in marks)
        if hit or any(drop for _, drop in cells.values()):
            keep |= {i, max(0, i - 1)}
    out: list[int | None] = []
    for i in sorted(keep):
        if out and out[-1] is not None and i != out[-1] + 1:
            out.append(None)
        out.append(i)
    return out


def _finding_times(report: Report, key: tuple[str, str, int]) -> list[int]:
    return [to_ms(f.time) for f in report.findings if f.time and belongs(f, key)]


def _charts(report: Report, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The first ``limit`` charts of the partitions whose findings the report lists (``--min-severity``),
    those with the most severe findings first, and how many were left out."""
    shown: dict[tuple[str, int], list[Finding]] = {}
    for f in report.shown:
        if f.topic is not None and f.partition is not None:
            shown.setdefault((visible(f.topic), f.partition), []).append(f)
    worst: dict[tuple[str, str, int], int] = {}
    for c in (report.sections.get("history") or {}).get("charts") or []:
        key = chart_key(c["cluster"], c["topic"], c["partition"])
        mine = shown.get((visible(key[1]), key[2]), [])
        severities = [int(f.severity) for f in mine if belongs(f, key)]
        if severities:
            worst[key] = max(severities)
    charts = [
        c
        for c in (report.sections.get("history") or {}).get("charts") or []
        if chart_key(c["cluster"], c["topic"], c["partition"]) in worst
    ]

    def order(chart: dict[str, Any]) -> tuple:
        key = chart_key(chart["cluster"], chart["topic"], chart["partition"])
        return (-worst[key], key)

    charts.sort(key=order)
    return charts[:limit], max(0, len(charts) - limit)


def replicas_of(report: Report) -> dict[tuple[str, str, int], list[int]]:
    """The brokers of each partition with a chart (the replicas its history has), for the next steps."""
    return {
        chart_key(c["cluster"], c["topic"], c["partition"]): sorted(s["broker"] for s in c["highWatermarks"])
        for c in (report.sections.get("history") or {}).get("charts") or []
    }


def verdict_lines(report: Report) -> list[str]:
    """The verdict of ``report`` (:func:`auditor.report.verdicts.history_verdict_lines`)."""
    return history_verdict_lines(report.findings, report.stats, replicas_of(report))


def text_verdict(report: Report) -> list:
    """Text: the verdict, first."""
    return verdict_renderables(verdict_lines(report))


def _left_out(n: int) -> str:
    return f"{n} more partition(s) with findings not drawn here: --format json holds every one"


def _title(chart: dict[str, Any]) -> str:
    return f"{chart['topic']}-{chart['partition']} (cluster {chart['cluster']})"


def text_panels(report: Report) -> list:
    """Text: per flagged partition, its high watermark per broker at each capture round (``↓``: lower than
    that broker's capture before; ``*``: a finding's capture)."""
    out: list = []
    charts, omitted = _charts(report, TEXT_CHARTS)
    per_topic: dict[tuple[str, str], int] = {}
    for chart in charts:
        key = chart_key(chart["cluster"], chart["topic"], chart["partition"])
        per_topic[key[:2]] = per_topic.get(key[:2], 0) + 1
        if per_topic[key[:2]] > TEXT_PER_TOPIC:
            continue
        marks = _finding_times(report, key)
        brokers, rounds = hw_rounds(chart)
        if not rounds:
            continue
        tbl = Table(
            title=visible(f"High watermarks · {_title(chart)}"),
            box=box.SIMPLE_HEAD,
            title_justify="left",
            show_edge=False,
        )
        tbl.add_column("captured (UTC)", no_wrap=True)
        for b in brokers:
            tbl.add_column(f"broker {b}", justify="right", no_wrap=True)
        for i in compact(rounds, marks):
            if i is None:
                tbl.add_row("…", *("" for _ in brokers))
                continue
            start, cells = rounds[i]
            end = rounds[i + 1][0] if i + 1 < len(rounds) else None
            flagged = any(start <= m and (end is None or m < end) for m in marks)
            row: list[Text | str] = [iso_ms(start)[:16].replace("T", " ") + (" *" if flagged else "")]
            for b in brokers:
                if b not in cells:
                    row.append("")
                    continue
                value, drop = cells[b]
                row.append(Text(f"{value:,} ↓", style="bold red") if drop else f"{value:,}")
            tbl.add_row(*row)
        out.append(tbl)
    for (cluster, topic), n in per_topic.items():
        if n > TEXT_PER_TOPIC:
            more = f"{n - TEXT_PER_TOPIC} more partition(s) of {topic}"
            out.append(
                Text(f"{more} (cluster {cluster}) with findings: --format html draws each", style="dim")
            )
    if omitted:
        out.append(Text(_left_out(omitted), style="dim"))
    return out


HISTORY_LAYOUT = Layout(lead=text_verdict, trailer=text_panels)
"""The text layout of ``report``: the verdict first, the plain report, then a high-watermark table per
partition whose findings are listed."""


# --------------------------------------------------------------------------------------------- HTML


def _entries(entries: list[list[int]], before: list[list[int]] | None, epochs: set[int]) -> Markup:
    """A cache's entries, each new or moved one marked, each removed one struck through, the epochs the
    findings name outlined."""
    old = {e: s for e, s in (before or [])}
    now = {e: s for e, s in entries}
    parts = []
    for e, s in entries:
        text = f"({e}, {s:,})"
        cls = "fork" if e in epochs else None
        changed = before is not None and old.get(e) != s
        parts.append(tag("mark", text, class_=cls) if changed else tag("span", text, class_=cls))
    for e, s in before or []:
        if e not in now:
            parts.append(tag("del", f"({e}, {s:,})", title="removed"))
    return tag("span", *(p for part in parts for p in (part, " ")), class_="mono")


def epoch_table(chart: dict[str, Any], epochs: set[int]) -> Markup:
    """Every change of each replica's leader-epoch cache: broker, capture time, the (epoch, start offset)
    entries; a row that removed or moved an entry is highlighted."""
    rows, classes = [], []
    for series in chart["epochs"]:
        before: list[list[int]] | None = None
        for change in series["changes"]:
            entries = change["entries"]
            rewritten = before is not None and any(dict(entries).get(e) != s for e, s in before)
            rows.append(
                [f"broker {series['broker']}", iso_ms(change["time"]), _entries(entries, before, epochs)]
            )
            classes.append("changed" if rewritten else None)
            before = entries
    if not rows:
        return tag("p", "No leader-epoch-checkpoint captured.", class_="muted")
    return table(
        ["replica", "captured (UTC)", "leader-epoch-checkpoint entries (epoch, start offset)"],
        rows,
        row_class=lambda i: classes[i],
    )


def partition_blocks(report: Report, chart: dict[str, Any], by_print: dict[str, Finding]) -> list[object]:
    """One partition: its findings (links to their entries), the chart of its replicas' high watermarks over
    capture time (the findings' capture times marked) and its leader-epoch history."""
    key = chart_key(chart["cluster"], chart["topic"], chart["partition"])
    mine = [by_print[p] for p in chart.get("findings", []) if p in by_print]
    marks = sorted({(to_ms(f.time), f.code) for f in mine if f.time})
    series = {f"broker {s['broker']}": [tuple(p) for p in s["points"]] for s in chart["highWatermarks"]}
    links = [tag("li", tag("a", f.code, href=f"#f-{f.fingerprint()}"), " ", f.message) for f in mine]
    return [
        tag("h3", _title(chart), id=f"p-{key[0]}-{key[1]}-{key[2]}"),
        tag("ul", *links) if links else Markup(""),
        Markup(
            step_chart(
                series,
                marks=marks,
                title=f"High watermark of each replica · {key[1]}-{key[2]}",
                y_label="high watermark",
            )
        ),
        epoch_table(chart, {f.epoch for f in mine if f.epoch is not None}),
    ]


def topic_block(report: Report, charts: list[dict[str, Any]], by_print: dict[str, Finding]) -> Markup:
    """The charts of one topic's partitions, folded: the summary names the topic, its worst severity, its
    partitions and the first lines of what its findings say (near-identical ones once)."""
    first = charts[0]
    mine = [by_print[p] for c in charts for p in c.get("findings", []) if p in by_print]
    worst = max(f.severity for f in mine)
    names = ", ".join(f"{c['topic']}-{c['partition']}" for c in charts)
    said = []
    for fact in facts(sorted(mine, key=lambda f: -int(f.severity))):
        said.append(f"{fact.code} {fact.message}" + (f" ({fact.where()})" if fact.grouped else ""))
    lines = [tag("li", line) for line in said[:SUMMARY_LINES]]
    if len(said) > SUMMARY_LINES:
        lines.append(tag("li", f"… and {len(said) - SUMMARY_LINES} more"))
    summary = tag(
        "summary",
        severity_badge(worst),
        " ",
        tag("strong", f"topic {first['topic']}"),
        f" (cluster {first['cluster']}) · {len(charts)} partition(s) with findings: {names}",
        tag("ul", *lines),
    )
    blocks = [b for c in charts for b in partition_blocks(report, c, by_print)]
    key = f"t-{first['cluster']}-{first['topic']}"
    return tag("details", summary, *blocks, class_="topic", id=key, data_severity=worst.label)


def chart_sections(report: Report) -> list[Section]:
    """HTML: per topic with listed findings, a folded block of its partitions' charts and epoch histories
    (the topic with the most severe findings first); then the latest capture per broker."""
    by_print = {f.fingerprint(): f for f in report.findings}
    charts, omitted = _charts(report, HTML_CHARTS)
    topics: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for chart in charts:  # the most severe first, so is each topic's first chart
        topics.setdefault(chart_key(chart["cluster"], chart["topic"], 0)[:2], []).append(chart)
    blocks: list[object] = []
    if topics:
        blocks.append(
            tag(
                "p",
                "Each topic's partitions are folded: open one for the high watermark of each replica over "
                "capture time and its leader-epoch history.",
                class_="muted",
            )
        )
    for group in topics.values():
        group.sort(key=lambda c: int(c["partition"]))
        blocks.append(topic_block(report, group, by_print))
    if omitted:
        blocks.append(tag("p", _left_out(omitted), class_="muted"))
    captures = (report.sections.get("history") or {}).get("captures") or []
    capture_rows = [
        [
            c["cluster"],
            c["broker"],
            c["captureTime"],
            TIME_FROM.get(c.get("timeSource") or "", "unknown"),
            ", ".join(map(str, c["logDirs"])),
        ]
        for c in captures
    ]
    out = [Section("Partitions with findings", blocks, id="history")]
    if capture_rows:
        out.append(
            Section(
                "Latest capture per broker",
                [table(["cluster", "broker", "captured (UTC)", "time from", "log dirs"], capture_rows)],
                id="captures",
            )
        )
    return out


def render_history_html(report: Report, out: IO[str]) -> None:
    """The HTML page of ``report``: the verdict, the findings, the history charts folded per topic and the
    epoch tables, then the shared sections."""
    blocks = history_verdict_blocks(report.findings, report.stats, replicas_of(report))
    verdict = verdict_section(blocks)
    out.write(render_page(report_page(report, chart_sections, verdict=verdict)))


__all__ = [
    "HISTORY_LAYOUT",
    "chart_sections",
    "history_gauges",
    "history_section",
    "render_history_html",
]
