"""Benchmark: ``audit`` of exactly-once partitions (every batch transactional), memory against input size.

Data: the extracts of ``bench/bench_audit.py`` (its generator and fault plan: in every 50th partition broker
3 kept a tail of its own epoch, diverged and lost; every 40th partition has a lagging follower), with every
batch transactional: one producer per partition, a COMMIT marker every 10th batch (``--partitions``,
default 8, ``--batches`` per partition, default 500,000: 12 M batch rows, 1.5 M per partition). A
transaction's state is decided by its producer's next marker, which may lie in a chunk where the replicas
agree, so the audit ships every transactional batch of a partition to the pass over that partition.

Measured in one run, each the CLI (``kafka-auditor audit EXTRACTS -f json``, large-input path) in its own
process tree (Python and the JVM, sampled every 0.2 s from /proc):
  * the audit of the data: wall seconds and peak resident memory;
  * baseline: the same audit of the same shape at a tenth of the batches: the ratio of the two peaks says
    whether memory grows with a partition's transactional batches (bounded by design: it should not);
  * ``--previous DIR``: the same audit with an older code tree (the design before, which held them).
Checked: the committed records lost (KA710) of each divergent partition equal the generator's (broker 3's
tail: its data batches' records, every transaction of it committed in its own log). No assertion on
timings.

Usage: python bench/bench_eos_audit.py [--partitions 8] [--batches 500000] [--data DIR] [--previous DIR]
       [--record]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_audit  # noqa: E402
from bench_scale_audit import (  # noqa: E402
    against_tenth,
    cli_audit,
    loss_by_partition,
    previous_loss,
    recorded_command,
    run_arguments,
)

from auditor.observe import rows  # noqa: E402

MARKER_EVERY = 10
"""Every 10th batch of a partition is its producer's COMMIT marker."""
TRANSACTIONAL, CONTROL, COMMIT = 0x10, 0x20, 1


def eos(batch: pa.Table, p: int) -> pa.Table:
    """``batch`` (one replica of partition ``p``) with every batch transactional, a COMMIT marker (one
    control record) every :data:`MARKER_EVERY` batches."""
    n = batch.num_rows
    marker = np.arange(n) % MARKER_EVERY == MARKER_EVERY - 1
    columns = {name: batch.column(name) for name in batch.schema.names}
    columns.update(
        attributes=np.where(marker, TRANSACTIONAL | CONTROL, TRANSACTIONAL).astype(np.int16),
        producer_id=np.full(n, 1000 + p, np.int64),
        producer_epoch=np.zeros(n, np.int16),
        base_sequence=np.where(marker, -1, np.arange(n)).astype(np.int32),
        records_count=np.where(marker, 1, batch.column("records_count").to_numpy()).astype(np.int32),
        is_control=marker,
        is_transactional=np.ones(n, bool),
        control_type=pa.array(np.where(marker, COMMIT, 0).astype(np.int8), mask=~marker),
    )
    return pa.table(columns, schema=rows.BATCH)


def generate(data: Path, partitions: int, batches: int) -> list[Path]:
    """``bench_audit``'s extracts with every batch transactional (:func:`eos`)."""
    return bench_audit.generate(data, partitions, batches, eos)


def expected_loss(partitions: int, batches: int) -> dict[tuple[str, int], int]:
    """Committed records lost per divergent partition: broker 3's own tail (``bench_audit``'s fault plan),
    its data batches' records (every transaction of the tail ends with a COMMIT in broker 3's log)."""
    out = {}
    span = bench_audit._epoch_span(batches)
    for p in range(partitions):
        if p % 50 == 7:
            tail = np.arange(batches - span, batches)
            data_batches = int((tail % MARKER_EVERY != MARKER_EVERY - 1).sum())
            out[(f"t{p // 10}", p % 10)] = data_batches * bench_audit.RECORDS_PER_BATCH
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_arguments(ap, partitions=8, batches=500_000)
    args = ap.parse_args(argv)
    if args.partitions < 8:
        raise SystemExit("--partitions: at least 8 (partition 7 is the divergent one)")
    data = args.data or Path(tempfile.mkdtemp(prefix="bench-eos-"))
    t0 = time.monotonic()
    big = generate(data / f"eos-{args.partitions}x{args.batches}", args.partitions, args.batches)
    tenth = args.batches // 10
    small = generate(data / f"eos-{args.partitions}x{tenth}", args.partitions, tenth)
    rows_n = bench_audit.batch_row_count(big)
    print(f"data: {data} ({rows_n:,} transactional batch rows, {rows_n // args.partitions:,} per partition), "
          f"generated in {time.monotonic() - t0:.1f} s")  # fmt: skip
    base_s, base_rss, _ = cli_audit(small, data / "small.json")
    wall, peak, report = cli_audit(big, data / "big.json")
    print(f"baseline (a tenth of the batches): CLI {base_s:.1f} s, peak RSS {base_rss / 2**20:.0f} MiB")
    print(f"CLI audit: {wall:.1f} s wall, peak RSS {peak / 2**20:.0f} MiB "
          f"(x{peak / max(base_rss, 1):.2f} of the baseline's for x10 the batches)")  # fmt: skip
    expected = expected_loss(args.partitions, args.batches)
    ok = loss_by_partition(report) == expected
    print(f"committed records lost equal the generator's ({sum(expected.values()):,}): {ok}")
    previous = previous_loss(data, args.previous, big, peak, report)
    if args.record:
        from record import record

        record(
            "bench_eos_audit",
            f"`audit` of exactly-once partitions (every batch transactional, a COMMIT every "
            f"{MARKER_EVERY}th) from extracts: 3 brokers x {args.partitions} partitions x "
            f"{args.batches:,} batches ({rows_n / args.partitions / 1e6:.1f} M rows per partition), "
            "the CLI's own process tree",
            recorded_command("bench_eos_audit.py", args),
            f"{against_tenth(wall, peak, base_s, base_rss)}{previous}; committed records lost equal "
            f"the generator's: {ok}",
        )


if __name__ == "__main__":
    main()
