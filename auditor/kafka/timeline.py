"""The KRaft timeline of partitions (issue 10): every change of leader, ISR, ELR, replicas, leader epoch,
partition epoch and leaderRecoveryState with its metadata offset and batch timestamp, broker registrations
and topic/broker config changes, and per leader epoch a line-up of what the metadata says (leader, clean or
unclean, the ISR before the change) against every replica's leader-epoch cache and the epochs found in its
batches.

The metadata is taken from ONE node: the most complete metadata replica (highest end offset of the replay,
then the lowest node id; :func:`reference_node`), replayed by ``auditor.kafka.kraft``. The log records of
the other nodes are compared with it offset by offset: two nodes holding different records at the same
metadata offset is a disagreement (:func:`disagreements`; replicas that merely end earlier or start at a
snapshot agree).

Input rows are ``rows.METADATA`` dicts; caches are ``{(topic, partition): {broker: [(epoch, start), ...]}}``
and batch epoch ranges ``{(topic, partition): {broker: [{"epoch", "first", "last", ...}, ...]}}`` (the
audit's ``TIMELINE`` rows, or a walk of the batch headers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from auditor.findings import optional_int as _int
from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.kraft import (
    MIN_INSYNC_REPLICAS,
    PartitionState,
    config_events,
    config_value,
    replay_brokers,
    replay_partitions,
)
from auditor.text import camel

_NOT_CONTENT = frozenset({"cluster", "node", "log_dir", "seq", "end_offset", "from_snapshot"})


def reference_node(metadata: Iterable[Mapping[str, Any]]) -> int | None:
    """The node whose metadata log is the most complete: the highest end offset, then the lowest node id;
    among the nodes that hold a partition record when any does."""
    ends: dict[int, int] = {}
    with_partitions: set[int] = set()
    for r in metadata:
        node = _int(r.get("node"))
        if node is None:
            continue
        ends[node] = max(ends.get(node, 0), _int(r.get("end_offset")) or 0)
        if r.get("partition") is not None and r.get("record_type") in (
            "PARTITION_RECORD",
            "PARTITION_CHANGE_RECORD",
        ):
            with_partitions.add(node)
    pool = with_partitions or set(ends)
    if not pool:
        return None
    return max(pool, key=lambda n: (ends[n], -n))


def node_rows(metadata: Iterable[Mapping[str, Any]], node: int | None) -> list[Mapping[str, Any]]:
    """The rows of one node in replay (``seq``) order."""
    return sorted((r for r in metadata if _int(r.get("node")) == node), key=lambda r: _int(r.get("seq")) or 0)


def _content(r: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in r.items() if k not in _NOT_CONTENT and v is not None))


def disagreements(metadata: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Metadata log offsets at which two nodes hold different records (log records only: a snapshot has no
    offsets). Each: ``offset`` and per node a short description of what it holds there."""
    by_offset: dict[int, dict[int, list]] = {}
    for r in metadata:
        offset, node = _int(r.get("offset")), _int(r.get("node"))
        if offset is None or offset < 0 or node is None or r.get("from_snapshot"):
            continue
        by_offset.setdefault(offset, {}).setdefault(node, []).append(r)
    out = []
    for offset in sorted(by_offset):
        nodes = by_offset[offset]
        if len(nodes) < 2:
            continue
        contents = {n: sorted(_content(r) for r in rs) for n, rs in nodes.items()}
        if len({repr(c) for c in contents.values()}) > 1:
            out.append(
                {
                    "offset": offset,
                    "nodes": {n: [describe_record(r) for r in nodes[n]] for n in sorted(nodes)},
                }
            )
    return out


def describe_record(r: Mapping[str, Any]) -> str:
    """A one-line description of a metadata row."""
    kind = r.get("record_type")
    if kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        parts = [f"{r.get('topic')}-{r.get('partition')}"]
        if r.get("leader") is not None and r.get("leader") != -2:
            parts.append(f"leader {r.get('leader')}")
        if r.get("isr") is not None:
            parts.append(f"isr {list(r['isr'])}")
        return f"{kind} " + " ".join(parts)
    if kind == "CONFIG_RECORD":
        resource = r.get("config_resource") or r.get("topic")
        return f"{kind} {resource} {r.get('config_name')}={r.get('config_value')}"
    if r.get("broker_id") is not None:
        return f"{kind} broker {r.get('broker_id')}"
    return f"{kind} {r.get('topic') or ''}".rstrip()


_PER_BROKER = ("caches", "batches", "batch_times")
"""The fields of an :class:`EpochLine` keyed by broker (not among the plain ones of its ``to_dict``)."""


@dataclass
class EpochLine:
    """One leader epoch of a partition: what the metadata says of it and what each replica holds."""

    epoch: int
    in_metadata: bool  # the replayed history assigned it
    covered: bool  # the replayed history reaches back to it (not below the first epoch a snapshot states)
    leader: int | None = None
    unclean: bool = False
    leader_recovery_state: int | None = None
    previous_isr: list[int] | None = None
    isr: list[int] | None = None
    metadata_offset: int | None = None
    timestamp: int | None = None
    caches: dict[int, int] = field(default_factory=dict)  # broker -> start offset of the epoch in its cache
    batches: dict[int, tuple[int, int]] = field(default_factory=dict)  # broker -> first, last offset
    # broker -> lowest and highest batch max timestamp of its batches of the epoch
    batch_times: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)

    @property
    def start_offset(self) -> int | None:
        """The start offset of the epoch in its leader's own cache."""
        return self.caches.get(self.leader) if self.leader is not None else None

    def describe(self) -> str:
        """E.g. ``epoch 2: leader 3, unclean, previous ISR [2], from offset 1020 per broker 3's cache``."""
        if not self.in_metadata:
            head = f"epoch {self.epoch}: " + (
                "never assigned by the metadata" if self.covered else "before the metadata history"
            )
        else:
            leader = "no leader" if self.leader in (None, NO_LEADER) else f"leader {self.leader}"
            head = f"epoch {self.epoch}: {leader}"
            if self.unclean:
                head += ", unclean"
                if self.leader_recovery_state == 1:
                    head += " (leaderRecoveryState 1)"
            if self.previous_isr is not None:
                head += f", previous ISR {list(self.previous_isr)}"
            if self.start_offset is not None:
                head += f", from offset {self.start_offset} per broker {self.leader}'s cache"
            if self.metadata_offset is not None:
                where = "snapshot" if self.metadata_offset < 0 else f"metadata offset {self.metadata_offset}"
                head += f" ({where})"
        others = [
            f"broker {b}: {s}"
            for b, s in sorted(self.caches.items())
            if b != self.leader or not self.in_metadata
        ]
        if others:
            head += "; caches " + ", ".join(others)
        if self.batches:
            head += "; batches " + ", ".join(
                f"broker {b}: {f}..{la}" for b, (f, la) in sorted(self.batches.items())
            )
        return head

    def to_dict(self) -> dict:
        """Its fields camelCase, then the per-broker maps with string keys and :meth:`describe`."""
        return {
            **{camel(f.name): getattr(self, f.name) for f in fields(self) if f.name not in _PER_BROKER},
            "startOffset": self.start_offset,
            "caches": {str(b): s for b, s in sorted(self.caches.items())},
            "batches": {str(b): {"first": f, "last": la} for b, (f, la) in sorted(self.batches.items())},
            "text": self.describe(),
        }


def epoch_lineup(
    state: PartitionState | None,
    caches: Mapping[int, Iterable[tuple[int, int]]] | None = None,
    ranges: Mapping[int, Iterable[Mapping[str, Any]]] | None = None,
) -> list[EpochLine]:
    """Every leader epoch the metadata assigned or a replica's cache or batches hold, in order.

    ``covered``: the history shows whether the epoch was assigned (``PartitionState.covers``), or the epoch is
    newer than the latest the history shows while a replica holds batches of it whose timestamps precede
    the history's last change of the partition (the controller had recorded the partition after that
    epoch began yet never assigned it; batch CreateTime against the controller's clock)."""
    assigned = state.epochs_assigned() if state is not None else {}
    lines: dict[int, EpochLine] = {}

    def line(e: int) -> EpochLine:
        if e not in lines:
            lines[e] = EpochLine(e, e in assigned, state is not None and state.covers(e))
        return lines[e]

    for e, ev in assigned.items():
        ln = line(e)
        ln.leader = ev.get("leader")
        ln.unclean = bool(ev.get("unclean"))
        ln.leader_recovery_state = ev.get("leader_recovery_state")
        ln.previous_isr = ev.get("previous_isr")
        ln.isr = ev.get("isr")
        ln.metadata_offset = ev.get("offset")
        ln.timestamp = ev.get("timestamp")
    for broker, cache in (caches or {}).items():
        for e, s in cache:
            line(int(e)).caches[int(broker)] = int(s)
    for broker, rs in (ranges or {}).items():
        for g in rs:
            e = int(g["epoch"])
            ln = line(e)
            first, last = int(g["first"]), int(g["last"])
            old = ln.batches.get(int(broker))
            ln.batches[int(broker)] = (
                (first, last) if old is None else (min(old[0], first), max(old[1], last))
            )
            t0, t1 = _int(g.get("first_timestamp")), _int(g.get("last_timestamp"))
            old_t = ln.batch_times.get(int(broker), (None, None))
            ln.batch_times[int(broker)] = (_lo(old_t[0], t0), _hi(old_t[1], t1))
    if state is not None and state.history:
        last_change = state.history[-1].get("timestamp")
        for ln in lines.values():
            if ln.epoch > state.leader_epoch and last_change is not None:
                firsts = [t for t, _ in ln.batch_times.values() if t is not None]
                ln.covered = bool(firsts) and min(firsts) < last_change
    return [lines[e] for e in sorted(lines)]


def _lo(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _hi(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def never_assigned(state: PartitionState | None, lines: Iterable[EpochLine]) -> list[EpochLine]:
    """Epochs some replica's cache or batches hold that the metadata never assigned, where the replayed
    history covers them (:func:`epoch_lineup`'s ``covered``: a history that starts at a snapshot says nothing
    about earlier epochs, a snapshot that skips epochs nothing about those, and a metadata copy that ends
    early nothing about later ones unless batch timestamps show the epoch began before its last change)."""
    if state is None:
        return []
    return [ln for ln in lines if ln.covered and not ln.in_metadata and (ln.caches or ln.batches)]


def cache_disagreements(
    lines: Iterable[EpochLine], log_starts: Mapping[int, int] | None = None
) -> list[dict]:
    """For every epoch with a metadata leader L whose own cache holds the epoch: the replicas whose cache
    starts that epoch elsewhere. A start offset moved up to the replica's log start offset (Kafka's cache
    truncation from the start) is not a disagreement."""
    out = []
    starts = log_starts or {}
    for ln in lines:
        ref = ln.start_offset
        if not ln.in_metadata or ref is None:
            continue
        for b, s in sorted(ln.caches.items()):
            if b == ln.leader or s == ref:
                continue
            if s > ref and starts.get(b) is not None and s == starts[b]:
                continue
            out.append({"epoch": ln.epoch, "leader": ln.leader, "broker": b, "leader_start": ref, "start": s})
    return out


def isr_intervals(state: PartitionState | None, configs: list[dict], topic: str) -> list[dict]:
    """The stretches of the history in which the partition had a leader, with the ISR and the topic's
    ``min.insync.replicas`` then (config events up to that point): ``leader``, ``leader_epoch``, ``isr``,
    ``min_insync``, ``from_offset``/``from_timestamp`` (the change that began it), ``to_timestamp`` (the next
    change, None for the last) and ``whole_epoch``: the ISR stayed below ``min.insync.replicas`` from the
    change that assigned the epoch to its end (only then every batch of the epoch is known to have been
    appended while under-replicated)."""
    if state is None:
        return []
    hist = state.history
    out = []
    for i, ev in enumerate(hist):
        nxt = hist[i + 1] if i + 1 < len(hist) else None
        if ev.get("leader") is None or ev["leader"] < 0:
            continue
        raw = config_value(configs, topic, MIN_INSYNC_REPLICAS, ev["leader"], until=ev.get("seq"))
        try:
            min_isr = int(raw)
        except ValueError:
            min_isr = 1
        out.append(
            {
                "leader": ev["leader"],
                "leader_epoch": ev["leader_epoch"],
                "isr": list(ev.get("isr") or []),
                "min_insync": min_isr,
                "from_offset": ev.get("offset"),
                "from_timestamp": ev.get("timestamp"),
                "to_offset": nxt.get("offset") if nxt else None,
                "to_timestamp": nxt.get("timestamp") if nxt else None,
                # the change that assigned the epoch (a snapshot's restatement does not show where it began)
                "starts_epoch": not ev.get("from_snapshot")
                and (i == 0 or hist[i - 1]["leader_epoch"] != ev["leader_epoch"]),
            }
        )
    for e in {iv["leader_epoch"] for iv in out}:
        ivs = [iv for iv in out if iv["leader_epoch"] == e]
        whole = ivs[0]["starts_epoch"] and all(len(iv["isr"]) < iv["min_insync"] for iv in ivs)
        for iv in ivs:
            iv["whole_epoch"] = whole
    return out


@dataclass
class PartitionTimeline:
    """One partition's timeline: its changes in the reference node's metadata, its epochs lined up with the
    replicas, and the config changes that apply to it."""

    topic: str
    partition: int
    state: PartitionState | None
    epochs: list[EpochLine]
    configs: list[dict] = field(default_factory=list)

    @property
    def changes(self) -> list[dict]:
        return list(self.state.history) if self.state is not None else []


@dataclass
class Timeline:
    """The timeline of a cluster (the partitions asked for) from its most complete metadata replica."""

    source: dict | None  # node, log_dir, end_offset of the reference metadata replica
    nodes: list[dict]  # every metadata replica: node, log_dir, end_offset, records
    disagreements: list[dict]
    partitions: list[PartitionTimeline]
    brokers: list[dict]  # broker registration events
    configs: list[dict]  # config changes (timeline configs, every topic and broker)
    notes: list[str] = field(default_factory=list)


def build_timeline(
    metadata: Iterable[Mapping[str, Any]],
    caches: Mapping[tuple[str, int], Mapping[int, Iterable[tuple[int, int]]]] | None = None,
    ranges: Mapping[tuple[str, int], Mapping[int, Iterable[Mapping[str, Any]]]] | None = None,
    topic: str | None = None,
    partition: int | None = None,
) -> Timeline:
    """The timeline of the partitions (all, or those of ``topic``/``partition``) that the reference node's
    metadata or the caches/ranges name."""
    metadata = list(metadata)
    ref = reference_node(metadata)
    chosen = node_rows(metadata, ref)
    nodes: dict[int, dict] = {}
    for r in metadata:
        n = _int(r.get("node"))
        if n is None:
            continue
        d = nodes.setdefault(n, {"node": n, "log_dir": r.get("log_dir"), "end_offset": 0, "records": 0})
        d["end_offset"] = max(d["end_offset"], _int(r.get("end_offset")) or 0)
        d["records"] += 1
    states = replay_partitions(chosen)
    configs = config_events(chosen)
    _brokers, broker_events = replay_brokers(chosen)
    keys = set(states) | set(caches or {}) | set(ranges or {})
    keys = {k for k in keys if (topic is None or k[0] == topic) and (partition is None or k[1] == partition)}
    parts = []
    for key in sorted(keys):
        state = states.get(key)
        lines = epoch_lineup(state, (caches or {}).get(key), (ranges or {}).get(key))
        mine = [c for c in configs if c["resource_type"] != 2 or c["resource"] == key[0]]
        parts.append(PartitionTimeline(key[0], key[1], state, lines, mine))
    notes = []
    if ref is None:
        notes.append("no __cluster_metadata replica among the inputs: no metadata history")
    source = dict(nodes[ref]) if ref is not None else None
    return Timeline(
        source,
        [nodes[n] for n in sorted(nodes)],
        disagreements(metadata),
        parts,
        broker_events,
        configs,
        notes,
    )


def audit_timelines(
    metadata: Iterable[Mapping[str, Any]],
    summary: Iterable[Mapping[str, Any]],
    epoch_ranges: Iterable[Mapping[str, Any]],
    keys: Iterable[tuple[str, str, int]],
) -> dict[tuple[str, str, int], Timeline]:
    """The timeline of each partition ``(cluster, topic, partition)`` of ``keys`` from what ``audit``
    collects: the metadata rows of every node (``AuditResult.metadata``), the per-replica summary rows (their
    ``epochs``: the leader-epoch cache) and the batch epoch ranges (``rows.TIMELINE`` rows, or the
    ``epochs`` frame: cluster, topic, partition, broker, epoch, first, last, ...). Each cluster's metadata
    is replayed once."""
    wanted = set(keys)
    by_cluster: dict[str, list[Mapping[str, Any]]] = {}
    for r in metadata:
        by_cluster.setdefault(r.get("cluster") or "", []).append(r)
    caches: dict[str, dict] = {}
    for r in summary:
        key = (r.get("cluster") or "", r["topic"], int(r["partition"]))
        if key in wanted:
            entries = [(int(e["epoch"]), int(e["start_offset"])) for e in r.get("epochs") or []]
            caches.setdefault(key[0], {}).setdefault(key[1:], {})[int(r["broker"])] = entries
    ranges: dict[str, dict] = {}
    for g in epoch_ranges:
        key = (g.get("cluster") or "", g["topic"], int(g["partition"]))
        if key in wanted:
            ranges.setdefault(key[0], {}).setdefault(key[1:], {}).setdefault(int(g["broker"]), []).append(g)
    out: dict[tuple[str, str, int], Timeline] = {}
    for cluster in sorted({k[0] for k in wanted}):
        whole = build_timeline(by_cluster.get(cluster, []), caches.get(cluster), ranges.get(cluster))
        for pt in whole.partitions:
            key = (cluster, pt.topic, pt.partition)
            if key in wanted:
                out[key] = Timeline(
                    whole.source, whole.nodes, whole.disagreements, [pt], [], pt.configs, whole.notes
                )
    return out
