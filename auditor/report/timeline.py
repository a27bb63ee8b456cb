"""Rendering of the KRaft timeline (``auditor.kafka.timeline``): Rich for a terminal, a JSON object, JSON
lines. ``timeline`` and ``audit`` (for every partition with a finding) share :func:`timeline_renderable`,
:func:`partition_renderable`, :func:`timeline_json` and :func:`partition_json`."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.timeline import PartitionTimeline, Timeline
from auditor.text import visible

_CHANGE_KEYS = (
    "offset",
    "timestamp",
    "type",
    "leader",
    "leader_epoch",
    "partition_epoch",
    "isr",
    "elr",
    "last_known_elr",
    "replicas",
    "leader_recovery_state",
    "from_snapshot",
    "previous_isr",
    "unclean",
)
_CAMEL = {
    "offset": "metadataOffset",
    "leader_epoch": "leaderEpoch",
    "partition_epoch": "partitionEpoch",
    "last_known_elr": "lastKnownElr",
    "leader_recovery_state": "leaderRecoveryState",
    "from_snapshot": "fromSnapshot",
    "previous_isr": "previousIsr",
    "broker_epoch": "brokerEpoch",
    "in_controlled_shutdown": "inControlledShutdown",
    "resource_type": "resourceType",
    "end_offset": "endOffset",
    "log_dir": "logDir",
}


def iso(ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO-8601 UTC (None stays None)."""
    if ms is None or ms < 0:
        return None
    try:
        return (
            _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    except (OverflowError, OSError, ValueError):
        return None


def _camel(d: dict, keys=None) -> dict:
    out = {}
    for k in keys or d.keys():
        if k in d:
            out[_CAMEL.get(k, k)] = d[k]
    if "timestamp" in d:
        out["time"] = iso(d["timestamp"])
    return out


def change_json(ev: dict) -> dict:
    """One change of a partition (a history event of ``kraft.replay_partitions``)."""
    return _camel(ev, _CHANGE_KEYS)


def partition_json(pt: PartitionTimeline) -> dict:
    """One partition's timeline as a JSON object."""
    state = pt.state
    return {
        "topic": pt.topic,
        "partition": pt.partition,
        "topicId": state.topic_id if state else None,
        "current": None
        if state is None
        else {
            "leader": state.leader,
            "leaderEpoch": state.leader_epoch,
            "partitionEpoch": state.partition_epoch,
            "isr": state.isr,
            "elr": state.elr,
            "lastKnownElr": state.last_known_elr,
            "replicas": state.replicas,
            "leaderRecoveryState": state.leader_recovery_state,
            "directories": state.directories,
        },
        "historyGaps": [list(g) for g in state.gaps] if state else [],
        "changes": [change_json(ev) for ev in pt.changes],
        "epochs": [ln.to_dict() for ln in pt.epochs],
        "configs": [
            _camel(c, ("offset", "timestamp", "resource_type", "resource", "name", "value"))
            for c in pt.configs
        ],
    }


def timeline_json(timeline: Timeline) -> dict:
    """The whole timeline as one JSON object."""
    return {
        "source": _camel(timeline.source) if timeline.source else None,
        "nodes": [_camel(n) for n in timeline.nodes],
        "disagreements": timeline.disagreements,
        "brokers": [_camel(b) for b in timeline.brokers],
        "configs": [
            _camel(c, ("offset", "timestamp", "resource_type", "resource", "name", "value"))
            for c in timeline.configs
        ],
        "partitions": [partition_json(pt) for pt in timeline.partitions],
        "notes": list(timeline.notes),
    }


def timeline_lines(timeline: Timeline, cluster: str | None = None) -> Iterator[dict]:
    """JSON lines: one object per metadata node, disagreement, broker event, config change, partition
    change and epoch line-up, each with ``kind`` (and ``cluster`` when given)."""
    base = {"cluster": cluster} if cluster is not None else {}
    for n in timeline.nodes:
        yield {
            "kind": "node",
            **base,
            **_camel(n),
            "reference": bool(timeline.source and n["node"] == timeline.source["node"]),
        }
    for d in timeline.disagreements:
        yield {"kind": "disagreement", **base, **d}
    for b in timeline.brokers:
        yield {"kind": "broker", **base, **_camel(b)}
    for c in timeline.configs:
        yield {
            "kind": "config",
            **base,
            **_camel(c, ("offset", "timestamp", "resource_type", "resource", "name", "value")),
        }
    for pt in timeline.partitions:
        where = {"topic": pt.topic, "partition": pt.partition}
        for ev in pt.changes:
            yield {"kind": "change", **base, **where, **change_json(ev)}
        for ln in pt.epochs:
            yield {"kind": "epoch", **base, **where, **ln.to_dict()}


def write_json(timelines: dict[str, Timeline], stream: TextIO, problems: list[str] | None = None) -> None:
    """``{"clusters": [{"cluster": ..., **timeline_json}], "errors": [...]}``."""
    doc = {
        "clusters": [{"cluster": c, **timeline_json(t)} for c, t in timelines.items()],
        "errors": list(problems or []),
    }
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def write_jsonl(timelines: dict[str, Timeline], stream: TextIO) -> None:
    for cluster, t in timelines.items():
        for line in timeline_lines(t, cluster):
            stream.write(json.dumps(line) + "\n")


# ------------------------------------------------------------------------------------------------ Rich


def change_note(record_type: Any, unclean: Any, previous_isr: Any, ids: Callable[[Any], str]) -> str:
    """The note of one partition change of the KRaft timeline (text and HTML): ``created`` for its
    PartitionRecord, an unclean election or a leader change with the ISR before it (``ids`` formats it)."""
    if unclean:
        return f"UNCLEAN election (previous ISR {ids(previous_isr)})"
    if previous_isr is not None:
        return f"leader change (previous ISR {ids(previous_isr)})"
    return "created" if record_type == "PARTITION_RECORD" else ""


def _ids(xs: Any) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]" if xs is not None else ""


def _leader(x: int | None) -> str:
    return "none" if x is None or x == NO_LEADER else str(x)


def _time(ms: int | None) -> str:
    text = iso(ms)
    return text.replace("T", " ").rstrip("Z") if text else ""


def partition_renderable(pt: PartitionTimeline):
    """The changes of one partition (a table) and its epoch line-up (one line per epoch)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    changes = pt.changes
    title = f"{visible(pt.topic)}-{pt.partition}"
    replicas = {tuple(ev.get("replicas") or ()) for ev in changes}
    show_elr = any(ev.get("elr") or ev.get("last_known_elr") for ev in changes)
    if pt.state is not None:
        s = pt.state
        title += (
            f"  leader {_leader(s.leader)}, leader epoch {s.leader_epoch}, "
            f"partition epoch {s.partition_epoch}, ISR {_ids(s.isr)}"
            + (f", ELR {_ids(s.elr)}" if s.elr else "")
            + (f", replicas {_ids(s.replicas)}" if len(replicas) <= 1 else "")
        )
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    columns = ["offset", "time (UTC)", "leader", "epoch", "p.epoch", "ISR"]
    columns += ["ELR", "last ELR"] if show_elr else []
    columns += ["replicas"] if len(replicas) > 1 else []
    columns += ["LRS", "note"]
    for col in columns:
        table.add_column(col, no_wrap=col != "note")
    for ev in changes:
        note = change_note(ev.get("type"), ev.get("unclean"), ev.get("previous_isr"), _ids)
        offset = (
            "snapshot" if ev.get("from_snapshot") or (ev.get("offset") or 0) < 0 else str(ev.get("offset"))
        )
        cells = [
            offset,
            _time(ev.get("timestamp")),
            _leader(ev.get("leader")),
            str(ev.get("leader_epoch")),
            str(ev.get("partition_epoch")),
            _ids(ev.get("isr")),
        ]
        cells += [_ids(ev.get("elr")), _ids(ev.get("last_known_elr"))] if show_elr else []
        cells += [_ids(ev.get("replicas"))] if len(replicas) > 1 else []
        cells += [
            str(ev.get("leader_recovery_state")),
            Text(note, style="bold red" if ev.get("unclean") else ""),
        ]
        table.add_row(*cells)
    parts: list = [table]
    if pt.state is not None and pt.state.gaps:
        gaps = ", ".join(f"{lo}..{hi}" for lo, hi in pt.state.gaps)
        parts.append(Text(f"  leader epochs not in the history (a snapshot skips them): {gaps}"))
    for ln in pt.epochs:
        style = "bold red" if ln.unclean or (ln.covered and not ln.in_metadata) else ""
        parts.append(Text("  " + ln.describe(), style=style))
    if pt.configs:
        cfg = "; ".join(
            f"{c['name']}={c['value'] if c['value'] is not None else '(deleted)'}"
            f"{'' if c['resource_type'] == 2 else ' (broker ' + (c['resource'] or 'default') + ')'}"
            f" at {'snapshot' if (c.get('offset') or 0) < 0 else c.get('offset')}"
            for c in pt.configs
        )
        parts.append(Text(f"  configs: {visible(cfg)}"))
    return Group(*parts)


_EVENTS = {
    "REGISTER_BROKER_RECORD": "register",
    "UNREGISTER_BROKER_RECORD": "unregister",
    "FENCE_BROKER_RECORD": "fence",
    "UNFENCE_BROKER_RECORD": "unfence",
    "BROKER_REGISTRATION_CHANGE_RECORD": "change",
}


def timeline_renderable(timeline: Timeline, cluster: str | None = None):
    """The whole timeline: where the metadata comes from, disagreements, broker events, then every
    partition (:func:`partition_renderable`)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list = []
    head = f"cluster {visible(cluster)}: " if cluster else ""
    if timeline.source:
        src = timeline.source
        others = ", ".join(
            f"{n['node']} (end offset {n['end_offset']})" for n in timeline.nodes if n["node"] != src["node"]
        )
        parts.append(
            Text(
                f"{head}metadata from node {src['node']} (end offset {src['end_offset']}, "
                f"{visible(src['log_dir'] or '')})" + (f"; other replicas: {others}" if others else ""),
                style="bold",
            )
        )
    for note in timeline.notes:
        parts.append(Text(f"{head}{note}", style="yellow"))
    for d in timeline.disagreements:
        held = "; ".join(f"node {n}: {', '.join(v)}" for n, v in d["nodes"].items())
        parts.append(
            Text(f"metadata replicas disagree at offset {d['offset']}: {visible(held)}", style="bold red")
        )
    if timeline.brokers:
        bt = Table(title="brokers", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("offset", "time (UTC)", "broker", "epoch", "record", "state"):
            bt.add_column(col, no_wrap=True)
        for b in timeline.brokers:
            state = "fenced" if b["fenced"] else "unfenced"
            if b["in_controlled_shutdown"]:
                state += ", controlled shutdown"
            if not b["registered"]:
                state = "unregistered"
            offset = "snapshot" if (b.get("offset") or 0) < 0 else str(b.get("offset"))
            event = _EVENTS.get(b["type"], b["type"])
            bt.add_row(
                offset, _time(b.get("timestamp")), str(b["broker"]), str(b["broker_epoch"]), event, state
            )
        parts.append(bt)
    for pt in timeline.partitions:
        parts.append(Text(""))
        parts.append(partition_renderable(pt))
    if not timeline.partitions:
        parts.append(Text("no partition matches"))
    return Group(*parts)
