"""A segment's tables held until the segment has been read whole, spilled to temporary Arrow files past
:data:`SEGMENT_HOLD` bytes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pyarrow as pa

SEGMENT_HOLD = 8 << 20
"""Bytes of a segment's tables held in memory until the segment has been read whole; past this, they wait in
temporary Arrow files (one per kind), so memory stays bounded whatever the segment's size."""


class Held:
    """The ``(kind, table)`` pieces of one segment, held until it has been read whole (:meth:`release`);
    dropped, with any temporary files, on exit."""

    def __init__(self) -> None:
        self.tables: list[tuple[str, pa.Table]] = []
        self.nbytes = 0
        self.spill: tempfile.TemporaryDirectory | None = None
        self.files: dict[str, tuple[str, pa.NativeFile, pa.ipc.RecordBatchFileWriter]] = {}

    def add(self, kind: str, table: pa.Table) -> None:
        if self.spill is not None:
            self._write(kind, table)
            return
        self.tables.append((kind, table))
        self.nbytes += table.nbytes
        if self.nbytes > SEGMENT_HOLD:
            self.spill = tempfile.TemporaryDirectory(prefix="kafka-auditor-segment-")
            for held_kind, held in self.tables:
                self._write(held_kind, held)
            self.tables, self.nbytes = [], 0

    def _write(self, kind: str, table: pa.Table) -> None:
        if kind not in self.files:
            path = os.path.join(self.spill.name, f"{kind}.arrow")
            sink = pa.OSFile(path, "wb")
            self.files[kind] = path, sink, pa.ipc.new_file(sink, table.schema)
        self.files[kind][2].write_table(table)

    def release(self) -> Iterator[tuple[str, pa.Table]]:
        """The pieces, in order within each kind (read back one record batch at a time once spilled)."""
        yield from self.tables
        self.tables = []
        while self.files:
            kind, (path, sink, writer) = self.files.popitem()
            writer.close()
            sink.close()
            with pa.OSFile(path, "rb") as source:
                # the system allocator gives the pages back once the writer is done with them
                reader = pa.ipc.open_file(source, memory_pool=pa.system_memory_pool())
                for i in range(reader.num_record_batches):
                    yield kind, pa.Table.from_batches([reader.get_batch(i)])

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc) -> None:
        for _, sink, _writer in self.files.values():
            sink.close()
        if self.spill is not None:
            self.spill.cleanup()
