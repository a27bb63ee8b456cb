"""Text checkpoint files (spec §11): offset checkpoints and ``leader-epoch-checkpoint``.

All of them use Kafka's ``CheckpointFile`` container, read with ``BufferedReader.readLine`` (UTF-8)::

    <version>        Integer.parseInt, must be 0
    <N>              Integer.parseInt
    <entry line> x N split on "\\s+" (Java semantics), numbers via Integer.parseInt / Long.parseLong

The reader here accepts exactly what Kafka accepts and fails where Kafka fails, with Kafka's message. A
ParseError's ``offset`` is the byte offset of the start of the offending line. Errors that are not
``IOException``s in Kafka (``NumberFormatException``, ``IllegalArgumentException``) are ParseErrors too,
with the Java exception message.

Linear time: lines are found in one pass, numbers are parsed in C (a multi-megabyte token costs
milliseconds), and runs of lines in the shape Kafka writes are converted with one regex match and numpy
(``_FastRun``), with the same result as the per-line path (``tests/parsers/test_checkpoints.py``). A 16 MB
checkpoint parses in about a second; error messages quote at most 200 characters of a line.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TypeVar

import numpy as np

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
_DECIMAL_DIGITS = re.compile(r"\d+")  # str patterns: \d is exactly Unicode category Nd
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_MAX_SIGNIFICANT_DIGITS = len(str(2**63))  # anything longer (after leading zeros) is out of int64 range
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_INT_DIGITS = "{1,9}"  # at most 9 digits: always within int32, so Integer.parseInt accepts them
_LONG_DIGITS = "{1,18}"  # at most 18 digits: always within int64


@functools.cache
def _zero_digits() -> str:
    """Every BMP decimal digit whose value is 0 ("0", Arabic-Indic zero, fullwidth zero, ...)."""
    return "".join(
        ch
        for ch in map(chr, range(0x10000))
        if unicodedata.category(ch) == "Nd" and unicodedata.decimal(ch) == 0
    )

# ------------------------------------------------------------------------------------------- Java semantics


def _java_parse_number(text: str, low: int, high: int) -> int | None:
    """``Integer.parseInt``/``Long.parseLong`` (radix 10): optional sign, then at least one digit.

    Like Java's ``Character.digit`` any Unicode decimal digit (category Nd) in the BMP counts; no whitespace,
    no underscores, no empty string; out of range fails. Returns None where Java throws NumberFormatException.
    Linear in ``len(text)`` and C-speed (regex, ``lstrip`` of zero digits, ``int`` of at most 19 digits), so a
    multi-megabyte token costs milliseconds.
    """
    if not text:
        return None
    negative = text[0] == "-"
    digits = text[1:] if text[0] in "+-" else text
    if digits.isascii():  # the usual case: str.isdigit is exactly [0-9] on ASCII
        if not digits.isdigit():
            return None
        significant = digits.lstrip("0")
    else:
        # astral digits are surrogate pairs in Java, which Character.digit(char) rejects
        if not _DECIMAL_DIGITS.fullmatch(digits) or _ASTRAL.search(digits):
            return None
        significant = digits.lstrip(_zero_digits())
    if len(significant) > _MAX_SIGNIFICANT_DIGITS:
        return None
    value = int(significant) if significant else 0  # int() maps every Nd digit to its decimal value
    if value > (-low if negative else high):
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


def _java_tokens(text: str, expected: int) -> list[str] | None:
    """``text.split("\\\\s+")`` when it has exactly ``expected`` tokens, else None, without splitting a
    long line into millions of tokens: at most ``expected`` splits are made. After a split the remainder
    starts with a non-whitespace character (the separator is a maximal run), so a non-empty remainder means
    more tokens; an empty one is a trailing empty token, which Java drops."""
    parts = _WHITESPACE_RUN.split(text, maxsplit=expected)
    while len(parts) > 1 and parts[-1] == "":  # no separator at all: Java returns the text itself
        parts.pop()
    if parts == [""] and text:
        parts = []  # only whitespace: every token empty, all dropped
    return parts if len(parts) == expected else None


def _java_lines(data: bytes, limit: int | None = None) -> list[tuple[bytes, int]]:
    """``BufferedReader.readLine``: (line, byte offset of its start); ends ``\\n``, ``\\r\\n`` or ``\\r``.

    One left-to-right pass (each terminator found once), so linear in the size of ``data``; at most
    ``limit`` lines when given (a reader that reads only the first lines never looks further).
    """
    lines: list[tuple[bytes, int]] = []
    pos = 0
    for brk in _LINE_BREAK.finditer(data):
        if limit is not None and len(lines) >= limit:
            return lines
        lines.append((data[pos : brk.start()], pos))
        pos = brk.end()
    if pos < len(data) and (limit is None or len(lines) < limit):
        lines.append((data[pos:], pos))
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


_MESSAGE_TEXT = 200
"""Characters of a line or token quoted in an error message (Kafka quotes all of it; a 16 MB line must not
become a 16 MB message)."""


def _quoted(text: str) -> str:
    if len(text) <= _MESSAGE_TEXT:
        return text
    return f"{text[:_MESSAGE_TEXT]}... ({len(text) - _MESSAGE_TEXT} more characters)"


def _number_format(token: str, path: str | None, offset: int) -> ParseError:
    return ParseError(f'For input string: "{_quoted(token)}"', path=path, offset=offset)


# ------------------------------------------------------------------------------------------- container

T = TypeVar("T")


@dataclass
class _Container:
    version: int | None
    count: int | None
    entries: list
    offsets: list[int]


@dataclass(frozen=True)
class _FastRun:
    """The shape nearly every line of a file Kafka wrote has (ASCII tokens, one space between them, ``\\n``
    or ``\\r\\n`` endings, numbers short enough to be in range), as a regex matching a run of such lines,
    and ``build`` turning the run's text into entries. Lines outside the shape take the general path, so
    results are the same either way; the fast path only avoids Python work per line."""

    run: re.Pattern[bytes]
    build: Callable[[str], list]


class _LineCursor:
    """``BufferedReader.readLine`` over bytes from a position: each terminator is found once (linear)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0

    def next_line(self) -> tuple[str, int] | None:
        """(line, byte offset of its start), or None at the end of the data."""
        raw, start = self.raw, self.pos
        if start >= len(raw):
            return None
        brk = _LINE_BREAK.search(raw, start)
        end, self.pos = (len(raw), len(raw)) if brk is None else (brk.start(), brk.end())
        return raw[start:end].decode("utf-8"), start


def _ints_of(text: str) -> list[int]:
    """The whitespace-separated decimal numbers of ``text`` (already checked by a fast-run regex: at most 18
    digits each), parsed in C."""
    return np.fromstring(text, dtype=np.int64, sep=" ").tolist()


def _ints(tokens: list[str]) -> list[int]:
    return _ints_of(" ".join(tokens))


def _fast_entries(cursor: _LineCursor, fast: _FastRun, entries: list, offsets: list[int]) -> None:
    """Take the run of fast-shaped lines at the cursor, if any, vectorised: one regex match, one split, and
    the line offsets from a numpy scan for ``\\n``."""
    match = fast.run.match(cursor.raw, cursor.pos)
    if match is None or match.end() == cursor.pos:
        return
    chunk = cursor.raw[cursor.pos : match.end()]
    entries.extend(fast.build(chunk.decode("ascii")))
    ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\n"))
    offsets.append(cursor.pos)
    offsets.extend((ends[:-1] + 1 + cursor.pos).tolist())
    cursor.pos = match.end()


def _read_container(
    data: bytes | memoryview,
    path: str | None,
    parse_entry: Callable[[str, int], T | None],
    fast: _FastRun | None = None,
) -> _Container:
    """``CheckpointFile.CheckpointReadBuffer.read`` for version 0; ``parse_entry`` returns None when the line
    has the wrong number of tokens (Kafka's "Malformed line"). Linear in the size of the file; runs of lines
    in ``fast``'s shape are converted without a Python call per line."""
    location = path if path is not None else "<buffer>"
    raw = _decode_utf8(data, path, f"checkpoint file [{location}]")
    cursor = _LineCursor(raw)

    def malformed(line: str, offset: int) -> ParseError:
        return ParseError(
            f"Malformed line in checkpoint file [{location}]: {_quoted(line)}", path=path, offset=offset
        )

    def int_line() -> tuple[int, int] | None:
        """(value, offset) of the next line read as ``Integer.parseInt`` ("Malformed line" when it is not a
        number); None at the end of the file."""
        item = cursor.next_line()
        if item is None:
            return None
        line, offset = item
        value = _java_parse_int(line)
        if value is None:
            raise malformed(line, offset)
        return value, offset

    first = int_line()
    if first is None:
        return _Container(None, None, [], [])
    version, offset = first
    if version != CHECKPOINT_VERSION:
        raise ParseError(
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} "
            f"in checkpoint file at: {location}",
            path=path,
            offset=offset,
        )
    second = int_line()
    if second is None:
        return _Container(version, None, [], [])
    count, count_offset = second
    if count < 0:  # new ArrayList<>(expectedSize)
        raise ParseError(f"Illegal Capacity: {count}", path=path, offset=count_offset)
    entries: list = []
    offsets: list[int] = []
    while True:
        if fast is not None:
            _fast_entries(cursor, fast, entries, offsets)
        item = cursor.next_line()
        if item is None:
            break
        line, offset = item
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


def _offset_run(text: str) -> list[tuple[str, int, int]]:
    tokens = text.split()
    return list(zip(tokens[0::3], _ints(tokens[1::3]), _ints(tokens[2::3]), strict=True))


_OFFSET_FAST = _FastRun(
    re.compile(f"(?:[!-~]+ [0-9]{_INT_DIGITS} [0-9]{_LONG_DIGITS}\r?\n)*".encode()), _offset_run
)


def _offset_warnings(entries: list[tuple[str, int, int]], line_offsets: list[int]) -> list[str]:
    """Illegal topic names and duplicate partitions, in file order. The usual file has neither, which two
    C-speed set builds establish; only a file that has some is walked line by line."""
    keys = list(map(itemgetter(0, 1), entries))
    legal = {topic: is_legal_topic_name(topic) for topic in set(map(itemgetter(0), entries))}
    if len(set(keys)) == len(keys) and all(legal.values()):
        return []
    warnings: list[str] = []
    seen: set[tuple[str, int]] = set()
    for (topic, partition), offset in zip(keys, line_offsets, strict=True):
        if not legal[topic]:
            warnings.append(f"byte {offset}: topic {_quoted(repr(topic))} is not a legal topic name")
        if (topic, partition) in seen:
            warnings.append(
                f"byte {offset}: duplicate entry for {_quoted(topic)}-{partition} (Kafka keeps the last one)"
            )
        seen.add((topic, partition))
    return warnings


def parse_offset_checkpoint(data: bytes | memoryview, path: str | None = None) -> OffsetCheckpoint:
    """Parse ``replication-offset-checkpoint`` / ``recovery-point-offset-checkpoint`` /
    ``log-start-offset-checkpoint`` / ``cleaner-offset-checkpoint`` (entry ``topic partition offset``)."""

    def parse_entry(line: str, offset: int) -> tuple[str, int, int] | None:
        tokens = _java_tokens(line, 3)
        if tokens is None:
            return None
        topic, partition_text, offset_text = tokens
        partition = _java_parse_int(partition_text)
        if partition is None:
            raise _number_format(partition_text, path, offset)
        value = _java_parse_long(offset_text)
        if value is None:
            raise _number_format(offset_text, path, offset)
        return topic, partition, value

    container = _read_container(data, path, parse_entry, _OFFSET_FAST)
    checkpoint = OffsetCheckpoint(
        version=container.version,
        count=container.count,
        entries=container.entries,
        line_offsets=container.offsets,
        kind=CHECKPOINT_KINDS.get(os.path.basename(path)) if path else None,
    )
    checkpoint.warnings = _offset_warnings(checkpoint.entries, checkpoint.line_offsets)
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


def _increasing_prefix(entries: list[tuple[int, int]]) -> int:
    """How many leading entries ``assign`` keeps as they are: non-negative, epochs and start offsets strictly
    increasing (what Kafka writes). numpy, so a file of millions of lines needs no Python loop for them."""
    if not entries:
        return 0
    # epochs are int32, start offsets int64: both fit
    table = np.fromiter(itertools.chain.from_iterable(entries), dtype=np.int64, count=2 * len(entries))
    table = table.reshape(-1, 2)
    fine = (table >= 0).all(axis=1)
    fine[1:] &= (np.diff(table, axis=0) > 0).all(axis=1)
    return len(entries) if fine.all() else int(np.argmin(fine))


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
        prefix = _increasing_prefix(self.entries)
        kept: list[tuple[int, int]] = self.entries[:prefix]
        dropped: list[tuple[int, int, str]] = []
        for (epoch, start), offset in zip(self.entries[prefix:], self.line_offsets[prefix:], strict=True):
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


def _epoch_run(text: str) -> list[tuple[int, int]]:
    numbers = _ints_of(text)
    return list(zip(numbers[0::2], numbers[1::2], strict=True))


_EPOCH_FAST = _FastRun(
    re.compile(f"(?:[0-9]{_INT_DIGITS} [0-9]{_LONG_DIGITS}\r?\n)*".encode()), _epoch_run
)


def parse_leader_epoch_checkpoint(data: bytes | memoryview, path: str | None = None) -> LeaderEpochCheckpoint:
    """Parse a ``leader-epoch-checkpoint`` (entry line ``epoch startOffset``, int32 and int64)."""

    def parse_entry(line: str, offset: int) -> tuple[int, int] | None:
        tokens = _java_tokens(line, 2)
        if tokens is None:
            return None
        epoch = _java_parse_int(tokens[0])
        if epoch is None:
            raise _number_format(tokens[0], path, offset)
        start = _java_parse_long(tokens[1])
        if start is None:
            raise _number_format(tokens[1], path, offset)
        return epoch, start

    container = _read_container(data, path, parse_entry, _EPOCH_FAST)
    return LeaderEpochCheckpoint(
        container.version, container.count, container.entries, container.offsets, path
    )


def format_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    """Kafka's bytes for a leader-epoch-checkpoint: ``0\\n<N>\\n`` then ``epoch startOffset\\n`` lines."""
    return _format_container(f"{epoch} {start}" for epoch, start in entries)
