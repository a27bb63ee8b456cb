"""Cases of ``auditor/rules/index/time_index.py`` (KA211-KA216): time-index entries of a bad size,
decreasing, with a timestamp or offset the log does not have, stale, or a rolled segment without its
roll-time entry; a preallocated active time index is benign."""

from __future__ import annotations

from parsers.indexes import build_time_index
from tests.rules.builder import Part, append, built
from tests.rules.harness import fire, silent
from tests.rules.index.cases_offset_index import preallocated_active


def rewrite_timeindex(p: Part, seg: int, entries: list[tuple[int, int]], **kw) -> None:
    p.seg_path(seg, ".timeindex").write_bytes(build_time_index(entries, p.bases[seg], **kw))


@fire("KA211")
def timeindex_odd_size(tmp, mp):
    ld, p = built(tmp)
    append(p.seg_path(0, ".timeindex"), b"\x01" * 5)
    return [ld.root]


@fire("KA212")
def timeindex_decreasing(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_timeindex(p, 0, [(w[2].max_ts, w[2].last_offset), (w[1].max_ts, w[3].last_offset)])
    return [ld.root]


@fire("KA213")
def timeindex_wrong_ts(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_timeindex(p, 0, [(w[2].max_ts + 1, w[2].last_offset), (w[4].max_ts, w[4].last_offset)])
    return [ld.root]


@fire("KA214")
def timeindex_offset_inside_batch(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_timeindex(p, 0, [(w[2].max_ts, w[2].last_offset - 1), (w[4].max_ts, w[4].last_offset)])
    return [ld.root]


@fire("KA215")
def timeindex_stale(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_timeindex(p, 1, [(w[-1].max_ts, w[-1].last_offset), (w[-1].max_ts + 50, w[-1].last_offset + 7)])
    return [ld.root]


@silent("KA215", "KA205", "KA213", "KA214")
def timeindex_preallocated(tmp, mp):
    return preallocated_active(tmp, mp)


@fire("KA216")
def timeindex_missing_roll_entry(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_timeindex(p, 0, [(w[2].max_ts, w[2].last_offset)])
    return [ld.root]
