"""KA3xx: text checkpoints and metadata files by Kafka's reading rules (spec §11, §12), and the leader-epoch
cache against the batches' partitionLeaderEpoch (spec §17.5).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from auditor.findings import Severity
from auditor.observe.context import LogDirContext, PartitionContext
from auditor.observe.files import ParsedFile
from auditor.rules.registry import Violation, rule

CHECKPOINT_CONSEQUENCE = {
    "replication-offset-checkpoint": (
        Severity.ERROR,
        "Kafka raises KafkaStorageException and takes the whole log dir offline",
    ),
    "recovery-point-offset-checkpoint": (
        Severity.WARNING,
        "Kafka logs the error, resets every recovery point to 0 and recovers every partition from its first "
        "segment",
    ),
    "log-start-offset-checkpoint": (
        Severity.WARNING,
        "Kafka logs the error and resets every log start offset to the base offset of the first segment",
    ),
    "cleaner-offset-checkpoint": (
        Severity.WARNING,
        "the log cleaner fails to read its progress and starts over",
    ),
}


def _error_violation(parsed: ParsedFile, what: str, severity: Severity | None = None) -> Violation:
    err = parsed.error
    assert err is not None
    return Violation(
        f"{os.path.basename(parsed.path or '')}: {err.message}; {what}",
        severity=severity,
        file=parsed.path,
        position=err.offset,
        evidence={"kafkaError": err.message},
    )


def _accepted_violation(parsed: ParsedFile, key: str, remarks: list[str], severity: Severity) -> Violation:
    """What Kafka reads in a file but never writes that way, listed in one finding (evidence ``key``)."""
    return Violation(
        f"{os.path.basename(parsed.path or '')}: {'; '.join(remarks)}",
        severity=severity,
        file=parsed.path,
        evidence={key: remarks},
    )


@rule(
    "KA301",
    "checkpoint.malformed",
    Severity.ERROR,
    "An offset checkpoint file is malformed by Kafka's reading rules",
    scope="logdir",
)
def checkpoint_malformed(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a ``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
    ``log-start-offset-checkpoint`` or ``cleaner-offset-checkpoint`` that Kafka's ``CheckpointFile`` reader
    rejects: a bad version line, a count that differs from the entry lines, a line with the wrong number of
    tokens (including an empty line), a number that does not parse, invalid UTF-8. The finding quotes
    Kafka's own error message and the byte offset of the line.
    Why it matters: the replication-offset-checkpoint holds every partition's high watermark; failing to read
    it takes the whole log dir offline (LogDirFailureChannel). A bad recovery-point checkpoint makes Kafka
    recover every partition from offset 0, a bad log-start checkpoint resets log start offsets. Checkpoints
    are written to ``.tmp`` then renamed, so a malformed file means disk corruption or a hand edit.
    What to do: if a ``.tmp`` leftover (KA507) holds a readable older version, compare both; otherwise
    remove the damaged lines (Kafka recomputes the values: high watermarks from the leaders, recovery
    points by recovery) after copying the file.
    References: KAFKA-1758, KAFKA-16541, ``CheckpointFile.read``, ``CheckpointFileWithFailureHandler``.
    """
    for name, parsed in sorted(ld.checkpoints.items()):
        if parsed.error is not None:
            severity, consequence = CHECKPOINT_CONSEQUENCE.get(name, (None, "Kafka cannot read it"))
            yield _error_violation(parsed, consequence, severity)


@rule(
    "KA302",
    "checkpoint.leader-epoch-malformed",
    Severity.ERROR,
    "A partition's leader-epoch-checkpoint is malformed",
    scope="partition",
)
def leader_epoch_malformed(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``leader-epoch-checkpoint`` that Kafka cannot load: malformed by the checkpoint rules
    (version, count, tokens, numbers) or holding a negative epoch or start offset ("Received invalid
    partition leader epoch entry").
    Why it matters: the leader epoch cache answers OffsetsForLeaderEpoch, which followers use to truncate to
    the right offset after a leader change (KIP-101). A file Kafka cannot read makes the partition fail to
    load and takes the log dir offline; an OS crash while the file was written without fsync left
    zero-length or NUL-filled files (KAFKA-16541).
    What to do: copy the file; rebuild it from the batches: one line ``epoch startOffset`` per leader epoch
    at the first offset stamped with it (``kafka-auditor dump`` of the segments shows each batch's
    partitionLeaderEpoch), or delete it and let the replica re-fetch from the leader.
    References: KIP-101, KAFKA-16541, KAFKA-15046, ``LeaderEpochCheckpointFile``, ``LeaderEpochFileCache``.
    """
    if part.leader_epochs.error is not None:
        yield _error_violation(part.leader_epochs, "the partition fails to load and its log dir goes offline")
    elif part.epoch_error is not None:
        err = part.epoch_error
        yield Violation(
            f"leader-epoch-checkpoint: {err.message}; Kafka throws IllegalArgumentException and the "
            "partition "
            "fails to load",
            file=part.leader_epochs.path,
            position=err.offset,
            evidence={"kafkaError": err.message},
        )


@rule(
    "KA303",
    "checkpoint.partition-metadata-malformed",
    Severity.ERROR,
    "A partition.metadata file is malformed",
    scope="partition",
)
def partition_metadata_malformed(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``partition.metadata`` that Kafka's reader rejects (lines that do not split on ``:``
    plus whitespace, a bad version, a topic ID that is not a base64url UUID, the zero UUID) and, as info, one
    that Kafka reads but never writes that way (extra lines, trailing newline, other key names).
    Why it matters: the file binds the directory to a topic ID (KIP-516); a malformed file raises
    KafkaStorageException and takes the log dir offline. Variants Kafka accepts still point at hand edits.
    What to do: restore the file from the topic ID in the cluster metadata (``version: 0`` newline
    ``topic_id: <id>``, no trailing newline) after copying it.
    References: KIP-516, ``PartitionMetadataFile``.
    """
    pm = part.partition_metadata
    if pm.error is not None:
        yield _error_violation(pm, "Kafka takes the log dir offline")
    elif pm.ok and pm.value.notes:
        yield _accepted_violation(pm, "notes", pm.value.notes, Severity.INFO)


@rule(
    "KA304",
    "checkpoint.meta-properties-invalid",
    Severity.ERROR,
    "The meta.properties file is missing or invalid",
    scope="logdir",
)
def meta_properties_invalid(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a log dir without ``meta.properties``; one Kafka cannot read (unknown version, missing
    node.id or cluster.id for version 1, unparsable directory.id); one that names no node: empty (0 bytes),
    stripped to comments and blank lines, or a version 0 file without ``broker.id``; and, as warnings, values
    Kafka accepts but that look wrong (reserved directory ID, cluster.id missing or not a UUID, unknown keys,
    ignored keys).
    Why it matters: ``meta.properties`` identifies the node and cluster owning the directory; a KRaft node
    refuses to start on a log dir without it ("No meta.properties found ... have you run kafka-storage.sh to
    format the directory?"), without a node or cluster ID ("Error: node ID not found in <dir>"; Kafka's
    reader takes an empty file for a version 0 file without ``broker.id``) or with inconsistent identities
    (MetaPropertiesEnsemble.verify). Without a node ID the auditor cannot tell which broker the findings
    belong to, and ``audit`` skips the log dir.
    What to do: restore it from a backup or another log dir of the same broker (same node.id and cluster.id,
    a fresh directory.id); check that the copy of the log dir is complete (an empty file often means the
    copy or the disk lost the file's data after a crash).
    References: KIP-631, KIP-858, ``MetaProperties``, ``MetaPropertiesEnsemble.verify``.
    """
    meta = ld.meta
    if not meta.present:
        if any(f.name == "meta.properties" for f in ld.inventory.special):
            return  # a FIFO, socket or device of that name: KA515 says what it is
        if ld.inventory.partitions or ld.inventory.checkpoints:
            yield Violation(
                f"no meta.properties in {ld.path}; a KRaft node refuses to start on this log dir",
                file=os.path.join(ld.path, "meta.properties"),
            )
        return
    if meta.error is not None:
        yield _error_violation(meta, "Kafka refuses to start on this log dir")
    elif meta.ok and (why := meta.value.identity_problem()) is not None:
        size = ld.inventory.meta_properties.size if ld.inventory.meta_properties else None
        what = "is empty (0 bytes)" if size == 0 and not meta.value.raw else why
        yield Violation(
            f"meta.properties {what}; no node ID: the log dir belongs to no broker and a KRaft node refuses "
            "to start on it",
            file=meta.path,
            evidence={"bytes": size, "properties": sorted(meta.value.raw), "problems": meta.value.problems},
        )
    elif meta.ok and meta.value.problems:
        yield _accepted_violation(meta, "problems", meta.value.problems, Severity.WARNING)


@rule(
    "KA305",
    "checkpoint.quorum-state-malformed",
    Severity.ERROR,
    "The KRaft quorum-state file is malformed",
    scope="partition",
)
def quorum_state_malformed(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``__cluster_metadata-0/quorum-state`` that Kafka's ``FileQuorumStateStore`` cannot read
    (not JSON, data_version outside 0..1, a mandatory field missing or of the wrong type).
    Why it matters: the file holds the node's KRaft election state (leader, epoch, vote); a node that cannot
    read it cannot join the metadata quorum, and a controller that lost its vote may vote twice in one
    epoch.
    What to do: copy the file; restore it from a backup, or remove it only on an observer broker (the
    broker re-learns the leader from the quorum).
    References: KIP-595, KIP-853, ``FileQuorumStateStore``.
    """
    qs = part.quorum_state
    if qs.error is not None:
        yield _error_violation(qs, "the node cannot rejoin the KRaft quorum")


@rule(
    "KA306",
    "checkpoint.suspicious-entry",
    Severity.WARNING,
    "An offset checkpoint holds entries Kafka accepts but never writes",
    scope="logdir",
)
def checkpoint_suspicious(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: offset checkpoint lines with a topic name that is not a legal Kafka topic name, the same
    partition listed twice, or a negative offset.
    Why it matters: Kafka writes one line per partition from its in-memory map; duplicates or illegal names
    point at corruption or tampering (Kafka keeps the last duplicate). A negative high watermark was a Kafka
    bug (KAFKA-3978) and makes the replica's initial high watermark wrong.
    What to do: compare the file with the partition directories and the other brokers; remove the bad lines
    after copying the file.
    References: KAFKA-3978, ``CheckpointFile.read``, ``CheckpointFileWithFailureHandler``,
    ``OffsetCheckpointFile``.
    """
    for name, parsed in sorted(ld.checkpoints.items()):
        if not parsed.ok:
            continue
        ckpt = parsed.value
        yield from _capped(_suspicious(name, parsed.path, ckpt), name, parsed.path, "suspicious entries")


def _suspicious(name: str, path: str, ckpt) -> Iterator[Callable[[], Violation]]:
    for warning in ckpt.warnings:
        yield lambda w=warning: Violation(f"{name}: {w}", file=path, evidence={"warning": w})
    for (topic, partition, offset), line_offset in zip(ckpt.entries, ckpt.line_offsets, strict=True):
        if offset < 0:
            yield lambda t=topic, p=partition, o=offset, at=line_offset: Violation(
                f"{name}: {t}-{p} has offset {o}",
                file=path,
                position=at,
                topic=t,
                partition=p,
                expected="offset >= 0",
                found=o,
            )


PER_FILE_CAP = 20
"""Findings of one kind per checkpoint file; past it one more finding gives the count (a 16 MB checkpoint
would otherwise make hundreds of thousands of findings)."""


def _capped(found: Iterator[Callable[[], Violation]], name: str, path: str, what: str) -> Iterator[Violation]:
    """The first :data:`PER_FILE_CAP` findings (built only for those), then one with the count of the rest."""
    more = 0
    for i, make in enumerate(found):
        if i < PER_FILE_CAP:
            yield make()
        else:
            more += 1
    if more:
        yield Violation(
            f"{name}: {more} more {what} (only the first {PER_FILE_CAP} are listed)",
            file=path,
            evidence={"notListed": more},
        )


@rule(
    "KA307",
    "checkpoint.orphan-entry",
    Severity.INFO,
    "An offset checkpoint lists a partition that has no directory here",
    scope="logdir",
)
def checkpoint_orphan(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: ``replication-offset-checkpoint`` or ``recovery-point-offset-checkpoint`` entries for a
    topic-partition without a live or ``-future`` directory in the same log dir.
    Why it matters: Kafka checkpoints only the partitions hosted in that log dir; an entry without a
    directory means the directory was removed (deleted topic not yet checkpointed, a partition moved away,
    or an incomplete copy of the log dir).
    What to do: check that the copy of the log dir is complete; otherwise nothing, Kafka drops the entry at
    its next checkpoint.
    References: ``OffsetCheckpointFile``, ``ReplicaManager.checkpointHighWatermarks``,
    ``LogManager.checkpointLogRecoveryOffsets``, ``LogManager.checkpointLogStartOffsets``.
    """
    hosted = {(p.topic, p.partition) for p in ld.inventory.partitions if p.kind in ("live", "future")}
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        ckpt = ld.checkpoint(name)
        if ckpt is None:
            continue
        path = os.path.join(ld.path, name)
        yield from _capped(_orphans(name, path, ckpt, hosted), name, path, "entries without a directory")


def _orphans(name: str, path: str, ckpt, hosted: set[tuple[str, int]]) -> Iterator[Callable[[], Violation]]:
    for (topic, partition, offset), line_offset in zip(ckpt.entries, ckpt.line_offsets, strict=True):
        if (topic, partition) not in hosted:
            yield lambda t=topic, p=partition, o=offset, at=line_offset: Violation(
                f"{name} lists {t}-{p} (offset {o}) but this log dir has no directory for it",
                file=path,
                position=at,
                topic=t,
                partition=p,
            )


# ------------------------------------------------------------------------------------------ epoch cache


def _head(items: list) -> list[list]:
    """The first :data:`PER_FILE_CAP` items as lists (evidence stays small for a file of a million lines)."""
    return [list(item) for item in items[:PER_FILE_CAP]]


def _listed(items: list) -> str:
    """``[[e, s], ...]`` of at most :data:`PER_FILE_CAP` items, with the count of the others."""
    more = len(items) - PER_FILE_CAP
    return f"{_head(items)}" + (f" and {more} more" if more > 0 else "")


def _cache(part: PartitionContext) -> list[tuple[int, int]] | None:
    if not part.leader_epochs.ok or part.normalized_epochs is None:
        return None
    return part.normalized_epochs.entries


def _cache_missing(part: PartitionContext) -> bool:
    return not part.leader_epochs.present


def _runs(part: PartitionContext) -> list[list[int]]:
    return [r for r in part.epoch_runs() if r[2] >= part.log_start_offset]


def _batches_in(runs: list[list[int]], start: int, end: int) -> list[int] | None:
    """The first run with stamped batches overlapping offsets [start, end)."""
    for run in runs:
        if run[1] < end and run[2] >= start:
            return run
    return None


@rule(
    "KA311",
    "epoch-cache.not-increasing",
    Severity.WARNING,
    "The leader-epoch-checkpoint entries are not strictly increasing",
    scope="partition",
)
def epoch_cache_not_increasing(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``leader-epoch-checkpoint`` lines whose epoch or start offset is not greater than an
    earlier line's, i.e. lines that Kafka's load-time ``assign`` drops or that make it drop earlier lines.
    Why it matters: in a consistent cache both epochs and start offsets strictly increase. Kafka repairs a
    disordered file silently when loading it ("New epoch entry ... caused truncation of conflicting entries"),
    which can erase the start of an epoch that followers need for their truncation; disorder on disk means a
    torn or stale asynchronous flush (KAFKA-15046, KAFKA-16541) or a hand edit.
    What to do: compare with the batches' partitionLeaderEpoch (``dump``) and with the other replicas'
    caches (``audit``).
    References: KIP-101, KAFKA-15046, KAFKA-16541, ``LeaderEpochCheckpointFile``, ``LeaderEpochFileCache``.
    """
    if part.normalized_epochs is None:
        return
    dropped = part.normalized_epochs.dropped
    if dropped:
        epoch, start, reason = dropped[0]
        yield Violation(
            f"leader-epoch-checkpoint entry ({epoch}, {start}) is dropped when Kafka loads the file: {reason}"
            + (f" ({len(dropped)} entries dropped)" if len(dropped) > 1 else ""),
            file=part.leader_epochs.path,
            epoch=epoch,
            offset_start=start,
            expected="strictly increasing epochs and start offsets",
            found=_head(part.leader_epochs.value.entries),
            evidence={"dropped": _head(dropped), "droppedCount": len(dropped)},
        )


@rule(
    "KA312",
    "epoch-cache.beyond-log-end",
    Severity.WARNING,
    "A leader epoch starts beyond the log end offset",
    scope="partition",
)
def epoch_cache_beyond_leo(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``leader-epoch-checkpoint`` entries whose start offset is above the log end offset. An
    entry starting exactly at the log end offset is normal (a leader elected for an epoch in which nothing
    was written yet, e.g. during a controlled shutdown) and is not reported.
    Why it matters: an epoch's start offset is the log end offset when the epoch began, so it can never be
    above the log end offset unless data was lost after the entry was written (a truncated tail, a crash
    before the truncation was flushed — truncations are flushed asynchronously since KAFKA-15046). Kafka
    removes such entries at load (``truncateFromEnd``), but they prove the log was longer.
    What to do: compare with the high watermark checkpoint (KA401) and with the other replicas (``audit``)
    to see which offsets were lost.
    References: KIP-101, KAFKA-10706, KAFKA-15046, ``LeaderEpochFileCache.assign``,
    ``LeaderEpochFileCache.truncateFromEndAsyncFlush``.
    """
    cache = _cache(part)
    if cache is None:
        return
    leo = part.leo_on_disk
    beyond = [(e, s) for e, s in cache if s > leo]
    if beyond:
        epoch, start = beyond[0]
        yield Violation(
            f"leader epoch {epoch} starts at offset {start}, beyond the log end offset {leo}"
            + (f" ({len(beyond)} entries)" if len(beyond) > 1 else ""),
            file=part.leader_epochs.path,
            epoch=epoch,
            offset_start=leo,
            offset_end=start,
            expected=f"start offset <= {leo}",
            found=start,
            evidence={"entries": _head(beyond), "count": len(beyond), "logEndOffset": leo},
        )


@rule(
    "KA313",
    "epoch-cache.missing-epoch",
    Severity.ERROR,
    "Batches carry a leader epoch the leader-epoch cache does not have",
    scope="partition",
)
def epoch_cache_missing_epoch(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a partitionLeaderEpoch stamped on batches at or above the log start offset that has no
    entry in ``leader-epoch-checkpoint`` (or the file is absent or empty while batches carry epochs).
    Why it matters: Kafka assigns (epoch, base offset) to the cache on every append of a batch with a new
    epoch and fsyncs the file; an epoch seen in batches but missing from the cache makes OffsetsForLeaderEpoch
    answer wrongly, so followers truncate at the wrong offset or fall back to high-watermark truncation and
    diverge (KIP-101, KIP-279). KAFKA-10432 lost epoch 0 this way; a missing file loses every epoch.
    What to do: rebuild the file from the batches (first offset of each epoch) or let the replica re-fetch
    from a healthy leader; compare replicas with ``audit`` before electing this one.
    References: KIP-101, KIP-279, KAFKA-10432, KAFKA-7415, ``LeaderEpochFileCache.assign``,
    ``LeaderEpochFileCache.truncateFromEndAsyncFlush``.
    """
    runs = _runs(part)
    if not runs or part.leader_epochs.error is not None or part.epoch_error is not None:
        return
    cache = _cache(part) or []
    if _cache_missing(part):
        epochs = sorted({r[0] for r in runs})
        yield Violation(
            f"batches carry leader epoch(s) {epochs} but there is no leader-epoch-checkpoint file",
            file=os.path.join(part.dir.path, "leader-epoch-checkpoint"),
            offset_start=runs[0][1],
            offset_end=runs[-1][2],
            epoch=runs[0][0],
            expected=[[r[0], r[1]] for r in runs][:20],
            found=None,
        )
        return
    known = {e for e, _ in cache}
    seen: set[int] = set()
    for epoch, first, last, position in runs:
        if epoch in known or epoch in seen:
            continue
        seen.add(epoch)
        yield Violation(
            f"batches from offset {first} carry leader epoch {epoch}, but the cache holds {_listed(cache)}",
            file=part.leader_epochs.path,
            offset_start=first,
            offset_end=last,
            epoch=epoch,
            expected=f"an entry ({epoch}, {first})",
            found=_head(cache),
            evidence={"firstBatchPosition": position, "cacheEntries": len(cache)},
        )


@rule(
    "KA314",
    "epoch-cache.start-mismatch",
    Severity.ERROR,
    "A leader epoch's start offset is not where its batches start",
    scope="partition",
)
def epoch_cache_start_mismatch(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``leader-epoch-checkpoint`` entry (epoch E, start offset S), with S between the log start
    offset and the log end offset, where the first batch stamped with E does not start at S, or where no batch
    carries E although batches of another epoch occupy offsets from S. In compacted logs an epoch whose first
    batches were cleaned away is accepted when no batch exists between S and the first surviving one.
    Why it matters: the entry says "epoch E began at offset S"; followers and OffsetsForLeaderEpoch compute
    the end offset of an epoch from the next entry's start, and truncate to it. A wrong start offset moves
    that truncation point: followers keep divergent data or drop committed data (the KIP-101/KIP-279
    failure class). It is direct evidence that this replica's log and its epoch history disagree, e.g.
    after an unclean leader election or a lost truncation.
    What to do: compare the replicas with ``kafka-auditor audit`` (divergence point and epoch lineage); do
    not elect this replica until the disagreement is explained.
    References: KIP-101, KIP-279, KAFKA-6361, KAFKA-7164, ``LeaderEpochFileCache.assign``,
    ``LeaderEpochFileCache.truncateFromEndAsyncFlush``, ``LeaderEpochFileCache.endOffsetFor``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    cache = _cache(part)
    if not cache:
        return
    runs = _runs(part)
    first_of: dict[int, list[int]] = {}
    for run in runs:
        first_of.setdefault(run[0], run)
    for i, (epoch, start) in enumerate(cache):
        if start < part.log_start_offset or start >= part.leo:
            continue
        next_start = cache[i + 1][1] if i + 1 < len(cache) else part.leo
        run = first_of.get(epoch)
        if run is None:
            other = _batches_in(runs, start, next_start)
            if other is None:
                continue  # no data in this epoch's range (compaction removed it, or an empty epoch)
            yield Violation(
                f"the cache says epoch {epoch} starts at offset {start}, but no batch carries epoch "
                f"{epoch}; the "
                f"batches from offset {max(other[1], start)} carry epoch {other[0]}",
                file=part.leader_epochs.path,
                offset_start=start,
                offset_end=next_start - 1,
                epoch=epoch,
                expected=f"batches of epoch {epoch} from offset {start}",
                found=f"epoch {other[0]} at offset {max(other[1], start)}",
            )
            continue
        first = run[1]
        if first == start:
            continue
        if first > start and part.compacted and _batches_in(runs, start, first) is None:
            continue
        yield Violation(
            f"the cache says epoch {epoch} starts at offset {start}, but its first batch starts at offset "
            f"{first}",
            file=part.leader_epochs.path,
            position=None,
            offset_start=min(first, start),
            offset_end=max(first, start),
            epoch=epoch,
            expected=start,
            found=first,
            evidence={"firstBatchPosition": run[3]},
        )
