"""Write one night's captures of ``kafka-auditor simulate history``: folders and/or ``tar -C /``-style
archives.

Folders: ``OUT/dumps/<YYYY-MM-DDTHHMMSSZ>/broker-<id>/<logdir>/...``; archives:
``OUT/archives/broker-<id>-<YYYYMMDDTHHMMSSZ>.tgz`` whose members are named after the log dir path
(``var/lib/kafka/data-1/replication-offset-checkpoint``), as ``tar -C / -czf ...`` of the small files writes
them. Every file, member and gzip header carries the capture time, so the same seed writes the same bytes.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

FORMATS = ("folders", "archives", "both")


def folder_stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")


def archive_stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@dataclass
class LogDirCapture:
    """One log dir's files at one capture: ``files`` maps names relative to the log dir to bytes."""

    name: str  # folder name of the log dir ("data-1")
    path: str  # the log dir's absolute path ("/var/lib/kafka/data-1")
    files: dict[str, bytes]


@dataclass
class BrokerCapture:
    """Every log dir of one broker at one capture time, plus archive-only hostile members."""

    broker: int
    time_ms: int
    log_dirs: list[LogDirCapture]
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (member name, link target): archives only


def folder_root(out: Path, capture: BrokerCapture) -> Path:
    return out / "dumps" / folder_stamp(capture.time_ms) / f"broker-{capture.broker}"


def archive_path(out: Path, capture: BrokerCapture) -> Path:
    return out / "archives" / f"broker-{capture.broker}-{archive_stamp(capture.time_ms)}.tgz"


def write_folders(out: Path, capture: BrokerCapture) -> int:
    """Write ``capture`` under ``OUT/dumps``; every file and directory gets the capture time as mtime.
    Returns the number of files."""
    seconds = capture.time_ms / 1000
    root = folder_root(out, capture)
    dirs: set[Path] = {root.parent, root}
    count = 0
    for ld in capture.log_dirs:
        base = root / ld.name
        for name, data in sorted(ld.files.items()):
            path = base / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            os.utime(path, (seconds, seconds))
            count += 1
            parent = path.parent
            while parent != root:
                dirs.add(parent)
                parent = parent.parent
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        os.utime(d, (seconds, seconds))
    return count


def archive_bytes(capture: BrokerCapture) -> bytes:
    """The ``.tgz`` of ``capture`` (deterministic: sorted members, fixed owner, capture-time mtimes)."""
    seconds = capture.time_ms // 1000
    members: list[tuple[str, bytes | None, str | None]] = []
    for ld in capture.log_dirs:
        prefix = ld.path.strip("/")
        members += [(f"{prefix}/{name}", data, None) for name, data in ld.files.items()]
    members += [(name, None, target) for name, target in capture.symlinks]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data, target in sorted(members, key=lambda m: m[0]):
            info = tarfile.TarInfo(name)
            info.mtime = seconds
            info.uid = info.gid = 1000
            info.uname = info.gname = "kafka"
            if target is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = target
                info.mode = 0o777
                tar.addfile(info)
            else:
                assert data is not None
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=seconds, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def write_archive(out: Path, capture: BrokerCapture) -> Path:
    path = archive_path(out, capture)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(archive_bytes(capture))
    seconds = capture.time_ms / 1000
    os.utime(path, (seconds, seconds))
    return path
