"""``kafka-auditor dump``: decode any Kafka file into a stream of events (no printing here).

Each event is a flat dict with a ``kind`` (:mod:`auditor.dump.events`); ``auditor.report.dump_events``
turns the stream into text, JSON or JSON Lines. Files are opened read-only; nothing is created.

``Dumper.events`` yields one ``record`` event per record. ``Dumper.stream``, what the command renders, gives
the records of a well-formed batch as one ``records`` block instead (rows decoded at once by
``parsers.record_batch.record_rows``); ``record_events`` expands a block into the very ``record`` events the
per-record path yields (``tests/dump/test_segments.py``). Each kind of file has one reader: segments and
snapshots (:mod:`auditor.dump.segments`), indexes (:mod:`auditor.dump.indexes`), the small files
(:data:`auditor.dump.small_files.READERS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from auditor.dump.events import expand_blocks
from auditor.dump.indexes import INDEX_KINDS, index_events
from auditor.dump.options import DumpOptions
from auditor.dump.segments import SegmentDump
from auditor.dump.small_files import small_file_events
from auditor.layout.filetypes import classify, strip_state_suffix
from parsers.errors import ParseError
from parsers.files import regular_file_problem

__all__ = ["DumpOptions", "Dumper", "expand_blocks"]


class Dumper:
    """The events of the files ``kafka-auditor dump`` is given, as ``options`` asks."""

    def __init__(self, options: DumpOptions, *, blocks: bool = True) -> None:
        self.options = options
        self.blocks = blocks and not options.print_values

    def events(self, path: str | Path) -> Iterator[dict]:
        """The events of one file, one ``record`` event per record."""
        return expand_blocks(self.stream(path))

    def stream(self, path: str | Path) -> Iterator[dict]:
        """The events of one file, the records of a well-formed batch in one ``records`` block (``rows``:
        ``(offset, timestamp, keySize, valueSize, sequence, headerKeys)``, with the batch's
        ``timestampType``)."""
        path = str(path)
        kind = classify(path)
        yield {
            "kind": "file",
            "path": path,
            "fileType": kind,
            "state": strip_state_suffix(Path(path).name)[1],
        }
        if kind is None:
            raise ParseError("not a Kafka file this tool knows (by its name)", path=path)
        if (problem := regular_file_problem(path)) is not None:
            raise ParseError(problem, path=path, offset=0)
        if kind in ("log", "kraft-snapshot"):
            yield from SegmentDump(self.options, blocks=self.blocks).events(path, kind)
        elif kind in INDEX_KINDS:
            yield from index_events(path, kind, self.options.max_bytes)
        else:
            yield from small_file_events(path, kind, self.options.max_bytes)
