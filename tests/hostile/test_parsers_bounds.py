"""Hostile inputs for the checkpoint, index and legacy parsers (issue 8, items 6 and 7): 16 MB checkpoints
(linear parsing), 1 GiB indexes (windowed, bounded reading; holes of a sparse file skipped), legacy offsets
out of range (a parse error with file and byte offset, never an overflow or a negative log end offset).

Every input is built here (sparse files for the big ones); every command runs in a subprocess whose wall time
and peak RSS are bounded. The time bounds leave room for a loaded CI machine; what they catch is the quadratic
or whole-file behaviour of before (a 16 MB checkpoint took over 60 s, a 1 GiB ``.index`` 1.08 GB of memory).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pyarrow.parquet as pq

from parsers import codecs
from parsers.checkpoints import format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, segment_file_name
from parsers.indexes import build_offset_index, build_time_index
from parsers.legacy import LegacyMessageSpec, build_legacy_wrapper
from tests.rules.builder import CLUSTER_ID, directory_id, standard

MiB = 1 << 20
GiB = 1 << 30
CHECKPOINT_BYTES = 16 * MiB
SECONDS = 30  # generous for a loaded machine; the quadratic parser needed minutes for these inputs
INDEX_RSS_MB = 300


def _many_entries(size: int) -> bytes:
    """An offset checkpoint of ``size`` bytes of valid, realistic lines (~470 k partitions)."""
    entries, total, i = [], 0, 0
    while total < size:
        entry = (f"orders-eu-west-{i // 100:06d}", i % 100, 1_234_567_890 + i)
        entries.append(entry)
        total += len(" ".join(map(str, entry))) + 1
        i += 1
    return format_offset_checkpoint(entries)


def _long_lines(size: int, lines: int = 2000) -> tuple[bytes, bytes]:
    """An offset and a leader-epoch checkpoint of about ``size`` bytes in ``lines`` valid lines (long topic
    names; numbers with thousands of leading zeros, which Integer.parseInt accepts)."""
    width = size // lines
    offsets = format_offset_checkpoint((f"t{i:0{width - 20}d}", 0, i) for i in range(lines))
    zeros = b"0" * (width // 2 - 10)
    epochs = b"0\n%d\n" % lines + b"".join(b"%s%d %s%d\n" % (zeros, i, zeros, 10 * i) for i in range(lines))
    return offsets, epochs


def _log_dir(tmp_path: Path) -> Path:
    ld, _ = standard(tmp_path / "broker-1")
    return ld.write()


def test_checkpoints_of_16_mb_scan_in_linear_time(tmp_path, bounded):
    root = _log_dir(tmp_path)
    (root / "replication-offset-checkpoint").write_bytes(_many_entries(CHECKPOINT_BYTES))
    _, epochs = _long_lines(CHECKPOINT_BYTES)
    (root / "orders-0" / "leader-epoch-checkpoint").write_bytes(epochs)
    result = bounded(["scan", str(root), "--format", "json"], timeout=120)
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert not [f for f in findings if f["code"] in ("KA001", "KA002")]
    orphans = [f for f in findings if f["code"] == "KA307"]
    assert len(orphans) == 21  # 20 listed, then one finding with the count of the others
    counted = [f["evidence"]["notListed"] for f in orphans if "notListed" in (f.get("evidence") or {})]
    assert len(counted) == 1 and counted[0] > 400_000
    assert result.seconds < SECONDS, result.seconds
    assert result.peak_rss_mb < 600, result.peak_rss_mb


def test_checkpoints_of_16_mb_dump_in_linear_time_with_short_errors(tmp_path, bounded):
    offsets, epochs = _long_lines(CHECKPOINT_BYTES)
    files = {
        "long/replication-offset-checkpoint": offsets,
        "t-0/leader-epoch-checkpoint": epochs,
        "giant/replication-offset-checkpoint": b"0\n1\n" + b"x" * CHECKPOINT_BYTES,  # one 16 MB line
        "digits/leader-epoch-checkpoint": b"0\n" + b"9" * CHECKPOINT_BYTES,  # a 16 MB entry count
        "words/recovery-point-offset-checkpoint": b"0\n1\n" + b"a " * (CHECKPOINT_BYTES // 2),  # 8 M tokens
        "garbage/log-start-offset-checkpoint": os.urandom(CHECKPOINT_BYTES),
    }
    paths = []
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(str(path))
    result = bounded(["dump", "--format", "jsonl", *paths], timeout=120)
    assert result.returncode == 2
    events = [json.loads(line) for line in result.stdout.splitlines()]
    entries = [e for e in events if e["kind"] == "entry"]
    assert len(entries) == 4000
    failed = {Path(e["path"]).parent.name: e for e in events if e["kind"] == "failed"}
    assert sorted(failed) == ["digits", "garbage", "giant", "words"]
    offsets = {name: e["position"] for name, e in failed.items() if name != "garbage"}
    assert offsets == {"giant": 4, "words": 4, "digits": 2}  # the start of the offending line
    errors = result.stderr.strip().splitlines()
    assert all(len(line) < 1000 for line in errors), "a 16 MB line must not become a 16 MB message"
    assert result.seconds < SECONDS, result.seconds
    assert result.peak_rss_mb < 600, result.peak_rss_mb


def _sparse(path: Path, head: bytes, size: int, tail_byte_at: int | None = None) -> None:
    with open(path, "wb") as fh:
        fh.write(head)
        if tail_byte_at is not None:
            fh.seek(tail_byte_at)
            fh.write(b"\x07")
    os.truncate(path, size)


def test_dump_of_1_gib_indexes_is_bounded(tmp_path, bounded):
    base = 1000
    idx = tmp_path / "t-0" / segment_file_name(base, ".index")
    idx.parent.mkdir()
    entries = [(base + 3 * i, 100 * i) for i in range(1, 513)]  # 512 real entries, then a zero tail
    _sparse(idx, build_offset_index(entries, base), GiB)
    tix = idx.with_suffix(".timeindex")
    times = build_time_index([(10_000 + i, o) for i, (o, _) in enumerate(entries)], base)
    _sparse(tix, times, GiB // 12 * 12)
    bad = tmp_path / "u-0" / segment_file_name(0, ".index")
    bad.parent.mkdir()
    _sparse(bad, b"", GiB, tail_byte_at=900 * MiB + 5)  # garbage deep in the preallocated tail
    result = bounded(["dump", "--format", "jsonl", str(idx), str(tix), str(bad)], timeout=120)
    assert result.returncode == 2  # the garbage
    events = [json.loads(line) for line in result.stdout.splitlines()]
    summaries = [e for e in events if e["kind"] == "summary"]
    assert [s["paddingSlots"] for s in summaries] == [GiB // 8 - 512, GiB // 12 - 512, GiB // 8 - 1]
    assert [s["garbageAfterPadding"] for s in summaries] == [None, None, 900 * MiB + 5]
    assert len([e for e in events if e["kind"] == "entry"]) == 1024
    failed = [e for e in events if e["kind"] == "failed"]
    assert [(Path(e["path"]).name, e["position"]) for e in failed] == [(bad.name, 900 * MiB + 5)]
    assert result.seconds < SECONDS, result.seconds
    assert result.peak_rss_mb < INDEX_RSS_MB, result.peak_rss_mb


def test_scan_of_huge_indexes_is_bounded(tmp_path, bounded):
    root = _log_dir(tmp_path)
    part = root / "orders-0"
    last = sorted(part.glob("*.index"))[-1]
    for index, size in ((last, GiB), (last.with_suffix(".timeindex"), GiB // 12 * 12)):
        os.truncate(index, size)  # a preallocated (sparse) 1 GiB index after its real entries
    first = sorted(part.glob("*.index"))[0]
    first.write_bytes(os.urandom(48 * MiB))  # 6 M garbage "entries": more than are ever loaded
    result = bounded(["scan", str(root), "--format", "json"], timeout=120)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert not [f for f in findings if f["code"] in ("KA001", "KA002")]
    codes = {f["code"] for f in findings if f.get("file", "").endswith(first.name)}
    assert codes & {"KA202", "KA203", "KA204"}, codes  # the garbage is reported
    assert result.seconds < SECONDS, result.seconds
    assert result.peak_rss_mb < 400, result.peak_rss_mb


# ------------------------------------------------------------------------------------------- legacy


DAMAGED_OFFSETS = {
    "far": 2**40,  # far past the first inner offset: once an OverflowError, KA002 and a skipped partition
    "wrap": 3 + 2**31 + 5,  # just past int32: once wrapped silently to a negative log end offset
    "below": 1,  # below the first inner offset (3)
    "max": 2**63 - 1,
}


def _legacy_log_dir(tmp_path: Path) -> tuple[Path, dict[str, Path], int]:
    """A log dir with one partition per :data:`DAMAGED_OFFSETS` entry, whose only segment holds two magic 0
    gzip wrappers (offsets 0..2 and 3..5); the second's offset field, which no CRC covers, is overwritten.
    Returns the root, the segments by partition name and where the damaged wrapper starts."""
    root = tmp_path / "broker-1"
    root.mkdir()
    (root / "meta.properties").write_bytes(format_meta_properties(1, 1, CLUSTER_ID, directory_id(1)))
    specs = [LegacyMessageSpec(b"k", b"v%d" % i) for i in range(3)]
    first = build_legacy_wrapper(specs, magic=0, compression=codecs.GZIP, offset=2)
    logs = {}
    for name, damaged in DAMAGED_OFFSETS.items():
        second = bytearray(build_legacy_wrapper(specs, magic=0, compression=codecs.GZIP, offset=5))
        struct.pack_into(">q", second, 0, damaged)
        part = root / f"{name}-0"
        part.mkdir()
        logs[name] = part / segment_file_name(0, ".log")
        logs[name].write_bytes(first + bytes(second))
    return root, logs, len(first)


def test_legacy_offsets_out_of_range_are_parse_errors(tmp_path, bounded):
    root, logs, position = _legacy_log_dir(tmp_path)
    scan = bounded(["scan", str(root), "--format", "json"])
    assert scan.returncode == 1, scan.stderr
    report = json.loads(scan.stdout)
    findings = report["findings"]
    assert not [f for f in findings if f["code"] in ("KA001", "KA002")]
    for name in DAMAGED_OFFSETS:
        invalid = [f for f in findings if f["code"] == "KA103" and f.get("topic") == name]
        assert invalid and invalid[0]["position"] == position and "wrapper" in invalid[0]["message"], name
        partition = next(p for p in report["partitions"] if p["topic"] == name)
        assert partition["logEndOffset"] == 3, name  # what precedes the bad entry, never negative

    dump = bounded(["dump", *map(str, logs.values())])
    assert dump.returncode == 2
    errors = dump.stderr.strip().splitlines()
    for log in logs.values():
        where = f"{log}: byte {position}:"
        assert any(line.startswith("kafka-auditor: error: ") and where in line for line in errors), log
    assert "Traceback" not in dump.stderr and "internal error" not in dump.stderr

    out = tmp_path / "extract"
    extract = bounded(["extract", str(root), "--out", str(out)])
    assert extract.returncode == 0, extract.stderr
    assert "internal error" not in extract.stderr
    replicas = pq.read_table(out / "replica.parquet").to_pylist()
    assert sorted(r["topic"] for r in replicas) == sorted(DAMAGED_OFFSETS)
    assert all(r["leo"] == 3 and r["tail_position"] == position for r in replicas)
    for result in (scan, dump, extract):
        assert result.seconds < SECONDS and result.peak_rss_mb < 400


# ------------------------------------------------------------------------------------------ v2 offsets

V2_DAMAGED = {
    "v2-negative": (-5, None),  # baseOffset is not covered by the batch CRC
    "v2-past-int64": (2**63 - 3, None),  # baseOffset + lastOffsetDelta beyond int64
    "v2-delta-negative": (3, -2),  # lastOffsetDelta is covered: rebuilt with a valid CRC
}


def test_v2_offsets_out_of_range_never_give_a_negative_log_end_offset(tmp_path, bounded):
    from parsers.record_batch import RecordSpec, build_batch

    root = tmp_path / "broker-1"
    root.mkdir()
    (root / "meta.properties").write_bytes(format_meta_properties(1, 1, CLUSTER_ID, directory_id(1)))
    first = build_batch([RecordSpec(timestamp=1000 + i, key=b"k", value=b"v") for i in range(3)])
    logs = {}
    for name, (base, delta) in V2_DAMAGED.items():
        specs = [RecordSpec(timestamp=2000 + i, key=b"k", value=b"v") for i in range(6)]
        if delta is None:
            second = bytearray(build_batch(specs, base_offset=3))
            struct.pack_into(">q", second, 0, base)
        else:
            second = bytearray(build_batch(specs, base_offset=base, last_offset_delta=delta))
        part = root / f"{name}-0"
        part.mkdir()
        logs[name] = part / segment_file_name(0, ".log")
        logs[name].write_bytes(first + bytes(second))
    position = len(first)

    scan = bounded(["scan", str(root), "--format", "json"])
    assert scan.returncode == 1, scan.stderr
    report = json.loads(scan.stdout)
    assert not [f for f in report["findings"] if f["code"] in ("KA001", "KA002")]
    for name in V2_DAMAGED:
        invalid = [f for f in report["findings"] if f["code"] == "KA103" and f.get("topic") == name]
        assert invalid and invalid[0]["position"] == position, (name, report["findings"])
        partition = next(p for p in report["partitions"] if p["topic"] == name)
        assert partition["logEndOffset"] == 3, name

    dump = bounded(["dump", *map(str, logs.values())])
    assert dump.returncode == 2
    for log in logs.values():
        assert f"kafka-auditor: error: {log}: byte {position}:" in dump.stderr, dump.stderr

    out = tmp_path / "extract"
    extract = bounded(["extract", str(root), "--out", str(out)])
    assert extract.returncode == 0, extract.stderr
    replicas = pq.read_table(out / "replica.parquet").to_pylist()
    assert all(r["leo"] == 3 for r in replicas), replicas
    for result in (scan, dump, extract):
        assert result.seconds < SECONDS and result.peak_rss_mb < 400


def test_legacy_wrapper_of_a_million_tiny_messages_is_checked_in_bounded_memory(tmp_path, bounded):
    """A magic-0 gzip wrapper (a few KB) whose 1,000,000 inner messages decompress to 26 MB: the walk keeps
    its first and last inner offsets and a count, never a list of inner messages."""
    from parsers.legacy import build_legacy_message

    n = 1_000_000
    inner = build_legacy_message(5, None, b"", magic=0) * n  # the same inner message, n times
    value = codecs.compress(codecs.GZIP, inner, magic=0)
    wrapper = build_legacy_message(5, None, value, magic=0, attributes=codecs.GZIP)
    root = tmp_path / "broker-1"
    part = root / "legacy-0"
    part.mkdir(parents=True)
    (root / "meta.properties").write_bytes(format_meta_properties(1, 1, CLUSTER_ID, directory_id(1)))
    (part / segment_file_name(0, ".log")).write_bytes(wrapper)
    scan = bounded(["scan", str(root), "--format", "json"])
    assert scan.returncode in (0, 1), scan.stderr
    report = json.loads(scan.stdout)
    assert not [f for f in report["findings"] if f["code"] in ("KA001", "KA002")]
    assert scan.seconds < SECONDS and scan.peak_rss_mb < 250, (scan.seconds, scan.peak_rss_mb)
