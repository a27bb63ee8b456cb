"""Inventory of a Kafka log directory: every file and directory classified, nothing ignored (spec §12, §13).

Kinds follow Kafka's own naming rules (``LocalLog.parseTopicPartitionName``, segment and snapshot file names
through :mod:`parsers.dirfiles`). Files pending deletion (``.deleted``), cleaner output (``.cleaned``),
half-finished replacements (``.swap``), interrupted checkpoint writes (``.tmp``) and partial KRaft snapshots
(``.checkpoint.part``) are kept as leftovers with their state; names Kafka does not know are listed as
unknown. Only ``os.scandir``/``stat`` are used: the tree is never opened for writing.

Entries that are not regular files (FIFO, socket, character or block device; directly or through a symbolic
link) are set apart in ``special`` whatever their name: no reader ever sees them, since opening a FIFO blocks
and reading a device never ends (:mod:`parsers.files`). Symbolic links keep their target (``link_target``) so
that links leaving the log dir can be reported (Kafka itself never creates links in a log dir).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from auditor.layout.filetypes import (
    METADATA_DIR,
    PARTITION_FILES,
    REMOTE_INDEX_CACHE,
    ROOT_FILES,
    SEGMENT_KINDS,
    classify,
    entry_is_dir,
)
from parsers.dirfiles import (
    parse_kraft_snapshot_file_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)
from parsers.errors import ParseError
from parsers.files import special_kind

SINGLE_ROOT_KINDS = ("meta-properties", "clean-shutdown", "lock", "bootstrap-checkpoint")
"""Kinds of the root files a log dir holds one of (``filetypes.ROOT_FILES`` less the offset checkpoints)."""


@dataclass(slots=True)
class FileInfo:
    """One file (or unknown directory). ``state``: None, ``deleted``, ``cleaned``, ``swap``, ``tmp`` or
    ``partial``; ``canonical`` is False for a segment name whose offset is not written with 20 digits.
    ``file_type`` names a special file (``"a FIFO (named pipe)"``, ...), None for regular files and
    directories; ``link_target`` is the text of the symbolic link when the entry is one."""

    path: str
    name: str
    kind: str
    size: int = 0
    mtime_ns: int = 0
    state: str | None = None
    base_offset: int | None = None
    epoch: int | None = None
    canonical: bool = True
    is_dir: bool = False
    file_type: str | None = None
    link_target: str | None = None


@dataclass(slots=True)
class SegmentFiles:
    """The live files of one segment (by base offset); any of them may be missing."""

    base_offset: int
    log: FileInfo | None = None
    index: FileInfo | None = None
    timeindex: FileInfo | None = None
    txnindex: FileInfo | None = None

    @property
    def files(self) -> list[FileInfo]:
        return [f for f in (self.log, self.index, self.timeindex, self.txnindex) if f is not None]


@dataclass
class PartitionDir:
    """A partition directory: ``kind`` is ``live``, ``future``, ``delete``, ``stray`` or ``metadata``
    (``__cluster_metadata-0``). ``segments`` holds every base offset with at least one live file, sorted."""

    path: str
    name: str
    topic: str
    partition: int
    kind: str
    unique_id: str | None = None
    segments: list[SegmentFiles] = field(default_factory=list)
    producer_snapshots: list[FileInfo] = field(default_factory=list)
    kraft_snapshots: list[FileInfo] = field(default_factory=list)
    leader_epoch_checkpoint: FileInfo | None = None
    partition_metadata: FileInfo | None = None
    quorum_state: FileInfo | None = None
    leftovers: list[FileInfo] = field(default_factory=list)
    unknown: list[FileInfo] = field(default_factory=list)
    duplicates: list[FileInfo] = field(default_factory=list)
    """Segment files naming the same base offset and kind as another one (e.g. ``15.log`` beside
    ``00000000000000000015.log``): Kafka would load both spellings as one segment."""
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    special: list[FileInfo] = field(default_factory=list)
    """Entries that are not regular files (FIFO, socket, device), never opened; ``kind`` from the name."""
    link_target: str | None = None
    """The symbolic link's text when the partition directory itself is a link."""

    @property
    def is_metadata(self) -> bool:
        return self.kind == "metadata"

    @property
    def log_segments(self) -> list[SegmentFiles]:
        """Segments that have a ``.log`` file (what Kafka loads)."""
        return [s for s in self.segments if s.log is not None]

    @property
    def unindexed(self) -> frozenset[int]:
        """Base offsets of the segments whose offset index file is missing (:func:`unindexed_segments` over
        every entry of the directory): Kafka recovers them at load."""
        bases = (s.base_offset for s in self.log_segments)
        return unindexed_segments(bases, (f.name for f in self.files()), self.path)

    @property
    def orphan_indexes(self) -> list[FileInfo]:
        """Index files without a ``.log`` of the same base offset (Kafka deletes them at load)."""
        return [f for s in self.segments if s.log is None for f in s.files]

    @property
    def size_bytes(self) -> int:
        return sum(s.log.size for s in self.segments if s.log is not None) + sum(
            f.size for f in self.kraft_snapshots
        )

    def files(self) -> list[FileInfo]:
        out: list[FileInfo] = [f for s in self.segments for f in s.files]
        out += (
            self.producer_snapshots
            + self.kraft_snapshots
            + self.leftovers
            + self.unknown
            + self.duplicates
            + self.special
        )
        out += [f for f in (self.leader_epoch_checkpoint, self.partition_metadata, self.quorum_state) if f]
        return out


def _root_file(kind: str) -> property:
    """A read-only attribute of :class:`LogDirInventory`: its root file of ``kind``, or None."""

    def get(inv: LogDirInventory) -> FileInfo | None:
        return inv.root_files.get(kind)

    return property(get)


@dataclass
class LogDirInventory:
    """Everything in one log directory: root files, partition directories, leftovers and unknown entries.

    ``invalid_dirs`` are directories whose name Kafka cannot parse as ``topic-partition`` (Kafka refuses to
    load such a log dir), with Kafka's message.
    """

    path: str
    root_files: dict[str, FileInfo] = field(default_factory=dict)
    """The single root files present, by kind (``meta-properties``, ``clean-shutdown``, ``lock``,
    ``bootstrap-checkpoint``); see the properties of the same names."""
    checkpoints: dict[str, FileInfo] = field(default_factory=dict)
    partitions: list[PartitionDir] = field(default_factory=list)
    leftovers: list[FileInfo] = field(default_factory=list)
    unknown: list[FileInfo] = field(default_factory=list)
    invalid_dirs: list[tuple[FileInfo, str]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    remote_index_cache: FileInfo | None = None
    special: list[FileInfo] = field(default_factory=list)
    """Root entries that are not regular files (FIFO, socket, device), never opened."""

    meta_properties = _root_file("meta-properties")
    clean_shutdown = _root_file("clean-shutdown")
    lock = _root_file("lock")
    bootstrap = _root_file("bootstrap-checkpoint")

    @property
    def metadata_partition(self) -> PartitionDir | None:
        return next((p for p in self.partitions if p.is_metadata), None)

    def files(self) -> list[FileInfo]:
        out = self._root_files() + self.special
        for part in self.partitions:
            out += part.files()
        return out

    def special_files(self) -> list[tuple[PartitionDir | None, FileInfo]]:
        """Every entry that is not a regular file, with its partition directory (None at the root)."""
        return [(None, f) for f in self.special] + [(p, f) for p in self.partitions for f in p.special]

    def links_outside(self) -> list[tuple[PartitionDir | None, FileInfo | PartitionDir, str]]:
        """Symbolic links (files or partition directories) whose target resolves outside this log dir, with
        their partition directory and resolved target. Links within the log dir, and a log dir that is
        itself reached through a link, are not listed; neither are special files (see ``special``)."""
        root = os.path.realpath(self.path)
        out: list[tuple[PartitionDir | None, FileInfo | PartitionDir, str]] = []
        for part in self.partitions:
            if part.link_target is not None and (target := _outside(part.path, root)):
                out.append((part, part, target))
        linked = [(None, f) for f in self._root_files()] + [
            (p, f) for p in self.partitions for f in p.files()
        ]
        for part, info in linked:
            if (
                info.link_target is not None
                and info.file_type is None
                and (target := _outside(info.path, root))
            ):
                out.append((part, info, target))
        return out

    def _root_files(self) -> list[FileInfo]:
        single = [self.root_files[kind] for kind in SINGLE_ROOT_KINDS if kind in self.root_files]
        return single + list(self.checkpoints.values()) + self.leftovers + self.unknown


def _outside(path: str, real_root: str) -> str | None:
    """The resolved target of ``path`` when it lies outside ``real_root``, else None."""
    target = os.path.realpath(path)
    try:
        inside = os.path.commonpath([target, real_root]) == real_root
    except ValueError:  # different drives
        inside = False
    return None if inside else target


# ------------------------------------------------------------------------------------------ scanning


def _info(entry: os.DirEntry, kind: str, **kw) -> FileInfo:
    file_type = None
    try:
        st = entry.stat()
        size, mtime, file_type = st.st_size, st.st_mtime_ns, special_kind(st.st_mode)
    except OSError:
        size, mtime = 0, 0
    info = FileInfo(
        entry.path, entry.name, kind, size, mtime, is_dir=entry_is_dir(entry), file_type=file_type, **kw
    )
    info.link_target = _link_target(entry)
    return info


def _link_target(entry: os.DirEntry) -> str | None:
    try:
        return os.readlink(entry.path) if entry.is_symlink() else None
    except OSError:
        return None


def _special(entry: os.DirEntry) -> FileInfo | None:
    """A :class:`FileInfo` for an entry that is not a regular file or directory (symlinks followed), else
    None. Its kind is what its name says (:func:`auditor.layout.filetypes.classify`), or ``unknown``."""
    try:
        if special_kind(entry.stat().st_mode) is None:
            return None
    except OSError:  # dangling link, permissions: readers report it as unreadable
        return None
    return _info(entry, classify(entry.name) or "unknown")


def _entries(path: str, unreadable: list[tuple[str, str]]) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        unreadable.append((path, exc.strerror or str(exc)))
        return []


def classify_partition_file(entry: os.DirEntry, part: PartitionDir) -> None:
    """File the entry under ``part`` (segment file, snapshot, checkpoint, leftover or unknown)."""
    name = entry.name
    if entry_is_dir(entry):
        kind = classify(name)
        if kind is not None:  # a directory named like a segment, index, snapshot or checkpoint
            info = _info(entry, kind)
            info.file_type = "a directory"
            part.special.append(info)
        else:
            part.unknown.append(_info(entry, "directory"))
        return
    special = _special(entry)
    if special is not None:
        part.special.append(special)
        return
    if name in PARTITION_FILES:
        _add_partition_file(_info(entry, PARTITION_FILES[name]), part)
    elif name.endswith(".tmp") and name[:-4] in PARTITION_FILES:
        part.leftovers.append(_info(entry, PARTITION_FILES[name[:-4]], state="tmp"))
    elif (segment := _parsed(parse_segment_file_name, name)) is not None:
        _add_segment_file(entry, part, *segment)
    elif (snapshot := _parsed(parse_kraft_snapshot_file_name, name)) is not None:
        end, epoch, state = snapshot
        info = _info(entry, "kraft-snapshot", state=state, base_offset=end, epoch=epoch)
        (part.leftovers if state else part.kraft_snapshots).append(info)
    else:
        part.unknown.append(_info(entry, "unknown"))


def _parsed(parse, name: str) -> tuple | None:
    """What a :mod:`parsers.dirfiles` name parser makes of ``name``, or None when it is not such a name."""
    try:
        return parse(name)
    except ParseError:
        return None


def _add_partition_file(info: FileInfo, part: PartitionDir) -> None:
    """leader-epoch-checkpoint, partition.metadata, or quorum-state (known only in the metadata partition)."""
    if info.kind == "leader-epoch-checkpoint":
        part.leader_epoch_checkpoint = info
    elif info.kind == "partition-metadata":
        part.partition_metadata = info
    elif part.is_metadata:
        part.quorum_state = info
    else:
        info.kind = "unknown"
        part.unknown.append(info)


def _add_segment_file(
    entry: os.DirEntry, part: PartitionDir, base: int, suffix: str, state: str | None
) -> None:
    """File a segment, index or producer snapshot file; of two spellings of one file the canonical wins."""
    kind = SEGMENT_KINDS[suffix]
    info = _info(entry, kind, state=state, base_offset=base)
    info.canonical = entry.name.split(".", 1)[0] == segment_file_name(base, suffix).split(".", 1)[0]
    if state is not None:
        part.leftovers.append(info)
        return
    if kind == "producer-snapshot":
        part.producer_snapshots.append(info)
        return
    seg = _segment(part, base)
    attr = {"log": "log", "offset-index": "index", "time-index": "timeindex"}.get(kind, "txnindex")
    current = getattr(seg, attr)
    if current is None:
        setattr(seg, attr, info)
    elif info.canonical and not current.canonical:
        setattr(seg, attr, info)
        part.duplicates.append(current)
    else:
        part.duplicates.append(info)


def _segment(part: PartitionDir, base: int) -> SegmentFiles:
    for seg in part.segments:
        if seg.base_offset == base:
            return seg
    seg = SegmentFiles(base)
    part.segments.append(seg)
    return seg


def unindexed_segments(
    bases: Iterable[int], names: Iterable[str], directory: str | os.PathLike | None = None
) -> frozenset[int]:
    """Base offsets among ``bases`` whose offset index file is not among the partition directory's entry
    ``names``: the 20-digit name ``LogSegment.sanityCheck`` looks for (``LogFileUtils.offsetIndexFile``; an
    entry of any kind, as ``File.exists``, which follows a symbolic link: with ``directory``, a link whose
    target does not exist is missing too). ``LogLoader.loadSegmentFiles`` recovers these segments at load."""
    present = set(names)

    def missing(base: int) -> bool:
        name = segment_file_name(base, ".index")
        if name not in present:
            return True
        return directory is not None and not os.path.exists(os.path.join(directory, name))

    return frozenset(b for b in bases if missing(b))


@dataclass(frozen=True)
class SegmentListing:
    """The live ``.log`` segments of a partition directory (:func:`segment_logs`), those of them without
    their offset index (:func:`unindexed_segments`) and those with a ``.txnindex`` entry (whose contents
    ``LogSegment.sanityCheck`` checks: ``auditor.observe.indexes.txn_index_corrupt``), from one listing."""

    logs: list[tuple[int, Path]]
    unindexed: frozenset[int]
    txn_indexed: frozenset[int] = frozenset()


def list_segments(path: str | os.PathLike) -> SegmentListing:
    """(base offset, path) of the live ``.log`` segments of a partition directory, by base offset: the names
    Kafka's loader takes for segments (``parse_segment_file_name``: no ``.deleted``/``.cleaned``/``.swap``),
    whatever the file type (a FIFO or a directory under such a name is listed; its reader says why it cannot
    be read), which of them lack their offset index and which have a ``.txnindex``. OSError when the
    directory cannot be listed."""
    names = os.listdir(path)
    logs, txn = [], set()
    for name in names:
        parsed = _parsed(parse_segment_file_name, name)
        if parsed is not None and parsed[2] is None:
            if parsed[1] == ".log":
                logs.append((parsed[0], Path(path) / name))
            elif parsed[1] == ".txnindex":
                txn.add(parsed[0])
    logs.sort()
    bases = [b for b, _ in logs]
    return SegmentListing(logs, unindexed_segments(bases, names, path), frozenset(txn.intersection(bases)))


def segment_logs(path: str | os.PathLike) -> list[tuple[int, Path]]:
    """The live ``.log`` segments of a partition directory (:func:`list_segments`)."""
    return list_segments(path).logs


def complete_kraft_snapshots(path: str | os.PathLike) -> list[tuple[int, int, Path]]:
    """(end offset, epoch, path) of the complete KRaft snapshots (``.checkpoint``, not ``.part`` or
    ``.deleted``) of a metadata partition directory."""
    out = []
    for name in os.listdir(path):
        parsed = _parsed(parse_kraft_snapshot_file_name, name)
        if parsed is not None and parsed[2] is None:
            out.append((parsed[0], parsed[1], Path(path) / name))
    return out


def inventory_partition(path: str, name: str | None = None) -> PartitionDir | str:
    """Classify one partition directory; returns Kafka's error message when the name does not parse."""
    name = name or os.path.basename(path.rstrip(os.sep))
    if name == METADATA_DIR:
        topic, partition, kind, unique_id = "__cluster_metadata", 0, "metadata", None
    else:
        try:
            topic, partition, kind, unique_id = parse_partition_dir_name(name)
        except ParseError as exc:
            return exc.message
    part = PartitionDir(path, name, topic, partition, kind, unique_id)
    for entry in _entries(path, part.unreadable):
        classify_partition_file(entry, part)
    part.segments.sort(key=lambda s: s.base_offset)
    part.producer_snapshots.sort(key=lambda f: f.base_offset or 0)
    part.kraft_snapshots.sort(key=lambda f: (f.base_offset or 0, f.epoch or 0))
    return part


def inventory(path: str | os.PathLike) -> LogDirInventory:
    """Classify every entry of the log directory ``path`` (and of its partition directories)."""
    root = os.path.abspath(os.fspath(path))
    inv = LogDirInventory(root)
    for entry in _entries(root, inv.unreadable):
        name = entry.name
        if entry_is_dir(entry):
            if name == REMOTE_INDEX_CACHE:
                inv.remote_index_cache = _info(entry, "remote-log-index-cache")
                continue
            result = inventory_partition(entry.path, name)
            if isinstance(result, str):
                inv.invalid_dirs.append((_info(entry, "directory"), result))
            else:
                result.link_target = _link_target(entry)
                inv.partitions.append(result)
            continue
        special = _special(entry)
        if special is not None:
            inv.special.append(special)
            continue
        kind = ROOT_FILES.get(name)
        if kind is not None:
            info = _info(entry, kind)
            if kind == "offset-checkpoint":
                inv.checkpoints[name] = info
            else:
                inv.root_files[kind] = info
            continue
        if name.endswith(".tmp") and name[:-4] in ROOT_FILES:
            inv.leftovers.append(_info(entry, ROOT_FILES[name[:-4]], state="tmp"))
            continue
        inv.unknown.append(_info(entry, "unknown"))
    inv.partitions.sort(key=lambda p: (p.topic, p.partition, p.kind, p.name))
    return inv
