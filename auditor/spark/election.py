"""Which replica to elect, on Spark: the cost of every candidate leader of every partition with a
divergence (any replica pair differs) or an offline leader (KRaft leader -1), as
:mod:`auditor.kafka.election` defines it.

For those partitions every ordered pair (candidate C, other replica R) becomes a zone of
:func:`auditor.spark.compare.lost_batches` (several hypothetical leaders per partition) starting at
``truncation_start``: the pair's first divergent offset, else C's log end offset when R's log extends past
it. The batches R holds from there on that C does not hold are summed per (partition, C, R): records,
committed records (below the committed high watermark, plain or committed data only), bytes, batches and
offsets. The small table is collected with the audit's other results (one Spark action); the ordering,
the epoch-based truncation check and the per-partition result are computed on the driver by
:func:`auditor.kafka.election.choices`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from auditor.kafka.election import CONTROL_STATES, Candidate, Cost, choices, why
from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.topics import METADATA_TOPIC
from auditor.kafka.transactions import VISIBLE_TO_READ_COMMITTED
from auditor.spark.compare import lost_batches, with_tp
from auditor.spark.tuning import broadcast

_PARTITION = ("cluster", "topic", "partition")


def candidate_pairs(summary: DataFrame, divergence: DataFrame) -> DataFrame:
    """One row per (partition, candidate ``leader``, other replica ``broker``) of the partitions to decide:
    ``first_difference`` (the pair's first divergent offset, null: none) and ``from``
    (``election.truncation_start``: null when the replica's log is a prefix of the candidate's)."""
    s = with_tp(summary).where(F.col("topic") != METADATA_TOPIC)
    offline = s.where(F.col("kraft_leader") == NO_LEADER).select("tp")
    decide = divergence.select("tp").unionByName(offline).distinct()
    s = s.join(broadcast(decide), "tp", "left_semi")
    # every ordered pair of replicas of a partition, without a self-join (one row per partition, exploded)
    replica = F.struct(
        "broker",
        "leo",
        "log_start",
        F.col("unreadable_from").alias("u_from"),
        F.col("unreadable_to").alias("u_to"),
    )
    per_partition = s.groupBy("tp", *_PARTITION).agg(F.collect_list(replica).alias("reps"))
    pairs = (
        per_partition.select("tp", *_PARTITION, F.explode("reps").alias("c"), "reps")
        .select("tp", *_PARTITION, "c", F.explode("reps").alias("r"))
        .where(F.col("c.broker") != F.col("r.broker"))
        .select(
            "tp",
            *_PARTITION,
            F.col("c.broker").alias("leader"),
            F.col("c.leo").alias("c_leo"),
            F.col("c.u_from").alias("leader_unreadable_from"),
            F.col("c.u_to").alias("leader_unreadable_to"),
            F.col("r.broker").alias("broker"),
            F.col("r.leo").alias("r_leo"),
            F.col("r.log_start").alias("r_log_start"),
        )
    )
    d = divergence.select("tp", "a", "b", F.col("offset").alias("first_difference"))
    on = (
        (pairs["tp"] == d["tp"])
        & (d["a"] == F.least(pairs["leader"], pairs["broker"]))
        & (d["b"] == F.greatest(pairs["leader"], pairs["broker"]))
    )
    start = F.coalesce(
        F.col("first_difference"),
        F.when(F.col("r_leo") > F.col("c_leo"), F.greatest(F.col("c_leo"), F.col("r_log_start"))),
    )
    return (
        pairs.join(d, on, "left")
        .select(pairs["*"], "first_difference")
        .withColumn("from", start)
        .withColumn("leader_source", F.lit("candidate"))
    )


def _committed(lb: DataFrame) -> Column:
    """Committed records of a lost batch row (``election.committed_records``): from ``start`` below the
    committed high watermark, plain or committed data only (when ``lost_batches`` carries the transaction
    state of the batch)."""
    below = F.least(
        F.least(F.col("last_offset"), F.col("committed_hw") - 1) - F.col("start") + 1, F.col("records_count")
    )
    visible = F.col("c")
    if "txn_state" in lb.columns:
        visible = visible & F.coalesce(
            F.col("txn_state").isin(*sorted(VISIBLE_TO_READ_COMMITTED)), F.lit(False)
        )
    return F.when(visible, below).otherwise(F.lit(0))


def cost_table(
    batches: DataFrame,
    replicas: DataFrame,
    summary: DataFrame,
    divergence: DataFrame,
    logs: DataFrame | None = None,
    states: DataFrame | None = None,
) -> DataFrame:
    """Per (partition, candidate ``leader``, replica ``broker``): the pair's ``first_difference`` and ``from``
    and what the replica loses when the candidate is elected (``records``: data records, ``committed``,
    ``markers``: control batches, ``bytes``, ``batches``, ``first``, ``last``; null when nothing). ``logs``:
    the batch rows the transaction states are decided over (``compare.txn_logs``; default ``batches``);
    ``states``: ``compare.txn_states(logs)`` when the audit has it already."""
    pairs = candidate_pairs(summary, divergence)
    zones = pairs.where(F.col("from").isNotNull()).select(
        "tp", "broker", "leader", "leader_source", "from", "leader_unreadable_from", "leader_unreadable_to"
    )
    lb = lost_batches(batches, replicas, zones, logs, states)
    lb = lb.where(F.col("differs"))
    control = F.col("txn_state").isin(*sorted(CONTROL_STATES)) if "txn_state" in lb.columns else F.lit(False)
    lost = lb.groupBy("tp", "leader", "broker").agg(
        F.sum(
            F.when(~control, F.least(F.col("last_offset") - F.col("start") + 1, F.col("records_count")))
        ).alias("records"),
        F.sum(_committed(lb)).alias("committed"),
        F.count(F.when(control, F.lit(1))).alias("markers"),
        F.sum("size").alias("bytes"),
        F.count(F.lit(1)).alias("batches"),
        F.min("start").alias("first"),
        F.max("last_offset").alias("last"),
    )
    # the pairs and their costs meet by a union and an aggregation (a join back to ``pairs`` would join two
    # plans of the same lineage, which Spark cannot always tell apart)
    costs = ("records", "committed", "markers", "bytes", "batches", "first", "last")
    pair_cols = (*_PARTITION, "first_difference", "from")
    combined = pairs.select("tp", "leader", "broker", *pair_cols).unionByName(lost, allowMissingColumns=True)
    return (
        combined.groupBy("tp", "leader", "broker")
        .agg(*[F.max(c).alias(c) for c in (*pair_cols, *costs)])
        .select(*_PARTITION, "leader", "broker", "first_difference", "from", *costs)
    )


def election_costs(frames) -> DataFrame:
    """The :func:`cost_table` of one audit's frames (its candidate rows, transaction states and summary)."""
    extra = frames.extra
    return cost_table(
        extra["candidates"],
        extra["replicas"],
        frames.replicas,
        frames.divergence,
        extra.get("txn_logs"),
        extra.get("txn_states"),
    )


def elections(
    costs: Sequence[Mapping[str, Any]], replicas: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per partition to decide (sorted by cluster, topic, partition), its candidates with the cost of electing
    each, the recommendation and why, and the current KRaft leader, from the collected rows of
    :func:`election_costs` and the audit's collected per-replica summary (``rows.SUMMARY``)."""
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
    """The election of one partition from its summary rows and its rows of :func:`cost_table`."""
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
