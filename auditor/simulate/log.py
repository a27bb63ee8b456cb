"""A replica's local log as Kafka keeps it: segments, their offset/time/transaction indexes, the
leader-epoch cache and producer state, with Kafka's append, roll, truncate, flush and recovery rules
(spec §7.2, §8.2, §9, §10.2, §11.3, §17.2-17.5).

The model holds the batches themselves (one :class:`SimBatch` object per write, shared by every replica
that copied it, so equal objects mean byte-identical batches) and everything needed to lay the files out;
``writer.py`` only serialises it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from parsers.record_batch import RECORD_BATCH_OVERHEAD, RecordBatch, parse_header

NO_TIMESTAMP = -1


@dataclass(slots=True, eq=False)
class SimRecord:
    """One record as the producer sent it."""

    key: bytes | None
    value: bytes | None
    timestamp: int


@dataclass(slots=True, eq=False)
class SimBatch:
    """A v2 batch exactly as the leader appended it (``data`` = its bytes, CRC included).

    ``control`` is ``"COMMIT"``/``"ABORT"`` for transaction markers, ``"LEADER_CHANGE"`` for KRaft
    control batches, ``None`` for data. ``write_id`` identifies the produce request (or marker write).
    """

    batch_id: int
    base_offset: int
    last_offset: int
    epoch: int
    records: list[SimRecord]
    data: bytes
    max_timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: str | None = None
    coordinator_epoch: int = -1
    acks: str | None = None
    leader: int = -1
    append_ms: int = 0
    crc: int = 0

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def count(self) -> int:
        return self.last_offset - self.base_offset + 1

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset - self.base_offset) & 0x7FFFFFFF

    def header(self) -> RecordBatch:
        return parse_header(self.data)


@dataclass(slots=True)
class ProducerEntry:
    """Producer state kept per producer id (what a ``.snapshot`` entry holds, spec §10.1)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            self.last_sequence,
            self.last_offset,
            self.offset_delta,
            self.timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )


@dataclass(slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class Segment:
    """One segment: its batches at their byte positions and its three indexes.

    ``preallocated`` is true while the on-disk ``.index``/``.timeindex`` still have their preallocated
    size (active segment, not trimmed by a roll or a clean close). ``damaged`` maps a batch's list index
    to the bytes actually on disk when a fault changed them; ``tail`` is a torn partial batch after the
    last complete one.
    """

    __slots__ = (
        "base_offset",
        "batches",
        "bases",
        "positions",
        "size",
        "index",
        "time_index",
        "bytes_since_last_index_entry",
        "max_ts",
        "offset_of_max_ts",
        "txn_index",
        "preallocated",
        "damaged",
        "tail",
        "created_ms",
    )

    def __init__(self, base_offset: int, created_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.batches: list[SimBatch] = []
        self.bases: list[int] = []
        self.positions: list[int] = []
        self.size = 0
        self.index: list[tuple[int, int]] = []
        self.time_index: list[tuple[int, int]] = []
        self.bytes_since_last_index_entry = 0
        self.max_ts = NO_TIMESTAMP
        self.offset_of_max_ts = -1
        self.txn_index: list[AbortedTxn] = []
        self.preallocated = True
        self.damaged: dict[int, bytes] = {}
        self.tail = b""
        self.created_ms = created_ms

    @property
    def next_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.base_offset

    def maybe_append_time_index(self, ts: int, offset: int) -> None:
        """``TimeIndex.maybeAppend``: only a strictly greater timestamp is appended."""
        last_ts = self.time_index[-1][0] if self.time_index else NO_TIMESTAMP
        if ts > last_ts:
            self.time_index.append((ts, offset))

    def close_time_index(self) -> None:
        """On roll, clean close or end of recovery: record the segment's max timestamp (skipFullCheck)."""
        if self.max_ts != NO_TIMESTAMP:
            self.maybe_append_time_index(self.max_ts, self.offset_of_max_ts)

    def batch_bytes(self, i: int) -> bytes:
        return self.damaged.get(i, self.batches[i].data)

    def file_bytes(self) -> bytes:
        """The ``.log`` file content."""
        if not self.damaged:
            return b"".join(b.data for b in self.batches) + self.tail
        return b"".join(self.batch_bytes(i) for i in range(len(self.batches))) + self.tail

    def batch_valid(self, i: int) -> bool:
        if i not in self.damaged:
            return True
        data = self.damaged[i]
        try:
            return parse_header(data).crc_valid and len(data) >= RECORD_BATCH_OVERHEAD
        except Exception:  # noqa: BLE001 - any unreadable header is invalid
            return False


@dataclass
class DeletedSegment:
    """A segment renamed to ``*.deleted`` by a truncation (kept for ``file.delete.delay.ms``)."""

    segment: Segment
    deleted_ms: int
    snapshot: list[ProducerEntry] | None


@dataclass
class LogConfig:
    segment_bytes: int = 16384
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 65536
    flush_messages: int | None = None
    flush_ms: int | None = None

    @property
    def max_offset_index_entries(self) -> int:
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        return self.segment_index_bytes // 12


@dataclass
class RecoveryReport:
    """What ``LogLoader``/``LogSegment.recover`` did on a restart after an unclean shutdown."""

    recovered_from: int
    truncated_at: int | None = None
    reason: str | None = None
    deleted_segments: list[int] = field(default_factory=list)


class ReplicaLog:
    """The local log of one partition replica (``UnifiedLog`` + ``LocalLog`` + ``LeaderEpochFileCache``)."""

    def __init__(self, config: LogConfig, now_ms: int = 0) -> None:
        self.config = config
        self.segments: list[Segment] = [Segment(0, now_ms)]
        self.log_start_offset = 0
        self.recovery_point = 0
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        self.epoch_cache: list[tuple[int, int]] = []
        self.producers: dict[int, ProducerEntry] = {}
        self.snapshots: dict[int, list[ProducerEntry]] = {}
        self.deleted: list[DeletedSegment] = []

    # ------------------------------------------------------------------------------------ queries

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def leo(self) -> int:
        """Log end offset: the offset the next appended record gets."""
        for seg in reversed(self.segments):
            if seg.batches:
                return seg.batches[-1].next_offset
        return self.segments[-1].base_offset

    def all_batches(self) -> list[SimBatch]:
        return [b for seg in self.segments for b in seg.batches]

    def iter_entries(self):
        """(segment, list index, batch) for every complete batch."""
        for seg in self.segments:
            for i, b in enumerate(seg.batches):
                yield seg, i, b

    def _segment_for(self, offset: int) -> int:
        bases = [s.base_offset for s in self.segments]
        return max(0, bisect.bisect_right(bases, offset) - 1)

    def batch_at(self, offset: int) -> SimBatch | None:
        """The batch holding ``offset``, or None."""
        seg = self.segments[self._segment_for(offset)]
        i = bisect.bisect_right(seg.bases, offset) - 1
        if i >= 0 and seg.batches[i].last_offset >= offset:
            return seg.batches[i]
        return None

    def read(self, offset: int, max_bytes: int) -> list[SimBatch]:
        """Batches from the one containing ``offset`` on, at least one, up to ``max_bytes`` (a fetch)."""
        out: list[SimBatch] = []
        size = 0
        si = self._segment_for(offset)
        for seg in self.segments[si:]:
            start = max(0, bisect.bisect_right(seg.bases, offset) - 1)
            for b in seg.batches[start:]:
                if b.last_offset < offset:
                    continue
                if out and size + b.size > max_bytes:
                    return out
                out.append(b)
                size += b.size
        return out

    def latest_epoch(self) -> int:
        return self.epoch_cache[-1][0] if self.epoch_cache else -1

    def end_offset_for(self, requested: int) -> tuple[int, int]:
        """``LeaderEpochFileCache.endOffsetFor`` (spec §17.6, leader side)."""
        return end_offset_for(self.epoch_cache, self.leo, requested)

    # ------------------------------------------------------------------------------ leader epochs

    def assign_epoch(self, epoch: int, start_offset: int) -> bool:
        """``LeaderEpochFileCache.assign``: add (epoch, start offset), dropping conflicting tail entries."""
        if epoch < 0 or start_offset < 0:
            return False
        cache = self.epoch_cache
        if cache:
            last_e, last_s = cache[-1]
            if not (epoch != last_e or start_offset < last_s):
                return False
        while cache and (cache[-1][0] >= epoch or cache[-1][1] >= start_offset):
            cache.pop()
        cache.append((epoch, start_offset))
        return True

    def truncate_epochs_from_end(self, end_offset: int) -> None:
        """Remove cache entries whose start offset is >= ``end_offset`` (after a log truncation)."""
        while self.epoch_cache and self.epoch_cache[-1][1] >= end_offset:
            self.epoch_cache.pop()

    # ---------------------------------------------------------------------------------- appending

    def _should_roll(self, size: int, max_offset: int) -> bool:
        seg = self.active
        if seg.size == 0:
            return False
        cfg = self.config
        return (
            seg.size > cfg.segment_bytes - size
            or len(seg.index) >= cfg.max_offset_index_entries
            or len(seg.time_index) >= cfg.max_time_index_entries - 1
            or max_offset - seg.base_offset > 0x7FFFFFFF
        )

    def roll(self, now_ms: int) -> None:
        """Roll: the active segment becomes inactive (final time index entry, trimmed indexes), a new one
        starts at the log end offset, a producer snapshot is taken there and the log is flushed up to it."""
        old = self.active
        old.close_time_index()
        old.preallocated = False
        new_base = self.leo
        self.segments.append(Segment(new_base, now_ms))
        self.take_snapshot(new_base)
        self.flush(now_ms, new_base)

    def append(self, batches: list[SimBatch], now_ms: int) -> None:
        """One ``LogSegment.append`` of one or more batches (a produce request on the leader, a fetch
        response on a follower), with the index.interval.bytes rule of spec §7.2."""
        if not batches:
            return
        size = sum(b.size for b in batches)
        largest = batches[-1].last_offset
        if self._should_roll(size, largest):
            self.roll(now_ms)
        seg = self.active
        position = seg.size
        max_ts, shallow = NO_TIMESTAMP, -1
        for b in batches:
            if b.max_timestamp > max_ts:
                max_ts, shallow = b.max_timestamp, b.last_offset
        for b in batches:
            seg.batches.append(b)
            seg.bases.append(b.base_offset)
            seg.positions.append(seg.size)
            seg.size += b.size
        if max_ts > seg.max_ts:
            seg.max_ts, seg.offset_of_max_ts = max_ts, shallow
        if seg.bytes_since_last_index_entry > self.config.index_interval_bytes:
            seg.index.append((largest, position))
            seg.maybe_append_time_index(seg.max_ts, seg.offset_of_max_ts)
            seg.bytes_since_last_index_entry = 0
        seg.bytes_since_last_index_entry += size
        for b in batches:
            self.assign_epoch(b.epoch, b.base_offset)
            self._update_producer_state(b, seg)
        self.unflushed_messages += sum(b.count for b in batches)
        if self.config.flush_messages is not None and self.unflushed_messages >= self.config.flush_messages:
            self.flush(now_ms)

    def _update_producer_state(self, b: SimBatch, seg: Segment) -> None:
        if b.producer_id < 0 or b.control == "LEADER_CHANGE":
            return
        entry = self.producers.get(b.producer_id)
        if b.control in ("COMMIT", "ABORT"):
            if entry is None:
                entry = ProducerEntry(b.producer_id, b.producer_epoch, -1, -1, 0, NO_TIMESTAMP)
                self.producers[b.producer_id] = entry
            if b.control == "ABORT":
                first = (
                    entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else b.base_offset
                )
                others = [
                    p.current_txn_first_offset
                    for pid, p in self.producers.items()
                    if pid != b.producer_id and p.current_txn_first_offset >= 0
                ]
                lso = min(others) if others else b.last_offset + 1
                seg.txn_index.append(AbortedTxn(b.producer_id, first, b.last_offset, lso))
            entry.epoch = b.producer_epoch
            entry.coordinator_epoch = b.coordinator_epoch
            entry.current_txn_first_offset = -1
            return
        if entry is None:
            entry = ProducerEntry(b.producer_id, b.producer_epoch, -1, -1, 0, NO_TIMESTAMP)
            self.producers[b.producer_id] = entry
        entry.epoch = b.producer_epoch
        entry.last_sequence = b.last_sequence
        entry.last_offset = b.last_offset
        entry.offset_delta = b.last_offset - b.base_offset
        entry.timestamp = b.max_timestamp
        if b.transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = b.base_offset

    def take_snapshot(self, offset: int) -> None:
        """Persist producer state as of (exclusive) ``offset`` as ``<offset>.snapshot``."""
        self.snapshots[offset] = [
            e.copy() for e in sorted(self.producers.values(), key=lambda e: e.producer_id)
        ]

    def flush(self, now_ms: int, upto: int | None = None) -> None:
        """fsync up to ``upto`` (default: the log end offset); advances the recovery point."""
        target = self.leo if upto is None else upto
        if target > self.recovery_point:
            self.recovery_point = target
        if upto is None or upto >= self.leo:
            self.unflushed_messages = 0
        self.last_flush_ms = now_ms

    def maybe_time_flush(self, now_ms: int) -> None:
        if self.config.flush_ms is not None and now_ms - self.last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms)

    # --------------------------------------------------------------------------------- truncation

    def truncate_to(self, target: int, now_ms: int) -> None:
        """``UnifiedLog.truncateTo``: drop every batch at or above ``target`` (follower truncation).

        Segments with a base offset above the target are renamed ``.deleted``; the segment holding the
        target becomes the active one with its indexes re-expanded (§17.2).
        """
        if target >= self.leo:
            return
        keep, drop = [], []
        for seg in self.segments:
            (drop if seg.base_offset > target else keep).append(seg)
        if not keep:
            keep = [Segment(target, now_ms)]
        for seg in drop:
            snap = self.snapshots.pop(seg.base_offset, None)
            self.deleted.append(DeletedSegment(seg, now_ms, snap))
        self.segments = keep
        seg = self.active
        self._truncate_segment(seg, target)
        seg.preallocated = True
        for off in [o for o in self.snapshots if o > target]:
            del self.snapshots[off]
        self.truncate_epochs_from_end(self.leo)
        self.recovery_point = min(self.recovery_point, self.leo)
        self.rebuild_producer_state()

    @staticmethod
    def _truncate_segment(seg: Segment, target: int) -> None:
        """``LogSegment.truncateTo``: cut at the first batch whose last offset is >= ``target``."""
        n = len(seg.batches)
        cut = next((i for i in range(n) if seg.batches[i].last_offset >= target), n)
        if cut < n:
            del seg.batches[cut:]
            del seg.bases[cut:]
            del seg.positions[cut:]
            seg.damaged = {i: d for i, d in seg.damaged.items() if i < cut}
            seg.size = seg.positions[-1] + len(seg.batch_bytes(cut - 1)) if cut else 0
        seg.tail = b""
        seg.index = [(o, p) for o, p in seg.index if o < target]
        seg.time_index = [(t, o) for t, o in seg.time_index if o < target]
        seg.txn_index = [t for t in seg.txn_index if t.last_offset < target]
        seg.bytes_since_last_index_entry = 0
        # loadLargestTimestamp: the last time index entry, then a scan of the batches after it
        seg.max_ts, seg.offset_of_max_ts = seg.time_index[-1] if seg.time_index else (NO_TIMESTAMP, -1)
        for b in seg.batches:
            if b.max_timestamp > seg.max_ts:
                seg.max_ts, seg.offset_of_max_ts = b.max_timestamp, b.last_offset

    def rebuild_producer_state(self, upto: int | None = None) -> None:
        """Replay the batches below ``upto`` (default: all); Kafka loads the latest snapshot and replays
        from there, which gives the same state."""
        self.producers = {}
        scratch = Segment(0)
        for seg in self.segments:
            for i, b in enumerate(seg.batches):
                if upto is not None and b.base_offset >= upto:
                    return
                if seg.batch_valid(i):
                    self._update_producer_state(b, scratch)

    # ------------------------------------------------------------------------------ crash, restart

    def close(self) -> None:
        """Clean close: final time index entry on the active segment, indexes trimmed, flushed."""
        self.active.close_time_index()
        self.active.preallocated = False
        self.take_snapshot(self.leo)
        self.recovery_point = self.leo
        self.unflushed_messages = 0

    def lose_unflushed(self, torn_bytes: int | None, keep_index: bool) -> dict | None:
        """A machine crash: everything above the flushed point (the in-memory recovery point) is lost.

        ``torn_bytes`` keeps that many leading bytes of the first lost batch (a torn tail); with
        ``keep_index`` the surviving active segment keeps its index entries although their data did not
        reach the disk (the mmap'd index pages were written back, the log pages were not). Returns a
        description of the torn batch, if any.
        """
        target = self.recovery_point
        if target >= self.leo:
            return None
        first_lost = self.batch_at(target)
        self.segments = [s for s in self.segments if s.base_offset <= target] or [Segment(target)]
        seg = self.active
        saved_index, saved_time = list(seg.index), list(seg.time_index)
        self._truncate_segment(seg, target)
        if keep_index:
            seg.index, seg.time_index = saved_index, saved_time
        seg.preallocated = True
        for off in [o for o in self.snapshots if o > target]:
            del self.snapshots[off]
        if not torn_bytes or first_lost is None:
            return None
        n = max(1, min(torn_bytes, first_lost.size - 1))
        seg.tail = first_lost.data[:n]
        return {
            "position": seg.size,
            "bytes": n,
            "batch_base_offset": first_lost.base_offset,
            "batch_size": first_lost.size,
        }

    def tear_last_batch(self, keep_bytes: int) -> dict | None:
        """The last batch only partly reached the disk: keep its first ``keep_bytes`` bytes as a tail."""
        seg = self.active
        if not seg.batches:
            return None
        last = seg.batches[-1]
        self._truncate_segment(seg, last.base_offset)
        n = max(1, min(keep_bytes, last.size - 1))
        seg.tail = last.data[:n]
        self.recovery_point = min(self.recovery_point, self.leo)
        return {
            "position": seg.size,
            "bytes": n,
            "batch_base_offset": last.base_offset,
            "batch_size": last.size,
        }

    def recover(
        self, recovery_point: int, clean: bool, now_ms: int, disk_epoch_cache: list[tuple[int, int]]
    ) -> RecoveryReport:
        """``LogLoader.load`` after a restart (spec §17.3).

        Without a clean shutdown marker every segment from the one containing the checkpointed recovery
        point is re-read: torn tails and invalid batches are truncated (later segments deleted), indexes,
        the transaction index, epoch cache entries and producer state are rebuilt.
        """
        self.epoch_cache = list(disk_epoch_cache)
        report = RecoveryReport(recovered_from=recovery_point)
        if clean:
            self.recovery_point = self.leo
        else:
            start = self._segment_for(recovery_point)
            self.rebuild_producer_state(upto=self.segments[start].base_offset)
            for si in range(start, len(self.segments)):
                seg = self.segments[si]
                bad = self._recover_segment(seg)
                if bad is not None:
                    report.truncated_at, report.reason = bad
                    doomed = self.segments[si + 1 :]
                    self.segments = self.segments[: si + 1]
                    for d in doomed:
                        self.deleted.append(
                            DeletedSegment(d, now_ms, self.snapshots.pop(d.base_offset, None))
                        )
                        report.deleted_segments.append(d.base_offset)
                    break
                if si + 1 < len(self.segments):
                    self.take_snapshot(self.segments[si + 1].base_offset)
            self.recovery_point = min(recovery_point, self.leo)
        for seg in self.segments[:-1]:
            seg.preallocated = False
        self.active.preallocated = True
        self.truncate_epochs_from_end(self.leo)
        self._remove_stray_snapshots()
        self.rebuild_producer_state()
        if self.leo not in self.snapshots and self.leo > self.log_start_offset:
            self.take_snapshot(self.leo)
        return report

    def _remove_stray_snapshots(self) -> None:
        """``ProducerStateManager.removeStraySnapshots`` + ``truncateAndReload`` (spec §10.2)."""
        bases = {s.base_offset for s in self.segments}
        max_base = max(bases)
        leo = self.leo
        for off in [o for o in self.snapshots if o > leo or o <= self.log_start_offset]:
            del self.snapshots[off]
        strays = sorted(o for o in self.snapshots if o not in bases)
        keep = strays[-1] if strays and strays[-1] > max_base else None
        for off in strays:
            if off != keep:
                del self.snapshots[off]

    def _recover_segment(self, seg: Segment) -> tuple[int, str] | None:
        """``LogSegment.recover``: rebuild the indexes; return (offset, reason) if bytes were truncated."""
        seg.index, seg.time_index, seg.txn_index = [], [], []
        seg.max_ts, seg.offset_of_max_ts = NO_TIMESTAMP, -1
        valid_bytes = 0
        last_index_entry = 0
        bad: tuple[int, str] | None = None
        cut = len(seg.batches)
        for i, b in enumerate(seg.batches):
            if not seg.batch_valid(i):
                bad, cut = (b.base_offset, "corrupt"), i
                break
            if b.max_timestamp > seg.max_ts:
                seg.max_ts, seg.offset_of_max_ts = b.max_timestamp, b.last_offset
            if valid_bytes - last_index_entry > self.config.index_interval_bytes:
                seg.index.append((b.last_offset, valid_bytes))
                seg.maybe_append_time_index(seg.max_ts, seg.offset_of_max_ts)
                last_index_entry = valid_bytes
            valid_bytes += b.size
            if b.epoch >= 0 and b.epoch > self.latest_epoch():
                self.assign_epoch(b.epoch, b.base_offset)
            self._update_producer_state(b, seg)
        if cut < len(seg.batches) or seg.tail:
            if bad is None:
                bad = (seg.next_offset, "torn-tail")
            del seg.batches[cut:]
            del seg.bases[cut:]
            del seg.positions[cut:]
            seg.damaged = {k: v for k, v in seg.damaged.items() if k < cut}
            seg.size = valid_bytes
            seg.tail = b""
        seg.close_time_index()
        seg.bytes_since_last_index_entry = 0
        return bad


def end_offset_for(cache: list[tuple[int, int]], leo: int, requested: int) -> tuple[int, int]:
    """The leader side of OffsetsForLeaderEpoch (KIP-101/KIP-279, ``LeaderEpochFileCache.endOffsetFor``),
    spec §17.6: (epoch, end offset), (-1, -1) when undefined.

    Written again on purpose rather than imported from :mod:`auditor.kafka.epochs`: the simulator is the
    test oracle the auditor is checked against, so it must not share the code under test. The argument
    order is the same as ``auditor.kafka.epochs.end_offset_for(cache, leo, requested)``.
    """
    if requested < 0:
        return -1, -1
    if cache and requested == cache[-1][0]:
        return requested, leo
    higher = next((e for e in cache if e[0] > requested), None)
    if higher is None:
        return -1, -1
    floor = None
    for e in cache:
        if e[0] <= requested:
            floor = e
    if floor is None:
        return requested, higher[1]
    return floor[0], higher[1]
