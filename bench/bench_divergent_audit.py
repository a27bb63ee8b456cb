"""Benchmark: ``audit`` of a partition whose replicas diverge over most of their log, memory against the size
of the divergent region.

Data: the extracts of ``bench/bench_audit.py`` (3 brokers, ``--partitions``, default 8, ``--batches`` per
partition, default 1,000,000) with its fault plan stretched: each leader epoch, and so broker 3's own tail in
partition 7 (every 50th partition: an old leader that kept its last epoch's batches, diverged, and lost them
to the unclean election) and a lagging follower's gap (every 40th partition, half an epoch), spans
``--tail`` of the batches (default 0.5: half the log). Every batch of that tail differs between the replicas,
so every chunk of it is a candidate and its batch rows, on every replica, meet in the pass over partition 7.

Measured in one run, each the CLI (``kafka-auditor audit EXTRACTS -f json``, large-input path) in its own
process tree (Python and the JVM, sampled every 0.2 s from /proc, the JVM apart):
  * the audit of the data: wall seconds and peak resident memory;
  * baseline: the same audit at a tenth of the batches (a tenth of the divergent region): the ratio of the two
    peaks of the Python processes says whether the pass's memory grows with the divergent region (bounded by
    design: it should not; the JVM's heap grows with the scans up to its configured maximum);
  * ``--previous DIR``: the same audit with an older code tree.
Checked: the committed records lost (KA710) of partition 7 equal the generator's (broker 3's tail, below its
high watermark). No assertion on timings.

Usage: python bench/bench_divergent_audit.py [--partitions 8] [--batches 1000000] [--tail 0.5] [--data DIR]
       [--previous DIR] [--record]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_audit  # noqa: E402
from bench_scale_audit import (  # noqa: E402
    PEAKS,
    against_tenth,
    cli_audit,
    loss_by_partition,
    previous_loss,
    recorded_command,
    run_arguments,
)


def stretched(tail: float):
    """``bench_audit._epoch_span`` stretched to ``tail`` of a partition's batches."""

    def span(batches: int) -> int:
        return max(2, int(batches * tail))

    return span


def generate(data: Path, partitions: int, batches: int, tail: float) -> list[Path]:
    """``bench_audit``'s extracts with epochs (and so the divergent tail) of ``tail`` of the batches."""
    plain = bench_audit._epoch_span
    bench_audit._epoch_span = stretched(tail)
    try:
        return bench_audit.generate(data, partitions, batches)
    finally:
        bench_audit._epoch_span = plain


def expected_loss(partitions: int, batches: int, tail: float) -> dict[tuple[str, int], int]:
    """Committed records lost per divergent partition: broker 3's own tail, every record of it below its
    high watermark (``bench_audit``'s fault plan)."""
    span = stretched(tail)(batches)
    records = span * bench_audit.RECORDS_PER_BATCH
    return {(f"t{p // 10}", p % 10): records for p in range(partitions) if p % 50 == 7}


PYTHON = "python and the rest"


def _kinds(kinds: dict[str, int]) -> str:
    return ", ".join(f"{kind} {size / 2**20:.0f} MiB" for kind, size in sorted(kinds.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_arguments(ap, partitions=8, batches=1_000_000)
    ap.add_argument("--tail", type=float, default=0.5, help="the divergent tail, a share of the batches")
    args = ap.parse_args(argv)
    if args.partitions < 8:
        raise SystemExit("--partitions: at least 8 (partition 7 is the divergent one)")
    if not 0 < args.tail <= 0.5:
        raise SystemExit("--tail: above 0, at most 0.5 (the lagging follower's gap is half of it)")
    data = args.data or Path(tempfile.mkdtemp(prefix="bench-divergent-"))
    t0 = time.monotonic()
    shape = f"{args.partitions}x{args.batches}-tail{args.tail}"
    big = generate(data / f"divergent-{shape}", args.partitions, args.batches, args.tail)
    tenth = args.batches // 10
    small_shape = f"{args.partitions}x{tenth}-tail{args.tail}"
    small = generate(data / f"divergent-{small_shape}", args.partitions, tenth, args.tail)
    rows_n = bench_audit.batch_row_count(big)
    region = stretched(args.tail)(args.batches)
    print(f"data: {data} ({rows_n:,} batch rows; partition 7 diverges over its last {region:,} batches on "
          f"each replica), generated in {time.monotonic() - t0:.1f} s")  # fmt: skip
    base_s, base_rss, _ = cli_audit(small, data / "small.json")
    base_kinds = dict(PEAKS)
    wall, peak, report = cli_audit(big, data / "big.json")
    kinds = dict(PEAKS)
    print(f"baseline (a tenth of the batches): CLI {base_s:.1f} s, peak RSS {base_rss / 2**20:.0f} MiB "
          f"({_kinds(base_kinds)})")  # fmt: skip
    print(f"CLI audit: {wall:.1f} s wall, peak RSS {peak / 2**20:.0f} MiB ({_kinds(kinds)}; "
          f"x{peak / max(base_rss, 1):.2f} of the baseline's for x10 the divergent region)")  # fmt: skip
    python = kinds.get(PYTHON, 0) / max(base_kinds.get(PYTHON, 1), 1)
    print(f"Python's peak x{python:.2f} of the baseline's (the JVM's heap is capped by its settings)")
    expected = expected_loss(args.partitions, args.batches, args.tail)
    ok = loss_by_partition(report) == expected
    print(f"committed records lost equal the generator's ({sum(expected.values()):,}): {ok}")
    previous = previous_loss(data, args.previous, big, peak, report)
    if args.record:
        from record import record

        record(
            "bench_divergent_audit",
            f"`audit` of extracts where one partition's replicas diverge over its last {region:,} batches "
            f"({args.tail:.0%} of the log, every replica): 3 brokers x {args.partitions} partitions x "
            f"{args.batches:,} batches, the CLI's own process tree",
            recorded_command("bench_divergent_audit.py", args),
            f"{against_tenth(wall, peak, base_s, base_rss)}; by process: {_kinds(kinds)} against "
            f"{_kinds(base_kinds)} (Python x{python:.2f}){previous}; committed records lost equal the "
            f"generator's: {ok}",
        )


if __name__ == "__main__":
    main()
