"""One pass over one partition: every comparison of its replicas, from its rows grouped together (pure
Python, no pyspark: it runs in Spark's ``mapInArrow`` over a partition at a time, and in the driver for small
inputs).

The rows of a partition (``tp``) are its replica rows, leader-epoch cache entries, batch rows (at least those
of the chunks where its replicas are not unanimous, ``auditor.spark.compare``, and every transactional
batch), record rows (compacted partitions), optionally the
digests of every chunk (the epoch ranges come from them; without them, from the batch rows), and the KRaft
metadata rows about it. :func:`run` walks them once per concern and yields, in the ``rows.PASS_OUTPUTS``
layouts:

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

Giving the pass more batch rows of a partition than those (up to the whole log) changes none of its results:
the rows of an identical chunk are the same on every replica, so they neither diverge nor differ from the
leader, and break loss runs as a gap does; a transaction's state depends on transactional batches only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from auditor.kafka.election import CONTROL_STATES
from auditor.kafka.epochs import NO_LEADER
from auditor.kafka.kraft import BROKER_RESOURCE, TIMELINE_CONFIGS, TOPIC_RESOURCE
from auditor.kafka.topics import METADATA_TOPIC
from auditor.kafka.transactions import (
    ABORT,
    ABORTED,
    COMMIT,
    COMMITTED,
    MARKER,
    MARKER_NAMES,
    OPEN,
    PLAIN,
    VISIBLE_TO_READ_COMMITTED,
    classify,
    is_end_marker,
)
from auditor.rules.registry import REGISTRY
from auditor.rules.replica.kraft import offline_partitions
from auditor.rules.replica.model import LOST_MARKERS_LISTED, PRODUCERS_LISTED
from auditor.spark.partition_rules import (
    cluster_findings,
    evaluate_rows,
    finding_row,
    lag_finding,
    loss_findings,
)

INPUT_KINDS = ("replica", "epoch", "digest", "batch", "record")
"""The kinds of rows Spark groups per partition (the metadata rows come from :func:`metadata_index`)."""

Row = dict[str, Any]


def present(value: Any) -> Any:
    """``value`` without its null struct fields, at every depth: a rule sees (and its evidence shows) only
    what a row holds."""
    if isinstance(value, dict):
        return {k: present(v) for k, v in value.items() if v is not None}
    return value


BATCH_FIELDS = (
    "broker",
    "segment",
    "position",
    "base_offset",
    "last_offset",
    "crc",
    "ple",
    "valid",
    "records_count",
    "size",
    "max_timestamp",
    "sig",
    "attributes",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "control_type",
)
"""The batch row fields the pass reads (``compare.batch_columns``)."""


class BatchRow:
    """One batch row, compact (a slot per field: a partition's rows are held at once), read as ``b.field``
    (what ``auditor.kafka.transactions`` reads) or ``b["field"]``."""

    __slots__ = BATCH_FIELDS

    def __init__(self, row: Mapping[str, Any]) -> None:
        get = row.get
        self.broker, self.segment, self.position = get("broker"), get("segment"), get("position")
        self.base_offset, self.last_offset, self.crc = get("base_offset"), get("last_offset"), get("crc")
        self.ple, self.valid, self.records_count = get("ple"), get("valid"), get("records_count")
        self.size, self.max_timestamp, self.sig = get("size"), get("max_timestamp"), get("sig")
        self.attributes, self.producer_id = get("attributes"), get("producer_id")
        self.producer_epoch, self.base_sequence = get("producer_epoch"), get("base_sequence")
        self.is_transactional, self.is_control = get("is_transactional"), get("is_control")
        self.control_type = get("control_type")

    @classmethod
    def of(cls, values: tuple) -> BatchRow:
        """A row from its values in :data:`BATCH_FIELDS` order."""
        b = cls.__new__(cls)
        (b.broker, b.segment, b.position, b.base_offset, b.last_offset, b.crc, b.ple, b.valid,
         b.records_count, b.size, b.max_timestamp, b.sig, b.attributes, b.producer_id, b.producer_epoch,
         b.base_sequence, b.is_transactional, b.is_control, b.control_type) = values  # fmt: skip
        return b

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


class Lost:
    """A follower batch that differs from a leader's (:func:`lost_batches`): the batch and what the
    comparison concluded; ``lost["field"]`` reads either."""

    __slots__ = (
        "b",
        "replica",
        "leader",
        "leader_source",
        "txn_state",
        "txn_first",
        "committed_hw",
        "start",
        "c",
        "u",
    )

    def __init__(self, b: BatchRow, replica: Row, leader: int, leader_source: str, state: tuple, chw: int,
                 start: int, c: bool, u: bool) -> None:  # fmt: skip
        self.b, self.replica, self.leader, self.leader_source = b, replica, leader, leader_source
        self.txn_state, self.txn_first = state
        self.committed_hw, self.start, self.c, self.u = chw, start, c, u

    def __getitem__(self, name: str) -> Any:
        if name in Lost.__slots__:
            return getattr(self, name)
        if name in ("cluster", "topic", "partition", "log_dir"):
            return self.replica.get(name)
        return getattr(self.b, name)


# ------------------------------------------------------------------------------------------------ metadata


def metadata_index(metadata: Iterable[Row]) -> dict:
    """The KRaft rows each partition's rules see, indexed: its partition records by (cluster, topic,
    partition), the configs of ``kraft.TIMELINE_CONFIGS`` by (cluster, topic) for topics and by cluster for
    brokers (repeated for every partition of the cluster; they are few)."""
    parts: dict[tuple, list[Row]] = {}
    topics: dict[tuple, list[Row]] = {}
    brokers: dict[str, list[Row]] = {}
    for r in metadata:
        if r.get("partition") is not None:
            parts.setdefault((r["cluster"], r["topic"], r["partition"]), []).append(r)
        elif r.get("record_type") == "CONFIG_RECORD" and r.get("config_name") in TIMELINE_CONFIGS:
            if r.get("config_resource_type") == TOPIC_RESOURCE:
                topics.setdefault((r["cluster"], r["topic"]), []).append(r)
            elif r.get("config_resource_type") == BROKER_RESOURCE:
                brokers.setdefault(r["cluster"], []).append(r)
    return {"parts": parts, "topics": topics, "brokers": brokers}


def metadata_for(index: Mapping, cluster: str, topic: str, partition: int) -> list[Row]:
    """The metadata rows of one partition (without ``cluster``; a config row carries the partition's topic
    and partition number)."""
    out = [dict(r) for r in index["parts"].get((cluster, topic, partition), ())]
    for r in (*index["topics"].get((cluster, topic), ()), *index["brokers"].get(cluster, ())):
        out.append(dict(r, topic=topic, partition=partition))
    for r in out:
        r.pop("cluster", None)
    return out


# ------------------------------------------------------------------------------------------------ pairs


def _greatest(*values):
    present_ = [v for v in values if v is not None]
    return max(present_) if present_ else None


def _least(*values):
    present_ = [v for v in values if v is not None]
    return min(present_) if present_ else None


def _inside(first: int, last: int, lo: int | None, hi: int | None) -> bool:
    """Offsets ``first..last`` touch the unreadable span ``[lo, hi)`` (``hi`` None: to the end)."""
    return lo is not None and last >= lo and (hi is None or first < hi)


def replica_pairs(replicas: list[Row]) -> list[Row]:
    """Every pair of replicas (brokers ``a < b``) with its common range ``[lo, hi)`` and comparison mode:
    ``record`` for compacted partitions whose replicas both have record rows, else ``batch`` (compacted
    without record rows: only above both cleaner offsets, where nothing was cleaned)."""
    out = []
    ordered = sorted(replicas, key=lambda r: r["broker"])
    for i, ra in enumerate(ordered):
        for rb in ordered[i + 1 :]:
            if ra["broker"] == rb["broker"]:
                continue
            compacted = ra.get("compacted") is True or rb.get("compacted") is True
            with_records = ra.get("has_records") is True and rb.get("has_records") is True
            without_records = ra.get("has_records") is False or rb.get("has_records") is False
            base_lo = _greatest(ra.get("log_start"), rb.get("log_start"))
            if compacted and without_records:
                lo = _greatest(base_lo, ra.get("cleaner_offset") or 0, rb.get("cleaner_offset") or 0)
            else:
                lo = base_lo
            out.append(
                {
                    "cluster": ra["cluster"],
                    "topic": ra["topic"],
                    "partition": ra["partition"],
                    "a": ra["broker"],
                    "b": rb["broker"],
                    "cleaner_offset_a": ra.get("cleaner_offset"),
                    "cleaner_offset_b": rb.get("cleaner_offset"),
                    "ua_from": ra.get("unreadable_from"),
                    "ua_to": ra.get("unreadable_to"),
                    "ub_from": rb.get("unreadable_from"),
                    "ub_to": rb.get("unreadable_to"),
                    "mode": "record" if compacted and with_records else "batch",
                    "lo": lo,
                    "hi": _least(ra.get("leo"), rb.get("leo")),
                }
            )
    return out


def _readable(p: Row, first: int, last: int) -> bool:
    return not _inside(first, last, p["ua_from"], p["ua_to"]) and not _inside(
        first, last, p["ub_from"], p["ub_to"]
    )


def _at(b: Row | None) -> Row | None:
    if b is None:
        return None
    return {"last_offset": b["last_offset"], "ple": b["ple"], "crc": b["crc"], "valid": b["valid"]}


def _divergence(p: Row, offset: int, mode: str, detail: Row) -> Row:
    keys = ("cluster", "topic", "partition", "a", "b", "lo", "hi")
    return {**{k: p[k] for k in keys}, "offset": offset, "mode": mode, "detail": detail}


def batch_divergence(p: Row, by_broker: Mapping[int, list[Row]]) -> Row | None:
    """The first base offset where pair ``p`` (mode ``batch``) holds different batches (a missing batch,
    other boundaries, another CRC or partitionLeaderEpoch) inside ``[lo, hi)``, outside unreadable spans."""
    lo, hi = p["lo"], p["hi"]

    spans = p["ua_from"] is not None or p["ub_from"] is not None

    def held(broker: int) -> dict[int, BatchRow]:
        return {
            b.base_offset: b
            for b in by_broker.get(broker, ())
            if b.base_offset < hi
            and b.last_offset >= lo
            and (not spans or _readable(p, b.base_offset, b.last_offset))
        }

    ha, hb = held(p["a"]), held(p["b"])
    for base in sorted(ha.keys() | hb.keys()):
        a, b = ha.get(base), hb.get(base)
        if (a.sig if a else None) != (b.sig if b else None):
            detail = {"base_offset": base, "a": _at(a), "b": _at(b), "hash_a": None, "hash_b": None}
            return _divergence(p, max(base, lo), "batch", detail)
    return None


def record_divergence(p: Row, records: Mapping[int, dict[int, int]]) -> Row | None:
    """Compacted partitions: the first offset where pair ``p`` holds different records, or where one lacks a
    record at or above the other's cleaner offset (below it the cleaner may have removed it)."""
    lo, hi = p["lo"], p["hi"]

    def held(broker: int) -> dict[int, int]:
        return {o: h for o, h in records.get(broker, {}).items() if lo <= o < hi and _readable(p, o, o)}

    ra, rb = held(p["a"]), held(p["b"])
    ca = p["cleaner_offset_a"] if p["cleaner_offset_a"] is not None else -1
    cb = p["cleaner_offset_b"] if p["cleaner_offset_b"] is not None else -1
    for offset in sorted(ra.keys() | rb.keys()):
        a, b = ra.get(offset), rb.get(offset)
        if (
            (a is not None and b is not None and a != b)
            or (a is not None and b is None and offset >= cb)
            or (b is not None and a is None and offset >= ca)
        ):
            detail = {"base_offset": None, "a": None, "b": None, "hash_a": a, "hash_b": b}
            return _divergence(p, offset, "record", detail)
    return None


def first_divergences(
    pairs: list[Row], by_broker: Mapping[int, list[Row]], records: Mapping[int, dict[int, int]]
) -> list[Row]:
    """The first divergence of every pair with a non-empty common range (batch or record mode)."""
    out = []
    for p in pairs:
        if p["lo"] is None or p["hi"] is None or not p["lo"] < p["hi"]:
            continue
        batch_mode = p["mode"] == "batch"
        d = batch_divergence(p, by_broker) if batch_mode else record_divergence(p, records)
        if d is not None:
            out.append(d)
    return out


def batches_by_broker(batch_rows: Iterable[Row]) -> dict[int, list[Row]]:
    """Batch rows by broker, each replica's in offset order."""
    by_broker: dict[int, list[Row]] = {}
    for b in batch_rows:
        by_broker.setdefault(b["broker"], []).append(b)
    for bs in by_broker.values():
        bs.sort(key=lambda b: b["base_offset"])
    return by_broker


# ------------------------------------------------------------------------------------------------ epochs


def digest_of(batches: Iterable[Row]) -> list[Row]:
    """Digest rows of batch rows, one per batch (what Spark's digest scan sums per chunk), for
    :func:`epoch_ranges`."""
    return [
        {
            "broker": b["broker"],
            "ple": b["ple"],
            "first": b["base_offset"],
            "last": b["last_offset"],
            "records": b["records_count"],
            "bytes": b["size"],
            "n": 1,
            "first_timestamp": b["max_timestamp"],
            "last_timestamp": b["max_timestamp"],
        }
        for b in batches
    ]


def epoch_ranges(digest: Iterable[Row]) -> list[Row]:
    """Per (broker, leader epoch of the batches): first and last offset, records, bytes, batches and the
    first and last batch max timestamps, from digest rows."""
    out: dict[tuple, Row] = {}
    for d in digest:
        key = (d["broker"], d["ple"])
        g = out.get(key)
        if g is None:
            out[key] = {
                "broker": d["broker"],
                "epoch": d["ple"],
                "first": d["first"],
                "last": d["last"],
                "records": d["records"],
                "bytes": d["bytes"],
                "batches": d["n"],
                "first_timestamp": d["first_timestamp"],
                "last_timestamp": d["last_timestamp"],
            }
        else:
            g["first"] = _least(g["first"], d["first"])
            g["last"] = _greatest(g["last"], d["last"])
            g["records"] = (g["records"] or 0) + (d["records"] or 0)
            g["bytes"] = (g["bytes"] or 0) + (d["bytes"] or 0)
            g["batches"] += d["n"]
            g["first_timestamp"] = _least(g["first_timestamp"], d["first_timestamp"])
            g["last_timestamp"] = _greatest(g["last_timestamp"], d["last_timestamp"])
    return [out[k] for k in sorted(out)]


# ------------------------------------------------------------------------------------------------ txns


def txn_states(by_broker: Mapping[int, list[BatchRow]]) -> dict[tuple[int, int], tuple[str, int | None]]:
    """Per (broker, base offset) of the logs holding transactional or control batches: the batch's
    transaction state in its replica's log (``transactions.classify``) and, for a COMMIT/ABORT marker, the
    first offset of the data of the transaction it ends in that log (None when it has none there). Every
    batch of another log is plain data (:func:`state_of`)."""
    out: dict[tuple[int, int], tuple[str, int | None]] = {}
    for broker, batches in by_broker.items():
        if not any(b.is_transactional or b.is_control for b in batches):
            continue
        first_data: dict[int, int] = {}
        for b, state in zip(batches, classify(batches), strict=True):
            first = None
            if b.is_control and is_end_marker(b):
                first = first_data.pop(b.producer_id, None)
            elif b.is_transactional and not b.is_control:
                first_data.setdefault(b.producer_id, b.base_offset)
            out[(broker, b.base_offset)] = (state, first)
    return out


_PLAIN = (PLAIN, None)


def state_of(states: Mapping[tuple[int, int], tuple[str, int | None]], b: BatchRow) -> tuple[str, int | None]:
    """The transaction state of ``b`` and its transaction's first offset (:func:`txn_states`)."""
    return states.get((b.broker, b.base_offset), _PLAIN)


# ------------------------------------------------------------------------------------------------ loss


def lost_batches(
    by_broker: Mapping[int, list[BatchRow]],
    replicas: Mapping[int, Row],
    zones: list[Row],
    states: Mapping[tuple[int, int], tuple[str, int | None]],
) -> Iterator[Lost]:
    """Follower batches from each leader's zone start on that differ from that leader's batch at the same
    base offset: ``committed_hw`` (the highest HW checkpointed by any replica holding that same batch),
    ``start`` (where this replica differs inside the batch: its own zone start in compacted partitions),
    ``c`` (committed records lost) and ``u`` (uncommitted). ``zones`` may name several leaders (the
    election's candidates); each leader is compared with its own followers. A batch that does not differ
    is left out: in a run of offsets it is a gap all the same."""
    by_leader: dict[int, list[Row]] = {}
    for z in zones:
        by_leader.setdefault(z["leader"], []).append(z)
    for leader, zs in sorted(by_leader.items()):
        zone_lo = min(z["from"] for z in zs)
        first = zs[0]
        lu = (first["leader_unreadable_from"], first["leader_unreadable_to"])
        own = {z["broker"]: z["from"] for z in zs}
        committed_hw: dict[tuple[int, int], int] = {}
        leader_sig: dict[int, int] = {}
        for broker in sorted(by_broker):
            if broker not in replicas:
                continue
            hw = replicas[broker].get("hw") or 0
            for b in by_broker[broker]:
                if b.last_offset < zone_lo:
                    continue
                key = (b.base_offset, b.sig)
                committed_hw[key] = max(committed_hw.get(key, hw), hw)
                if broker == leader:
                    leader_sig[b.base_offset] = b.sig
        for broker in sorted(by_broker):
            if broker == leader or broker not in replicas:
                continue
            replica = replicas[broker]
            for b in by_broker[broker]:
                if b.last_offset < zone_lo or _inside(b.base_offset, b.last_offset, *lu):
                    continue
                if leader_sig.get(b.base_offset) == b.sig:
                    continue
                start = max(b.base_offset, own.get(broker, b.base_offset))
                chw = committed_hw[(b.base_offset, b.sig)]
                c, u = start < chw, b.last_offset >= max(start, chw)
                yield Lost(b, replica, leader, first["leader_source"], state_of(states, b), chw, start, c, u)


def _marker(b: Lost) -> tuple:
    return (
        b["base_offset"],
        MARKER_NAMES[COMMIT] if b["control_type"] == COMMIT else MARKER_NAMES[ABORT],
        b["producer_id"],
        b["producer_epoch"],
        b["txn_first"] if b["txn_first"] is not None else b["base_offset"],
        b["ple"],
    )


_MARKER_FIELDS = ("offset", "marker", "producer_id", "producer_epoch", "first_offset", "epoch")


def lost_runs(lost: Iterable[Lost]) -> list[Row]:
    """Runs of consecutive differing follower batches (:func:`lost_batches` rows of one partition):
    ``committed`` (offsets below ``committed_hw``) and ``uncommitted`` (the rest), each with records by
    transaction state (plain and committed data in ``records``, whose offsets run ``lo..hi``; aborted, open;
    COMMIT/ABORT markers listed), the whole truncated span ``span_lo..span_hi``, bytes, batches, leader
    epochs, producers and batch timestamps. A run ends at a batch that does not
    qualify or at a gap (the batches between are identical on the leader)."""
    by_key: dict[tuple, list[Lost]] = {}
    for b in lost:
        by_key.setdefault((b.leader, b.b.broker), []).append(b)
    out: list[Row] = []
    for kind, flag in (("committed", "c"), ("uncommitted", "u")):
        for _key, rows_ in sorted(by_key.items()):
            rows_.sort(key=lambda b: b["base_offset"])
            run: list[Row] = []
            prev_last = None
            for b in rows_:
                gap = prev_last is None or b["base_offset"] != prev_last + 1
                prev_last = b["last_offset"]
                if (not b[flag] or gap) and run:
                    out.append(_run(kind, run))
                    run = []
                if b[flag]:
                    run.append(b)
            if run:
                out.append(_run(kind, run))
    return out


def _run(kind: str, run: list[Lost]) -> Row:
    first = run[0]
    los, his, counts = [], [], {PLAIN: 0, COMMITTED: 0, ABORTED: 0, OPEN: 0}
    counted_lo, counted_hi = None, None
    markers, commit_markers, lost_markers, producers, timestamps = 0, 0, [], set(), []
    for b in run:
        chw = b["committed_hw"]
        if kind == "committed":
            lo, hi = b["start"], min(b["last_offset"], chw - 1)
        else:
            lo, hi = max(b["start"], chw), b["last_offset"]
        los.append(lo)
        his.append(hi)
        state = b["txn_state"]
        if state in counts:
            n = min(hi - lo + 1, b["records_count"])
            counts[state] += n
            if state in VISIBLE_TO_READ_COMMITTED and n > 0:  # the range of the records ``records`` counts
                counted_lo = lo if counted_lo is None else min(counted_lo, lo)
                counted_hi = hi if counted_hi is None else max(counted_hi, hi)
        if state == MARKER:
            markers += 1
            commit_markers += b["control_type"] == COMMIT
            lost_markers.append(_marker(b))
        else:
            if b["producer_id"] is not None and b["producer_id"] >= 0:
                producers.add(b["producer_id"])
            if b["max_timestamp"] is not None:
                timestamps.append(b["max_timestamp"])
    return {
        "cluster": first["cluster"],
        "topic": first["topic"],
        "partition": first["partition"],
        "broker": first["broker"],
        "log_dir": first["log_dir"],
        "leader": first["leader"],
        "leader_source": first["leader_source"],
        "lo": min(los) if counted_lo is None else counted_lo,
        "hi": max(his) if counted_hi is None else counted_hi,
        "span_lo": min(los),
        "span_hi": max(his),
        "records": counts[PLAIN] + counts[COMMITTED],
        "bytes": sum(b["size"] for b in run),
        "batches": len(run),
        "epochs": sorted({b["ple"] for b in run}),
        "committed_hw": max(b["committed_hw"] for b in run),
        "aborted_records": counts[ABORTED],
        "open_records": counts[OPEN],
        "markers": markers,
        "commit_markers": commit_markers,
        "lost_markers": [
            dict(zip(_MARKER_FIELDS, m, strict=True)) for m in sorted(lost_markers)[:LOST_MARKERS_LISTED]
        ],
        "producer_ids": sorted(producers)[:PRODUCERS_LISTED],
        "first_timestamp": min(timestamps) if timestamps else None,
        "last_timestamp": max(timestamps) if timestamps else None,
        "kind": kind,
    }


def export_rows(lost: Iterable[Lost]) -> list[Row]:
    """The lost batches whose records ``--export-lost`` decodes: committed records lost, plain or committed
    transactional data."""
    keys = (
        "cluster",
        "topic",
        "partition",
        "broker",
        "log_dir",
        "leader",
        "segment",
        "position",
        "size",
        "base_offset",
        "ple",
        "committed_hw",
        "start",
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "txn_state",
    )
    return [{k: b[k] for k in keys} for b in lost if b["c"] and b["txn_state"] in VISIBLE_TO_READ_COMMITTED]


# ------------------------------------------------------------------------------------------------ lag


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
        "last_timestamp": _greatest(*(b["max_timestamp"] for b in inside)),
    }


# ------------------------------------------------------------------------------------------------ hanging


def open_transactions(summary: list[Row], by_broker: Mapping[int, list[Row]]) -> list[Row]:
    """The transactions open on the current leader (no COMMIT/ABORT marker of their producer after them in
    its log), each with the first marker of its producer after its first offset on every other replica and
    how many there are (KA713/KA714, ``auditor.spark.hanging``)."""
    leader = next((s for s in summary if s["is_leader"] and s["topic"] != METADATA_TOPIC), None)
    if leader is None:
        return []
    own = [b for b in by_broker.get(leader["broker"], ()) if b.is_transactional]
    opened: dict[int, Row] = {}
    for b, state in zip(own, classify(own), strict=True):
        if state != OPEN:
            continue
        o = opened.get(b.producer_id)
        row = b
        if o is None:
            opened[b.producer_id] = {
                "first": (b.base_offset, b.producer_epoch),
                "last_offset": b.last_offset,
                "records": row["records_count"],
                "batches": 1,
            }
        else:
            o["first"] = min(o["first"], (b.base_offset, b.producer_epoch))
            o["last_offset"] = max(o["last_offset"], b.last_offset)
            o["records"] += row["records_count"]
            o["batches"] += 1
    out = []
    for pid, o in sorted(opened.items()):
        first_offset, producer_epoch = o["first"]
        markers = []
        for broker, batches in sorted(by_broker.items()):
            if broker == leader["broker"]:
                continue
            found = [
                (b["base_offset"], b["control_type"], b["producer_epoch"])
                for b in batches
                if b["is_transactional"]
                and b["producer_id"] == pid
                and b["base_offset"] > first_offset
                and is_end_marker(b)
            ]
            if found:
                base, control_type, epoch = min(found)
                markers.append((base, broker, control_type, epoch, len(found)))
        out.append(
            {
                "cluster": leader["cluster"],
                "topic": leader["topic"],
                "partition": leader["partition"],
                "producer_id": pid,
                "first_offset": first_offset,
                "producer_epoch": producer_epoch,
                "last_offset": o["last_offset"],
                "records": o["records"],
                "batches": o["batches"],
                "leader": leader["broker"],
                "leader_source": leader["leader_source"],
                "log_dir": leader["log_dir"],
                "hw": leader["hw"],
                "leo": leader["leo"],
                "log_start": leader["log_start"],
                "markers": [dict(zip(_OPEN_MARKER, m, strict=True)) for m in sorted(markers)],
            }
        )
    return out


_OPEN_MARKER = ("base_offset", "broker", "control_type", "producer_epoch", "markers")


# ------------------------------------------------------------------------------------------------ election


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
                start = _greatest(c.get("leo"), r.get("log_start"))
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
        if lost.c and lost.txn_state in VISIBLE_TO_READ_COMMITTED:
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


# ------------------------------------------------------------------------------------------------ the pass


def run(rows: Mapping[str, list], metadata: list[Row], export: bool = False) -> dict[str, list[Row]]:
    """Every comparison of one partition from its rows by kind (:data:`INPUT_KINDS`; batch rows as
    :class:`BatchRow`) and its metadata rows (:func:`metadata_for`): the output rows by ``rows.PASS_OUTPUTS``
    kind; the lost batches ``--export-lost`` decodes (``lost``) only when ``export``."""
    replica_rows = rows.get("replica", [])
    if not replica_rows:
        return {}
    replicas = {r["broker"]: r for r in replica_rows}
    by_broker = batches_by_broker(rows.get("batch", ()))
    records: dict[int, dict[int, int]] = {}
    for r in rows.get("record", ()):
        held = records.setdefault(r["broker"], {})
        held[r["offset"]] = max(held.get(r["offset"], r["record_hash"]), r["record_hash"])

    pairs = replica_pairs(replica_rows)
    divergences = first_divergences(pairs, by_broker, records)
    digest = rows.get("digest")
    ranges = epoch_ranges(digest if digest is not None else digest_of(rows.get("batch", ())))

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
    states = txn_states(by_broker)
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
        "open_txn": open_transactions(result.summary, by_broker),
        "lost": export_rows(lost) if export else [],
    }


# ------------------------------------------------------------------------------------------------ clusters


def cluster_rows(findings: list[Row], summary: list[Row]) -> tuple[list[Row], list[Row]]:
    """The cluster-wide step after every partition's pass: the partitions' KA621 findings folded into one per
    cluster, and the ``cluster`` rules (KA623) over the leader sources of each cluster. Returns the findings
    to keep (every one but KA621) and the cluster findings."""
    offline: dict[str | None, list[tuple]] = {}
    kept = []
    for f in findings:
        if f["code"] == "KA621":
            offline.setdefault(f["cluster"], []).append((f["topic"], f["partition"], f["broker"], f["epoch"]))
        else:
            kept.append(f)
    fields = ("topic", "partition", "broker", "epoch")
    out = [
        finding_row(
            REGISTRY["KA621"],
            offline_partitions([dict(zip(fields, p, strict=True)) for p in sorted(parts, key=_sort_key)]),
            cluster,
        )
        for cluster, parts in offline.items()
    ]
    leaders = {(s["cluster"], s["topic"], s["leader_source"]): s for s in summary}
    out += cluster_findings([{"cluster": c, "topic": t, "leader_source": src} for c, t, src in leaders])
    return kept, out


def _sort_key(p: tuple) -> tuple:
    """Spark's ascending order of structs: nulls first."""
    return tuple((v is not None, v if v is not None else 0) for v in p)
