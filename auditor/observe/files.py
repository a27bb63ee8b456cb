"""Small files as their Kafka reader sees them: a bounded read, the parsed value or Kafka's error, and
producer-state snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.layout.inventory import FileInfo
from parsers.errors import ParseError
from parsers.files import read_regular

MAX_SMALL_FILE = 64 << 20


def read_bytes(path: str, limit: int = MAX_SMALL_FILE) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (``parsers.files``: never a FIFO or device).
    Only for small files; indexes are scanned in windows (:class:`parsers.indexes.IndexScan`)."""
    return read_regular(path, limit)


@dataclass
class SnapshotFacts:
    """A producer state ``.snapshot`` (offset from its name) as read by ``read_producer_snapshot``."""

    path: str
    offset: int
    size: int
    version: int | None = None
    crc_valid: bool | None = None
    crc: int | None = None
    computed_crc: int | None = None
    entries: int = 0
    max_last_offset: int | None = None
    max_txn_first_offset: int | None = None
    error: str | None = None
    error_offset: int | None = None


def load_snapshot(info: FileInfo) -> SnapshotFacts:
    from parsers.producer_snapshot import read_producer_snapshot

    facts = SnapshotFacts(info.path, info.base_offset or 0, info.size)
    try:
        snap = read_producer_snapshot(read_bytes(info.path), info.path)
    except ParseError as exc:
        facts.error, facts.error_offset = exc.message, exc.offset
        return facts
    facts.version, facts.crc_valid, facts.crc, facts.computed_crc = (
        snap.version,
        snap.crc_valid,
        snap.crc,
        snap.computed_crc,
    )
    facts.entries = len(snap.entries)
    if snap.entries:
        facts.max_last_offset = max(e.last_offset for e in snap.entries)
        facts.max_txn_first_offset = max(e.current_txn_first_offset for e in snap.entries)
    return facts


@dataclass
class ParsedFile:
    """A small file and what its Kafka reader made of it: ``value`` or ``error`` (Kafka's message)."""

    path: str | None
    value: Any = None
    error: ParseError | None = None
    read_error: str | None = None

    @property
    def present(self) -> bool:
        return self.path is not None

    @property
    def ok(self) -> bool:
        return self.path is not None and self.error is None and self.read_error is None


def parse_file(info: FileInfo | None, reader) -> ParsedFile:
    if info is None:
        return ParsedFile(None)
    try:
        data = read_bytes(info.path)
    except OSError as exc:
        return ParsedFile(info.path, read_error=exc.strerror or str(exc))
    try:
        return ParsedFile(info.path, reader(data, info.path))
    except ParseError as exc:
        return ParsedFile(info.path, error=exc.at(path=info.path))
