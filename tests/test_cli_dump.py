"""End-to-end `kafka-auditor dump`: formats, exit codes, bad input, and evidence safety."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from parsers.record_batch import RecordSpec, build_batch

EXE = [sys.executable, "-m", "auditor.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def segment(n: int = 5, base: int = 0) -> bytes:
    return b"".join(
        build_batch(
            [RecordSpec(b"key-%d" % i, b"value-%d" % i, 1_700_000_000_000 + i, [("h", b"1")])],
            base_offset=base + i,
            partition_leader_epoch=3,
        )
        for i in range(n)
    )


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(segment())
    return part


def tree_state(root: Path) -> dict[str, tuple[str, int, int]]:
    return {
        str(p.relative_to(root)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_size,
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_text_dump_matches_kafka_dump_log_layout(logdir):
    res = run("dump", str(logdir / "00000000000000000000.log"))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("Dumping ") and lines[1] == "Log starting offset: 0"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 ")
    assert "partitionLeaderEpoch: 3 " in lines[2] and lines[2].endswith("isvalid: true")
    assert len(lines) == 7


def test_deep_print_values_and_base64(logdir):
    res = run("dump", "--print-values", str(logdir / "00000000000000000000.log"))
    assert res.returncode == 0
    recs = [line for line in res.stdout.splitlines() if line.startswith("| offset:")]
    assert len(recs) == 5 and "key: key-0 payload: value-0" in recs[0] and "headerKeys: [h]" in recs[0]
    assert recs[0].endswith('headers: [{"key":"h","value":"1","valueEncoding":"utf8"}]')
    res = run("dump", "--print-values", "--encoding", "base64", str(logdir / "00000000000000000000.log"))
    assert "key: base64:a2V5LTA= payload: base64:dmFsdWUtMA==" in res.stdout
    assert '"value":"MQ==","valueEncoding":"base64"' in res.stdout
    res = run("dump", "--print-values", "--value-format", "hex", str(logdir / "00000000000000000000.log"))
    assert res.returncode == 2 and "Traceback" not in res.stderr  # hex is gone: one encoding scheme


def test_json_and_jsonl_are_machine_readable(logdir):
    path = str(logdir / "00000000000000000000.log")
    doc = json.loads(run("dump", "--format", "json", "--deep", path).stdout)
    assert doc["version"] == 2
    events = doc["files"][0]["events"]
    assert sum(e["kind"] == "batch" for e in events) == 5 and sum(e["kind"] == "record" for e in events) == 5
    assert doc["files"][0]["error"] is None
    lines = [json.loads(x) for x in run("dump", "--format", "jsonl", path).stdout.splitlines()]
    assert {x["file"] for x in lines} == {path}
    assert [x["baseOffset"] for x in lines if x["kind"] == "batch"] == list(range(5))


def test_torn_segment_prints_valid_prefix_then_marker_and_exits_2(logdir):
    path = logdir / "00000000000000000000.log"
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    res = run("dump", str(path))
    assert res.returncode == 2
    assert res.stdout.count("baseOffset:") == 4
    marker = res.stdout.splitlines()[-1]
    assert marker.startswith("!! decoding stopped at byte ") and "runs past the end of the file" in marker
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "byte " in err[0] and "Traceback" not in res.stderr


def test_crc_corruption_is_reported_with_its_byte_offset(logdir):
    path = logdir / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    size = len(data) // 5
    data[size * 2 + 65] ^= 0xFF
    path.write_bytes(bytes(data))
    res = run("dump", str(path))
    assert res.returncode == 2
    assert res.stdout.count("isvalid: false") == 1 and res.stdout.count("baseOffset:") == 5
    assert f"byte {size * 2}" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "name,content",
    [
        ("00000000000000000000.log", os.urandom(3000)),
        ("00000000000000000000.index", b"\x00" * 13),
        ("00000000000000000000.snapshot", b"\x00\x02" + os.urandom(40)),
        ("leader-epoch-checkpoint", b"0\n2\n0 0\n"),
        ("replication-offset-checkpoint", b"1\n0\n"),
        ("partition.metadata", b"garbage"),
        ("meta.properties", b"\xff\xfe\x00"),
        ("quorum-state", b"{not json"),
    ],
)
def test_foreign_or_corrupt_files_give_one_line_error_and_exit_2(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    res = run("dump", str(path))
    assert res.returncode == 2, res.stdout
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    err = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and str(path) in err[0]


def test_unknown_and_missing_files_and_usage_errors(tmp_path):
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello")
    res = run("dump", str(unknown))
    assert res.returncode == 2 and "not a Kafka file" in res.stderr
    res = run("dump", str(tmp_path / "00000000000000000000.log"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    res = run("dump", "--format", "xml", str(unknown))
    assert res.returncode == 2
    res = run("dump")
    assert res.returncode == 2


def test_dump_never_writes_next_to_the_evidence(logdir):
    (logdir / "00000000000000000000.timeindex").write_bytes(b"")
    before = tree_state(logdir.parent)
    for name in ("00000000000000000000.log", "00000000000000000000.timeindex"):
        run("dump", "--deep", str(logdir / name))
    assert tree_state(logdir.parent) == before  # kafka-dump-log.sh would have created a .index here


def test_several_files_continue_after_a_bad_one(logdir, tmp_path):
    bad = tmp_path / "00000000000000000007.log"
    bad.write_bytes(b"\x00" * 100)
    good = logdir / "00000000000000000000.log"
    res = run("dump", str(bad), str(good))
    assert res.returncode == 2
    assert res.stdout.count("Dumping ") == 2 and res.stdout.count("baseOffset:") == 5


def test_version_and_help_are_fast_and_do_not_import_pyspark():
    code = (
        "import sys, auditor.cli; sys.argv=['kafka-auditor','--help']\n"
        "try:\n auditor.cli.main()\nexcept SystemExit: pass\n"
        "assert 'pyspark' not in sys.modules"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "dump" in res.stdout
