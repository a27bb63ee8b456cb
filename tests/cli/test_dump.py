"""End-to-end `kafka-auditor dump`: formats, exit codes, bad input, and evidence safety.

``dump`` takes kafka-dump-log.sh's own flag names (``--files``, ``--print-data-log``, ``--deep-iteration``,
``--offsets-decoder``, ``--cluster-metadata-decoder``, ``--index-sanity-check``) and a partition directory
(all its files, segment by segment).

``kafka-auditor dump --transaction-log-decoder``: kafka-dump-log text, JSON, auto-detection, errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from parsers.record_batch import RecordSpec, build_batch
from parsers.transaction_state import encode_txn_key, encode_txn_value

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


FOREIGN_OR_CORRUPT = [
    ("00000000000000000000.log", os.urandom(3000)),
    ("00000000000000000000.index", b"\x00" * 13),
    ("00000000000000000000.snapshot", b"\x00\x02" + os.urandom(40)),
    ("leader-epoch-checkpoint", b"0\n2\n0 0\n"),
    ("replication-offset-checkpoint", b"1\n0\n"),
    ("partition.metadata", b"garbage"),
    ("meta.properties", b"\xff\xfe\x00"),
    ("quorum-state", b"{not json"),
]


# Named by file: random bytes in a test id would differ between collections (and between xdist workers).
@pytest.mark.parametrize("name,content", FOREIGN_OR_CORRUPT, ids=[name for name, _ in FOREIGN_OR_CORRUPT])
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


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path_factory.mktemp("dump-aliases") / "c"
    run_scenario("clean", root, SimOptions(seed=7))
    return root / "broker-1" / "t0-0"


def _dump(*args: str):
    return CliRunner().invoke(app, ["dump", *args])


def test_kafka_dump_log_flag_names_are_aliases(partition):
    log = str(sorted(partition.glob("*.log"))[0])
    ours = _dump("--deep", "--print-values", log)
    theirs = _dump("--deep-iteration", "--print-data-log", log)
    assert ours.exit_code == theirs.exit_code == 0 and ours.output == theirs.output
    listed = _dump("--files", f"{log},{partition / 'leader-epoch-checkpoint'}")
    assert (
        listed.exit_code == 0
        and listed.output == _dump(log, str(partition / "leader-epoch-checkpoint")).output
    )


def test_a_partition_directory_is_dumped_segment_by_segment(partition):
    res = _dump(str(partition))
    assert res.exit_code == 0, res.output
    dumped = [line.split(" ", 1)[1] for line in res.output.splitlines() if line.startswith("Dumping ")]
    names = [Path(p).name for p in dumped]
    segments = [n for n in names if n[0].isdigit()]
    bases = [int(n.split(".")[0]) for n in segments]
    assert bases == sorted(bases) and names.index(segments[-1]) < names.index("leader-epoch-checkpoint")
    first = [n for n in segments if n.startswith(segments[0].split(".")[0])]
    assert first[0].endswith(".log") and first[1].endswith(".index")


def test_index_sanity_check_prints_one_line_per_file(partition, tmp_path):
    index = sorted(partition.glob("*.index"))[0]
    bad = tmp_path / index.name
    bad.write_bytes(index.read_bytes()[:-3])  # a torn last entry
    res = _dump("--index-sanity-check", str(index), str(bad))
    lines = res.output.strip().splitlines()
    assert lines[0] == f"{index}: passed the sanity check"
    assert lines[1].startswith(f"{bad}") and "passed" not in lines[1]
    assert res.exit_code == 2


ONGOING = encode_txn_value(
    producer_id=4,
    producer_epoch=2,
    timeout_ms=60000,
    state="Ongoing",
    partitions=[("orders", 1)],
    last_update_timestamp=1_700_000_000_100,
    start_timestamp=1_700_000_000_000,
    next_producer_id=5,
    version=1,
)


def _segment() -> bytes:
    return b"".join(
        [
            build_batch(
                [RecordSpec(encode_txn_key("tx\x1b[31m-1"), ONGOING, 1_700_000_000_100)], base_offset=0
            ),
            build_batch([RecordSpec(encode_txn_key("tx-2"), None, 1_700_000_000_200)], base_offset=1),
            build_batch([RecordSpec(b"\x00\x09zz", b"\x00\x00", 1_700_000_000_300)], base_offset=2),
        ]
    )


@pytest.fixture
def txn_log(tmp_path: Path) -> Path:
    part = tmp_path / "__transaction_state-7"
    part.mkdir()
    path = part / "00000000000000000000.log"
    path.write_bytes(_segment())
    return path


def test_text_output_is_kafka_dump_log_shaped(txn_log):
    before = hashlib.sha256(txn_log.read_bytes()).hexdigest()
    res = run("dump", "--transaction-log-decoder", str(txn_log))
    assert res.returncode == 0, res.stderr
    recs = [line for line in res.stdout.splitlines() if line.startswith("| offset:")]
    assert len(recs) == 3
    # the escape sequence in the transactional id is made visible, never printed raw
    assert "\x1b" not in res.stdout
    assert " key: transaction_metadata::transactionalId=tx" in recs[0]
    assert recs[0].endswith(
        " payload: producerId:4,producerEpoch:2,state=Ongoing,partitions=[orders-1],"
        "txnLastUpdateTimestamp=1700000000100,txnTimeoutMs=60000"
    )
    assert recs[1].endswith("key: transaction_metadata::transactionalId=tx-2 payload: <DELETE>")
    assert "key: unknown::version=9 payload: \\x00\\x00" in recs[2] and "\x00" not in res.stdout
    assert hashlib.sha256(txn_log.read_bytes()).hexdigest() == before


def test_auto_detected_under_transaction_state_dir(txn_log):
    res = run("dump", "--print-values", str(txn_log))
    assert res.returncode == 0, res.stderr
    assert "payload: <DELETE>" in res.stdout and "state=Ongoing" in res.stdout
    res = run("dump", "--print-values", "--decoder", "none", str(txn_log))
    assert "state=Ongoing" not in res.stdout
    # the raw key bytes (NUL-prefixed version and length) are escaped, never printed raw
    assert (
        "key: \\x00\\x00\\x00\\ttx\\x1b[31m-1 payload: base64:AAEAAAAAAAAABAACAADqYAECB29yZGVycw"
        in res.stdout
    )
    assert "\x00" not in res.stdout and "\x1b" not in res.stdout


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_json_carries_the_decoded_objects(txn_log, fmt):
    res = run("dump", "--transaction-log-decoder", "--format", fmt, str(txn_log))
    assert res.returncode == 0, res.stderr
    if fmt == "json":
        events = json.loads(res.stdout)["files"][0]["events"]
    else:
        events = [json.loads(line) for line in res.stdout.splitlines()]
    recs = [e for e in events if e["kind"] == "record"]
    assert recs[0]["key"] == {
        "type": "transaction_metadata",
        "version": 0,
        "data": {"transactionalId": "tx\x1b[31m-1"},
    }
    payload = recs[0]["payload"]
    assert payload["version"] == 1 and payload["state"] == "Ongoing"
    assert payload["data"]["nextProducerId"] == 5 and "previousProducerId" not in payload["data"]
    assert payload["data"]["transactionPartitions"] == [{"topic": "orders", "partitionIds": [1]}]
    assert recs[1]["payload"] == "<DELETE>"
    assert recs[2]["key"] == {
        "type": "unknown",
        "version": 9,
        "data": None,
        "raw": "zz",
        "rawEncoding": "utf8",
    }
    assert (recs[2]["payload"], recs[2]["payloadEncoding"]) == ("\x00\x00", "utf8")  # valid UTF-8


def test_undecodable_value_is_reported_not_a_traceback(tmp_path):
    part = tmp_path / "__transaction_state-0"
    part.mkdir()
    path = part / "00000000000000000000.log"
    path.write_bytes(build_batch([RecordSpec(encode_txn_key("t"), ONGOING[:9], 1)], base_offset=0))
    res = run("dump", "--transaction-log-decoder", str(path))
    assert res.returncode == 0, res.stderr  # the batch itself is valid
    assert "decodeError: transaction log value version 1 does not decode" in res.stdout
    assert "Traceback" not in res.stderr


def test_conflicting_decoder_is_a_one_line_error(txn_log):
    res = run("dump", "--transaction-log-decoder", "--decoder", "offsets", str(txn_log))
    assert res.returncode == 2
    assert "conflicts with --decoder offsets" in res.stderr and "Traceback" not in res.stderr
