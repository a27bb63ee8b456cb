"""The pass's truncation loss: the transaction state of each batch in its replica's own log
(``auditor.kafka.transactions.classify``, walked once: :func:`walk_batches`), each follower's batches that
differ from the leader's, their runs (committed or not, with markers, producers and timestamps), the rows
``--export-lost`` decodes, and the transactions open on the current leader with the markers other replicas
hold."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from auditor.kafka.topics import METADATA_TOPIC
from auditor.kafka.transactions import (
    ABORT,
    ABORTED,
    COMMIT,
    COMMITTED,
    CONTROL,
    MARKER,
    MARKER_NAMES,
    OPEN,
    PLAIN,
    VISIBLE_TO_READ_COMMITTED,
    is_end_marker,
)
from auditor.rules.replica.model import LOST_MARKERS_LISTED, PRODUCERS_LISTED
from auditor.spark.pass_divergence import inside
from auditor.spark.pass_rows import BatchRow, Lost, Row


@dataclass
class _Open:
    """A producer's transaction still open at this point of a replica's log: its first data batch (offset,
    producer epoch), last offset, records and batches, and the held batch rows whose state its marker
    decides."""

    first: tuple[int, int]
    last_offset: int
    records: int = 0
    batches: int = 0
    held: list[BatchRow] = field(default_factory=list)


@dataclass
class Walked:
    """A partition's batch rows after :func:`walk_batches`: the held ones by broker (offset order), the
    transaction state of each held batch (:func:`state_of`) and, per broker and producer, the transaction
    open at the end of the replica's log (``_Open``)."""

    by_broker: dict[int, list[BatchRow]]
    states: dict[tuple[int, int], tuple[str, int | None]]
    opened: dict[int, dict[int, _Open]]


def walk_batches(batches: Iterable[BatchRow]) -> Walked:
    """One walk over a partition's batch rows in (broker, base offset) order, any iterable: the rows the
    pass compares (``held``) are kept, every other row (a transactional or control batch of a chunk where
    the replicas agree) only moves its producer's transaction on, as ``ProducerStateManager`` does, and is
    dropped. Memory: the held rows and one open transaction per producer, never the replica's whole log.

    A held batch's state is ``transactions.classify``'s in its replica's log (a data batch of an open
    transaction takes the state its producer's next COMMIT/ABORT marker gives, ``open`` without one) and,
    for a marker, the first offset of the data of the transaction it ends there (None when it has none).
    Rows out of order are refused (a wrong sort would misjudge states silently)."""
    by_broker: dict[int, list[BatchRow]] = {}
    states: dict[tuple[int, int], tuple[str, int | None]] = {}
    opened: dict[int, dict[int, _Open]] = {}
    prev: tuple[int, int] | None = None
    txns: dict[int, _Open] = {}
    for b in batches:
        key = (b.broker, b.base_offset)
        if prev is not None and key < prev:
            raise ValueError(f"batch rows out of (broker, offset) order: {key} after {prev}")
        if prev is None or key[0] != prev[0]:
            txns = opened.setdefault(b.broker, {})
        prev = key
        if b.held:
            by_broker.setdefault(b.broker, []).append(b)
        if b.is_control:
            if is_end_marker(b):
                txn = txns.pop(b.producer_id, None)
                if txn is not None:
                    state = COMMITTED if b.control_type == COMMIT else ABORTED
                    for h in txn.held:
                        states[(h.broker, h.base_offset)] = (state, None)
                if b.held:
                    states[key] = (MARKER, None if txn is None else txn.first[0])
            elif b.held:
                states[key] = (CONTROL, None)
        elif b.is_transactional:
            txn = txns.get(b.producer_id)
            if txn is None:
                txn = txns[b.producer_id] = _Open((b.base_offset, b.producer_epoch), b.last_offset)
            txn.last_offset = max(txn.last_offset, b.last_offset)
            txn.records += b.records_count or 0
            txn.batches += 1
            if b.held:
                txn.held.append(b)
    for txns in opened.values():
        for txn in txns.values():
            for h in txn.held:
                states[(h.broker, h.base_offset)] = (OPEN, None)
            txn.held = []
    return Walked(by_broker, states, {k: v for k, v in opened.items() if v})


_PLAIN = (PLAIN, None)


def state_of(states: Mapping[tuple[int, int], tuple[str, int | None]], b: BatchRow) -> tuple[str, int | None]:
    """The transaction state of ``b`` and its transaction's first offset (:func:`walk_batches`)."""
    return states.get((b.broker, b.base_offset), _PLAIN)


def leader_zones(zones: list[Row]) -> list[tuple[int, list[Row], int, dict[int, int]]]:
    """The zones by leader (the election's candidates, or the partition's leader), in leader order: the
    leader, its zones, their lowest start (no batch ending below it is looked at) and each follower's own
    zone start (a batch wholly below it is none of that follower's loss)."""
    by_leader: dict[int, list[Row]] = {}
    for z in zones:
        by_leader.setdefault(z["leader"], []).append(z)
    return [
        (leader, zs, min(z["from"] for z in zs), {z["broker"]: z["from"] for z in zs})
        for leader, zs in sorted(by_leader.items())
    ]


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
    for leader, zs, zone_lo, own in leader_zones(zones):
        first = zs[0]
        lu = (first["leader_unreadable_from"], first["leader_unreadable_to"])
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
                if b.last_offset < zone_lo or inside(b.base_offset, b.last_offset, *lu):
                    continue
                if leader_sig.get(b.base_offset) == b.sig:
                    continue
                start = max(b.base_offset, own.get(broker, b.base_offset))
                if start > b.last_offset:
                    continue  # below this replica's own zone start (another's starts lower): not its loss
                chw = committed_hw[(b.base_offset, b.sig)]
                below_hw, above_hw = start < chw, b.last_offset >= max(start, chw)
                yield Lost(
                    b,
                    replica,
                    leader,
                    first["leader_source"],
                    state_of(states, b),
                    chw,
                    start,
                    below_hw,
                    above_hw,
                )


def _marker(b: Lost) -> tuple:
    return (
        b["base_offset"],
        MARKER_NAMES[COMMIT] if b["control_type"] == COMMIT else MARKER_NAMES[ABORT],
        b["producer_id"],
        b["producer_epoch"],
        b["txn_first"] if b["txn_first"] is not None else b["base_offset"],
        b["leader_epoch"],
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
    for kind, flag in (("committed", "below_hw"), ("uncommitted", "above_hw")):
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
        "epochs": sorted({b["leader_epoch"] for b in run}),
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
        "leader_epoch",
        "committed_hw",
        "start",
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "txn_state",
    )
    return [
        {k: b[k] for k in keys} for b in lost if b["below_hw"] and b["txn_state"] in VISIBLE_TO_READ_COMMITTED
    ]


def open_transactions(summary: list[Row], walked: Walked) -> list[Row]:
    """The transactions open on the current leader (no COMMIT/ABORT marker of their producer after them in
    its log: :func:`walk_batches`), each with the first marker of its producer after its first offset on every
    other replica and how many there are (KA713/KA714, ``auditor.spark.hanging``).

    Those markers are all among the held rows: a chunk the replicas agree on holds the same batches on the
    leader, and a marker of the producer there after the transaction's first offset would have ended it."""
    leader = next((s for s in summary if s["is_leader"] and s["topic"] != METADATA_TOPIC), None)
    if leader is None:
        return []
    out = []
    for pid, o in sorted(walked.opened.get(leader["broker"], {}).items()):
        first_offset, producer_epoch = o.first
        markers = []
        for broker, batches in sorted(walked.by_broker.items()):
            if broker == leader["broker"]:
                continue
            found = [
                (b.base_offset, b.control_type, b.producer_epoch)
                for b in batches
                if b.producer_id == pid and b.base_offset > first_offset and is_end_marker(b)
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
                "last_offset": o.last_offset,
                "records": o.records,
                "batches": o.batches,
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
