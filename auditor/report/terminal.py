"""The terminal report (Rich): header, summary by severity and by code, detail per partition, verdict, with
the parts a command adds (:class:`Layout`; ``audit``'s in :mod:`auditor.report.audit_terminal`).

Colour only on a terminal without ``NO_COLOR``; when piped (or written to a file) the same layout is plain
text at the width given by ``COLUMNS`` (default 100). Not a stable surface: machines read ``--format json``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from auditor.findings import Finding, Severity
from auditor.report.escape import escaped
from auditor.report.facts import Fact, facts
from auditor.report.model import TOOL_NAME, Report
from auditor.report.progress import human_bytes

STYLES = {
    Severity.CRITICAL: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
DEFAULT_WIDTH = 100


def make_console(
    out: IO[str], *, color: bool | None = None, width: int | None = None, record: bool = False
) -> Console:
    """A console for ``out``: colour when ``color`` (None: when ``out`` is a terminal and NO_COLOR is
    unset). Colour asked for explicitly is drawn even where Rich would detect none (piped, ``TERM=dumb``).
    Console markup is off: text from the evidence (``[bold]``, ``[link=...]`` in a file name) prints as
    is."""
    is_tty = hasattr(out, "isatty") and out.isatty()
    requested = bool(color)
    if color is None:
        color = is_tty and not os.environ.get("NO_COLOR")
    system = "auto"
    if requested and (not is_tty or os.environ.get("TERM", "dumb") in ("dumb", "unknown")):
        system = "standard"
    if width is None and not is_tty:
        try:
            width = int(os.environ.get("COLUMNS", DEFAULT_WIDTH))
        except ValueError:
            width = DEFAULT_WIDTH
    return Console(
        file=out,
        width=width,
        color_system=system if color else None,
        no_color=not color,
        force_terminal=color and not is_tty or None,
        markup=False,
        highlight=False,
        emoji=False,
        record=record,
        soft_wrap=False,
    )


def _sev(severity: Severity) -> Text:
    return Text(severity.label, style=STYLES[severity])


def _human_bytes(n: int | float | None) -> str:
    """Bytes in binary units (B, KiB, MiB...), as the progress display counts them."""
    return human_bytes(n or 0)


def _where(f: Finding) -> str:
    parts = []
    if f.file:
        parts.append(os.path.basename(f.file) + (f"@{f.position}" if f.position is not None else ""))
    if f.offset_start is not None:
        end = f"..{f.offset_end}" if f.offset_end not in (None, f.offset_start) else ""
        parts.append(f"offsets {f.offset_start}{end}")
    if f.epoch is not None:
        parts.append(f"epoch {f.epoch}")
    return " ".join(parts)


def header(report: Report) -> Text:
    s = report.stats
    text = Text(f"{TOOL_NAME} {report.command}", style="bold")
    bits = []
    if "logDirs" in s and (s["logDirs"] or not s.get("extracts")):
        bits.append(f"{s['logDirs']} log dir(s)")
    if s.get("extracts"):
        bits.append(f"{s['extracts']} extract(s)")
    if "partitions" in s:
        bits.append(f"{s['partitions']} partition(s)")
    if "segments" in s:
        bits.append(f"{s['segments']} segment(s)")
    if "bytes" in s:
        bits.append(_human_bytes(s["bytes"]))
    if "seconds" in s:
        bits.append(f"{s['seconds']:.2f} s")
    if bits:
        text.append(": " + ", ".join(bits))
    return text


def summary_tables(report: Report) -> list:
    summary = report.summary()
    line = Text("Findings: ")
    for i, s in enumerate(sorted(Severity, reverse=True)):
        if i:
            line.append(", ")
        n = summary["bySeverity"][s.label]
        line.append(f"{n} {s.label}", style=STYLES[s] if n else "dim")
    for note in report.suppressed_notes():
        line.append(f"; {note}", style="dim")
    out: list = [line]
    if summary["byCode"]:
        out.append(Fitting(_codes_table(report, summary, True), _codes_table(report, summary, False), 110))
    return out


def _codes_table(report: Report, summary: dict, names: bool) -> Table:
    """The findings by check: code, (``names``: the check's name), severity, count and meaning."""
    titles = {r.code: r.title for r in report.rules}
    codes = Table(title="Findings by check", box=box.SIMPLE_HEAD, title_justify="left", show_edge=False)
    codes.add_column("code", no_wrap=True)
    if names:
        codes.add_column("check", no_wrap=True)
    codes.add_column("severity", no_wrap=True)
    codes.add_column("count", justify="right", no_wrap=True)
    codes.add_column("meaning", overflow="fold", min_width=24, ratio=1)
    for code, info in summary["byCode"].items():
        cells = [code, info["name"]] if names else [code]
        cells += [_sev(Severity.parse(info["severity"])), str(info["count"]), titles.get(code, "")]
        codes.add_row(*cells)
    return codes


class Fitting:
    """``wide`` when the console is at least ``needs`` columns wide, else ``narrow``: a table whose numbers
    or names Rich would otherwise crop or fold gives way to a narrower arrangement of the same facts."""

    def __init__(self, wide: object, narrow: object, needs: int) -> None:
        self.wide, self.narrow, self.needs = wide, narrow, needs

    def __rich_console__(self, console, options):
        yield self.wide if options.max_width >= self.needs else self.narrow


def _short(path: str | None) -> str:
    if not path:
        return "?"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    if rel.startswith(".."):
        rel = path
    if len(rel) <= 48:
        return rel
    parts = path.rstrip(os.sep).split(os.sep)
    return os.sep.join(["…", *parts[-2:]])


def _group_title(key: tuple, findings: list[Finding]) -> str:
    f = findings[0]
    who = f"broker {f.broker}" if f.broker is not None else "broker ?"
    if f.topic is None:
        return f"{who} · log dir {_short(f.log_dir)}"
    return f"{who} · {f.partition_key} · {_short(f.log_dir)}"


def location_key(f: Finding) -> tuple:
    """Where a finding is, for grouping: log-dir findings first, then by partition replica."""
    return (
        f.topic is not None,
        f.topic or "",
        f.partition if f.partition is not None else -1,
        f.broker if f.broker is not None else -1,
        f.log_dir or "",
    )


def severity_groups(findings: list[Finding]) -> list[tuple[tuple, list[Finding]]]:
    """``findings`` grouped by location (:func:`location_key`), the groups ordered by their most severe
    finding first, then by location; inside a group most severe first, then by code and position."""
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault(location_key(f), []).append(f)
    for members in groups.values():
        members.sort(key=lambda x: (-int(x.severity), x.code, x.position or 0, x.offset_start or 0))
    return sorted(groups.items(), key=lambda kv: (-max(int(f.severity) for f in kv[1]), kv[0]))


def hidden_line(report: Report) -> Text | None:
    """How many findings the display leaves out (``--min-severity``, ``-q``), by severity, and how to list
    them; None when every finding is listed."""
    hidden = report.hidden
    if not hidden:
        return None
    counts = {s: sum(1 for f in hidden if f.severity == s) for s in sorted(Severity, reverse=True)}
    parts = ", ".join(f"{n} {s.label}" for s, n in counts.items() if n)
    lowest = min(f.severity for f in hidden)
    how = "without -q" if report.quiet else f"--min-severity {lowest.label}"
    return Text(f"Not listed below: {parts} (counted above; {how} lists them)", style="dim")


def _rows_table() -> Table:
    table = Table(box=None, show_header=False, show_edge=False, pad_edge=False, expand=True)
    table.add_column("severity", no_wrap=True, width=8)
    table.add_column("code", no_wrap=True, width=5)
    table.add_column("finding", overflow="fold", ratio=1)
    return table


def _fact_panel(fact: Fact) -> Panel:
    """Near-identical findings as one panel: the message (partition and broker masked where they differ)
    and the partitions with their brokers."""
    table = _rows_table()
    text = Text(fact.message)
    where = "; ".join(
        f"{p} on broker(s) " + ", ".join(str(f.broker) if f.broker is not None else "?" for f in members)
        for p, members in fact.partitions()
    )
    text.append(f"\n{where}", style="dim")
    table.add_row(_sev(fact.severity), fact.code, text)
    return Panel(table, title=Text(fact.where(), style="bold"), title_align="left", box=box.ROUNDED)


def detail(report: Report) -> list:
    """One panel per location (most severe first), near-identical findings of several locations as one
    panel of their own (:mod:`auditor.report.facts`)."""
    entries = facts(report.shown)
    singles = [e.first for e in entries if not e.grouped]
    panels: list[tuple[tuple, Panel]] = [
        ((-int(e.severity), location_key(e.first)), _fact_panel(e)) for e in entries if e.grouped
    ]
    for key, findings in severity_groups(singles):
        table = _rows_table()
        for f in _primaries_first(findings):
            text = Text(f.message)
            where = _where(f)
            if where:
                text.append("\n" + where, style="dim")
            primary = _primary(f)
            if primary is not None:  # one fact: shown under the finding it follows from
                text = Text("↳ same offsets as ", style="dim") + Text(f"{primary}: ", style="dim") + text
            table.add_row(_sev(f.severity), f.code, text)
        panel = Panel(
            table,
            title=Text(_group_title(key, findings), style="bold"),
            title_align="left",
            box=box.ROUNDED,
        )
        panels.append(((-max(int(f.severity) for f in findings), key), panel))
    return [panel for _, panel in sorted(panels, key=lambda kp: kp[0])]


def _primary(f: Finding) -> str | None:
    """The code of the finding ``f`` follows from (``related`` marked ``primary``), or None."""
    for r in f.related:
        if isinstance(r, dict) and r.get("primary"):
            return r.get("code")
    return None


def _primaries_first(findings: list[Finding]) -> list[Finding]:
    """``findings`` in their order, each finding linked to a primary moved right after it."""
    codes = {f.code for f in findings}
    followers = [f for f in findings if _primary(f) in codes]
    out: list[Finding] = []
    for f in findings:
        if f in followers:
            continue
        out.append(f)
        mine = {r.get("fingerprint") for r in f.related if isinstance(r, dict) and not r.get("primary")}
        out += [g for g in followers if g.fingerprint() in mine and g not in out]
    return out + [f for f in followers if f not in out]


def partitions_table(report: Report) -> Table | None:
    if not report.partition_columns or not report.partitions:
        return None
    table = Table(title="Partitions", box=box.SIMPLE_HEAD, title_justify="left", show_edge=False)
    for _key, head in report.partition_columns:
        table.add_column(head, overflow="fold")
    for row in report.partitions:
        table.add_row(*("" if row.get(k) is None else str(row.get(k)) for k, _ in report.partition_columns))
    return table


def verdict(report: Report) -> Text:
    code = report.exit_code
    failing = len(report.failing)
    threshold = report.fail_on.label if report.fail_on is not None else "never"
    if report.incomplete:
        return Text(
            f"exit 2: the input could not be read completely ({len(report.errors)} input error(s); see "
            "KA001/KA002)",
            style="bold red",
        )
    if not report.findings:
        return Text("exit 0: no findings", style="bold green")
    if code == 0 and failing:
        return Text(
            f"exit 0 (--exit-zero): {failing} finding(s) at or above {threshold}", style="bold yellow"
        )
    if code == 0:
        return Text(f"exit 0: no finding at or above {threshold}", style="bold green")
    return Text(f"exit 1: {failing} finding(s) at or above {threshold}", style="bold red")


def _nothing(report: Report) -> list:
    return []


@dataclass(frozen=True)
class Layout:
    """What a command adds to the people's report (text and HTML): ``lead``, lines after the input errors;
    ``panels``, after the summary (``audit``: the reference leaders, the diverged partitions' replicas);
    ``trailer``, after the findings (``report``: the high-watermark tables of the findings listed)."""

    lead: Callable[[Report], list] = _nothing
    panels: Callable[[Report], list] = _nothing
    trailer: Callable[[Report], list] = _nothing


def verdict_renderables(lines: list[str]) -> list:
    """Verdict lines (:func:`auditor.report.verdicts.verdict_lines`) under a "Verdict" heading: head lines
    bold, the others indented, each numbered next step wrapping under itself after its number."""
    out: list = [Text("Verdict", style="bold underline")]
    for line in lines:
        stripped = line.lstrip(" ")
        if stripped == line:  # a head line, or the count of the others
            out.append(Text(line, style="bold"))
            continue
        mark, _, rest = stripped.partition(" ")
        numbered = mark.endswith(".") and mark[:-1].isdigit()
        grid = Table.grid(padding=(0, 1))  # the text wraps under itself, after its number or indent
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold", ratio=1)
        grid.add_row(Text("  " + mark) if numbered else Text(" "), Text(rest if numbered else stripped))
        out.append(grid)
    return out


PLAIN = Layout()
"""The layout of a report with nothing command-specific (``scan``)."""


def build(report: Report, layout: Layout = PLAIN) -> Group:
    """The whole report as Rich renderables, every string from the evidence made :func:`visible`."""
    report = escaped(report)
    hidden = hidden_line(report)
    if report.quiet:
        # -q: the summary line, the input errors, the findings at or above --fail-on and the verdict
        parts: list = [summary_tables(report)[0]]
        parts += [Text(f"error: {err}", style="bold red") for err in report.errors]
        parts += [hidden] if hidden is not None else []
        parts += detail(report)
        parts.append(verdict(report))
        return Group(*parts)
    parts = [header(report)]
    for err in report.errors:
        parts.append(Text(f"error: {err}", style="bold red"))
    parts += layout.lead(report)
    parts += summary_tables(report)
    parts += layout.panels(report)
    pt = partitions_table(report)
    if pt is not None:
        parts.append(pt)
    if hidden is not None:
        parts.append(hidden)
    parts += detail(report)
    parts += layout.trailer(report)
    parts.append(verdict(report))
    return Group(*parts)


def render_text(
    report: Report,
    out: IO[str],
    *,
    color: bool | None = None,
    width: int | None = None,
    layout: Layout = PLAIN,
) -> None:
    make_console(out, color=color, width=width).print(build(report, layout))
