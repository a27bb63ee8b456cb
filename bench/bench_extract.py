"""Benchmark: ``kafka-auditor extract`` of a broker log dir against the raw header walk, and its peak RSS
(issue 13, item 5).

Generates a broker log dir in ``$TMPDIR`` shaped like a real one (``--shape``, :data:`SHAPES`; ``mixed``, the
default: topic ``orders``, 4 partitions of ~200 B batches of one record, topic ``events``, 2 partitions of
~16 KiB batches; ``production``: 16 KiB and 1 MiB batches), and the compacted topic
``profiles`` (1 partition of ~1 KiB batches of 8 records, ``--compacted`` of the bytes, 10 % by default;
compacted by its cleaner-offset-checkpoint entry, so ``extract`` also writes a row per record with its
hash), in segments of ``--segment-mb`` with offset and time indexes, leader-epoch caches,
``partition.metadata``, ``meta.properties`` and the offset checkpoints. It does so at two sizes (``--mb``
and ``--mb`` x ``--scale``), warms the page cache, then runs, interleaved, each in a fresh process:

  * baseline: ``SegmentWalker.header_blocks()`` over every segment of the log dir (CRC-32C of every batch,
    numpy columns per window), the header walk of ``bench/bench_header_walk.py``;
  * ``kafka-auditor extract LOGDIR --out $TMPDIR/...``, the CLI (an extract directory, one Parquet file per
    table kind).

The log dir is shut down cleanly with its recovery point at the log end offset, as Kafka leaves it: every
batch lies below the recovery point, so ``extract`` reads batch headers without computing their CRC, as
Kafka's loader does (``LogRecovery.trusted_below_in``), where the baseline computes every CRC.

Both are timed as the wall clock of their process (interpreter start and imports included, modules loaded
from their bytecode cache as an installed package loads them; the start-up alone, on a log dir holding only
``meta.properties``, is printed and subtracted for a second ratio), with
their CPU seconds (user + system) and peak RSS. Prints MB/s, the ratios extract / walk (target >= 100 %:
extract at least as fast as the walk) and the peak RSS at both sizes (bounded memory: about the same at
both). No assertion on timings; the machine may be shared, so read the ratios of one run.

Usage: python bench/bench_extract.py [--mb 500] [--scale 4] [--compacted 0.10] [--runs 3] [--cores 1]
       [--shape mixed,production] [--record]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_scan import template_batch, write_segment  # the bench dir is on sys.path first

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata, segment_file_name

REPO = Path(__file__).resolve().parents[1]
CLUSTER_ID = "vyF_svkNTCmuElFZJ9FAng"
SHAPES = {
    # topic, partitions, batch bytes, records per batch, share of the other bytes, compacted
    "mixed": (
        ("orders", 4, 200, 1, 0.6, False),
        ("events", 2, 16_384, 4, 0.4, False),
        ("profiles", 1, 1_024, 8, None, True),  # --compacted of the bytes
    ),
    # batches of 16 KiB to 1 MiB, what a production broker's producers write (batch.size, linger.ms)
    "production": (
        ("orders", 4, 16_384, 16, 0.5, False),
        ("events", 2, 1 << 20, 64, 0.5, False),
        ("profiles", 1, 1_024, 8, None, True),  # --compacted of the bytes
    ),
}
"""The log dirs generated (``--shape``): ``mixed``, most batches of one small record (the worst case for a
reader whose work is per batch); ``production``, the batch sizes of a production broker."""


def write_partition(part: Path, template: bytes, total_bytes: int, segment_bytes: int) -> int:
    """Segments (with offset and time indexes) of ``template`` batches filling ``total_bytes``; the next
    offset (the log end offset)."""
    part.mkdir(parents=True)
    per_segment = max(1, segment_bytes // len(template))
    remaining = max(1, total_bytes // len(template))
    base = 0
    while remaining > 0:
        n = min(remaining, per_segment)
        nxt, entries = write_segment(part / segment_file_name(base, ".log"), template, base, n)
        index = np.array([(o - base, q) for o, q in entries], dtype=">i4").reshape(-1, 2)
        (part / segment_file_name(base, ".index")).write_bytes(index.tobytes())
        stamp = np.array([(1_795_000_000_000, nxt - 1 - base)], dtype=[("t", ">i8"), ("o", ">i4")])
        (part / segment_file_name(base, ".timeindex")).write_bytes(stamp.tobytes())
        remaining -= n
        base = nxt
    (part / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint([(3, 0)]))
    (part / "partition.metadata").write_bytes(format_partition_metadata("qiruRg1LTeWQQHZSaPz4Yg"))
    return base


def make_logdir(root: Path, mb: float, segment_mb: int, compacted_share: float, shape: str = "mixed") -> None:
    """A broker log dir of about ``mb`` MB of segments (see the module docstring and :data:`SHAPES`),
    ``compacted_share`` of them in the compacted topic."""
    ends, cleaner = [], []
    topics = SHAPES[shape]
    plain = sum(share for *_, share, compacted in topics if not compacted)
    for topic, partitions, batch_bytes, records, share, compacted in topics:
        template = template_batch(batch_bytes, records)
        share = compacted_share if compacted else share * (1 - compacted_share) / plain
        if not share:
            continue
        for p in range(partitions):
            part_bytes = int(mb * 1e6 * share / partitions)
            end = write_partition(root / f"{topic}-{p}", template, part_bytes, segment_mb << 20)
            ends.append((topic, p, end))
            if compacted:
                cleaner.append((topic, p, 0))
    (root / "meta.properties").write_bytes(format_meta_properties(1, 1, CLUSTER_ID, "e54YZRl8UUamg6XyB1rOTw"))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_bytes(format_offset_checkpoint(ends))
    (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
    (root / "cleaner-offset-checkpoint").write_bytes(format_offset_checkpoint(cleaner))
    (root / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":1}')


WALK = """
import sys
from pathlib import Path
from parsers.segment import SegmentWalker
n = 0
for log in sorted(Path(sys.argv[1]).glob("*/*.log")):
    walker = SegmentWalker(log)
    n += sum(len(block) for block in walker.header_blocks())
    assert walker.stop.reason == "end" and walker.invalid_count == 0
print(n)
"""


CPUS: set[int] | None = None
"""CPUs the children may run on (``--cores``; None: all)."""

LAUNCHER = """
import os, sys
fd, cmd = int(sys.argv[1]), sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(cmd[0], cmd)
_, status, usage = os.wait4(pid, 0)
cpu = usage.ru_utime + usage.ru_stime
os.write(fd, b"%d %d %f" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss, cpu))
"""
"""Runs a command and reports its own exit code, peak RSS and CPU seconds: a child started straight from
this process would inherit this process's RSS high-water mark."""


def installed_env() -> dict[str, str]:
    """The environment of the children: this one, with Python's bytecode cache on (an installed package has
    its modules compiled; with ``PYTHONDONTWRITEBYTECODE`` set every child would compile every module it
    imports from source, about 0.13 s more for ``extract``'s 350 modules than for the walk's few). The
    start-ups, measured first, write the cache."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_timed(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, peak RSS (MB) and output of one command."""
    read, write = os.pipe()
    pin = (lambda: os.sched_setaffinity(0, CPUS)) if CPUS else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(write), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(write,),
        preexec_fn=pin,
        env=installed_env(),
    )
    os.close(write)
    out = proc.communicate()[0].decode(errors="replace")
    seconds = time.perf_counter() - t0
    with os.fdopen(read, "rb") as fh:
        code, maxrss, cpu = fh.read().split()
    if int(code) != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({int(code)}):\n{out}")
    return seconds, float(cpu), int(maxrss) / 1024, out


def extract_argv(logdir: Path, out: Path) -> list[str]:
    cli = shutil.which("kafka-auditor") or str(Path(sys.executable).parent / "kafka-auditor")
    return [cli, "extract", str(logdir), "--out", str(out)]


def warm(root: Path) -> int:
    """Read every segment once (page cache); their total bytes."""
    total = 0
    for log in root.glob("*/*.log"):
        with open(log, "rb") as fh:
            while chunk := fh.read(64 << 20):
                total += len(chunk)
    return total


def measure(root: Path, tmp: Path, runs: int) -> dict:
    """Best-of-``runs`` wall and CPU seconds of the walk and of ``extract`` (interleaved), peak RSS."""
    size = warm(root)
    best: dict[str, list] = {"walk": [], "extract": []}
    rss = {"walk": 0.0, "extract": 0.0}
    out = tmp / f"{root.name}-extract"
    walk_argv = [sys.executable, "-c", WALK, str(root)]
    for _ in range(runs):
        for name, argv in (("walk", walk_argv), ("extract", extract_argv(root, out))):
            seconds, cpu, peak, text = run_timed(argv)
            best[name].append((seconds, cpu))
            rss[name] = max(rss[name], peak)
            last = text.strip().splitlines()[-1]
            if name == "walk":
                batches = int(last)
            else:
                summary = last.split(": ", 1)[-1]
    shutil.rmtree(out)
    return {
        "mb": size / 1e6,
        **{name: min(times) for name, times in best.items()},
        "rss": rss,
        "batches": batches,
        "summary": summary,
    }


def startups(tmp: Path) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of the walk and of ``extract`` over a log dir holding only ``meta.properties``
    (what each child costs before its first byte: interpreter start and imports)."""
    empty = tmp / "empty-logdir"
    empty.mkdir()
    meta = format_meta_properties(1, 1, CLUSTER_ID, "e54YZRl8UUamg6XyB1rOTw")
    (empty / "meta.properties").write_bytes(meta)
    argv = {
        "walk": [sys.executable, "-c", WALK, str(empty)],
        "extract": extract_argv(empty, tmp / "empty-extract"),
    }
    return {name: min(run_timed(a)[:2] for _ in range(3)) for name, a in argv.items()}


def report(r: dict, start: dict) -> dict:
    """Print one log dir's figures: MB/s, seconds (wall, CPU), peak RSS, ratios."""
    size = r["mb"]
    print(f"  {size:,.0f} MB of segments, {r['batches']:,} batches; extract wrote {r['summary']}")
    for name, label in (("walk", "header walk (baseline)"), ("extract", "kafka-auditor extract")):
        wall, cpu = r[name]
        print(
            f"  {label:24s} {size / wall:6.0f} MB/s  {wall:6.2f} s wall  {cpu:6.2f} s CPU"
            f"   peak RSS {r['rss'][name]:5.0f} MB"
        )
    ratio = r["walk"][0] / r["extract"][0]
    net = (r["walk"][0] - start["walk"][0]) / (r["extract"][0] - start["extract"][0])
    cpu = r["walk"][1] / r["extract"][1]
    print(
        f"  extract / walk: {ratio:.0%} of the MB/s (target >= 100%); without the start-ups {net:.0%}; "
        f"CPU seconds {cpu:.0%}"
    )
    return {"ratio": ratio, "net": net, "cpu": cpu}


def summary(shape: str, r: dict, ratios: dict) -> str:
    """One log dir's figures, as the recorded row states them."""
    walk, extract = r["walk"][0], r["extract"][0]
    return (
        f"{shape}, {r['mb']:,.0f} MB ({r['batches']:,} batches): walk {r['mb'] / walk:,.0f} MB/s, extract "
        f"{r['mb'] / extract:,.0f} MB/s = **{ratios['ratio']:.0%}** ({ratios['net']:.0%} without the "
        f"start-ups, {ratios['cpu']:.0%} in CPU seconds), peak RSS {r['rss']['walk']:.0f} MB (walk) / "
        f"{r['rss']['extract']:.0f} MB (extract)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=500, help="segment bytes of the smaller log dir, in MB")
    parser.add_argument("--scale", type=float, default=4, help="the larger log dir is this many times bigger")
    parser.add_argument("--segment-mb", type=int, default=256, help="segment.bytes, in MiB")
    parser.add_argument("--compacted", type=float, default=0.10, help="share of the bytes in `profiles`")
    shapes_help = f"log dir shapes, comma-separated ({', '.join(SHAPES)})"
    parser.add_argument("--shape", default="mixed", help=shapes_help)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cores", type=int, default=0, help="pin both children to this many CPUs (0: all)")
    parser.add_argument("--record", action="store_true", help="write the result row of docs/performance.md")
    args = parser.parse_args()
    shapes = [s.strip() for s in args.shape.split(",") if s.strip()]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        parser.error(f"unknown --shape {', '.join(unknown)} (known: {', '.join(SHAPES)})")
    global CPUS
    if args.cores:
        CPUS = set(sorted(os.sched_getaffinity(0))[: args.cores])
    lines = []
    with tempfile.TemporaryDirectory(prefix="ka-bench-extract-") as name:
        tmp = Path(name)
        start = startups(tmp)
        print(
            f"start-up (empty log dir): header walk {start['walk'][0]:.2f} s, "
            f"extract {start['extract'][0]:.2f} s"
        )
        for shape in shapes:
            for mb in (args.mb, args.mb * args.scale):
                root = tmp / f"broker-{shape}-{int(mb)}mb"
                t0 = time.perf_counter()
                make_logdir(root, mb, args.segment_mb, args.compacted, shape)
                print(f"\ngenerated {root.name} ({shape}) in {time.perf_counter() - t0:.1f} s")
                r = measure(root, tmp, args.runs)
                shutil.rmtree(root)
                lines.append(summary(shape, r, report(r, start)))
    if args.record:
        from record import record

        argv = " ".join(sys.argv[1:])
        record(
            "bench_extract",
            "`kafka-auditor extract` of a cleanly shut down broker log dir against the header walk with "
            "CRC-32C (`SegmentWalker.header_blocks`), fresh processes, interleaved, best of the runs; "
            "`mixed`: most batches of one ~200 B record; `production`: batches of 16 KiB and 1 MiB; "
            f"{args.compacted:.0%} of the bytes in a compacted partition (a row per record)",
            f"python bench/bench_extract.py {argv}",
            f"start-up {start['walk'][0]:.2f} s (walk) / {start['extract'][0]:.2f} s (extract); "
            + "; ".join(lines),
        )


if __name__ == "__main__":
    main()
