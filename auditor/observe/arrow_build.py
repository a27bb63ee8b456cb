"""Arrow arrays and tables built from numpy buffers for the extraction (:mod:`auditor.observe.extract`):
no Python object per row, and none of ``pa.array``'s input sniffing (which imports pandas when it is
installed)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.partition_key import partition_key
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD,
)


def bitmap(bits: np.ndarray) -> pa.Buffer:
    """An Arrow validity (or boolean) bitmap of ``bits``."""
    return pa.py_buffer(np.packbits(bits.astype(bool), bitorder="little"))


def column(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """An Arrow array of a numpy column, converted to ``type_`` from its buffer (no Python objects, and
    none of ``pa.array``'s input sniffing, which imports pandas when it is installed)."""
    if pa.types.is_boolean(type_):
        return pa.Array.from_buffers(type_, len(values), [None, bitmap(values)])
    native = np.ascontiguousarray(values, dtype=NUMPY_TYPES[type_])
    return pa.Array.from_buffers(type_, len(native), [None, pa.py_buffer(native)])


NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
}


def key_columns(task: PartitionTask, n: int) -> list[pa.Array]:
    """The ``rows._KEY`` columns of ``n`` rows of one replica."""
    return [
        rows.repeat_string(task.cluster, n),
        rows.repeat_string(task.topic, n),
        column(np.full(n, task.partition), pa.int32()),
        column(np.full(n, task.broker), pa.int32()),
        rows.repeat_string(task.log_dir, n),
    ]


def key_column(task: PartitionTask, n: int) -> pa.Array:
    """The ``tp`` column of ``n`` rows of one replica (``rows._TP``)."""
    tp = partition_key(task.cluster, task.topic, task.partition)
    return column(np.full(n, tp, dtype=np.int64), pa.int64())


def batch_table(
    task: PartitionTask, segment: int, positions, headers, valid, live, control_types: pa.Array
) -> pa.Table:
    n = len(positions)
    base = headers["base_offset"].astype(np.int64)
    attributes = headers["attributes"].astype(np.int16)
    columns = {
        "segment": np.full(n, segment, dtype=np.int64),
        "position": positions,
        "base_offset": base,
        "last_offset": base + headers["last_offset_delta"].astype(np.int64),
        "partition_leader_epoch": headers["partition_leader_epoch"],
        "magic": headers["magic"],
        "crc": headers["crc"],
        "valid": valid,
        "live": live,
        "size": headers["batch_length"].astype(np.int32) + LOG_OVERHEAD,
        "attributes": attributes,
        "max_timestamp": headers["max_timestamp"],
        "producer_id": headers["producer_id"],
        "producer_epoch": headers["producer_epoch"],
        "base_sequence": headers["base_sequence"],
        "records_count": headers["records_count"],
        "is_control": (attributes & ATTR_CONTROL) != 0,
        "is_transactional": (attributes & ATTR_TRANSACTIONAL) != 0,
        "codec": attributes & ATTR_COMPRESSION_MASK,
    }
    arrays = key_columns(task, n)
    arrays += [column(columns[f.name], f.type) for f in rows.BATCH if f.name in columns]
    arrays += [control_types, key_column(task, n)]
    return pa.Table.from_arrays(arrays, schema=rows.BATCH)


def small_table(columns: dict[str, list], schema: pa.Schema) -> pa.Table:
    """A small table of Python values, built from buffers like the batch rows (``pa.array`` imports pandas
    when it is installed, a third of a second); values that do not fit go through ``from_pydict``, which
    rejects them."""
    arrays = [_small_array(columns[f.name], f.type) for f in schema]
    if any(a is None for a in arrays):
        return pa.Table.from_pydict(columns, schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def _small_array(values: list, type_: pa.DataType) -> pa.Array | None:
    """An array of ``values`` (None: null) of ``type_`` (string, bool or integer), None when one does not
    fit it."""
    n = len(values)
    valid = np.array([v is not None for v in values], dtype=bool)
    mask = None if valid.all() else bitmap(valid)
    present = [v for v in values if v is not None]
    if pa.types.is_string(type_):
        if not all(type(v) is str for v in present):
            return None
        try:
            data = [v.encode() if v is not None else b"" for v in values]
        except UnicodeEncodeError:
            return None
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    if pa.types.is_boolean(type_):
        if not all(type(v) is bool for v in present):
            return None
        return pa.Array.from_buffers(type_, n, [mask, bitmap(np.array([bool(v) for v in values]))])
    dtype = NUMPY_TYPES.get(type_)
    if dtype is None or not all(type(v) is int for v in present):
        return None
    bounds = np.iinfo(dtype)
    if not all(bounds.min <= v <= bounds.max for v in present):
        return None
    native = np.array([v if v is not None else 0 for v in values], dtype=dtype)
    return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(native)])
