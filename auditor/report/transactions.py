"""Rendering the transactions open on the current leaders (``AuditResult.transactions``, from
``auditor.spark.hanging``): camelCase dicts for the JSON report, a Rich table for people."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from auditor.text import visible

_KEYS = {
    "leader_source": "leaderSource",
    "producer_id": "producerId",
    "producer_epoch": "producerEpoch",
    "first_offset": "firstOffset",
    "last_offset": "lastOffset",
    "high_watermark": "highWatermark",
    "log_end_offset": "logEndOffset",
    "last_stable_offset": "lastStableOffset",
    "markers_elsewhere": "markersElsewhere",
    "coordinator_view": "coordinatorView",
}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_KEYS.get(k, _camel(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def transactions_json(transactions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``transactions`` section of the JSON report: every transaction open on a current leader, with
    its last stable offset, the markers other replicas hold and the coordinator's view."""
    return [_jsonable(t) for t in transactions]


def transactions_table(transactions: list[Mapping[str, Any]]) -> Table:
    """One row per open transaction: partition, producer, offsets, what read_committed consumers see."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for head, justify in (
        ("partition", "left"),
        ("leader", "right"),
        ("producer id/epoch", "left"),
        ("open from", "right"),
        ("records", "right"),
        ("LSO", "right"),
        ("HW", "right"),
        ("marker elsewhere", "left"),
        ("coordinator", "left"),
        ("findings", "left"),
    ):
        table.add_column(head, justify=justify, no_wrap=justify == "right")
    for t in transactions:
        elsewhere = t.get("markers_elsewhere") or []
        markers = ", ".join(f"{m['marker']} at {m['offset']} on broker {m['broker']}" for m in elsewhere)
        codes = t.get("findings") or []
        table.add_row(
            f"{visible(t['topic'])}-{t['partition']}",
            str(t["leader"]),
            f"{t['producer_id']}/{t['producer_epoch']}",
            str(t["first_offset"]),
            str(t["records"]),
            str(t["last_stable_offset"]),
            str(t["high_watermark"]),
            markers or "",
            Text(visible(t.get("coordinator_view") or ""), overflow="fold"),
            Text(" ".join(codes), style="bold red" if codes else ""),
        )
    return table
