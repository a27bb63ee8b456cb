"""Inputs of the cross-replica cases of ``audit`` (KA6xx/KA7xx), pure Python and fast (no Spark).

A case returns an :class:`Audit`: the small per-partition inputs Spark groups (replica rows, leader-epoch
caches, epoch ranges, pair divergences, KRaft metadata rows) plus what Spark counts after the per-partition
rules (the leader's records behind each lag row, the lost runs). :func:`audit_findings` runs them through
``auditor.spark.partition_rules`` as the audit does: the ``replicas`` rules per partition, the ``lag`` rules
over its lag rows, the ``loss`` rules over the lost runs and the ``cluster`` rules over the summary. The
Spark end-to-end cases (whole log directories) are ``@case`` functions (``tests.rules.replica.logdirs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.spark.partition_rules import (
    PartitionInput,
    cluster_findings,
    evaluate,
    lag_finding,
    loss_finding,
)

T0 = 1_700_000_000_000


@dataclass
class Audit:
    """A small audit: partitions, the counts Spark attaches to their lag rows (the leader's records, bytes,
    batches and the first/newest batch timestamps above the follower's LEO), and the lost runs Spark finds
    from the zones (``pass_loss.lost_runs`` rows)."""

    partitions: list[PartitionInput]
    lag_counts: dict = field(default_factory=dict)
    lost_runs: list[dict] = field(default_factory=list)


def audit_findings(audit: Audit) -> list[dict]:
    """Every finding row of ``audit``, in the order the audit builds them."""
    findings: list[dict] = []
    summary: list[dict] = []
    for inp in audit.partitions:
        out = evaluate(inp)
        findings += out.findings
        summary += out.summary
        for lag in out.lags:
            counts = {
                "records": lag["to"] - lag["from"],
                "bytes": 100 * (lag["to"] - lag["from"]),
                "batches": 1,
            }
            counts |= {"first_timestamp": T0, "last_timestamp": T0 + 1000}
            findings.append(lag_finding({**lag, **counts, **audit.lag_counts}))
    findings += [loss_finding(run) for run in audit.lost_runs]
    return findings + cluster_findings(summary)


def replica(broker: int, leo: int, hw: int | None = None, latest_epoch: int | None = 0, **kw) -> dict:
    """A replica row of topic ``t`` partition 0 (``hw`` defaults to the LEO: a caught-up replica)."""
    return {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": broker,
        "log_dir": f"/d/{broker}",
        "leo": leo,
        "hw": leo if hw is None else hw,
        "log_start": 0,
        "latest_epoch": latest_epoch,
        **kw,
    }


def lost_run(kind: str, lo: int, hi: int, committed_hw: int, **kw) -> dict:
    """A ``pass_loss.lost_runs`` row of topic ``t`` partition 0: broker 2's batches ``lo..hi`` the leader 1
    lacks (``kw``: other fields or other values)."""
    return {
        "kind": kind,
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": 2,
        "leader": 1,
        "log_dir": "/d/2",
        "lo": lo,
        "hi": hi,
        "epochs": [1],
        "records": hi - lo + 1,
        "bytes": 1000,
        "batches": 2,
        "committed_hw": committed_hw,
        "leader_source": "kraft",
        **kw,
    }


def div(a: int, b: int, offset: int, hi: int = 300) -> dict:
    """Replicas ``a < b`` first differ at ``offset`` in their common range ``[0, hi)``."""
    return {
        "a": a,
        "b": b,
        "lo": 0,
        "hi": hi,
        "offset": offset,
        "mode": "batch",
        "detail": {"base_offset": offset},
    }


def partition_record(leader: int, isr: list[int], replicas: list[int], seq: int = 0) -> dict:
    """The ``PartitionRecord`` of ``t-0`` in node 100's metadata log."""
    return metadata_row("PARTITION_RECORD", seq, leader=leader, leader_epoch=0, isr=isr, replicas=replicas)


def metadata_row(record_type: str, seq: int, **fields) -> dict:
    return {
        "node": 100,
        "seq": seq,
        "offset": seq,
        "end_offset": 10,
        "timestamp": T0,
        "record_type": record_type,
        "topic": "t",
        "topic_id": "dG9waWMtdC1pZC0wMDAwMA",
        "partition": 0,
        "leader_epoch": -1,
        "replicas": None,
        "leader_recovery_state": 0,
        **fields,
    }


def one(*replicas: dict, **kw) -> Audit:
    """An audit of one partition."""
    return Audit([PartitionInput(replicas=list(replicas), **kw)])


def in_sync() -> list[dict]:
    """Three caught-up replicas of one leader epoch."""
    return [replica(b, 300) for b in (1, 2, 3)]


CACHES = {b: [(0, 0, 0)] for b in (1, 2, 3)}


KRAFT = [partition_record(1, [1, 2, 3], [1, 2, 3])]
