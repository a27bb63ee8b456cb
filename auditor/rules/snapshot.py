"""KA23x: producer state snapshots ``<offset>.snapshot`` (spec §10)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from auditor.findings import Severity
from auditor.observe.context import PartitionContext
from auditor.rules.registry import Violation, rule


@rule(
    "KA231",
    "snapshot.crc-mismatch",
    Severity.ERROR,
    "A producer state snapshot fails its CRC check",
    scope="partition",
)
def snapshot_crc(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.snapshot`` whose stored CRC-32C (over bytes 6 to the end) does not match its bytes.
    Why it matters: producer snapshots hold, per producer id, the epoch, last sequence and open transaction
    that idempotent and transactional producers depend on. Kafka rejects a corrupt snapshot
    (CorruptSnapshotException "Snapshot is corrupt (CRC is no longer valid)"), deletes it and falls back
    to an older snapshot or rebuilds producer state by re-reading the log, which is slow and, once
    retention has deleted older segments, loses the state (producers then get OutOfOrderSequence or
    UnknownProducerId errors and transactions may hang).
    What to do: copy the file; leave it to Kafka to discard and rebuild; check open transactions of the
    partition after the restart.
    References: KIP-98, KIP-360, ``ProducerStateManager.readSnapshot``.
    """
    for snap in part.producer_snapshots:
        decoded = snap.value
        if decoded is not None and not decoded.crc_valid:
            yield Violation(
                f"{os.path.basename(snap.path)}: stored CRC {decoded.crc}, computed {decoded.computed_crc}",
                file=snap.path,
                position=2,
                offset_end=snap.offset - 1,
                expected=decoded.crc,
                found=decoded.computed_crc,
                evidence={"entries": len(decoded.entries)},
            )


@rule(
    "KA232",
    "snapshot.unreadable",
    Severity.ERROR,
    "A producer state snapshot has an unknown version or does not decode",
    scope="partition",
)
def snapshot_unreadable(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.snapshot`` that Kafka cannot read: a version other than 1, fewer bytes than its
    header or than its declared entries, a negative entry count, or bytes after the last entry.
    Why it matters: Kafka's ``readSnapshot`` throws CorruptSnapshotException ("Snapshot contained an unknown
    file version", "Snapshot failed schema validation"); the snapshot is deleted and producer state rebuilt
    from the log, with the same consequences as KA231.
    What to do: copy the file; Kafka discards it at the next start; check idempotent/transactional producers
    of the partition afterwards.
    References: KIP-98, ``ProducerStateManager.readSnapshot``.
    """
    for snap in part.producer_snapshots:
        if snap.error is not None:
            yield Violation(
                f"{os.path.basename(snap.path)}: {snap.error.message}",
                file=snap.path,
                position=snap.error.offset,
                evidence={"error": snap.error.message, "size": snap.size},
            )


@rule(
    "KA233",
    "snapshot.beyond-log-end",
    Severity.WARNING,
    "A producer snapshot covers offsets beyond the log end offset",
    scope="partition",
)
def snapshot_beyond_leo(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``.snapshot`` whose offset (the exclusive end offset it covers) is above the partition's
    log end offset, or whose entries record a producer's last offset or open transaction at or above the
    snapshot's own offset (error: such a snapshot cannot have been taken).
    Why it matters: Kafka takes a snapshot at a segment roll, at shutdown (at the log end offset) and after
    recovery; a snapshot above the log end offset proves the log once reached that offset and lost its tail
    (truncation or crash). Kafka deletes such snapshots at load. Entries beyond the snapshot offset
    contradict the snapshot's meaning.
    What to do: treat it as evidence of lost data: check KA401 (high watermark above the log end offset) and
    compare the replicas with ``audit``.
    References: KAFKA-9393, ``ProducerStateManager.removeStraySnapshots``,
    ``LogFileUtils.producerSnapshotFile``.
    """
    if part.is_metadata:
        return
    for snap in part.producer_snapshots:
        if snap.value is None or not snap.value.crc_valid:
            continue
        leo = part.leo_on_disk
        if snap.offset > leo:
            yield Violation(
                f"{os.path.basename(snap.path)} covers offsets up to {snap.offset}, but the log ends at "
                f"{leo}",
                file=snap.path,
                offset_start=leo,
                offset_end=snap.offset - 1,
                expected=f"snapshot offset <= {leo}",
                found=snap.offset,
            )
        worst = snap.highest_offset()
        if worst is not None and worst >= snap.offset:
            yield Violation(
                f"{os.path.basename(snap.path)} records producer state at offset {worst}, not below its own "
                f"offset {snap.offset}",
                severity=Severity.ERROR,
                file=snap.path,
                offset_start=worst,
                expected=f"lastOffset and currentTxnFirstOffset < {snap.offset}",
                found=worst,
            )
