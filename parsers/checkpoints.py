"""Text checkpoint files (spec §11): offset checkpoints and ``leader-epoch-checkpoint``.

All of them use Kafka's ``CheckpointFile`` container, read with ``BufferedReader.readLine`` (UTF-8)::

    <version>        Integer.parseInt, must be 0
    <N>              Integer.parseInt
    <entry line> x N split on "\\s+" (Java semantics), numbers via Integer.parseInt / Long.parseLong

The reader here accepts exactly what Kafka accepts and fails where Kafka fails, with Kafka's message. A
ParseError's ``offset`` is the byte offset of the start of the offending line. Errors that are not
``IOException``s in Kafka (``NumberFormatException``, ``IllegalArgumentException``) are ParseErrors too,
with the Java exception message.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from parsers.errors import ParseError

CHECKPOINT_VERSION = 0

CHECKPOINT_KINDS: dict[str, str] = {
    "replication-offset-checkpoint": "high_watermark",
    "recovery-point-offset-checkpoint": "recovery_point",
    "log-start-offset-checkpoint": "log_start_offset",
    "cleaner-offset-checkpoint": "cleaner_offset",
    "leader-epoch-checkpoint": "leader_epoch",
}
"""Checkpoint file name -> what its offsets are (high watermark, recovery point, ...)."""

OFFSET_CHECKPOINT_FILES = frozenset(name for name, kind in CHECKPOINT_KINDS.items() if kind != "leader_epoch")

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_JAVA_WHITESPACE = "[ \t\n\x0b\f\r]"  # java.util.regex \s without UNICODE_CHARACTER_CLASS
_WHITESPACE_RUN = re.compile(_JAVA_WHITESPACE + "+")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

# ------------------------------------------------------------------------------------------- Java semantics


def _java_parse_number(text: str, low: int, high: int) -> int | None:
    """``Integer.parseInt``/``Long.parseLong`` (radix 10): optional sign, then at least one digit.

    Like Java's ``Character.digit`` any Unicode decimal digit (category Nd) in the BMP counts; no whitespace,
    no underscores, no empty string; out of range fails. Returns None where Java throws NumberFormatException.
    """
    if not text:
        return None
    negative = text[0] == "-"
    start = 1 if text[0] in "+-" else 0
    if start == len(text):
        return None
    value = 0
    limit = -low if negative else high
    for ch in text[start:]:
        if ord(ch) > 0xFFFF or unicodedata.category(ch) != "Nd":
            return None  # astral digits are surrogate pairs in Java, which Character.digit(char) rejects
        value = value * 10 + unicodedata.decimal(ch)
        if value > limit:
            return None
    return -value if negative else value


def _java_parse_int(text: str) -> int | None:
    """``Integer.parseInt(text)``, or None where Java throws NumberFormatException."""
    return _java_parse_number(text, _INT32_MIN, _INT32_MAX)


def _java_parse_long(text: str) -> int | None:
    """``Long.parseLong(text)``, or None where Java throws NumberFormatException."""
    return _java_parse_number(text, _INT64_MIN, _INT64_MAX)


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``Pattern.split(text)`` (limit 0): leading empty token kept, trailing empty tokens dropped."""
    if not pattern.search(text):
        return [text]
    parts = pattern.split(text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_split_whitespace(text: str) -> list[str]:
    """``text.split("\\\\s+")`` with Java semantics."""
    return _java_split(_WHITESPACE_RUN, text)


def _java_lines(data: bytes) -> list[tuple[bytes, int]]:
    """``BufferedReader.readLine``: (line, byte offset of its start); ends ``\\n``, ``\\r\\n`` or ``\\r``."""
    lines: list[tuple[bytes, int]] = []
    pos, size = 0, len(data)
    while pos < size:
        cr, lf = data.find(b"\r", pos), data.find(b"\n", pos)
        ends = [i for i in (cr, lf) if i >= 0]
        if not ends:
            lines.append((data[pos:], pos))
            break
        end = min(ends)
        lines.append((data[pos:end], pos))
        pos = end + 2 if data[end : end + 2] == b"\r\n" else end + 1
    return lines


def _decode_utf8(data: bytes | memoryview, path: str | None, what: str) -> bytes:
    """Validate UTF-8 (Kafka decodes with a reporting decoder: ``MalformedInputException``)."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"Malformed input in {what} (invalid UTF-8, Input length = {exc.end - exc.start})",
            path=path,
            offset=exc.start,
        ) from None
    return raw


def _number_format(token: str, path: str | None, offset: int) -> ParseError:
    return ParseError(f'For input string: "{token}"', path=path, offset=offset)


# ------------------------------------------------------------------------------------------- container

T = TypeVar("T")


@dataclass
class _Container:
    version: int | None
    count: int | None
    entries: list
    offsets: list[int]


def _read_container(
    data: bytes | memoryview,
    path: str | None,
    parse_entry: Callable[[str, int], T | None],
) -> _Container:
    """``CheckpointFile.CheckpointReadBuffer.read`` for version 0; ``parse_entry`` returns None when the line
    has the wrong number of tokens (Kafka's "Malformed line")."""
    location = path if path is not None else "<buffer>"
    raw = _decode_utf8(data, path, f"checkpoint file [{location}]")
    lines = [(line.decode("utf-8"), offset) for line, offset in _java_lines(raw)]

    def malformed(line: str, offset: int) -> ParseError:
        return ParseError(f"Malformed line in checkpoint file [{location}]: {line}", path=path, offset=offset)

    if not lines:
        return _Container(None, None, [], [])
    line, offset = lines[0]
    version = _java_parse_int(line)
    if version is None:
        raise malformed(line, offset)
    if version != CHECKPOINT_VERSION:
        raise ParseError(
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} "
            f"in checkpoint file at: {location}",
            path=path,
            offset=offset,
        )
    if len(lines) == 1:
        return _Container(version, None, [], [])
    line, count_offset = lines[1]
    count = _java_parse_int(line)
    if count is None:
        raise malformed(line, count_offset)
    if count < 0:  # new ArrayList<>(expectedSize)
        raise ParseError(f"Illegal Capacity: {count}", path=path, offset=count_offset)
    entries, offsets = [], []
    for line, offset in lines[2:]:
        entry = parse_entry(line, offset)
        if entry is None:
            raise malformed(line, offset)
        entries.append(entry)
        offsets.append(offset)
    if len(entries) != count:
        raise ParseError(
            f"Expected [{count}] entries in checkpoint file [{location}], but found only [{len(entries)}]",
            path=path,
            offset=count_offset,  # the declared count is what disagrees with the lines
        )
    return _Container(version, count, entries, offsets)


def _format_container(lines: Iterable[str]) -> bytes:
    body = list(lines)
    text = f"{CHECKPOINT_VERSION}\n{len(body)}\n" + "".join(line + "\n" for line in body)
    return text.encode("utf-8")


# ------------------------------------------------------------------------------------ offset checkpoints


def is_legal_topic_name(name: str) -> bool:
    """``Topic.validate``: ``[a-zA-Z0-9._-]{1,249}`` and not ``.`` or ``..``."""
    return bool(_LEGAL_TOPIC.fullmatch(name)) and name not in (".", "..")


@dataclass
class OffsetCheckpoint:
    """An offset checkpoint (§11.2): (topic, partition, offset) ``entries`` in file order, duplicates kept.

    ``kind`` comes from the file name (``CHECKPOINT_KINDS``) when a path is given; ``count`` is the declared
    entry count (None for an empty file or one with only the version line); ``warnings`` lists things Kafka
    accepts but that are evidence of corruption or tampering (illegal topic names, duplicate partitions).
    """

    version: int | None
    count: int | None
    entries: list[tuple[str, int, int]] = field(default_factory=list)
    line_offsets: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kind: str | None = None

    def as_dict(self) -> dict[tuple[str, int], int]:
        """What Kafka loads: a map where the last line for a partition wins."""
        return {(topic, partition): offset for topic, partition, offset in self.entries}


def parse_offset_checkpoint(data: bytes | memoryview, path: str | None = None) -> OffsetCheckpoint:
    """Parse ``replication-offset-checkpoint`` / ``recovery-point-offset-checkpoint`` /
    ``log-start-offset-checkpoint`` / ``cleaner-offset-checkpoint`` (entry ``topic partition offset``)."""

    def parse_entry(line: str, offset: int) -> tuple[str, int, int] | None:
        tokens = _java_split_whitespace(line)
        if len(tokens) != 3:
            return None
        topic, partition_text, offset_text = tokens
        partition = _java_parse_int(partition_text)
        if partition is None:
            raise _number_format(partition_text, path, offset)
        value = _java_parse_long(offset_text)
        if value is None:
            raise _number_format(offset_text, path, offset)
        return topic, partition, value

    container = _read_container(data, path, parse_entry)
    checkpoint = OffsetCheckpoint(
        version=container.version,
        count=container.count,
        entries=container.entries,
        line_offsets=container.offsets,
        kind=CHECKPOINT_KINDS.get(os.path.basename(path)) if path else None,
    )
    seen: set[tuple[str, int]] = set()
    for (topic, partition, _), offset in zip(checkpoint.entries, checkpoint.line_offsets, strict=True):
        if not is_legal_topic_name(topic):
            checkpoint.warnings.append(f"byte {offset}: topic {topic!r} is not a legal topic name")
        if (topic, partition) in seen:
            checkpoint.warnings.append(
                f"byte {offset}: duplicate entry for {topic}-{partition} (Kafka keeps the last one)"
            )
        seen.add((topic, partition))
    return checkpoint


def format_offset_checkpoint(entries: Iterable[tuple[str, int, int]]) -> bytes:
    """Kafka's bytes for an offset checkpoint: ``0\\n<N>\\n`` then ``topic partition offset\\n`` lines."""
    return _format_container(f"{topic} {partition} {offset}" for topic, partition, offset in entries)


# ------------------------------------------------------------------------------------------- leader epochs


@dataclass
class NormalizedEpochs:
    """The leader epoch cache Kafka builds from the file (``LeaderEpochFileCache`` feeding each line to
    ``assign``): ``entries`` kept, and ``dropped`` lines as (epoch, start offset, reason)."""

    entries: list[tuple[int, int]]
    dropped: list[tuple[int, int, str]]


@dataclass
class LeaderEpochCheckpoint:
    """A ``leader-epoch-checkpoint`` (§11.3): (epoch, start offset) entries in file order."""

    version: int | None
    count: int | None
    entries: list[tuple[int, int]] = field(default_factory=list)
    line_offsets: list[int] = field(default_factory=list)
    path: str | None = None

    def normalized(self) -> NormalizedEpochs:
        """Apply Kafka's load-time ``assign`` to every line, in order.

        A line whose epoch equals the latest cached epoch with a start offset not below it is ignored; any
        other line first removes cached entries (from the tail) whose epoch >= its epoch or whose start offset
        >= its start offset, then is appended. A negative epoch or start offset makes Kafka throw
        ``IllegalArgumentException`` (the log fails to load): ParseError at that line.
        """
        kept: list[tuple[int, int]] = []
        dropped: list[tuple[int, int, str]] = []
        for (epoch, start), offset in zip(self.entries, self.line_offsets, strict=True):
            if epoch < 0 or start < 0:
                raise ParseError(
                    "Received invalid partition leader epoch entry "
                    f"EpochEntry(epoch={epoch}, startOffset={start})",
                    path=self.path,
                    offset=offset,
                )
            if kept and epoch == kept[-1][0] and start >= kept[-1][1]:
                dropped.append((epoch, start, f"same epoch as the latest entry {kept[-1]}, not earlier"))
                continue
            while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start):
                old_epoch, old_start = kept.pop()
                dropped.append((old_epoch, old_start, f"truncated by later entry ({epoch}, {start})"))
            kept.append((epoch, start))
        return NormalizedEpochs(kept, dropped)


def parse_leader_epoch_checkpoint(data: bytes | memoryview, path: str | None = None) -> LeaderEpochCheckpoint:
    """Parse a ``leader-epoch-checkpoint`` (entry line ``epoch startOffset``, int32 and int64)."""

    def parse_entry(line: str, offset: int) -> tuple[int, int] | None:
        tokens = _java_split_whitespace(line)
        if len(tokens) != 2:
            return None
        epoch = _java_parse_int(tokens[0])
        if epoch is None:
            raise _number_format(tokens[0], path, offset)
        start = _java_parse_long(tokens[1])
        if start is None:
            raise _number_format(tokens[1], path, offset)
        return epoch, start

    container = _read_container(data, path, parse_entry)
    return LeaderEpochCheckpoint(
        container.version, container.count, container.entries, container.offsets, path
    )


def format_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    """Kafka's bytes for a leader-epoch-checkpoint: ``0\\n<N>\\n`` then ``epoch startOffset\\n`` lines."""
    return _format_container(f"{epoch} {start}" for epoch, start in entries)
