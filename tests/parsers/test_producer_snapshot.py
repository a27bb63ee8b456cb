"""Producer state snapshots (spec §10): round trips, Kafka's errors, fuzzing, corpus vs kafka-dump-log."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import ParseError
from parsers.primitives import crc32c
from parsers.producer_snapshot import (
    ProducerSnapshot,
    ProducerStateEntry,
    build_producer_snapshot,
    decrement_sequence,
    read_producer_snapshot,
    snapshot_offset_from_name,
    verify_producer_snapshot,
)
from tests.support.kafka_dumps import dump_sections

ENTRY = ProducerStateEntry(
    producer_id=0,
    producer_epoch=0,
    last_sequence=149,
    last_offset=149,
    offset_delta=149,
    timestamp=0x1A1FC7667FF,
    coordinator_epoch=-1,
    current_txn_first_offset=-1,
)


def test_empty_snapshot_bytes_match_spec():
    # §10.1: the empty snapshot is 00 01 <crc32c(00 00 00 00) = 48 67 4b c7> 00 00 00 00
    data = build_producer_snapshot([])
    assert data == bytes.fromhex("0001 48674bc7 00000000")
    snap = read_producer_snapshot(data)
    assert (snap.version, snap.crc, snap.crc_valid, snap.entries) == (1, 0x48674BC7, True, [])


def test_spec_example_prefix():
    # §10.1 real t1-0/...450.snapshot: first entry of three, producer 0, lastSeq 149, no transaction
    data = build_producer_snapshot([ENTRY, ENTRY, ENTRY])
    assert len(data) == 148
    assert data[6:].startswith(
        bytes.fromhex(
            "00000003 0000000000000000 0000 00000095 0000000000000095 00000095 000001a1fc7667ff ffffffff"
        )
    )


def test_round_trip_many_entries_and_construct_agrees():
    entries = [
        ProducerStateEntry(
            1000 + i, i % 3, 10 * i + 4, 50 * i + 9, 4, 1_795_000_000_000 + i, i - 1, -1 if i % 2 else i
        )
        for i in range(40)
    ]
    data = build_producer_snapshot(entries)
    snap = verify_producer_snapshot(data)
    assert snap.entries == entries and snap.crc == crc32c(data[6:])
    parsed = ProducerSnapshot.parse(data)  # the Construct declaration reads the same values
    assert [dict(e)["producer_id"] for e in parsed.entries] == [e.producer_id for e in entries]
    assert [e.to_dict() for e in snap.entries][3]["first_sequence"] == 30


def test_first_sequence_wraps_like_kafka():
    assert decrement_sequence(149, 149) == 0
    assert decrement_sequence(-1, 0) == 2**31 - 1  # Kafka's arithmetic, printed only with batch metadata
    assert decrement_sequence(2, 5) == 2**31 - 3  # sequences wrap from Integer.MAX_VALUE to 0
    assert decrement_sequence(0, 1) == 2**31 - 1
    assert ProducerStateEntry(1, 0, 3, 10, 6, 0, -1, -1).first_sequence == 2**31 - 3
    assert not ProducerStateEntry(1, 0, -1, -1, 0, -1, -1, -1).has_batch_metadata


def test_crc_mismatch_is_reported_and_strict_form_raises():
    data = bytearray(build_producer_snapshot([ENTRY]))
    data[20] ^= 0x10
    snap = read_producer_snapshot(bytes(data))
    assert not snap.crc_valid and snap.entries[0].last_sequence != 149  # byte 20 is in lastSequence
    with pytest.raises(ParseError) as exc:
        verify_producer_snapshot(bytes(data), "x.snapshot")
    assert exc.value.message == (
        "Snapshot is corrupt (CRC is no longer valid). "
        f"Stored crc: {snap.crc}. Computed crc: {snap.computed_crc}"
    )


_SCHEMA = "Snapshot failed schema validation: Error reading field "
_HEADER = b"\x00\x01\x00\x00\x00\x00"  # version 1, crc 0


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"", _SCHEMA + "'version'"),
        (_HEADER[:4], _SCHEMA + "'crc'"),
        (_HEADER + b"\x00\x00\x00", _SCHEMA + "'producer_entries'"),
        (_HEADER + b"\xff\xff\xff\xff", _SCHEMA + "'producer_entries': Array size -1 cannot be negative"),
        (
            _HEADER + b"\x00\x00\x00\x02" + bytes(46),
            _SCHEMA + "'producer_entries': 2 entries of 46 bytes need 92 bytes, only 46 bytes available",
        ),
        (_HEADER + bytes(5), "Snapshot has 1 trailing bytes after its 0 entries"),
        (b"\x00\x02" + bytes(8), "Snapshot contained an unknown file version 2"),
        (b"\xff\xff" + bytes(8), "Snapshot contained an unknown file version -1"),
    ],
)
def test_kafka_errors(blob, message):
    with pytest.raises(ParseError) as exc:
        read_producer_snapshot(blob, "p.snapshot")
    assert exc.value.message.startswith(message) and exc.value.path == "p.snapshot"


def test_snapshot_offset_from_name():
    assert snapshot_offset_from_name("00000000000000000450.snapshot") == 450
    assert snapshot_offset_from_name("/d/t-0/00000000000000000450.snapshot.deleted") == 450
    for bad in ("00000000000000000450.log", "abc.snapshot", "450.snapshot.tmp"):
        with pytest.raises(ParseError):
            snapshot_offset_from_name(bad)


def test_build_rejects_out_of_range_values():
    with pytest.raises(ValueError):
        build_producer_snapshot([ProducerStateEntry(1, 2**15, 0, 0, 0, 0, 0, 0)])


# ------------------------------------------------------------------------------------------- fuzzing


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_parse_error(data):
    try:
        snap = read_producer_snapshot(data)
    except ParseError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(data)
    else:
        assert len(data) == 10 + 46 * len(snap.entries)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_bit_flips_and_truncations(data):
    valid = build_producer_snapshot([ENTRY, ProducerStateEntry(9, 1, 5, 77, 2, 123, 4, 70)])
    flipped = bytearray(valid)
    flipped[data.draw(st.integers(0, len(valid) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    cut = valid[: data.draw(st.integers(0, len(valid) - 1))]
    for candidate in (bytes(flipped), cut):
        try:
            snap = read_producer_snapshot(candidate)
        except ParseError:
            continue
        assert not snap.crc_valid  # one flipped bit is always caught by the CRC or the structure


# ------------------------------------------------------------------------------------------- corpus

_PAIR = re.compile(r"(\w+): (OptionalLong\[-?\d+\]|OptionalLong\.empty|-?\d+)")


def _expected_dump_line(entry: ProducerStateEntry) -> dict[str, str]:
    txn = entry.current_txn_first_offset
    line = {
        "producerId": str(entry.producer_id),
        "producerEpoch": str(entry.producer_epoch),
        "coordinatorEpoch": str(entry.coordinator_epoch),
        "currentTxnFirstOffset": f"OptionalLong[{txn}]" if txn >= 0 else "OptionalLong.empty",
        "lastTimestamp": str(entry.timestamp),
    }
    if entry.has_batch_metadata:
        line |= {
            "firstSequence": str(entry.first_sequence),
            "lastSequence": str(entry.last_sequence),
            "lastOffset": str(entry.last_offset),
            "offsetDelta": str(entry.offset_delta),
            "timestamp": str(entry.timestamp),
        }
    return line


@pytest.mark.corpus
def test_corpus_every_snapshot_parses_with_valid_crc(corpus):
    found = 0
    for root, _dirs, files in os.walk(corpus):
        for name in files:
            if name.endswith((".snapshot", ".snapshot.deleted")) and "dumps" not in root:
                path = Path(root) / name
                snap = verify_producer_snapshot(path.read_bytes(), str(path))
                assert all(e.last_offset < snapshot_offset_from_name(name) for e in snap.entries), path
                found += 1
    assert found > 300


@pytest.mark.corpus
def test_corpus_snapshots_equal_dump_log_output(corpus):
    compared = with_entries = 0
    for dump in sorted(corpus.rglob("*.snapshots-txnindex.txt.gz")):
        sections: dict[str, list[dict[str, str]]] = {}
        for path, lines in dump_sections(dump):
            entries = [line for line in lines if line.startswith("producerId: ")]
            sections.setdefault(path, []).extend({m[1]: m[2] for m in _PAIR.finditer(e)} for e in entries)
        for rel, dumped in sections.items():
            if not rel.endswith(".snapshot"):
                continue
            snap = read_producer_snapshot((corpus / rel).read_bytes(), rel)
            assert dumped == [_expected_dump_line(e) for e in snap.entries], rel
            compared += 1
            with_entries += bool(snap.entries)
    assert compared > 250 and with_entries > 30
