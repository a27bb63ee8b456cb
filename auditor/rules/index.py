"""KA2xx (KA20x-KA22x): a segment's offset index, time index and transaction index against its batches
(spec §7, §8, §9, §17.4).

Benign shapes that stay silent: a zero-filled (preallocated) tail of the active segment's indexes, offset
index entries of multi-batch follower appends (the offset of the last batch of the append, the position of
the first), and empty indexes of segments with a single append. Entries pointing past the data of a segment
that recovery will rebuild are warnings (a crash artefact Kafka repairs); elsewhere they are errors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np

from auditor.findings import Severity
from auditor.kafka.transactions import ABORT, COMMIT, AbortedTxn, Batch, aborted_transactions
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.registry import Violation, rule
from parsers.errors import ParseError
from parsers.record_batch import ATTR_CONTROL, ATTR_TRANSACTIONAL
from parsers.segment import SegmentWalker

EXAMPLES = 5


def _walk_end(seg: SegmentFacts) -> int:
    """End of the last complete entry the walk read (the file size when the file ends cleanly)."""
    return seg.stop.position if seg.stop is not None else seg.size


def _data_end(seg: SegmentFacts) -> str:
    if seg.last_offset is None:
        return f"the segment holds no batch ({seg.size} bytes)"
    return f"the data ends at position {_walk_end(seg)}, last offset {seg.last_offset}"


def _stale_severity(seg: SegmentFacts, part: PartitionContext) -> Severity | None:
    return Severity.WARNING if part.rebuilt_by_recovery(seg) else None


def _recovery_note(seg: SegmentFacts, part: PartitionContext) -> str:
    if part.rebuilt_by_recovery(seg):
        return "recovery rebuilds this index at the next start (a crash artefact)"
    return (
        "recovery will not rebuild this index (clean shutdown marker or below the recovery point), so "
        "lookups "
        "use these entries"
    )


def _examples(idx: np.ndarray, *columns: np.ndarray) -> list[list[int]]:
    return [[int(c[i]) for c in columns] for i in idx[:EXAMPLES]]


def _more(count: int) -> str:
    return f" ({count} entries)" if count > 1 else ""


def _flagged(idx, classes: Callable[[SegmentFacts], dict[str, np.ndarray]], seg: SegmentFacts, key: str):
    """Positions of the entries of ``idx`` in class ``key`` of ``classes(seg)``; none when the index is
    absent or empty."""
    if idx is None or not len(idx):
        return np.empty(0, dtype=np.intp)
    return np.flatnonzero(classes(seg)[key])


def _at_entry(
    idx, width: int, bad: np.ndarray, message: str, examples: tuple[np.ndarray, ...] = (), **fields
) -> Violation:
    """A finding at ``bad[0]``, the first flagged entry of ``idx`` (``width``-byte slots); with ``examples``
    (columns of ``idx``) the evidence counts the flagged entries and shows the first few."""
    i = int(bad[0])
    if examples:
        fields["evidence"] = {"entries": len(bad), "examples": _examples(bad, *examples)}
    return Violation(message, file=idx.path, position=i * width, offset_start=int(idx.offsets[i]), **fields)


def _stale_entries(
    seg: SegmentFacts,
    part: PartitionContext,
    idx,
    width: int,
    bad: np.ndarray,
    what: str,
    first: str,
    **fields,
) -> Violation:
    """KA205/KA215: the entries ``bad`` of ``idx`` ``what`` beyond the segment's data, ``first`` describing
    the first of them; a warning on a segment recovery rebuilds, an error elsewhere."""
    return _at_entry(
        idx,
        width,
        bad,
        f"{len(bad)} entries of {os.path.basename(idx.path)} {what} beyond the segment's data "
        f"(first: {first}; {_data_end(seg)}); {_recovery_note(seg, part)}",
        severity=_stale_severity(seg, part),
        offset_end=int(idx.offsets[bad[-1]]),
        **fields,
    )


# ------------------------------------------------------------------------------------------ offset index


def _partial_entry(index, entry_size: int):
    """A violation when an index file's length is not a whole number of ``entry_size``-byte entries."""
    if index is not None and index.trailing_bytes:
        yield Violation(
            f"{os.path.basename(index.path)} is {index.size} bytes, {index.trailing_bytes} bytes past a "
            f"whole number of {entry_size}-byte entries",
            file=index.path,
            position=index.slots * entry_size,
            expected=f"a multiple of {entry_size} bytes",
            found=index.size,
            evidence={"sanityCheck": index.sanity},
        )


@rule(
    "KA201",
    "index.size-not-multiple",
    Severity.ERROR,
    "The offset index size is not a multiple of 8 bytes",
    scope="segment",
)
def index_size(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.index`` file whose length is not a multiple of the 8-byte entry size.
    Why it matters: Kafka never writes a partial entry (entries are written whole into a memory map and the
    file is trimmed to 8 x entries); ``OffsetIndex.sanityCheck`` rejects the file ("Index file ... is corrupt,
    found N bytes which is neither positive nor a multiple of 8"), so tools and the remote index cache
    refuse it. It means the file was truncated or appended to by something other than Kafka.
    What to do: keep a copy; delete the ``.index`` file on the broker (Kafka rebuilds a missing offset index
    from the ``.log`` at the next start).
    References: KAFKA-7283, ``OffsetIndex.sanityCheck``.
    """
    yield from _partial_entry(seg.offset_index, 8)


@rule(
    "KA202",
    "index.entries-not-increasing",
    Severity.ERROR,
    "Offset index entries are not strictly increasing",
    scope="segment",
)
def index_not_increasing(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: real entries of a ``.index`` (before its zero padding) whose offsets or positions do not
    strictly increase.
    Why it matters: lookups binary-search the index by offset; Kafka's append refuses non-increasing offsets
    ("Attempt to append an offset (X) to position N no larger than the last offset appended (Y)"), so such
    entries were not written by Kafka's append path. A lookup may land on the wrong position and a fetch may
    skip records or return earlier ones. Concurrent lazy index loading corrupted indexes this way
    (KAFKA-9156).
    What to do: delete the ``.index`` file on the broker after copying it; Kafka rebuilds it from the log.
    References: KAFKA-9156, KAFKA-4451, ``LogSegment.append`` (index.interval.bytes), ``OffsetIndex``.
    """
    oi = seg.offset_index
    if oi is None or len(oi) < 2:
        return
    bad = np.flatnonzero((np.diff(oi.offsets) <= 0) | (np.diff(oi.positions) <= 0)) + 1
    if len(bad):
        i = int(bad[0])
        yield _at_entry(
            oi,
            8,
            bad,
            f"entry {i} of {os.path.basename(oi.path)} (offset {oi.offsets[i]}, position "
            f"{oi.positions[i]}) does not "
            f"follow entry {i - 1} (offset {oi.offsets[i - 1]}, position {oi.positions[i - 1]})"
            + _more(len(bad)),
            expected=f"offset > {oi.offsets[i - 1]} and position > {oi.positions[i - 1]}",
            found=f"offset {oi.offsets[i]}, position {oi.positions[i]}",
            examples=(oi.offsets, oi.positions),
        )


def _offset_index_classes(seg: SegmentFacts) -> dict[str, np.ndarray]:
    oi = seg.offset_index
    assert oi is not None
    off, pos = oi.offsets, oi.positions
    outside = off < seg.base_offset
    if seg.next_base is not None:
        outside |= off >= seg.next_base
    last = seg.last_offset if seg.last_offset is not None else seg.base_offset - 1
    stale = ~outside & ((pos >= _walk_end(seg)) | (off > last))
    rest = ~outside & ~stale
    not_boundary = rest & ~oi.at_batch
    at = rest & oi.at_batch
    past = at & (oi.batch_base > off)
    inside = at & ~past & (off < oi.batch_last)
    return {"outside": outside, "stale": stale, "boundary": not_boundary, "past": past, "inside": inside}


@rule(
    "KA203",
    "index.entry-outside-segment",
    Severity.ERROR,
    "An offset index entry names an offset outside its segment",
    scope="segment",
)
def index_outside(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a real ``.index`` entry whose offset is below the segment's base offset (a negative
    relative offset) or at or above the base offset of the next segment.
    Why it matters: an entry's offset is stored relative to the base offset in the file name; offsets outside
    ``[base offset, next segment base offset)`` cannot belong to this segment and Kafka's append would never
    write them. ``OffsetIndex.sanityCheck`` fails when the last slot is below the base offset. Lookups that
    land on such an entry read from the wrong place.
    What to do: delete the ``.index`` file on the broker after copying it; Kafka rebuilds it from the log.
    References: KAFKA-4451, KAFKA-7076, ``LogSegment.append`` (index.interval.bytes), ``OffsetIndex``,
    ``OffsetIndex.sanityCheck``.
    """
    oi = seg.offset_index
    bad = _flagged(oi, _offset_index_classes, seg, "outside")
    if len(bad):
        i = int(bad[0])
        upper = "" if seg.next_base is None else f", next segment base {seg.next_base}"
        yield _at_entry(
            oi,
            8,
            bad,
            f"entry {i} of {os.path.basename(oi.path)} points at offset {oi.offsets[i]}, outside the "
            "segment (base "
            f"offset {seg.base_offset}{upper})" + _more(len(bad)),
            expected=f"{seg.base_offset} <= offset"
            + ("" if seg.next_base is None else f" < {seg.next_base}"),
            found=int(oi.offsets[i]),
            evidence={
                "entries": len(bad),
                "sanityCheck": oi.sanity,
                "examples": _examples(bad, oi.offsets, oi.positions),
            },
        )


@rule(
    "KA204",
    "index.entry-not-at-batch",
    Severity.ERROR,
    "An offset index entry does not point at the batch holding its offset",
    scope="segment",
)
def index_not_at_batch(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a real ``.index`` entry (offset O, position P) inside the segment's data where P is not the
    start of a batch, or where the batch at P starts after O (the entry points past the records of O), or,
    as a warning, where O falls inside the batch at P but is not its last offset. An entry whose offset is
    the last offset of a later batch of the same append (follower and KRaft multi-batch appends) is normal
    and not reported.
    Why it matters: a fetch for offset T finds the greatest entry with O <= T and reads forward from P. An
    entry pointing into the middle of a batch makes the read fail; one pointing past O's batch makes
    fetches of offsets between the batch and O skip records. Kafka's append and recovery always index a
    batch's last offset (``kafka-dump-log --verify-index-only`` reports these as mismatches).
    What to do: delete the ``.index`` file on the broker after copying it; Kafka rebuilds it from the log.
    References: KAFKA-7487, KAFKA-9156, ``LogSegment.append`` (index.interval.bytes), ``OffsetIndex``,
    ``LogSegment.recover`` (rebuilds the indexes), ``DumpLogSegments``.
    """
    oi = seg.offset_index
    if oi is None or not len(oi):
        return
    classes = _offset_index_classes(seg)
    name = os.path.basename(oi.path)
    for key, severity in (("boundary", None), ("past", None), ("inside", Severity.WARNING)):
        bad = np.flatnonzero(classes[key])
        if not len(bad):
            continue
        i = int(bad[0])
        o, p = int(oi.offsets[i]), int(oi.positions[i])
        if key == "boundary":
            text = (
                f"entry {i} of {name} (offset {o}) points at position {p}, which is not the start of a batch"
            )
            expected, found = "the position of a batch boundary", p
        elif key == "past":
            text = (
                f"entry {i} of {name} maps offset {o} to position {p}, where the batch starts at offset "
                f"{oi.batch_base[i]}: lookups of offsets {o}..{int(oi.batch_base[i]) - 1} would skip records"
            )
            expected, found = f"a batch holding offset {o} at or before position {p}", int(oi.batch_base[i])
        else:
            text = (
                f"entry {i} of {name} maps offset {o} to position {p}, inside the batch "
                f"{oi.batch_base[i]}..{oi.batch_last[i]} rather than at its last offset"
            )
            expected, found = int(oi.batch_last[i]), o
        yield Violation(
            text + _more(len(bad)),
            severity=severity,
            file=oi.path,
            position=i * 8,
            offset_start=o,
            expected=expected,
            found=found,
            evidence={
                "entries": len(bad),
                "kind": key,
                "examples": _examples(bad, oi.offsets, oi.positions, oi.batch_base, oi.batch_last),
            },
        )


@rule(
    "KA205",
    "index.stale-entry",
    Severity.ERROR,
    "Offset index entries point beyond the last batch of the segment",
    scope="segment",
)
def index_stale(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: real ``.index`` entries whose position is at or past the end of the segment's complete
    batches, or whose offset is above the segment's last offset. On a segment that recovery will rebuild
    (active segment after a crash) this is a warning; on a segment below the recovery point or after a clean
    shutdown it is an error.
    Why it matters: index entries are written to a memory map before the data they point past reaches the
    disk; after a crash the index can describe records that were never written (the classic unclean-shutdown
    artefact, harmless because recovery rebuilds the indexes of the segments it re-reads). When no recovery
    runs, lookups of those offsets seek past the end of the data, and it means the ``.log`` lost data that
    was once indexed (or a clean-shutdown marker was written by mistake, KAFKA-10471).
    What to do: if recovery will run, nothing (but check KA401 for committed data lost from the tail); else
    delete the ``.index`` after copying it, and compare the log with the other replicas.
    References: KAFKA-10471, KAFKA-15375, KAFKA-9156, ``LogSegment.recover`` (rebuilds the indexes),
    ``DumpLogSegments``.
    """
    oi = seg.offset_index
    bad = _flagged(oi, _offset_index_classes, seg, "stale")
    if len(bad):
        i = int(bad[0])
        yield _stale_entries(
            seg,
            part,
            oi,
            8,
            bad,
            "point",
            f"offset {oi.offsets[i]} at position {oi.positions[i]}",
            expected=f"position < {_walk_end(seg)} and offset <= {seg.last_offset}",
            found=f"offset {oi.offsets[i]}, position {oi.positions[i]}",
            examples=(oi.offsets, oi.positions),
        )


@rule(
    "KA206",
    "index.garbage-after-padding",
    Severity.ERROR,
    "Non-zero bytes follow the zero padding of an index",
    scope="segment",
)
def index_garbage(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: an offset or time index whose real entries end (at the first all-zero slot) but which has
    non-zero bytes later in the file.
    Why it matters: Kafka writes entries one after the other into a zero-filled, preallocated file; after the
    last entry everything is zero until the file is trimmed. Bytes after a zero slot were not written by
    Kafka's append path: a corrupted page, a torn mmap flush after a crash, or overwritten data. Kafka
    itself treats every slot of a pre-existing index as an entry, so lookups may use the garbage.
    What to do: delete the index file on the broker after copying it; Kafka rebuilds it from the log.
    References: KAFKA-9156, ``AbstractIndex.resize``, ``AbstractIndex.trimToValidSize``.
    """
    for idx, size in ((seg.offset_index, 8), (seg.time_index, 12)):
        if idx is None or idx.garbage_after_padding is None or idx.garbage_after_padding >= idx.slots * size:
            continue  # garbage inside a trailing partial slot is KA201/KA211
        if size == 12 and getattr(idx, "next_slot", None) is not None and _time_slot_disorder(seg):
            continue  # reported as KA212
        yield Violation(
            f"{os.path.basename(idx.path)}: non-zero bytes at position {idx.garbage_after_padding}, after "
            "the "
            f"{len(idx)} real entries and their zero padding",
            file=idx.path,
            position=idx.garbage_after_padding,
            expected="zero bytes after the last real entry",
            found=f"non-zero byte at position {idx.garbage_after_padding}",
            evidence={"realEntries": len(idx), "slots": idx.slots},
        )


@rule(
    "KA207",
    "index.not-trimmed",
    Severity.INFO,
    "A rolled segment still has a preallocated (zero-padded) index",
    scope="segment",
)
def index_not_trimmed(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a segment that is not the last one whose ``.index`` or ``.timeindex`` still has the zero
    padding of a preallocated index (``segment.index.bytes``).
    Why it matters: Kafka trims an index to its real entries when the segment is rolled or the log is closed;
    a zero tail on an older segment means the broker crashed before the trim, or a truncation made an old
    segment active again (``LogSegment.truncateTo`` re-expands indexes). Harmless by itself, but it dates a
    crash or a truncation.
    What to do: nothing; use it to correlate with other findings on this partition.
    References: ``AbstractIndex.resize``, ``AbstractIndex.trimToValidSize``, ``LogSegment``.
    """
    if seg.is_last or seg.kind != "log":
        return
    for idx in (seg.offset_index, seg.time_index):
        if idx is not None and idx.preallocated and len(idx) < idx.slots:
            yield Violation(
                f"{os.path.basename(idx.path)} has {idx.padding_slots} zero slots after {len(idx)} real "
                "entries "
                "although the segment was rolled",
                file=idx.path,
                position=len(idx) * (8 if idx is seg.offset_index else 12),
                evidence={"realEntries": len(idx), "paddingSlots": idx.padding_slots, "size": idx.size},
            )


@rule(
    "KA208",
    "index.missing",
    Severity.WARNING,
    "A segment has no offset index (or no time index)",
    scope="segment",
)
def index_missing(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.log`` without its ``.index`` file (warning) or without its ``.timeindex`` (info).
    Why it matters: at load Kafka rebuilds a segment whose offset index is missing by re-reading it
    ("NoSuchFileException" path of ``LogLoader``) and creates an empty time index when that one is missing;
    a missing index on a copy of a log dir also suggests an incomplete copy (and the evidence of what the
    index held is gone).
    What to do: check that the copy of the log dir is complete; otherwise nothing, Kafka rebuilds indexes.
    References: KAFKA-7283, ``OffsetIndex.sanityCheck``, ``TimeIndex.maybeAppend``.
    """
    files = seg.files
    if files is None or seg.kind != "log":
        return
    if files.index is None:
        yield Violation(f"{os.path.basename(seg.path)} has no .index file", file=seg.path)
    if files.timeindex is None:
        yield Violation(
            f"{os.path.basename(seg.path)} has no .timeindex file", severity=Severity.INFO, file=seg.path
        )


# ------------------------------------------------------------------------------------------ time index


@rule(
    "KA211",
    "timeindex.size-not-multiple",
    Severity.ERROR,
    "The time index size is not a multiple of 12 bytes",
    scope="segment",
)
def timeindex_size(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.timeindex`` file whose length is not a multiple of the 12-byte entry size.
    Why it matters: Kafka writes whole 12-byte entries (timestamp, relative offset) and trims the file to
    12 x entries; ``TimeIndex.sanityCheck`` rejects other sizes ("Time index file ... is corrupt, found N
    bytes which is neither positive nor a multiple of 12"). The file was cut or extended by something else.
    What to do: delete the ``.timeindex`` on the broker after copying it; Kafka recreates it (empty, then
    rebuilt when the segment is recovered).
    References: KIP-33, ``TimeIndex.sanityCheck``.
    """
    yield from _partial_entry(seg.time_index, 12)


def _time_slot_disorder(seg: SegmentFacts) -> bool:
    ti = seg.time_index
    if ti is None or ti.next_slot is None or not len(ti):
        return False
    ts, off = ti.next_slot
    return ts != 0 and (ts <= int(ti.timestamps[-1]) or off < int(ti.offsets[-1]))


@rule(
    "KA212",
    "timeindex.not-increasing",
    Severity.ERROR,
    "Time index timestamps decrease (or its offsets do)",
    scope="segment",
)
def timeindex_not_increasing(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.timeindex`` slot whose timestamp is not greater than the previous entry's while not
    being zero padding, or entries whose offsets decrease.
    Why it matters: ``TimeIndex.maybeAppend`` only appends an entry whose timestamp is strictly greater than
    the last one and whose offset is not smaller; a decrease was not written by Kafka. Lookups by timestamp
    (``offsetsForTimes``, ListOffsets) binary-search the entries and return wrong offsets, and time-based
    retention reads the last entry (DumpLogSegments: "Found out of order timestamp").
    What to do: delete the ``.timeindex`` on the broker after copying it; Kafka rebuilds it when the segment
    is recovered.
    References: KIP-33, ``TimeIndex.maybeAppend``.
    """
    ti = seg.time_index
    if ti is None or not len(ti):
        return
    if _time_slot_disorder(seg):
        ts, off = ti.next_slot  # type: ignore[misc]
        i = len(ti)
        yield Violation(
            f"slot {i} of {os.path.basename(ti.path)} holds timestamp {ts} (offset {off}) after timestamp "
            f"{ti.timestamps[-1]} (offset {ti.offsets[-1]})",
            file=ti.path,
            position=i * 12,
            offset_start=off,
            expected=f"timestamp > {ti.timestamps[-1]} and offset >= {ti.offsets[-1]}",
            found=f"timestamp {ts}, offset {off}",
        )
    bad = np.flatnonzero(np.diff(ti.offsets) < 0) + 1
    if len(bad):
        i = int(bad[0])
        yield _at_entry(
            ti,
            12,
            bad,
            f"entry {i} of {os.path.basename(ti.path)} has offset {ti.offsets[i]} below the previous entry's "
            f"{ti.offsets[i - 1]}" + _more(len(bad)),
            expected=f"offset >= {ti.offsets[i - 1]}",
            found=int(ti.offsets[i]),
        )


def _time_classes(seg: SegmentFacts) -> dict[str, np.ndarray]:
    ti = seg.time_index
    assert ti is not None
    last = seg.last_offset if seg.last_offset is not None else seg.base_offset - 1
    stale = ti.offsets > last
    absent = ~stale & ~ti.found
    mismatch = ~stale & ti.found & (ti.batch_max_ts != ti.timestamps)
    return {"stale": stale, "absent": absent, "mismatch": mismatch}


@rule(
    "KA213",
    "timeindex.timestamp-mismatch",
    Severity.ERROR,
    "A time index entry's timestamp is not its batch's max timestamp",
    scope="segment",
)
def timeindex_mismatch(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.timeindex`` entry (T, O) where the batch whose last offset is O has a maxTimestamp
    other than T.
    Why it matters: each entry records the largest timestamp seen so far in the segment and the last offset
    of the batch holding it (``maxTimestampAndOffsetSoFar``); a mismatch means the index and the log
    disagree. Timestamp lookups (``offsetsForTimes``) and time-based retention (``retention.ms`` uses the
    segment's largest timestamp) then work on wrong values (DumpLogSegments: "Found timestamp mismatch").
    What to do: delete the ``.timeindex`` on the broker after copying it; compare the batch with the other
    replicas (``audit``): a maxTimestamp changed without a CRC change is impossible, so either the index or
    the batch was altered.
    References: KIP-33, ``TimeIndex``, ``DumpLogSegments`` (time index checks).
    """
    ti = seg.time_index
    bad = _flagged(ti, _time_classes, seg, "mismatch")
    if len(bad):
        i = int(bad[0])
        yield _at_entry(
            ti,
            12,
            bad,
            f"entry {i} of {os.path.basename(ti.path)} says timestamp {ti.timestamps[i]} for offset "
            f"{ti.offsets[i]}, "
            f"but that batch's maxTimestamp is {ti.batch_max_ts[i]}" + _more(len(bad)),
            expected=int(ti.batch_max_ts[i]),
            found=int(ti.timestamps[i]),
            examples=(ti.timestamps, ti.offsets, ti.batch_max_ts),
        )


@rule(
    "KA214",
    "timeindex.offset-not-in-log",
    Severity.ERROR,
    "A time index entry names an offset that is not the last offset of any batch",
    scope="segment",
)
def timeindex_absent(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.timeindex`` entry whose offset is within the segment's data but is not the last
    offset of any batch of the segment (including offsets below the segment's base offset).
    Why it matters: Kafka indexes the last offset of the batch holding the maximum timestamp; an offset that
    ends no batch was not produced by Kafka (DumpLogSegments: "The following indexed offsets are not found in
    the log"). Timestamp lookups return an offset that does not start a readable position.
    What to do: delete the ``.timeindex`` on the broker after copying it; Kafka rebuilds it.
    References: KIP-33, ``DumpLogSegments`` (time index checks).
    """
    ti = seg.time_index
    bad = _flagged(ti, _time_classes, seg, "absent")
    if len(bad):
        i = int(bad[0])
        yield _at_entry(
            ti,
            12,
            bad,
            f"entry {i} of {os.path.basename(ti.path)} (timestamp {ti.timestamps[i]}) names offset "
            f"{ti.offsets[i]}, "
            "which is not the last offset of any batch in the segment" + _more(len(bad)),
            expected="the last offset of a batch",
            found=int(ti.offsets[i]),
            examples=(ti.timestamps, ti.offsets),
        )


@rule(
    "KA215",
    "timeindex.stale-entry",
    Severity.ERROR,
    "Time index entries point beyond the last batch of the segment",
    scope="segment",
)
def timeindex_stale(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``.timeindex`` entries whose offset is above the last offset of the segment's complete
    batches: a warning on a segment recovery will rebuild, an error elsewhere.
    Why it matters: as for the offset index (KA205), time index entries reach the disk through the memory map
    independently of the log data; after a crash they may describe records that were never written. Without
    recovery, timestamp lookups return offsets that do not exist, and retention uses a maximum timestamp
    of lost data.
    What to do: if recovery will run, nothing; else delete the ``.timeindex`` after copying it, and compare
    the log with the other replicas.
    References: KAFKA-10471, KIP-33, ``LogSegment.recover`` (rebuilds the indexes), ``DumpLogSegments``.
    """
    ti = seg.time_index
    bad = _flagged(ti, _time_classes, seg, "stale")
    if len(bad):
        i = int(bad[0])
        yield _stale_entries(
            seg,
            part,
            ti,
            12,
            bad,
            "name offsets",
            f"timestamp {ti.timestamps[i]}, offset {ti.offsets[i]}",
            expected=f"offset <= {seg.last_offset}",
            found=int(ti.offsets[i]),
            examples=(ti.timestamps, ti.offsets),
        )


@rule(
    "KA216",
    "timeindex.missing-max-entry",
    Severity.WARNING,
    "A rolled segment's time index lacks the segment's maximum timestamp",
    scope="segment",
)
def timeindex_missing_max(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a segment that is not the last one whose largest batch maxTimestamp is greater than the
    timestamp of the last ``.timeindex`` entry (or whose time index is empty although its batches carry
    timestamps).
    Why it matters: when a segment is rolled Kafka appends a final entry with the segment's maximum
    timestamp (``onBecomeInactiveSegment``); at load the segment's largest timestamp is read back from that
    entry, and time-based retention (``retention.ms``) deletes the segment according to it. A missing entry
    makes retention delete the segment early, and dates a crash before the roll completed.
    What to do: nothing urgent; if retention matters, delete the ``.timeindex`` after copying it so that
    Kafka rebuilds it.
    References: KIP-33, ``TimeIndex.maybeAppend``.
    """
    ti = seg.time_index
    if seg.is_last or seg.kind != "log" or ti is None or seg.max_timestamp < 0 or seg.empty:
        return
    last_ts = int(ti.timestamps[-1]) if len(ti) else None
    if last_ts is None or last_ts < seg.max_timestamp:
        yield Violation(
            f"{os.path.basename(ti.path)} ends with timestamp {last_ts}, but the segment's largest batch "
            f"maxTimestamp is {seg.max_timestamp} (offset {seg.max_timestamp_offset})",
            file=ti.path,
            position=max(0, len(ti) - 1) * 12,
            offset_start=seg.max_timestamp_offset,
            expected=seg.max_timestamp,
            found=last_ts,
        )


# ------------------------------------------------------------------------------------------ txn index


_MARKER_TYPES = {"ABORT": ABORT, "COMMIT": COMMIT}


def _marker_batches(seg: SegmentFacts) -> list[Batch]:
    """The segment's COMMIT/ABORT markers (``seg.markers``) as batches of the transaction model."""
    return [
        Batch(off, off, pid, -1, True, True, _MARKER_TYPES[kind], 1)
        for off, pid, kind, _pos in sorted(seg.markers)
    ]


def _expected_entries(seg: SegmentFacts) -> set[tuple[int, int]]:
    """(producer id, last offset) of the ``.txnindex`` entries the segment's markers imply
    (``transactions.aborted_transactions``: one per ABORT marker, last offset = the marker's)."""
    return {(a.producer_id, a.last_offset) for a in aborted_transactions(_marker_batches(seg))}


def _segment_aborted(
    seg: SegmentFacts,
) -> tuple[dict[tuple[int, int], AbortedTxn], dict[int, list[int]]] | None:
    """The aborted transactions the segment's own batches imply (``transactions.aborted_transactions`` over
    its CRC-valid v2 transactional batches before where recovery stops, markers typed by ``seg.markers``)
    by (producer id, marker offset), and the end-marker offsets of each producer in the segment. None when
    the segment cannot be read again. Reads batch headers only, and only for segments with entries."""
    types = {(pid, off): _MARKER_TYPES[kind] for off, pid, kind, _pos in seg.markers}
    batches: list[Batch] = []
    try:
        walker = SegmentWalker(seg.path, max_bytes=seg.valid_end, stop_on_invalid=True)
        try:
            for block in walker.header_blocks():
                h = block.headers
                keep = (
                    block.crc_ok
                    & (h["magic"] == 2)
                    & ((h["attributes"].astype(np.int64) & ATTR_TRANSACTIONAL) != 0)
                )
                for row in h[keep]:
                    base, pid = int(row["base_offset"]), int(row["producer_id"])
                    control = bool(int(row["attributes"]) & ATTR_CONTROL)
                    batches.append(
                        Batch(
                            base,
                            base + int(row["last_offset_delta"]),
                            pid,
                            int(row["producer_epoch"]),
                            True,
                            control,
                            types.get((pid, base)) if control else None,
                            int(row["records_count"]),
                        )
                    )
        finally:
            walker.close()
    except (OSError, ParseError):
        return None
    ends: dict[int, list[int]] = {}
    for off, pid, _kind, _pos in seg.markers:
        ends.setdefault(pid, []).append(off)
    return {(a.producer_id, a.last_offset): a for a in aborted_transactions(batches)}, ends


@rule(
    "KA221",
    "txnindex.entry-without-marker",
    Severity.ERROR,
    "A transaction index entry has no ABORT marker in the log, or a wrong first offset",
    scope="segment",
)
def txn_entry_without_marker(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.txnindex`` entry (producer id, last offset) for which the segment holds no ABORT
    marker of that producer at that offset (or holds a COMMIT marker there); or an entry whose firstOffset
    is not where the aborted transaction's data begins (the first transactional batch of the producer after
    its previous COMMIT/ABORT marker, ``auditor.kafka.transactions``). The first offset is checked from the
    segment's own batches: when the transaction may have started in an earlier segment (no earlier marker
    of the producer in this segment, not the first segment) only a firstOffset inside this segment can be
    proved wrong; compacted partitions are not checked (the cleaner keeps entries whose data it removed).
    Why it matters: every entry records an aborted transaction whose ABORT marker was appended to this
    segment; consumers in read_committed mode use the entries to filter out aborted records. An entry
    without its marker hides records of a transaction that may have committed (data loss for
    read_committed consumers), or describes a marker lost from the log tail after a crash (then recovery
    rebuilds the index: warning). A firstOffset too low makes read_committed consumers drop the producer's
    committed records before the transaction; too high, they receive its first aborted records.
    What to do: compare the log around the offset with the other replicas (``audit``); delete the
    ``.txnindex`` on the broker only after copying it (recovery rebuilds it when the segment is re-read).
    References: KIP-98, KAFKA-10832, KAFKA-7866, ``TransactionIndex.sanityCheck``,
    ``LogSegment.updateTxnIndex``.
    """
    tx = seg.txn_index
    if tx is None or not tx.entries:
        return
    markers = {(pid, off): kind for off, pid, kind, _ in seg.markers}
    expected = _expected_entries(seg)
    walked_last = seg.last_offset if seg.last_offset is not None else seg.base_offset - 1
    model = None
    for i, entry in enumerate(tx.entries):
        kind = markers.get((entry.producer_id, entry.last_offset))
        if (entry.producer_id, entry.last_offset) in expected:
            if not part.compacted:
                model = model if model is not None else _segment_aborted(seg) or ({}, {})
                yield from _wrong_first_offset(seg, part, tx.path, i, entry, *model)
            continue
        severity = None
        if kind == "COMMIT":
            why = "the marker at that offset is a COMMIT"
        elif entry.last_offset > walked_last:
            why = f"the offset is beyond the segment's data (last offset {seg.last_offset})"
            severity = _stale_severity(seg, part)
        else:
            why = "no ABORT marker of that producer is at that offset"
        yield Violation(
            f"entry {i} of {os.path.basename(tx.path)} records an aborted transaction of producer "
            f"{entry.producer_id} ending at offset {entry.last_offset}, but {why}",
            severity=severity,
            file=tx.path,
            position=i * 34,
            offset_start=entry.first_offset,
            offset_end=entry.last_offset,
            expected=f"ABORT marker of producer {entry.producer_id} at offset {entry.last_offset}",
            found=kind or "no marker",
            evidence={"entry": entry.kafka_str()},
        )


def _wrong_first_offset(
    seg: SegmentFacts,
    part: PartitionContext,
    path: str,
    i: int,
    entry,
    model: dict[tuple[int, int], AbortedTxn],
    ends: dict[int, list[int]],
) -> Iterator[Violation]:
    """KA221's firstOffset check of entry ``i`` (its ABORT marker is in the segment)."""
    txn = model.get((entry.producer_id, entry.last_offset))
    if txn is None or entry.first_offset == txn.first_offset:
        return
    first_segment = seg.base_offset == min(
        (s.base_offset for s in part.dir.log_segments), default=seg.base_offset
    )
    started_here = first_segment or any(off < txn.first_offset for off in ends.get(entry.producer_id, ()))
    if entry.first_offset < seg.base_offset and not started_here:
        return  # the transaction may begin in an earlier segment: not provable from this one
    if started_here:
        where = f"its data begins at offset {txn.first_offset}"
        expected = f"firstOffset {txn.first_offset}"
    else:
        where = (
            f"its data in this segment begins at offset {txn.first_offset} (earlier data would put the "
            f"firstOffset below the segment's base offset {seg.base_offset})"
        )
        expected = f"firstOffset {txn.first_offset} or below {seg.base_offset}"
    yield Violation(
        f"entry {i} of {os.path.basename(path)} records the aborted transaction of producer "
        f"{entry.producer_id} ending at offset {entry.last_offset} as starting at offset "
        f"{entry.first_offset}, but {where}: read_committed consumers filter the wrong range",
        severity=_stale_severity(seg, part),
        file=path,
        position=i * 34,
        offset_start=min(entry.first_offset, txn.first_offset),
        offset_end=entry.last_offset,
        expected=expected,
        found=f"firstOffset {entry.first_offset}",
        evidence={"entry": entry.kafka_str()},
    )


@rule(
    "KA222",
    "txnindex.marker-without-entry",
    Severity.ERROR,
    "An ABORT marker in the log has no transaction index entry",
    scope="segment",
)
def txn_marker_without_entry(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: an ABORT transaction marker in the segment without the matching ``.txnindex`` entry
    (same producer id, last offset = the marker's offset), including segments with ABORT markers but no
    ``.txnindex`` file at all.
    Why it matters: the transaction index is how a read_committed fetch learns which records to drop; with
    the entry missing, consumers in read_committed mode receive the aborted records as if they were
    committed. Log recovery that used the wrong producer state left exactly this (KAFKA-10832).
    What to do: if the segment is at or above the recovery point and the log dir was not shut down cleanly,
    recovery rebuilds the index (warning); otherwise delete the ``.txnindex`` and the segment's ``.index``
    on the broker after copying them so that Kafka rebuilds the segment's indexes, and check which consumers
    read the aborted records.
    References: KIP-98, KAFKA-10832, KAFKA-7866, ``TransactionIndex.sanityCheck``,
    ``LogSegment.updateTxnIndex``.
    """
    if seg.kind != "log":
        return
    tx = seg.txn_index
    if tx is not None and tx.error:
        return  # the index cannot be read: KA223
    entries = {(e.producer_id, e.last_offset) for e in tx.entries} if tx is not None else set()
    expected = _expected_entries(seg)
    missing = [
        (off, pid, pos)
        for off, pid, _kind, pos in sorted(seg.markers)
        if (pid, off) in expected and (pid, off) not in entries
    ]
    if not missing:
        return
    off, pid, pos = missing[0]
    where = os.path.basename(tx.path) if tx is not None else "(no .txnindex file)"
    yield Violation(
        f"ABORT marker of producer {pid} at offset {off} (position {pos}) has no entry in {where}"
        + (f" ({len(missing)} markers)" if len(missing) > 1 else ""),
        severity=_stale_severity(seg, part),
        file=seg.path,
        position=pos,
        offset_start=off,
        offset_end=off,
        expected=f"a .txnindex entry (producerId {pid}, lastOffset {off})",
        found="no entry",
        evidence={"markers": len(missing), "examples": [list(m) for m in missing[:EXAMPLES]]},
    )


@rule(
    "KA223",
    "txnindex.corrupt",
    Severity.ERROR,
    "The transaction index does not pass Kafka's checks",
    scope="segment",
)
def txn_corrupt(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.txnindex`` that Kafka rejects (an entry version above 0, an entry whose last offset
    is below the segment's base offset), has impossible entries (first offset above last offset, last stable
    offset above last offset + 1), or ends in a partial entry (warning).
    Why it matters: ``TransactionIndex.sanityCheck`` is the one index check a Kafka 4.0 broker still runs at
    load; a failure makes Kafka rebuild the segment's indexes, and an unreadable version byte makes reads of
    aborted transactions fail. A partial trailing entry is ignored by Kafka but was not written by it.
    What to do: copy the file; delete it on the broker so that recovery rebuilds it from the log's markers.
    References: KIP-98, KAFKA-10832, ``AbortedTxn``, ``TransactionIndex.sanityCheck``,
    ``LogSegment.updateTxnIndex``.
    """
    tx = seg.txn_index
    if tx is None:
        return
    name = os.path.basename(tx.path)
    if tx.error:
        yield Violation(
            f"{name}: {tx.error}", file=tx.path, position=tx.error_offset, evidence={"error": tx.error}
        )
        return
    if tx.sanity:
        yield Violation(f"{name}: {tx.sanity}", file=tx.path, evidence={"sanityCheck": tx.sanity})
    for i, e in enumerate(tx.entries):
        if e.first_offset > e.last_offset or e.last_stable_offset > e.last_offset + 1:
            yield Violation(
                f"entry {i} of {name} is impossible: {e.kafka_str()}",
                file=tx.path,
                position=i * 34,
                offset_start=e.first_offset,
                offset_end=e.last_offset,
                expected="firstOffset <= lastOffset and lastStableOffset <= lastOffset + 1",
                found=e.kafka_str(),
            )
            break
    if tx.trailing_bytes:
        yield Violation(
            f"{name} ends with {tx.trailing_bytes} bytes of a partial 34-byte entry (ignored by Kafka)",
            severity=Severity.WARNING,
            file=tx.path,
            position=tx.size - tx.trailing_bytes,
            expected="a multiple of 34 bytes",
            found=tx.size,
        )
