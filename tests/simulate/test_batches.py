"""The simulator's batch encoders agree with ``build_batch`` and decode with the project's parsers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.simulate.batches import (
    FastBatchEncoder,
    encode_data_batch,
    encode_leader_change_batch,
    encode_marker_batch,
)
from auditor.simulate.log import SimRecord
from parsers.control import decode_control_record
from parsers.record_batch import RecordSpec, build_batch, decode_records, parse_header, records_payload

keys = st.one_of(st.none(), st.binary(max_size=40))


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(st.tuples(keys, keys), min_size=1, max_size=8),
    base_offset=st.integers(0, 2**40),
    epoch=st.integers(0, 2**31 - 1),
    ts=st.integers(0, 2**45),
)
def test_fast_encoder_is_byte_identical_to_build_batch(records, base_offset, epoch, ts):
    enc = FastBatchEncoder([k for k, _ in records], [v for _, v in records])
    fast = enc.encode(base_offset, epoch, ts)
    reference = build_batch(
        [RecordSpec(k, v, ts) for k, v in records], base_offset=base_offset, partition_leader_epoch=epoch
    )
    assert fast == reference
    assert len(fast) == enc.size
    assert parse_header(fast).crc_valid


def test_data_batch_round_trip_with_producer_fields():
    recs = [SimRecord(b"k%d" % i, b"v" * i, 1_700_000_000_000 + i) for i in range(4)]
    data = encode_data_batch(
        recs, base_offset=42, epoch=3, producer_id=7, producer_epoch=1, base_sequence=10, transactional=True
    )
    h = parse_header(data)
    assert (h.base_offset, h.last_offset, h.partition_leader_epoch) == (42, 45, 3)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 1, 10, 13)
    assert h.is_transactional and not h.is_control and h.crc_valid
    out = decode_records(h, records_payload(h, data))
    assert [(r.offset, r.key, r.value, r.sequence) for r in out] == [
        (42 + i, b"k%d" % i, b"v" * i, 10 + i) for i in range(4)
    ]


def test_marker_batch_is_kafkas_78_byte_control_batch():
    data, rec = encode_marker_batch(
        commit=False,
        coordinator_epoch=5,
        base_offset=9,
        epoch=2,
        producer_id=3,
        producer_epoch=0,
        timestamp=1_700_000_000_000,
    )
    assert len(data) == 78
    h = parse_header(data)
    assert h.attributes == 0x30 and h.base_sequence == -1 and h.records_count == 1
    (r,) = decode_records(h, records_payload(h, data))
    marker = decode_control_record(r.key, r.value)
    assert marker.type_name == "ABORT" and marker.data["coordinatorEpoch"] == 5


def test_leader_change_batch():
    data, _ = encode_leader_change_batch(leader_id=100, voters=[100], base_offset=0, epoch=1, timestamp=1)
    h = parse_header(data)
    assert h.is_control and not h.is_transactional and h.partition_leader_epoch == 1
    (r,) = decode_records(h, records_payload(h, data))
    assert decode_control_record(r.key, r.value).data["leaderId"] == 100
