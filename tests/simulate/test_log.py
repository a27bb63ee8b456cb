"""The replica log model follows Kafka's segment, index, truncation and recovery rules."""

from __future__ import annotations

import pytest

from auditor.simulate.batches import encode_data_batch
from auditor.simulate.log import LogConfig, ReplicaLog, SimBatch, SimRecord, end_offset_for

TS = 1_700_000_000_000


def make_batch(base: int, n: int = 1, epoch: int = 0, value: int = 100, ts: int | None = None) -> SimBatch:
    t = TS + base if ts is None else ts
    recs = [SimRecord(b"k", b"v" * value, t) for _ in range(n)]
    data = encode_data_batch(recs, base_offset=base, epoch=epoch)
    return SimBatch(base, base, base + n - 1, epoch, recs, data, t)


def fill(log: ReplicaLog, count: int, epoch: int = 0, per_append: int = 1, value: int = 100) -> None:
    for _ in range(count // per_append):
        base = log.leo
        log.append([make_batch(base + i, epoch=epoch, value=value) for i in range(per_append)], 0)


def test_leader_index_entries_follow_index_interval_bytes():
    log = ReplicaLog(LogConfig(segment_bytes=1 << 20, index_interval_bytes=1000, segment_index_bytes=4096))
    fill(log, 60)
    seg = log.active
    size = seg.batches[0].size
    expected, since = [], 0
    for i in range(60):  # the append path of spec §7.2, one batch per append
        if since > 1000:
            expected.append((i, i * size))
            since = 0
        since += size
    assert seg.index == expected
    assert all(p2 - p1 > 1000 for (_, p1), (_, p2) in zip(seg.index, seg.index[1:], strict=False))
    assert [o for _, o in seg.time_index] == [o for o, _ in seg.index]


def test_follower_multi_batch_append_indexes_the_last_offset_of_the_append():
    log = ReplicaLog(LogConfig(segment_bytes=1 << 20, index_interval_bytes=500, segment_index_bytes=4096))
    fill(log, 40, per_append=4)
    for off, pos in log.active.index:
        i = log.active.positions.index(pos)
        first = log.active.batches[i]
        assert off == first.last_offset + 3  # O = last offset of the append, P = its first batch


def test_roll_at_segment_bytes_with_snapshot_and_final_time_index_entry():
    log = ReplicaLog(LogConfig(segment_bytes=2000, index_interval_bytes=4096, segment_index_bytes=4096))
    fill(log, 50)
    assert len(log.segments) > 3
    for prev, seg in zip(log.segments, log.segments[1:], strict=False):
        assert prev.size <= 2000 and not prev.preallocated
        assert seg.base_offset == prev.next_offset
        assert seg.base_offset in log.snapshots
        assert prev.time_index[-1] == (
            max(b.max_timestamp for b in prev.batches),
            prev.batches[-1].last_offset,
        )
        assert log.recovery_point >= seg.base_offset or seg is log.active
    assert log.active.preallocated
    assert log.recovery_point == log.active.base_offset


def test_truncation_deletes_later_segments_and_reexpands_the_active_index():
    log = ReplicaLog(LogConfig(segment_bytes=2000, index_interval_bytes=300, segment_index_bytes=4096))
    fill(log, 30)
    fill(log, 30, epoch=1)
    target = log.segments[2].base_offset + 2
    n_before = len(log.segments)
    log.truncate_to(target, 5)
    assert log.leo == target
    assert len(log.segments) == 3 and len(log.deleted) == n_before - 3
    assert log.active.preallocated
    assert all(o < target for o, _ in log.active.index)
    assert all(o <= target for o in log.snapshots)
    assert log.epoch_cache[-1][1] < target


def test_epoch_cache_assign_drops_conflicting_entries():
    log = ReplicaLog(LogConfig())
    assert log.assign_epoch(0, 0) and log.assign_epoch(2, 10)
    assert not log.assign_epoch(2, 12)  # same epoch, later start: no update
    assert log.assign_epoch(1, 5)  # lower epoch: entries with epoch >= 1 or start >= 5 removed
    assert log.epoch_cache == [(0, 0), (1, 5)]


@pytest.mark.parametrize(
    "cache,leo,requested,expected",
    [
        ([(0, 0), (2, 1000)], 1300, 0, (0, 1000)),  # KIP-279: end offset of epoch 0 = start of epoch 2
        ([(0, 0), (2, 1000)], 1300, 1, (0, 1000)),  # unknown epoch: largest epoch below it
        ([(0, 0), (2, 1000)], 1300, 2, (2, 1300)),  # latest epoch: the log end offset
        ([(0, 0), (2, 1000)], 1300, 3, (-1, -1)),  # newer than the leader's
        ([(3, 50)], 80, 1, (1, 50)),  # older than any cached epoch
        ([(0, 0)], 10, -1, (-1, -1)),
    ],
)
def test_end_offset_for(cache, leo, requested, expected):
    assert end_offset_for(cache, leo, requested) == expected


def test_recovery_truncates_a_torn_tail_and_rebuilds_indexes():
    log = ReplicaLog(LogConfig(segment_bytes=1 << 20, index_interval_bytes=400, segment_index_bytes=4096))
    fill(log, 20, per_append=4)
    torn = log.tear_last_batch(30)
    assert torn and torn["bytes"] == 30
    report = log.recover(0, False, 0, [(0, 0)])
    assert report.reason == "torn-tail" and report.truncated_at == 19
    seg = log.active
    assert seg.tail == b"" and log.leo == 19
    # rebuilt entries point at single batches: (lastOffset of the batch at P, P)
    for off, pos in seg.index:
        assert seg.batches[seg.positions.index(pos)].last_offset == off


def with_flipped_bit(segment: int, batch: int) -> ReplicaLog:
    """40 one-record batches in 1500-byte segments; one bit of batch ``batch`` of segment ``segment`` is
    flipped on disk (its CRC no longer matches)."""
    log = ReplicaLog(LogConfig(segment_bytes=1500, index_interval_bytes=4096, segment_index_bytes=4096))
    fill(log, 40)
    seg = log.segments[segment]
    raw = bytearray(seg.batches[batch].data)
    raw[-1] ^= 0x10
    seg.damaged[batch] = bytes(raw)
    return log


def test_recovery_stops_at_a_corrupt_batch_and_deletes_later_segments():
    log = with_flipped_bit(1, 2)
    seg = log.segments[1]
    bad_offset = seg.batches[2].base_offset
    n = len(log.segments)
    report = log.recover(seg.base_offset, False, 0, [(0, 0)])
    assert report.reason == "corrupt" and report.truncated_at == bad_offset
    assert len(log.segments) == 2 and len(report.deleted_segments) == n - 2
    assert log.leo == report.truncated_at


def test_recovery_below_the_recovery_point_is_not_checked():
    log = with_flipped_bit(0, 1)
    report = log.recover(log.segments[2].base_offset, False, 0, [(0, 0)])
    assert report.truncated_at is None and log.leo == 40


def test_power_loss_keeps_flushed_data_and_optionally_stale_index_entries():
    log = ReplicaLog(LogConfig(segment_bytes=3000, index_interval_bytes=200, segment_index_bytes=4096))
    fill(log, 45)
    rp = log.recovery_point
    assert 0 < rp < log.leo
    entries = list(log.active.index)
    assert entries
    log.lose_unflushed(torn_bytes=None, keep_index=True)
    assert log.leo == rp and log.active.size == 0
    assert log.active.index == entries  # pointing beyond the (now empty) active segment
