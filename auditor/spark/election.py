"""Which replica to elect: the cost of every candidate leader of every partition with a divergence (any
replica pair differs) or an offline leader (KRaft leader -1), as :mod:`auditor.kafka.election` defines it.

The pass over each partition (``auditor.spark.partition_pass.election_costs``) compares every candidate C with
every other replica R from ``truncation_start`` on (the pair's first divergent offset, else C's log end offset
when R's log extends past it) and sums what R holds there that C does not: records, committed records (below
the committed high watermark, plain or committed data only), bytes, batches and offsets (``rows.COST``). The
ordering, the epoch-based truncation check and the per-partition result are computed here, in the driver, by
:func:`auditor.kafka.election.choices`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auditor.kafka.election import Candidate, Cost, choices, why
from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.topics import METADATA_TOPIC

_PARTITION = ("cluster", "topic", "partition")


def elections(
    costs: Sequence[Mapping[str, Any]], replicas: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per partition to decide (sorted by cluster, topic, partition), its candidates with the cost of electing
    each, the recommendation and why, and the current KRaft leader, from the pass's cost rows (``rows.COST``)
    and the audit's collected per-replica summary (``rows.SUMMARY``)."""
    rows_by: dict[tuple, list[dict]] = {}
    for row in costs:
        d = dict(row)
        rows_by.setdefault(tuple(d[k] for k in _PARTITION), []).append(d)
    summary_by: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in replicas:
        summary_by.setdefault(tuple(r[k] for k in _PARTITION), []).append(r)
    out = []
    for key in sorted(set(rows_by) | _offline_single(summary_by)):
        out.append(partition_election(key, summary_by.get(key, []), rows_by.get(key, [])))
    return out


def _offline_single(summary_by: Mapping[tuple, list[Mapping[str, Any]]]) -> set[tuple]:
    """Offline partitions with a single replica (no pair, so no row in the cost table)."""
    return {
        key
        for key, reps in summary_by.items()
        if key[1] != METADATA_TOPIC and len(reps) == 1 and reps[0].get("kraft_leader") == NO_LEADER
    }


def candidate_of(r: Mapping[str, Any]) -> Candidate:
    """A summary row (``rows.SUMMARY``) as an election candidate."""
    cache = tuple((int(e["epoch"]), int(e["start_offset"])) for e in (r.get("epochs") or []))
    return Candidate(
        broker=int(r["broker"]),
        leo=int(r.get("leo") or 0),
        log_start=int(r.get("log_start") or 0),
        hw=None if r.get("hw") is None else int(r["hw"]),
        cache=cache,
        max_batch_epoch=r.get("max_batch_epoch"),
    )


def partition_election(key: tuple, summary: Sequence[Mapping[str, Any]], pairs: Sequence[Mapping]) -> dict:
    """The election of one partition from its summary rows and its cost rows (``rows.COST``)."""
    cluster, topic, partition = key
    candidates = [candidate_of(r) for r in sorted(summary, key=lambda r: r["broker"])]
    by_pair = {(p["leader"], p["broker"]): p for p in pairs}

    def first_difference(a: int, b: int) -> int | None:
        p = by_pair.get((a, b))
        return None if p is None else p["first_difference"]

    def cost_of(c: int, r: int, start: int | None) -> Cost:
        p = by_pair.get((c, r)) or {}
        return Cost(
            int(p.get("records") or 0),
            int(p.get("committed") or 0),
            int(p.get("bytes") or 0),
            int(p.get("batches") or 0),
            p.get("first"),
            p.get("last"),
            int(p.get("markers") or 0),
        )

    first = summary[0] if summary else {}
    kraft_leader = first.get("kraft_leader")
    current = kraft_leader if kraft_leader is not None and kraft_leader >= 0 else None
    ranked_choices = choices(candidates, first_difference, cost_of)
    best = ranked_choices[0].candidate.broker if ranked_choices else None
    # the candidate whose election loses the least committed data (then fewest records, then Kafka's order)
    least = min(ranked_choices, key=lambda ch: (ch.committed, ch.records, ch.rank), default=None)
    reasons = []
    if kraft_leader == NO_LEADER:
        reasons.append("offline")
    if any(p["first_difference"] is not None for p in pairs):
        reasons.append("divergence")
    return {
        "cluster": cluster,
        "topic": topic,
        "partition": partition,
        "reasons": reasons,
        "kraft_leader": kraft_leader,
        "kraft_leader_epoch": first.get("kraft_leader_epoch"),
        "leader": first.get("leader"),
        "leader_source": first.get("leader_source"),
        "recommended": best,
        "why": why(candidates),
        "current_is_recommended": None if current is None else current == best,
        "least_loss": least.candidate.broker if least is not None else None,
        "candidates": [
            {
                "broker": ch.candidate.broker,
                "rank": ch.rank,
                "recommended": ch.candidate.broker == best,
                "current": ch.candidate.broker == current,
                "last_epoch": ch.candidate.last_epoch,
                "leo": ch.candidate.leo,
                "hw": ch.candidate.hw,
                "log_start": ch.candidate.log_start,
                "records_lost": ch.records,
                "committed_lost": ch.committed,
                "bytes_lost": sum(c.bytes for c in ch.costs.values()),
                "costs": [
                    {
                        "broker": r,
                        "first_difference": first_difference(ch.candidate.broker, r),
                        "from": (by_pair.get((ch.candidate.broker, r)) or {}).get("from"),  # Spark's zone
                        "records": cost.records,
                        "committed": cost.committed,
                        "bytes": cost.bytes,
                        "markers": cost.markers,
                        "batches": cost.batches,
                        "first": cost.first,
                        "last": cost.last,
                        "epoch_truncation": ch.checks[r].truncation_offset,
                        "epoch_fallback": ch.checks[r].fallback,
                        "silent_from": ch.checks[r].silent_from,
                        "silent_to": ch.checks[r].silent_to,
                    }
                    for r, cost in sorted(ch.costs.items())
                ],
            }
            for ch in ranked_choices
        ],
    }
