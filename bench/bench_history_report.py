"""Benchmark: the history checks of ``kafka-auditor report`` over a warehouse (issue 11, item 7).

Data: 30 nightly captures x 20 brokers x 2,000 partitions per broker (13,340 partitions, RF 3, each broker
holding 2,001 replicas), written straight into the warehouse tables with pyarrow (Hive-partitioned by
cluster and capture date, as ``ingest`` writes them; building and ingesting real captures would measure
ingest). Per capture and replica: a high watermark, a recovery point, a log start offset (for the half of
the topics with retention inside a segment), a partition.metadata topic id and the leader-epoch-checkpoint
(one or two entries: every seventh partition changed leader once, retention moves the first entry up with
truncateFromStart). About 6 M rows. Injected (each found with its code, nothing else may fire):
a high watermark going back with the epoch cache rewritten and forked (an unclean election: KA801, KA804,
KA805), a log start offset going back (KA802), a recovery point going back with no restart (KA803), a
follower lagging 50,000 records for four days (KA806), a partition moved from one broker to another
(KA807, KA808), a reformatted log dir (KA810), a broker captured for the last time four days before the
end (KA811) and a recreated topic (KA814).

Timed in one run, printed separately:
  * Spark start-up (``get_spark``: JVM, session);
  * ``run_history`` (read, union, shuffle by partition, every rule, charts, fleet rules on the driver) and
    rows/s after start-up, twice (the first run pays the JVM's JIT warm-up);
  * baseline: the same rules in one process over the same tables read with pyarrow into pandas (the pure
    pandas evaluation), load and evaluation separately, and the ratio.
Both must report the same findings. No assertion on timings.

Measured on the 2-core development VM shared with other jobs (load 4-7), 5.4 M rows: run_history 54.7 s
(first run) and 33.4 s (second), 99k-162k rows/s, one Spark job; every injected event found and nothing
else; the one-process pandas baseline 21.4 s (3.0 s load, 18.4 s rules), ratio Spark/baseline 1.56 on
2 cores (the Arrow transfer from the JVM to the Python workers costs about what the rules do; the Spark
version scales out with executors, the baseline holds the whole warehouse in one process's memory).

Usage: python bench/bench_history_report.py [--days 30] [--brokers 20] [--partitions 2000] [--data DIR]
       [--master local[2]] [--no-baseline]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from auditor.observe.history_rows import TABLES

CLUSTER = "bench"
T0 = 1_767_232_800_000  # 2026-01-01T02:00:00Z
DAY = 24 * 3600 * 1000
TOPICS = 20
RF = 3


def _layout(brokers: int, per_broker: int) -> tuple[int, int]:
    """(partitions per topic, total partitions) so that every broker holds about ``per_broker`` replicas."""
    total = (brokers * per_broker + RF - 1) // RF
    per_topic = (total + TOPICS - 1) // TOPICS
    return per_topic, per_topic * TOPICS


def _write(table: pa.Table, root: Path, name: str, part: int) -> None:
    ds.write_dataset(
        table,
        root / name,
        format="parquet",
        basename_template=f"part-{part}-{{i}}.parquet",
        partitioning=ds.partitioning(
            pa.schema([pa.field("cluster", pa.string()), pa.field("captureDate", pa.string())]), flavor="hive"
        ),
        existing_data_behavior="overwrite_or_ignore",
    )


def build(root: Path, days: int, brokers: int, per_broker: int) -> dict:
    """Write the warehouse under ``root``; return the table paths, row count and the injected events."""
    per_topic, total = _layout(brokers, per_broker)
    rng = np.random.default_rng(11)
    pid = np.arange(total)
    topic_names = np.array([f"topic-{i:02d}" for i in range(TOPICS)], dtype=object)
    topic = topic_names[pid // per_topic]
    part_no = (pid % per_topic).astype(np.int32)
    rate = rng.integers(1_000, 50_000, total).astype(np.int64)  # records a day
    base = rng.integers(0, 1_000_000, total).astype(np.int64)
    retained = pid % 2 == 0  # topics with a log start offset inside a segment
    change_day = np.where(pid % 7 == 3, rng.integers(1, days, total), days + 1)
    topic_ids = np.array([f"tid{p:019d}" for p in range(total)], dtype=object)
    inj = {"hw_back": 100, "log_start_back": 202, "rp_back": 303, "lag": 404, "moved": 505, "recreated": 606}
    assert all(p % 7 != 3 for p in inj.values())  # none of them changes leader on its own
    rate[inj["lag"]] = 30_000
    day_of = {
        "hw_back": days // 2,
        "log_start_back": days // 3,
        "rp_back": days // 2 + 2,
        "moved": days // 2,
        "recreated": days // 2 + 1,
        "lag": days // 4,
    }
    reformatted_broker, missing_broker = 5, brokers - 1
    fork_p, fork_day = inj["hw_back"], day_of["hw_back"]
    fork_start = base[fork_p] + rate[fork_p] * fork_day - 150  # epoch 2, below the old leader's HW
    rows = 0
    for day in range(days):
        t = T0 + day * DAY
        date = time.strftime("%Y-%m-%d", time.gmtime(t / 1000))
        tables: dict[str, list[pa.Table]] = {name: [] for name in TABLES}
        for b in range(brokers):
            if b == missing_broker and day > days - 5:
                continue
            replica = np.sort(np.concatenate([pid[(pid + k) % brokers == b] for k in range(RF)]))
            if day >= day_of["moved"]:
                mv = inj["moved"]
                if b == (mv + 1) % brokers:
                    replica = replica[replica != mv]
                if b == (mv + 3) % brokers:
                    replica = np.sort(np.append(replica, mv))
            slot = (b - replica) % brokers  # 0: the preferred leader
            n = len(replica)
            r, bs = rate[replica], base[replica]
            hw = bs + r * (day + 1)
            log_start = np.maximum(bs, hw - r * 7)
            # a follower stuck at its HW of the day before the lag began, for five captures
            lag = (replica == inj["lag"]) & (slot == 2) & (day >= day_of["lag"]) & (day < day_of["lag"] + 5)
            hw = np.where(lag, bs + r * day_of["lag"], hw)
            rp = hw.copy()
            # recreated topic: a new log with a new topic id
            rec = (replica == inj["recreated"]) & (day >= day_of["recreated"])
            hw = np.where(rec, 10 * (day - day_of["recreated"] + 1), hw)
            rp = np.where(rec, hw, rp)
            log_start = np.where(rec, 0, log_start)
            ids = topic_ids[replica].copy()
            ids[rec] = "recreated000000000000"
            # unclean election: the other replicas were behind (killed) the day before; the old leader's HW
            # goes back and its cache takes epoch 2 below the HW it had
            fork = replica == fork_p
            behind = fork & (slot != 0) & (day == fork_day - 1)
            hw = np.where(behind, fork_start, hw)
            hw = np.where(fork & (slot == 0) & (day == fork_day), hw - r - 100, hw)
            log_start = np.where(
                (replica == inj["log_start_back"]) & (slot == 1) & (day == day_of["log_start_back"]),
                log_start - 2 * r,
                log_start,
            )
            rp_back = (replica == inj["rp_back"]) & (slot == 1) & (day == day_of["rp_back"])
            rp = np.where(rp_back, rp - 2 * r, rp)
            # leader-epoch-checkpoint: epoch 0 from the first offset, epoch 1 from the LEO of the change day
            start1 = bs + r * change_day[replica]
            changed = change_day[replica] <= day
            first_epoch = np.where(changed & (log_start >= start1), 1, 0).astype(np.int32)
            first_start = np.where(first_epoch == 1, np.maximum(log_start, start1), np.maximum(log_start, bs))
            first_start = np.where(rec, 0, first_start)
            forked = fork & (day >= fork_day)
            second = (changed & (first_epoch == 0) & ~rec) | forked
            second_epoch = np.where(forked, 2, 1).astype(np.int32)
            second_start = np.where(forked, fork_start, start1)
            capture_id = f"{b:04d}{day:04d}".ljust(64, "0")
            common = {
                "captureId": pa.array([capture_id] * n, pa.string()),
                "cluster": pa.array([CLUSTER] * n, pa.string()),
                "broker": pa.array(np.full(n, b, np.int32)),
                "logDir": pa.array(["/var/lib/kafka/data"] * n, pa.string()),
                "captureTime": pa.array(np.full(n, t, np.int64)).cast(pa.timestamp("ms", tz="UTC")),
                "captureDate": pa.array([date] * n, pa.string()),
                "topic": pa.array(topic[replica], pa.string()),
                "partition": pa.array(part_no[replica]),
            }
            line = pa.array(np.arange(3, n + 3, dtype=np.int32))

            def offsets(values: np.ndarray, common=common, line=line) -> pa.Table:
                cols = dict(common, offset=pa.array(values.astype(np.int64)), line=line)
                return pa.table(cols, schema=TABLES["high_watermarks"])

            tables["high_watermarks"].append(offsets(hw))
            tables["recovery_points"].append(offsets(rp))
            tables["log_start_offsets"].append(offsets(log_start).filter(pa.array(retained[replica])))
            dirs = [f"{a}-{p}" for a, p in zip(topic[replica], part_no[replica], strict=True)]
            tables["partitions"].append(
                pa.table(
                    dict(common, directory=pa.array(dirs), topicId=pa.array(ids, pa.string())),
                    schema=TABLES["partitions"],
                )
            )
            for position, epoch, start, mask in (
                (0, first_epoch, first_start, None),
                (1, second_epoch, second_start, second),
            ):
                cols = dict(
                    common,
                    epoch=pa.array(epoch),
                    startOffset=pa.array(start.astype(np.int64)),
                    position=pa.array(np.full(n, position, np.int32)),
                    line=pa.array(np.full(n, 3 + position, np.int32)),
                )
                table = pa.table(cols, schema=TABLES["leader_epochs"])
                tables["leader_epochs"].append(table if mask is None else table.filter(pa.array(mask)))
            capture = {
                "captureId": [capture_id],
                "cluster": [CLUSTER],
                "broker": [b],
                "logDir": ["/var/lib/kafka/data"],
                "captureTime": [t],
                "captureDate": [date],
            }
            tables["captures"].append(
                pa.Table.from_pydict(
                    dict(
                        capture,
                        source=["/bench"],
                        root=[f"broker-{b}"],
                        timeSource=["manifest"],
                        files=[2 * n + 5],
                        bytes=[0],
                        partitionDirs=[n],
                        problems=[0],
                        cleanShutdown=[False],
                        brokerStartTime=[T0 - DAY],
                        ingestId=["bench"],
                        ingestedAt=[t],
                    ),
                    schema=TABLES["captures"],
                )
            )
            directory = f"dir-{b}" + ("-new" if b == reformatted_broker and day >= days // 2 else "")
            tables["brokers"].append(
                pa.Table.from_pydict(
                    dict(capture, version=[1], nodeId=[b], clusterId=[CLUSTER], directoryId=[directory]),
                    schema=TABLES["brokers"],
                )
            )
        for name, parts in tables.items():
            if parts:
                table = pa.concat_tables(parts)
                rows += table.num_rows
                _write(table, root, name, day)
    # what must be found (code, broker, partition id, day of the capture that shows it)

    def leader(p: int, k: int) -> int:
        """The broker in slot ``k`` of partition ``p``'s replicas."""
        return (p + k) % brokers

    events = [
        ("KA801", leader(inj["hw_back"], 0), inj["hw_back"], day_of["hw_back"]),
        ("KA804", leader(inj["hw_back"], 0), inj["hw_back"], day_of["hw_back"]),
        ("KA805", leader(inj["hw_back"], 0), inj["hw_back"], day_of["hw_back"]),
        ("KA802", leader(inj["log_start_back"], 1), inj["log_start_back"], day_of["log_start_back"]),
        ("KA803", leader(inj["rp_back"], 1), inj["rp_back"], day_of["rp_back"]),
        ("KA806", leader(inj["lag"], 2), inj["lag"], day_of["lag"] + 1),
        ("KA807", leader(inj["moved"], 1), inj["moved"], day_of["moved"]),
        ("KA808", leader(inj["moved"], 3), inj["moved"], day_of["moved"]),
        ("KA814", None, inj["recreated"], day_of["recreated"]),
        ("KA810", reformatted_broker, None, days // 2),
        ("KA811", missing_broker, None, None),
    ]
    paths = {name: str(root / name) for name in TABLES if (root / name).exists()}
    return {"tables": paths, "rows": rows, "events": events, "partitions": total, "per_topic": per_topic}


def _summary(findings) -> Counter:
    return Counter(f.code for f in findings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--brokers", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=2000, help="replicas per broker")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from auditor.rules.history.model import HistorySettings

    root = args.data or Path(tempfile.mkdtemp(prefix="bench-history-"))
    started = time.monotonic()
    data = build(root / "w", args.days, args.brokers, args.partitions)
    print(
        f"data: {args.days} days x {args.brokers} brokers x {args.partitions} replicas per broker "
        f"({data['partitions']} partitions), {data['rows']:,} rows, written in "
        f"{time.monotonic() - started:.1f} s under {root}"
    )
    settings = HistorySettings()

    from auditor.spark.history import run_history
    from auditor.spark.session import get_spark

    started = time.monotonic()
    spark = get_spark(args.master, app_name="bench-history")
    print(f"spark start-up: {time.monotonic() - started:.1f} s ({args.master})")
    result = None
    for attempt in (1, 2):
        started = time.monotonic()
        result = run_history(spark, data["tables"], settings)
        seconds = time.monotonic() - started
        print(
            f"run_history #{attempt}: {seconds:.1f} s, {result.stats['rows'] / seconds:,.0f} rows/s, "
            f"{len(result.findings)} findings {dict(sorted(_summary(result.findings).items()))}, "
            f"{len(result.charts)} charts; rule tasks {result.stats['taskSeconds']:.1f} s summed"
        )
    assert result is not None
    spark_seconds = seconds
    found = {(f.code, f.broker, f.topic, f.partition) for f in result.findings}
    per_topic = data["per_topic"]
    missing = []
    for code, broker, p, _day in data["events"]:
        topic, part = (f"topic-{p // per_topic:02d}", p % per_topic) if p is not None else (None, None)
        if not any(
            c == code and (broker is None or b == broker) and t == topic and q == part for c, b, t, q in found
        ):
            missing.append((code, broker, topic, part))
    expected_codes = {e[0] for e in data["events"]}
    extra = [f for f in result.findings if f.code not in expected_codes]
    print(
        f"injected events found: {len(data['events']) - len(missing)}/{len(data['events'])}"
        + (f", missing {missing}" if missing else "")
        + (f", unexpected {len(extra)}" if extra else "")
    )
    for f in extra[:5]:
        print("  unexpected:", f.code, f.message)

    if not args.no_baseline:
        from auditor.rules.history.model import History, run_rules
        from auditor.spark.history import read_small

        started = time.monotonic()
        frames = {name: read_small(data["tables"], name) for name in TABLES}
        load = time.monotonic() - started
        started = time.monotonic()
        h = History(**frames, settings=settings)
        baseline = [f for scope in ("history", "fleet", "ingest") for f in run_rules(h, scope)]
        evaluate = time.monotonic() - started
        same = sorted(f.fingerprint() for f in baseline) == sorted(f.fingerprint() for f in result.findings)
        print(
            f"baseline (pandas, one process): load {load:.1f} s, rules {evaluate:.1f} s, "
            f"{data['rows'] / (load + evaluate):,.0f} rows/s; Spark/baseline time ratio "
            f"{spark_seconds / (load + evaluate):.2f}; same findings: {same}"
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
