"""KA20x: a segment's offset index (``.index``) against its batches (spec §7)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from auditor.findings import Severity
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.index.entries import (
    _at_entry,
    _examples,
    _flagged,
    _partial_entry,
    _stale_entries,
    _time_slot_disorder,
    _walk_end,
)
from auditor.rules.registry import Violation, rule


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
    yield from _partial_entry(seg.offset_index)


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
            bad,
            f"(offset {oi.offsets[i]}, position {oi.positions[i]}) does not follow entry {i - 1} (offset "
            f"{oi.offsets[i - 1]}, position {oi.positions[i - 1]})",
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
    for bad, i in _flagged(oi, _offset_index_classes, seg, "outside"):
        upper = "" if seg.next_base is None else f", next segment base {seg.next_base}"
        yield _at_entry(
            oi,
            bad,
            f"points at offset {oi.offsets[i]}, outside the segment (base offset {seg.base_offset}{upper})",
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
    for key, severity in (("boundary", None), ("past", None), ("inside", Severity.WARNING)):
        bad = np.flatnonzero(classes[key])
        if len(bad):
            yield _not_at_batch(oi, bad, key, severity)


def _not_at_batch(oi, bad: np.ndarray, key: str, severity: Severity | None) -> Violation:
    """KA204's finding for the entries ``bad`` of class ``key``."""
    i = int(bad[0])
    o, p = int(oi.offsets[i]), int(oi.positions[i])
    if key == "boundary":
        text = f"(offset {o}) points at position {p}, which is not the start of a batch"
        expected, found = "the position of a batch boundary", p
    elif key == "past":
        text = (
            f"maps offset {o} to position {p}, where the batch starts at offset {oi.batch_base[i]}: lookups "
            f"of offsets {o}..{int(oi.batch_base[i]) - 1} would skip records"
        )
        expected, found = f"a batch holding offset {o} at or before position {p}", int(oi.batch_base[i])
    else:
        text = (
            f"maps offset {o} to position {p}, inside the batch {oi.batch_base[i]}..{oi.batch_last[i]} "
            "rather than at its last offset"
        )
        expected, found = int(oi.batch_last[i]), o
    return _at_entry(
        oi,
        bad,
        text,
        severity=severity,
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
    for bad, i in _flagged(oi, _offset_index_classes, seg, "stale"):
        yield _stale_entries(
            seg,
            part,
            oi,
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
    for idx in (seg.offset_index, seg.time_index):
        garbage = None if idx is None else idx.garbage_after_padding
        if garbage is None or garbage >= idx.slots * idx.entry_size:
            continue  # garbage inside a trailing partial slot is KA201/KA211
        if idx is seg.time_index and idx.next_slot is not None and _time_slot_disorder(seg):
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
                position=len(idx) * idx.entry_size,
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
    Why it matters: at load Kafka recovers a segment whose offset index is missing, even after a clean
    shutdown (``LogSegment.sanityCheck`` throws ``NoSuchFileException``; ``LogLoader.loadSegmentFiles``
    logs "Could not find offset index file ..." and re-reads it): it truncates the segment at its first
    invalid batch, keeps the later segments and rebuilds the indexes (KA406 tells where it cuts). A missing
    time index is created empty. A missing index on a copy of a log dir also suggests an incomplete copy (and
    the evidence of what the index held is gone).
    What to do: check that the copy of the log dir is complete; if the segment holds invalid batches, copy
    it before the broker starts; otherwise nothing, Kafka rebuilds indexes.
    References: KAFKA-7283, ``LogSegment.sanityCheck``, ``LogLoader.loadSegmentFiles``,
    ``TimeIndex.maybeAppend``.
    """
    files = seg.files
    if files is None or seg.kind != "log":
        return
    if seg.base_offset in part.unindexed:
        cut = seg.truncate_bytes
        effect = f", truncating {cut} bytes at position {seg.valid_end}" if cut else ""
        yield Violation(
            f"{os.path.basename(seg.path)} has no .index file: Kafka recovers the segment at load{effect}",
            file=seg.path,
            position=seg.valid_end if cut else None,
            evidence={"truncateBytes": cut},
        )
    if files.timeindex is None:
        yield Violation(
            f"{os.path.basename(seg.path)} has no .timeindex file", severity=Severity.INFO, file=seg.path
        )
