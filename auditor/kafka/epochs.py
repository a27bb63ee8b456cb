"""Kafka's leader-epoch cache algorithms, as plain functions (no Spark); the KRaft partition replay is
:func:`auditor.kafka.kraft.replay_partitions`.

* :func:`end_offset_for` is the leader's answer to OffsetsForLeaderEpoch
  (``LeaderEpochFileCache.endOffsetFor``);
* :func:`follower_truncation` is the follower's loop over those answers (spec §17.6): the offset Kafka's
  epoch-based truncation (KIP-101, KIP-279) would truncate a follower to;
* :func:`loaded_cache` applies the trimming Kafka does when it loads a log (entries at or beyond the log
  end offset and entries below the log start offset).

``NO_LEADER``, ``NO_LEADER_CHANGE`` and ``RECOVERING`` are the KRaft constants the replay uses
(``LeaderConstants.NO_LEADER``, ``NO_LEADER_CHANGE``; ``LeaderRecoveryState.RECOVERING``, KIP-704).
The simulator keeps an independent oracle of ``end_offset_for`` (``auditor.simulate.truth.oracles``) on
purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

UNDEFINED = -1
NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERING = 1

Cache = Sequence[tuple[int, int]]


def loaded_cache(entries: Iterable[tuple[int, int]], log_start: int, leo: int) -> list[tuple[int, int]]:
    """The cache after Kafka's load-time ``truncateFromEnd(LEO)`` and ``truncateFromStart(logStartOffset)``:
    entries starting at or after the log end offset are removed; entries wholly below the log start offset
    are removed and the first remaining one is moved up to start there."""
    kept = [(e, s) for e, s in entries if s < leo]
    if not kept:
        return kept
    # truncateFromStart: drop entries whose successor starts at or below the log start offset
    while len(kept) > 1 and kept[1][1] <= log_start:
        kept.pop(0)
    if kept[0][1] < log_start:
        kept[0] = (kept[0][0], log_start)
    return kept


def latest_epoch(cache: Cache) -> int:
    return cache[-1][0] if cache else UNDEFINED


def end_offset_for(cache: Cache, leo: int, requested: int) -> tuple[int, int]:
    """``endOffsetFor(requestedEpoch)``: (epoch, end offset) the leader answers, (-1, -1) when undefined."""
    if requested == UNDEFINED or not cache:
        return UNDEFINED, UNDEFINED
    if requested == latest_epoch(cache):
        return requested, leo
    higher = next(((e, s) for e, s in cache if e > requested), None)
    if higher is None:
        return UNDEFINED, UNDEFINED
    floor = None
    for e, s in cache:
        if e <= requested:
            floor = (e, s)
    if floor is None:
        return requested, higher[1]
    return floor[0], higher[1]


@dataclass
class Truncation:
    """Where Kafka's epoch-based truncation puts a follower, and the exchange that got there."""

    offset: int
    steps: list[dict] = field(default_factory=list)
    fallback: str | None = None  # "high-watermark" when the leader cannot answer (pre-KIP-101 fallback)


def follower_truncation(
    leader_cache: Cache, leader_leo: int, follower_cache: Cache, follower_leo: int, follower_hw: int
) -> Truncation:
    """The follower loop of ``AbstractFetcherThread`` (spec §17.6) run to completion."""
    steps: list[dict] = []
    asked = latest_epoch(follower_cache)
    for _ in range(len(follower_cache) + 2):
        e_l, o_l = end_offset_for(leader_cache, leader_leo, asked)
        step = {"asked": asked, "leader_epoch": e_l, "leader_end": o_l}
        steps.append(step)
        if o_l == UNDEFINED:
            return Truncation(min(follower_hw, follower_leo), steps, "high-watermark")
        if e_l == UNDEFINED:
            return Truncation(min(o_l, follower_leo), steps)
        e_f, o_f = end_offset_for(follower_cache, follower_leo, e_l)
        step.update(follower_epoch=e_f, follower_end=o_f)
        if e_f == UNDEFINED:
            return Truncation(min(o_l, follower_leo), steps)
        if e_f != e_l:
            # the follower never saw e_l: truncate to the end of its floor epoch and ask again (KIP-279)
            follower_leo = min(o_f, follower_leo)
            follower_cache = [(e, s) for e, s in follower_cache if s < follower_leo]
            step["truncated_to"] = follower_leo
            asked = e_f
            continue
        return Truncation(min(o_l, o_f, follower_leo), steps)
    return Truncation(min(follower_hw, follower_leo), steps, "no-convergence")


def epoch_at(cache: Cache, offset: int) -> int | None:
    """The leader epoch whose range in a leader-epoch cache contains ``offset`` (the last entry starting at
    or below it; ``LeaderEpochFileCache.epochForOffset``), None below the first entry."""
    epoch = None
    for e, s in cache:
        if s <= offset:
            epoch = e
    return epoch
