"""Benchmark: ``kafka-auditor scan`` throughput against the raw header walk, and peak RSS (issue 4, item 6).

Generates a log dir with one large partition (``--gb``, default 5 GB, in 1 GiB segments of ~``--batch``-byte
batches, with offset/time indexes written at index.interval.bytes like Kafka, a leader-epoch-checkpoint,
partition.metadata, meta.properties, offset checkpoints and a clean-shutdown marker), warms the page cache,
then times in the same run, each in a fresh child process so that peak RSS is measured per contender:

  * raw header walk: ``SegmentWalker.header_blocks()`` over every segment (CRC-32C of every batch);
  * scan: ``auditor.scan.scan()`` in-process (``--jobs 1``) with every stable check enabled.

Prints MB/s and batches/s of both, the scan/walk throughput ratio (target >= 70 %) and the peak RSS of each
(target: scan of a 5 GB partition under 300 MB). ``--partitions N`` splits the data over N partitions and
also times ``--jobs`` workers. Usage: python bench/bench_scan.py [--gb 5] [--batch 1024] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint  # noqa: E402
from parsers.dirfiles import format_meta_properties, format_partition_metadata, segment_file_name  # noqa: E402
from parsers.record_batch import RecordSpec, build_batch  # noqa: E402

SEGMENT_BYTES = 1 << 30
INDEX_INTERVAL = 4096
TOPIC_ID = "qiruRg1LTeWQQHZSaPz4Yg"
CLUSTER_ID = "vyF_svkNTCmuElFZJ9FAng"


def template_batch(batch_bytes: int, records: int = 4) -> bytes:
    value = os.urandom(max(1, (batch_bytes - 61 - records * 20) // records // 2)).hex().encode()
    specs = [RecordSpec(b"k%03d" % i, value, 1_795_000_000_000 + i) for i in range(records)]
    return build_batch(specs, partition_leader_epoch=3)


def write_segment(path: Path, template: bytes, base: int, count: int) -> tuple[int, list[tuple[int, int]]]:
    """Write ``count`` copies of ``template`` re-stamped with consecutive offsets (baseOffset is outside the
    CRC); returns (next offset, offset index entries as Kafka's append path makes them)."""
    size = len(template)
    per = 4 + 0  # records per template batch
    from parsers.record_batch import HEADER_STRUCT

    per = HEADER_STRUCT.unpack_from(template)[12]
    chunk = max(1, (8 << 20) // size)
    raw = np.frombuffer(template * chunk, dtype=np.uint8).reshape(chunk, size).copy()
    entries: list[tuple[int, int]] = []
    since = 0
    pos = 0
    offset = base
    with open(path, "wb") as fh:
        done = 0
        while done < count:
            n = min(chunk, count - done)
            bases = offset + per * np.arange(n, dtype=np.int64)
            raw[:n, 0:8] = bases.astype(">i8").view(np.uint8).reshape(n, 8)
            fh.write(raw[:n].tobytes())
            for i in range(n):
                if since > INDEX_INTERVAL:
                    entries.append((int(bases[i]) + per - 1, pos))
                    since = 0
                since += size
                pos += size
            offset += per * n
            done += n
    return offset, entries


def make_logdir(root: Path, gb: float, batch_bytes: int, partitions: int) -> dict:
    template = template_batch(batch_bytes)
    per_part = int(gb * 1e9 / partitions)
    batches_per_segment = SEGMENT_BYTES // len(template)
    hw = []
    total_batches = 0
    for p in range(partitions):
        part = root / f"bench-{p}"
        part.mkdir(parents=True)
        remaining = per_part // len(template)
        base = 0
        while remaining > 0:
            n = min(remaining, batches_per_segment)
            nxt, entries = write_segment(part / segment_file_name(base, ".log"), template, base, n)
            arr = np.array([(o - base, q) for o, q in entries], dtype=">i4").reshape(-1, 2)
            (part / segment_file_name(base, ".index")).write_bytes(arr.tobytes())
            # time index: one entry (the roll-time max timestamp entry) per rolled segment
            ts = np.array([(1_795_000_000_003, nxt - 1 - base)], dtype=[("t", ">i8"), ("o", ">i4")])
            (part / segment_file_name(base, ".timeindex")).write_bytes(ts.tobytes())
            total_batches += n
            remaining -= n
            base = nxt
        (part / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint([(3, 0)]))
        (part / "partition.metadata").write_bytes(format_partition_metadata(TOPIC_ID))
        hw.append(("bench", p, base))
    (root / "meta.properties").write_bytes(format_meta_properties(1, 1, CLUSTER_ID, "e54YZRl8UUamg6XyB1rOTw"))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_bytes(format_offset_checkpoint(hw))
    (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
    (root / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":1}')
    return {"batches": total_batches, "batchBytes": len(template)}


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
mode, root, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
from pathlib import Path
from parsers.segment import SegmentWalker
import auditor.scan
from auditor.rules.registry import load_rules
load_rules()
t0 = time.perf_counter()  # after imports: both contenders are timed on the work alone
def walk_dir(part):
    n = 0
    for log in sorted(Path(part).glob("*.log")):
        n += sum(len(b) for b in SegmentWalker(log).header_blocks())
    return n
if mode == "walk-pool":
    import multiprocessing, os
    parts = sorted(str(p) for p in Path(root).glob("bench-*"))
    workers = jobs or len(os.sched_getaffinity(0))
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(walk_dir, parts[:workers])  # start the workers before timing
        t0 = time.perf_counter()
        out = {{"batches": sum(pool.map(walk_dir, parts))}}
elif mode == "walk":
    n = 0
    for log in sorted(Path(root).glob("*/*.log")):
        w = SegmentWalker(log)
        n += sum(len(b) for b in w.header_blocks())
        assert w.stop.reason == "end" and w.invalid_count == 0
    out = {{"batches": n}}
else:
    from auditor.scan import scan
    res = scan([root], jobs=jobs)
    out = {{"batches": res.stats["batches"], "findings": [f.code for f in res.findings],
           "mode": res.stats["mode"], "workers_rss_mb": res.stats["peakRssMiB"]}}
out["seconds"] = time.perf_counter() - t0
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["children_maxrss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_child(mode: str, root: Path, jobs: int = 1) -> dict:
    code = CHILD.format(repo=str(REPO))
    res = subprocess.run(
        [sys.executable, "-c", code, mode, str(root), str(jobs)], capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def best(mode: str, root: Path, runs: int, jobs: int = 1) -> dict:
    results = [run_child(mode, root, jobs) for _ in range(runs)]
    fastest = min(results, key=lambda r: r["seconds"])
    fastest["maxrss_mb"] = max(r["maxrss_mb"] for r in results)
    fastest["children_maxrss_mb"] = max(r["children_maxrss_mb"] for r in results)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gb", type=float, default=5.0, help="total size of the generated partition(s) in GB"
    )
    parser.add_argument("--batch", type=int, default=1024, help="approximate batch size in bytes")
    parser.add_argument("--partitions", type=int, default=1, help="split the data over this many partitions")
    parser.add_argument("--jobs", type=int, default=0, help="also time scan with this many workers (0: CPUs)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this directory and keep it")
    args = parser.parse_args()
    tmp = None
    if args.keep:
        root = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="ka-bench-scan-")
        root = Path(tmp) / "broker-1"
    try:
        if not (root / "meta.properties").exists():
            t0 = time.perf_counter()
            info = make_logdir(root, args.gb, args.batch, args.partitions)
            print(
                f"generated {root}: {info['batches']:,} batches of {info['batchBytes']} B "
                f"in {time.perf_counter() - t0:.1f} s"
            )
        size = sum(p.stat().st_size for p in root.glob("*/*.log"))
        for p in root.glob("*/*.log"):  # warm the page cache for every contender alike
            with open(p, "rb") as fh:
                while fh.read(64 << 20):
                    pass
        mb = size / 1e6
        walk = best("walk", root, args.runs)
        scan1 = best("scan", root, args.runs, jobs=1)
        print(f"\n{args.partitions} partition(s), {mb:,.0f} MB, {walk['batches']:,} batches")
        for label, r in (("raw header walk (header_blocks)", walk), ("scan, all checks, --jobs 1", scan1)):
            print(
                f"  {label:34s} {mb / r['seconds']:8.0f} MB/s {r['batches'] / r['seconds'] / 1e6:6.2f} M "
                "batches/s"
                f"   peak RSS {r['maxrss_mb']:6.0f} MB"
            )
        ratio = walk["seconds"] / scan1["seconds"]
        print(f"  scan throughput = {ratio:.0%} of the raw header walk (target >= 70%)")
        print(f"  findings on generated data: {sorted(set(scan1['findings'])) or 'none'}")
        if args.partitions > 1:
            wpool = best("walk-pool", root, args.runs, jobs=args.jobs)
            print(
                f"  raw header walk, {args.jobs or 'one per CPU'} processes: "
                f"{mb / wpool['seconds']:,.0f} MB/s, "
                f"x{walk['seconds'] / wpool['seconds']:.2f} vs one process (what this machine allows)"
            )
            par = best("scan", root, args.runs, jobs=args.jobs)
            print(
                f"  scan --jobs {args.jobs or 'auto'} ({par['mode']}): {mb / par['seconds']:,.0f} MB/s, "
                f"x{scan1['seconds'] / par['seconds']:.2f} vs --jobs 1, peak RSS of any process "
                f"{par['workers_rss_mb']:.0f} MB"
            )
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
