"""The 64-bit key of a partition, ``tp``: Spark's ``xxhash64(cluster, topic, partition)`` (seed 42; a string
hashed as its UTF-8 bytes, an int as its 4 little-endian bytes, each value's hash the next one's seed),
worked out in Python once per replica, so that the extract's batch and record rows carry it and the audit's
scans of millions of rows read one integer column instead of decoding and hashing two strings a row
(``auditor.spark.compare.with_tp`` computes the same key in Spark for rows without it;
``tests/observe/test_partition_key.py`` proves the two equal).

XXH64 is Yann Collet's xxHash, 64-bit variant, as Spark's ``org.apache.spark.sql.catalyst.expressions.XXH64``
states it."""

from __future__ import annotations

import functools
import struct

import pyarrow as pa

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
SEED = 42
"""Spark's seed of ``xxhash64``."""


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def _merge(h: int, v: int) -> int:
    return ((h ^ _round(0, v)) * _P1 + _P4) & _MASK


def _avalanche(h: int) -> int:
    h = ((h ^ (h >> 33)) * _P2) & _MASK
    h = ((h ^ (h >> 29)) * _P3) & _MASK
    return h ^ (h >> 32)


def xxh64(data: bytes, seed: int) -> int:
    """XXH64 of ``data`` with ``seed`` (both unsigned 64-bit)."""
    n, pos = len(data), 0
    if n >= 32:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK
        while pos <= n - 32:
            a, b, c, d = struct.unpack_from("<4Q", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while pos <= n - 8:
        (k,) = struct.unpack_from("<Q", data, pos)
        h = ((_rotl(h ^ _round(0, k), 27)) * _P1 + _P4) & _MASK
        pos += 8
    if pos <= n - 4:
        (k,) = struct.unpack_from("<I", data, pos)
        h = (_rotl(h ^ (k * _P1) & _MASK, 23) * _P2 + _P3) & _MASK
        pos += 4
    while pos < n:
        h = (_rotl(h ^ (data[pos] * _P5) & _MASK, 11) * _P1) & _MASK
        pos += 1
    return _avalanche(h)


@functools.lru_cache(maxsize=4096)
def partition_key(cluster: str | None, topic: str | None, partition: int | None) -> int:
    """``tp`` of a partition replica's rows: Spark's ``xxhash64(cluster, topic, partition)`` as a signed
    64-bit integer."""
    h = SEED
    for text in (cluster, topic):
        if text is not None:  # Spark leaves the hash as it is at a null
            h = xxh64(text.encode("utf-8", "surrogatepass"), h)
    if partition is not None:
        h = xxh64(struct.pack("<i", partition), h)
    return h - (1 << 64) if h >> 63 else h


def with_partition_key(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (read from an extract file) with its ``tp`` column, worked out from its cluster, topic and
    partition where the file has none and ``schema`` (its kind's) has one (``rows.DERIVED``)."""
    if "tp" in table.column_names or "tp" not in schema.names:
        return table
    keys = zip(*(table.column(k).to_pylist() for k in ("cluster", "topic", "partition")), strict=True)
    return table.append_column("tp", pa.array([partition_key(*k) for k in keys], pa.int64()))
