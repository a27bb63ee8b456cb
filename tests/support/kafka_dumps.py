"""Reading the real ``kafka-dump-log.sh`` outputs saved under ``corpus/*/dumps/`` (test helper)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_PAIR = re.compile(r"(\w+): (OptionalLong\[\d+\]|OptionalLong\.empty|\[[^\]]*\]|\S+)")


@dataclass
class DumpedFile:
    path: str  # relative to the corpus directory, as printed after "Dumping"
    header: list[str] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def parse_pairs(line: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _PAIR.finditer(line)}


def dump_sections(dump: Path) -> Iterator[tuple[str, list[str]]]:
    """(path printed after ``Dumping``, the lines that follow it, without newlines) for every section of a
    saved ``kafka-dump-log.sh`` output; lines before the first ``Dumping`` are skipped."""
    path: str | None = None
    lines: list[str] = []
    with gzip.open(dump, "rt", encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if line.startswith("Dumping "):
                if path is not None:
                    yield path, lines
                path, lines = line[len("Dumping ") :], []
            else:
                lines.append(line)
    if path is not None:
        yield path, lines


def dump_lines(dump: Path) -> Iterator[tuple[str, str]]:
    """(path of its section, line) for every line of :func:`dump_sections`."""
    for path, lines in dump_sections(dump):
        for line in lines:
            yield path, line


def dump_matches(dumps: Iterable[Path], pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """(path of its section, match) for every line of ``dumps`` that ``pattern`` matches at its start."""
    for dump in dumps:
        for path, line in dump_lines(dump):
            if (m := pattern.match(line)) is not None:
                yield path, m


def record_dumps(corpus: Path, group: str = "*") -> list[Path]:
    """The saved dumps of ``group`` that print records: ``--print-data-log`` of logs, and KRaft snapshots."""
    dumps = sorted(corpus.glob(f"**/dumps/*/{group}.*.txt.gz"))
    return [d for d in dumps if d.name.endswith((".print-data-log.txt.gz", ".kraft-snapshots.txt.gz"))]


def read_dump(path: Path) -> Iterator[DumpedFile]:
    for rel, lines in dump_sections(path):
        current = DumpedFile(rel)
        for line in lines:
            if line.startswith("baseOffset: ") or line.startswith("offset: ") and "position:" in line:
                current.batches.append(parse_pairs(line))
            elif line.startswith("| offset: "):
                head = line.split(" key: ")[0].split(" payload: ")[0]
                rec = parse_pairs(head[2:])
                rec["_line"] = line
                current.records.append(rec)
            elif not current.batches:
                current.header.append(line)
            else:
                current.other.append(line)
        yield current


def kafka_records(
    corpus: Path, files: Iterable[Path]
) -> Iterator[tuple[str, bool, int, bytes | None, bytes | None]]:
    """(path relative to ``corpus``, isControl, offset, key, value) of every record of ``files``, read with
    kafka-python (an independent reader; the test is skipped without it)."""
    pytest.importorskip("kafka.record")
    from kafka.record import MemoryRecords

    for path in files:
        rel = path.relative_to(corpus).as_posix()
        records = MemoryRecords(path.read_bytes())
        while (batch := records.next_batch()) is not None:
            for record in batch:
                yield rel, batch.is_control_batch, record.offset, record.key, record.value


def dump_files(corpus: Path, pattern: str) -> Iterator[tuple[Path, DumpedFile]]:
    for dump in sorted(corpus.glob(f"*/dumps/*/{pattern}")) + sorted(corpus.glob(f"*/*/dumps/*/{pattern}")):
        for section in read_dump(dump):
            yield dump, section
