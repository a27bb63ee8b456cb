"""The offset and time indexes column-wise (numpy), with the rules of ``read_offset_index`` /
``read_time_index``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parsers.indexes import (
    INDEX_WINDOW,
    OFFSET_INDEX,
    TIME_INDEX,
    IndexScan,
    IndexShape,
)

INT32_MAX = 2**31 - 1


@dataclass
class IndexArrays:
    """An index decoded column-wise with the same rules as ``parsers.indexes.read_offset_index`` /
    ``read_time_index`` (real prefix, zero padding, garbage after it); ``columns`` holds the prefix (at most
    the ``max_entries`` first entries: ``shape.entries`` counts all of them)."""

    size: int
    slots: int
    trailing_bytes: int
    padding_slots: int
    garbage_after_padding: int | None
    columns: dict[str, np.ndarray]
    shape: IndexShape | None = None

    @property
    def preallocated(self) -> bool:
        return self.padding_slots > 0

    @property
    def truncated(self) -> bool:
        """More real entries than were loaded (``max_entries``)."""
        return self.shape is not None and self.shape.entries > len(next(iter(self.columns.values())))


def index_arrays(scan: IndexScan, max_entries: int | None = None) -> IndexArrays:
    """Run a windowed :class:`IndexScan`: memory is one window plus the loaded entries."""
    shape, table = scan.run(max_entries)
    columns = {name: table[name].astype(np.int64) for name in table.dtype.names}
    padding, garbage = shape.padding_slots, shape.garbage_after_padding
    return IndexArrays(shape.size, shape.slots, shape.trailing_bytes, padding, garbage, columns, shape)


INT64_MAX = 2**63 - 1


def _absolute(relative: np.ndarray, base_offset: int) -> np.ndarray:
    """``base_offset + relative`` as int64 without wrapping: a segment name near (or past) the int64 limit
    would otherwise turn index offsets negative; an entry past the limit saturates at it (no batch is there,
    so the rules report the entry as pointing outside the segment)."""
    if 0 <= base_offset <= INT64_MAX - INT32_MAX:
        return relative + base_offset
    return np.array([min(base_offset + r, INT64_MAX) for r in relative.tolist()], dtype=np.int64)


def offset_columns(arrays: IndexArrays, base_offset: int) -> IndexArrays:
    arrays.columns = {
        "offset": _absolute(arrays.columns["relative_offset"], base_offset),
        "position": arrays.columns["position"],
    }
    return arrays


def time_columns(arrays: IndexArrays, base_offset: int) -> IndexArrays:
    arrays.columns = {
        "timestamp": arrays.columns["timestamp"],
        "offset": _absolute(arrays.columns["relative_offset"], base_offset),
    }
    return arrays


def offset_index_arrays(
    data: bytes | memoryview, base_offset: int, *, window: int = INDEX_WINDOW
) -> IndexArrays:
    """``read_offset_index`` column-wise: ``columns["offset"]`` (absolute) and ``columns["position"]``.
    ``tests/rules/test_facts.py`` proves both agree (also with windows a few slots wide)."""
    return offset_columns(index_arrays(IndexScan.of_bytes(OFFSET_INDEX, data, window=window)), base_offset)


def time_index_arrays(
    data: bytes | memoryview, base_offset: int, *, window: int = INDEX_WINDOW
) -> IndexArrays:
    """``read_time_index`` column-wise: ``columns["timestamp"]`` and ``columns["offset"]`` (absolute)."""
    return time_columns(index_arrays(IndexScan.of_bytes(TIME_INDEX, data, window=window)), base_offset)
