"""The observations rules judge: one walk of a segment reports what ``SegmentWalker`` sees (the column-wise
index readers are proven against the parsers' readers in ``tests/parsers/test_indexes.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.layout.inventory import inventory
from auditor.observe.segments import collect_segment
from parsers.segment import SegmentWalker
from tests.conftest import corpus_path


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
