"""The batch rows the pass holds for one partition (those of the chunks where its replicas are not unanimous),
by broker in offset order, in bounded memory: up to :data:`IN_MEMORY` rows as objects, the rest spilled to a
temporary file (in Spark's local directories on an executor) in chunks and read back a chunk at a time. Every
reader of the held rows walks them in offset order (``pass_divergence``, ``pass_loss``, ``partition_pass``),
so the rows of a partition whose replicas diverge over millions of batches cost the pass no more memory than
those of one diverging over a few (the state of each held transactional batch is still kept:
``pass_loss.walk_batches``)."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import IO

from auditor.spark.pass_rows import BATCH_FIELDS, BatchRow

IN_MEMORY = 200_000
"""Held rows kept as objects (about 450 bytes each) before they are spilled."""

CHUNK = 20_000
"""Rows written (and read back) at a time: past :data:`IN_MEMORY` rows (and at least this many), the rows in
memory are spilled in pieces of this many."""


class HeldRows(Mapping[int, Iterable[BatchRow]]):
    """Held batch rows by broker: ``held[broker]`` is that replica's rows in offset order, walked anew by
    every ``for`` (a file chunk at a time once spilled); ``sorted(held)`` the brokers. Appended in (broker,
    offset) order (:func:`auditor.spark.pass_loss.walk_batches`); :meth:`close` removes the spill file.
    Memory: at most ``max(in_memory, chunk)`` rows as objects, and a chunk per walk under way."""

    def __init__(self, in_memory: int | None = None, chunk: int | None = None) -> None:
        self._limit = IN_MEMORY if in_memory is None else in_memory
        self._chunk = max(1, CHUNK if chunk is None else chunk)
        self._rows: dict[int, list[BatchRow]] = {}
        self._spilled: dict[int, list[tuple[int, int]]] = {}  # broker -> (file position, rows) of its chunks
        self._file: IO[bytes] | None = None
        self._in_memory = 0
        self._last: dict[int, int] = {}  # broker -> base offset of its last row

    def append(self, b: BatchRow) -> None:
        """Keep ``b``; ValueError when it comes before its replica's last row (every reader walks a replica's
        rows in offset order)."""
        last = self._last.get(b.broker)
        if last is not None and b.base_offset < last:
            raise ValueError(f"held batch rows out of offset order: {b.base_offset} after {last}")
        self._last[b.broker] = b.base_offset
        rows = self._rows.get(b.broker)
        if rows is None:
            rows = self._rows[b.broker] = []
        rows.append(b)
        self._in_memory += 1
        if self._in_memory > self._limit and self._in_memory >= self._chunk:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            local = os.environ.get("SPARK_LOCAL_DIRS")  # an executor's scratch space, as pyspark's own spills
            where = local.split(",")[0] if local else None
            self._file = tempfile.TemporaryFile(prefix="kafka-auditor-held-", dir=where)  # noqa: SIM115 - close()
        fh = self._file
        fh.seek(0, 2)
        for broker, rows in self._rows.items():
            for i in range(0, len(rows), self._chunk):
                part = rows[i : i + self._chunk]
                at = fh.tell()
                values = [tuple(getattr(b, name) for name in BATCH_FIELDS) for b in part]
                pickle.dump(values, fh, protocol=pickle.HIGHEST_PROTOCOL)
                self._spilled.setdefault(broker, []).append((at, len(part)))
            rows.clear()
        self._in_memory = 0

    @property
    def spilled(self) -> bool:
        """Some rows are on disk."""
        return bool(self._spilled)

    def _walk(self, broker: int) -> Iterator[BatchRow]:
        for at, _n in self._spilled.get(broker, ()):
            fh = self._file
            assert fh is not None
            fh.seek(at)
            values = pickle.load(fh)
            yield from map(BatchRow.of, values)
        yield from self._rows.get(broker, ())

    def __getitem__(self, broker: int) -> Iterable[BatchRow]:
        if broker not in self._rows and broker not in self._spilled:
            raise KeyError(broker)
        return _Walk(self, broker)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._rows.keys() | self._spilled.keys()))

    def __len__(self) -> int:
        return len(self._rows.keys() | self._spilled.keys())

    def count(self) -> int:
        """Held rows in all."""
        return sum(len(r) for r in self._rows.values()) + sum(
            n for chunks in self._spilled.values() for _at, n in chunks
        )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _Walk:
    """One replica's held rows, walked anew by each ``for``."""

    def __init__(self, held: HeldRows, broker: int) -> None:
        self._held, self._broker = held, broker

    def __iter__(self) -> Iterator[BatchRow]:
        return self._held._walk(self._broker)
