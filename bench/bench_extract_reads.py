"""Benchmark: what the extraction reads, header-only where Kafka trusts the log vs full (issue "The audit at
fleet scale", deliverable 3, "Read what Kafka reads").

Writes two broker log dirs with the simulator's scale mode (scenario ``clean``, one broker, two partitions),
one of ~16 KiB batches and one of ~1 MiB batches, and shuts them down cleanly (``.kafka_cleanshutdown``;
the scale mode's recovery point is the base of each partition's last segment, so every segment but the last
is trusted). Then, in the same run, cold (every file of the log dir dropped from the page cache with
``posix_fadvise(DONTNEED)`` first) and warm (best of ``--runs``):
  * the segment walk (``SegmentWalker.header_blocks``) of every segment of the topic, full (CRC-checked)
    and header-only (``verify_crc=False``) with window reads only, a header read per batch, and the kept
    rule (``SKIP_READ_MIN``: a header read after a batch of 64 KiB or more);
  * ``extract_partition`` of every partition directory, as ``audit`` runs it (header-only where trusted)
    and with ``verify_crc`` (every CRC computed).
Prints bytes read through read syscalls (the walker's counter; ``/proc/self/io`` ``rchar`` for the
extraction), bytes read from the device (``read_bytes``, cold), seconds, MB/s of segment bytes and the
ratios to the full read of the same run. Usage: python bench/bench_extract_reads.py [--mb 512] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.layout.logdir import read_log_dir
from auditor.observe.extract import extract_partition, metadata_for
from auditor.simulate import SimOptions, run_scenario
from parsers.segment import SKIP_READ_MIN, SegmentWalker

PARTITIONS = 2
BATCH_OVERHEAD = 61 + 20
"""Batch header and record framing around the value: the batch sizes stay round."""


def make_log_dir(root: Path, batch_bytes: int, total_mb: int, segment_mb: int) -> Path:
    """A cleanly shut down broker log dir of ``total_mb`` MB of ``batch_bytes`` batches."""
    batches = max(8, total_mb * 1_000_000 // batch_bytes // PARTITIONS)
    options = SimOptions(
        scale=True,
        brokers=1,
        topics=1,
        partitions=PARTITIONS,
        records=batches,
        segment_bytes=segment_mb << 20,
        extra={"scale_value_bytes": batch_bytes - BATCH_OVERHEAD},
    )
    run_scenario("clean", root, options)
    log_dir = root / "broker-1"
    (log_dir / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":1}')
    os.sync()  # DONTNEED drops clean pages only
    return log_dir


def drop_cache(log_dir: Path) -> None:
    for path in log_dir.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def io_counters() -> tuple[int, int]:
    """``rchar`` (bytes through read syscalls) and ``read_bytes`` (bytes fetched from the device)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"]), int(fields["read_bytes"])


def measure(variants: dict[str, Callable[[], int]], log_dir: Path, runs: int) -> dict[str, dict]:
    """Per variant: cold and warm seconds (best of ``runs`` rounds, the variants taking turns in each round so
    that a busy machine slows them alike), bytes read (the variant's count, else ``rchar``) and bytes read
    from the device (cold)."""
    out = {name: {"cold": float("inf"), "warm": float("inf")} for name in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            drop_cache(log_dir)
            rchar, disk = io_counters()
            t0 = time.perf_counter()
            counted = fn()
            seconds = time.perf_counter() - t0
            after = io_counters()
            result = out[name]
            result["cold"] = min(result["cold"], seconds)
            result["device"], result["read"] = after[1] - disk, counted or after[0] - rchar
    for _ in range(runs):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            out[name]["warm"] = min(out[name]["warm"], time.perf_counter() - t0)
    return out


def walk_all(segments: list[Path], **kwargs) -> int:
    """Walk every segment; the bytes the walkers read."""
    total = 0
    for path in segments:
        walker = SegmentWalker(path, **kwargs)
        for _ in walker.header_blocks():
            pass
        assert walker.stop.reason == "end", (path, walker.stop)
        total += walker.bytes_read
    return total


def extract_all(tasks: list) -> int:
    for task in tasks:
        for _ in extract_partition(task):
            pass
    return 0  # counted by rchar


def report(label: str, result: dict, base: dict, size: int) -> None:
    mb = size / 1e6
    speed = {
        k: f"{result[k]:6.3f} s {mb / result[k]:7.0f} MB/s x{base[k] / result[k]:5.1f}"
        for k in ("cold", "warm")
    }
    print(
        f"  {label:44s} read {result['read'] / 1e6:8.1f} MB (x{result['read'] / base['read']:.4f})"
        f"  device {result['device'] / 1e6:8.1f} MB (x{result['device'] / max(base['device'], 1):.4f})"
        f"  cold {speed['cold']}  warm {speed['warm']}"
    )


def walk_variants(segments: list[Path], log_dir: Path, size: int, runs: int) -> None:
    """The segment walk, full and header-only with each read rule."""
    rules = {
        "header-only, window reads": {"skip_read_min": 1 << 62},
        "header-only, a read per header": {"skip_read_min": 0},
        f"header-only, kept rule ({SKIP_READ_MIN >> 10} KiB)": {},
    }
    variants = {"full read, CRC-checked (baseline)": lambda: walk_all(segments)}
    for name, kwargs in rules.items():
        variants[name] = lambda k=kwargs: walk_all(segments, verify_crc=False, **k)
    print(" segment walk (every segment)")
    results = measure(variants, log_dir, runs)
    base = results["full read, CRC-checked (baseline)"]
    for name, result in results.items():
        report(name, result, base, size)


def extraction_variants(log_dir: Path, size: int, runs: int) -> None:
    """``extract_partition`` of every partition directory, full and as ``audit`` runs it."""
    info = read_log_dir(log_dir)
    label = info.cluster_id or ""
    meta = metadata_for(info, label)
    tasks = plan_tasks([info], [label], {label: compacted_topics(meta)} if meta is not None else None)
    verified = [replace(t, verify_crc=True) for t in tasks]
    print(" extraction (extract_partition of every partition directory)")
    results = measure(
        {
            "full read, verify_crc (baseline)": lambda: extract_all(verified),
            "as audit runs it (header-only where trusted)": lambda: extract_all(tasks),
        },
        log_dir,
        runs,
    )
    base = results["full read, verify_crc (baseline)"]
    for name, result in results.items():
        report(name, result, base, size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=512, help="segment bytes of each log dir in MB")
    parser.add_argument("--segment-mb", type=int, default=32, help="segment.bytes in MiB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="16,1024", help="batch sizes in KiB, comma-separated")
    parser.add_argument("--walk-only", action="store_true", help="only the segment walk (to tune the rule)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    tmp = Path(tempfile.mkdtemp(prefix="ka-bench-reads-"))
    try:
        for kib in (int(k) for k in args.sizes.split(",")):
            batch_bytes = kib << 10
            log_dir = make_log_dir(tmp / str(batch_bytes), batch_bytes, args.mb, args.segment_mb)
            segments = sorted(log_dir.glob("t0-*/*.log"))
            size = sum(p.stat().st_size for p in segments)
            last = {max(p.parent.glob("*.log")) for p in segments}
            trusted = sum(p.stat().st_size for p in segments if p not in last)
            batches = sum(sum(len(b) for b in SegmentWalker(p).header_blocks()) for p in segments)
            print(
                f"\n{kib} KiB batches: {batches:,} batches, {size / 1e6:.0f} MB in {len(segments)} segments "
                f"of {PARTITIONS} partitions, {trusted / size:.0%} of the bytes below the recovery point"
            )
            walk_variants(segments, log_dir, size, args.runs)
            if not args.walk_only:
                extraction_variants(log_dir, size, args.runs)
            shutil.rmtree(tmp / str(batch_bytes))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
