"""What the ``audit`` report adds for people (text and HTML, :data:`AUDIT_LAYOUT`): the reference leaders
and, for every partition whose replicas diverge or violate a high watermark, the replicas side by side and
an epoch timeline.

Drawn from the report's ``partitions`` rows (one per replica, built by ``auditor.cli.audit``) inside the
layout of :mod:`auditor.report.terminal`; :func:`auditor.report.render` picks it for ``audit`` reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from auditor.findings import Severity
from auditor.report.election import election_table
from auditor.report.groups import group_tables
from auditor.report.model import Report
from auditor.report.terminal import STYLES, Fitting, Layout, verdict_renderables
from auditor.report.timeline import partition_renderable
from auditor.report.transactions import transactions_table

TIMELINE_WIDTH = 48
_EPOCH_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SOURCES = {
    "kraft": "KRaft metadata",
    "kraft-last-known": "last known KRaft leader (partition offline)",
    "inferred-kraft-leader-absent": "inferred (KRaft leader not among the inputs)",
    "inferred": "inferred (highest latest epoch, then LEO)",
}


def _partition_groups(rows: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row.get("cluster") or "", row["topic"], row["partition"]), []).append(row)
    for replicas in out.values():
        replicas.sort(key=lambda r: (r.get("role") != "leader", r["broker"]))
    return out


def _flagged(report: Report) -> dict[tuple, Severity]:
    """Partitions with a cross-replica finding above info that the display lists (``--min-severity``),
    with their worst severity."""
    out: dict[tuple, Severity] = {}
    for f in report.findings:
        if f.topic is None or f.severity <= Severity.INFO or not report.listed(f):
            continue
        key = (f.evidence.get("cluster") or "", f.topic, f.partition)
        out[key] = max(out.get(key, f.severity), f.severity)
    return out


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _incomplete(r: dict[str, Any]) -> Text | str:
    """The offsets of a replica that could not be read (KA691): ``from..last`` or ``from..`` (to the end)."""
    lo = r.get("unreadableFrom")
    if lo is None:
        return ""
    hi = r.get("unreadableTo")
    return Text(f"{lo}..{hi - 1}" if hi is not None else f"{lo}..", style=STYLES[Severity.ERROR])


def replicas_table(replicas: list[dict[str, Any]]) -> Table | Fitting:
    """The replicas of one partition side by side (numbers are never cut: headers wrap instead)."""
    rows = []
    for r in replicas:
        lost = r.get("lostRecords") or 0
        rows.append(
            [
                str(r["broker"]),
                r.get("role", ""),
                # an unknown log end offset (unreadable to the end, KA691) shows its lower bound
                ("≥" if r.get("logEndOffsetKnown") is False else "") + _cell(r.get("logEndOffset")),
                _cell(r.get("highWatermark")),
                _cell(r.get("logStartOffset")),
                _cell(r.get("latestEpoch")),
                _cell(r.get("divergence")),
                _cell(r.get("truncationOffset")),
                Text(str(lost), style=STYLES[Severity.CRITICAL] if lost else ""),
                _cell(r.get("lagRecords") or None),
                _incomplete(r),
                _cell(r.get("tail")) if r.get("tail") not in (None, "end") else "",
            ]
        )
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    heads = (
        ("broker", "left"),
        ("role", "left"),
        ("LEO", "right"),
        ("HW", "right"),
        ("log\nstart", "right"),
        ("latest\nepoch", "right"),
        ("diverges\nat", "right"),
        ("Kafka\ntruncates to", "right"),
        ("lost\nrecords", "right"),
        ("records\nbehind", "right"),
        ("unreadable\noffsets", "left"),
        ("tail", "left"),
    )
    # the last three columns (lag, unreadable offsets, tail) only when some replica has something there
    keep = [i for i in range(len(heads)) if i < len(heads) - 3 or any(str(row[i]) for row in rows)]
    widths = []
    for i in keep:
        head, justify = heads[i]
        widest = max([len(str(row[i])) for row in rows] + [max(len(part) for part in head.split("\n"))])
        widths.append(widest)
        table.add_column(head, justify=justify, no_wrap=True, min_width=widest)
    for row in rows:
        table.add_row(*[row[i] for i in keep])
    # too narrow a terminal for a column per field: a row per field, a column per replica (numbers whole)
    narrow = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    narrow.add_column("", no_wrap=True)
    for row in rows:
        narrow.add_column(f"broker {row[0]}", justify="right", no_wrap=True)
    for i in keep[1:]:
        narrow.add_row(heads[i][0].replace("\n", " "), *[row[i] for row in rows])
    return Fitting(table, narrow, sum(widths) + 3 * len(widths))


def timeline(replicas: list[dict[str, Any]], width: int = TIMELINE_WIDTH) -> Table:
    """Leader epochs along the offsets of each replica: one character per offset bucket (the epoch of the
    batches there, ``.`` nothing), the leader-epoch cache entries and the first divergent offset."""
    spans = [e for r in replicas for e in r.get("timeline") or []]
    starts = [r.get("logStartOffset") or 0 for r in replicas]
    lo = min([e["first"] for e in spans] + starts) if spans else min(starts, default=0)
    hi = max([e["last"] + 1 for e in spans] + [r.get("logEndOffset") or 0 for r in replicas])
    step = max(1, -(-(hi - lo) // width))
    table = Table(box=None, show_header=True, show_edge=False, pad_edge=False)
    table.add_column("broker", no_wrap=True)
    table.add_column(f"offsets {lo}..{hi - 1} ({step}/char)", no_wrap=True)
    table.add_column("epochs in batches", overflow="fold")
    table.add_column("leader-epoch cache", overflow="fold")
    for r in replicas:
        cells = ["."] * width
        for e in sorted(r.get("timeline") or [], key=lambda e: e["first"]):
            a = max(0, (e["first"] - lo) // step)
            b = min(width - 1, (e["last"] - lo) // step)
            ch = _EPOCH_CHARS[e["epoch"] % len(_EPOCH_CHARS)] if e["epoch"] >= 0 else "-"
            for i in range(a, b + 1):
                cells[i] = ch
        bar = Text("".join(cells))
        div = r.get("divergence")
        if div is not None and lo <= div < hi:
            i = min(width - 1, (div - lo) // step)
            bar.stylize("reverse", i, i + 1)
        ranges = ", ".join(
            f"e{e['epoch']} {e['first']}..{e['last']} ({e['records']} rec)"
            for e in sorted(r.get("timeline") or [], key=lambda e: e["first"])
        )
        cache = " ".join(f"({e},{s})" for e, s in r.get("epochs") or [])
        who = f"{r['broker']}{'*' if r.get('role') == 'leader' else ''}"
        table.add_row(who, bar, ranges, cache)
    return table


def diverged_panels(report: Report) -> list:
    """One panel per partition with a cross-replica finding above info: its replicas and epoch timeline;
    the most severe first, then by partition."""
    flagged = _flagged(report)
    groups = _partition_groups(report.partitions)
    panels: list = []
    for key in sorted(flagged, key=lambda k: (-int(flagged[k]), k)):
        replicas = groups.get(key)
        if not replicas:
            continue
        cluster, topic, partition = key
        leader = next((r for r in replicas if r.get("role") == "leader"), replicas[0])
        source = _SOURCES.get(leader.get("leaderSource"), leader.get("leaderSource"))
        title = Text(f"{topic}-{partition}", style="bold")
        title.append(f" · leader {leader['broker']} ({source})")
        if len({k[0] for k in groups}) > 1:
            title.append(f" · cluster {cluster}")
        body: list = [replicas_table(replicas)]
        if any(r.get("timeline") for r in replicas):
            body.append(
                Text("Epoch timeline (* = current leader; highlighted: first divergent offset)", style="dim")
            )
            body.append(timeline(replicas))
        kraft = report.views.get("timelines", {}).get(key)
        if kraft is not None and kraft.partitions:
            body.append(Text("KRaft timeline (metadata offset, leader, epochs, ISR)", style="dim"))
            body.append(partition_renderable(kraft.partitions[0]))
        elections = report.views.get("elections", [])
        election = next((e for e in elections if (e["cluster"], e["topic"], e["partition"]) == key), None)
        if election is not None:
            body.append(Text("Which replica to elect (what each candidate costs the others)", style="dim"))
            body.append(election_table(election))
            body.append(Text(f"recommended: {election['why']}", style="dim"))
        panels.append(
            Panel(
                Group(*body),
                title=title,
                title_align="left",
                box=box.ROUNDED,
                border_style=STYLES[flagged[key]],
            )
        )
    return panels


def transactions_panel(report: Report) -> list:
    """The transactions open on the current leaders, when a finding concerns one (KA713/KA714)."""
    open_txns = [t for t in report.views.get("transactions", []) if t.get("findings")]
    if not open_txns:
        return []
    title = Text("Open transactions on the leaders", style="bold")
    title.append(" · read_committed consumers stop at the last stable offset (LSO)")
    return [Panel(transactions_table(open_txns), title=title, title_align="left", box=box.ROUNDED)]


def groups_panel(report: Report) -> list:
    """The consumer groups a finding concerns (KA720-KA723), their committed offsets."""
    affected = {
        (f.evidence.get("group"), f.topic, f.partition)
        for f in report.findings
        if f.code.startswith("KA72") and f.evidence.get("group") is not None
    }
    rows = [
        g
        for g in report.views.get("groups", [])
        if (g["group"], g["topic"], g["partition"]) in affected
        or (g["group"], "__consumer_offsets", g["offsets_partition"]) in affected
    ]
    if not rows:
        return []
    return [
        Panel(
            Group(*group_tables(rows)),
            title=Text("Consumer groups affected", style="bold"),
            title_align="left",
            box=box.ROUNDED,
        )
    ]


def consequence_panels(report: Report) -> list:
    """The diverged partitions, then the open transactions and the consumer groups that findings concern."""
    return diverged_panels(report) + transactions_panel(report) + groups_panel(report)


def leaders_line(report: Report) -> list[Text]:
    """The "Reference leaders" line: how many partitions took their leader from each source (none when
    there is no partition)."""
    counts: dict[str, int] = {}
    for key, replicas in _partition_groups(report.partitions).items():
        if key[1] == "__cluster_metadata":
            continue
        source = next((r.get("leaderSource") for r in replicas if r.get("role") == "leader"), None)
        counts[source or "?"] = counts.get(source or "?", 0) + 1
    if not counts:
        return []
    parts = [f"{n} {_SOURCES.get(s, s)}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return [Text("Reference leaders: " + "; ".join(parts), style="dim")]


def verdict_block(report: Report) -> list:
    """The verdicts (``auditor.report.verdicts``), first: one block per partition needing attention, its
    next steps numbered, then the count of the consistent partitions."""
    from auditor.report.verdicts import verdict_lines

    verdicts = report.sections.get("verdicts")
    if verdicts is None:
        return []
    return verdict_renderables(verdict_lines(verdicts, report.stats.get("consistentPartitions", 0)))


def audit_lead(report: Report) -> list:
    """The verdicts, then the reference leaders."""
    return verdict_block(report) + leaders_line(report)


AUDIT_LAYOUT = Layout(lead=audit_lead, panels=consequence_panels)
"""What ``audit`` adds to the people's report: the reference leaders, then the diverged partitions."""
