"""The pass's comparisons as they were written over whole lists and dictionaries, before the held batch
rows could spill (``auditor.spark.pass_held``): the reference the streamed ones are proven equal to
(``tests/spark/test_pass_streamed.py``). Test code only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from auditor.kafka.topics import METADATA_TOPIC
from auditor.kafka.transactions import (
    ABORTED,
    COMMIT,
    COMMITTED,
    MARKER,
    OPEN,
    PLAIN,
    VISIBLE_TO_READ_COMMITTED,
    is_end_marker,
)
from auditor.rules.replica.model import LOST_MARKERS_LISTED, PRODUCERS_LISTED
from auditor.spark.pass_divergence import _at, _divergence, _readable, greatest, inside
from auditor.spark.pass_loss import _MARKER_FIELDS, _OPEN_MARKER, Walked, _marker, leader_zones, state_of
from auditor.spark.pass_rows import BatchRow, Lost, Row


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


def lag_counts(lag: Row, leader_batches: list[Row], leader_gap: list[Row] = ()) -> Row:
    """A lag row with the leader's records, bytes and batches from the follower's LEO ``from`` to the
    leader's ``to``, and the max timestamps of the first and newest of those batches; ``leader_gap``: the
    leader's digest rows of the chunks left to them (:class:`LagChunks`), wholly past the follower's LEO and
    after its first batch there (``compare.Compared.first_after_log_ends``)."""
    lo, hi = lag["from"], lag["to"]
    inside = [b for b in leader_batches if b["last_offset"] >= lo and b["base_offset"] < hi]
    gap = [d for d in leader_gap if d["last"] >= lo and d["first"] < hi]
    if any(d["first"] < lo for d in gap):
        raise ValueError(f"a lag chunk straddles the follower's log end offset {lo}")
    if gap and (not inside or min(d["first"] for d in gap) < min(b["base_offset"] for b in inside)):
        raise ValueError(f"the first batch from the follower's log end offset {lo} is in a lag chunk")
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
        )
        + sum(d["records"] for d in gap),
        "bytes": sum(b["size"] for b in inside) + sum(d["bytes"] for d in gap),
        "batches": len(inside) + sum(d["n"] for d in gap),
        "first_timestamp": first["max_timestamp"],
        "last_timestamp": greatest(
            *(b["max_timestamp"] for b in inside), *(d["last_timestamp"] for d in gap)
        ),
    }


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
