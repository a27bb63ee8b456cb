"""Kafka's algorithms the ground truth needs, written independently of :mod:`auditor.kafka` (the simulator
is the oracle the auditor is checked against): where two replicas diverge, the leader-epoch cache Kafka
loads, and a follower's truncation point by OffsetsForLeaderEpoch."""

from __future__ import annotations

from auditor.simulate.log import end_offset_for


def first_divergence(a: list[tuple], b: list[tuple]) -> int | None:
    """First offset where two batch sequences disagree inside both logs (None: one is a prefix)."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][:4] == b[j][:4]:
            i += 1
            j += 1
            continue
        if a[i][1] < b[j][0]:  # a's batch ends before b's starts: b is missing it
            return a[i][0]
        if b[j][1] < a[i][0]:
            return b[j][0]
        return min(a[i][0], b[j][0])
    return None


def normalised_cache(cache: list[tuple[int, int]], leo: int) -> list[tuple[int, int]]:
    """The leader-epoch cache Kafka would load: monotonic repair, then entries at or beyond LEO dropped."""
    out: list[tuple[int, int]] = []
    for e, s in cache:
        while out and (out[-1][0] >= e or out[-1][1] >= s):
            out.pop()
        out.append((e, s))
    return [(e, s) for e, s in out if s < leo]


def epoch_truncation_offset(
    l_cache: list[tuple[int, int]], l_leo: int, f_cache: list[tuple[int, int]], f_leo: int, f_hw: int
) -> int:
    """The follower's truncation point by OffsetsForLeaderEpoch against a leader (spec §17.6); the oracle
    for ``auditor.kafka.epochs.follower_truncation``, written independently of it (see
    :func:`auditor.simulate.log.end_offset_for`)."""
    cache, leo = list(f_cache), f_leo
    requested = cache[-1][0] if cache else -1
    for _ in range(1000):
        if requested < 0:
            return min(f_hw, leo)
        e_l, o_l = end_offset_for(l_cache, l_leo, requested)
        if o_l < 0:
            return min(f_hw, leo)
        if e_l < 0:
            return min(o_l, leo)
        e_f, o_f = end_offset_for(cache, leo, e_l)
        if e_f < 0:
            return min(o_l, leo)
        if e_f != e_l:
            leo = min(o_f, leo)
            cache = [(e, s) for e, s in cache if s < leo]
            requested = e_f
            continue
        return min(o_l, o_f, leo)
    raise RuntimeError("OffsetsForLeaderEpoch did not converge")
