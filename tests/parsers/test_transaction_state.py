"""``__transaction_state`` records: decoder/encoder, the coordinator's state (``auditor.kafka.coordinator``),
the extract rows (``auditor.observe.coordinator``) and the corpus against the real kafka-dump-log output."""

from __future__ import annotations

import contextlib
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.kafka.coordinator import (
    TxnMetadata,
    by_producer,
    coordinator_partition,
    coordinator_states,
    is_ongoing,
    java_string_hash,
    transaction_state_partition,
)
from auditor.kafka.recovery import SegmentSummary, recover
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.coordinator import transaction_state_rows
from parsers.control import encode_end_txn_marker
from parsers.errors import ParseError
from parsers.record_batch import RecordSpec, build_batch
from parsers.transaction_state import (
    STATE_NAMES,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
    key_text,
    value_partitions,
    value_text,
)
from tests.support.kafka_dumps import dump_files

# ----------------------------------------------------------------------------------------- hand-built bytes


def test_key_bytes_are_version_then_int16_string():
    key = encode_txn_key("clean-txn-1")
    assert key == b"\x00\x00\x00\x0bclean-txn-1"
    assert decode_txn_key(key) == {
        "type": "transaction_metadata",
        "version": 0,
        "data": {"transactionalId": "clean-txn-1"},
    }
    assert key_text(decode_txn_key(key)) == "transaction_metadata::transactionalId=clean-txn-1"


def test_value_v0_bytes_layout():
    raw = encode_txn_value(
        producer_id=7,
        producer_epoch=2,
        timeout_ms=60000,
        state="Ongoing",
        partitions=[("t", 0), ("t", 3)],
        last_update_timestamp=11,
        start_timestamp=10,
    )
    expected = (
        struct.pack(">hqhib", 0, 7, 2, 60000, 1)
        + struct.pack(">i", 1)  # one topic
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">iii", 2, 0, 3)  # partition ids
        + struct.pack(">qq", 11, 10)
    )
    assert raw == expected
    value = decode_txn_value(raw)
    assert value["version"] == 0 and value["state"] == "Ongoing"
    assert value_partitions(value) == [("t", 0), ("t", 3)]
    assert value_text(value) == (
        "producerId:7,producerEpoch:2,state=Ongoing,partitions=[t-0,t-3],txnLastUpdateTimestamp=11,txnTimeoutMs=60000"
    )


def test_value_v1_is_flexible_with_tagged_producer_ids():
    raw = encode_txn_value(
        producer_id=9,
        producer_epoch=0,
        timeout_ms=1000,
        state="PrepareCommit",
        partitions=[("a", 1)],
        previous_producer_id=4,
        next_producer_id=12,
        client_transaction_version=2,
        version=1,
    )
    # compact strings/arrays: the topic name is uvarint(len + 1) + bytes
    assert b"\x02a" in raw
    data = decode_txn_value(raw)["data"]
    assert (data["previousProducerId"], data["nextProducerId"], data["clientTransactionVersion"]) == (
        4,
        12,
        2,
    )
    # tags at their defaults are not written and not reported
    plain = decode_txn_value(
        encode_txn_value(producer_id=9, producer_epoch=0, timeout_ms=1, state=1, version=1)
    )
    assert "previousProducerId" not in plain["data"] and "nextProducerId" not in plain["data"]
    with pytest.raises(ValueError, match="version 1"):
        encode_txn_value(producer_id=1, producer_epoch=0, timeout_ms=1, state=1, next_producer_id=3)


def test_empty_state_has_null_partitions_and_lists_none():
    raw = encode_txn_value(
        producer_id=1, producer_epoch=0, timeout_ms=1, state="Empty", partitions=[("x", 0)]
    )
    value = decode_txn_value(raw)
    assert value["data"]["transactionPartitions"] is None and value_partitions(value) == []


def test_tombstone_and_unknown_versions_never_crash():
    assert decode_txn_value(None) is None and value_text(None) == "<DELETE>"
    unknown_key = decode_txn_key(b"\x00\x05\x01\x02")
    assert unknown_key == {"type": "unknown", "version": 5, "data": None, "raw": "0102"}
    assert key_text(unknown_key) == "unknown::version=5"
    unknown_value = decode_txn_value(b"\x00\x07\xff")
    assert unknown_value["data"] is None and unknown_value["raw"] == "ff" and unknown_value["state"] is None
    odd_status = decode_txn_value(encode_txn_value(producer_id=1, producer_epoch=0, timeout_ms=1, state=42))
    assert odd_status["state"] is None and "<unknown status 42>" in value_text(odd_status)


def test_trailing_bytes_are_counted_like_kafka_ignores_them():
    value = decode_txn_value(
        encode_txn_value(producer_id=1, producer_epoch=0, timeout_ms=1, state="Empty") + b"\x00\x00"
    )
    assert value["data"]["trailingBytes"] == 2


@pytest.mark.parametrize("version", [0, 1])
def test_truncated_values_raise_parse_error_with_offset(version):
    raw = encode_txn_value(
        producer_id=3, producer_epoch=1, timeout_ms=5, state="Ongoing", partitions=[("t", 1)], version=version
    )
    for cut in range(len(raw)):
        if cut == 0:
            with pytest.raises(ParseError):
                decode_txn_value(raw[:cut])
            continue
        try:
            decode_txn_value(raw[:cut])
        except ParseError as exc:
            assert exc.offset is not None and 0 <= exc.offset <= cut
        else:  # pragma: no cover - every prefix is short of a required field
            pytest.fail(f"prefix of {cut} bytes decoded")
    with pytest.raises(ParseError):
        decode_txn_key(encode_txn_key("abc")[:-1])
    with pytest.raises(ParseError):
        decode_txn_key(None)


_ids = st.integers(-1, 2**63 - 1)
_parts = st.lists(st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    tid=st.text(max_size=40),
    pid=_ids,
    prev=_ids,
    nxt=_ids,
    epoch=st.integers(-1, 32767),
    timeout=st.integers(0, 2**31 - 1),
    status=st.sampled_from(sorted(STATE_NAMES)),
    parts=_parts,
    stamps=st.tuples(st.integers(-1, 2**62), st.integers(-1, 2**62)),
    ctv=st.integers(0, 2),
    version=st.sampled_from([0, 1]),
)
def test_round_trip(tid, pid, prev, nxt, epoch, timeout, status, parts, stamps, ctv, version):
    assert decode_txn_key(encode_txn_key(tid))["data"]["transactionalId"] == tid
    extra = dict(previous_producer_id=prev, next_producer_id=nxt, client_transaction_version=ctv)
    raw = encode_txn_value(
        producer_id=pid,
        producer_epoch=epoch,
        timeout_ms=timeout,
        state=status,
        partitions=parts,
        last_update_timestamp=stamps[0],
        start_timestamp=stamps[1],
        version=version,
        **(extra if version else {}),
    )
    value = decode_txn_value(raw)
    data = value["data"]
    assert value["version"] == version and value["state"] == STATE_NAMES[status]
    assert (data["producerId"], data["producerEpoch"], data["transactionTimeoutMs"]) == (pid, epoch, timeout)
    assert (data["transactionLastUpdateTimestampMs"], data["transactionStartTimestampMs"]) == stamps
    expected = [] if STATE_NAMES[status] == "Empty" else sorted(parts)
    assert sorted(value_partitions(value)) == expected
    if version:
        assert data.get("previousProducerId", -1) == prev and data.get("nextProducerId", -1) == nxt
        assert data.get("clientTransactionVersion", 0) == ctv


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_arbitrary_bytes_decode_or_raise_parse_error(raw):
    """Any other exception fails the test."""
    for fn in (decode_txn_key, decode_txn_value):
        with contextlib.suppress(ParseError):
            assert isinstance(fn(raw), dict)


# --------------------------------------------------------------------------------------- coordinator model


def test_java_string_hash_matches_java():
    # values of Java's "...".hashCode()
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE: Utils.abs gives 0
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert transaction_state_partition("hello") == 99162322 % 50
    with pytest.raises(ValueError):
        coordinator_partition("x", 0)


def _row(offset, tid, state="Ongoing", pid=1, epoch=0, prev=-1, nxt=-1, tombstone=False, live=True, broker=1):
    base = {"offset": offset, "transactional_id": tid, "tombstone": tombstone, "live": live, "broker": broker}
    if tombstone:
        return base
    return {
        **base,
        "txn_producer_id": pid,
        "previous_producer_id": prev,
        "next_producer_id": nxt,
        "txn_producer_epoch": epoch,
        "timeout_ms": 60000,
        "state": state,
        "partitions": [{"topic": "t", "partition": 0}],
        "last_update_timestamp": 5,
        "start_timestamp": 4,
    }


def test_coordinator_states_latest_live_record_wins_tombstone_removes():
    rows_ = [
        _row(3, "a", "CompleteCommit"),
        _row(1, "a", "Ongoing"),  # out of order: offsets decide
        _row(2, "b", "Ongoing", pid=2),
        _row(4, "b", tombstone=True),
        _row(5, "c", "PrepareAbort", pid=3),
        _row(6, "c", "CompleteAbort", pid=3, live=False),  # cut by recovery: not loaded
        _row(7, None, None),  # unknown key version
        {**_row(8, "a", "Ongoing"), "state": None},  # unreadable value: not loaded
    ]
    states = coordinator_states(rows_)
    assert sorted(states) == ["a", "c"]
    assert states["a"].state == "CompleteCommit" and states["a"].offset == 3
    assert states["c"].state == "PrepareAbort" and is_ongoing(states["c"]) and not is_ongoing(states["a"])
    assert states["c"].partitions == (("t", 0),) and states["c"].broker == 1
    assert not is_ongoing(None)
    assert isinstance(states["a"], TxnMetadata)


def test_by_producer_matches_current_previous_and_next_ids():
    states = coordinator_states(
        [_row(1, "a", pid=10, prev=9, nxt=11), _row(2, "b", "CompleteCommit", pid=20), _row(3, "c", pid=9)]
    )
    assert by_producer(states, 10).transactional_id == "a"
    assert by_producer(states, 11).transactional_id == "a"  # next producer id
    assert by_producer(states, 9).transactional_id == "c"  # a current id wins over a previous one
    assert by_producer(states, 20).state == "CompleteCommit"
    assert by_producer(states, 99) is None and by_producer(states, -1) is None
    assert states["a"].producer_ids() == frozenset({9, 10, 11})


def test_coordinator_states_reads_arrow_tables_and_spark_rows():
    import pyarrow as pa
    from pyspark.sql import Row

    table = pa.Table.from_pylist(
        [_row(1, "a", pid=3), _row(2, "a", "PrepareCommit", pid=3)], schema=rows.TXN_STATE
    )
    assert coordinator_states(table)["a"].state == "PrepareCommit"
    spark_row = Row(**{**_row(4, "s", pid=8), "partitions": [Row(topic="u", partition=2)]})
    meta = coordinator_states([spark_row])["s"]
    assert meta.partitions == (("u", 2),) and meta.producer_id == 8 and meta.offset == 4


# ------------------------------------------------------------------------------------------- extract rows


def _task(tmp_path: Path) -> tuple[PartitionTask, Path]:
    part = tmp_path / "__transaction_state-0"
    part.mkdir()
    task = PartitionTask("c", str(tmp_path), 1, part.name, "__transaction_state", 0, compacted=True)
    return task, part


def _write(part: Path, batches: list[bytes]) -> list[tuple[int, int, int]]:
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    out, pos = [], 0
    for b in batches:
        out.append((0, pos, len(b)))
        pos += len(b)
    return out


def _record(tid: str | None, value: bytes | None, ts: int = 1000) -> RecordSpec:
    return RecordSpec(None if tid is None else encode_txn_key(tid), value, ts)


def test_transaction_state_rows_decode_classify_live_and_errors(tmp_path):
    task, part = _task(tmp_path)
    ongoing = encode_txn_value(
        producer_id=5, producer_epoch=1, timeout_ms=100, state="Ongoing", partitions=[("t", 0)], version=1
    )
    done = encode_txn_value(producer_id=5, producer_epoch=1, timeout_ms=100, state="CompleteCommit")
    key, value = encode_end_txn_marker(True, 0)
    batches = [
        build_batch([_record("a", ongoing), _record("b", done)], base_offset=0),
        build_batch([_record("b", None)], base_offset=2),  # tombstone
        build_batch([_record("c", ongoing[:-3])], base_offset=3),  # truncated value: skipped, reported
        build_batch(  # a (stray) transactional batch and its marker: classified, markers give no row
            [_record("d", done)], base_offset=4, transactional=True, producer_id=77, producer_epoch=0
        ),
        build_batch(
            [RecordSpec(key, value, 1000)], base_offset=5, control=True, producer_id=77, producer_epoch=0
        ),
        build_batch([_record("a", done)], base_offset=6),  # after recovery's cut below
    ]
    valid = _write(part, batches)
    errors: list[str] = []
    _segment, last, size = valid[-1]  # log recovery cuts the segment at its last batch
    cut = recover(
        [SegmentSummary("00000000000000000000.log", 0, last + size, last, 6, 7)],
        clean_shutdown=False,
        recovery_point=0,
    )
    table = transaction_state_rows(task, part, valid, recovery=cut, errors=errors)
    assert table.schema == rows.TXN_STATE
    got = table.to_pylist()
    assert [r["offset"] for r in got] == [0, 1, 2, 4, 6]
    assert got[0]["transactional_id"] == "a" and got[0]["state"] == "Ongoing"
    assert got[0]["partitions"] == [{"topic": "t", "partition": 0}] and got[0]["txn_producer_id"] == 5
    assert got[1]["state"] == "CompleteCommit" and got[1]["previous_producer_id"] == -1
    assert got[2]["tombstone"] and got[2]["state"] is None and got[2]["transactional_id"] == "b"
    assert [r["txn_state"] for r in got] == ["plain", "plain", "plain", "committed", None]
    assert [r["live"] for r in got] == [True, True, True, True, False]
    assert len(errors) == 1 and "offset 3" in errors[0] and "00000000000000000000.log: byte " in errors[0]
    states = coordinator_states(got)
    assert sorted(states) == ["a", "d"] and states["a"].state == "Ongoing"  # offset 6 is not loaded


def test_transaction_state_rows_without_records_is_empty(tmp_path):
    task, part = _task(tmp_path)
    assert transaction_state_rows(task, part, []).num_rows == 0
    errors: list[str] = []
    table = transaction_state_rows(task, part, [(0, 0, 100)], errors=errors)  # no such segment
    assert table.num_rows == 0 and len(errors) == 1 and "00000000000000000000.log: byte 0" in errors[0]


# ------------------------------------------------------------------------------------- real Kafka 4.0 files

_PAYLOAD = re.compile(r"^\| offset: (\d+) .* key: (.*?) payload: (.*)$")


def _normalise(payload: str) -> tuple[str, frozenset[str]]:
    """Kafka prints the partitions in hash-set order: compare them as a set."""
    m = re.match(r"(.*partitions=\[)([^\]]*)(\].*)", payload)
    if m is None:
        return payload, frozenset()
    return m.group(1) + m.group(3), frozenset(filter(None, m.group(2).split(",")))


def test_corpus_transaction_logs_match_kafka_dump_log(corpus):
    checked = 0
    for _dump, section in dump_files(corpus, "__transaction_state.print-data-log.txt.gz"):
        path = corpus / section.path
        if not path.is_file() or not section.records:
            continue
        from auditor.dump import Dumper, DumpOptions

        ours = [
            e
            for e in Dumper(DumpOptions(print_values=True, decoder="transaction-log")).events(path)
            if e["kind"] == "record"
        ]
        assert len(ours) == len(section.records), section.path
        for mine, theirs in zip(ours, section.records, strict=True):
            m = _PAYLOAD.match(theirs["_line"])
            assert m is not None and int(m.group(1)) == mine["offset"]
            assert mine["keyText"] == m.group(2)
            assert _normalise(mine["payloadText"]) == _normalise(m.group(3))
            checked += 1
    assert checked >= 94


def test_corpus_coordinator_rows_and_state(corpus):
    from auditor.observe.extract import extract_tables

    tables = extract_tables(corpus / "clean" / "broker-1")
    got = tables["txn_state"].to_pylist()
    assert len(got) == 94 and {r["partition"] for r in got} == {2}
    assert all(r["txn_state"] == "plain" and r["live"] and not r["tombstone"] for r in got)
    replica = [r for r in tables["replica"].to_pylist() if r["topic"] == "__transaction_state"]
    assert all(r["error"] is None for r in replica)
    assert transaction_state_partition("clean-txn-1", 3) == 2  # the partition Kafka put it in
    states = coordinator_states(got)
    meta = states["clean-txn-1"]
    assert meta.state == "CompleteAbort" and meta.offset == 93 and not is_ongoing(meta)
    assert by_producer(states, meta.producer_id) is meta
