"""What the index checks share: findings at an index entry, stale entries beyond a segment's data,
partial trailing entries and the time index's next slot."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np

from auditor.findings import Severity
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.registry import Violation

EXAMPLES = 5


def _walk_end(seg: SegmentFacts) -> int:
    """End of the last complete entry the walk read (the file size when the file ends cleanly)."""
    return seg.stop.position if seg.stop is not None else seg.size


def _data_end(seg: SegmentFacts) -> str:
    if seg.last_offset is None:
        return f"the segment holds no batch ({seg.size} bytes)"
    return f"the data ends at position {_walk_end(seg)}, last offset {seg.last_offset}"


def _stale_severity(seg: SegmentFacts, part: PartitionContext) -> Severity | None:
    return Severity.WARNING if part.rebuilt_by_recovery(seg) or part.recovered_at_load(seg) else None


def _recovery_note(seg: SegmentFacts, part: PartitionContext) -> str:
    if part.rebuilt_by_recovery(seg):
        return "recovery rebuilds this index at the next start (a crash artefact)"
    if part.recovered_at_load(seg):
        return f"Kafka rebuilds this index at load (the segment's {part.load_reason(seg)})"
    return (
        "recovery will not rebuild this index (clean shutdown marker or below the recovery point), so "
        "lookups "
        "use these entries"
    )


def _examples(idx: np.ndarray, *columns: np.ndarray) -> list[list[int]]:
    return [[int(c[i]) for c in columns] for i in idx[:EXAMPLES]]


def _more(count: int) -> str:
    return f" ({count} entries)" if count > 1 else ""


def _flagged(
    idx, classes: Callable[[SegmentFacts], dict[str, np.ndarray]], seg: SegmentFacts, key: str
) -> Iterator[tuple[np.ndarray, int]]:
    """The positions of the entries of ``idx`` in class ``key`` of ``classes(seg)`` and the first of them,
    once when there is any (never when the index is absent or empty)."""
    if idx is None or not len(idx):
        return
    bad = np.flatnonzero(classes(seg)[key])
    if len(bad):
        yield bad, int(bad[0])


def _located(
    idx, bad: np.ndarray, message: str, examples: tuple[np.ndarray, ...] = (), **fields
) -> Violation:
    """A finding at ``bad[0]``, the first flagged entry of ``idx``; with ``examples`` (columns of ``idx``) the
    evidence counts the flagged entries and shows the first few."""
    i = int(bad[0])
    if examples:
        fields["evidence"] = {"entries": len(bad), "examples": _examples(bad, *examples)}
    return Violation(
        message, file=idx.path, position=i * idx.entry_size, offset_start=int(idx.offsets[i]), **fields
    )


def _at_entry(idx, bad: np.ndarray, text: str, examples: tuple[np.ndarray, ...] = (), **fields) -> Violation:
    """:func:`_located`, worded "entry I of FILE ``text``" (and the count when more entries are flagged)."""
    message = f"entry {int(bad[0])} of {os.path.basename(idx.path)} {text}{_more(len(bad))}"
    return _located(idx, bad, message, examples, **fields)


def _stale_entries(
    seg: SegmentFacts,
    part: PartitionContext,
    idx,
    bad: np.ndarray,
    what: str,
    first: str,
    **fields,
) -> Violation:
    """KA205/KA215: the entries ``bad`` of ``idx`` ``what`` beyond the segment's data, ``first`` describing
    the first of them; a warning on a segment recovery rebuilds, an error elsewhere."""
    return _located(
        idx,
        bad,
        f"{len(bad)} entries of {os.path.basename(idx.path)} {what} beyond the segment's data "
        f"(first: {first}; {_data_end(seg)}); {_recovery_note(seg, part)}",
        severity=_stale_severity(seg, part),
        offset_end=int(idx.offsets[bad[-1]]),
        **fields,
    )


def _partial_entry(index):
    """A violation when an index file's length is not a whole number of entries."""
    if index is not None and index.trailing_bytes:
        entry_size = index.entry_size
        yield Violation(
            f"{os.path.basename(index.path)} is {index.size} bytes, {index.trailing_bytes} bytes past a "
            f"whole number of {entry_size}-byte entries",
            file=index.path,
            position=index.slots * entry_size,
            expected=f"a multiple of {entry_size} bytes",
            found=index.size,
            evidence={"sanityCheck": index.sanity},
        )


def _time_slot_disorder(seg: SegmentFacts) -> bool:
    ti = seg.time_index
    if ti is None or ti.next_slot is None or not len(ti):
        return False
    ts, off = ti.next_slot
    return ts != 0 and (ts <= int(ti.timestamps[-1]) or off < int(ti.offsets[-1]))
