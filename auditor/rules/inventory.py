"""KA5xx: what the log dir contains (spec §12, §13): unknown entries, leftovers of interrupted operations,
partition directory states, and partition.metadata topic IDs against the KRaft metadata.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from auditor.findings import Severity
from auditor.kafka.identity import OLD_INCARNATION, ClusterIdentity, identify
from auditor.kafka.kraft import METADATA_TOPIC_ID
from auditor.layout.filetypes import FILE_KINDS
from auditor.layout.inventory import FileInfo, PartitionDir
from auditor.observe.context import LogDirContext, PartitionContext
from auditor.rules.registry import Violation, rule

LIST_CAP = 20


def _kind(info: FileInfo) -> str:
    """``log segment``, ``offset index``, ``offset checkpoint`` ...: the kind without its file names."""
    return FILE_KINDS.get(info.kind, info.kind).split(" (")[0]


def _names(files: list[FileInfo]) -> list[str]:
    return [f.name for f in files[:LIST_CAP]]


def _files_found(files: list[FileInfo], what: str, where: str, **fields) -> Violation:
    """One finding for ``files`` (at least one): their count and the first :data:`LIST_CAP` names."""
    return Violation(
        f"{len(files)} {what} in {where}: {', '.join(_names(files))}",
        file=files[0].path,
        evidence={"files": _names(files)},
        **fields,
    )


@rule(
    "KA501",
    "inventory.unknown-file",
    Severity.WARNING,
    "A file or directory that Kafka does not know",
    scope="logdir",
)
def unknown_file(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: files in the log dir root or in a partition directory, and directories inside partition
    directories, whose names match none of Kafka's file kinds (segments, indexes, snapshots, checkpoints,
    metadata files, their .deleted/.cleaned/.swap/.tmp variants).
    Why it matters: Kafka ignores such files but nothing in Kafka creates them: they are copies left by an
    operator, editor backups, files of another tool, or a sign that the directory is not what it seems (a
    partially restored backup). The auditor reports them instead of ignoring them so the evidence is
    complete.
    What to do: find out who created them; remove them from the broker's log dir (not from the evidence copy)
    if they are not needed.
    References: ``LocalLog.parseTopicPartitionName``, ``LogFileUtils``.
    """
    if ld.inventory.unknown:
        yield _files_found(ld.inventory.unknown, "unknown file(s)", "the log dir root")
    for part in ld.inventory.partitions:
        if part.unknown:
            yield _files_found(
                part.unknown, "unknown file(s)", part.name, topic=part.topic, partition=part.partition
            )


@rule(
    "KA502",
    "inventory.invalid-directory",
    Severity.ERROR,
    "A directory whose name Kafka cannot parse as a partition",
    scope="logdir",
)
def invalid_directory(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a directory in the log dir root whose name is not ``topic-partition`` (optionally
    ``.<id>-delete``, ``-future`` or ``-stray``), other than ``__cluster_metadata-0`` and
    ``remote-log-index-cache``.
    Why it matters: Kafka parses every directory of a log dir as a partition (``parseTopicPartitionName``) and
    fails to load the log dir on a name it cannot parse ("Found directory ..., '...' is not in the form of
    topic-partition or topic-partition.uniqueId-delete (if marked for deletion). Kafka's log directories (and
    children) should only contain Kafka topic data."). Hidden directories (``.snapshot``, ``lost+found``)
    count too.
    What to do: move the directory out of the log dir (on the broker, not in the evidence copy).
    References: ``LocalLog.parseTopicPartitionName``, ``LogManager.loadLogs``.
    """
    for info, message in ld.inventory.invalid_dirs:
        yield Violation(
            f"directory {info.name!r} is not a partition directory; Kafka fails to load this log dir",
            file=info.path,
            evidence={"kafkaError": message.splitlines()[0]},
        )


@rule(
    "KA503",
    "inventory.swap-leftover",
    Severity.WARNING,
    "Segment files with a .swap suffix: an interrupted segment replacement",
    scope="partition",
)
def swap_leftover(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``.swap`` files in a partition directory.
    Why it matters: the log cleaner and the segment split (offset overflow) write replacement segments as
    ``.cleaned``, rename them to ``.swap``, rename the old segments to ``.deleted`` and finally drop the
    ``.swap`` suffix. A ``.swap`` left behind means the broker stopped in the middle of that protocol; at
    load Kafka completes or discards the replacement (it deletes ordinary segments in the swap range), so
    the directory will change at the next start.
    What to do: copy the directory before starting the broker; compare the swap segment with the segments it
    replaces (``dump``) if the range matters.
    References: KAFKA-6264, KAFKA-5413, ``LogFileUtils``, ``LogLoader.load``, ``LogSegment.recover``.
    """
    swaps = [f for f in part.dir.leftovers if f.state == "swap"]
    if swaps:
        yield _files_found(
            swaps, ".swap file(s)", part.dir.name, offset_start=min((f.base_offset or 0) for f in swaps)
        )


@rule(
    "KA504",
    "inventory.cleaned-leftover",
    Severity.WARNING,
    "Segment files with a .cleaned suffix: interrupted log cleaning",
    scope="partition",
)
def cleaned_leftover(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``.cleaned`` files in a partition directory.
    Why it matters: ``.cleaned`` files are the log cleaner's output being written; one left behind means the
    broker stopped while cleaning (or splitting) the segment. Kafka deletes them at load (and any ``.swap``
    at or above their offset), so they are harmless for the data but date a crash during compaction.
    What to do: nothing; keep the copy if the crash is being investigated.
    References: KAFKA-5413, ``LogFileUtils``, ``LogLoader.load``, ``LogSegment.recover``.
    """
    cleaned = [f for f in part.dir.leftovers if f.state == "cleaned"]
    if cleaned:
        yield _files_found(cleaned, ".cleaned file(s)", part.dir.name)


@rule(
    "KA505",
    "inventory.pending-deletion",
    Severity.INFO,
    "Files renamed to .deleted are waiting for asynchronous deletion",
    scope="partition",
)
def pending_deletion(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``.deleted`` files (segments, indexes, snapshots, KRaft snapshots) in a partition
    directory.
    Why it matters: Kafka deletes segments asynchronously: it renames them to ``.deleted`` and removes them
    after ``file.delete.delay.ms`` (60 s by default); a shutdown inside that delay leaves them behind, and
    Kafka removes them at the next load. Normal after retention, compaction or truncation; they may still
    hold data that was truncated away, which makes them valuable evidence.
    What to do: nothing; keep them in the evidence copy (``dump`` reads them).
    References: KAFKA-16424, ``LogFileUtils``, ``LogLoader.load``.
    """
    deleted = [f for f in part.dir.leftovers if f.state == "deleted"]
    if deleted:
        yield Violation(
            f"{len(deleted)} file(s) pending deletion in {part.dir.name} ({sum(f.size for f in deleted)} "
            "bytes)",
            file=deleted[0].path,
            evidence={"files": _names(deleted), "count": len(deleted), "bytes": sum(f.size for f in deleted)},
        )


@rule(
    "KA506",
    "inventory.orphan-index",
    Severity.WARNING,
    "Index files without a .log segment",
    scope="partition",
)
def orphan_index(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``.index``, ``.timeindex`` or ``.txnindex`` files whose ``.log`` of the same base offset is
    missing.
    Why it matters: Kafka deletes such files at load ("Found an orphaned index file"); their segment was
    removed by hand, lost, or the copy of the directory is incomplete. The index still tells which offsets
    and positions the lost segment held.
    What to do: check that the copy is complete; look for the segment in backups or on other replicas.
    References: ``OffsetIndex.sanityCheck``, ``LogLoader.load``, ``LogSegment.recover``.
    """
    orphans = part.dir.orphan_indexes
    if orphans:
        yield _files_found(
            orphans, "index file(s) without a .log", part.dir.name, offset_start=orphans[0].base_offset
        )


@rule(
    "KA507",
    "inventory.tmp-leftover",
    Severity.WARNING,
    "An interrupted atomic write left a .tmp or .part file",
    scope="logdir",
)
def tmp_leftover(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: ``<checkpoint>.tmp``, ``meta.properties.tmp``, ``partition.metadata.tmp``,
    ``leader-epoch-checkpoint.tmp`` files and partial KRaft snapshots ``.checkpoint.part``.
    Why it matters: Kafka writes these files to a temporary name, fsyncs, then renames it over the real
    one; a leftover means the broker died during the write. The real file is the previous complete version,
    so the leftover may hold a newer (possibly partial) state — useful evidence, e.g. of a newer high
    watermark.
    What to do: compare the leftover with the real file (``dump``); Kafka ignores or overwrites it.
    References: KAFKA-16541, ``CheckpointFile.read``, ``CheckpointFileWithFailureHandler``, ``LogFileUtils``,
    ``LogLoader.load``.
    """
    if ld.inventory.leftovers:
        yield _files_found(ld.inventory.leftovers, "interrupted write(s)", "the log dir root")
    for part in ld.inventory.partitions:
        tmp = [f for f in part.leftovers if f.state in ("tmp", "partial")]
        if tmp:
            yield _files_found(
                tmp, "interrupted write(s)", part.name, topic=part.topic, partition=part.partition
            )


@rule(
    "KA508",
    "inventory.stray-partition",
    Severity.WARNING,
    "A partition directory marked -stray",
    scope="partition",
)
def stray_partition(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a ``topic-partition.<id>-stray`` directory.
    Why it matters: a KRaft broker (3.7+) renames a log to ``-stray`` when, at startup, the cluster metadata
    says the partition is not assigned to it or the topic ID does not match (a deleted and recreated topic,
    a replica moved away while the broker was down). The data is no longer served and Kafka may delete it;
    it can still hold records the current replicas lack.
    What to do: compare it with the current replicas (``audit``) before deleting it.
    References: KIP-516, KAFKA-14616, ``LocalLog.parseTopicPartitionName``, ``LogManager.loadLogs``.
    """
    if part.dir.kind == "stray":
        yield Violation(
            f"{part.dir.name} is a stray log (not assigned to this broker or of another topic ID)",
            file=part.dir.path,
        )


@rule(
    "KA509",
    "inventory.moving-or-deleted-partition",
    Severity.INFO,
    "A partition directory being moved (-future) or deleted (-delete)",
    scope="partition",
)
def moving_or_deleted(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: ``topic-partition.<id>-future`` directories (a replica being moved between log dirs by
    AlterReplicaLogDirs) and ``topic-partition.<id>-delete`` directories (scheduled for asynchronous
    deletion).
    Why it matters: a ``-future`` log replaces the live one once it catches up (KAFKA-9087, KAFKA-16082 lost
    data in that swap); a ``-delete`` log is removed after ``file.delete.delay.ms`` and may hold the only
    copy of data that was deleted with its topic.
    What to do: nothing in normal operation; during an incident compare them with the live replicas.
    References: KIP-113, KAFKA-9087, KAFKA-16082, ``LocalLog.parseTopicPartitionName``,
    ``LogManager.loadLogs``.
    """
    if part.dir.kind in ("future", "delete"):
        what = (
            "being moved here (AlterReplicaLogDirs)"
            if part.dir.kind == "future"
            else "scheduled for deletion"
        )
        yield Violation(f"{part.dir.name} is {what}", file=part.dir.path)


@rule(
    "KA510",
    "inventory.topic-id-mismatch",
    Severity.ERROR,
    "The partition.metadata topic ID differs from the KRaft metadata",
    scope="partition",
)
def topic_id_mismatch(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a partition whose ``partition.metadata`` topic ID differs from the topic ID of the
    topic with that name in the KRaft metadata log (``TopicRecord``) read from the scanned
    ``__cluster_metadata-0``; for ``__cluster_metadata-0`` itself, an ID other than its fixed one.
    Why it matters: topic IDs (KIP-516) distinguish a topic from a deleted topic of the same name. A mismatch
    means the directory belongs to an older incarnation of the topic: Kafka raises
    InconsistentTopicIdException and (3.7+) renames the log to ``-stray``; its data is not the current
    topic's.
    What to do: do not copy this directory into the current topic; treat its records as the old topic's.
    References: KIP-516, KAFKA-14616, ``PartitionMetadataFile``.
    """
    pm = part.partition_metadata
    if not pm.ok or part.dir.kind in ("delete", "stray"):
        return
    found = pm.value.topic_id
    if part.is_metadata:
        expected, source = METADATA_TOPIC_ID, "the fixed topic ID of __cluster_metadata"
    else:
        expected, source = (
            part.logdir.expected_topic_id,
            f"the KRaft metadata in {part.logdir.metadata_source}",
        )
    if expected is None:
        return
    # the audit's statement of identity (auditor.kafka.identity), against the topic view scan replayed
    view = ClusterIdentity(None, source=part.logdir.broker or 0, current={part.dir.topic: expected})
    verdict = identify(part.dir.topic, part.dir.partition, part.logdir.broker, found, "live", view)
    if part.is_metadata or verdict.status == OLD_INCARNATION:
        if found == expected:
            return
        yield Violation(
            f"partition.metadata has topic ID {found}, but {source} says {part.dir.topic} is {expected}",
            file=pm.path,
            expected=expected,
            found=found,
        )


@rule(
    "KA511",
    "inventory.topic-not-in-metadata",
    Severity.WARNING,
    "The partition's topic does not exist in the KRaft metadata",
    scope="partition",
)
def topic_not_in_metadata(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a live partition whose topic name has no ``TopicRecord`` in the KRaft metadata read from
    the scanned ``__cluster_metadata-0`` (only when that metadata is complete: a snapshot plus the log after
    it, or a log from offset 0).
    Why it matters: the topic was deleted (``RemoveTopicRecord``) or never existed in this cluster; a KRaft
    broker treats the log as stray at startup and stops serving it.
    What to do: check whether the topic was deleted on purpose; keep the data if it is needed.
    References: KIP-516, ``PartitionMetadataFile``, ``TopicRecord``, ``UnifiedLog.assignTopicId``.
    """
    if part.is_metadata or part.dir.kind != "live" or part.logdir.metadata_source is None:
        return
    if part.logdir.metadata_complete and part.logdir.expected_topic_id is None:
        yield Violation(
            f"topic {part.dir.topic} is not in the KRaft metadata of {part.logdir.metadata_source}",
            file=part.dir.path,
            evidence={"metadataSource": part.logdir.metadata_source},
        )


@rule(
    "KA512",
    "inventory.partition-metadata-missing",
    Severity.WARNING,
    "A partition directory of a KRaft broker has no partition.metadata",
    scope="partition",
)
def partition_metadata_missing(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: a live or ``-future`` partition directory (or ``__cluster_metadata-0``) without
    ``partition.metadata``, in a log dir whose ``meta.properties`` is version 1 (KRaft).
    Why it matters: KRaft brokers write the topic ID into ``partition.metadata`` when they create a log
    (KIP-516); without it Kafka cannot verify that the log belongs to the current topic and treats it as a
    stray log at startup.
    What to do: check whether the directory was copied incompletely; restore the file from the topic ID in
    the metadata (``version: 0`` newline ``topic_id: <id>``).
    References: KIP-516, ``PartitionMetadataFile``.
    """
    if part.dir.kind in ("delete", "stray") or part.partition_metadata.present:
        return
    if not part.logdir.kraft:
        return
    yield Violation(
        f"{part.dir.name} has no partition.metadata", file=os.path.join(part.dir.path, "partition.metadata")
    )


@rule(
    "KA513",
    "inventory.noncanonical-name",
    Severity.WARNING,
    "A segment file name does not use Kafka's 20-digit offset",
    scope="partition",
)
def noncanonical_name(part: PartitionContext) -> Iterator[Violation]:
    """
    What it finds: segment, index or snapshot files whose offset is not written with exactly 20 digits
    (e.g. ``750.log`` instead of ``00000000000000000750.log``); an error when such a file names the same
    segment and kind as another file (two ``.log`` files for one base offset).
    Why it matters: Kafka parses the offset with ``Long.parseLong`` and so loads such files, but always
    writes 20 digits; a different spelling was made by hand (or by a tool) and the file may shadow or
    duplicate a segment with the canonical name.
    What to do: find out who renamed the files; check for duplicate segments with the same offset.
    References: ``LogFileUtils``, ``LogLoader.load``.
    """
    bad = [f for f in part.dir.files() if not f.canonical]
    if bad:
        dup = _names(part.dir.duplicates)
        yield Violation(
            f"{len(bad)} file name(s) without a 20-digit offset in {part.dir.name}: {', '.join(_names(bad))}"
            + (f"; same segment and kind as another file: {', '.join(dup)}" if dup else ""),
            severity=Severity.ERROR if dup else None,
            file=bad[0].path,
            evidence={"files": _names(bad), "duplicates": dup},
        )


@rule(
    "KA514",
    "inventory.duplicate-partition",
    Severity.ERROR,
    "The same partition has live directories in two log dirs of one broker",
    scope="logdir",
)
def duplicate_partition(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a topic-partition with a live (not ``-future``) directory in this log dir and in another
    scanned log dir of the same broker (same node.id and cluster.id, a different directory.id, i.e. two JBOD
    directories rather than two copies of one).
    Why it matters: a broker refuses to start when a partition lives in two of its log dirs ("Duplicate log
    directories for T-P are found in both ..."); one of the two is a leftover of a failed move between log
    dirs (KAFKA-16082) and may hold different data.
    What to do: compare both copies (``dump`` them, or ``audit`` each copy in its own run with the other
    brokers: one audit refuses two copies of one replica); keep the newer one on the broker and the other in
    the evidence.
    References: KIP-113, KAFKA-16082, ``LocalLog.parseTopicPartitionName``, ``LogManager.loadLogs``.
    """
    me = ld.meta_value
    if me is None:
        return
    mine = {
        (p.topic, p.partition): p for p in ld.inventory.partitions if p.kind == "live" and not p.is_metadata
    }
    for other in ld.siblings:
        om = other.meta_value
        if (
            other is ld
            or om is None
            or om.node_id != me.node_id
            or om.cluster_id != me.cluster_id
            or om.directory_id == me.directory_id
            or other.path < ld.path
        ):
            continue
        for p in other.inventory.partitions:
            key = (p.topic, p.partition)
            if p.kind == "live" and not p.is_metadata and key in mine:
                yield Violation(
                    f"{p.name} also has a live directory in {other.path} (same broker {me.node_id})",
                    file=mine[key].path,
                    topic=p.topic,
                    partition=p.partition,
                    related=[{"logDir": other.path, "file": p.path}],
                )


@rule(
    "KA515",
    "inventory.not-regular-file",
    Severity.ERROR,
    "A FIFO, socket, device or directory where Kafka keeps a regular file",
    scope="logdir",
)
def not_regular_file(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: an entry of the log dir or of a partition directory that is not a regular file (a FIFO,
    a socket, a character or block device), directly or through a symbolic link, whatever its name: a
    segment, index, snapshot, checkpoint, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown`` or
    an unknown name; and a directory inside a partition directory named like one of Kafka's files. The
    evidence gives its type and, for a link, the link's text and where it resolves.
    Why it matters: Kafka only ever writes regular files into a log dir (through ``FileChannel`` and atomic
    renames); a special file there was put by hand or by another program, and its bytes are not evidence of
    anything the broker wrote. Kafka's log loading lists segment files with ``File.isFile`` (regular files
    only) and so skips it as if the segment, index or snapshot were missing; reading a checkpoint or
    ``meta.properties`` of that kind would block (a FIFO without a writer), never end (``/dev/zero``) or
    fail. The auditor never opens it: every other check treats the file as absent.
    What to do: find out who created it and why; restore the real file from a backup or another replica if
    one existed under that name. When copying the log dir for evidence, skip special files (``cp -rL``
    blocks on a FIFO and copies a device's endless stream; ``rsync`` without ``--devices --specials`` skips
    them).
    References: ``LocalLog.parseTopicPartitionName``, ``LogFileUtils``, ``LogLoader.load``,
    ``LogSegment.recover``; POSIX open(2) on FIFOs (blocks until a writer opens).
    """
    for part, info in ld.inventory.special_files():
        where = part.name if part is not None else "the log dir root"
        named = "a name Kafka does not use" if info.kind == "unknown" else f"named like Kafka's {_kind(info)}"
        link = ""
        evidence: dict = {"file": info.path, "fileType": info.file_type, "namedLike": info.kind}
        if info.link_target is not None:
            resolved = os.path.realpath(info.path)
            link = f" through a symbolic link to {info.link_target}"
            evidence |= {"linkTarget": info.link_target, "resolvedTarget": resolved}
        yield Violation(
            f"{info.name} in {where} is {info.file_type}{link}, not a regular file ({named}); not read",
            file=info.path,
            topic=part.topic if part is not None else None,
            partition=part.partition if part is not None else None,
            evidence=evidence,
        )


@rule(
    "KA516",
    "inventory.symlink-outside-log-dir",
    Severity.WARNING,
    "A file or partition directory is a symbolic link leading out of the log dir",
    scope="logdir",
)
def symlink_outside_log_dir(ld: LogDirContext) -> Iterator[Violation]:
    """
    What it finds: a segment, index, snapshot, checkpoint or other entry of the log dir, or a partition
    directory, that is a symbolic link whose target resolves outside the log dir. Links that stay inside
    the log dir, and a log dir that is itself reached through a symbolic link, are not reported; special
    files behind links are reported by KA515 instead.
    Why it matters: Kafka never creates symbolic links in a log dir: it writes, renames and deletes regular
    files in place. A link out of the log dir means the copy under audit is not self-contained (the linked
    file may change or vanish independently of it, and a copy made with ``cp -r`` keeps the link, not the
    data) or that someone replaced the broker's file with another one.
    What to do: check where the link points and who created it; for evidence, copy the log dir with links
    dereferenced (``cp -rL``, ``rsync -L``) after making sure the targets are regular files, and audit the
    copy.
    References: ``LocalLog.parseTopicPartitionName``, ``LogFileUtils``.
    """
    by_dir: dict[str, list[tuple[FileInfo | PartitionDir, str]]] = {}
    parts: dict[str, PartitionDir | None] = {}
    for part, entry, target in ld.inventory.links_outside():
        key = part.path if part is not None else ld.path
        by_dir.setdefault(key, []).append((entry, target))
        parts[key] = part
    for key, links in by_dir.items():
        part = parts[key]
        where = part.name if part is not None else "the log dir root"
        shown = links[:LIST_CAP]
        yield Violation(
            f"{len(links)} symbolic link(s) in {where} lead out of the log dir: "
            + ", ".join(f"{entry.name} -> {target}" for entry, target in shown),
            file=shown[0][0].path,
            topic=part.topic if part is not None else None,
            partition=part.partition if part is not None else None,
            evidence={
                "links": [
                    {"file": entry.path, "linkTarget": entry.link_target, "resolvedTarget": target}
                    for entry, target in shown
                ],
                "count": len(links),
            },
        )
