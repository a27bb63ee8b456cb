"""Rendering the consumer groups (``auditor.spark.groups.group_view`` rows, one per committed partition, and
``group_summaries``, one per group): per group its protocol, state and members, then a Rich table of its
committed offsets for a terminal; camelCase dicts for JSON and JSONL (``kafka-auditor groups`` and the
``groups`` section of ``audit``'s report)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

from auditor.text import iso_ms as text_iso_ms
from auditor.text import visible

_KEYS = {
    "cluster": "cluster",
    "group": "group",
    "offsets_partition": "offsetsPartition",
    "expected_partition": "expectedPartition",
    "offsets_partitions": "offsetsPartitions",
    "offsets_partitions_source": "offsetsPartitionsSource",
    "coordinator": "coordinator",
    "coordinator_source": "coordinatorSource",
    "topic": "topic",
    "partition": "partition",
    "committed_offset": "committedOffset",
    "leader_epoch": "leaderEpoch",
    "metadata": "metadata",
    "commit_timestamp": "commitTimestamp",
    "expire_timestamp": "expireTimestamp",
    "record_offset": "recordOffset",
    "transactional": "transactional",
    "replicas": "replicas",
    "held_by": "heldBy",
    "leader_holds": "leaderHolds",
    "leader": "leader",
    "leader_source": "leaderSource",
    "leader_leo": "leaderLogEndOffset",
    "lag": "lag",
    "above_leo": "aboveLogEndOffset",
    "protocol": "protocol",
    "group_state": "groupState",
    "deleted_incarnation": "deletedIncarnation",
}

_STATE_KEYS = {
    "state_broker": "stateBroker",
    "protocol_type": "protocolType",
    "protocol_name": "protocolName",
    "state_timestamp": "stateTimestamp",
    "group_epoch": "groupEpoch",
    "assignment_epoch": "assignmentEpoch",
    "record_offset": "recordOffset",
    "member_id": "memberId",
    "group_instance_id": "groupInstanceId",
    "client_id": "clientId",
    "client_host": "clientHost",
    "rack_id": "rackId",
    "rebalance_timeout_ms": "rebalanceTimeoutMs",
    "session_timeout_ms": "sessionTimeoutMs",
    "subscribed_topic_names": "subscribedTopicNames",
    "subscribed_topic_regex": "subscribedTopicRegex",
    "server_assignor": "serverAssignor",
    "member_epoch": "memberEpoch",
    "previous_member_epoch": "previousMemberEpoch",
    "member_state": "memberState",
    "assigned_partitions": "assignedPartitions",
    "target_partitions": "targetPartitions",
    "partitions_pending_revocation": "partitionsPendingRevocation",
}


def iso_ms(ms: int | None) -> str | None:
    """``ms`` since the epoch as ISO 8601 UTC with milliseconds (None for none or a negative value)."""
    return text_iso_ms(ms, "milliseconds")


def groups_section(view: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON form of the view rows: camelCase keys plus ``commitTime`` (ISO 8601)."""
    out = []
    for row in view:
        item = {_KEYS.get(k, k): v for k, v in row.items()}
        item["commitTime"] = iso_ms(row.get("commit_timestamp"))
        out.append(item)
    return out


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {_STATE_KEYS.get(k, _KEYS.get(k, k)): _camel(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_camel(v) for v in value]
    return value


def group_states_section(summaries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON form of ``group_summaries``: camelCase keys at every depth plus ``stateTime`` (ISO 8601)."""
    out = []
    for summary in summaries:
        item = _camel(summary)
        item["stateTime"] = iso_ms(summary.get("state_timestamp"))
        out.append(item)
    return out


def write_json(
    view: list[dict[str, Any]],
    stream: TextIO,
    problems: list[str] | None = None,
    summaries: list[dict[str, Any]] | None = None,
) -> None:
    """``{"groups": <one item per committed partition>, "groupStates": <one per group>, "errors": [...]}``
    (``groupStates`` only when ``summaries`` are given)."""
    doc: dict[str, Any] = {"groups": groups_section(view)}
    if summaries is not None:
        doc["groupStates"] = group_states_section(summaries)
    doc["errors"] = list(problems or [])
    json.dump(doc, stream, indent=2, sort_keys=False)
    stream.write("\n")


def write_jsonl(view: list[dict[str, Any]], stream: TextIO) -> None:
    for item in groups_section(view):
        stream.write(json.dumps(item, sort_keys=False) + "\n")


def render_groups(view: list[dict[str, Any]], console, summaries: list[dict[str, Any]] | None = None) -> None:
    """Print every group: its heading, protocol, state and members (from ``summaries``), then its committed
    offsets (:func:`group_tables`); without ``summaries`` only the tables. Or that there is no group."""
    if not view and not summaries:
        console.print("No consumer groups found in the __consumer_offsets replicas.")
        return
    if summaries is None:
        for table in group_tables(view):
            console.print(table)
        return
    by_group: dict[tuple, list[dict[str, Any]]] = {}
    for row in view:
        by_group.setdefault((row["cluster"], row["group"], row["offsets_partition"]), []).append(row)
    from rich.text import Text

    clusters = len({s["cluster"] for s in summaries} | {r["cluster"] for r in view})
    for summary in summaries:
        key = (summary["cluster"], summary["group"], summary["offsets_partition"])
        console.print(_heading(summary, clusters > 1))
        console.print(Text(state_line(summary)))
        for problem in summary.get("problems") or []:
            console.print(Text(f"  warning: {visible(problem)}", style="red"))
        if summary["members"]:
            console.print(members_table(summary))
        items = by_group.pop(key, [])
        console.print(_offsets_table(items) if items else Text("  no committed offsets"))
        console.print()
    for table in group_tables([r for items in by_group.values() for r in items]):
        console.print(table)


def _heading(first: dict[str, Any], with_cluster: bool):
    """``group G  __consumer_offsets-P of N (source)  coordinator: broker B (source)``."""
    from rich.text import Text

    p = first["offsets_partition"]
    title = Text("group ")
    title.append(visible(first["group"]), style="bold")
    title.append(
        f"  __consumer_offsets-{p} of {first['offsets_partitions']} ({first['offsets_partitions_source']})"
    )
    if first["expected_partition"] != p:
        title.append(f" (expected partition {first['expected_partition']})", style="red")
    title.append(f"  coordinator: broker {first['coordinator']} ({first['coordinator_source']})")
    if with_cluster:
        title.append(f"  cluster {visible(str(first['cluster']))}")
    return title


def state_line(summary: dict[str, Any]) -> str:
    """The group's protocol and state in a line, e.g. ``consumer protocol, Stable: group epoch 4, assignment
    epoch 4, 1 member`` or ``classic protocol (consumer), Empty: generation 3, protocol range, 0 members``."""
    protocol = summary["protocol"]
    if protocol == "classic" and summary.get("protocol_type"):
        protocol += f" ({visible(summary['protocol_type'])})"
    parts: list[str] = []
    if summary["protocol"] == "consumer":
        parts += [f"group epoch {summary['group_epoch']}", f"assignment epoch {summary['assignment_epoch']}"]
    elif summary.get("protocol_type") is None and summary["state"] != "Dead":
        parts.append("offsets only, no group metadata")
    else:
        if summary.get("generation") is not None:
            parts.append(f"generation {summary['generation']}")
        if summary.get("protocol_name"):
            parts.append(f"protocol {visible(summary['protocol_name'])}")
        if summary.get("leader"):
            parts.append(f"leader {visible(summary['leader'])}")
    count = len(summary["members"])
    parts.append(f"{count} member" + ("" if count == 1 else "s"))
    if summary.get("state_broker") != summary.get("coordinator"):
        parts.append(f"read from broker {summary.get('state_broker')}")
    return f"  {protocol} protocol, {summary['state']}: " + ", ".join(parts)


def _partitions(tps: list[dict[str, Any]] | None) -> str:
    """``t0-0,1 t1-2`` (``?`` when not known)."""
    if tps is None:
        return "?"
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp["topic"], []).append(tp["partition"])
    return " ".join(f"{visible(t)}-{','.join(map(str, ps))}" for t, ps in by_topic.items()) or "-"


def members_table(summary: dict[str, Any]):
    """One line per member: id, client, host, and (consumer protocol) member epoch, state and target (cells
    are plain text: ids may hold Rich markup)."""
    from rich.table import Table
    from rich.text import Text

    consumer = summary["protocol"] == "consumer"
    table = Table(box=None, padding=(0, 1), pad_edge=True)
    for name in ("member", "client", "host"):
        table.add_column(name)
    if consumer:
        table.add_column("epoch", justify="right")
        table.add_column("state")
    table.add_column("assigned")
    if consumer:
        table.add_column("target")
    for m in summary["members"]:
        member = visible(m["member_id"]) + (" (classic)" if consumer and m["protocol"] == "classic" else "")
        cells = [member, visible(m["client_id"]), visible(m["client_host"])]
        if consumer:
            cells += [str(m["member_epoch"]), m["member_state"] or ""]
        cells.append(_partitions(m["assigned_partitions"]))
        if consumer:
            cells.append(_partitions(m["target_partitions"]))
        table.add_row(*(Text(c) for c in cells))
    return table


def group_tables(view: list[dict[str, Any]]) -> list:
    """One renderable per group: its heading (``__consumer_offsets`` partition and coordinator), its protocol
    and state when the rows carry them, then a table with one line per topic-partition (committed offset,
    leader epoch, commit time, replicas holding it, leader LEO and lag)."""
    from rich.console import Group
    from rich.text import Text

    out: list = []
    by_group: dict[tuple, list[dict[str, Any]]] = {}
    for row in view:
        by_group.setdefault((row["cluster"], row["group"], row["offsets_partition"]), []).append(row)
    clusters = len({r["cluster"] for r in view})
    for items in by_group.values():
        first = items[0]
        parts: list = [_heading(first, clusters > 1)]
        if first.get("protocol") is not None:
            parts.append(Text(f"  {first['protocol']} protocol, {first['group_state']}"))
        parts.append(_offsets_table(items))
        out.append(Group(*parts))
    return out


def _offsets_table(items: list[dict[str, Any]]):
    """One line per committed topic-partition of a group."""
    from rich.table import Table
    from rich.text import Text

    table = Table()
    with_metadata = any(r["metadata"] for r in items)
    for name, justify in (
        ("partition", "left"),
        ("committed", "right"),
        ("epoch", "right"),
        ("commit time (UTC)", "left"),
        ("metadata", "left"),
        ("held by", "left"),
        ("leader", "right"),
        ("LEO", "right"),
        ("lag", "right"),
    ):
        if name != "metadata" or with_metadata:
            table.add_column(name, justify=justify)
    for r in items:
        leo = r["leader_leo"]
        lag = Text("" if r["lag"] is None else str(r["lag"]))
        if r.get("deleted_incarnation"):
            lag = Text("deleted incarnation", style="yellow")  # committed before the topic's re-creation
        elif r["above_leo"]:
            lag = Text(f"above LEO by {-r['lag']}", style="red")
        held = Text(",".join(str(b) for b in r["held_by"]) + f"/{len(r['replicas'])}")
        if not r["leader_holds"]:
            held.append(" not on leader", style="red")
        cells = [
            visible(f"{r['topic']}-{r['partition']}"),
            str(r["committed_offset"]),
            str(r["leader_epoch"]) if r["leader_epoch"] >= 0 else "-",
            (iso_ms(r["commit_timestamp"]) or "-").replace("T", " ").rstrip("Z"),
        ]
        if with_metadata:
            cells.append(visible(r["metadata"] or ""))
        cells += [
            held,
            "-" if r["leader"] is None else str(r["leader"]),
            "-" if leo is None else str(leo),
            lag,
        ]
        table.add_row(*cells)
    return table
