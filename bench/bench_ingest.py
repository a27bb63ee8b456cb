"""Benchmark: ``kafka-auditor ingest`` of checkpoint captures from archives on Spark (issue 11, item 7).

Data, generated with the parsers' ``format_*`` functions into a temporary directory (reused with --data):
  (a) fleet-shaped: one ``.tgz`` per broker and night, ``--brokers`` x ``--nights`` archives, each one capture
      of ``--partitions`` partition directories (``leader-epoch-checkpoint`` of 3 entries and
      ``partition.metadata`` each) plus ``meta.properties`` and the four offset checkpoints: many small files;
  (b) large checkpoints: ``--big-captures`` archives of one capture each whose four offset checkpoints hold
      ``--big-partitions`` entries (and no partition directories): few files, millions of entries.

Timed in one run, printed separately: Spark start-up (``get_spark``), a warm-up ingest of one archive (Python
workers, JIT), then ``ingest`` of (a) and of (b), each into a new warehouse: checkpoint files/s and checkpoint
entries/s (rows of high_watermarks, recovery_points, log_start_offsets, cleaner_offsets, leader_epochs)
after start-up. Baselines measured in the same run on the same archives, single process: (1) ``tarfile``
reading every member (no parsing) and (2) ``tarfile`` plus ``parse_capture`` of each capture (no Parquet),
given as ratios. Targets of the issue: >= 5,000 files/s and >= 2 M entries/s on local[2]. No assertion on
timings.

Usage: python bench/bench_ingest.py [--brokers 20] [--partitions 1000] [--nights 3] [--big-captures 12]
       [--big-partitions 150000] [--data DIR] [--master local[2]]
"""

from __future__ import annotations

import argparse
import io
import os
import tarfile
import tempfile
import time
from pathlib import Path

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata

CLUSTER_ID = "QgxNy_HmRciFoMjvSeDK3w"
TOPICS = 50
NIGHT_MS = 86_400_000
FIRST_NIGHT_MS = 1_767_578_400_000  # 2026-01-05T02:00:00Z
OFFSET_FILES = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def _topic_ids() -> list[str]:
    import base64

    return [
        base64.urlsafe_b64encode(i.to_bytes(16, "big")).decode().rstrip("=") for i in range(1, TOPICS + 1)
    ]


def _capture(broker: int, night: int, partitions: int, with_dirs: bool) -> dict[str, bytes]:
    """One broker's capture: ``partitions`` partitions over :data:`TOPICS` topics."""
    tps = [(f"topic-{p % TOPICS}", p // TOPICS) for p in range(partitions)]
    base = 1_000_000 * (night + 1) + broker
    files = {"meta.properties": format_meta_properties(1, node_id=broker, cluster_id=CLUSTER_ID)}
    for i, name in enumerate(OFFSET_FILES):
        files[name] = format_offset_checkpoint((t, p, base + 7 * p - 1000 * i) for t, p in tps)
    if with_dirs:
        ids = _topic_ids()
        for t, p in tps:
            d = f"{t}-{p}"
            files[f"{d}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(
                [(0, 0), (1, 1000 + p), (2 + night, 5000 + p)]
            )
            files[f"{d}/partition.metadata"] = format_partition_metadata(ids[p % TOPICS])
    return files


def _write_tgz(path: Path, prefix: str, files: dict[str, bytes], mtime: float) -> None:
    tmp = path.with_suffix(".tmp")
    # GNU format with integer mtimes, like `tar -czf` (no PAX header per member)
    with tarfile.open(tmp, "w:gz", compresslevel=1, format=tarfile.GNU_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{prefix}/{name}")
            info.size, info.mtime = len(data), int(mtime)
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)


def generate(data: Path, args) -> tuple[list[Path], list[Path]]:
    """(fleet archives, big-checkpoint archives), generated unless present."""
    fleet_dir, big_dir = data / "fleet", data / "big"
    fleet_dir.mkdir(parents=True, exist_ok=True)
    big_dir.mkdir(parents=True, exist_ok=True)
    fleet, big = [], []
    for night in range(args.nights):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime((FIRST_NIGHT_MS + night * NIGHT_MS) / 1000))
        for broker in range(1, args.brokers + 1):
            path = fleet_dir / f"broker-{broker}-{stamp}.tgz"
            if not path.exists():
                files = _capture(broker, night, args.partitions, True)
                _write_tgz(path, "var/lib/kafka/data", files, (FIRST_NIGHT_MS + night * NIGHT_MS) / 1000)
            fleet.append(path)
    for i in range(args.big_captures):
        path = big_dir / f"big-{i + 1}-20260105T020000Z.tgz"
        if not path.exists():
            _write_tgz(path, "data", _capture(100 + i, 0, args.big_partitions, False), FIRST_NIGHT_MS / 1000)
        big.append(path)
    return fleet, big


# ---------------------------------------------------------------------------------- single-process baselines


def baseline_tarfile(archives: list[Path]) -> tuple[int, int]:
    """Every member of every archive read with tarfile: (members, bytes)."""
    members = size = 0
    for path in archives:
        with tarfile.open(path, "r:*") as tar:
            for info in tar:
                if info.isfile():
                    size += len(tar.extractfile(info).read())
                    members += 1
    return members, size


def baseline_parse(archives: list[Path]) -> int:
    """tarfile plus parse_capture of each archive's capture (single process, no Parquet): entries parsed."""
    from auditor.layout.captures import capture_location
    from auditor.observe.captures import CaptureFile, parse_capture

    entries = 0
    tables = ("high_watermarks", "recovery_points", "log_start_offsets", "cleaner_offsets", "leader_epochs")
    for path in archives:
        files, root = [], ""
        with tarfile.open(path, "r:*") as tar:
            for info in tar:
                where = capture_location(info.name) if info.isfile() else None
                if where is not None:
                    root = where[0]
                    files.append(CaptureFile(where[1], int(info.mtime * 1000), tar.extractfile(info).read()))
        out = parse_capture(str(path), root, files, ingest_id="baseline", ingested_at_ms=0)
        entries += sum(out[t].num_rows for t in tables)
    return entries


def _ingest(spark, archives: list[Path], base: Path, name: str):
    from auditor.layout.warehouse import Warehouse
    from auditor.spark.ingest import ingest

    warehouse = Warehouse.open(base / name, create=True)
    return ingest(spark, archives, warehouse)


def _report(label: str, result, baseline_files: float, baseline_entries: float) -> None:
    files_rate = result.files / result.seconds
    entries_rate = result.entries / result.seconds
    print(
        f"{label}: {result.seconds:.1f} s, {result.archives} archives, {result.captures_added} captures, "
        f"{result.files:,} files ({files_rate:,.0f} files/s, {files_rate / baseline_files:.2f}x tarfile "
        f"alone), {result.entries:,} entries ({entries_rate / 1e6:.2f} M entries/s, "
        f"{entries_rate / baseline_entries:.2f}x single-process parse)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--big-captures", type=int, default=12)
    parser.add_argument("--big-partitions", type=int, default=150_000)
    parser.add_argument("--data", type=Path, default=None, help="keep the generated archives here (reused)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    shape = f"{args.brokers}x{args.partitions}x{args.nights}-{args.big_captures}x{args.big_partitions}"
    data = args.data or Path(tempfile.gettempdir()) / f"kafka-auditor-bench-ingest-{shape}"
    t0 = time.perf_counter()
    fleet, big = generate(data, args)
    size = sum(p.stat().st_size for p in fleet + big)
    print(
        f"data: {len(fleet)} fleet archives ({args.brokers} brokers x {args.nights} nights, "
        f"{args.partitions} partitions each), {len(big)} archives of {args.big_partitions:,}-entry "
        f"checkpoints, {size / 1e6:.0f} MB ({time.perf_counter() - t0:.1f} s to generate or find) in {data}"
    )

    rates = {}
    for label, archives in (("fleet", fleet), ("big", big)):
        t0 = time.perf_counter()
        members, nbytes = baseline_tarfile(archives)
        t_tar = time.perf_counter() - t0
        t0 = time.perf_counter()
        entries = baseline_parse(archives)
        t_parse = time.perf_counter() - t0
        rates[label] = (members / t_tar, entries / t_parse)
        print(
            f"baseline {label}, one process: tarfile {members:,} members {nbytes / 1e6:.0f} MB in "
            f"{t_tar:.1f} s ({members / t_tar:,.0f} files/s); tarfile + parse_capture {entries:,} entries in "
            f"{t_parse:.1f} s ({entries / t_parse / 1e6:.2f} M entries/s, {members / t_parse:,.0f} files/s)"
        )

    from auditor.spark.session import get_spark

    t0 = time.perf_counter()
    spark = get_spark(args.master)
    print(f"spark start-up: {time.perf_counter() - t0:.1f} s ({args.master})")
    with tempfile.TemporaryDirectory(prefix="kafka-auditor-bench-wh-") as tmp:
        base = Path(tmp)
        warm = _ingest(spark, fleet[:1], base, "warm-up")
        print(f"warm-up ingest (1 archive): {warm.seconds:.1f} s")
        _report("ingest fleet", _ingest(spark, fleet, base, "fleet"), *rates["fleet"])
        _report("ingest big  ", _ingest(spark, big, base, "big"), *rates["big"])
    spark.stop()


if __name__ == "__main__":
    main()
