"""The engine side of the cross-replica rules (pure Python, no pyspark: it runs inside Spark's
``mapInArrow`` and in tests).

For one partition, :func:`evaluate` derives the rules' input ONCE
(:func:`auditor.rules.replica.model.partition_replicas`: replicas, reference leader, KRaft view, caches,
divergences, truncation points), runs every registered rule of scope ``replicas`` over it and returns the
findings plus what the later Spark stages need: the zones where lost records are looked for, the lag rows
Spark counts, the epoch timeline and the per-replica summary. :func:`lag_finding` and :func:`loss_finding`
run the ``lag`` and ``loss`` rules over the rows Spark counted, :func:`cluster_findings` the ``cluster``
rules over the summary. Every finding is a row in the ``rows.FINDING`` layout with the registry's severity
(or the violation's override) and ``evidence`` as JSON text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.kafka.epochs import epoch_at
from auditor.kafka.topics import METADATA_TOPIC
from auditor.rules import runner
from auditor.rules.replica.model import (
    ClusterLeaders,
    LagRow,
    LostRun,
    OfflinePartition,
    PartitionReplicas,
    Replica,
    partition_replicas,
)


@dataclass
class PartitionInput:
    """The rows Spark groups for one partition."""

    replicas: list[dict] = field(default_factory=list)
    caches: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)  # broker -> (ordinal, e, s)
    ranges: dict[int, list[dict]] = field(default_factory=dict)  # broker -> epoch ranges from batches
    divergences: list[dict] = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)


@dataclass
class PartitionOutput:
    """What the per-partition stage hands back to Spark."""

    findings: list[dict] = field(default_factory=list)
    zones: list[dict] = field(default_factory=list)
    lags: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)


def run_rules(part: PartitionReplicas) -> list[dict]:
    """Every registered ``replicas`` rule over one partition, as finding rows."""
    log_dirs = {r.broker: r.log_dir for r in part.replicas}
    return runner.rows(runner.run("replicas", part), part.cluster, part.topic, part.partition, log_dirs)


def _row_findings(scope: str, subject: LagRow | LostRun) -> list[dict]:
    return runner.rows(runner.run(scope, subject), subject.cluster, subject.topic, subject.partition)


def lag_finding(row: Mapping[str, Any]) -> dict:
    """The KA630 finding of a lag row counted by ``partition_pass.lag_counts``."""
    (finding,) = _row_findings("lag", LagRow.from_row(row))
    return finding


def loss_findings(row: Mapping[str, Any]) -> list[dict]:
    """The ``loss`` findings of a row of ``pass_loss.lost_runs``: KA710 (``kind`` committed, when
    it holds committed records) or KA711 (uncommitted), and KA712 when it holds COMMIT/ABORT markers."""
    return _row_findings("loss", LostRun.from_row(row))


def loss_finding(row: Mapping[str, Any]) -> dict:
    """The KA710 (``kind`` committed) or KA711 (uncommitted) finding of a lost run holding data records."""
    (finding,) = [f for f in loss_findings(row) if f["code"] in ("KA710", "KA711")]
    return finding


def cluster_findings(summary: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The ``cluster`` rules (KA621 folded per cluster, KA623) over the per-replica summary rows of every
    partition (:func:`summary_row`)."""
    return [
        row
        for subject in cluster_leaders(summary)
        for row in runner.rows(runner.run("cluster", subject), subject.cluster)
    ]


def cluster_leaders(summary: Iterable[Mapping[str, Any]]) -> list[ClusterLeaders]:
    """One :class:`ClusterLeaders` per cluster of the summary rows: the leader sources of its partitions
    (``__cluster_metadata`` aside) and its offline partitions (no leader in the KRaft metadata: the last
    known leader is the reference), sorted."""
    sources: dict[str, set[str]] = {}
    offline: dict[str, set[tuple]] = {}
    for r in summary:
        cluster = r["cluster"]
        if r["topic"] != METADATA_TOPIC:
            sources.setdefault(cluster, set()).add(r["leader_source"])
        if r.get("leader_source") == "kraft-last-known":
            offline.setdefault(cluster, set()).add(
                (r["topic"], r["partition"], r.get("leader"), r.get("kraft_leader_epoch"))
            )
    return [
        ClusterLeaders(
            cluster,
            frozenset(sources.get(cluster, ())),
            tuple(OfflinePartition(*p) for p in sorted(offline.get(cluster, ()), key=_nulls_first)),
        )
        for cluster in sorted({*sources, *offline}, key=str)
    ]


def _nulls_first(p: tuple) -> tuple:
    """Spark's ascending order of structs: nulls first."""
    return tuple((v is not None, v if v is not None else 0) for v in p)


def evaluate(inp: PartitionInput) -> PartitionOutput:
    """Every per-partition rule for one partition, and the zones, lags, timeline and summary of it."""
    out = PartitionOutput()
    part = partition_replicas(inp.replicas, inp.caches, inp.ranges, inp.divergences, inp.metadata)
    if part is None:
        return out
    out.findings = run_rules(part)
    if not part.is_metadata:
        out.zones = zones(part)
        out.lags = lags(part)
    if out.zones or part.divergences:
        out.timeline = timeline(part)
    raw = {int(r["broker"]): r for r in inp.replicas}
    out.summary = [summary_row(part, r, raw[r.broker]) for r in part.replicas]
    return out


def zones(part: PartitionReplicas) -> list[dict]:
    """Where each follower's data may stop matching the leader's: its first divergent offset, or the
    leader's LEO when the follower is merely longer. Spark compares the batches from there on."""
    leader = part.leader
    out = []
    for r in part.followers:
        d = part.divergence(r.broker, leader.broker)
        if d is not None:
            start = d.offset
        elif r.leo > leader.leo:
            start = max(leader.leo, r.log_start)
        else:
            continue
        span = leader.hole
        out.append(
            {
                "broker": r.broker,
                "leader": leader.broker,
                "leader_source": part.leader_source,
                "from": start,
                "leader_unreadable_from": span[0] if span else None,
                "leader_unreadable_to": span[1] if span else None,
            }
        )
    return out


def lags(part: PartitionReplicas) -> list[dict]:
    """Followers whose log is a prefix of the leader's (no divergence) and ends below the leader's log end
    offset: lag rows for Spark to count the leader's records and bytes from the follower's LEO on."""
    leader = part.leader
    if not leader.leo_known:
        return []
    isr = part.kraft.isr if part.kraft is not None else None
    return [
        {
            "cluster": r.cluster,
            "topic": r.topic,
            "partition": r.partition,
            "broker": r.broker,
            "log_dir": r.log_dir,
            "leader": leader.broker,
            "leader_source": part.leader_source,
            "from": r.leo,
            "to": leader.leo,
            "epoch": epoch_at(part.caches.get(leader.broker, []), r.leo),
            "in_isr": None if isr is None else r.broker in isr,
            "isr": list(isr) if isr is not None else None,
        }
        for r in part.followers
        if r.leo_known and r.leo < leader.leo and part.divergence(r.broker, leader.broker) is None
    ]


def timeline(part: PartitionReplicas) -> list[dict]:
    """The epoch timeline of a diverged partition: leader-epoch ranges of every replica's batches."""
    return [
        {
            "cluster": part.cluster,
            "topic": part.topic,
            "partition": part.partition,
            "broker": broker,
            "epoch": g.epoch,
            "first": g.first,
            "last": g.last,
            "records": g.records,
            "bytes": g.bytes,
            "batches": g.batches,
            "first_timestamp": g.first_timestamp,
            "last_timestamp": g.last_timestamp,
        }
        for broker, ranges in sorted(part.ranges.items())
        for g in sorted(ranges, key=lambda g: g.first)
    ]


def _opt_int(value: Any) -> int | None:
    return None if value is None or value != value else int(value)


def summary_row(part: PartitionReplicas, r: Replica, raw: Mapping[str, Any]) -> dict:
    """One replica of the per-replica summary (``rows.SUMMARY``)."""
    leader, kraft = part.leader, part.kraft
    d = part.divergence(r.broker, leader.broker) if r.broker != leader.broker else None
    truncation = part.truncations.get(r.broker)
    return {
        "cluster": r.cluster,
        "topic": r.topic,
        "partition": r.partition,
        "broker": r.broker,
        "log_dir": r.log_dir,
        "is_leader": r.broker == leader.broker,
        "leader": leader.broker,
        "leader_source": part.leader_source,
        "leo": r.leo,
        "leo_on_disk": _opt_int(raw.get("leo_on_disk")),
        "hw": r.hw,
        "log_start": r.log_start,
        **{k: _opt_int(raw.get(k)) for k in ("recovery_point", "cleaner_offset")},
        "latest_epoch": r.latest_epoch,
        "max_batch_epoch": _opt_int(raw.get("max_batch_epoch")),
        "clean_shutdown": bool(raw.get("clean_shutdown")),
        "compacted": bool(raw.get("compacted")),
        "tail_state": raw.get("tail_state"),
        "tail_bytes": _opt_int(raw.get("tail_bytes")),
        "leo_known": r.leo_known,
        "unreadable_from": r.unreadable_from,
        "unreadable_to": r.unreadable_to,
        "unreadable": r.unreadable,
        "divergence": d.offset if d else None,
        "truncation_offset": truncation.offset if truncation else None,
        "epochs": [{"epoch": e, "start_offset": s} for e, s in part.caches.get(r.broker, [])],
        "kraft_leader": kraft.leader if kraft else None,
        "kraft_leader_epoch": kraft.leader_epoch if kraft else None,
        "kraft_isr": list(kraft.isr) if kraft else None,
        "kraft_leader_recovery_state": kraft.leader_recovery_state if kraft else None,
    }


def evaluate_rows(rows_: Iterable[dict]) -> PartitionOutput:
    """:func:`evaluate` over tagged rows ``{"kind": ..., **payload}`` of one partition."""
    inp = PartitionInput()
    for row in rows_:
        kind = row["kind"]
        if kind == "replica":
            inp.replicas.append(row)
        elif kind == "epoch":
            entry = (row["ordinal"], row["epoch"], row["start_offset"])
            inp.caches.setdefault(row["broker"], []).append(entry)
        elif kind == "range":
            inp.ranges.setdefault(row["broker"], []).append(row)
        elif kind == "div":
            inp.divergences.append(row)
        elif kind == "metadata":
            inp.metadata.append(row)
    return evaluate(inp)
