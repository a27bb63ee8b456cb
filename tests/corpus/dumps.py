"""Reading the real ``kafka-dump-log.sh`` outputs saved under ``corpus/*/dumps/`` (test helper)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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


def read_dump(path: Path) -> Iterator[DumpedFile]:
    current: DumpedFile | None = None
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if line.startswith("Dumping "):
                if current:
                    yield current
                current = DumpedFile(line[len("Dumping ") :])
            elif current is None:
                continue
            elif line.startswith("baseOffset: ") or line.startswith("offset: ") and "position:" in line:
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
    if current:
        yield current


def dump_files(corpus: Path, pattern: str) -> Iterator[tuple[Path, DumpedFile]]:
    for dump in sorted(corpus.glob(f"*/dumps/*/{pattern}")) + sorted(corpus.glob(f"*/*/dumps/*/{pattern}")):
        for section in read_dump(dump):
            yield dump, section
