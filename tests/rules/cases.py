"""Fixtures per rule: cases that must make a code fire and cases that must leave it silent.

Each case is ``fn(tmp_path, monkeypatch) -> list of log dirs``; ``FIRE[code]`` and ``SILENT[code]`` list them.
The baseline (``standard``) is a clean log dir (clean shutdown, checkpoints at the log end offset, KRaft
metadata with the topic); the benign variants are the shapes Kafka produces that a naive checker would flag:
preallocated active indexes, multi-batch follower appends, trailing leader-epoch entries at the log end,
compacted gaps and empty segments, ``.deleted`` files, copies of one log dir.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import segment_file_name
from parsers.indexes import build_offset_index, build_time_index, build_txn_index
from parsers.producer_snapshot import build_producer_snapshot
from tests.rules.builder import T0, Batch, LogDir, Part, append, flip, put, standard, topic_id, truncate

Case = Callable[[Path, object], list[Path]]
FIRE: dict[str, list[Case]] = {}
SILENT: dict[str, list[Case]] = {}


def fire(*codes: str):
    def wrap(fn: Case) -> Case:
        for code in codes:
            FIRE.setdefault(code, []).append(fn)
        return fn

    return wrap


def silent(*codes: str):
    def wrap(fn: Case) -> Case:
        for code in codes:
            SILENT.setdefault(code, []).append(fn)
        return fn

    return wrap


def built(tmp: Path, **kw) -> tuple[LogDir, Part]:
    ld, p = standard(tmp / "broker-1", **kw)
    ld.write()
    return ld, p


def txn_part(tmp: Path) -> tuple[LogDir, Part]:
    """A transactional partition: a committed and an aborted transaction with their markers."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="COMMIT", producer_id=7))
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="ABORT", producer_id=7))
    p.data(1)
    ld.write()
    return ld, p


ALL_CODES = [
    "KA001",
    "KA002",
    "KA101",
    "KA102",
    "KA103",
    "KA104",
    "KA105",
    "KA106",
    "KA107",
    "KA108",
    "KA109",
    "KA110",
    "KA201",
    "KA202",
    "KA203",
    "KA204",
    "KA205",
    "KA206",
    "KA207",
    "KA208",
    "KA211",
    "KA212",
    "KA213",
    "KA214",
    "KA215",
    "KA216",
    "KA221",
    "KA222",
    "KA223",
    "KA231",
    "KA232",
    "KA233",
    "KA301",
    "KA302",
    "KA303",
    "KA304",
    "KA305",
    "KA306",
    "KA307",
    "KA311",
    "KA312",
    "KA313",
    "KA314",
    "KA401",
    "KA402",
    "KA403",
    "KA404",
    "KA405",
    "KA406",
    "KA407",
    "KA408",
    "KA501",
    "KA502",
    "KA503",
    "KA504",
    "KA505",
    "KA506",
    "KA507",
    "KA508",
    "KA509",
    "KA510",
    "KA511",
    "KA512",
    "KA513",
    "KA514",
]


@silent(*ALL_CODES)
def baseline(tmp, mp):
    return [built(tmp)[0].root]


@silent(*[c for c in ALL_CODES if c not in ("KA505",)])
def txn_baseline(tmp, mp):
    return [txn_part(tmp)[0].root]


# ------------------------------------------------------------------------------------------ KA0xx


@fire("KA001")
def dangling_segment(tmp, mp):
    ld, p = built(tmp)
    os.symlink(tmp / "nowhere", p.path / segment_file_name(999, ".log"))
    return [ld.root]


@fire("KA002")
def crashing_check(tmp, mp):
    from auditor.rules.registry import REGISTRY, load_rules

    load_rules()

    def boom(part):
        raise RuntimeError("boom")
        yield  # pragma: no cover

    mp.setitem(REGISTRY, "KA106", dataclasses.replace(REGISTRY["KA106"], check=boom))
    return [built(tmp)[0].root]


# ------------------------------------------------------------------------------------------ KA1xx


@fire("KA101")
def crc_flip(tmp, mp):
    ld, p = built(tmp)
    w = p.written[2]
    flip(p.seg_path(0), w.position + 70)
    return [ld.root]


@silent("KA101", "KA102", "KA103")
@fire("KA107")
def epoch_flip(tmp, mp):
    """partitionLeaderEpoch is outside the CRC: a flipped epoch passes the CRC check."""
    ld, p = built(tmp)
    w = p.written[8]  # segment 1, epoch 0 -> 64
    flip(p.seg_path(1), w.position + 12 + 3 - 0, 0x40)
    return [ld.root]


@fire("KA102", "KA401")
def torn_last_batch(tmp, mp):
    ld, p = built(tmp)
    log = p.seg_path(1)
    truncate(log, log.stat().st_size - 10)
    return [ld.root]


@silent("KA102", "KA103")
@fire("KA401")
def cut_at_boundary(tmp, mp):
    ld, p = built(tmp)
    w = p.written[-1]
    truncate(p.seg_path(1), w.position)
    return [ld.root]


@fire("KA103")
def zero_tail(tmp, mp):
    ld, p = built(tmp)
    append(p.seg_path(1), bytes(40))
    return [ld.root]


@fire("KA103")
def bad_magic(tmp, mp):
    ld, p = built(tmp)
    put(p.seg_path(0), p.written[1].position + 16, ">b", 3)
    return [ld.root]


@fire("KA103")
def v2_batch_with_legacy_magic(tmp, mp):
    """A v2 batch whose magic byte became 0 or -1: it reads as a (broken) legacy message."""
    ld, p = built(tmp)
    put(p.seg_path(0), p.written[1].position + 16, ">b", 0)
    put(p.seg_path(1), p.written[6].position + 16, ">b", -1)
    return [ld.root]


@fire("KA104", "KA108")
def segment_starts_late(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).roll().add(Batch(base_offset=20)).data(2)
    ld.write()
    os.rename(p.seg_path(1), p.path / segment_file_name(15, ".log"))
    for suffix in (".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(15, suffix))
    return [ld.root]


@fire("KA104")
def batch_below_segment_base(tmp, mp):
    ld, p = built(tmp)
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(16, suffix))
    return [ld.root]


@silent("KA104", "KA108")
def compacted_gaps(tmp, mp):
    """Compaction: gaps inside and between batches, a segment starting above its name, a 0-byte segment."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("compacted")
    p.data(2, offset_step=2).roll().add(Batch(base_offset=20)).data(2, offset_step=3).roll()
    p.cleaner = 10
    ld.write()
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(p.seg_path(1, suffix), p.path / segment_file_name(12, suffix))
    assert p.seg_path(2).stat().st_size == 0  # the empty active segment after the roll
    return [ld.root]


@fire("KA105")
def offsets_backwards(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).add(Batch(base_offset=2)).data(2)
    ld.write()
    return [ld.root]


@fire("KA106")
def overlapping_segments(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(5).roll().add(Batch(base_offset=10)).data(2)
    ld.write()
    return [ld.root]


@fire("KA107")
def epoch_goes_back(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(3, epoch=2).data(2, epoch=1)
    p.epoch_cache = [(1, 0), (2, 9)]
    ld.write()
    return [ld.root]


@fire("KA108")
def gap_without_compaction(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part()
    p.data(3).add(Batch(base_offset=20)).data(1)
    ld.write()
    return [ld.root]


@fire("KA109")
def offset_overflow(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part(index_interval=10**9)
    p.data(2).add(Batch(base_offset=2**31 + 10))
    p.cleaner = 0
    ld.write()
    return [ld.root]


@fire("KA110")
def undecodable_marker(tmp, mp):
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="BAD", producer_id=7)).data(1)
    ld.write()
    return [ld.root]


# ------------------------------------------------------------------------------------------ KA2xx


def rewrite_index(p: Part, seg: int, entries: list[tuple[int, int]], **kw) -> None:
    p.seg_path(seg, ".index").write_bytes(build_offset_index(entries, p.bases[seg], **kw))


def rewrite_timeindex(p: Part, seg: int, entries: list[tuple[int, int]], **kw) -> None:
    p.seg_path(seg, ".timeindex").write_bytes(build_time_index(entries, p.bases[seg], **kw))


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


@silent(*[c for c in ALL_CODES if c not in ("KA505",)])
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


@fire("KA221")
def txn_entry_without_marker(tmp, mp):
    ld, p = txn_part(tmp)
    path = p.seg_path(0, ".txnindex")
    path.write_bytes(path.read_bytes() + build_txn_index([(9, 0, 1, 2)]))
    return [ld.root]


@fire("KA222")
def abort_without_entry(tmp, mp):
    ld, p = txn_part(tmp)
    p.seg_path(0, ".txnindex").unlink()
    return [ld.root]


@fire("KA223")
def txn_bad_version(tmp, mp):
    ld, p = txn_part(tmp)
    put(p.seg_path(0, ".txnindex"), 0, ">b", 1)
    return [ld.root]


# ------------------------------------------------------------------------------------------ KA23x


def _snapshot(p: Part) -> Path:
    return p.path / segment_file_name(p.leo, ".snapshot")


@fire("KA231")
def snapshot_crc(tmp, mp):
    ld, p = built(tmp)
    flip(_snapshot(p), 3)
    return [ld.root]


@fire("KA232")
def snapshot_version(tmp, mp):
    ld, p = built(tmp)
    put(_snapshot(p), 0, ">h", 2)
    return [ld.root]


@fire("KA233")
def snapshot_beyond(tmp, mp):
    ld, p = built(tmp)
    (p.path / segment_file_name(p.leo + 70, ".snapshot")).write_bytes(build_producer_snapshot([]))
    return [ld.root]


# ------------------------------------------------------------------------------------------ KA3xx


@fire("KA301")
def checkpoint_count_mismatch(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(b"0\n2\norders 0 30\n")
    return [ld.root]


@fire("KA302")
def epoch_checkpoint_malformed(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0\n")
    return [ld.root]


@fire("KA302")
def epoch_checkpoint_negative(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").write_bytes(b"0\n1\n-1 0\n")
    return [ld.root]


@fire("KA303")
def partition_metadata_bad(tmp, mp):
    ld, p = built(tmp)
    (p.path / "partition.metadata").write_bytes(b"version: 0\ntopic_id: xyz")
    return [ld.root]


@fire("KA304")
def meta_properties_missing(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "meta.properties").unlink()
    return [ld.root]


@fire("KA305")
def quorum_state_bad(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "__cluster_metadata-0" / "quorum-state").write_bytes(b"not json")
    return [ld.root]


@fire("KA306")
def checkpoint_duplicates(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(format_offset_checkpoint([("orders", 0, 30)] * 2))
    return [ld.root]


@fire("KA307")
def checkpoint_orphan(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(
        format_offset_checkpoint([("orders", 0, 30), ("gone", 0, 5)])
    )
    return [ld.root]


def _epochs(tmp: Path, cache: list[tuple[int, int]]) -> list[Path]:
    ld, p = standard(tmp / "broker-1")
    p.epoch_cache = cache
    ld.write()
    return [ld.root]


@fire("KA311")
def epoch_cache_disorder(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 24), (1, 26)])


@fire("KA312")
def epoch_beyond_leo(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 24), (3, 50)])


@silent(*[c for c in ALL_CODES if c not in ("KA505",)])
def epoch_trailing_at_leo(tmp, mp):
    """A leader elected during shutdown: its epoch starts at the log end offset, with no data (benign)."""
    return _epochs(tmp, [(0, 0), (2, 24), (3, 30)])


@fire("KA313")
def epoch_missing(tmp, mp):
    return _epochs(tmp, [(0, 0)])


@fire("KA313")
def epoch_file_missing(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").unlink()
    return [ld.root]


@fire("KA314")
def epoch_start_wrong(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 21)])


@fire("KA314")
def epoch_without_batches(tmp, mp):
    return _epochs(tmp, [(0, 0), (1, 9), (2, 24)])


# ------------------------------------------------------------------------------------------ KA4xx


def _offsets(tmp: Path, **kw) -> list[Path]:
    ld, p = standard(tmp / "broker-1")
    for k, v in kw.items():
        setattr(p, k, v)
    ld.write()
    return [ld.root]


@fire("KA401")
def hw_above(tmp, mp):
    return _offsets(tmp, hw=40)


@fire("KA402")
def hw_below_start(tmp, mp):
    return _offsets(tmp, hw=10, log_start=15)


@silent("KA402", "KA404", "KA401")
def log_start_moved(tmp, mp):
    return _offsets(tmp, hw=30, log_start=15)


@fire("KA403")
def rp_above(tmp, mp):
    return _offsets(tmp, recovery_point=45)


@fire("KA404")
def log_start_above(tmp, mp):
    return _offsets(tmp, log_start=50, hw=50)


@fire("KA405", "KA406")
def unclean(tmp, mp):
    ld, p = standard(tmp / "broker-1", clean=False)
    ld.write()
    return [ld.root]


@silent("KA405", "KA406", "KA304")
def controller_only(tmp, mp):
    """A controller's log dir: only __cluster_metadata-0, never a .kafka_cleanshutdown."""
    ld = LogDir(tmp / "controller-100", node_id=100, clean=False)
    ld.write()
    for name in (
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ):
        (ld.root / name).unlink()
    return [ld.root]


@fire("KA407")
def cleaner_beyond(tmp, mp):
    return _offsets(tmp, cleaner=50)


@silent("KA407")
def cleaner_inside(tmp, mp):
    return _offsets(tmp, cleaner=20)


@fire("KA408")
def hw_missing(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    ld.checkpoint_override["replication-offset-checkpoint"] = format_offset_checkpoint([])
    ld.write()
    return [ld.root]


# ------------------------------------------------------------------------------------------ KA5xx


@fire("KA501")
def unknown_files(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "notes.txt").write_text("hi")
    (p.path / "00000000000000000000.log.bak").write_bytes(b"x")
    return [ld.root]


@fire("KA502")
def invalid_dir(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "lost+found").mkdir()
    return [ld.root]


@silent("KA502", "KA501")
def remote_index_cache(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "remote-log-index-cache").mkdir()
    (ld.root / ".lock").write_bytes(b"")
    return [ld.root]


def _leftover(tmp: Path, name: str) -> list[Path]:
    ld, p = built(tmp)
    shutil.copy(p.seg_path(1), p.path / name)
    return [ld.root]


@fire("KA503")
def swap(tmp, mp):
    return _leftover(tmp, segment_file_name(15, ".log") + ".swap")


@fire("KA504")
def cleaned(tmp, mp):
    return _leftover(tmp, segment_file_name(15, ".log") + ".cleaned")


@fire("KA505")
@silent(*[c for c in ALL_CODES if c != "KA505"])
def deleted_files(tmp, mp):
    """Segments renamed .deleted, waiting for file.delete.delay.ms (benign)."""
    return _leftover(tmp, segment_file_name(0, ".log") + ".deleted")


@fire("KA506")
def orphan_index(tmp, mp):
    ld, p = built(tmp)
    (p.path / segment_file_name(99, ".index")).write_bytes(b"")
    return [ld.root]


@fire("KA507")
def tmp_checkpoint(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint.tmp").write_bytes(b"0\n1\norders 0 31\n")
    (p.path / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n")
    return [ld.root]


def _moved(tmp: Path, suffix: str) -> list[Path]:
    ld, p = built(tmp)
    shutil.copytree(p.path, ld.root / f"orders-1.0123456789abcdef0123456789abcdef-{suffix}")
    return [ld.root]


@fire("KA508")
def stray(tmp, mp):
    return _moved(tmp, "stray")


@fire("KA509")
def pending_delete(tmp, mp):
    return _moved(tmp, "delete")


@fire("KA510")
def topic_id_mismatch(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    p.topic_id = topic_id("something-else")
    ld.write()
    return [ld.root]


@fire("KA511")
def topic_gone(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    ld.hidden_topics.add("orders")
    ld.extra_topics["other"] = topic_id("other")
    ld.write()
    return [ld.root]


@fire("KA512")
def no_partition_metadata(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    p.topic_id = None
    ld.write()
    return [ld.root]


@fire("KA513")
def short_name(tmp, mp):
    ld, p = built(tmp)
    os.rename(p.seg_path(1), p.path / "15.log")
    return [ld.root]


@fire("KA514")
def jbod_duplicate(tmp, mp):
    a, _ = standard(tmp / "disk-a", dir_salt="a")
    a.write()
    b, _ = standard(tmp / "disk-b", dir_salt="b", metadata=False)
    b.write()
    return [a.root, b.root]


@silent("KA514")
def two_copies_of_one_dir(tmp, mp):
    """Evidence copies of the same log dir (same directory.id) taken at two moments."""
    a, _ = standard(tmp / "before" / "broker-1")
    a.write()
    shutil.copytree(a.root, tmp / "after" / "broker-1")
    return [a.root, tmp / "after" / "broker-1"]


# fixtures kept in their own modules; imported last because they use the helpers above
from tests.rules import (  # noqa: E402
    cases_files,
    cases_groups,
    cases_history,
    cases_identity,
    cases_inputs,
    cases_records,
    cases_replica,
    cases_timeline,
    cases_txn,
)

ALL_CODES += cases_files.CODES + cases_inputs.CODES + cases_records.CODES + cases_replica.CODES
ALL_CODES += cases_txn.CODES + cases_groups.CODES + cases_timeline.CODES + cases_history.CODES
ALL_CODES += cases_identity.CODES

__all__ = ["ALL_CODES", "FIRE", "SILENT", "T0", "format_leader_epoch_checkpoint"]
