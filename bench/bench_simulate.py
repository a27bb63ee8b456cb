"""Benchmark the scenario generator.

    python bench/bench_simulate.py                       # 3 brokers x 200 partitions x 50k batches, --scale
    python bench/bench_simulate.py --partitions 20 --batches 20000 --scenario unclean-election
    python bench/bench_simulate.py --protocol            # the event-driven simulator (non-scale) instead

Prints batches generated per second (each batch encoded once) and batch copies written per second (one per
replica). Output goes to a temporary directory that is deleted afterwards unless --keep is given.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from auditor.simulate import SimOptions, run_scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="clean")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--topics", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--batches", type=int, default=50_000, help="batches (= records) per partition")
    ap.add_argument("--segment-bytes", type=int, default=1 << 20)
    ap.add_argument("--protocol", action="store_true", help="time the event-driven simulator instead")
    ap.add_argument("--keep", metavar="DIR", help="write into DIR and keep it")
    args = ap.parse_args()
    tmp = None
    if args.keep:
        out = Path(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="bench-simulate-")
        out = Path(tmp) / "out"
    try:
        opts = SimOptions(
            brokers=args.brokers,
            topics=args.topics,
            partitions=args.partitions,
            records=args.batches,
            segment_bytes=args.segment_bytes,
            scale=not args.protocol,
        )
        t0 = time.perf_counter()
        truth = run_scenario(args.scenario, out, opts)
        wall = time.perf_counter() - t0
        if args.protocol:
            batches = sum(
                1 for p in truth["partitions"] for w in p["writes"] if w["first_offset"] is not None
            )
            print(
                f"{args.scenario}: {batches} produce batches simulated and written in {wall:.2f} s "
                f"({batches / wall:,.0f} batches/s)"
            )
            return
        st = truth["stats"]
        print(
            f"{args.scenario} --scale: {args.brokers} brokers x {args.topics * args.partitions} partitions x "
            f"{args.batches} batches, segment.bytes={args.segment_bytes}"
        )
        print(
            f"  batches generated : {st['batches_generated']:,} in {st['generation_seconds']:.2f} s "
            f"= {st['batches_per_second']:,} batches/s"
        )
        print(
            f"  batch copies written (all replicas): {st['batch_copies_written']:,} "
            f"= {st['batch_copies_per_second']:,} copies/s"
        )
        print(f"  total wall time incl. metadata log and ground truth: {wall:.2f} s")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
