"""Benchmark: ``kafka-auditor dump --deep`` against a record reader and ``kafka-dump-log.sh`` (issue 13).

Generates ~100 MB segments of a few shapes in $TMPDIR (one record per batch; small uncompressed records
with headers, 200 per idempotent batch; 1 KiB values, 16 per batch; transactional batches each followed by
a COMMIT marker; lz4, zstd, gzip and snappy batches of 200 records), then times, interleaved in the same
run, each command as its own process (output to /dev/null):

  * baseline: kafka-python's record reader (``MemoryRecords``) reading every record of the file and the
    fields ``--deep`` prints (offset, timestamp, key and value sizes, header keys), no output;
  * ``kafka-auditor dump --deep FILE`` (text, the lines of ``kafka-dump-log.sh --deep-iteration``), also
    ``--format jsonl`` and ``--format json``, and the shallow ``kafka-auditor dump FILE``;
  * with ``--compare-with DIR``: ``dump --deep`` (text and jsonl) of another source tree of kafka-auditor
    (for example ``git archive <commit> auditor parsers | tar -x -C DIR``), run with ``PYTHONPATH=DIR``;
  * with ``--kafka-home DIR`` (or $KAFKA_HOME): ``DIR/bin/kafka-dump-log.sh --deep-iteration --files F``,
    and our speed-up over it.

Prints, per shape and command, the median wall seconds, CPU seconds, MB/s, records/s, the peak RSS of the
process (``ru_maxrss`` from ``wait4``, measured by a small launcher so the benchmark's own memory is not
inherited) and the ratios of wall time against the baseline, the compared tree and Kafka's tool.

Usage: python bench/bench_dump.py [--mb 100] [--runs 3] [--shapes single,small,...]
       [--compare-with DIR] [--kafka-home DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from parsers.control import encode_end_txn_marker
from parsers.record_batch import RecordSpec, build_batch, restamp

ROOT = Path(__file__).resolve().parents[1]
TIMESTAMP = 1_795_000_000_000
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

_LAUNCHER = """
import os, sys, time
devnull = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(devnull, 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
print(os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""
"""Forks the command with stdout on /dev/null; prints its exit code, wall and CPU seconds, peak RSS (KiB)."""

_READER = """
import sys
from kafka.record import MemoryRecords
records = MemoryRecords(open(sys.argv[1], "rb").read())
n = 0
while (batch := records.next_batch()) is not None:
    for rec in batch:
        fields = (rec.offset, rec.timestamp, rec.key, rec.value, [k for k, _ in rec.headers])
        n += 1
print(n, file=sys.stderr)
"""
"""The baseline: kafka-python's reader over every record of the file (the file is read whole, as it does)."""


# ------------------------------------------------------------------------------------------ segments


def _text(rnd: random.Random, size: int) -> bytes:
    return bytes(rnd.choices(b"abcdefghijklmnopqrstuvwxyz0123456789 ", k=size))


def _records(rnd: random.Random, count: int, value_size: int, headers: bool = False) -> list[RecordSpec]:
    return [
        RecordSpec(
            b"key-%06d" % i,
            _text(rnd, value_size),
            TIMESTAMP + i,
            [("trace-id", b"%016x" % rnd.getrandbits(64))] if headers and i % 3 == 0 else [],
        )
        for i in range(count)
    ]


def shape_batches(shape: str) -> tuple[list[bytes], int]:
    """The batches one round of ``shape`` writes (restamped with their base offsets) and the records they
    hold (a COMMIT marker counts as one record)."""
    rnd = random.Random(13)
    if shape == "single":  # a producer with linger.ms=0: one record per batch
        return [build_batch(_records(rnd, 1, 100))], 1
    if shape == "small":  # an idempotent producer's batches of small records, some with a header
        specs = _records(rnd, 200, 40, headers=True)
        return [build_batch(specs, producer_id=4000, producer_epoch=0, base_sequence=0)], 200
    if shape == "values-1k":
        return [build_batch(_records(rnd, 16, 1024))], 16
    if shape == "transactional":  # transactional batches, each committed by a control batch
        data = build_batch(_records(rnd, 50, 100), transactional=True, producer_id=77, producer_epoch=3)
        key, value = encode_end_txn_marker(True, 5)
        marker = build_batch(
            [RecordSpec(key, value, TIMESTAMP)],
            transactional=True,
            control=True,
            producer_id=77,
            producer_epoch=3,
        )
        return [data, marker], 51
    codec = CODECS[shape]
    return [build_batch(_records(rnd, 200, 100), compression=codec)], 200


def write_segment(path: Path, shape: str, total_bytes: int) -> int:
    """Write ~``total_bytes`` of ``shape``'s batches at consecutive offsets; returns the records written."""
    batches, per_round = shape_batches(shape)
    offset = written = records = 0
    chunk = bytearray()
    with open(path, "wb") as fh:
        while written < total_bytes:
            for raw in batches:
                chunk += restamp(raw, base_offset=offset)
                count = int.from_bytes(raw[57:61], "big")
                offset += count
                written += len(raw)
            records += per_round
            if len(chunk) >= 1 << 22:
                fh.write(chunk)
                chunk.clear()
        fh.write(chunk)
    return records


# ------------------------------------------------------------------------------------------- running


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` in ``cwd`` (not a source tree: ``python -m`` imports from its working directory first)
    through the launcher; its wall and CPU seconds and peak RSS."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *cmd],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )
    code, wall, cpu, rss = proc.stdout.split()
    if int(code) != 0:
        raise SystemExit(f"failed ({code}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return Run(float(wall), float(cpu), int(rss) / 1024)


def contenders(path: Path, args: argparse.Namespace) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """Name -> (command, extra environment), the baseline first."""
    ours = [sys.executable, "-m", "auditor.cli", "dump"]
    here = {"PYTHONPATH": str(ROOT)}
    out: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "kafka-python reader (baseline)": ([sys.executable, "-c", _READER, str(path)], None),
        "dump --deep (text)": ([*ours, "--deep", str(path)], here),
        "dump --deep -f jsonl": ([*ours, "--deep", "-f", "jsonl", str(path)], here),
        "dump --deep -f json": ([*ours, "--deep", "-f", "json", str(path)], here),
        "dump (shallow, text)": ([*ours, str(path)], here),
    }
    if args.compare_with:
        other = {"PYTHONPATH": str(Path(args.compare_with).resolve())}
        out["compared tree: dump --deep (text)"] = ([*ours, "--deep", str(path)], other)
        out["compared tree: dump --deep -f jsonl"] = ([*ours, "--deep", "-f", "jsonl", str(path)], other)
    if args.kafka_home:
        tool = str(Path(args.kafka_home) / "bin" / "kafka-dump-log.sh")
        out["kafka-dump-log.sh --deep-iteration"] = ([tool, "--deep-iteration", "--files", str(path)], None)
        out["kafka-dump-log.sh (shallow)"] = ([tool, "--files", str(path)], None)
    return out


def measure(path: Path, args: argparse.Namespace) -> dict[str, list[Run]]:
    """Every contender ``args.runs`` times, interleaved (one round runs each once)."""
    cmds = contenders(path, args)
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, (cmd, env) in cmds.items():
            runs[name].append(run_measured(cmd, path.parent, env))
    return runs


def report(shape: str, size_mb: float, records: int, runs: dict[str, list[Run]]) -> None:
    """One line per command; each ratio is ``wall/cpu``: the reference's median seconds over the command's
    (the CPU ratio is the steadier one on a busy machine)."""

    def median(name: str, field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs[name])

    def ratio(ref: str | None, name: str) -> str:
        if ref not in runs:
            return f"{'-':>12s}"
        wall, cpu = median(ref, "wall") / median(name, "wall"), median(ref, "cpu") / median(name, "cpu")
        return f"x{wall:4.2f}/{cpu:4.2f}".rjust(12)

    print(f"\n{shape}: {size_mb:.0f} MB, {records:,} records")
    print(
        f"  {'command':38s} {'wall s':>7s} {'cpu s':>7s} {'MB/s':>7s} {'records/s':>10s} {'RSS MB':>7s}"
        f" {'vs base':>12s} {'vs tree':>12s} {'vs kafka':>12s}"
    )
    for name, results in runs.items():
        wall, cpu, rss = median(name, "wall"), median(name, "cpu"), max(r.rss_mb for r in results)
        kafka = "kafka-dump-log.sh (shallow)" if "shallow" in name else "kafka-dump-log.sh --deep-iteration"
        refs = ("kafka-python reader (baseline)", f"compared tree: {name}", kafka)
        print(
            f"  {name:38s} {wall:7.2f} {cpu:7.2f} {size_mb / wall:7.1f} {records / wall:10,.0f} {rss:7.0f} "
            + " ".join(ratio(ref, name) for ref in refs)
        )


SHAPES = ("single", "small", "values-1k", "transactional", "lz4", "zstd", "gzip", "snappy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of each generated segment in MB")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of every command (median)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--compare-with", metavar="DIR", help="another kafka-auditor source tree to time")
    parser.add_argument(
        "--kafka-home", metavar="DIR", default=os.environ.get("KAFKA_HOME"), help="a Kafka install"
    )
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"unknown shape(s): {', '.join(sorted(unknown))}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; ratios: wall-time speed-ups (x2: half)")
    with tempfile.TemporaryDirectory(prefix="ka-bench-dump-") as tmp:
        for shape in shapes:
            folder = Path(tmp) / f"bench-{shape}-0"
            folder.mkdir()
            path = folder / "00000000000000000000.log"
            records = write_segment(path, shape, args.mb * 1_000_000)
            size_mb = path.stat().st_size / 1e6
            report(shape, size_mb, records, measure(path, args))
            path.unlink()


if __name__ == "__main__":
    main()
