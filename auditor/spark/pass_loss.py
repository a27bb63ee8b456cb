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
from auditor.spark.pass_held import HeldRows
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
    held: list[tuple[int, int]] = field(default_factory=list)
    """(broker, base offset) of the held rows."""


@dataclass
class Walked:
    """A partition's batch rows after :func:`walk_batches`: the held ones by broker (offset order), the
    transaction state of each held batch (:func:`state_of`) and, per broker and producer, the transaction
    open at the end of the replica's log (``_Open``)."""

    by_broker: HeldRows
    states: dict[tuple[int, int], tuple[str, int | None]]
    opened: dict[int, dict[int, _Open]]


def walk_batches(
    batches: Iterable[BatchRow], in_memory: int | None = None, chunk: int | None = None
) -> Walked:
    """One walk over a partition's batch rows in (broker, base offset) order, any iterable: the rows the
    pass compares (``held``) are kept (:class:`~auditor.spark.pass_held.HeldRows`: spilled past
    ``in_memory`` rows, ``chunk`` at a time), every other row (a transactional or control batch of a chunk
    where the replicas agree) only moves its producer's transaction on, as ``ProducerStateManager`` does,
    and is dropped.
    Memory: at most ``in_memory`` held rows, the state of each held transactional batch and one open
    transaction per producer, never the replica's whole log. The spill file is removed if the walk fails.

    A held batch's state is ``transactions.classify``'s in its replica's log (a data batch of an open
    transaction takes the state its producer's next COMMIT/ABORT marker gives, ``open`` without one) and,
    for a marker, the first offset of the data of the transaction it ends there (None when it has none).
    Rows out of order are refused (a wrong sort would misjudge states silently)."""
    by_broker = HeldRows(in_memory, chunk)
    states: dict[tuple[int, int], tuple[str, int | None]] = {}
    opened: dict[int, dict[int, _Open]] = {}
    prev: tuple[int, int] | None = None
    txns: dict[int, _Open] = {}
    try:
        for b in batches:
            key = (b.broker, b.base_offset)
            if prev is not None and key < prev:
                raise ValueError(f"batch rows out of (broker, offset) order: {key} after {prev}")
            if prev is None or key[0] != prev[0]:
                txns = opened.setdefault(b.broker, {})
            prev = key
            if b.held:
                by_broker.append(b)
            if b.is_control:
                if is_end_marker(b):
                    txn = txns.pop(b.producer_id, None)
                    if txn is not None:
                        state = COMMITTED if b.control_type == COMMIT else ABORTED
                        for h in txn.held:
                            states[h] = (state, None)
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
                    txn.held.append(key)
    except BaseException:
        by_broker.close()
        raise
    for txns in opened.values():
        for txn in txns.values():
            for h in txn.held:
                states[h] = (OPEN, None)
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


class _Cursor:
    """A replica's held rows whose last offset is at least ``zone_lo``, read forward: :meth:`at` gives those
    at a base offset (asked in non-decreasing order; the same one again gives the same rows)."""

    def __init__(self, rows: Iterable[BatchRow], zone_lo: int) -> None:
        self._it = (b for b in rows if b.last_offset >= zone_lo)
        self._head = next(self._it, None)
        self._base: int | None = None
        self._group: list[BatchRow] = []

    def at(self, base: int) -> list[BatchRow]:
        if base != self._base:
            head, it = self._head, self._it
            while head is not None and head.base_offset < base:
                head = next(it, None)
            group = []
            while head is not None and head.base_offset == base:
                group.append(head)
                head = next(it, None)
            self._head, self._base, self._group = head, base, group
        return self._group


def lost_batches(
    by_broker: Mapping[int, Iterable[BatchRow]],
    replicas: Mapping[int, Row],
    zones: list[Row],
    states: Mapping[tuple[int, int], tuple[str, int | None]],
) -> Iterator[Lost]:
    """Follower batches from each leader's zone start on that differ from that leader's batch at the same
    base offset (the last one there, in a log that repeats it): ``committed_hw`` (the highest HW checkpointed
    by any replica holding that same batch), ``start`` (where this replica differs inside the batch: its own
    zone start in compacted partitions), ``c`` (committed records lost) and ``u`` (uncommitted). ``zones``
    may name several leaders (the election's candidates); each leader is compared with its own followers. A
    batch that does not differ is left out: in a run of offsets it is a gap all the same. Each follower's
    rows (``by_broker``: in offset order, walked anew by each ``for``) are walked once per leader beside the
    other replicas' (:class:`_Cursor`): memory holds the rows at one base offset, whatever the partition's
    size. Yielded by leader, follower and offset."""
    for leader, zs, zone_lo, own in leader_zones(zones):
        first = zs[0]
        lu = (first["leader_unreadable_from"], first["leader_unreadable_to"])
        holders = [broker for broker in sorted(by_broker) if broker in replicas]
        for broker in holders:
            if broker == leader:
                continue
            replica = replicas[broker]
            chw_own = replica.get("hw") or 0
            others = [
                (other, replicas[other].get("hw") or 0, _Cursor(by_broker[other], zone_lo))
                for other in holders
                if other != broker
            ]
            for b in by_broker[broker]:
                if b.last_offset < zone_lo or inside(b.base_offset, b.last_offset, *lu):
                    continue
                base, sig, chw, same = b.base_offset, b.sig, chw_own, False
                for other, hw, cursor in others:
                    rows_ = cursor.at(base)
                    if other == leader and rows_ and rows_[-1].sig == sig:
                        same = True  # the leader's batch there is this one
                        break
                    if hw > chw:
                        for x in rows_:
                            if x.sig == sig:
                                chw = hw
                                break
                if same:
                    continue
                start = max(base, own.get(broker, base))
                if start > b.last_offset:
                    continue  # below this replica's own zone start (another's starts lower): not its loss
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
    """Runs of consecutive differing follower batches (:func:`lost_batches` rows of one partition, in its
    order: by leader, follower and offset, refused otherwise): ``committed`` (offsets below
    ``committed_hw``) and ``uncommitted`` (the rest), each with records by transaction state (plain and
    committed data in ``records``, whose offsets run ``lo..hi``; aborted, open; COMMIT/ABORT markers
    listed), the whole truncated span ``span_lo..span_hi``, bytes, batches, leader epochs, producers and batch
    timestamps; the committed runs first. A run ends at a batch that does not qualify or at a gap (the
    batches between are identical on the leader). Walked once, summed as it goes (:class:`_Run`): memory holds
    no run's batches."""
    out: dict[str, list[Row]] = {"committed": [], "uncommitted": []}
    open_: dict[str, _Run | None] = {"committed": None, "uncommitted": None}
    at: tuple | None = None
    prev_last = None
    for b in lost:
        key = (b.leader, b.b.broker)
        here = (key, b.b.base_offset)
        if at is not None and here < at:
            raise ValueError(f"lost batches out of (leader, broker, offset) order: {here} after {at}")
        if at is None or key != at[0]:
            for kind, run in open_.items():
                if run is not None:
                    out[kind].append(run.row())
                    open_[kind] = None
            prev_last = None
        at = here
        gap = prev_last is None or b["base_offset"] != prev_last + 1
        prev_last = b["last_offset"]
        for kind, flag in (("committed", "below_hw"), ("uncommitted", "above_hw")):
            run = open_[kind]
            if (not b[flag] or gap) and run is not None:
                out[kind].append(run.row())
                run = open_[kind] = None
            if b[flag]:
                if run is None:
                    run = open_[kind] = _Run(kind)
                run.add(b)
    for kind, run in open_.items():
        if run is not None:
            out[kind].append(run.row())
    return out["committed"] + out["uncommitted"]


def _smallest(values: list, n: int) -> list:
    """The ``n`` smallest of ``values``, sorted (trimmed as they come, so that a list stays under ``2n``)."""
    return sorted(values)[:n]


class _Run:
    """One run of :func:`lost_runs`, summed batch by batch (:meth:`add`) into its row (:meth:`row`)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.first: Lost | None = None
        self.span_lo: int | None = None
        self.span_hi: int | None = None
        self.counts = {PLAIN: 0, COMMITTED: 0, ABORTED: 0, OPEN: 0}
        self.counted_lo: int | None = None
        self.counted_hi: int | None = None
        self.markers = self.commit_markers = self.bytes = self.batches = 0
        self.lost_markers: list[tuple] = []
        self.producers: set[int] = set()
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.epochs: set = set()
        self.committed_hw: int | None = None

    def add(self, b: Lost) -> None:
        if self.first is None:
            self.first = b
        chw = b["committed_hw"]
        if self.kind == "committed":
            lo, hi = b["start"], min(b["last_offset"], chw - 1)
        else:
            lo, hi = max(b["start"], chw), b["last_offset"]
        self.span_lo = lo if self.span_lo is None else min(self.span_lo, lo)
        self.span_hi = hi if self.span_hi is None else max(self.span_hi, hi)
        state = b["txn_state"]
        if state in self.counts:
            n = min(hi - lo + 1, b["records_count"])
            self.counts[state] += n
            if state in VISIBLE_TO_READ_COMMITTED and n > 0:  # the range of the records ``records`` counts
                self.counted_lo = lo if self.counted_lo is None else min(self.counted_lo, lo)
                self.counted_hi = hi if self.counted_hi is None else max(self.counted_hi, hi)
        if state == MARKER:
            self.markers += 1
            self.commit_markers += b["control_type"] == COMMIT
            self.lost_markers.append(_marker(b))
            if len(self.lost_markers) > 2 * LOST_MARKERS_LISTED:
                self.lost_markers = _smallest(self.lost_markers, LOST_MARKERS_LISTED)
        else:
            if b["producer_id"] is not None and b["producer_id"] >= 0:
                self.producers.add(b["producer_id"])
                if len(self.producers) > 2 * PRODUCERS_LISTED:
                    self.producers = set(_smallest(list(self.producers), PRODUCERS_LISTED))
            ts = b["max_timestamp"]
            if ts is not None:
                self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
                self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.bytes += b["size"]
        self.batches += 1
        self.epochs.add(b["leader_epoch"])
        self.committed_hw = chw if self.committed_hw is None else max(self.committed_hw, chw)

    def row(self) -> Row:
        first = self.first
        assert first is not None
        return {
            "cluster": first["cluster"],
            "topic": first["topic"],
            "partition": first["partition"],
            "broker": first["broker"],
            "log_dir": first["log_dir"],
            "leader": first["leader"],
            "leader_source": first["leader_source"],
            "lo": self.span_lo if self.counted_lo is None else self.counted_lo,
            "hi": self.span_hi if self.counted_hi is None else self.counted_hi,
            "span_lo": self.span_lo,
            "span_hi": self.span_hi,
            "records": self.counts[PLAIN] + self.counts[COMMITTED],
            "bytes": self.bytes,
            "batches": self.batches,
            "epochs": sorted(self.epochs),
            "committed_hw": self.committed_hw,
            "aborted_records": self.counts[ABORTED],
            "open_records": self.counts[OPEN],
            "markers": self.markers,
            "commit_markers": self.commit_markers,
            "lost_markers": [
                dict(zip(_MARKER_FIELDS, m, strict=True))
                for m in _smallest(self.lost_markers, LOST_MARKERS_LISTED)
            ],
            "producer_ids": _smallest(list(self.producers), PRODUCERS_LISTED),
            "first_timestamp": self.first_ts,
            "last_timestamp": self.last_ts,
            "kind": self.kind,
        }


_EXPORTED = (
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


def export_row(b: Lost) -> Row | None:
    """The row of a lost batch whose records ``--export-lost`` decodes (committed records lost, plain or
    committed transactional data), None for any other."""
    if b["below_hw"] and b["txn_state"] in VISIBLE_TO_READ_COMMITTED:
        return {k: b[k] for k in _EXPORTED}
    return None


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
    opened = walked.opened.get(leader["broker"], {})
    # per other replica and open producer: its first end marker after the transaction's first offset, how many
    found: dict[tuple[int, int], list] = {}
    for broker in walked.by_broker:
        if broker == leader["broker"] or not opened:
            continue
        for b in walked.by_broker[broker]:
            o = opened.get(b.producer_id)
            if o is None or b.base_offset <= o.first[0] or not is_end_marker(b):
                continue
            marker = (b.base_offset, b.control_type, b.producer_epoch)
            seen = found.get((broker, b.producer_id))
            if seen is None:
                found[(broker, b.producer_id)] = [marker, 1]
            else:
                seen[0], seen[1] = min(seen[0], marker), seen[1] + 1
    for pid, o in sorted(opened.items()):
        first_offset, producer_epoch = o.first
        markers = []
        for (broker, p), (marker, count) in sorted(found.items()):
            if p == pid:
                base, control_type, epoch = marker
                markers.append((base, broker, control_type, epoch, count))
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
