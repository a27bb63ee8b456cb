"""The HTML page of ``scan`` and ``audit``, rendered from the findings (not a terminal dump): the shared
sections of :func:`auditor.report.page.report_page` (header with version, time, command line and inputs;
``audit``'s verdict first; the findings most severe first behind a severity filter and a text search,
near-identical ones as one entry, each with its location, evidence as fields with ISO-8601 UTC times and
the rule's explanation; the summary by severity and by check) plus the command's own:

* ``audit``: per partition whose replicas diverge or break a high-watermark rule, its replicas side by side,
  the epoch timeline (SVG, :mod:`auditor.report.epoch_chart`: each replica's leader-epoch ranges, HW and
  LEO, the first divergent offset marked), the KRaft timeline of the partition and which replica to
  elect; then the open transactions and the consumer groups findings concern. Drawn from
  ``Report.partitions`` and ``Report.sections`` (the JSON-ready ``timelines``, ``elections``,
  ``transactions``, ``groups`` of ``auditor.cli.audit``), so the page shows what ``--format json`` holds;
* both: the table of partition replicas (``Report.partition_columns``).

One page style for ``scan``, ``audit`` and ``report`` (:mod:`auditor.report.history`): the CSS, script and
Content-Security-Policy of :mod:`auditor.report.page`; nothing is fetched. Every string from the evidence is
escaped by the page builders (control and bidi characters made visible, then ``&<>"'``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from auditor.findings import Finding, Severity
from auditor.report.columns import AUDIT_COLUMNS, SCAN_COLUMNS
from auditor.report.epoch_chart import epoch_timeline_svg, first_divergence
from auditor.report.model import TOOL_NAME, Report
from auditor.report.page import (
    Markup,
    Section,
    render_page,
    report_page,
    severity_badge,
    tag,
    verdict_section,
)
from auditor.report.timeline import change_note

MAX_PARTITIONS = 200
"""At most this many flagged partitions get a block (replicas, timelines, election) on the audit page, the
most severe first; ``--format json`` holds every one."""
MAX_ROWS = 5000
"""At most this many rows in the table of partition replicas."""
OPEN_ROWS = 60
"""The table of partition replicas starts unfolded up to this many rows."""

DEFAULT_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "scan": [*SCAN_COLUMNS, ("logDir", "log dir")],
    "audit": [*AUDIT_COLUMNS, ("cluster", "cluster")],
}
"""The columns of the table of partition replicas when ``--partitions`` did not choose them (the page always
has the table, folded unless ``--partitions`` was given or the scan is small)."""

IDENTIFIERS = frozenset({"broker", "partition", "latestEpoch", "leader"})
"""Integer columns that are identifiers, written without digit grouping."""

SOURCES = {
    "kraft": "KRaft metadata",
    "kraft-last-known": "last known KRaft leader (partition offline)",
    "inferred-kraft-leader-absent": "inferred (KRaft leader not among the inputs)",
    "inferred": "inferred (highest latest epoch, then LEO)",
}
"""Where the reference leader of a partition comes from (``leaderSource`` of the audit's rows)."""


def render_findings_html(report: Report, out: IO[str]) -> None:
    """The page of a ``scan`` or ``audit`` report: the verdict (``audit``) and the findings first, then the
    command's own sections, the summary by check and the inputs."""
    extra = audit_sections if report.command == "audit" else partition_sections
    page = report_page(with_brokers(report), extra, verdict=verdict(report))
    page.title = f"{TOOL_NAME} {report.command} report"
    out.write(render_page(page))


def verdict(report: Report) -> Section | None:
    """The verdicts of an audit (``auditor.report.verdicts``): one block per partition needing attention
    with its next steps as an ordered list, then the count of the consistent partitions; None without."""
    from auditor.report.verdicts import verdict_blocks

    verdicts = report.sections.get("verdicts")
    if verdicts is None:
        return None
    return verdict_section(verdict_blocks(verdicts, report.stats.get("consistentPartitions", 0)))


def with_brokers(report: Report) -> Report:
    """``report`` whose inputs name the broker of each log dir (``audit`` lists its sources by path only;
    the partition rows tell which broker each log dir belongs to)."""
    brokers: dict[str, set] = {}
    for row in report.partitions:
        if row.get("logDir") is not None and row.get("broker") is not None:
            brokers.setdefault(str(row["logDir"]), set()).add(row["broker"])
    if not brokers or not any("path" in row and "broker" not in row for row in report.inputs):
        return report
    inputs = []
    for row in report.inputs:
        found = sorted(brokers.get(str(row.get("path")), ()), key=str)
        if "broker" not in row and found:
            row = {**row, "broker": found[0] if len(found) == 1 else ", ".join(map(str, found))}
        inputs.append(row)
    return dataclasses.replace(report, inputs=inputs)


# ------------------------------------------------------------------------------------------------ helpers


def _plain(value: Any) -> str:
    """An identifier (broker, epoch) as it is: no digit grouping."""
    return "" if value is None else str(value)


def _num(value: Any, prefix: str = "") -> str:
    """An offset or a count, digits grouped (``1,000``)."""
    if value is None or value == "":
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{prefix}{value:,}"
    return f"{prefix}{value}"


def grid(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    numeric: Iterable[int] = (),
    row_classes: Sequence[str | None] = (),
    class_: str | None = None,
) -> Markup:
    """A table whose ``numeric`` columns are right-aligned, each row with its class from ``row_classes``."""
    nums = set(numeric)
    head = tag(
        "thead",
        tag("tr", *(tag("th", h, class_="num" if i in nums else None) for i, h in enumerate(headers))),
    )
    body = []
    for j, row in enumerate(rows):
        cells = [tag("td", c, class_="num" if i in nums else None) for i, c in enumerate(row)]
        body.append(tag("tr", *cells, class_=row_classes[j] if j < len(row_classes) else None))
    return tag("table", head, tag("tbody", *body), class_=class_)


def _ids(values: Any) -> str:
    return "" if values is None else "[" + ", ".join(str(v) for v in values) + "]"


def _leader(value: Any) -> str:
    return "none" if value is None or (isinstance(value, int) and value < 0) else str(value)


def _listed(report: Report, f: Finding) -> bool:
    """Whether the page lists ``f`` (``--min-severity``; the summary counts every finding)."""
    return report.min_severity is None or f.severity >= report.min_severity


def _key(cluster: Any, topic: Any, partition: Any) -> tuple[str, str, int]:
    return (str(cluster or ""), str(topic), int(partition) if partition is not None else -1)


def _finding_key(f: Finding) -> tuple[str, str, int]:
    cluster = f.evidence.get("cluster") if isinstance(f.evidence, dict) else None
    return _key(cluster, f.topic, f.partition)


def _finding_links(findings: Iterable[Finding]) -> Markup:
    items = [
        tag(
            "li",
            severity_badge(f.severity),
            " ",
            tag("a", f.code, href=f"#f-{f.fingerprint()}"),
            " ",
            f.message,
        )
        for f in findings
    ]
    return tag("ul", *items, class_="finding-links") if items else Markup("")


# ------------------------------------------------------------------------------------------ partitions


def partitions_table(report: Report) -> Section:
    """Every partition replica with the command's columns (``scan``: per log dir; ``audit``: per broker),
    rows with a finding highlighted; folded when long."""
    columns = report.partition_columns or DEFAULT_COLUMNS.get(report.command, [])
    rows = report.partitions
    if not columns or not rows:
        return Section("Partition replicas", [], id="partitions")
    shown = rows[:MAX_ROWS]
    numeric = [
        i
        for i, (k, _) in enumerate(columns)
        if any(isinstance(r.get(k), int) and not isinstance(r.get(k), bool) for r in shown)
        and k not in IDENTIFIERS
    ]
    classes = [
        "flagged" if (r.get("findings") or r.get("divergence") is not None or r.get("lostRecords")) else None
        for r in shown
    ]
    cells = [
        [_num(r.get(k)) if i in numeric else _plain(r.get(k)) for i, (k, _) in enumerate(columns)]
        for r in shown
    ]
    table = grid([h for _, h in columns], cells, numeric=numeric, row_classes=classes)
    summary = f"{len(rows):,} partition replica(s)" + (
        f"; the first {MAX_ROWS:,} shown (--format json holds every one)" if len(rows) > MAX_ROWS else ""
    )
    unfolded = bool(report.partition_columns) or (len(shown) <= OPEN_ROWS and report.command != "audit")
    block = tag("details", tag("summary", summary), table, open=unfolded)
    return Section("Partition replicas", [block], id="partitions")


def partition_sections(report: Report) -> list[Section]:
    """``scan``'s own section: the table of partition replicas."""
    return [partitions_table(report)]


# ---------------------------------------------------------------------------------------------- audit


def replica_groups(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], list[Mapping[str, Any]]]:
    """The audit's rows per partition, the leader first, then by broker."""
    out: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        out.setdefault(_key(row.get("cluster"), row["topic"], row["partition"]), []).append(row)
    for replicas in out.values():
        replicas.sort(
            key=lambda r: (r.get("role") != "leader", r.get("broker") if r.get("broker") is not None else -1)
        )
    return out


def flagged_partitions(report: Report) -> dict[tuple[str, str, int], Severity]:
    """Partitions with a listed finding above info, with their worst severity (as the terminal report)."""
    out: dict[tuple[str, str, int], Severity] = {}
    for f in report.findings:
        if f.topic is None or f.partition is None or f.severity <= Severity.INFO or not _listed(report, f):
            continue
        key = _finding_key(f)
        out[key] = max(out.get(key, f.severity), f.severity)
    return out


def _incomplete(r: Mapping[str, Any]) -> str:
    lo = r.get("unreadableFrom")
    if lo is None:
        return ""
    hi = r.get("unreadableTo")
    return f"{lo}..{hi - 1}" if hi is not None else f"{lo}.."


def replicas_table(replicas: Sequence[Mapping[str, Any]]) -> Markup:
    """The replicas of one partition side by side: offsets, epochs, where each diverges and what it loses."""
    headers = [
        "broker",
        "role",
        "LEO",
        "HW",
        "log start",
        "latest epoch",
        "diverges at",
        "Kafka truncates to",
        "lost records",
        "records behind",
        "unreadable offsets",
        "tail",
        "leader-epoch cache (epoch, start offset)",
        "log dir",
    ]
    rows, classes = [], []
    for r in replicas:
        lost = r.get("lostRecords") or 0
        rows.append(
            [
                r.get("broker"),
                r.get("role") or "",
                _num(r.get("logEndOffset"), "≥" if r.get("logEndOffsetKnown") is False else ""),
                _num(r.get("highWatermark")),
                _num(r.get("logStartOffset")),
                _plain(r.get("latestEpoch")),
                _num(r.get("divergence")),
                _num(r.get("truncationOffset")),
                tag("strong", _num(lost), class_="lost") if lost else "0",
                _num(r.get("lagRecords") or None),
                _incomplete(r),
                "" if r.get("tail") in (None, "end") else str(r.get("tail")),
                tag("span", " ".join(f"({e}, {s})" for e, s in r.get("epochs") or []), class_="mono"),
                tag("span", r.get("logDir") or "", class_="mono"),
            ]
        )
        classes.append("diverged" if r.get("divergence") is not None or lost else None)
    # columns empty on every replica (lag, unreadable offsets, tail) are left out
    keep = [i for i in range(len(headers)) if i < 9 or i >= 12 or any(str(row[i]) for row in rows)]
    return grid(
        [headers[i] for i in keep],
        ([row[i] for i in keep] for row in rows),
        numeric=[n for n, i in enumerate(keep) if 2 <= i <= 9],
        row_classes=classes,
        class_="replicas",
    )


def kraft_blocks(timeline: Mapping[str, Any] | None) -> list[object]:
    """The KRaft timeline of one partition: where the metadata comes from, every change of its leader,
    epochs and ISR (an unclean election highlighted), then what the metadata and each replica say of every
    leader epoch."""
    if not timeline or not timeline.get("partitions"):
        return []
    pt = timeline["partitions"][0]
    blocks: list[object] = [tag("h4", "KRaft timeline")]
    src = timeline.get("source") or {}
    if src:
        others = [n for n in timeline.get("nodes") or [] if n.get("node") != src.get("node")]
        where = src.get("logDir") or ""
        text = f"Metadata from node {src.get('node')} (end offset {src.get('endOffset')}, {where})"
        if others:
            text += "; other replicas: " + ", ".join(
                f"node {n['node']} (end offset {n.get('endOffset')})" for n in others
            )
        blocks.append(tag("p", text, class_="muted"))
    for d in timeline.get("disagreements") or []:
        held = "; ".join(f"node {n}: {', '.join(map(str, v))}" for n, v in (d.get("nodes") or {}).items())
        blocks.append(
            tag("p", f"metadata replicas disagree at offset {d.get('offset')}: {held}", class_="alert")
        )
    changes = pt.get("changes") or []
    show_elr = any(c.get("elr") or c.get("lastKnownElr") for c in changes)
    headers = ["metadata offset", "time (UTC)", "leader", "leader epoch", "partition epoch", "ISR"]
    headers += ["ELR", "last known ELR"] if show_elr else []
    headers += ["replicas", "leaderRecoveryState", "note"]
    rows, classes = [], []
    for c in changes:
        note = change_note(c.get("type"), c.get("unclean"), c.get("previousIsr"), _ids)
        offset = c.get("metadataOffset")
        cells: list[object] = [
            "snapshot" if c.get("fromSnapshot") or (offset is not None and offset < 0) else _num(offset),
            (c.get("time") or "").replace("T", " ").rstrip("Z"),
            _leader(c.get("leader")),
            _plain(c.get("leaderEpoch")),
            _plain(c.get("partitionEpoch")),
            _ids(c.get("isr")),
        ]
        cells += [_ids(c.get("elr")), _ids(c.get("lastKnownElr"))] if show_elr else []
        cells += [_ids(c.get("replicas")), _plain(c.get("leaderRecoveryState")), note]
        rows.append(cells)
        classes.append("unclean" if c.get("unclean") else None)
    if rows:
        blocks.append(grid(headers, rows, numeric=[0, 3, 4], row_classes=classes, class_="kraft"))
    gaps = pt.get("historyGaps") or []
    if gaps:
        blocks.append(
            tag(
                "p",
                "Leader epochs not in the history (a snapshot skips them): "
                + ", ".join(f"{lo}..{hi}" for lo, hi in gaps),
                class_="muted",
            )
        )
    lines = []
    for ep in pt.get("epochs") or []:
        alarming = ep.get("unclean") or (ep.get("covered") and not ep.get("inMetadata"))
        lines.append(
            tag("li", ep.get("text") or f"epoch {ep.get('epoch')}", class_="alert" if alarming else None)
        )
    if lines:
        blocks += [
            tag(
                "p",
                "Each leader epoch: the metadata against the replicas' caches and batches",
                class_="muted",
            ),
            tag("ul", *lines, class_="epochs"),
        ]
    return blocks


def _costs(costs: Iterable[Mapping[str, Any]]) -> Markup:
    """What electing a candidate costs each other replica."""
    items = []
    for c in costs:
        if not c.get("records") and not c.get("markers"):
            items.append(tag("li", f"broker {c['broker']}: nothing", class_="muted"))
            continue
        parts: list[object] = [
            f"broker {c['broker']}: offsets {c.get('firstOffset')}..{c.get('lastOffset')}, "
            f"{_num(c.get('records'))} record(s)"
        ]
        if c.get("committedRecords"):
            parts.append(tag("strong", f" ({_num(c['committedRecords'])} committed)", class_="lost"))
        if c.get("markers"):
            parts.append(f" +{c['markers']} marker(s)")
        silent = c.get("silentDivergence")
        if silent:
            parts.append(
                tag(
                    "span",
                    f"; {silent.get('firstOffset')}..{silent.get('lastOffset')} stay diverged (truncated to "
                    f"{c.get('epochTruncationOffset')})",
                    class_="warn",
                )
            )
        items.append(tag("li", *parts))
    return tag("ul", *items, class_="costs")


def election_blocks(election: Mapping[str, Any] | None) -> list[object]:
    """Which replica to elect: every candidate, Kafka's choice first (KIP-966: highest last leader epoch, then
    highest log end offset, then lowest broker id), the one that loses the least committed data marked, and
    what electing each costs the others."""
    if not election:
        return []
    rows, classes = [], []
    candidates = election.get("candidates") or []
    least = election.get("leastLoss")
    for c in candidates:
        marks: list[object] = [str(c["broker"])]
        if c.get("recommended"):
            marks += [" ", tag("span", "Kafka's choice", class_="tag")]
        if least is not None and c["broker"] == least:
            marks += [" ", tag("span", "least committed loss", class_="tag ok")]
        if c.get("currentLeader"):
            marks += [" ", tag("span", "current leader", class_="tag")]
        committed = c.get("committedRecordsLost") or 0
        rows.append(
            [
                tag("span", *marks),
                _plain(c.get("lastLeaderEpoch")),
                _num(c.get("logEndOffset")),
                _num(c.get("recordsLost")),
                tag("strong", _num(committed), class_="lost") if committed else "0",
                _costs(c.get("costs") or []),
            ]
        )
        classes.append("recommended" if c.get("recommended") else None)
    headers = [
        "elect broker",
        "last leader epoch",
        "LEO",
        "lost (sum)",
        "committed lost (sum)",
        "lost on each other replica",
    ]
    blocks: list[object] = [
        tag("h4", "Which replica to elect"),
        grid(headers, rows, numeric=[1, 2, 3, 4], row_classes=classes, class_="election"),
    ]
    if election.get("why"):
        blocks.append(tag("p", tag("strong", "Kafka's choice: "), election["why"]))
    return blocks


def leaders_line(report: Report, groups: Mapping[tuple, Sequence[Mapping[str, Any]]]) -> Markup:
    """How many partitions took their reference leader from each source."""
    counts: dict[str, int] = {}
    for key, replicas in groups.items():
        if key[1] == "__cluster_metadata":
            continue
        source = next((r.get("leaderSource") for r in replicas if r.get("role") == "leader"), None)
        counts[source or "?"] = counts.get(source or "?", 0) + 1
    if not counts:
        return Markup("")
    parts = [f"{n} {SOURCES.get(s, s)}" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return tag("p", tag("strong", "Reference leaders: "), "; ".join(parts))


def diverged_section(report: Report) -> Section:
    """Per flagged partition (most severe first): its findings, replicas, epoch timeline, KRaft timeline and
    election."""
    groups = replica_groups(report.partitions)
    flagged = flagged_partitions(report)
    timelines = {
        _key(t.get("cluster"), t.get("topic"), t.get("partition")): t
        for t in report.sections.get("timelines") or []
    }
    elections = {
        _key(e.get("cluster"), e.get("topic"), e.get("partition")): e
        for e in report.sections.get("elections") or []
    }
    clusters = {k[0] for k in groups}
    order = sorted((k for k in flagged if k in groups), key=lambda k: (-int(flagged[k]), k))
    by_partition: dict[tuple[str, str, int], list[Finding]] = {}
    for f in report.findings:
        if f.topic is not None and _listed(report, f):
            by_partition.setdefault(_finding_key(f), []).append(f)
    blocks: list[object] = [leaders_line(report, groups)]
    if not order:
        blocks.append(
            tag("p", "No partition whose replicas diverge or break a high-watermark rule.", class_="muted")
        )
    for i, key in enumerate(order[:MAX_PARTITIONS]):
        cluster, topic, partition = key
        replicas = groups[key]
        leader = next((r for r in replicas if r.get("role") == "leader"), replicas[0])
        source = SOURCES.get(leader.get("leaderSource"), leader.get("leaderSource"))
        title = f"{topic}-{partition} · leader {leader.get('broker')} ({source})"
        if len(clusters) > 1 or cluster:
            title += f" · cluster {cluster}"
        mine = sorted(
            by_partition.get(key, []),
            key=lambda f: (-int(f.severity), f.code, f.broker if f.broker is not None else -1),
        )
        part: list[object] = [
            tag("h3", severity_badge(flagged[key]), " ", title),
            _finding_links(mine),
            tag("h4", "Replicas"),
            replicas_table(replicas),
        ]
        if any(r.get("timeline") for r in replicas):
            first = first_divergence(replicas)
            caption = "Epoch timeline: each replica's batches by leader epoch along the offsets"
            if first is not None:
                caption += f"; first divergent offset {first:,}"
            part += [
                tag("h4", "Epoch timeline"),
                tag(
                    "figure",
                    Markup(epoch_timeline_svg(replicas, title=f"{topic}-{partition}")),
                    tag("figcaption", caption, class_="muted"),
                ),
            ]
        part += kraft_blocks(timelines.get(key))
        part += election_blocks(elections.get(key))
        blocks.append(
            tag(
                "div",
                *part,
                class_=f"partition {flagged[key].label}",
                id=f"partition-{i}",
                data_severity=flagged[key].label,
            )
        )
    if len(order) > MAX_PARTITIONS:
        blocks.append(
            tag(
                "p",
                f"{len(order) - MAX_PARTITIONS} more partition(s) with findings not drawn here: "
                "--format json holds every one",
                class_="muted",
            )
        )
    return Section("Diverged partitions", blocks, id="diverged")


def transactions_section(report: Report) -> Section:
    """The transactions open on the current leaders that a finding concerns (KA713/KA714): what
    read_committed consumers see (they stop at the last stable offset)."""
    rows = [t for t in report.sections.get("transactions") or [] if t.get("findings")]
    if not rows:
        return Section("Open transactions on the leaders", [], id="transactions")
    cells = []
    for t in rows:
        elsewhere = t.get("markersElsewhere") or []
        markers = ", ".join(
            f"{m.get('marker')} at {m.get('offset')} on broker {m.get('broker')}" for m in elsewhere
        )
        cells.append(
            [
                f"{t.get('topic')}-{t.get('partition')}",
                _plain(t.get("leader")),
                f"{t.get('producerId')}/{t.get('producerEpoch')}",
                _num(t.get("firstOffset")),
                _num(t.get("records")),
                _num(t.get("lastStableOffset")),
                _num(t.get("highWatermark")),
                markers,
                t.get("coordinatorView") or "",
                " ".join(t.get("findings") or []),
            ]
        )
    headers = [
        "partition",
        "leader",
        "producer id/epoch",
        "open from",
        "records",
        "LSO",
        "HW",
        "marker elsewhere",
        "coordinator",
        "findings",
    ]
    note = tag(
        "p",
        "read_committed consumers stop at the last stable offset (LSO) until the transaction ends.",
        class_="muted",
    )
    return Section(
        "Open transactions on the leaders",
        [note, grid(headers, cells, numeric=[1, 3, 4, 5, 6])],
        id="transactions",
    )


def groups_section(report: Report) -> Section:
    """The consumer groups a finding concerns (KA720-KA723): their committed offsets against the leader."""
    affected = {
        (str(f.evidence.get("group")), f.topic, f.partition)
        for f in report.findings
        if f.code.startswith("KA72") and isinstance(f.evidence, dict) and f.evidence.get("group") is not None
    }
    rows = [
        g
        for g in report.sections.get("groups") or []
        if (str(g.get("group")), g.get("topic"), g.get("partition")) in affected
        or (str(g.get("group")), "__consumer_offsets", g.get("offsetsPartition")) in affected
    ]
    if not rows:
        return Section("Consumer groups affected", [], id="groups")
    by_group: dict[tuple, list[Mapping[str, Any]]] = {}
    for g in rows:
        by_group.setdefault(
            (str(g.get("cluster")), str(g.get("group")), g.get("offsetsPartition")), []
        ).append(g)
    blocks: list[object] = []
    for (_cluster, group, p), items in by_group.items():
        first = items[0]
        blocks.append(
            tag(
                "h3",
                f"group {group}",
                tag(
                    "span",
                    f" · __consumer_offsets-{p} of {first.get('offsetsPartitions')} "
                    f"({first.get('offsetsPartitionsSource')})"
                    f" · coordinator broker {first.get('coordinator')} ({first.get('coordinatorSource')})",
                    class_="muted",
                ),
            )
        )
        cells, classes = [], []
        for g in items:
            lag = "" if g.get("lag") is None else _num(g.get("lag"))
            if g.get("aboveLogEndOffset"):
                lag = f"above LEO by {-(g.get('lag') or 0):,}"
            held = ",".join(str(b) for b in g.get("heldBy") or []) + f"/{len(g.get('replicas') or [])}"
            if not g.get("leaderHolds"):
                held += " (not on the leader)"
            epoch = g.get("leaderEpoch")
            cells.append(
                [
                    f"{g.get('topic')}-{g.get('partition')}",
                    _num(g.get("committedOffset")),
                    _plain(epoch) if isinstance(epoch, int) and epoch >= 0 else "-",
                    (g.get("commitTime") or "-").replace("T", " ").rstrip("Z"),
                    g.get("metadata") or "",
                    held,
                    _leader(g.get("leader")),
                    _num(g.get("leaderLogEndOffset")),
                    lag,
                ]
            )
            classes.append("flagged" if g.get("aboveLogEndOffset") or not g.get("leaderHolds") else None)
        headers = [
            "partition",
            "committed",
            "leader epoch",
            "commit time (UTC)",
            "metadata",
            "held by",
            "leader",
            "leader LEO",
            "lag",
        ]
        blocks.append(grid(headers, cells, numeric=[1, 2, 7, 8], row_classes=classes))
    return Section("Consumer groups affected", blocks, id="groups")


def audit_sections(report: Report) -> list[Section]:
    """``audit``'s own sections: diverged partitions, open transactions, consumer groups, every replica."""
    return [
        diverged_section(report),
        transactions_section(report),
        groups_section(report),
        partitions_table(report),
    ]


__all__ = ["audit_sections", "partition_sections", "render_findings_html"]
