"""Benchmark: ``audit`` of a cluster where a follower lags far behind (its log ends early: a broker restarted
after a long outage and audited before it caught up, the nightly audit's common case).

Data: ``simulate clean --scale`` (one-record batches; ``--partitions`` per broker, ``--batches`` per
partition), 3 brokers; then a copy of the cluster where, in every partition, one follower (not the KRaft
leader) keeps only the first ``--keep`` of its segments (hard links; its high watermark and recovery point
checkpoints at its new log end offset, its leader-epoch cache cut there): the other replicas hold the rest
alike, the lag. Measured in one run, each the CLI (``kafka-auditor audit DIR -f json``) in its own process
tree with the peak resident memory of the tree (Python and the JVM, sampled every 0.2 s from /proc):

  * the lagging cluster;
  * baseline: the same cluster without the lag (the audit reads the same log dirs, less one follower's
    tail), in the same run; memory bounded by design means about the same peak;
  * ``--previous DIR``: an earlier code tree on the lagging cluster (run in its own directory).

Both on the large-input path (``KAFKA_AUDITOR_SMALL_INPUT_BYTES=0``). The lag findings (KA630) are checked:
one per lagging follower, its records the batches cut. No assertion on timings.

Usage: python bench/bench_lag_audit.py [--partitions 4] [--batches 1000000] [--keep 0.1] [--data DIR]
       [--previous DIR] [--record]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench_scale_audit import (  # the bench dir is on sys.path first
    cli_audit,
    recorded_command,
    run_arguments,
    simulate,
)

from parsers.checkpoints import (
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
)


def lagging_copy(
    cluster: Path, out: Path, truth: dict, keep: float
) -> dict[tuple[str, int], tuple[int, int]]:
    """``out``: ``cluster`` (hard links) where one follower of every partition keeps the first ``keep`` of its
    segments; per (topic, partition) the lagging broker and the batches it lacks (one record each)."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(cluster, out, copy_function=os.link)
    cut: dict[tuple[str, int], tuple[int, int]] = {}
    ends: dict[int, dict[tuple[str, int], int]] = {}
    for p in truth["partitions"]:
        leader = p["final"]["leader"]
        broker = max(b for b in p["replicas"] if b != leader)
        part = out / f"broker-{broker}" / p["dir"]
        logs = sorted(part.glob("*.log"))
        first_cut = max(1, int(len(logs) * keep))
        if first_cut >= len(logs):
            continue
        leo = int(logs[first_cut].stem)
        for log in logs[first_cut:]:
            for f in part.glob(log.stem + ".*"):
                f.unlink()
        cache = part / "leader-epoch-checkpoint"
        entries = parse_leader_epoch_checkpoint(cache.read_bytes()).entries
        rewrite(cache, format_leader_epoch_checkpoint((e, s) for e, s in entries if s < leo))
        ends.setdefault(broker, {})[(p["topic"], p["partition"])] = leo
        end = p["replica_state"][str(leader)]["disk"]["log_end_offset"]
        cut[(p["topic"], p["partition"])] = (broker, end - leo)
    for broker, leos in ends.items():
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
            path = out / f"broker-{broker}" / name
            entries = parse_offset_checkpoint(path.read_bytes()).entries
            cut_at = ((t, n, min(o, leos.get((t, n), o))) for t, n, o in entries)
            rewrite(path, format_offset_checkpoint(cut_at))
    return cut


def rewrite(path: Path, data: bytes) -> None:
    """Replace a hard-linked file (never written through: the original cluster keeps its copy)."""
    path.unlink()
    path.write_bytes(data)


def lag_by_partition(report: dict) -> dict[tuple[str, int], tuple[int, int]]:
    """Per (topic, partition), the lagging broker and the records it lacks (KA630) of a JSON report."""
    return {
        (f["topic"], f["partition"]): (f["broker"], f["evidence"]["records"])
        for f in report["findings"]
        if f["code"] == "KA630"
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_arguments(ap, partitions=4, batches=1_000_000)
    keep_help = "share of its segments the lagging follower keeps"
    ap.add_argument("--keep", type=float, default=0.1, help=keep_help)
    args = ap.parse_args(argv)
    data = args.data or Path(tempfile.mkdtemp(prefix="bench-lag-"))
    clean = data / f"clean-{args.partitions}x{args.batches}"
    lagging = data / f"lagging-{args.partitions}x{args.batches}"
    t0 = time.monotonic()
    truth = simulate("clean", clean, args.partitions, args.batches)
    expected = lagging_copy(clean, lagging, truth, args.keep)
    size = sum(f.stat().st_size for f in clean.rglob("*.log"))
    behind = sum(n for _b, n in expected.values())
    print(f"data: {clean} ({size / 2**20:.0f} MiB of segments), generated in {time.monotonic() - t0:.1f} s; "
          f"the lagging followers lack {behind:,} batches in all")  # fmt: skip
    base_s, base_rss, base_report = cli_audit(clean, data / "clean.json")
    wall, peak, report = cli_audit(lagging, data / "lagging.json")
    found = lag_by_partition(report)
    ok = found == expected and not lag_by_partition(base_report)
    print(f"baseline (no lag): CLI {base_s:.1f} s, peak RSS {base_rss / 2**20:.0f} MiB")
    print(f"lagging followers: CLI {wall:.1f} s, peak RSS {peak / 2**20:.0f} MiB "
          f"(x{peak / max(base_rss, 1):.2f} of the baseline's)")  # fmt: skip
    print(f"lag findings (KA630) equal the batches cut: {ok}")
    previous = ""
    if args.previous:
        prev_s, prev_rss, prev_report = cli_audit(lagging, data / "previous.json", args.previous)
        same = lag_by_partition(prev_report) == found
        print(f"previous design ({args.previous}): CLI {prev_s:.1f} s, peak RSS {prev_rss / 2**20:.0f} MiB; "
              f"the same lag findings: {same}")  # fmt: skip
        previous = (
            f"; the previous design (`--previous`) {prev_s:.1f} s, **{prev_rss / 2**20:.0f} MiB** "
            f"(x{prev_rss / max(base_rss, 1):.2f} of the baseline's)"
        )
    if args.record:
        from record import record

        record(
            "bench_lag_audit",
            "`audit` of raw log dirs where one follower of every partition lags: `simulate clean --scale`, "
            f"3 brokers x {args.partitions} partitions x {args.batches:,} one-record batches "
            f"({size / 2**20:.0f} MiB), each lagging follower keeping {args.keep:.0%} of its segments "
            f"({behind:,} batches behind in all), the CLI's own process tree",
            recorded_command("bench_lag_audit.py", args),
            f"CLI **{wall:.1f} s**, peak RSS **{peak / 2**20:.0f} MiB** against {base_s:.1f} s and "
            f"{base_rss / 2**20:.0f} MiB for the same cluster without the lag "
            f"(x{peak / max(base_rss, 1):.2f}){previous}; lag findings equal the batches cut: {ok}",
        )


if __name__ == "__main__":
    main()
