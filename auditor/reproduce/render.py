"""A ``reproduce`` run as text: one row per topic-partition (records, offsets, bytes, what the checks found),
the records left out with their offsets and why, then the verdict line."""

from __future__ import annotations

from auditor.reproduce.plan import PartitionPlan, Plan
from auditor.reproduce.records import HEADER
from auditor.text import visible

COLUMNS = (
    "partition",
    "records",
    "offsets",
    "bytes",
    "already there",
    "superseded",
    "left out",
    "to produce",
)
LISTED_RANGES = 8
"""Offset ranges listed per partition and reason before ``and N more``."""


def spans(offsets: list[int]) -> str:
    """Offsets as ranges (``10, 12..13``), the first :data:`LISTED_RANGES` of them."""
    ranges: list[list[int]] = []
    for offset in sorted(set(offsets)):
        if ranges and offset == ranges[-1][1] + 1:
            ranges[-1][1] = offset
        else:
            ranges.append([offset, offset])
    shown = [f"{lo}..{hi}" if hi != lo else str(lo) for lo, hi in ranges[:LISTED_RANGES]]
    more = len(ranges) - LISTED_RANGES
    return ", ".join(shown) + (f" and {more} more range(s)" if more > 0 else "")


def _records(n: int) -> str:
    return f"{n} record" + ("" if n == 1 else "s")


def superseded(p: PartitionPlan) -> list[int]:
    """Offsets of records left out as superseded (not those already there)."""
    present = {e.offset for e in p.entries if e.fingerprint in p.present}
    return sorted(p.superseded - present)


def row(p: PartitionPlan, include_superseded: bool) -> tuple[str, ...]:
    """The table row of one partition."""
    first, last = p.first_offset, p.last_offset
    offsets = "-" if first is None else (str(first) if first == last else f"{first}..{last}")
    there = sum(1 for e in p.entries if e.fingerprint in p.present)
    left_out = len(p.unreadable) + len(p.keyless())
    todo = p.to_produce(include_superseded)
    return (
        visible(p.name),
        str(len(p.entries) + len(p.unreadable)),
        offsets,
        str(p.size),
        str(there),
        str(len(superseded(p))),
        str(left_out),
        str(len(todo)),
    )


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` under :data:`COLUMNS`, the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    out = []
    for r in [COLUMNS, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def notes(p: PartitionPlan, include_superseded: bool) -> list[str]:
    """What the checks found in one partition, one line each."""
    name = visible(p.name)
    out = []
    if p.scanned is not None:
        lo, hi = p.scanned
        read = f"offsets {lo}..{hi - 1}" if hi > lo else f"nothing (high watermark {hi})"
        there = sum(1 for e in p.entries if e.fingerprint in p.present)
        out.append(f"{name}: read {read} of the current leader; {there} of the records already there")
    gone = superseded(p)
    if gone:
        what = "produced anyway (--include-superseded)" if include_superseded else "left out"
        out.append(
            f"{name}: {_records(len(gone))} {what}: compacted topic and the key has a newer record on the "
            f"current leader: offsets {spans(gone)}"
        )
    keyless = p.keyless()
    if keyless:
        out.append(
            f"{name}: {_records(len(keyless))} left out: a null key, which a compacted topic refuses: "
            f"offsets {spans(keyless)}"
        )
    if p.unreadable:
        out.append(
            f"{name}: {_records(len(p.unreadable))} left out: the audit could not read their batch (error in "
            f"the file): offsets {spans(p.unreadable)}"
        )
    if p.timestamp_type == "LogAppendTime":
        out.append(
            f"{name}: the topic has message.timestamp.type=LogAppendTime: the broker gives the records "
            "its own time, not their original timestamp"
        )
    if p.too_old:
        out.append(
            f"{name}: records older than the topic's message.timestamp.before.max.ms ({p.before_max_ms} ms): "
            "the broker refuses them; raise it for the topic while producing them"
        )
    if p.produced:
        out.append(f"{name}: produced {_records(len(p.produced))} at offsets {spans(p.produced)}")
    for offset, error in p.failed[:LISTED_RANGES]:
        out.append(f"{name}: offset {offset} not produced: {visible(error)}")
    if len(p.failed) > LISTED_RANGES:
        out.append(f"{name}: and {len(p.failed) - LISTED_RANGES} more not produced")
    return out


def verdict(plan: Plan) -> str:
    """The last line: what the run did or would do."""
    parts = list(plan.partitions.values())
    todo = [(p, p.to_produce(plan.include_superseded)) for p in parts]
    count = sum(len(t) for _, t in todo)
    size = sum(e.size for _, t in todo for e in t)
    targets = sum(1 for _, t in todo if t)
    there = sum(len(p.present) for p in parts)
    where = f"{targets} partition" + ("" if targets == 1 else "s")
    if plan.executed:
        produced = sum(len(p.produced) for p in parts)
        failed = sum(len(p.failed) for p in parts)
        if failed:
            return (
                f"Produced {_records(produced)}; {_records(failed)} could not be produced (listed above): "
                "run the same command again, the records already produced are skipped."
            )
        if produced:
            return (
                f"Produced {_records(produced)} ({size} bytes) to {where}, each with the header {HEADER}. "
                "Run the command again without --execute to read them back: it must find every one there."
            )
    if count == 0:
        total = sum(len(p.entries) + len(p.unreadable) for p in parts)
        if there == total:
            return f"Nothing to produce: all {_records(there)} are already on the cluster (header {HEADER})."
        left = total - there
        return (
            f"Nothing to produce: {_records(there)} already on the cluster, {left} left out (listed above)."
        )
    return (
        f"Dry run: {_records(count)} ({size} bytes) would be produced to {where}, each with the header "
        f"{HEADER}. Produce them with --execute."
    )


def lines(plan: Plan, bootstrap: str) -> list[str]:
    """The whole output of a run."""
    cluster = f" of cluster {visible(plan.cluster)}" if plan.cluster else ""
    out = [f"Lost records{cluster} in {visible(plan.path)}, checked against {visible(bootstrap)}:", ""]
    parts = list(plan.partitions.values())
    if not parts:
        return [*out, "No records in the file.", "Nothing to produce."]
    out += table([row(p, plan.include_superseded) for p in parts])
    found = [n for p in parts for n in notes(p, plan.include_superseded)]
    if found:
        out += ["", *found]
    return [*out, "", verdict(plan)]
