"""Cases of ``auditor/rules/index/txn_index.py`` (KA221-KA223): aborted-transaction entries without their
ABORT marker or starting at the wrong offset, markers without an entry, an unknown version; a transaction
that started in an earlier segment is benign."""

from __future__ import annotations

from pathlib import Path

from parsers.indexes import build_txn_index
from tests.rules.builder import Batch, LogDir, put, txn_part
from tests.rules.harness import fire, silent


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


def _rewrite_txn_index(path: Path, entries: list[tuple[int, int, int, int]]) -> None:
    path.write_bytes(build_txn_index(entries))


@fire("KA223")
def txn_entry_below_the_base_offset(tmp: Path, mp) -> list[Path]:
    """An entry of segment 1 ends below its base offset: ``TransactionIndex.sanityCheck`` fails."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(3).roll().data(3)
    ld.write()
    _rewrite_txn_index(p.seg_path(1, ".txnindex"), [(7, 0, p.bases[1] - 1, p.bases[1])])
    return [ld.root]


@silent("KA223")
def txn_index_kafka_never_opens(tmp: Path, mp) -> list[Path]:
    """The same entry in a ``.txnindex`` whose name does not spell the offset with 20 digits: Kafka opens only
    the 20-digit name, so it checks nothing."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(3).roll().data(3)
    ld.write()
    (p.seg_path(1, ".log").parent / f"{p.bases[1]}.txnindex").write_bytes(
        build_txn_index([(7, 0, p.bases[1] - 1, p.bases[1])])
    )
    return [ld.root]


@fire("KA221")
def txn_entry_first_offset_too_high(tmp: Path, mp) -> list[Path]:
    """The aborted transaction of producer 7 spans 7..12 (ABORT at 13); the entry says it starts at 10."""
    ld, p = txn_part(tmp)
    _rewrite_txn_index(p.seg_path(0, ".txnindex"), [(7, 10, 13, 14)])
    return [ld.root]


@fire("KA221")
def txn_entry_first_offset_before_the_previous_commit(tmp: Path, mp) -> list[Path]:
    """The entry starts at 2, inside producer 7's committed transaction (COMMIT at 6)."""
    ld, p = txn_part(tmp)
    _rewrite_txn_index(p.seg_path(0, ".txnindex"), [(7, 2, 13, 14)])
    return [ld.root]


@silent("KA221")
def txn_started_in_an_earlier_segment(tmp: Path, mp) -> list[Path]:
    """Producer 7's aborted transaction starts at 3 in segment 0; its ABORT (12) is in segment 1: the entry's
    firstOffset 3 is below segment 1's base offset and cannot be disproved from segment 1."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(1).data(2, producer_id=7, transactional=True).roll()
    p.data(1, producer_id=7, transactional=True).add(Batch(marker="ABORT", producer_id=7)).data(1)
    ld.write()
    _rewrite_txn_index(p.seg_path(1, ".txnindex"), [(7, 3, 12, 13)])
    return [ld.root]
