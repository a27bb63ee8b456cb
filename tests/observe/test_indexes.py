"""``auditor.observe.indexes``: which segments' ``.txnindex`` fail ``TransactionIndex.sanityCheck`` (Kafka
recovers those segments at load), in the order Kafka reads the entries."""

from __future__ import annotations

import pytest

from auditor.layout.inventory import list_segments
from auditor.observe.indexes import txn_index_corrupt
from parsers.dirfiles import segment_file_name
from parsers.indexes import AbortedTxnEntry, build_txn_index

BASE = 100


def _entry(last: int, version: int = 0) -> AbortedTxnEntry:
    return AbortedTxnEntry(7, min(last, BASE), last, last + 1, version=version, raw_version=version << 8)


@pytest.mark.parametrize(
    ("entries", "corrupt"),
    [
        ([], False),  # no entry: nothing to check
        ([_entry(BASE), _entry(BASE + 5)], False),  # every last offset at or above the base offset
        ([_entry(BASE + 5), _entry(BASE - 1)], True),  # CorruptIndexException: recovered at load
        ([_entry(BASE - 1), _entry(BASE + 5, version=1)], True),  # the bad entry comes first
        ([_entry(BASE + 5, version=1), _entry(BASE - 1)], False),  # KafkaException first: no recovery
    ],
)
def test_a_transaction_index_failing_its_sanity_check_is_recovered_at_load(tmp_path, entries, corrupt):
    (tmp_path / segment_file_name(BASE, ".log")).write_bytes(b"")
    (tmp_path / segment_file_name(BASE, ".index")).write_bytes(b"")
    (tmp_path / segment_file_name(BASE, ".txnindex")).write_bytes(build_txn_index(entries))
    (tmp_path / segment_file_name(200, ".log")).write_bytes(b"")  # a segment without a .txnindex
    listing = list_segments(tmp_path)
    assert listing.txn_indexed == {BASE}
    assert txn_index_corrupt(tmp_path, listing.txn_indexed) == ({BASE} if corrupt else set())


def test_an_unreadable_transaction_index_is_left_to_scan(tmp_path):
    (tmp_path / segment_file_name(BASE, ".log")).write_bytes(b"")
    (tmp_path / segment_file_name(BASE, ".txnindex")).mkdir()  # not a file: scan says so
    assert txn_index_corrupt(tmp_path, list_segments(tmp_path).txn_indexed) == frozenset()
