"""Cases of ``auditor/rules/index/offset_index.py`` (KA201-KA208): offset-index entries out of order,
outside the segment, off a batch boundary or stale, garbage in the tail, a rolled index not trimmed, a
missing index; a follower's multi-batch append and a preallocated active index are benign."""

from __future__ import annotations

from parsers.indexes import build_offset_index
from tests.rules.benign import BASELINE_CODES
from tests.rules.builder import Part, append, built, put, standard
from tests.rules.harness import fire, silent


def rewrite_index(p: Part, seg: int, entries: list[tuple[int, int]], **kw) -> None:
    p.seg_path(seg, ".index").write_bytes(build_offset_index(entries, p.bases[seg], **kw))


@fire("KA201")
def index_odd_size(tmp, mp):
    ld, p = built(tmp)
    append(p.seg_path(0, ".index"), b"\x00\x01\x02")
    return [ld.root]


@fire("KA202")
def index_disorder(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_index(p, 0, [(w[3].last_offset, w[3].position), (w[2].last_offset, w[2].position)])
    return [ld.root]


@fire("KA203")
def index_outside(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_index(p, 0, [(w[2].last_offset, w[2].position), (20, w[3].position)])
    return [ld.root]


@fire("KA204")
def index_not_boundary(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_index(p, 0, [(w[2].last_offset, w[2].position + 10)])
    return [ld.root]


@fire("KA204")
def index_points_past(tmp, mp):
    ld, p = built(tmp)
    w = p.written
    rewrite_index(p, 0, [(w[1].last_offset, w[3].position)])
    return [ld.root]


@silent("KA204", "KA202", "KA203", "KA205")
def follower_multi_batch_append(tmp, mp):
    """A follower appended batches 2 and 3 together: the entry has batch 3's last offset, batch 2's
    position."""
    ld, p = built(tmp)
    w = p.written
    rewrite_index(p, 0, [(w[3].last_offset, w[2].position)])
    return [ld.root]


@fire("KA205")
def index_stale(tmp, mp):
    ld, p = built(tmp)
    size = p.seg_path(1).stat().st_size
    w = p.written
    rewrite_index(p, 1, [(w[-1].last_offset, w[-1].position), (w[-1].last_offset + 9, size + 200)])
    return [ld.root]


@silent(*[c for c in BASELINE_CODES if c not in ("KA505",)])
def preallocated_active(tmp, mp):
    """An active segment's .index/.timeindex still at their preallocated size with a zero tail."""
    ld, p = standard(tmp / "broker-1")
    p.preallocate_active = 4096
    ld.write()
    return [ld.root]


@fire("KA206")
def index_garbage(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    p.preallocate_active = 4096
    ld.write()
    put(p.seg_path(1, ".index"), 2000, ">b", 7)
    return [ld.root]


@fire("KA207")
def rolled_not_trimmed(tmp, mp):
    ld, p = built(tmp)
    w = [x for x in p.written if x.segment == 0]
    rewrite_index(p, 0, [(w[3].last_offset, w[3].position)], preallocate_to=4096)
    return [ld.root]


@silent("KA207")
def active_not_trimmed(tmp, mp):
    return preallocated_active(tmp, mp)


@fire("KA208")
def index_missing(tmp, mp):
    ld, p = built(tmp)
    p.seg_path(0, ".index").unlink()
    return [ld.root]


@fire("KA208")
def index_under_a_short_name(tmp, mp):
    """``LogSegment.sanityCheck`` looks for the 20-digit name only: ``15.index`` is not the index of
    ``00000000000000000015.log``."""
    ld, p = built(tmp)
    index = p.seg_path(1, ".index")
    index.rename(index.with_name(f"{p.bases[1]}.index"))
    return [ld.root]
