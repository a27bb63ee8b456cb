"""The election table of the audit report (``result.elections``, :mod:`auditor.spark.election`): per
partition with a divergence or an offline leader, every candidate replica with its last leader epoch, log
end offset and what electing it would cost the other replicas, and KIP-966's recommendation.

* :func:`election_renderable`: Rich, one table per partition;
* :func:`election_json`: the JSON section (camelCase keys).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from auditor.text import visible


def _costs_cell(costs: Iterable[Mapping[str, Any]]) -> Text:
    """What each other replica loses: ``b1 500..749: 250 (250 committed)``; a silent divergence noted."""
    out = Text()
    for c in costs:
        if out:
            out.append("\n")
        if not c["records"] and not c.get("markers"):
            out.append(f"b{c['broker']}: nothing", style="dim")
        else:
            out.append(f"b{c['broker']} {c['first']}..{c['last']}: {c['records']}")
            if c["committed"]:
                out.append(f" ({c['committed']} committed)", style="bold red")
            if c.get("markers"):
                out.append(f" +{c['markers']} marker(s)")
        if c.get("silent_from") is not None:
            out.append(
                f"\n  {c['silent_from']}..{c['silent_to']} stay diverged (truncated to "
                f"{c['epoch_truncation']})",
                style="yellow",
            )
    return out


def election_table(e: Mapping[str, Any]) -> Table:
    """The candidates of one partition, Kafka's choice first: broker, last leader epoch, log end offset,
    records and committed records the other replicas lose ("sum": over them, a record two replicas lose
    counts twice), per other replica; marked: Kafka's choice (what its election rules rank first, the
    ``recommended`` of the JSON), the candidate that loses the least committed data, the current leader."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for head, justify in (
        ("elect", "left"),
        ("epoch", "right"),
        ("LEO", "right"),
        ("lost\n(sum)", "right"),
        ("committed\n(sum)", "right"),
        ("lost on each other replica", "left"),
    ):
        table.add_column(
            head,
            justify=justify,
            no_wrap=justify == "right",
            overflow="fold",
            min_width=24 if head.startswith("lost on") else None,
            ratio=1 if head.startswith("lost on") else None,
        )
    least = e.get("least_loss")
    for c in e["candidates"]:
        # the marks go under the broker id: a narrow terminal never drops them
        elect = Text(str(c["broker"]))
        if c["recommended"]:
            elect.append("\nKafka's choice", style="bold")
        if c["broker"] == least:
            elect.append("\nleast loss", style="bold green")
        if c["current"]:
            elect.append("\ncurrent", style="cyan")
        table.add_row(
            elect,
            str(c["last_epoch"]),
            str(c["leo"]),
            str(c["records_lost"]),
            Text(str(c["committed_lost"]), style="bold red" if c["committed_lost"] else ""),
            _costs_cell(c["costs"]),
        )
    return table


def _title(e: Mapping[str, Any]) -> Text:
    title = Text(f"{visible(e['topic'])}-{e['partition']}", style="bold")
    title.append(f" · {' and '.join(e['reasons'])}")
    leader = e.get("kraft_leader")
    if leader is None:
        title.append(" · no KRaft metadata")
    elif leader < 0:
        title.append(" · no leader (offline)")
    else:
        title.append(f" · current leader {leader}")
        if e.get("current_is_recommended") is False:
            title.append(" (not the recommendation)", style="yellow")
    return title


def election_renderable(elections: list[Mapping[str, Any]]) -> Group:
    """Rich: per partition a title line, the candidates table and why the recommendation wins (KIP-966:
    highest last leader epoch, then highest log end offset, then lowest broker id)."""
    parts: list = []
    clusters = {e["cluster"] for e in elections}
    for e in elections:
        title = _title(e)
        if len(clusters) > 1:
            title.append(f" · cluster {visible(e['cluster'])}")
        parts += [title, election_table(e), Text(f"Kafka's choice: {e['why']}", style="dim"), Text("")]
    return Group(*parts)


def _cost_json(c: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "broker": c["broker"],
        "firstDifference": c["first_difference"],
        "truncatesFrom": c["from"],
        "records": c["records"],
        "committedRecords": c["committed"],
        "markers": c.get("markers", 0),
        "bytes": c["bytes"],
        "batches": c["batches"],
        "firstOffset": c["first"],
        "lastOffset": c["last"],
        "epochTruncationOffset": c["epoch_truncation"],
        "epochTruncationFallback": c["epoch_fallback"],
        "silentDivergence": None
        if c["silent_from"] is None
        else {"firstOffset": c["silent_from"], "lastOffset": c["silent_to"]},
    }


def election_json(elections: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``elections`` section of the JSON report, one object per partition."""
    return [
        {
            "cluster": e["cluster"],
            "topic": e["topic"],
            "partition": e["partition"],
            "reasons": list(e["reasons"]),
            "kraftLeader": e["kraft_leader"],
            "kraftLeaderEpoch": e["kraft_leader_epoch"],
            "referenceLeader": e["leader"],
            "referenceLeaderSource": e["leader_source"],
            "recommended": e["recommended"],
            "why": e["why"],
            "currentIsRecommended": e["current_is_recommended"],
            "leastLoss": e.get("least_loss"),
            "candidates": [
                {
                    "broker": c["broker"],
                    "rank": c["rank"],
                    "recommended": c["recommended"],
                    "currentLeader": c["current"],
                    "lastLeaderEpoch": c["last_epoch"],
                    "logEndOffset": c["leo"],
                    "highWatermark": c["hw"],
                    "logStartOffset": c["log_start"],
                    "recordsLost": c["records_lost"],
                    "committedRecordsLost": c["committed_lost"],
                    "bytesLost": c["bytes_lost"],
                    "costs": [_cost_json(x) for x in c["costs"]],
                }
                for c in e["candidates"]
            ],
        }
        for e in elections
    ]
