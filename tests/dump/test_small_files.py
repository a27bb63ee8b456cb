"""``dump --max-bytes`` on the small files (checkpoints, partition.metadata, meta.properties, quorum-state,
producer snapshots): a cut the user asked for is no corruption (marker, exit 0) whatever byte it falls on;
corruption before the cut still fails (exit 2, one line naming the file and the byte)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.dump import Dumper, DumpOptions
from auditor.report.dump_events import guarded
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata
from parsers.producer_snapshot import build_producer_snapshot
from tests.cli.test_dump import run

TOPIC_ID = "bqJ9yc-eQ0KCjqLqIBppfw"
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
QUORUM = (
    b'{"leaderId":1,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
    b'"data_version":1,"flag":true,"ratio":-1.5e+3,"note":"caf\xc3\xa9 \\u00e9"}\n'
)


def producer(pid: int) -> dict:
    return {
        "producer_id": pid,
        "producer_epoch": 0,
        "last_sequence": 4,
        "last_offset": 10 + pid,
        "offset_delta": 4,
        "timestamp": 1_700_000_000_000,
        "coordinator_epoch": -1,
        "current_txn_first_offset": -1,
    }


SNAPSHOT = build_producer_snapshot([producer(pid) for pid in (7, 8, 9)])

VALID = {
    "replication-offset-checkpoint": format_offset_checkpoint(
        [("orders", 0, 28), ("payments", 3, 9), ("orders", 1, 30), ("audit.log-x", 2, 4)]
    ),
    "leader-epoch-checkpoint": format_leader_epoch_checkpoint([(0, 0), (2, 12), (5, 40)]),
    "partition.metadata": format_partition_metadata(TOPIC_ID),
    "meta.properties": (  # node.id=3 spelt as an escape continued onto the next line
        format_meta_properties(1, 3, CLUSTER_ID, TOPIC_ID).replace(b"node.id=3", b"node.id=\\u00\\\n  33")
        + b"# written by hand\n"
    ),
    "quorum-state": QUORUM + "second line: caf\u00e9\n".encode(),  # only the first is read
    "00000000000000000016.snapshot": SNAPSHOT,
}


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def dump_in_process(path: Path, max_bytes: int) -> tuple[list[dict], list]:
    errors: list = []
    dumper = Dumper(DumpOptions(max_bytes=max_bytes))
    return list(guarded([str(path)], dumper.events, errors)), errors


@pytest.mark.parametrize("name", sorted(VALID))
def test_every_cut_of_a_valid_file_is_a_cut_not_an_error(tmp_path, name):
    data = VALID[name]
    path = write(tmp_path, name, data)
    for limit in range(len(data)):
        events, errors = dump_in_process(path, limit)
        assert not errors, (limit, [str(e) for e in errors])
        assert events[-1] == {
            "kind": "stop",
            "reason": "max-bytes",
            "position": limit,
            "trailingBytes": 0,
            "message": None,
            "fileSize": len(data),
        }
    events, errors = dump_in_process(path, len(data))  # the whole file: no cut, no stop event
    assert not errors and events[-1]["kind"] != "stop"


def test_a_cut_checkpoint_shows_its_whole_lines_and_the_declared_count(tmp_path):
    path = write(tmp_path, "replication-offset-checkpoint", VALID["replication-offset-checkpoint"])
    res = run("dump", "--max-bytes", "40", str(path))  # "0\n4\n" then 2 whole lines of 12 and 13 bytes
    assert res.returncode == 0 and not res.stderr
    assert res.stdout.splitlines()[1:] == [
        "# version: 0 count: 4 warnings: [] checkpointKind: high_watermark",
        "topic: orders partition: 0 offset: 28",
        "topic: payments partition: 3 offset: 9",
        f"... stopped after 40 bytes (--max-bytes); rest of file not shown: {path.stat().st_size - 40} bytes",
    ]
    res = run("dump", "--max-bytes", "5", str(path))  # the reviewer's case: cut inside the first entry
    assert res.returncode == 0 and res.stdout.splitlines()[-1].startswith("... stopped after 5 bytes")


def test_a_cut_producer_snapshot_shows_whole_entries_and_no_crc_verdict(tmp_path):
    path = write(tmp_path, "00000000000000000016.snapshot", SNAPSHOT)
    res = run("dump", "--format", "jsonl", "--max-bytes", str(10 + 46 * 2 + 5), str(path))
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    summary = next(e for e in events if e["kind"] == "summary")
    assert summary["version"] == 1 and (summary["computedCrc"], summary["crcValid"]) == (None, None)
    assert [e["producerId"] for e in events if e["kind"] == "entry"] == [7, 8]
    assert events[-1]["kind"] == "stop" and events[-1]["reason"] == "max-bytes"


def test_a_cut_meta_properties_with_every_key_read_shows_its_entry(tmp_path):
    data = VALID["meta.properties"]
    path = write(tmp_path, "meta.properties", data)
    events, errors = dump_in_process(path, len(data) - 5)  # inside the trailing comment
    assert not errors
    entry = next(e for e in events if e["kind"] == "entry")
    assert (entry["nodeId"], entry["clusterId"], entry["directoryId"]) == (3, CLUSTER_ID, TOPIC_ID)


def _replace(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, old
    return data.replace(old, new)


# (file name, bytes, --max-bytes, byte the error names): corrupt before the cut
CORRUPT = [
    pytest.param(  # a bad entry line before the cut
        "replication-offset-checkpoint",
        _replace(VALID["replication-offset-checkpoint"], b"payments 3 9\n", b"payments x 9\n"),
        40,
        16,
        id="checkpoint-bad-line",
    ),
    pytest.param(  # more whole entry lines than the declared count, before the cut
        "replication-offset-checkpoint",
        b"0\n1\n" + VALID["replication-offset-checkpoint"][4:],
        40,
        2,
        id="checkpoint-count",
    ),
    pytest.param(
        "replication-offset-checkpoint",
        b"1\n" + VALID["replication-offset-checkpoint"][2:],
        5,
        0,
        id="checkpoint-version",
    ),
    pytest.param(
        "leader-epoch-checkpoint",
        _replace(VALID["leader-epoch-checkpoint"], b"2 12\n", b"2 12 9\n"),
        16,
        8,
        id="leader-epoch-bad-line",
    ),
    pytest.param(
        "partition.metadata",
        _replace(VALID["partition.metadata"], b"version: 0", b"version 0"),
        20,
        0,
        id="partition-metadata",
    ),
    pytest.param(  # a malformed \uXXXX escape: no later line undoes it
        "meta.properties",
        _replace(VALID["meta.properties"], b"node.id=\\u00\\\n  33", b"node.id=\\u3"),
        len(VALID["meta.properties"]) - 8 - 5,  # 8 bytes shorter: cut inside the trailing comment
        None,
        id="meta-properties-escape",
    ),
    pytest.param(
        "quorum-state",
        _replace(QUORUM, b'"leaderEpoch":7', b'"leaderEpoch"::7'),
        40,
        None,
        id="quorum-state-json",
    ),
    pytest.param(  # a whole first line without a mandatory field: later lines are never read
        "quorum-state",
        _replace(QUORUM, b'"votedId":-1,', b"") + b"\n",
        len(QUORUM) - len(b'"votedId":-1,'),  # the first line whole, the second cut
        0,
        id="quorum-state-field",
    ),
    pytest.param(
        "00000000000000000016.snapshot",
        b"\x00\x02" + SNAPSHOT[2:],
        60,
        0,
        id="snapshot-version",
    ),
    pytest.param(  # the count does not match the file's size
        "00000000000000000016.snapshot",
        SNAPSHOT[:6] + (4).to_bytes(4, "big") + SNAPSHOT[10:],
        60,
        6,
        id="snapshot-count",
    ),
    pytest.param(
        "00000000000000000016.snapshot",
        SNAPSHOT + b"\x00",
        60,
        len(SNAPSHOT),
        id="snapshot-trailing",
    ),
]


@pytest.mark.parametrize("name,data,limit,byte", CORRUPT)
def test_corruption_before_the_cut_still_fails(tmp_path, name, data, limit, byte):
    path = write(tmp_path, name, data)
    res = run("dump", "--max-bytes", str(limit), str(path))
    assert res.returncode == 2, res.stdout
    lines = res.stdout.splitlines()
    assert lines[-2].startswith(f"... stopped after {limit} bytes (--max-bytes)")
    assert lines[-1].startswith("!! decoding stopped: ")
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "Traceback" not in res.stderr
    if byte is not None:
        assert f": byte {byte}: " in err[0]
    res = run("dump", "--format", "jsonl", "--max-bytes", str(limit), str(path))
    failed = [json.loads(line) for line in res.stdout.splitlines()][-1]
    assert res.returncode == 2 and failed["kind"] == "failed"
    assert set(failed) == {"file", "kind", "path", "position", "message"} and failed["position"] == byte
