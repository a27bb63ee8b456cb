"""KA1xx: the ``.log`` segments themselves, read the way Kafka's log recovery reads them (spec §2, §17.2,
§17.3).

Segment-scope checks run right after each segment is walked; the checks that need the whole partition
(overlaps between segments, epochs across segments, gaps and base offsets, which depend on compaction)
are partition-scope.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from auditor.findings import Severity
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.registry import Violation, rule
from parsers.files import open_regular_file

ZERO_PROBE = 1 << 20


def _name(seg: SegmentFacts) -> str:
    return os.path.basename(seg.path)


def _first_in_file(
    seg: SegmentFacts, position: int, message: str, count: int, more: str, **fields
) -> Violation:
    """A finding at byte ``position`` of ``seg`` for the first of ``count`` problems of one kind in the file;
    when there are more, the message ends with `` (<more>)``."""
    suffix = f" ({more})" if count > 1 else ""
    return Violation(message + suffix, file=seg.path, position=position, **fields)


def _recovery_effect(seg: SegmentFacts, part: PartitionContext) -> dict:
    """What Kafka's recovery does about an invalid entry of ``seg``."""
    later = [s.base_offset for s in part.dir.log_segments if s.base_offset > seg.base_offset]
    if seg.kind != "log":
        return {"recovery": "the KRaft snapshot is unusable; the node falls back to an older one or the log"}
    if part.recovered_at_load(seg):
        return {
            "recovery": f"truncates {seg.truncate_bytes} bytes at position {seg.valid_end} at load: the "
            f"segment's {part.load_reason(seg)}, so LogLoader.loadSegmentFiles recovers it; the later "
            "segments are kept",
            "truncateBytes": seg.truncate_bytes,
            "recoveredAtLoad": True,
        }
    if part.rebuilt_by_recovery(seg):
        return {
            "recovery": f"truncates {seg.truncate_bytes} bytes at position {seg.valid_end}",
            "truncateBytes": seg.truncate_bytes,
            "segmentsDeletedByRecovery": later,
        }
    return {
        "recovery": "none: the segment is below the recovery point or the log dir was shut down cleanly, so "
        "Kafka serves these bytes as they are (fetches fail with CorruptRecordException)",
        "truncateBytes": 0,
    }


@rule(
    "KA101",
    "segment.crc-mismatch",
    Severity.CRITICAL,
    "A record batch's stored CRC does not match its bytes",
    scope="segment",
)
def crc_mismatch(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: batches whose CRC-32C (bytes 21 to the end of the batch: attributes, offsets delta,
    timestamps, producer fields and records) differs from the stored ``crc`` field, for v2 batches, or whose
    CRC-32 differs for v0/v1 messages. Also applies to KRaft snapshot files.
    Why it matters: the batch's contents are not what the producer (or the leader) wrote. Log recovery stops
    at the first invalid batch ("Found invalid messages in log segment ... at byte offset N"), truncates the
    segment there and deletes every later segment, so everything after it is lost on the next start if the
    segment is at or above the recovery point. Below the recovery point recovery never re-reads it, and
    consumers and followers fetching it fail with CorruptRecordException. The CRC does not cover baseOffset
    and partitionLeaderEpoch, so a valid CRC does not vouch for those two fields.
    What to do: stop the broker before it restarts and recovery destroys the evidence; copy the partition
    directory; compare the batch with the other replicas (``kafka-auditor audit``) and, if a replica holds
    an intact copy, let it lead and re-replicate this one (delete the partition directory on this broker
    only after the copy is safe).
    References: KAFKA-8722, KAFKA-4384, KAFKA-9206, KAFKA-10101.
    """
    for bad in seg.crc_invalid:
        walk_end = seg.stop.position if seg.stop is not None else seg.size
        last_of_log = seg.is_last and bad["position"] + bad["size"] == walk_end
        severity = None
        if last_of_log and part.rebuilt_by_recovery(seg):
            severity = Severity.ERROR  # an unflushed, half-written last batch of a crashed active segment
        yield _first_in_file(
            seg,
            bad["position"],
            f"batch at position {bad['position']} (offsets {bad['baseOffset']}..{bad['lastOffset']}) fails "
            "its "
            f"CRC check: stored {bad['crc']}, computed {bad['computedCrc']}",
            seg.crc_invalid_count,
            f"{seg.crc_invalid_count} invalid batches in this file",
            severity=severity,
            offset_start=bad["baseOffset"],
            offset_end=bad["lastOffset"],
            epoch=bad["partitionLeaderEpoch"],
            expected=bad["crc"],
            found=bad["computedCrc"],
            evidence={"batch": bad, "invalidBatches": seg.crc_invalid_count, **_recovery_effect(seg, part)},
        )


@rule(
    "KA102",
    "segment.torn-tail",
    Severity.WARNING,
    "The segment ends in a partial batch that recovery would truncate",
    scope="segment",
)
def torn_tail(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: bytes after the last complete batch that do not form a whole entry: 17 bytes or fewer,
    or a last entry whose size runs past the end of the file. The finding gives how many bytes recovery
    would truncate.
    Why it matters: the broker stopped in the middle of a write (a crash or power loss with unflushed page
    cache). Recovery silently truncates the tail and the log end offset moves back; if the high watermark
    checkpoint is above the new log end offset, committed data was lost (see KA401). In a segment that is
    not the last one, or after a clean shutdown, a torn tail is not a crash artefact: recovery would delete
    every later segment ("Deleting segments as part of log recovery"). A segment whose offset index is
    missing, or whose transaction index fails its sanity check, is recovered at load, clean shutdown or not
    (``LogLoader.loadSegmentFiles``): its tail is cut and the later segments are kept.
    What to do: copy the directory before restarting the broker. Compare with the other replicas (``audit``)
    to see whether the missing offsets exist elsewhere; followers re-fetch them after the truncation if the
    leader has them.
    References: KAFKA-10471, KAFKA-15375, KAFKA-10101.
    """
    stop = seg.stop
    if stop is None or stop.reason != "torn-tail":
        return
    severity = None
    why = "a crash during a write"
    crash_tail = seg.is_last and part.rebuilt_by_recovery(seg)
    if seg.kind == "log" and part.recovered_at_load(seg) and not crash_tail:
        severity, why = (
            Severity.ERROR,
            f"the segment's {part.load_reason(seg)}: Kafka recovers it at load, cutting these bytes and "
            "keeping the later segments",
        )
    elif not seg.is_last and seg.kind == "log":
        severity, why = (
            Severity.ERROR,
            "this is not the last segment: recovery would delete all later segments",
        )
    elif seg.kind == "log" and not part.rebuilt_by_recovery(seg):
        severity, why = (
            Severity.ERROR,
            (
                "recovery will not run on this segment (clean shutdown marker or below the recovery "
                "point), so the "
                "broker would append after garbage"
            ),
        )
    yield Violation(
        f"{stop.trailing_bytes} trailing bytes at position {stop.position} do not form a complete batch "
        f"({stop.message}); {why}",
        severity=severity,
        file=seg.path,
        position=stop.position,
        offset_start=seg.recovered_next_offset,
        expected=f"a batch boundary at the end of the file ({seg.size} bytes)",
        found=f"{stop.trailing_bytes} bytes of a partial entry at position {stop.position}",
        evidence={"trailingBytes": stop.trailing_bytes, **_recovery_effect(seg, part)},
    )


def _all_zero(path: str, position: int, size: int) -> bool | None:
    """Whether the bytes from ``position`` are zero (first MiB only); None when unreadable."""
    try:
        with open_regular_file(path) as fh:
            fh.seek(position)
            chunk = fh.read(min(size - position, ZERO_PROBE))
    except OSError:
        return None
    return bool(chunk) and not chunk.strip(b"\x00")


@rule(
    "KA103",
    "segment.invalid-entry",
    Severity.ERROR,
    "An entry with an impossible size or magic stops the log",
    scope="segment",
)
def invalid_entry(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: an entry whose size field is below Kafka's minimum (14 bytes, or 61 for a v2 batch) or
    whose magic byte is not 0, 1 or 2, including a zero-filled region (size 0), and how many bytes from
    there to the end of the file recovery would truncate.
    Why it matters: Kafka's reader throws CorruptRecordException there. Recovery truncates the segment at
    that position and deletes all later segments; without recovery (segment below the recovery point or a
    clean shutdown) fetches from that position fail. A zero-filled tail of the active segment is what
    ``log.preallocate=true`` leaves after a crash (benign, recovery trims it); zeros inside a rolled segment
    are the cleaner bug KAFKA-5431.
    What to do: keep a copy of the segment; compare with the other replicas (``audit``); if the region is a
    zero-filled tail after a crash, restarting the broker lets recovery trim it.
    References: KAFKA-5431, KAFKA-6292, KAFKA-4384.
    """
    stop = seg.stop
    items = []
    if stop is not None and stop.reason == "corrupt" and seg.first_invalid is None:
        items.append((stop.position, stop.message or "corrupt entry", None))
    for bad in seg.bad_magic:
        items.append((bad["position"], f"unknown magic {bad['magic']}", bad))
    for position, message, batch in items:
        zeros = _all_zero(seg.path, position, seg.size) if batch is None else False
        severity = None
        if zeros and seg.is_last and part.rebuilt_by_recovery(seg):
            severity = Severity.WARNING
            message += " (zero-filled tail, as left by log.preallocate after a crash)"
        elif zeros:
            message += " (zero-filled region)"
        yield Violation(
            f"invalid entry at position {position}: {message}; {seg.size - position} bytes from here to "
            "the end "
            "of the file",
            severity=severity,
            file=seg.path,
            position=position,
            offset_start=seg.recovered_next_offset,
            evidence={
                "message": message,
                "bytesToEnd": seg.size - position,
                "zeroFilled": bool(zeros),
                **({"batch": batch} if batch else {}),
                **_recovery_effect(seg, part),
            },
        )


@rule(
    "KA105",
    "segment.offsets-not-increasing",
    Severity.ERROR,
    "Batch offsets go backwards or overlap inside a segment",
    scope="segment",
)
def offsets_not_increasing(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a CRC-valid batch whose base offset is not greater than the previous batch's last offset,
    or whose last offset is below its own base offset (a negative lastOffsetDelta).
    Why it matters: offsets are assigned by the leader in strictly increasing order; lookups binary-search
    the offset index and scan forward, so a regression makes fetches return the wrong records or skip some.
    The CRC does not cover baseOffset, so a flipped offset bit passes every CRC check. When recovery re-reads
    such a segment and the regression reaches an index append, Kafka throws InvalidOffsetException and
    empties the whole segment ("Found invalid offset during recovery. Deleting the corrupt segment").
    What to do: compare the batch with the other replicas (``audit``); a replica whose log is consistent
    should become the leader and this replica should be rebuilt from it.
    References: KAFKA-905, KAFKA-3047, KAFKA-3919, KAFKA-7866.
    """
    if seg.kind != "log":
        return
    for bad in seg.order_violations:
        prev = bad["previousLastOffset"]
        if bad["lastOffset"] < bad["baseOffset"]:
            text = (
                f"batch at position {bad['position']} ends ({bad['lastOffset']}) before it starts "
                f"({bad['baseOffset']})"
            )
            expected = f"lastOffset >= {bad['baseOffset']}"
        else:
            text = (
                f"batch at position {bad['position']} starts at offset {bad['baseOffset']}, not after the "
                "previous "
                f"batch's last offset {prev}"
            )
            expected = f"baseOffset > {prev}"
        if seg.order_violation_count > 1:
            text += f" ({seg.order_violation_count} such batches in this file)"
        yield Violation(
            text,
            file=seg.path,
            position=bad["position"],
            offset_start=bad["baseOffset"],
            offset_end=bad["lastOffset"],
            expected=expected,
            found=f"baseOffset {bad['baseOffset']}, lastOffset {bad['lastOffset']}",
            evidence={"previousLastOffset": prev, "violations": seg.order_violation_count},
        )


@rule(
    "KA109",
    "segment.offset-overflow",
    Severity.ERROR,
    "Offsets in the segment do not fit its 32-bit relative offset range",
    scope="segment",
)
def offset_overflow(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a batch whose last offset minus the segment's base offset (from the file name) exceeds
    2^31-1, the largest relative offset the offset and time indexes can store.
    Why it matters: such a segment cannot be indexed; Kafka raises LogSegmentOffsetOverflowException and, at
    load, splits the segment with the .cleaned/.swap protocol. It is the signature of cleaner or legacy
    segments written before the fixes of KAFKA-5413 and KAFKA-6264.
    What to do: let Kafka split the segment at the next start (it does so automatically) after taking a
    copy; check for leftover .cleaned/.swap files afterwards (KA503, KA504).
    References: KAFKA-5413, KAFKA-6264, KAFKA-4451.
    """
    if seg.kind != "log":
        return
    for bad in seg.overflow:
        yield Violation(
            f"batch at position {bad['position']} ends at offset {bad['lastOffset']}, "
            f"{bad['lastOffset'] - seg.base_offset} above the segment base offset {seg.base_offset}",
            file=seg.path,
            position=bad["position"],
            offset_start=bad["baseOffset"],
            offset_end=bad["lastOffset"],
            expected=f"lastOffset - {seg.base_offset} <= 2147483647",
            found=bad["lastOffset"] - seg.base_offset,
            evidence={"batches": seg.overflow_count},
        )


@rule(
    "KA110",
    "segment.control-record-invalid",
    Severity.ERROR,
    "A transaction marker batch does not decode",
    scope="segment",
)
def control_record_invalid(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a CRC-valid control batch with the transactional flag (a COMMIT/ABORT marker) whose
    records, control record key or end-transaction-marker value cannot be decoded.
    Why it matters: consumers in read_committed mode and the broker's producer-state rebuild read these
    markers to know which transactions ended; an undecodable marker makes reads of this offset fail
    (InvalidRecordException) and leaves the transaction's state unknown (the last stable offset may stay
    stuck, KAFKA-14402-like symptoms).
    What to do: dump the batch (``kafka-auditor dump --deep``) and compare with the other replicas.
    References: KIP-98, KAFKA-14402.
    """
    for bad in seg.marker_errors:
        yield Violation(
            f"transaction marker batch at position {bad['position']} does not decode: {bad['message']}",
            file=seg.path,
            position=bad["position"],
            evidence={"error": bad["message"]},
        )


@rule(
    "KA111",
    "segment.records-undecodable",
    Severity.ERROR,
    "A CRC-valid batch whose records do not decode",
    scope="segment",
    lifecycle="preview",
)
def records_undecodable(seg: SegmentFacts, part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a CRC-valid v2 data batch whose records section cannot be read the way a consumer reads
    it: invalid compression codec bits, a compressed stream that is damaged or decompresses past the
    auditor's 64 MiB limit (a decompression bomb), a record whose length, key, value or header lengths run
    past it (a key length of 2^30), or a record count that lies (fewer records than ``recordsCount``, or
    bytes left after that many). Runs with ``scan --deep`` (or ``--select KA111``): it decodes every
    record, which costs far more than the header walk of a default scan.
    Why it matters: the CRC-32C only proves the bytes are those the producer (or the leader, which
    validated them) wrote; Kafka's consumers and followers decode the records and fail on these batches
    with ``CorruptRecordException``/``InvalidRecordException`` ("Incorrect declared batch size", "Invalid
    record size"), so the partition cannot be consumed past this offset. Brokers validate records on produce
    (``LogValidator``), so such a batch came from a writer that bypassed validation or a tool that rewrote
    the segment and its CRC.
    What to do: dump the batch (``kafka-auditor dump --deep``: the marker names the byte where decoding
    failed); compare with the other replicas (``audit``); if every replica holds it, consumers must skip
    the batch's offsets (``kafka-consumer-groups.sh --reset-offsets --shift-by``).
    A batch declaring more than 1,048,576 records (``MAX_RECORDS_PER_BATCH``: the bound on the time one
    batch may cost; Kafka's own readers iterate any int32 count) is reported as a warning, not decoded.
    References: KIP-98 (record batch format), KAFKA-5316, KAFKA-7585.
    """
    for big in seg.not_decoded[:1]:
        yield _first_in_file(
            seg,
            big["position"],
            f"{_name(seg)}: records of the batch at offset {big['baseOffset']} (position {big['position']}) "
            f"were not checked: {big['reason']}",
            seg.not_decoded_count,
            f"{seg.not_decoded_count} such batches",
            severity=Severity.WARNING,
            evidence={
                "baseOffset": big["baseOffset"],
                "position": big["position"],
                "recordsCount": big["recordsCount"],
                "reason": big["reason"],
                "batches": seg.not_decoded_count,
            },
        )
    for bad in seg.undecodable[:1]:
        yield _first_in_file(
            seg,
            bad["position"],
            f"{_name(seg)}: records of the batch at offset {bad['baseOffset']} (position {bad['position']}) "
            f"do not decode at byte {bad['failedAt']}: {bad['reason']}",
            seg.undecodable_count,
            f"{seg.undecodable_count} such batches",
            evidence={
                "baseOffset": bad["baseOffset"],
                "position": bad["position"],
                "failedAt": bad["failedAt"],
                "reason": bad["reason"],
                "recordsCount": bad["recordsCount"],
                "batches": seg.undecodable_count,
                "examples": [
                    {k: b[k] for k in ("baseOffset", "position", "failedAt", "reason")}
                    for b in seg.undecodable[1:]
                ],
            },
        )


# ------------------------------------------------------------------------------------ partition scope


def _log_segments(part: PartitionContext) -> list[SegmentFacts]:
    return [s for s in part.segments if s.kind == "log"]


@rule(
    "KA104",
    "segment.base-offset-mismatch",
    Severity.ERROR,
    "The first batch's offset disagrees with the segment's file name",
    scope="partition",
)
def base_offset_mismatch(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a segment holding a batch whose base offset is below the base offset in its file name
    (error), or, in a partition without compaction, a segment whose first batch starts above it (warning).
    Why it matters: the file name is the segment's base offset: index entries store offsets relative to it
    and lookups choose the segment by it. A batch below it makes relative offsets negative and is never
    found by offset lookups. In a compacted log the first batch may legitimately start later (the cleaner
    removed the first records); elsewhere a later start means batches at the start of the segment are
    missing.
    What to do: check whether the segment was renamed or copied from another partition; compare with the
    other replicas (``audit``).
    References: KAFKA-6264, KAFKA-5413.
    """
    for seg in _log_segments(part):
        for bad in seg.below_base[:1]:
            yield Violation(
                f"{_name(seg)} holds a batch at offset {bad['baseOffset']} (position {bad['position']}) "
                "below its "
                f"base offset {seg.base_offset}"
                + (f" ({seg.below_base_count} such batches)" if seg.below_base_count > 1 else ""),
                file=seg.path,
                position=bad["position"],
                offset_start=bad["baseOffset"],
                offset_end=bad["lastOffset"],
                expected=f"baseOffset >= {seg.base_offset}",
                found=bad["baseOffset"],
            )
        if (
            not seg.below_base
            and seg.first_offset is not None
            and seg.first_offset > seg.base_offset
            and not part.compacted
        ):
            yield Violation(
                f"{_name(seg)} starts at offset {seg.first_offset}, not at its base offset "
                f"{seg.base_offset}, in a "
                "partition without compaction",
                severity=Severity.WARNING,
                file=seg.path,
                position=seg.first_position,
                offset_start=seg.base_offset,
                offset_end=seg.first_offset - 1,
                expected=seg.base_offset,
                found=seg.first_offset,
            )


@rule(
    "KA106",
    "segment.overlap",
    Severity.ERROR,
    "Two segments hold overlapping offsets",
    scope="partition",
)
def overlap(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a segment whose batches reach the base offset of the next segment (from its file name),
    or whose last offset is not below the next segment's first batch.
    Why it matters: Kafka keeps segments in a map keyed by base offset and assumes each segment's offsets end
    below the next one's base offset; overlapping segments serve the same offset twice or make a range
    unreachable, and the log end offset computed from the last segment is wrong. This is the on-disk shape
    of KAFKA-905 (duplicate offsets) and of a segment copied into the wrong directory.
    What to do: compare the overlapping batches with the other replicas (``audit``); rebuild this replica
    from a consistent one.
    References: KAFKA-905, KAFKA-3047.
    """
    segs = _log_segments(part)
    for prev, nxt in zip(segs, segs[1:], strict=False):
        if prev.last_offset is None:
            continue
        limit = nxt.base_offset
        if nxt.first_offset is not None:
            limit = min(limit, nxt.first_offset)
        if prev.last_offset >= limit:
            yield Violation(
                f"{_name(prev)} ends at offset {prev.last_offset}, but {_name(nxt)} starts at "
                f"{limit} (base offset {nxt.base_offset})",
                file=prev.path,
                offset_start=limit,
                offset_end=prev.last_offset,
                expected=f"last offset < {limit}",
                found=prev.last_offset,
                related=[{"file": nxt.path, "offsetStart": nxt.first_offset}],
            )


@rule(
    "KA107",
    "segment.epoch-regression",
    Severity.ERROR,
    "The partitionLeaderEpoch of batches goes backwards along the log",
    scope="partition",
)
def epoch_regression(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a batch whose partitionLeaderEpoch is lower than the previous batch's, within a segment
    or across a segment boundary (including epoch -1, unstamped, after stamped batches).
    Why it matters: leader epochs only grow (KIP-101); every batch is stamped by the leader of the epoch it
    was appended in. A regression means batches from an older leader sit after newer ones: a zombie or
    fenced leader appended to this replica, or truncation after a leader change did not happen (KAFKA-6880,
    KAFKA-7164). The epoch is outside the CRC, so a corrupt epoch passes CRC checks. Followers use epochs to
    find where they diverge; a wrong epoch makes that truncation wrong.
    What to do: compare the replicas with ``kafka-auditor audit`` to find which one holds the newer-epoch data
    at these offsets; do not let this replica lead.
    References: KIP-101, KIP-279, KIP-320, KAFKA-6880, KAFKA-7164, KAFKA-7601.
    """
    prev_epoch = None
    prev_seg = None
    for seg in _log_segments(part):
        runs = seg.epoch_runs
        first_epoch = runs[0][0] if runs else None
        if prev_epoch is not None and first_epoch is not None and first_epoch < prev_epoch and prev_seg:
            run = runs[0]
            yield Violation(
                f"{_name(seg)} starts with epoch {first_epoch} at offset {run[1]}, after epoch "
                f"{prev_epoch} at the "
                f"end of {_name(prev_seg)}",
                file=seg.path,
                position=run[3],
                offset_start=run[1],
                epoch=first_epoch,
                expected=f"partitionLeaderEpoch >= {prev_epoch}",
                found=first_epoch,
            )
        for bad in seg.epoch_regressions:
            yield _first_in_file(
                seg,
                bad["position"],
                f"batch at position {bad['position']} (offset {bad['baseOffset']}) has partitionLeaderEpoch "
                f"{bad['epoch']} after {bad['previousEpoch']}",
                seg.epoch_regression_count,
                f"{seg.epoch_regression_count} regressions in this file",
                offset_start=bad["baseOffset"],
                epoch=bad["epoch"],
                expected=f"partitionLeaderEpoch >= {bad['previousEpoch']}",
                found=bad["epoch"],
            )
        if runs:
            prev_epoch, prev_seg = runs[-1][0], seg


@rule(
    "KA108",
    "segment.offset-gap",
    Severity.WARNING,
    "Offsets are missing between consecutive batches of a log without compaction",
    scope="partition",
)
def offset_gap(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: consecutive batches (within a segment or across segments) where the next base offset is
    more than one above the previous last offset, in a partition with no sign of compaction (no cleaner
    checkpoint, no compacted batches, not an internal compacted topic).
    Why it matters: the leader assigns offsets without holes; only the log cleaner (compaction) removes
    records and leaves gaps. Without compaction a gap means batches were lost or removed from the middle of
    the log (a lost write, a hand-edited segment, or a deleted segment between two others).
    What to do: check whether the topic is compacted (cleanup.policy) — if so, ignore this finding for it
    (``--ignore KA108``); otherwise compare with the other replicas (``audit``) to recover the missing range.
    References: KAFKA-3919, ``LogSegment``.
    """
    if part.compacted:
        return
    segs = _log_segments(part)
    for seg in segs:
        for gap in seg.gaps[:1]:
            yield _first_in_file(
                seg,
                gap["position"],
                f"offsets {gap['missingFrom']}..{gap['missingTo']} are missing before the batch at position "
                f"{gap['position']}",
                seg.gap_count,
                f"{seg.gap_count} gaps, {seg.gap_offsets} offsets missing in this file",
                offset_start=gap["missingFrom"],
                offset_end=gap["missingTo"],
                expected=f"baseOffset {gap['missingFrom']}",
                found=gap["missingTo"] + 1,
                evidence={"gaps": seg.gap_count, "missingOffsets": seg.gap_offsets},
            )
    for prev, nxt in zip(segs, segs[1:], strict=False):
        if prev.last_offset is None or nxt.first_offset is None:
            continue
        if nxt.first_offset > prev.last_offset + 1:
            yield Violation(
                f"offsets {prev.last_offset + 1}..{nxt.first_offset - 1} are missing between {_name(prev)} "
                "and "
                f"{_name(nxt)}",
                file=nxt.path,
                position=nxt.first_position,
                offset_start=prev.last_offset + 1,
                offset_end=nxt.first_offset - 1,
                expected=f"baseOffset {prev.last_offset + 1}",
                found=nxt.first_offset,
            )
