"""Benchmark: the segment header walk with CRC-32C verification (issue: foundation, item 8).

Generates two ~200 MB segments (small ~200 B batches and large ~16 KiB batches), then times on one
core, in the same run:
  * ``SegmentWalker.header_blocks()``: the fast path, numpy columns per window (every batch CRC-checked);
  * ``SegmentWalker.headers()``: one header tuple per batch;
  * ``SegmentWalker`` objects (``RecordBatch`` per batch), what dumps and checks iterate;
  * baseline: kafka-python's ``MemoryRecords`` / ``DefaultRecordBatch`` reader with ``validate_crc()``.
Prints batches/s, MB/s and the ratio to the baseline. Then the header-only walk of a log Kafka's loader
trusts (``verify_crc=False``), batch by batch against chained in step from the positions of the offset index
Kafka writes for the segment (an entry per 4 KiB, ``index.interval.bytes``; ``anchors=``), with its ratio.
Usage: python bench/bench_header_walk.py [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from parsers.record_batch import RecordSpec, build_batch, restamp
from parsers.segment import SegmentWalker


def make_segment(path: Path, value_size: int, total_bytes: int) -> int:
    template = build_batch(
        [RecordSpec(b"key-0001", os.urandom(value_size // 2).hex().encode()[:value_size], 1_795_000_000_000)]
    )
    n = total_bytes // len(template)
    with open(path, "wb") as fh:
        chunk = bytearray()
        for i in range(n):
            chunk += restamp(template, base_offset=i)
            if len(chunk) >= 1 << 22:
                fh.write(chunk)
                chunk.clear()
        fh.write(chunk)
    return n


def best_of(runs: int, fn) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(runs):
        t0 = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - t0)
    return best, count


def walk_fast(path: Path) -> int:
    n = 0
    walker = SegmentWalker(path)
    for _ in walker.headers():
        n += 1
    assert walker.stop.reason == "end" and walker.invalid_count == 0
    return n


def walk_columnar(path: Path) -> int:
    walker = SegmentWalker(path)
    n = sum(len(block) for block in walker.header_blocks())
    assert walker.stop.reason == "end" and walker.invalid_count == 0
    return n


def walk_objects(path: Path) -> int:
    return sum(1 for b in SegmentWalker(path) if b.crc_valid)


def index_positions(path: Path, interval: int = 4096) -> np.ndarray:
    """The batch positions of the offset index Kafka's append path writes for a segment of equal batches (an
    entry once more than ``interval`` bytes were appended since the last one)."""
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(12)[8:], "big") + 12  # batchLength + LOG_OVERHEAD
    every = interval // size + 1
    return np.arange(every, path.stat().st_size // size, every, dtype=np.int64) * size


def walk_header_only(path: Path, anchors: np.ndarray | None = None) -> int:
    walker = SegmentWalker(path, verify_crc=False, anchors=anchors)
    n = sum(len(block) for block in walker.header_blocks())
    assert walker.stop.reason == "end"
    return n


def walk_kafka_python(path: Path) -> int:
    from kafka.record import MemoryRecords

    records = MemoryRecords(path.read_bytes())
    n = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of each generated segment in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write the result row of docs/performance.md")
    args = parser.parse_args()
    lines = []
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    with tempfile.TemporaryDirectory(prefix="ka-bench-") as tmp:
        for label, value_size in (("small batches (~200 B)", 120), ("large batches (~16 KiB)", 16_300)):
            path = Path(tmp) / f"{value_size}.log"
            n = make_segment(path, value_size, args.mb * 1_000_000)
            size_mb = path.stat().st_size / 1e6
            path.read_bytes()  # warm the page cache for every contender alike
            print(f"\n{label}: {n:,} batches, {size_mb:.0f} MB, {size_mb * 1e6 / n:.0f} B/batch")
            results = {}
            for name, fn in (
                ("kafka-python DefaultRecordBatch (baseline)", walk_kafka_python),
                ("SegmentWalker.header_blocks() columnar", walk_columnar),
                ("SegmentWalker.headers() tuples", walk_fast),
                ("SegmentWalker RecordBatch objects", walk_objects),
            ):
                secs, count = best_of(args.runs, lambda fn=fn, path=path: fn(path))
                assert count == n, (name, count, n)
                results[name] = secs
                base = results["kafka-python DefaultRecordBatch (baseline)"]
                print(
                    f"  {name:45s} {n / secs / 1e6:6.2f} M batches/s {size_mb / secs:8.0f} MB/s"
                    f"   x{base / secs:5.2f} vs baseline"
                )
            columnar = results["SegmentWalker.header_blocks() columnar"]
            anchors = index_positions(path)
            serial, count = best_of(args.runs, lambda path=path: walk_header_only(path))
            assert count == n
            stepped, count = best_of(args.runs, lambda p=path, a=anchors: walk_header_only(p, a))
            assert count == n
            print(
                f"  header-only (trusted) walk: batch by batch {size_mb / serial:8.0f} MB/s, from the offset "
                f"index's {len(anchors):,} positions {size_mb / stepped:8.0f} MB/s = x{serial / stepped:.2f}"
            )
            lines.append(
                f"{label}, {n:,} batches: kafka-python {size_mb / base:,.0f} MB/s, `header_blocks()` "
                f"{size_mb / columnar:,.0f} MB/s = **{base / columnar:.2f}x**; header-only, batch by batch "
                f"{size_mb / serial:,.0f} MB/s, from the offset index {size_mb / stepped:,.0f} MB/s = "
                f"**{serial / stepped:.2f}x**"
            )
    if args.record:
        from record import record

        record(
            "bench_header_walk",
            "the segment header walk on one core: `SegmentWalker.header_blocks()` with CRC-32C against "
            "kafka-python's `DefaultRecordBatch` reader with `validate_crc()`; then the header-only walk of "
            "a trusted segment (`verify_crc=False`) batch by batch against chained from the offset index's "
            "positions (`anchors=`)",
            f"python bench/bench_header_walk.py {' '.join(sys.argv[1:])}",
            "; ".join(lines),
        )


if __name__ == "__main__":
    main()
