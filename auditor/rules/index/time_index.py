"""KA21x: a segment's time index (``.timeindex``) against its batches (spec §8)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from auditor.findings import Severity
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.index.entries import (
    _at_entry,
    _flagged,
    _partial_entry,
    _stale_entries,
    _time_slot_disorder,
)
from auditor.rules.registry import Violation, rule


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
    yield from _partial_entry(seg.time_index)


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
            position=i * ti.entry_size,
            offset_start=off,
            expected=f"timestamp > {ti.timestamps[-1]} and offset >= {ti.offsets[-1]}",
            found=f"timestamp {ts}, offset {off}",
        )
    bad = np.flatnonzero(np.diff(ti.offsets) < 0) + 1
    if len(bad):
        i = int(bad[0])
        yield _at_entry(
            ti,
            bad,
            f"has offset {ti.offsets[i]} below the previous entry's {ti.offsets[i - 1]}",
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
    yield from _entries_not_in_log(seg, "mismatch")


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
    yield from _entries_not_in_log(seg, "absent")


def _entries_not_in_log(seg: SegmentFacts, key: str) -> Iterator[Violation]:
    """KA213 (``mismatch``: the batch ending at the entry's offset has another maxTimestamp) or KA214
    (``absent``: no batch ends there) for the entries of that class of :func:`_time_classes`."""
    ti = seg.time_index
    for bad, i in _flagged(ti, _time_classes, seg, key):
        ts, off = ti.timestamps[i], ti.offsets[i]
        if key == "mismatch":
            text = (
                f"says timestamp {ts} for offset {off}, but that batch's maxTimestamp is {ti.batch_max_ts[i]}"
            )
            expected, found = int(ti.batch_max_ts[i]), int(ts)
            columns = (ti.timestamps, ti.offsets, ti.batch_max_ts)
        else:
            text = (
                f"(timestamp {ts}) names offset {off}, which is not the last offset of any batch in the "
                "segment"
            )
            expected, found = "the last offset of a batch", int(off)
            columns = (ti.timestamps, ti.offsets)
        yield _at_entry(ti, bad, text, columns, expected=expected, found=found)


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
    for bad, i in _flagged(ti, _time_classes, seg, "stale"):
        yield _stale_entries(
            seg,
            part,
            ti,
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
            position=max(0, len(ti) - 1) * ti.entry_size,
            offset_start=seg.max_timestamp_offset,
            expected=seg.max_timestamp,
            found=last_ts,
        )
