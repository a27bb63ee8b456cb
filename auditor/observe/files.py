"""Small files as their Kafka reader sees them: a bounded read, the parsed value or Kafka's error, and
producer-state snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class SnapshotFacts(ParsedFile):
    """A producer state ``.snapshot`` as ``read_producer_snapshot`` reads it (``value``: the decoded
    ``ProducerSnapshotFile``, or ``error``), with the offset from its name and its size."""

    offset: int = field(default=0, kw_only=True)
    size: int = field(default=0, kw_only=True)

    def highest_offset(self) -> int | None:
        """The highest offset its entries record (a producer's last offset or its open transaction's first
        offset); None when it holds no entries or did not decode."""
        entries = self.value.entries if self.value is not None else []
        return max((max(e.last_offset, e.current_txn_first_offset) for e in entries), default=None)


def load_snapshot(info: FileInfo) -> SnapshotFacts:
    """The snapshot ``info`` as Kafka's reader sees it (an ``OSError`` reading it is the caller's)."""
    from parsers.producer_snapshot import read_producer_snapshot

    named = {"offset": info.base_offset or 0, "size": info.size}
    try:
        decoded = read_producer_snapshot(read_bytes(info.path), info.path)
    except ParseError as exc:
        return SnapshotFacts(info.path, error=exc, **named)
    return SnapshotFacts(info.path, decoded, **named)


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
