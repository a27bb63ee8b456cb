"""auditor.kafka.groups: the offsets partition of a group and the coordinator's replay of its records."""

from __future__ import annotations

import pytest

from auditor.kafka.coordinator import java_string_hash
from auditor.kafka.groups import (
    group_metadata_state,
    latest_commits,
    offsets_partitions,
    partition_for,
)
from tests.rules.cases_groups import commit_row


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),
        ("hello", 99162322),  # by hand: ((((104*31+101)*31+108)*31+108)*31+111)
        ("polygenelubricants", -(1 << 31)),  # the classic Integer.MIN_VALUE string
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # UTF-16 surrogate pair, as Java sees it
    ],
)
def test_java_string_hash(text, expected):
    assert java_string_hash(text) == expected


@pytest.mark.parametrize(
    ("group", "partitions", "expected"),
    [
        ("group-plain", 3, 2),  # the corpus: __consumer_offsets-2 of 3
        ("group-txn", 3, 1),
        ("g1", 50, 42),  # single-node corpus
        ("my-group", 50, 12),  # values printed by Kafka's own formula in operators' notes
        ("kafka-txn-0", 50, 30),
        ("polygenelubricants", 50, 0),  # Utils.abs(Integer.MIN_VALUE) is 0, not negative
    ],
)
def test_partition_for(group, partitions, expected):
    assert partition_for(group, partitions) == expected


def test_partition_for_rejects_no_partitions():
    with pytest.raises(ValueError, match="at least one partition"):
        partition_for("g", 0)


def _replay(*rows):
    return {k: (c.offset, c.record_offset) for k, c in latest_commits(rows).items()}


KEY = ("billing", "orders", 0)


def test_latest_commit_upserts_in_offset_order():
    rows = [commit_row(1, 7, 30), commit_row(1, 3, 10), commit_row(1, 5, 20)]
    assert _replay(*rows) == {KEY: (30, 7)}


def test_offset_tombstone_deletes_and_a_later_commit_restores():
    assert _replay(commit_row(1, 1, 10), commit_row(1, 2, 0, tombstone=True)) == {}
    rows = (commit_row(1, 1, 10), commit_row(1, 2, 0, tombstone=True), commit_row(1, 3, 12))
    assert _replay(*rows) == {KEY: (12, 3)}


def test_group_tombstone_keeps_offsets_like_the_coordinator():
    group_tomb = {**commit_row(1, 2, 0, tombstone=True), "record_type": 2, "commit_topic": None}
    group_meta = {**commit_row(1, 0, 0), "record_type": 2, "commit_topic": None, "tombstone": False}
    rows = [group_meta, commit_row(1, 1, 10), group_tomb]
    assert _replay(*rows) == {KEY: (10, 1)}
    assert group_metadata_state(rows) == {"billing": "deleted"}
    assert group_metadata_state(rows[:2]) == {"billing": "present"}


@pytest.mark.parametrize(("state", "counts"), [("committed", True), ("aborted", False), ("open", False)])
def test_transactional_commits_count_once_committed(state, counts):
    rows = [commit_row(1, 1, 10), commit_row(1, 2, 50, txn_state=state)]
    assert _replay(*rows) == {KEY: (50, 2) if counts else (10, 1)}


def test_cut_and_undecodable_rows_are_ignored():
    cut = {**commit_row(1, 2, 50), "live": False}
    broken = {**commit_row(1, 3, 0), "record_type": None, "error": "x.log: byte 0: bad", "offset": None}
    assert _replay(commit_row(1, 1, 10), cut, broken) == {KEY: (10, 1)}


def _partition_record(node, seq, topic, partition, end=10):
    return {
        "cluster": "c",
        "node": node,
        "seq": seq,
        "offset": seq,
        "end_offset": end,
        "record_type": "PARTITION_RECORD",
        "topic": topic,
        "topic_id": topic + "-id",
        "partition": partition,
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1],
        "replicas": [1],
        "leader_recovery_state": 0,
    }


def test_offsets_partitions_from_the_most_complete_metadata():
    assert offsets_partitions([]) is None
    behind = [_partition_record(1, i, "__consumer_offsets", i, end=3) for i in range(2)]
    ahead = [_partition_record(2, i, "__consumer_offsets", i, end=9) for i in range(5)]
    other = [_partition_record(2, 10, "orders", 0, end=9)]
    assert offsets_partitions(behind + ahead + other) == 5
    assert offsets_partitions(other) is None
