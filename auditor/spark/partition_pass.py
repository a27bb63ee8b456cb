"""One pass over one partition: every comparison of its replicas, from its rows grouped together (pure
Python, no pyspark: it runs in Spark's ``mapInArrow`` over a partition at a time, and in the driver for small
inputs).

The rows of a partition (``tp``) are its replica rows, leader-epoch cache entries, batch rows (those of the
chunks where its replicas are not unanimous, ``auditor.spark.compare``, *held*, and every other
transactional or control batch, walked for its transaction's state and dropped: ``pass_loss.walk_batches``;
a lagging follower's gap comes as the digest rows of its chunks, :class:`LagChunks`),
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
The batch and record rows stream by (batches first, by broker and offset); the held batch rows are kept
by ``pass_held.HeldRows`` (spilled to a temporary file past a bound) and every reader walks them in offset
order, side by side where it compares replicas (``pass_divergence.batch_divergence``,
``pass_loss.lost_batches``), summing as it goes (``pass_loss.lost_runs``, :func:`lag_counts`). What is held
at once: up to ``pass_held.IN_MEMORY`` held rows, the rows at one base offset per replica compared and
one open transaction per producer and replica, whatever the size of the region where the replicas diverge;
what still grows with it: the state of each held transactional batch (a dictionary entry, about 190 bytes)
and, with ``--export-lost``, the row of each committed lost batch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping

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
from auditor.spark.pass_loss import (
    Walked,
    export_row,
    leader_zones,
    lost_batches,
    lost_runs,
    open_transactions,
    walk_batches,
)
from auditor.spark.pass_rows import Row, present


def lag_counts(lag: Row, leader_batches: Iterable[Row], leader_gap: list[Row] = ()) -> Row:
    """A lag row with the leader's records, bytes and batches from the follower's LEO ``from`` to the
    leader's ``to``, and the max timestamps of the first and newest of those batches; ``leader_gap``: the
    leader's digest rows of the chunks left to them (:class:`LagChunks`), wholly past the follower's LEO and
    after its first batch there (``compare.Compared.first_after_log_ends``). The leader's batch rows are
    walked once and summed as they go."""
    lo, hi = lag["from"], lag["to"]
    gap = [d for d in leader_gap if d["last"] >= lo and d["first"] < hi]
    if any(d["first"] < lo for d in gap):
        raise ValueError(f"a lag chunk straddles the follower's log end offset {lo}")
    first = None
    records = size = batches = 0
    last_timestamp = None
    for b in leader_batches:
        if b["last_offset"] < lo or b["base_offset"] >= hi:
            continue
        if first is None or b["base_offset"] < first["base_offset"]:
            first = b
        records += min(b["last_offset"] - max(b["base_offset"], lo) + 1, b["records_count"])
        size += b["size"]
        batches += 1
        last_timestamp = greatest(last_timestamp, b["max_timestamp"])
    if gap and (first is None or min(d["first"] for d in gap) < first["base_offset"]):
        raise ValueError(f"the first batch from the follower's log end offset {lo} is in a lag chunk")
    if first is None:
        return {
            **lag,
            "records": None,
            "bytes": None,
            "batches": 0,
            "first_timestamp": None,
            "last_timestamp": None,
        }
    return {
        **lag,
        "records": records + sum(d["records"] for d in gap),
        "bytes": size + sum(d["bytes"] for d in gap),
        "batches": batches + sum(d["n"] for d in gap),
        "first_timestamp": first["max_timestamp"],
        "last_timestamp": greatest(last_timestamp, *(d["last_timestamp"] for d in gap)),
    }


class LagChunks:
    """The chunks of a partition left to their digest rows (``compare.Compared.lag_only``: a lagging
    follower's gap, whose batch rows the pass never receives): those rows by broker in offset order, and the
    brokers holding each chunk (they hold it alike)."""

    def __init__(self, digest, chunks) -> None:
        self.by_broker: dict[int, list[Row]] = {}
        self.holders: dict[int, set[int]] = {}
        if not chunks:
            return
        for d in digest or ():
            if d.get("chunk") in chunks:
                self.by_broker.setdefault(d["broker"], []).append(d)
                self.holders.setdefault(d["chunk"], set()).add(d["broker"])
        for rows_ in self.by_broker.values():
            rows_.sort(key=lambda d: d["first"])

    def check_leader(self, leader: int | None) -> None:
        """The pass's leader holds every such chunk (what the driver assumed of the KRaft leader)."""
        if any(leader not in holders for holders in self.holders.values()):
            raise ValueError(f"a lag chunk the leader (broker {leader}) does not hold")

    def lost(
        self, leader: int, zone_lo: int, own: Mapping[int, int], replicas: Mapping[int, Row]
    ) -> Iterator[tuple[int, Row, int]]:
        """What each other replica loses of these chunks when ``leader`` (a candidate lacking them) is
        elected, its zones starting at ``zone_lo`` and each follower's at ``own``
        (``pass_loss.leader_zones``): ``(broker, digest row, committed records)``, as
        ``pass_loss.lost_batches`` counts the rows (a batch from the zones' lowest start on that the leader
        lacks; committed below the highest high watermark of the replicas holding it)."""
        for broker, rows_ in sorted(self.by_broker.items()):
            if broker == leader or broker not in replicas:
                continue
            for d in rows_:
                holders = self.holders[d["chunk"]]
                if leader in holders or d["last"] < zone_lo:
                    continue
                if own.get(broker, d["first"]) > d["first"]:
                    raise ValueError(f"a lag chunk straddles broker {broker}'s zone start {own[broker]}")
                chw = max((replicas[b].get("hw") or 0) for b in holders if b in replicas)
                if d["first"] < chw <= d["last"]:
                    raise ValueError(f"a lag chunk straddles the high watermark {chw}")
                yield broker, d, d["records"] if d["last"] < chw else 0


def election_costs(
    summary: list[Row],
    divergences: list[Row],
    by_broker: Mapping[int, list[Row]],
    replicas: Mapping[int, Row],
    states: Mapping[tuple[int, int], tuple[str, int | None]],
    gap: LagChunks | None = None,
) -> list[Row]:
    """Partitions with a divergence or an offline leader (KRaft leader -1): per ordered pair (candidate
    ``leader``, other replica ``broker``), the pair's first divergent offset, where the replica's loss starts
    (``election.truncation_start``) and what it loses when the candidate is elected (its held batch rows,
    and ``gap``'s chunks it holds and the candidate lacks)."""
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
    for leader, _zs, zone_lo, own in leader_zones(zones) if gap is not None else ():
        for broker, d, committed in gap.lost(leader, zone_lo, own, replicas):
            g = costs.get((leader, broker))
            if g is None:
                g = costs[(leader, broker)] = {"records": None, "committed": 0, "markers": 0, "bytes": 0,
                                               "batches": 0, "first": d["first"],
                                               "last": d["last"]}  # fmt: skip
            g["records"] = (g["records"] or 0) + d["records"]
            g["committed"] += committed
            g["bytes"] += d["bytes"]
            g["batches"] += d["n"]
            g["first"], g["last"] = min(g["first"], d["first"]), max(g["last"], d["last"])
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


def run(
    rows: Mapping[str, list], metadata: list[Row], export: bool = False, lag_chunks: Collection[int] = ()
) -> dict[str, list[Row]]:
    """Every comparison of one partition from its rows by kind (:data:`INPUT_KINDS`; batch rows as
    :class:`BatchRow` in (broker, base offset) order and record rows in offset order, each any iterable walked
    once, the batches first; ``pass_loss.walk_batches`` keeps the held batch rows) and its metadata rows
    (:func:`metadata_for`): the output rows by ``rows.PASS_OUTPUTS`` kind; the lost batches
    ``--export-lost`` decodes (``lost``) only when ``export``. ``lag_chunks``: the chunks whose batch rows
    were left out for their digest rows (:class:`LagChunks`)."""
    replica_rows = rows.get("replica", [])
    if not replica_rows:
        return {}
    replicas = {r["broker"]: r for r in replica_rows}
    walked = walk_batches(rows.get("batch", ()))  # the transactions' states; only the held rows are kept
    try:
        return _run(rows, metadata, export, lag_chunks, replicas, walked)
    finally:
        walked.by_broker.close()


def _run(
    rows: Mapping[str, list],
    metadata: list[Row],
    export: bool,
    lag_chunks: Collection[int],
    replicas: dict[int, Row],
    walked: Walked,
) -> dict[str, list[Row]]:
    replica_rows = rows["replica"]
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
    gap = LagChunks(digest, lag_chunks)
    if gap.holders:
        gap.check_leader(next((s["broker"] for s in result.summary if s.get("is_leader")), None))

    lags = [
        lag_counts(lag, by_broker.get(lag["leader"], []), gap.by_broker.get(lag["leader"], []))
        for lag in result.lags
    ]
    exported: list[Row] = []

    def lost() -> Iterator:  # walked once: the runs are summed and the exported rows kept as they go by
        for b in lost_batches(by_broker, replicas, result.zones, states):
            if export and (row := export_row(b)) is not None:
                exported.append(row)
            yield b

    runs = lost_runs(lost())
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
        "cost": election_costs(result.summary, divergences, by_broker, replicas, states, gap),
        "open_txn": open_transactions(result.summary, walked),
        "lost": exported,
    }


def cluster_rows(findings: list[Row], summary: list[Row]) -> tuple[list[Row], list[Row]]:
    """The cluster-wide step after every partition's pass: the ``cluster`` rules (KA621 folded per cluster,
    KA623) over the per-replica summary rows of every partition. Returns the partitions' findings as they are
    and the cluster findings."""
    return list(findings), cluster_findings(summary)
