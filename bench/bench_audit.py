"""Benchmark: ``kafka-auditor audit`` from Parquet extracts (issue 5, item 7).

Data: 3 brokers x 200 partitions x 50,000 batches (30 M batch rows), written straight into one extract
directory per broker (``ExtractWriter``: one flat Parquet file per table kind; generating real segments with
``simulate --scale`` and extracting them would take minutes and measure the generator). Every replica holds
the same batches except: in every 50th partition broker 3 kept 10,000 batches of an older epoch that the
leader replaced after an unclean election (divergence + committed loss), and in every 40th partition broker 2
lags 5,000 batches behind (a fifth and a tenth of the batches in partitions of no more than 10,000).

Timed in one run, printed separately:
  * Spark start-up (``get_spark``: JVM, session);
  * the audit job (every comparison: chunk digests, divergence, epochs, HW rules, truncation loss) and batch
    rows/s after start-up, twice (the first run pays the JVM's JIT warm-up); then the divergence comparison
    alone (digests, candidate chunks, first divergent offsets);
  * baseline: a single-process pure-Python divergence comparison on the same data (per partition, every
    replica pair walked batch by batch over its common range), load time and comparison time separately.
Both implementations must report the same divergent pairs. No assertion on timings.

Usage: python bench/bench_audit.py [--partitions 200] [--batches 50000] [--data DIR] [--master local[2]]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditor.observe import rows
from auditor.observe.extract_files import VERSION_KEY, ExtractWriter, kind_path

CLUSTER = "bench"
BROKERS = (1, 2, 3)
RECORDS_PER_BATCH = 5


def _epoch_span(batches: int) -> int:
    """Batches per leader epoch, also the old leader's divergent tail (half of it: the lagging follower's
    gap): 10,000, the benchmark's shape, or a fifth of the batches when a partition has no more."""
    return 10_000 if batches > 10_000 else max(2, batches // 5)


def _partition_batches(p: int, broker: int, batches: int) -> dict[str, np.ndarray]:
    """Header columns of one replica of partition ``p`` (deterministic; identical on every broker unless this
    partition carries a fault)."""
    rng = np.random.default_rng(p)
    n = batches
    span = _epoch_span(batches)
    base = np.arange(n, dtype=np.int64) * RECORDS_PER_BATCH
    crc = rng.integers(0, 2**32, n, dtype=np.int64)
    ple = (np.arange(n) // span).astype(np.int32)
    size = rng.integers(200, 400, n).astype(np.int32)
    if p % 50 == 7 and broker == 3:  # old leader: its last epoch's batches are its own, not the leader's
        cut = n - span
        crc[cut:] = np.random.default_rng(10_000 + p).integers(0, 2**32, n - cut, dtype=np.int64)
        ple[cut:] = ple[cut - 1]
    if p % 40 == 3 and broker == 2:  # a lagging follower
        n -= span // 2
        base, crc, ple, size = base[:n], crc[:n], ple[:n], size[:n]
    return {"base": base, "crc": crc, "ple": ple, "size": size}


def _tables(p: int, broker: int, batches: int, log_dir: str) -> list[tuple[str, pa.Table]]:
    # here, not at the top: a child running the previous design's code (--previous) imports this module
    from auditor.observe.partition_key import partition_key

    cols = _partition_batches(p, broker, batches)
    n = len(cols["base"])
    topic = f"t{p // 10}"
    partition = p % 10
    segment = (cols["base"] // (RECORDS_PER_BATCH * 10_000)) * (RECORDS_PER_BATCH * 10_000)
    batch = pa.table(
        {
            "cluster": rows.repeat_string(CLUSTER, n),
            "topic": rows.repeat_string(topic, n),
            "partition": np.full(n, partition, np.int32),
            "broker": np.full(n, broker, np.int32),
            "log_dir": rows.repeat_string(log_dir, n),
            "segment": segment,
            "position": np.cumsum(cols["size"]).astype(np.int64) - cols["size"],
            "base_offset": cols["base"],
            "last_offset": cols["base"] + RECORDS_PER_BATCH - 1,
            "partition_leader_epoch": cols["ple"],
            "magic": np.full(n, 2, np.int8),
            "crc": cols["crc"],
            "valid": np.ones(n, bool),
            "live": np.ones(n, bool),
            "size": cols["size"],
            "attributes": np.zeros(n, np.int16),
            "max_timestamp": 1_700_000_000_000 + cols["base"],
            "producer_id": np.full(n, -1, np.int64),
            "producer_epoch": np.full(n, -1, np.int16),
            "base_sequence": np.full(n, -1, np.int32),
            "records_count": np.full(n, RECORDS_PER_BATCH, np.int32),
            "is_control": np.zeros(n, bool),
            "is_transactional": np.zeros(n, bool),
            "codec": np.zeros(n, np.int8),
            "control_type": pa.nulls(n, pa.int8()),
            "tp": np.full(n, partition_key(CLUSTER, topic, partition), np.int64),
        },
        schema=rows.BATCH,
    )
    leo = int(cols["base"][-1]) + RECORDS_PER_BATCH
    epochs = sorted(
        {int(e): int(cols["base"][np.argmax(cols["ple"] == e)]) for e in np.unique(cols["ple"])}.items()
    )
    epoch = pa.Table.from_pylist(
        [
            {
                "cluster": CLUSTER,
                "topic": topic,
                "partition": partition,
                "broker": broker,
                "log_dir": log_dir,
                "epoch": e,
                "start_offset": s,
                "ordinal": i,
            }
            for i, (e, s) in enumerate(epochs)
        ],
        schema=rows.EPOCH,
    )
    hw = leo if not (p % 40 == 3 and broker == 2) else leo - 100
    replica = pa.Table.from_pylist(
        [
            {
                "cluster": CLUSTER,
                "topic": topic,
                "partition": partition,
                "broker": broker,
                "log_dir": log_dir,
                "hw": hw,
                "recovery_point": leo,
                "log_start": 0,
                "leo": leo,
                "leo_on_disk": leo,
                "clean_shutdown": True,
                "compacted": False,
                "has_records": False,
                "segment_count": 5,
                "first_segment": 0,
                "last_segment": int(segment[-1]),
                "batch_count": n,
                "record_count": n * RECORDS_PER_BATCH,
                "bytes": int(cols["size"].sum()),
                "first_offset": 0,
                "max_batch_epoch": int(cols["ple"].max()),
                "latest_epoch": epochs[-1][0],
                "epoch_entries": len(epochs),
                "epoch_dropped": 0,
                "invalid_batches": 0,
                "tail_state": "end",
                "tail_bytes": 0,
                "recovered": False,
            }
        ],
        schema=rows.REPLICA,
    )
    return [("batch", batch), ("epoch", epoch), ("replica", replica)]


def written_alike(out: Path) -> bool:
    """``out`` holds an extract of this schema version whose batch file has this code's columns and the page
    index :class:`ExtractWriter` writes (an extract left by an earlier writer is written again)."""
    try:
        batch = pq.ParquetFile(kind_path(out, "batch"))
    except (OSError, ValueError):
        return False
    meta = batch.metadata
    version = (batch.schema_arrow.metadata or {}).get(VERSION_KEY)
    indexed = meta.num_row_groups == 0 or meta.row_group(0).column(0).has_column_index
    alike = batch.schema_arrow.names == rows.BATCH.names
    return version == str(rows.SCHEMA_VERSION).encode() and indexed and alike


def generate(data: Path, partitions: int, batches: int, shape=None) -> list[Path]:
    """One extract directory per broker under ``data`` (kept when already there, written as this code's
    :class:`ExtractWriter` writes); ``shape(batch, p)`` rewrites each replica's batch table of partition ``p``
    (``bench_eos_audit``: all transactional)."""
    data.mkdir(parents=True, exist_ok=True)
    files = []
    for broker in BROKERS:
        out = data / f"broker-{broker}"
        files.append(out)
        if written_alike(out):
            continue
        with ExtractWriter(out) as writer:  # written beside, renamed when whole
            for p in range(partitions):
                for kind, table in _tables(p, broker, batches, f"/bench/broker-{broker}"):
                    writer.add(kind, shape(table, p) if shape is not None and kind == "batch" else table)
    return files


# ------------------------------------------------------------------------------------ pure-Python baseline


def baseline_load(files: list[Path]) -> dict[tuple, dict[int, list[tuple]]]:
    """Per partition and broker: the batch tuples (base, last, crc, epoch) as Python objects."""
    out: dict[tuple, dict[int, list[tuple]]] = {}
    cols = ["topic", "partition", "broker", "base_offset", "last_offset", "crc", "partition_leader_epoch"]
    for f in files:
        b = pq.read_table(kind_path(f, "batch"), columns=cols)
        topic = b["topic"].to_numpy(zero_copy_only=False)
        part = b["partition"].to_numpy()
        change = np.flatnonzero((topic[1:] != topic[:-1]) | (part[1:] != part[:-1])) + 1
        bounds = [0, *change.tolist(), len(part)]
        base, last = b["base_offset"].to_numpy(), b["last_offset"].to_numpy()
        crc, ple = b["crc"].to_numpy(), b["partition_leader_epoch"].to_numpy()
        broker = int(b["broker"][0].as_py())
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            out.setdefault((str(topic[lo]), int(part[lo])), {})[broker] = list(
                zip(
                    base[lo:hi].tolist(),
                    last[lo:hi].tolist(),
                    crc[lo:hi].tolist(),
                    ple[lo:hi].tolist(),
                    strict=True,
                )
            )
    return out


def baseline_divergence(data: dict[tuple, dict[int, list[tuple]]]) -> dict[tuple, int]:
    """First divergent offset of every replica pair within its common range, one process, plain Python."""
    found = {}
    for key, replicas in data.items():
        brokers = sorted(replicas)
        for i, a in enumerate(brokers):
            for b in brokers[i + 1 :]:
                xa, xb = replicas[a], replicas[b]
                hi = min(xa[-1][1] + 1, xb[-1][1] + 1)
                ia = ib = 0
                while ia < len(xa) and ib < len(xb):
                    ta, tb = xa[ia], xb[ib]
                    if ta[0] >= hi and tb[0] >= hi:
                        break
                    if ta == tb:
                        ia += 1
                        ib += 1
                        continue
                    if ta[0] < hi or tb[0] < hi:
                        found[(*key, a, b)] = min(ta[0], tb[0])
                    break
    return found


def batch_row_count(files: list[Path]) -> int:
    """Batch rows of the extracts, from the footers of their batch files."""
    return sum(pq.ParquetFile(kind_path(f, "batch")).metadata.num_rows for f in files)


def _cores(spark, master: str) -> int:
    if master.startswith("local["):
        inner = master[len("local[") : -1]
        return os.cpu_count() or 1 if inner == "*" else int(inner)
    return spark.sparkContext.defaultParallelism


def _rate(rows: int, seconds: float, cores: int) -> str:
    return f"{rows / seconds / 1e6:.2f} M batch rows/s ({rows / seconds / cores / 1e6:.2f} M/s per core)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--batches", type=int, default=50_000)
    parser.add_argument("--data", type=Path, default=None, help="keep the generated extracts here (reused)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory (default: Spark's, 1g)")
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    data = args.data or Path(tempfile.gettempdir()) / f"kafka-auditor-bench-{args.partitions}x{args.batches}"
    t0 = time.perf_counter()
    files = generate(data, args.partitions, args.batches)
    batch_rows = batch_row_count(files)
    size = sum(p.stat().st_size for f in files for p in f.iterdir())
    print(
        f"data: {len(files)} extracts, {batch_rows:,} batch rows, {size / 1e6:.0f} MB "
        f"({time.perf_counter() - t0:.1f} s to generate or find) in {data}"
    )

    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.session import get_spark

    t0 = time.perf_counter()
    conf = {"spark.driver.memory": args.driver_memory} if args.driver_memory else None
    spark = get_spark(args.master, extra_conf=conf)
    startup = time.perf_counter() - t0
    cores = _cores(spark, args.master)
    print(f"spark start-up: {startup:.1f} s ({args.master}, {cores} cores)")
    inputs = discover(files)

    times = []
    for _run in range(2):
        t0 = time.perf_counter()
        result = run_audit(spark, inputs)
        times.append(time.perf_counter() - t0)
    spark_pairs = {
        (f.topic, f.partition, f.broker, f.related[0]["broker"]): f.offset_start
        for f in result.findings
        if f.code == "KA601"
    }
    lost = sum(f.evidence.get("records", 0) for f in result.findings if f.code == "KA710")
    print(
        f"audit job, first run (cold JIT): {times[0]:.1f} s, {_rate(batch_rows, times[0], cores)}; "
        f"{len(result.findings)} findings, {len(spark_pairs)} divergent pairs, "
        f"{lost:,} committed records lost"
    )
    print(f"audit job, second run:          {times[1]:.1f} s, {_rate(batch_rows, times[1], cores)}")

    from auditor.spark import compare
    from auditor.spark.audit import _small_input_settings
    from auditor.spark.extract import load

    with _small_input_settings(spark, inputs):
        t0 = time.perf_counter()
        tables = load(spark, inputs)
        n = len(compare.divergence_frame(tables).collect())
        div_s = time.perf_counter() - t0
    print(
        f"divergence comparison alone:    {div_s:.1f} s, {_rate(batch_rows, div_s, cores)}, "
        f"{n} divergent pairs"
    )

    if args.skip_baseline:
        return
    t0 = time.perf_counter()
    loaded = baseline_load(files)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pure = baseline_divergence(loaded)
    pure_s = time.perf_counter() - t0
    del loaded
    print(
        f"baseline, pure Python, 1 process: load {load_s:.1f} s + divergence {pure_s:.1f} s; "
        f"comparison alone {batch_rows / pure_s / 1e6:.2f} M batch rows/s, with loading "
        f"{batch_rows / (load_s + pure_s) / 1e6:.2f} "
        f"M/s; {len(pure)} divergent pairs"
    )
    print(
        f"same divergent pairs and offsets as Spark: {pure == spark_pairs}; Spark divergence comparison vs "
        f"baseline (load + comparison): {(load_s + pure_s) / div_s:.1f}x faster; whole audit (second run) vs "
        f"baseline: {(load_s + pure_s) / times[1]:.1f}x"
    )


if __name__ == "__main__":
    main()
