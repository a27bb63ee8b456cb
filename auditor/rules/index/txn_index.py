"""KA22x: a segment's transaction index (``.txnindex``) against its transaction markers (spec §9, §17.4)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from auditor.findings import Severity
from auditor.kafka.transactions import ABORT, COMMIT, AbortedTxn, Batch, aborted_transactions
from auditor.observe.context import PartitionContext
from auditor.observe.segments import SegmentFacts
from auditor.rules.index.entries import (
    EXAMPLES,
    _stale_severity,
)
from auditor.rules.registry import Violation, rule
from parsers.errors import ParseError
from parsers.record_batch import ATTR_CONTROL, ATTR_TRANSACTIONAL
from parsers.segment import SegmentWalker

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
    load, reading the entries in order: an entry below the base offset makes Kafka recover the segment at
    load, even after a clean shutdown (it re-reads the segment, cuts it at its first invalid batch and
    rebuilds its indexes: KA406 says where); an unknown version met first throws a ``KafkaException`` that
    fails the log's load. A partial trailing entry is ignored by Kafka but was not written by it. A file whose
    name does not spell the offset with 20 digits is never opened by Kafka and is not checked here.
    What to do: copy the file; delete it on the broker so that recovery rebuilds it from the log's markers.
    References: KIP-98, KAFKA-10832, ``AbortedTxn``, ``TransactionIndex.sanityCheck``,
    ``LogSegment.updateTxnIndex``.
    """
    tx = seg.txn_index
    info = seg.files.txnindex if seg.files is not None else None
    if tx is None or (info is not None and not info.canonical):
        return
    name = os.path.basename(tx.path)
    if tx.sanity:  # met before any unknown version: Kafka recovers the segment and reads no further
        yield Violation(f"{name}: {tx.sanity}", file=tx.path, evidence={"sanityCheck": tx.sanity})
    if tx.error:
        if not tx.sanity:
            yield Violation(
                f"{name}: {tx.error}", file=tx.path, position=tx.error_offset, evidence={"error": tx.error}
            )
        return
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
