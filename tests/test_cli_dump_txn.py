"""``kafka-auditor dump --transaction-log-decoder``: kafka-dump-log text, JSON, auto-detection, errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from parsers.record_batch import RecordSpec, build_batch
from parsers.transaction_state import encode_txn_key, encode_txn_value
from tests.test_cli_dump import run

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
