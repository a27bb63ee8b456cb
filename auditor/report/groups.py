"""Rendering the consumer groups (``auditor.spark.groups.group_view`` rows): a Rich table per group for a
terminal, camelCase dicts for JSON and JSONL (``kafka-auditor groups`` and the ``groups`` section of
``audit``'s report)."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable
from typing import Any, TextIO

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
}


def iso_ms(ms: int | None) -> str | None:
    """``ms`` since the epoch as ISO 8601 UTC with milliseconds (None for none or a negative value)."""
    if ms is None or ms < 0:
        return None
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def groups_section(view: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON form of the view rows: camelCase keys plus ``commitTime`` (ISO 8601)."""
    out = []
    for row in view:
        item = {_KEYS.get(k, k): v for k, v in row.items()}
        item["commitTime"] = iso_ms(row.get("commit_timestamp"))
        out.append(item)
    return out


def write_json(view: list[dict[str, Any]], stream: TextIO, problems: list[str] | None = None) -> None:
    json.dump(
        {"groups": groups_section(view), "errors": list(problems or [])}, stream, indent=2, sort_keys=False
    )
    stream.write("\n")


def write_jsonl(view: list[dict[str, Any]], stream: TextIO) -> None:
    for item in groups_section(view):
        stream.write(json.dumps(item, sort_keys=False) + "\n")


def render_groups(view: list[dict[str, Any]], console) -> None:
    """Print :func:`group_tables` (or that there is no commit)."""
    if not view:
        console.print("No committed offsets found in the __consumer_offsets replicas.")
        return
    for table in group_tables(view):
        console.print(table)


def group_tables(view: list[dict[str, Any]]) -> list:
    """A table per group: its ``__consumer_offsets`` partition and coordinator, then one line per
    topic-partition (committed offset, leader epoch, commit time, replicas holding it, leader LEO and lag)."""
    from rich.table import Table
    from rich.text import Text

    tables: list = []

    by_group: dict[tuple, list[dict[str, Any]]] = {}
    for row in view:
        by_group.setdefault((row["cluster"], row["group"], row["offsets_partition"]), []).append(row)
    clusters = len({r["cluster"] for r in view})
    for (cluster, group, p), items in by_group.items():
        first = items[0]
        title = Text("group ")
        title.append(visible(group), style="bold")
        title.append(
            f"  __consumer_offsets-{p} of {first['offsets_partitions']} "
            f"({first['offsets_partitions_source']})"
        )
        if first["expected_partition"] != p:
            title.append(f" (expected partition {first['expected_partition']})", style="red")
        title.append(f"  coordinator: broker {first['coordinator']} ({first['coordinator_source']})")
        if clusters > 1:
            title.append(f"  cluster {visible(str(cluster))}")
        table = Table(title=title, title_justify="left")
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
            if r["above_leo"]:
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
        tables.append(table)
    return tables
