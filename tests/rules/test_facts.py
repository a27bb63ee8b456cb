"""The observations rules judge: the column-wise index readers agree with the parsers' readers, and one walk
of a segment reports what ``SegmentWalker`` sees."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.layout.inventory import inventory
from auditor.observe.segments import collect_segment
from parsers.indexes import build_offset_index, build_time_index, read_offset_index, read_time_index
from parsers.indexes_columnar import offset_index_arrays, time_index_arrays
from parsers.segment import SegmentWalker
from tests.conftest import corpus_path


def _same(reader, arrays, columns: tuple[str, str], data: bytes, base: int) -> None:
    ref = reader(data, base)
    got = arrays(data, base)
    pairs = zip(got.columns[columns[0]], got.columns[columns[1]], strict=True)
    assert [tuple(map(int, e)) for e in pairs] == ref.entries
    fields = ("slots", "trailing_bytes", "padding_slots", "garbage_after_padding", "preallocated")
    assert [getattr(got, f) for f in fields] == [getattr(ref, f) for f in fields]


def _same_offset(data: bytes, base: int) -> None:
    _same(read_offset_index, offset_index_arrays, ("offset", "position"), data, base)


def _same_time(data: bytes, base: int) -> None:
    _same(read_time_index, time_index_arrays, ("timestamp", "offset"), data, base)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.integers(0, 2**40))
def test_index_arrays_agree_with_readers_on_random_bytes(data, base):
    _same_offset(data, base)
    _same_time(data, base)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)), max_size=8),
    st.integers(0, 64),
    st.booleans(),
)
def test_index_arrays_agree_on_real_shapes(entries, pad, garbage):
    base = 1000
    oi = bytearray(build_offset_index([(base + r, p) for r, p in entries], base) + bytes(pad * 8))
    ti = bytearray(build_time_index([(p, base + r) for r, p in entries], base) + bytes(pad * 12))
    if garbage and pad:
        oi[-3] = 9
        ti[-3] = 9
    _same_offset(bytes(oi), base)
    _same_time(bytes(ti), base)


@pytest.mark.corpus
def test_index_arrays_agree_on_corpus():
    root = corpus_path()
    files = sorted(root.glob("*/broker-*/*/*.index")) + sorted(root.glob("*/*/broker-*/*/*.index"))
    assert files
    for index in files:
        base = int(index.name.split(".")[0])
        _same_offset(index.read_bytes(), base)
        _same_time(index.with_suffix(".timeindex").read_bytes(), base)


@pytest.mark.corpus
def test_collect_segment_matches_the_walker():
    root = corpus_path()
    inv = inventory(root / "clean" / "broker-1")
    for part in inv.partitions:
        for seg in part.log_segments:
            facts = collect_segment(seg.log.path, seg.base_offset, files=seg)
            batches = list(SegmentWalker(seg.log.path))
            assert facts.batches == facts.valid_batches == len(batches)
            assert facts.stop.reason == "end" and facts.truncate_bytes == 0
            if batches:
                assert facts.first_offset == batches[0].base_offset
                assert facts.last_offset == batches[-1].last_offset
                assert facts.max_timestamp == max(b.max_timestamp for b in batches)
                epochs = [b.partition_leader_epoch for b in batches]
                assert [r[0] for r in facts.epoch_runs] == [
                    e for i, e in enumerate(epochs) if i == 0 or e != epochs[i - 1]
                ]
            if facts.offset_index is not None and len(facts.offset_index):
                assert facts.offset_index.at_batch.all()
                assert np.array_equal(facts.offset_index.batch_last, facts.offset_index.offsets)
            if facts.time_index is not None and len(facts.time_index):
                assert facts.time_index.found.all()
                assert np.array_equal(facts.time_index.batch_max_ts, facts.time_index.timestamps)
            markers = sum(1 for b in batches if b.is_control and b.is_transactional)
            assert len(facts.markers) == markers
