"""Kafka's log loading as pure functions over per-segment summaries (spec §17.1, §17.3).

``scan`` (``auditor.observe.context.PartitionContext.finalize``) and ``audit``'s extraction
(``auditor.observe.extract``) both call :class:`LogRecovery`, so the log start offset, the log end offset
Kafka loads and what recovery truncates are computed once:

* recovery runs when the log dir has no ``.kafka_cleanshutdown`` (``LogLoader.load``: ``hadCleanShutdown``),
  and always for the KRaft metadata log: ``KafkaMetadataLog.apply`` creates its ``UnifiedLog`` with
  ``recoveryPoint = 0`` and ``lastShutdownClean = false`` (spec §14.1);
* it re-reads every segment from the one containing the recovery point (``LogLoader.recoverLog``:
  ``logSegments(recoveryPoint, Long.MaxValue)``, the floor segment included) in order; the first segment
  whose valid prefix (:mod:`auditor.kafka.batches`) ends before its size is truncated there
  (``LogSegment.recover`` -> ``truncateTo(validBytes)``) and every later segment is deleted ("Deleting
  segments as part of log recovery");
* the log end offset is the next offset of the last segment left (``LogSegment.readNextOffset``; an empty one:
  its base offset); the log start offset is ``max(log-start-offset-checkpoint, first segment base)``
  (``LogLoader.load``).

Before that, with or without a clean shutdown, ``LogLoader.loadSegmentFiles`` recovers at load every segment
whose offset index file is missing (``LogSegment.sanityCheck`` throws ``NoSuchFileException``: "Could not
find offset index file ..., recovering segment and rebuilding index files"): ``recoverSegment`` ->
``LogSegment.recover`` cuts that segment at its valid prefix and rebuilds its indexes, and deletes no other
segment (:attr:`LogRecovery.load_truncations`). Such a segment, re-read by ``recoverLog`` afterwards, has
nothing left to cut, so it never makes ``recoverLog`` delete the segments after it. Which segments lack
their index comes from the log dir's listing (``LogRecovery.unindexed``). The same load-time recovery
follows a ``.txnindex`` that fails ``TransactionIndex.sanityCheck``, the one index check ``sanityCheck``
still runs (an aborted transaction whose last offset is below the segment's base offset:
``CorruptIndexException``, "Found a corrupted index file ..., recovering segment and rebuilding index
files"; ``LogRecovery.txn_index_corrupt``, from the index's contents). A 4.0 broker runs no load-time sanity
check of the offset and time indexes ("Sanity checks for time index and offset index are skipped").

A segment that could not be read at all is summarised with no batches and size 0: recovery neither cuts nor
extends it (Kafka would take the log dir offline on the I/O error, KIP-112).

What Kafka trusts without re-validating (:meth:`LogRecovery.trusts`, :meth:`LogRecovery.trusted_below_in`)
tells the extraction which batches it may read header by header: with ``.kafka_cleanshutdown``,
``LogLoader.recoverLog`` re-validates no segment at all, and only the segments recovered at load (no offset
index, or a corrupt transaction index) are re-read (never trusted); the auditor still validates, as a
margin, the batches from the recovery point on (in the segment containing it and those after it: what a log
holds past its recovery point was never known to be flushed).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, fields

from auditor.text import camel

ALL_OFFSETS = 2**63
"""Above every offset (:meth:`LogRecovery.trusted_below_in` of a segment whose batches are all trusted)."""


@dataclass(frozen=True)
class SegmentSummary:
    """One ``.log`` segment as recovery sees it: ``valid_end`` is where its valid prefix ends
    (:meth:`auditor.kafka.batches.ValidPrefix.valid_end`), ``recovered_next_offset`` the next offset after the
    last batch of that prefix and ``next_offset_raw`` after the last complete entry (None: no batch)."""

    name: str
    base_offset: int
    size: int
    valid_end: int
    recovered_next_offset: int | None
    next_offset_raw: int | None

    @property
    def truncate_bytes(self) -> int:
        """Bytes recovery cuts from this segment when it re-reads it."""
        return max(0, self.size - self.valid_end)


@dataclass(frozen=True)
class RecoveryTruncation:
    """What ``recoverLog`` cuts: ``segment`` (file name) at byte ``position`` (``bytes`` bytes), deleting the
    later segments (base offsets); ``leo`` is the log end offset left."""

    segment: str
    base_offset: int
    position: int
    bytes: int
    deleted_segments: list[int]
    leo: int

    def to_dict(self) -> dict:
        """Its fields but ``base_offset`` (named by ``segment``), camelCase."""
        return {camel(f.name): getattr(self, f.name) for f in fields(self) if f.name != "base_offset"}


@dataclass(frozen=True)
class LoadTruncation:
    """What ``LogLoader.loadSegmentFiles`` cuts from a segment it recovers at load (:data:`LOAD_REASONS`):
    ``segment`` (file name) at byte ``position`` (``bytes`` bytes), the later segments kept; ``next_offset``
    is the segment's next offset left (``LogSegment.readNextOffset``); ``reason`` why Kafka recovers it."""

    segment: str
    base_offset: int
    position: int
    bytes: int
    next_offset: int
    reason: str = "offset index missing"

    def to_dict(self) -> dict:
        """Its fields but ``base_offset`` (named by ``segment``), camelCase."""
        return {camel(f.name): getattr(self, f.name) for f in fields(self) if f.name != "base_offset"}


OFFSET_INDEX_MISSING = "offset index missing"
TXN_INDEX_CORRUPT = "transaction index corrupt"
LOAD_REASONS = {
    OFFSET_INDEX_MISSING: "offset index is missing",
    TXN_INDEX_CORRUPT: "transaction index fails Kafka's sanity check",
}
"""Why ``LogLoader.loadSegmentFiles`` recovers a segment (``LogSegment.sanityCheck``): the reason's name (the
``reason`` of :class:`LoadTruncation`) and its wording in findings, after "the segment's"."""


def will_recover(clean_shutdown: bool, metadata_log: bool) -> bool:
    """Kafka's next start runs log recovery on this log (no clean-shutdown marker, or the metadata log)."""
    return metadata_log or not clean_shutdown


def recovery_floor(bases: Sequence[int], recovery_point: int | None, metadata_log: bool) -> int:
    """Base offset of the first segment recovery re-reads: the one containing the recovery point (the KRaft
    metadata log: offset 0); the first segment when the recovery point is below all of them."""
    rp = 0 if metadata_log else (recovery_point or 0)
    below = [b for b in bases if b <= rp]
    if below:
        return below[-1]
    return bases[0] if bases else 0


def log_start_offset(checkpoint: int | None, first_base: int | None) -> int:
    """``max(log-start-offset-checkpoint, base offset of the first segment)`` (a missing one is ignored)."""
    return max([x for x in (checkpoint, first_base) if x is not None], default=0)


def _next_offset(seg: SegmentSummary, recovered: bool) -> int:
    value = seg.recovered_next_offset if recovered else seg.next_offset_raw
    return value if value is not None else seg.base_offset


@dataclass
class LogRecovery:
    """Recovery of one replica's log, fed its segments in base-offset order (so extraction can stream).

    After the last :meth:`add`: ``leo_on_disk`` is the log end offset of the files as they are, ``leo`` the
    one Kafka loads (after the truncations), ``load_truncations`` what ``loadSegmentFiles`` cuts from the
    segments it recovers at load, ``truncation`` what ``recoverLog`` cuts (None: none).
    """

    bases: Sequence[int]
    clean_shutdown: bool
    recovery_point: int | None
    metadata_log: bool = False
    log_start_checkpoint: int | None = None
    unindexed: Collection[int] = frozenset()
    """Base offsets of the segments whose offset index file is missing (from the log dir's listing,
    :func:`auditor.layout.inventory.unindexed_segments`): recovered at load."""
    txn_index_corrupt: Collection[int] = frozenset()
    """Base offsets of the segments whose ``.txnindex`` fails ``TransactionIndex.sanityCheck``
    (:func:`auditor.observe.indexes.txn_index_corrupt`): recovered at load."""
    runs: bool = field(init=False)
    floor: int | None = field(init=False)
    truncation: RecoveryTruncation | None = field(default=None, init=False)
    load_truncations: dict[int, LoadTruncation] = field(default_factory=dict, init=False)
    """By base offset, in segment order."""
    leo: int = field(init=False)
    leo_on_disk: int = field(init=False)
    trusted_below: int | None = field(init=False)
    """Base offset below which segments are trusted (:meth:`trusts`); None: none is."""

    def __post_init__(self) -> None:
        self.unindexed = frozenset(self.unindexed)
        self.txn_index_corrupt = frozenset(self.txn_index_corrupt)
        self.runs = will_recover(self.clean_shutdown, self.metadata_log) and bool(self.bases)
        self.floor = recovery_floor(self.bases, self.recovery_point, self.metadata_log) if self.runs else None
        self.leo = self.leo_on_disk = self.log_start
        flushed = self.clean_shutdown and not self.metadata_log and bool(self.bases)
        self.trusted_below = recovery_floor(self.bases, self.recovery_point, False) if flushed else None

    @property
    def log_start(self) -> int:
        return log_start_offset(self.log_start_checkpoint, self.bases[0] if self.bases else None)

    @property
    def recovered_segments(self) -> list[int]:
        """Base offsets of the segments ``recoverLog`` re-reads."""
        return [b for b in self.bases if self.floor is not None and b >= self.floor]

    def recovers_at_load(self, base_offset: int) -> bool:
        """``LogLoader.loadSegmentFiles`` recovers the segment at ``base_offset``: its offset index is missing
        or its transaction index fails its sanity check (whether or not the log dir was shut down cleanly)."""
        return self.load_reason(base_offset) is not None

    def load_reason(self, base_offset: int) -> str | None:
        """Why ``LogLoader.loadSegmentFiles`` recovers the segment at ``base_offset`` (:data:`LOAD_REASONS`;
        ``sanityCheck`` looks for the offset index first), None when it does not."""
        if base_offset in self.unindexed:
            return OFFSET_INDEX_MISSING
        if base_offset in self.txn_index_corrupt:
            return TXN_INDEX_CORRUPT
        return None

    def recovers(self, base_offset: int) -> bool:
        """Kafka's next load re-reads (and rebuilds the indexes of) the segment at ``base_offset``, cutting it
        at its first invalid entry: ``recoverLog`` from the recovery point, or ``loadSegmentFiles``
        (:meth:`recovers_at_load`)."""
        return (self.floor is not None and base_offset >= self.floor) or self.recovers_at_load(base_offset)

    def trusts(self, base_offset: int) -> bool:
        """Kafka's next load takes the batches of the segment at ``base_offset`` as they are: the log dir was
        shut down cleanly, the segment ends at or below the recovery point (it lies below the segment
        containing it: flushed, ``LogLoader.recoverLog`` skips it) and is not recovered at load
        (:meth:`recovers_at_load`). Never for the metadata log (always recovered) nor when the recovery point
        is unknown."""
        return (
            self.trusted_below is not None
            and base_offset < self.trusted_below
            and not self.recovers_at_load(base_offset)
        )

    def trusted_below_in(self, base_offset: int) -> int | None:
        """The offset below which Kafka's next load takes the batches of the segment at ``base_offset`` as
        they are (a batch whose last offset is below it), None when it takes none so: every batch of a
        segment it :meth:`trusts` (``ALL_OFFSETS``); in the segment holding the recovery point of a cleanly
        shut down log, the batches below the recovery point (flushed; with the clean shutdown marker
        ``LogLoader.recoverLog`` re-reads nothing); none after it, nor in a segment recovered at load."""
        if self.recovers_at_load(base_offset):
            return None
        if self.trusts(base_offset):
            return ALL_OFFSETS
        if base_offset == self.trusted_below:
            return self.recovery_point
        return None

    def keeps(self, base_offset: int, position: int) -> bool:
        """The entry at byte ``position`` of the segment at ``base_offset`` (added already) is part of the log
        Kafka loads: cut neither at load nor by ``recoverLog``, nor in a segment ``recoverLog`` deletes."""
        at_load = self.load_truncations.get(base_offset)
        if at_load is not None and position >= at_load.position:
            return False
        t = self.truncation
        if t is None or base_offset < t.base_offset:
            return True
        return base_offset == t.base_offset and position < t.position

    @property
    def cuts(self) -> bool:
        """Kafka's next load cuts something from this log (at load or in ``recoverLog``)."""
        return self.truncation is not None or bool(self.load_truncations)

    def add(self, seg: SegmentSummary) -> int | None:
        """Account for the next segment; returns the byte position from which its entries are not in the
        loaded log (0: deleted by recovery), None when it is kept whole. A segment recovered at load is cut
        there and the later ones kept: ``recoverLog``, re-reading it afterwards, finds nothing to cut."""
        self.leo_on_disk = _next_offset(seg, recovered=False)
        if self.truncation is not None:
            self.truncation.deleted_segments.append(seg.base_offset)
            return 0
        if not self.recovers(seg.base_offset):
            self.leo = self.leo_on_disk
            return None
        self.leo = _next_offset(seg, recovered=True)
        if not seg.truncate_bytes:
            return None
        cut = seg.valid_end
        reason = self.load_reason(seg.base_offset)
        if reason is not None:
            cut_at_load = LoadTruncation(seg.name, seg.base_offset, cut, seg.truncate_bytes, self.leo, reason)
            self.load_truncations[seg.base_offset] = cut_at_load
            return cut
        self.truncation = RecoveryTruncation(seg.name, seg.base_offset, cut, seg.truncate_bytes, [], self.leo)
        return cut


def recover(
    segments: Iterable[SegmentSummary],
    *,
    clean_shutdown: bool,
    recovery_point: int | None,
    metadata_log: bool = False,
    log_start_checkpoint: int | None = None,
    unindexed: Collection[int] = frozenset(),
    txn_index_corrupt: Collection[int] = frozenset(),
) -> LogRecovery:
    """:class:`LogRecovery` of a whole log at once."""
    segs = list(segments)
    bases = [s.base_offset for s in segs]
    state = LogRecovery(
        bases,
        clean_shutdown,
        recovery_point,
        metadata_log,
        log_start_checkpoint,
        unindexed=unindexed,
        txn_index_corrupt=txn_index_corrupt,
    )
    for seg in segs:
        state.add(seg)
    return state
