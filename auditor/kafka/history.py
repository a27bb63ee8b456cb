"""Kafka semantics the history checks (KA8xx) share, as plain functions over leader-epoch caches seen at two
capture times (no pandas, no Spark).

* :func:`epoch_at` is the epoch a leader-epoch-checkpoint assigns to an offset (the entry with the largest
  start offset at or below it; offsets below the first entry are unknown: after ``truncateFromStart`` the
  first entry starts at the log start offset, not where its epoch began);
* :func:`first_disagreement` finds the first offset two caches assign to different epochs, within the
  offsets both know and both replicas had committed (below both high watermarks);
* :func:`cache_rewrite` tells Kafka's own changes of a cache between two captures (``truncateFromStart``
  after the log start offset moved, ``truncateFromEnd`` of an uncommitted tail, new epochs appended at or
  above the high watermark) from a rewrite of committed history: an offset below the high watermark whose
  epoch changed (spec §11.3, KIP-101, KIP-279);
* :func:`restart_evidence` says why two captures of a broker have a restart between them;
* :func:`order_doubts` says whether two consecutive captures of a broker can be trusted to be in time order.
"""

from __future__ import annotations

from collections.abc import Sequence

from auditor.kafka.epochs import loaded_cache

Cache = Sequence[tuple[int, int]]
"""A leader-epoch-checkpoint's entries in file order: (epoch, start offset)."""

_NO_END = 2**63 - 1


def epoch_at(cache: Cache, offset: int) -> int | None:
    """The leader epoch ``cache`` assigns to ``offset``; None below its first entry (unknown)."""
    found = None
    for epoch, start in cache:
        if start > offset:
            break
        found = epoch
    return found


def truncate_from_start(cache: Cache, log_start: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.truncateFromStart(logStartOffset)``: entries wholly below the new log start
    offset are dropped and the last of them moves up to start there (spec §11.3)."""
    return loaded_cache(cache, log_start, _NO_END)


def first_disagreement(a: Cache, b: Cache, below: int) -> tuple[int, int, int] | None:
    """The first offset ``o`` below ``below`` (the lower of the two high watermarks) that both caches know
    (at or above both first entries) and assign to different epochs: ``(o, epoch by a, epoch by b)``.

    Two epoch functions first differ at the lower bound of the common range or at a start offset of one of
    the caches, so only those offsets are tried."""
    if not a or not b:
        return None
    low = max(a[0][1], b[0][1])
    points = sorted({low} | {s for _e, s in a if s > low} | {s for _e, s in b if s > low})
    for o in points:
        if o >= below:
            return None
        ea, eb = epoch_at(a, o), epoch_at(b, o)
        if ea != eb and ea is not None and eb is not None:
            return o, ea, eb
    return None


def cache_rewrite(before: Cache, after: Cache, high_watermark: int | None) -> dict | None:
    """How ``after`` rewrote the committed part of ``before``, or None.

    A rewrite is an offset below the earlier capture's high watermark, known to both caches, whose leader
    epoch changed: an entry starting below the high watermark removed or moved, or a new epoch starting
    below it (the log was truncated under committed data: an unclean election). Kafka's own changes never
    do that: ``truncateFromStart`` (front entries dropped, the first entry moved up to the new log start
    offset: offsets below it become unknown), ``truncateFromEnd`` of entries starting at or above the high
    watermark (an uncommitted tail a follower truncated, KIP-101), new epochs appended at or above it (a
    clean election starts the new epoch at the new leader's log end offset, never below a committed offset),
    a cache cleared and restarted at or above it (``truncateFullyAndStartAt``). Without a high watermark at
    the earlier capture nothing was known to be committed.

    Returns ``{"offset", "before", "after", "removed", "added"}``: the first such offset, its epoch by each
    cache, and the entries of each cache the other lacks.
    """
    if high_watermark is None or not before or not after:
        return None
    hit = first_disagreement(before, after, high_watermark)
    if hit is None:
        return None
    offset, epoch_before, epoch_after = hit
    old, new = {tuple(e) for e in before}, {tuple(e) for e in after}
    return {
        "offset": offset,
        "before": epoch_before,
        "after": epoch_after,
        "removed": [tuple(e) for e in before if tuple(e) not in new],
        "added": [tuple(e) for e in after if tuple(e) not in old],
    }


def restart_evidence(
    clean_before: bool | None,
    clean_after: bool | None,
    start_before: int | None,
    start_after: int | None,
    formatted: bool = False,
) -> str | None:
    """Why the broker restarted between two captures, or None: a capture taken while it was stopped
    (``.kafka_cleanshutdown`` present, spec §12.3), a different broker start time, or a log dir of the
    broker whose directory.id changed (``formatted``: the log dir was formatted again or replaced, which
    a running broker does not do: its meta.properties are written at format time and loaded at startup,
    spec §12.2)."""
    if clean_before:
        return "the earlier capture was taken after a clean shutdown"
    if clean_after:
        return "the later capture was taken after a clean shutdown"
    if start_before is not None and start_after is not None and start_before != start_after:
        return "the broker start time changed"
    if formatted:
        return "a log dir of the broker was formatted again (its directory.id changed)"
    return None


MIN_CAPTURE_INTERVAL_MS = 60_000
"""Two captures of one broker closer than this are not two nights of a collection: Kafka checkpoints the
high watermarks every 5 s and the recovery points and log start offsets every 60 s
(replica.high.watermark.checkpoint.interval.ms, log.flush.offset.checkpoint.interval.ms,
log.flush.start.offset.checkpoint.interval.ms), so captures less than a minute apart are copies of one
capture (or of two) whose times say when they were copied, not which is older."""
WHOLE_REVERSAL_PARTITIONS = 2
"""Partitions of a broker that must all have gone back, nothing going forward, for the content of two
captures with trustworthy times to overrule their order: one partition going back is what a truncation
looks like (a follower of an unclean leader), every partition of a broker going back at once with no
restart and no new leader epoch is not something a running broker does."""


def order_doubts(
    *,
    unreliable_source: bool,
    interval_ms: int,
    back: int,
    forward: int,
    reverse_rewrites: int,
    restart: str | None,
) -> tuple[list[str], bool]:
    """Why the time order of two consecutive captures of a broker is in doubt, and whether what went back
    between them is explained by the other order.

    ``back``/``forward``: partitions whose high watermark or log start offset (the same incarnation of the
    topic and the same log) is lower/higher at the later capture; ``reverse_rewrites``: partitions whose
    leader-epoch-checkpoint, read from the later capture to the earlier one, would rewrite committed history
    (:func:`cache_rewrite`); ``restart``: :func:`restart_evidence` between them.

    Reasons: ``mtime`` (a time from file modification times or the ingest: it may be the time of a copy),
    ``interval`` (less than :data:`MIN_CAPTURE_INTERVAL_MS` apart), ``content`` (trustworthy times, but
    at least :data:`WHOLE_REVERSAL_PARTITIONS` partitions went back, none forward, the caches are consistent
    in the other order and the broker did not restart: the later capture holds the older state).

    The reverse order explains the values that went back when they all went back (none forward) and the
    caches read in the other order are Kafka's own changes: then the captures may simply be in the wrong
    order, and a value going back is no evidence of truncation. When values went both ways something went
    back whichever order is right, and the regressions stand.
    """
    reversed_ok = back > 0 and forward == 0 and reverse_rewrites == 0
    reasons = []
    if unreliable_source:
        reasons.append("mtime")
    if interval_ms < MIN_CAPTURE_INTERVAL_MS:
        reasons.append("interval")
    if not reasons and reversed_ok and back >= WHOLE_REVERSAL_PARTITIONS and restart is None:
        reasons.append("content")
    return reasons, bool(reasons) and reversed_ok
