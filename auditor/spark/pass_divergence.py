"""The pass's divergence: the replica pairs of a partition and their common range, the first batch (or,
compacted, record) that differs inside it, outside unreadable spans; and the leader-epoch ranges of each
replica from its chunk digests or its batch rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from auditor.spark.pass_rows import BatchRow, Row


def greatest(*values):
    present_ = [v for v in values if v is not None]
    return max(present_) if present_ else None


def _least(*values):
    present_ = [v for v in values if v is not None]
    return min(present_) if present_ else None


def inside(first: int, last: int, lo: int | None, hi: int | None) -> bool:
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
            base_lo = greatest(ra.get("log_start"), rb.get("log_start"))
            if compacted and without_records:
                lo = greatest(base_lo, ra.get("cleaner_offset") or 0, rb.get("cleaner_offset") or 0)
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
    return not inside(first, last, p["ua_from"], p["ua_to"]) and not inside(
        first, last, p["ub_from"], p["ub_to"]
    )


def _at(b: Row | None) -> Row | None:
    if b is None:
        return None
    return {
        "last_offset": b["last_offset"],
        "leader_epoch": b["leader_epoch"],
        "crc": b["crc"],
        "valid": b["valid"],
    }


def _divergence(p: Row, offset: int, mode: str, detail: Row) -> Row:
    keys = ("cluster", "topic", "partition", "a", "b", "lo", "hi")
    return {**{k: p[k] for k in keys}, "offset": offset, "mode": mode, "detail": detail}


def batch_divergence(p: Row, by_broker: Mapping[int, Iterable[BatchRow]]) -> Row | None:
    """The first base offset where pair ``p`` (mode ``batch``) holds different batches (a missing batch,
    other boundaries, another CRC or partitionLeaderEpoch; the last batch at a base offset in a log that
    repeats it) inside ``[lo, hi)``, outside unreadable spans: both replicas' rows (in offset order) walked
    once, side by side."""
    lo, hi = p["lo"], p["hi"]

    spans = p["ua_from"] is not None or p["ub_from"] is not None

    def held(broker: int) -> Iterator[BatchRow]:
        last = None
        for b in by_broker.get(broker, ()):
            if b.base_offset >= hi:
                break
            if b.last_offset < lo or (spans and not _readable(p, b.base_offset, b.last_offset)):
                continue
            if last is not None and b.base_offset != last.base_offset:
                yield last
            last = b
        if last is not None:
            yield last

    ia, ib = held(p["a"]), held(p["b"])
    a, b = next(ia, None), next(ib, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a.base_offset < b.base_offset):
            base, at_a, at_b = a.base_offset, a, None
        elif a is None or b.base_offset < a.base_offset:
            base, at_a, at_b = b.base_offset, None, b
        else:
            base, at_a, at_b = a.base_offset, a, b
        if (at_a.sig if at_a else None) != (at_b.sig if at_b else None):
            detail = {"base_offset": base, "a": _at(at_a), "b": _at(at_b), "hash_a": None, "hash_b": None}
            return _divergence(p, max(base, lo), "batch", detail)
        if at_a is not None:
            a = next(ia, None)
        if at_b is not None:
            b = next(ib, None)
    return None


def _cleaner_offset(value: int | None) -> int:
    return value if value is not None else -1


def _record_diverges(p: Row, ca: int, cb: int, offset: int, held: Mapping[int, int]) -> bool:
    """Pair ``p`` (mode ``record``, cleaner offsets ``ca`` and ``cb``, -1 when none) diverges at ``offset``,
    where the replicas hold the records ``held`` (broker -> hash): both hold a record and they differ, or one
    lacks a record at or above the other's cleaner offset (below it the cleaner may have removed it); inside
    ``[lo, hi)``, outside unreadable spans."""
    if not p["lo"] <= offset < p["hi"] or not _readable(p, offset, offset):
        return False
    a, b = held.get(p["a"]), held.get(p["b"])
    return (
        (a is not None and b is not None and a != b)
        or (a is not None and b is None and offset >= cb)
        or (b is not None and a is None and offset >= ca)
    )


def record_divergences(pairs: list[Row], records: Iterable[Row]) -> dict[int, Row]:
    """Compacted partitions: the first offset where each pair of mode ``record`` (by its index in ``pairs``)
    diverges (:func:`_record_diverges`), in one walk over the partition's record rows in offset order
    (``broker``, ``offset``, ``record_hash``): memory holds one offset's records, whatever the partition's
    size. A replica holding two records at one offset (a log that repeats offsets) counts the higher hash."""
    open_ = [
        (i, p, _cleaner_offset(p["cleaner_offset_a"]), _cleaner_offset(p["cleaner_offset_b"]))
        for i, p in enumerate(pairs)
        if p["mode"] == "record"
    ]
    found: dict[int, Row] = {}

    def judge(offset: int, held: dict[int, int]) -> None:
        nonlocal open_
        hit = [(i, p) for i, p, ca, cb in open_ if _record_diverges(p, ca, cb, offset, held)]
        for i, p in hit:
            hashes = {"hash_a": held.get(p["a"]), "hash_b": held.get(p["b"])}
            found[i] = _divergence(p, offset, "record", {"base_offset": None, "a": None, "b": None, **hashes})
        if hit:
            open_ = [pair for pair in open_ if pair[0] not in found]

    current: int | None = None
    held: dict[int, int] = {}
    for r in records:
        offset = r["offset"]
        if offset != current:
            if current is not None:
                if offset < current:
                    raise ValueError(f"record rows out of offset order: {offset} after {current}")
                if open_:
                    judge(current, held)
            current, held = offset, {}
        broker, value = r["broker"], r["record_hash"]
        held[broker] = max(held.get(broker, value), value)
    if current is not None and open_:
        judge(current, held)
    return found


def first_divergences(
    pairs: list[Row], by_broker: Mapping[int, list[Row]], records: Iterable[Row]
) -> list[Row]:
    """The first divergence of every pair with a non-empty common range (batch or record mode); ``records``:
    the partition's record rows in offset order, walked once (:func:`record_divergences`)."""
    compared = [p for p in pairs if p["lo"] is not None and p["hi"] is not None and p["lo"] < p["hi"]]
    by_record = record_divergences(compared, records)
    out = []
    for i, p in enumerate(compared):
        d = batch_divergence(p, by_broker) if p["mode"] == "batch" else by_record.get(i)
        if d is not None:
            out.append(d)
    return out


def digest_of(batches: Iterable[Row]) -> Iterator[Row]:
    """Digest rows of batch rows, one per batch as they go by (what Spark's digest scan sums per chunk), for
    :func:`epoch_ranges`."""
    return (
        {
            "broker": b["broker"],
            "leader_epoch": b["leader_epoch"],
            "first": b["base_offset"],
            "last": b["last_offset"],
            "records": b["records_count"],
            "bytes": b["size"],
            "n": 1,
            "first_timestamp": b["max_timestamp"],
            "last_timestamp": b["max_timestamp"],
        }
        for b in batches
    )


def epoch_ranges(digest: Iterable[Row]) -> list[Row]:
    """Per (broker, leader epoch of the batches): first and last offset, records, bytes, batches and the
    first and last batch max timestamps, from digest rows."""
    out: dict[tuple, Row] = {}
    for d in digest:
        key = (d["broker"], d["leader_epoch"])
        g = out.get(key)
        if g is None:
            out[key] = {
                "broker": d["broker"],
                "epoch": d["leader_epoch"],
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
            g["last"] = greatest(g["last"], d["last"])
            g["records"] = (g["records"] or 0) + (d["records"] or 0)
            g["bytes"] = (g["bytes"] or 0) + (d["bytes"] or 0)
            g["batches"] += d["n"]
            g["first_timestamp"] = _least(g["first_timestamp"], d["first_timestamp"])
            g["last_timestamp"] = greatest(g["last_timestamp"], d["last_timestamp"])
    return [out[k] for k in sorted(out)]
