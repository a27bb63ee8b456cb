"""Consumer groups in ``audit`` (and the ``groups`` command): the committed offsets of every group, as the
coordinator loads them from each replica of ``__consumer_offsets``, lined up with the data partitions, and the
``groups`` rules (KA720-KA723) over them.

:func:`group_findings` and :func:`group_view` are pure Python (no pyspark): they take the collected commit
rows (``rows.COMMIT``), per-replica rows (``rows.SUMMARY``-shaped: cluster, topic, partition, broker, log_dir,
is_leader, leader, leader_source, leo, log_start, latest_epoch, max_batch_epoch, epochs), the lost runs
(``auditor.spark.pass_loss.lost_runs`` rows: broker, lo, hi, kind) and the KRaft metadata rows. The
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
    GroupState,
    group_states,
    latest_commits,
    metadata_partitions,
    offsets_partitions,
    partition_for,
)
from auditor.kafka.identity import ClusterIdentity, cluster_identities
from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.rules import runner
from auditor.rules.replica.groups import GroupCommit, LostSpan


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
    identity: ClusterIdentity | None = None  # topic incarnations (auditor.kafka.identity)

    def of_deleted_incarnation(self, commit: Commit) -> bool:
        """The commit predates the current incarnation of its topic (or the topic is gone): it belongs to a
        deleted incarnation and is never judged against the current one (offset commits carry no topic ID;
        Kafka tombstones a deleted topic's commits, a coordinator that was down did not)."""
        ident = self.identity
        return ident is not None and ident.created_after(commit.topic, commit.commit_timestamp)


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
                        int(_span(run, "lo")),
                        int(_span(run, "hi")),
                        str(run.get("kind") or "lost"),
                        run.get("records"),
                        run.get("log_dir"),
                        _epoch_at(part.leader_row, int(_span(run, "lo"))),
                    )
                )
        commits: dict[int, dict[int, list[dict]]] = {}
        for c in inp.commits:
            if c.get("cluster") == name:
                commits.setdefault(int(c["partition"]), {}).setdefault(int(c["broker"]), []).append(c)
        source = "kraft" if count else "default"
        identity = cluster_identities(metadata).get(name)
        out.append(
            _Cluster(name, count or DEFAULT_OFFSETS_PARTITIONS, source, parts, kraft, commits, identity)
        )
    return out


def _epoch_at(leader: Mapping[str, Any] | None, offset: int) -> int | None:
    """The leader epoch of the current leader's data at ``offset``: its leader-epoch cache entry with the
    greatest start offset at or below it (``LeaderEpochFileCache.epochForOffset``); None when unknown."""
    if leader is None:
        return None
    starts = [(int(e["start_offset"]), int(e["epoch"])) for e in leader.get("epochs") or ()]
    below = [epoch for start, epoch in starts if start <= offset]
    return max(below) if below else None


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
            if not cluster.of_deleted_incarnation(current[key]):
                yield _subject(cluster, p, coordinator, current[key])
        # KA723: the latest commits of followers that truncate them away
        offsets_part = cluster.parts.get((OFFSETS_TOPIC, p))
        for span in offsets_part.lost if offsets_part is not None else []:
            if span.broker == coordinator:
                continue
            for key, commit in sorted(views.get(span.broker, {}).items()):
                if span.lo <= commit.record_offset <= span.hi and not cluster.of_deleted_incarnation(commit):
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
    out: list[dict] = []
    for cluster in _clusters(inputs):
        for subject in _subjects(cluster):
            dirs = {}
            part = cluster.parts.get((subject.topic, subject.partition))
            if part is not None:
                dirs = {b: r.get("log_dir") for b, r in part.replicas.items()}
            hits = runner.run("groups", subject)
            out += runner.rows(hits, cluster.name, subject.topic, subject.partition, dirs)
    return out


def _topic_names(inputs: GroupInputs, cluster: str | None) -> dict[str, str]:
    """Topic id -> name of one cluster, from its KRaft metadata rows and its replicas' partition.metadata
    (KIP-848 assignments name topics by id)."""
    out: dict[str, str] = {}
    for r in [*inputs.replicas, *inputs.metadata]:
        if r.get("cluster") == cluster and r.get("topic_id") and r.get("topic"):
            out.setdefault(str(r["topic_id"]), str(r["topic"]))
    return out


def _states(
    held: Mapping[int, list[dict]], coordinator: int | None, names: Mapping[str, str]
) -> dict[str, tuple[GroupState, int]]:
    """Group -> (its state, the broker whose replica gave it) of one offsets partition: as the coordinator
    (the leader) loads it; a group its replica does not hold, from the replica with its newest record."""

    def newest(state: GroupState) -> int:
        return -1 if state.record_offset is None else state.record_offset

    by_broker = {b: group_states(rs, names) for b, rs in held.items()}
    out: dict[str, tuple[GroupState, int]] = {}
    for b in sorted(by_broker, key=lambda b: (b != coordinator, b)):
        for name, state in by_broker[b].items():
            have = out.get(name)
            if have is None or (have[1] != coordinator and newest(state) > newest(have[0])):
                out[name] = (state, b)
    return out


def group_summaries(inputs: GroupInputs, group: str | None = None) -> list[dict]:
    """One dict per (cluster, group) any replica of ``__consumer_offsets`` knows, committed offsets or not:
    its offsets partition and coordinator, protocol (classic or consumer), state, members (see
    :class:`auditor.kafka.groups.GroupState`) as the coordinator loads them, and its committed offsets
    (``offsets``: topic, partition, committed offset and leader epoch, from :func:`group_view`)."""
    view = group_view(inputs, group)
    offsets: dict[tuple, list[dict]] = {}
    for r in view:
        offsets.setdefault((r["cluster"], r["group"], r["offsets_partition"]), []).append(
            {k: r[k] for k in ("topic", "partition", "committed_offset", "leader_epoch")}
        )
    out: list[dict] = []
    for cluster in _clusters(inputs):
        names = _topic_names(inputs, cluster.name)
        for p in sorted(cluster.commits):
            coordinator, coordinator_source = _coordinator(cluster, p)
            for name, (state, broker) in sorted(_states(cluster.commits[p], coordinator, names).items()):
                if group is not None and name != group:
                    continue
                fields = state.to_dict()
                out.append(
                    {
                        "cluster": cluster.name,
                        "group": name,
                        "offsets_partition": p,
                        "expected_partition": partition_for(name, cluster.partitions_count),
                        "offsets_partitions": cluster.partitions_count,
                        "offsets_partitions_source": cluster.partitions_source,
                        "coordinator": coordinator,
                        "coordinator_source": coordinator_source,
                        "state_broker": broker,
                        **{k: v for k, v in fields.items() if k != "group"},
                        "members": [_member_dict(m) for m in fields["members"]],
                        "problems": list(fields["problems"]),
                        "offsets": offsets.get((cluster.name, name, p), []),
                    }
                )
    return out


def _member_dict(member: Mapping[str, Any]) -> dict:
    """A member's dict with its partitions as ``{"topic", "partition"}`` (None kept: not known)."""
    out = dict(member)
    for name in ("assigned_partitions", "target_partitions", "partitions_pending_revocation"):
        if out.get(name) is not None:
            out[name] = [{"topic": t, "partition": p} for t, p in out[name]]
    if out.get("subscribed_topic_names") is not None:
        out["subscribed_topic_names"] = list(out["subscribed_topic_names"])
    return out


def group_view(inputs: GroupInputs, group: str | None = None) -> list[dict]:
    """One dict per (cluster, group, topic, partition) committed on any replica of ``__consumer_offsets``:
    the commit the coordinator loads (from the offsets partition's leader; else the newest one a replica
    holds), which replicas hold that same commit, whether the leader does, and the data partition's leader
    log end offset with the lag (``leo - committed offset``; negative: above the log end offset); and the
    group's protocol (classic or consumer) and state as the coordinator loads them (:func:`group_summaries`
    gives its members)."""
    out: list[dict] = []
    for cluster in _clusters(inputs):
        names = _topic_names(inputs, cluster.name)
        for p in sorted(cluster.commits):
            held = cluster.commits[p]
            coordinator, coordinator_source = _coordinator(cluster, p)
            states = _states(held, coordinator, names)
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
                        "protocol": states[key[0]][0].protocol if key[0] in states else None,
                        "group_state": states[key[0]][0].state if key[0] in states else None,
                        # a commit older than its topic's current incarnation: never judged against it
                        "deleted_incarnation": cluster.of_deleted_incarnation(ref),
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


def _span(run: dict, end: str) -> int:
    """One end of the truncated span of a lost run (``span_lo``/``span_hi``; ``lo``/``hi`` in rows without
    them): a group that committed anywhere in it read offsets the leader lacks."""
    value = run.get(f"span_{end}")
    return run[end] if value is None else value
