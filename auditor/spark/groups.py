"""Consumer groups in ``audit`` (and the ``groups`` command): the committed offsets of every group, as the
coordinator loads them from each replica of ``__consumer_offsets``, lined up with the data partitions, and the
``groups`` rules (KA720-KA723) over them.

:func:`group_findings` and :func:`group_view` are pure Python (no pyspark): they take the collected commit
rows (``rows.COMMIT``), per-replica rows (``rows.SUMMARY``-shaped: cluster, topic, partition, broker, log_dir,
is_leader, leader, leader_source, leo, log_start, latest_epoch, max_batch_epoch, epochs), the lost runs
(``auditor.spark.compare.lost_runs`` rows: broker, lo, hi, kind) and the KRaft metadata rows. The
``groups`` command builds the replica rows from a single-process extraction; :func:`group_results` takes
them as the audit collected them (commit rows are few: one per group coordinator record).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.kafka.groups import (
    DEFAULT_OFFSETS_PARTITIONS,
    Commit,
    latest_commits,
    metadata_partitions,
    offsets_partitions,
    partition_for,
)
from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.rules.registry import scope_rules
from auditor.rules.replica.groups import GroupCommit, LostSpan
from auditor.spark.partition_rules import finding_row


@dataclass
class GroupInputs:
    """What the group rules read (see the module docstring); every list holds dicts."""

    commits: list[dict] = field(default_factory=list)
    replicas: list[dict] = field(default_factory=list)
    lost_runs: list[dict] = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)


@dataclass
class _Partition:
    """One data or offsets partition of one cluster: its replicas and current leader."""

    replicas: dict[int, dict] = field(default_factory=dict)
    leader: int | None = None
    leader_source: str | None = None
    lost: list[LostSpan] = field(default_factory=list)

    @property
    def leader_row(self) -> dict | None:
        return self.replicas.get(self.leader) if self.leader is not None else None


@dataclass
class _Cluster:
    """Everything of one cluster the group rules need, derived once."""

    name: str | None
    partitions_count: int
    partitions_source: str
    parts: dict[tuple[str, int], _Partition]
    kraft: dict
    commits: dict[int, dict[int, list[dict]]]  # offsets partition -> broker -> commit rows


def _clusters(inp: GroupInputs) -> list[_Cluster]:
    names = sorted(
        {r.get("cluster") for r in inp.commits} | {r.get("cluster") for r in inp.replicas}, key=str
    )
    out = []
    for name in names:
        metadata = [m for m in inp.metadata if m.get("cluster") == name]
        kraft = metadata_partitions(metadata)
        count = offsets_partitions(metadata)
        parts: dict[tuple[str, int], _Partition] = {}
        for r in inp.replicas:
            if r.get("cluster") == name:
                part = parts.setdefault((r["topic"], int(r["partition"])), _Partition())
                part.replicas[int(r["broker"])] = r
        for key, part in parts.items():
            _choose_leader(part, kraft.get(key))
        for run in inp.lost_runs:
            if run.get("cluster") == name:
                part = parts.setdefault((run["topic"], int(run["partition"])), _Partition())
                part.lost.append(
                    LostSpan(
                        int(run["broker"]),
                        int(run["lo"]),
                        int(run["hi"]),
                        str(run.get("kind") or "lost"),
                        run.get("records"),
                        run.get("log_dir"),
                    )
                )
        commits: dict[int, dict[int, list[dict]]] = {}
        for c in inp.commits:
            if c.get("cluster") == name:
                commits.setdefault(int(c["partition"]), {}).setdefault(int(c["broker"]), []).append(c)
        source = "kraft" if count else "default"
        out.append(_Cluster(name, count or DEFAULT_OFFSETS_PARTITIONS, source, parts, kraft, commits))
    return out


def _choose_leader(part: _Partition, kraft) -> None:
    """The audit's leader (``is_leader``), else the KRaft leader among the replicas (the last known one when
    the partition has none, e.g. after every broker shut down), else the replica with the highest leader
    epoch, then log end offset (``inferred``)."""
    for broker, r in part.replicas.items():
        if r.get("is_leader"):
            part.leader, part.leader_source = broker, r.get("leader_source") or "audit"
            return
    if kraft is not None:
        for broker, source in ((kraft.leader, "kraft"), (kraft.last_known_leader, "kraft-last-known")):
            if broker is not None and broker in part.replicas:
                part.leader, part.leader_source = broker, source
                return
    if part.replicas:
        broker = max(part.replicas, key=lambda b: _recency(part.replicas[b]) + (-b,))
        part.leader, part.leader_source = broker, "inferred"


def _recency(row: Mapping[str, Any]) -> tuple[int, int]:
    """(highest leader epoch, log end offset) of a replica: the newest leader has the highest epoch."""
    epochs = [row.get("latest_epoch"), row.get("max_batch_epoch")]
    return max([int(e) for e in epochs if e is not None] + [-1]), int(row.get("leo") or -1)


def _coordinator(cluster: _Cluster, offsets_partition: int) -> tuple[int | None, str | None]:
    """The broker whose replica of the offsets partition the coordinator loads: its leader."""
    part = cluster.parts.get((OFFSETS_TOPIC, offsets_partition))
    if part is not None and part.leader is not None:
        return part.leader, part.leader_source
    held = cluster.commits.get(offsets_partition, {})
    if not held:
        return None, None
    best = max(held, key=lambda b: (max(int(r["offset"] or -1) for r in held[b]), -b))
    return best, "inferred"


def _epoch_history(
    cluster: _Cluster, topic: str, partition: int
) -> tuple[frozenset[int] | None, int | None, tuple]:
    part = cluster.parts.get((topic, partition))
    epochs: set[int] = set()
    sources: list[str] = []
    if part is not None:
        for r in part.replicas.values():
            cache = [int(e["epoch"]) for e in (r.get("epochs") or [])]
            if cache:
                epochs.update(cache)
                if "leader-epoch caches" not in sources:
                    sources.append("leader-epoch caches")
            for name in ("latest_epoch", "max_batch_epoch"):
                if r.get(name) is not None and int(r[name]) >= 0:
                    epochs.add(int(r[name]))
                    if name == "max_batch_epoch" and "batches" not in sources:
                        sources.append("batches")
    state = cluster.kraft.get((topic, partition))
    if state is not None:
        epochs.add(int(state.leader_epoch))
        sources.append(f"KRaft metadata: leader epoch {state.leader_epoch}")
    if not epochs:
        return None, None, ()
    return frozenset(epochs), max(epochs), tuple(sources)


def _subjects(cluster: _Cluster) -> Iterable[GroupCommit]:
    for p in sorted(cluster.commits):
        held = cluster.commits[p]
        coordinator, _ = _coordinator(cluster, p)
        views = {b: latest_commits(rs) for b, rs in held.items()}
        current = views.get(coordinator, {}) if coordinator is not None else {}
        for key in sorted(current):
            yield _subject(cluster, p, coordinator, current[key])
        # KA723: the latest commits of followers that truncate them away
        offsets_part = cluster.parts.get((OFFSETS_TOPIC, p))
        for span in offsets_part.lost if offsets_part is not None else []:
            if span.broker == coordinator:
                continue
            for key, commit in sorted(views.get(span.broker, {}).items()):
                if span.lo <= commit.record_offset <= span.hi:
                    yield GroupCommit(
                        cluster.name,
                        commit,
                        p,
                        coordinator,
                        lost_on=span,
                        coordinator_commit=current.get(key),
                    )


def _subject(cluster: _Cluster, p: int, coordinator: int | None, commit: Commit) -> GroupCommit:
    part = cluster.parts.get((commit.topic, commit.partition))
    leader_row = part.leader_row if part is not None else None
    epochs, horizon, sources = _epoch_history(cluster, commit.topic, commit.partition)
    return GroupCommit(
        cluster.name,
        commit,
        p,
        coordinator,
        leader=part.leader if part is not None else None,
        leader_source=part.leader_source if part is not None else None,
        leader_leo=_int(leader_row, "leo"),
        log_start=_int(leader_row, "log_start"),
        lost=tuple(s for s in (part.lost if part is not None else []) if s.broker != part.leader),
        epochs=epochs,
        epoch_horizon=horizon,
        epoch_sources=sources,
    )


def _int(row: Mapping[str, Any] | None, name: str) -> int | None:
    if row is None or row.get(name) is None:
        return None
    return int(row[name])


def group_findings(inputs: GroupInputs) -> list[dict]:
    """Every ``groups`` rule (KA720-KA723) over ``inputs``, as ``rows.FINDING`` dicts."""
    rules = scope_rules("groups")
    out: list[dict] = []
    for cluster in _clusters(inputs):
        for subject in _subjects(cluster):
            dirs = {}
            part = cluster.parts.get((subject.topic, subject.partition))
            if part is not None:
                dirs = {b: r.get("log_dir") for b, r in part.replicas.items()}
            for rule in rules:
                for v in rule.check(subject):
                    out.append(finding_row(rule, v, cluster.name, subject.topic, subject.partition, dirs))
    return out


def group_view(inputs: GroupInputs, group: str | None = None) -> list[dict]:
    """One dict per (cluster, group, topic, partition) committed on any replica of ``__consumer_offsets``:
    the commit the coordinator loads (from the offsets partition's leader; else the newest one a replica
    holds), which replicas hold that same commit, whether the leader does, and the data partition's leader
    log end offset with the lag (``leo - committed offset``; negative: above the log end offset)."""
    out: list[dict] = []
    for cluster in _clusters(inputs):
        for p in sorted(cluster.commits):
            held = cluster.commits[p]
            coordinator, coordinator_source = _coordinator(cluster, p)
            views = {b: latest_commits(rs) for b, rs in held.items()}
            offsets_part = cluster.parts.get((OFFSETS_TOPIC, p))
            replicas = sorted(set(views) | set(offsets_part.replicas if offsets_part else ()))
            keys = sorted({k for v in views.values() for k in v})
            for key in keys:
                if group is not None and key[0] != group:
                    continue
                current = views.get(coordinator, {}).get(key) if coordinator is not None else None
                ref = current or max(
                    (v[key] for v in views.values() if key in v), key=lambda c: (c.commit_timestamp, c.offset)
                )
                part = cluster.parts.get((key[1], key[2]))
                leader_row = part.leader_row if part is not None else None
                leo = _int(leader_row, "leo")
                out.append(
                    {
                        "cluster": cluster.name,
                        "group": key[0],
                        "offsets_partition": p,
                        "expected_partition": partition_for(key[0], cluster.partitions_count),
                        "offsets_partitions": cluster.partitions_count,
                        "offsets_partitions_source": cluster.partitions_source,
                        "coordinator": coordinator,
                        "coordinator_source": coordinator_source,
                        "topic": key[1],
                        "partition": key[2],
                        "committed_offset": ref.offset,
                        "leader_epoch": ref.leader_epoch,
                        "metadata": ref.metadata,
                        "commit_timestamp": ref.commit_timestamp,
                        "expire_timestamp": ref.expire_timestamp,
                        "record_offset": ref.record_offset,
                        "transactional": ref.transactional,
                        "replicas": replicas,
                        "held_by": [b for b in sorted(views) if ref.same_commit(views[b].get(key))],
                        "leader_holds": current is not None and ref.same_commit(current),
                        "leader": part.leader if part is not None else None,
                        "leader_source": part.leader_source if part is not None else None,
                        "leader_leo": leo,
                        "lag": leo - ref.offset if leo is not None else None,
                        "above_leo": leo is not None and ref.offset > leo,
                    }
                )
    return out


def group_results(
    commits: list[dict], metadata: list[dict], replicas: list[dict], loss: list[dict]
) -> tuple[list[dict], list[dict]]:
    """``(findings, groups)`` of an audit: the ``groups`` rules' finding rows and :func:`group_view`, from its
    collected commit rows (``rows.COMMIT``), KRaft metadata rows, summary rows and lost runs."""
    if not commits:
        return [], []
    topics = {r["commit_topic"] for r in commits if r.get("commit_topic")} | {OFFSETS_TOPIC}
    inputs = GroupInputs(commits, replicas, loss, [r for r in metadata if r.get("topic") in topics])
    return group_findings(inputs), group_view(inputs)
