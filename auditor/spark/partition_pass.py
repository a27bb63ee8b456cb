"""One pass over one partition: every comparison of its replicas, from its rows grouped together (pure
Python, no pyspark: it runs in Spark's ``mapInArrow`` over a partition at a time, and in the driver for small
inputs).

The rows of a partition (``tp``) are its replica rows, leader-epoch cache entries, batch rows (those of the
chunks where its replicas are not unanimous, ``auditor.spark.compare``, *held*, and every other
transactional or control batch, walked for its transaction's state and dropped: ``pass_loss.walk_batches``),
record rows (compacted partitions), optionally the digests of every chunk (the epoch ranges come from them;
without them, from the batch rows), and the KRaft metadata rows about it. :func:`run` walks them once per
concern and yields, in the ``rows.PASS_OUTPUTS`` layouts:

* the replica pairs and their first divergence (a batch or, compacted, a record that differs inside the
  common range ``[max(log start offsets), min(LEOs))``, outside unreadable spans);
* the registered per-partition rules (``auditor.spark.partition_rules.evaluate``: leader, high watermarks,
  leader epochs, OffsetsForLeaderEpoch truncation, KRaft) with the summary, timeline, zones and lag rows;
* lag counts (the leader's batches from a prefix follower's LEO on; KA630);
* truncation loss: each follower's batches from its zone start, compared with the leader's batch at the same
  base offset; a differing batch's records below the highest high watermark checkpointed by a replica
  holding that same batch were committed; the transaction state of each batch in its replica's own log
  (``auditor.kafka.transactions.classify``) decides what counts as committed data; runs of consecutive
  differing batches with their markers, producers and timestamps (KA710-KA712);
* the transactions open on the current leader, with the markers other replicas hold (KA713/KA714);
* the election's costs: for partitions with a divergence or an offline leader, what every other replica loses
  when each candidate is elected (``auditor.spark.election``).

Holding more batch rows of a partition than those (up to the whole log) changes none of its results: the
rows of an identical chunk are the same on every replica, so they neither diverge nor differ from the leader,
and break loss runs as a gap does; a transaction's state depends on transactional and control batches only.
The batch and record rows stream by (batches first, by broker and offset); what is held at once is the held
batch rows and one open transaction per producer and replica.
"""

from __future__ import annotations

from collections.abc import Mapping

from auditor.kafka.election import CONTROL_STATES
from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.topics import METADATA_TOPIC
from auditor.kafka.transactions import (
    VISIBLE_TO_READ_COMMITTED,
)
from auditor.spark.partition_rules import (
    cluster_findings,
    evaluate_rows,
    lag_finding,
    loss_findings,
)
from auditor.spark.pass_divergence import (
    digest_of,
    epoch_ranges,
    first_divergences,
    greatest,
    replica_pairs,
)
from auditor.spark.pass_loss import export_rows, lost_batches, lost_runs, open_transactions, walk_batches
from auditor.spark.pass_rows import Row, present


def lag_counts(lag: Row, leader_batches: list[Row]) -> Row:
    """A lag row with the leader's records, bytes and batches from the follower's LEO ``from`` to the
    leader's ``to``, and the max timestamps of the first and newest of those batches."""
    lo, hi = lag["from"], lag["to"]
    inside = [b for b in leader_batches if b["last_offset"] >= lo and b["base_offset"] < hi]
    if not inside:
        return {
            **lag,
            "records": None,
            "bytes": None,
            "batches": 0,
            "first_timestamp": None,
            "last_timestamp": None,
        }
    first = min(inside, key=lambda b: b["base_offset"])
    return {
        **lag,
        "records": sum(
            min(b["last_offset"] - max(b["base_offset"], lo) + 1, b["records_count"]) for b in inside
        ),
        "bytes": sum(b["size"] for b in inside),
        "batches": len(inside),
        "first_timestamp": first["max_timestamp"],
        "last_timestamp": greatest(*(b["max_timestamp"] for b in inside)),
    }


def election_costs(
    summary: list[Row],
    divergences: list[Row],
    by_broker: Mapping[int, list[Row]],
    replicas: Mapping[int, Row],
    states: Mapping[tuple[int, int], tuple[str, int | None]],
) -> list[Row]:
    """Partitions with a divergence or an offline leader (KRaft leader -1): per ordered pair (candidate
    ``leader``, other replica ``broker``), the pair's first divergent offset, where the replica's loss starts
    (``election.truncation_start``) and what it loses when the candidate is elected."""
    if not summary or summary[0]["topic"] == METADATA_TOPIC:
        return []
    if not divergences and not any(s.get("kraft_leader") == NO_LEADER for s in summary):
        return []
    first_difference = {(d["a"], d["b"]): d["offset"] for d in divergences}
    pairs, zones = [], []
    for c in summary:
        for r in summary:
            if c["broker"] == r["broker"]:
                continue
            key = (min(c["broker"], r["broker"]), max(c["broker"], r["broker"]))
            fd = first_difference.get(key)
            start = fd
            if start is None and _gt(r.get("leo"), c.get("leo")):
                start = greatest(c.get("leo"), r.get("log_start"))
            pairs.append((c, r, fd, start))
            if start is not None:
                zones.append(
                    {
                        "broker": r["broker"],
                        "leader": c["broker"],
                        "leader_source": "candidate",
                        "from": start,
                        "leader_unreadable_from": c.get("unreadable_from"),
                        "leader_unreadable_to": c.get("unreadable_to"),
                    }
                )
    costs: dict[tuple[int, int], Row] = {}
    for lost in lost_batches(by_broker, replicas, zones, states):
        b, start = lost.b, lost.start
        key = (lost.leader, b.broker)
        g = costs.get(key)
        if g is None:
            g = costs[key] = {"records": None, "committed": 0, "markers": 0, "bytes": 0, "batches": 0,
                              "first": start, "last": b.last_offset}  # fmt: skip
        control = lost.txn_state in CONTROL_STATES
        if not control:
            g["records"] = (g["records"] or 0) + min(b.last_offset - start + 1, b.records_count)
        if lost.below_hw and lost.txn_state in VISIBLE_TO_READ_COMMITTED:
            below = min(b.last_offset, lost.committed_hw - 1) - start + 1
            g["committed"] += min(below, b.records_count)
        g["markers"] += control
        g["bytes"] += b.size
        g["batches"] += 1
        if start < g["first"]:
            g["first"] = start
        if b.last_offset > g["last"]:
            g["last"] = b.last_offset
    out = []
    for c, r, fd, start in pairs:
        cost = costs.get((c["broker"], r["broker"]), {})
        out.append(
            {
                "cluster": c["cluster"],
                "topic": c["topic"],
                "partition": c["partition"],
                "leader": c["broker"],
                "broker": r["broker"],
                "first_difference": fd,
                "from": start,
                **{
                    k: cost.get(k)
                    for k in ("records", "committed", "markers", "bytes", "batches", "first", "last")
                },
            }
        )
    return out


def _gt(a, b) -> bool:
    return a is not None and b is not None and a > b


def run(rows: Mapping[str, list], metadata: list[Row], export: bool = False) -> dict[str, list[Row]]:
    """Every comparison of one partition from its rows by kind (:data:`INPUT_KINDS`; batch rows as
    :class:`BatchRow` in (broker, base offset) order and record rows in offset order, each any iterable walked
    once, the batches first; ``pass_loss.walk_batches`` keeps the held batch rows) and its metadata rows
    (:func:`metadata_for`): the output rows by ``rows.PASS_OUTPUTS`` kind; the lost batches
    ``--export-lost`` decodes (``lost``) only when ``export``."""
    replica_rows = rows.get("replica", [])
    if not replica_rows:
        return {}
    replicas = {r["broker"]: r for r in replica_rows}
    walked = walk_batches(rows.get("batch", ()))  # the transactions' states; only the held rows are kept
    by_broker, states = walked.by_broker, walked.states
    pairs = replica_pairs(replica_rows)
    # the record rows (compacted partitions) are walked once, in offset order, and never held
    divergences = first_divergences(pairs, by_broker, rows.get("record", ()))
    digest = rows.get("digest")
    held = (b for bs in by_broker.values() for b in bs)
    ranges = epoch_ranges(digest if digest is not None else digest_of(held))

    inputs = [dict(present(r), kind="replica") for r in replica_rows]
    inputs += [dict(present(e), kind="epoch") for e in rows.get("epoch", ())]
    inputs += [dict(present(g), kind="range") for g in ranges]
    inputs += [
        dict(present({k: d[k] for k in ("a", "b", "lo", "hi", "offset", "mode", "detail")}), kind="div")
        for d in divergences
    ]
    inputs += [dict(present(m), kind="metadata") for m in metadata]
    result = evaluate_rows(inputs)

    lags = [lag_counts(lag, by_broker.get(lag["leader"], [])) for lag in result.lags]
    lost = list(lost_batches(by_broker, replicas, result.zones, states))
    runs = lost_runs(lost)
    findings = list(result.findings)
    findings += [lag_finding(lag) for lag in lags]
    findings += [f for r in runs for f in loss_findings(r)]
    key = {k: replica_rows[0][k] for k in ("cluster", "topic", "partition")}
    return {
        "finding": findings,
        "summary": result.summary,
        "timeline": result.timeline,
        "lag": lags,
        "loss": runs,
        "divergence": divergences,
        "pair": pairs,
        "epochs": [dict(g, **key) for g in ranges if g["broker"] in replicas],
        "cost": election_costs(result.summary, divergences, by_broker, replicas, states),
        "open_txn": open_transactions(result.summary, walked),
        "lost": export_rows(lost) if export else [],
    }


def cluster_rows(findings: list[Row], summary: list[Row]) -> tuple[list[Row], list[Row]]:
    """The cluster-wide step after every partition's pass: the ``cluster`` rules (KA621 folded per cluster,
    KA623) over the per-replica summary rows of every partition. Returns the partitions' findings as they are
    and the cluster findings."""
    return list(findings), cluster_findings(summary)
