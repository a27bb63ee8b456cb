"""auditor.kafka.groups: the offsets partition of a group and the coordinator's replay of its records."""

from __future__ import annotations

import pytest

from auditor.kafka.coordinator import java_string_hash
from auditor.kafka.groups import (
    group_metadata_state,
    group_states,
    latest_commits,
    offsets_partitions,
    partition_for,
)
from tests.rules.builder import T0
from tests.rules.replica.cases_groups import commit_row


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


# ------------------------------------------------------------------------- group state, both protocols

TOPIC_ID = "JhDLizgWSga6dDKcLH5WFQ"
MEMBER = "jCzgEC6nReO32M8qi0xG9Q"


def _group_row(offset: int, record_type: int, *, tombstone: bool = False, group: str = "billing", **columns):
    """A ``rows.COMMIT`` row of a group record (not an offset commit) of one replica."""
    return {
        "offset": offset,
        "live": True,
        "txn_state": "plain",
        "record_type": record_type,
        "group": group,
        "tombstone": tombstone,
        **columns,
    }


def _tps(*partitions: int, topic_id: str = TOPIC_ID) -> list[dict]:
    return [{"topic": None, "topic_id": topic_id, "partition": p} for p in partitions]


def _join(
    offset: int = 0,
    member: str = MEMBER,
    epoch: int = 1,
    partitions=(0, 1, 2),
    state: int = 0,
    assignment_epoch: int | None = None,
) -> list[dict]:
    """What Kafka 4.0 writes for a KIP-848 member's join (see tests.support.groups.consumer_join)."""
    meta = {
        "member_id": member,
        "client_id": "console-consumer",
        "client_host": "/127.0.0.1",
        "subscribed_topic_names": ["orders"],
        "subscribed_topic_regex": "",
        "rebalance_timeout_ms": 300000,
        "classic": False,
    }
    return [
        _group_row(offset, 5, member_id=member, members=[meta]),
        _group_row(
            offset + 1, 4, subscribed_topics=[{"topic_id": TOPIC_ID, "topic": "orders", "num_partitions": 3}]
        ),
        _group_row(offset + 2, 3, group_epoch=epoch),
        _group_row(offset + 3, 7, member_id=member, assigned_partitions=_tps(*partitions)),
        _group_row(offset + 4, 6, assignment_epoch=epoch if assignment_epoch is None else assignment_epoch),
        _group_row(
            offset + 5,
            8,
            member_id=member,
            member_epoch=epoch,
            previous_member_epoch=epoch - 1,
            member_state=state,
            assigned_partitions=_tps(*partitions),
            partitions_pending_revocation=[],
        ),
    ]


def _leave(offset: int, epoch: int, member: str = MEMBER) -> list[dict]:
    return [
        _group_row(offset, 8, tombstone=True, member_id=member),
        _group_row(offset + 1, 7, tombstone=True, member_id=member),
        _group_row(offset + 2, 5, tombstone=True, member_id=member),
        _group_row(offset + 3, 4, subscribed_topics=[]),
        _group_row(offset + 4, 3, group_epoch=epoch),
    ]


def _classic(offset: int, generation: int, *members: str) -> dict:
    return _group_row(
        offset,
        2,
        protocol_type="consumer",
        generation=generation,
        protocol_name="range",
        group_leader=members[0] if members else None,
        state_timestamp=T0,
        members=[
            {
                "member_id": m,
                "client_id": "c",
                "client_host": "/h",
                "session_timeout_ms": 45000,
                "subscribed_topic_names": ["orders"],
                "classic": True,
                "assignment": [{"topic": "orders", "topic_id": None, "partition": 0}],
            }
            for m in members
        ],
    )


def test_classic_group_states_from_group_metadata():
    stable = group_states([_classic(0, 1, "m-1", "m-2")])["billing"]
    assert (stable.protocol, stable.state, stable.generation, stable.protocol_name) == (
        "classic",
        "Stable",
        1,
        "range",
    )
    assert [m.member_id for m in stable.members] == ["m-1", "m-2"] and stable.leader == "m-1"
    assert (
        stable.members[0].assigned_partitions == (("orders", 0),) and stable.members[0].protocol == "classic"
    )
    empty = group_states([_classic(0, 1, "m-1"), _classic(1, 2)])["billing"]
    assert (empty.state, empty.generation, empty.members, empty.record_offset) == ("Empty", 2, (), 1)
    dead = group_states([_classic(0, 1, "m-1"), _group_row(1, 2, tombstone=True)])["billing"]
    assert (dead.protocol, dead.state, dead.members) == ("classic", "Dead", ())


def test_offsets_alone_make_a_simple_classic_group():
    simple = group_states([commit_row(1, 0, 10, group="billing")])["billing"]
    assert (simple.protocol, simple.state, simple.protocol_type, simple.record_offset) == (
        "classic",
        "Empty",
        None,
        None,
    )
    # a commit after the group's tombstone: the coordinator creates a simple group again
    rows = [_classic(0, 1), _group_row(1, 2, tombstone=True), commit_row(1, 2, 10, group="billing")]
    assert group_states(rows)["billing"].state == "Empty"
    assert group_states(rows[:2])["billing"].state == "Dead"
    # offset tombstones create nothing; cut or aborted rows are not replayed
    assert group_states([commit_row(1, 0, 0, group="billing", tombstone=True)]) == {}
    assert group_states([{**_classic(0, 1, "m"), "live": False}]) == {}
    assert group_states([{**_classic(0, 1, "m"), "txn_state": "aborted"}]) == {}


def test_consumer_group_join_is_stable_and_names_its_topics():
    g = group_states(_join())["billing"]
    assert (g.protocol, g.state, g.group_epoch, g.assignment_epoch) == ("consumer", "Stable", 1, 1)
    (m,) = g.members
    assert (m.member_id, m.protocol, m.member_epoch, m.previous_member_epoch, m.member_state) == (
        MEMBER,
        "consumer",
        1,
        0,
        "STABLE",
    )
    assert m.assigned_partitions == m.target_partitions == (("orders", 0), ("orders", 1), ("orders", 2))
    assert (m.client_id, m.subscribed_topic_names, m.rebalance_timeout_ms) == (
        "console-consumer",
        ("orders",),
        300000,
    )
    assert g.generation is None and g.record_offset == 5


def test_consumer_group_states_follow_the_epochs():
    # the group epoch is above the assignment epoch: a new target assignment is being computed
    assert group_states(_join(assignment_epoch=0))["billing"].state == "Assigning"
    # a member still revoking partitions, or not yet at the assignment epoch
    assert group_states(_join(state=1))["billing"].state == "Reconciling"
    behind = _join() + [_group_row(6, 3, group_epoch=2), _group_row(7, 6, assignment_epoch=2)]
    assert group_states(behind)["billing"].state == "Reconciling"
    g = group_states(_join(state=2))["billing"]
    assert g.members[0].member_state == "UNRELEASED_PARTITIONS"
    assert group_states(_join(state=99))["billing"].members[0].member_state == "UNKNOWN"


def test_consumer_group_member_leaves_then_group_is_deleted():
    left = group_states(_join() + _leave(6, epoch=2))["billing"]
    assert (left.state, left.group_epoch, left.assignment_epoch, left.members) == ("Empty", 2, 1, ())
    # only the current assignment tombstoned: the member stays, at epoch -1 with nothing assigned
    half = group_states(_join() + _leave(6, epoch=2)[:1])["billing"]
    assert half.members[0].member_epoch == -1 and half.members[0].assigned_partitions == ()
    assert half.state == "Reconciling"
    deleted = (
        _join() + _leave(6, epoch=2) + [_group_row(11, 6, tombstone=True), _group_row(12, 3, tombstone=True)]
    )
    g = group_states(deleted)["billing"]
    assert (g.protocol, g.state, g.members) == ("consumer", "Dead", ())
    # a new member after the deletion starts a new group
    again = group_states(deleted + _join(20, member="other"))["billing"]
    assert again.state == "Stable" and [m.member_id for m in again.members] == ["other"]


def test_consumer_group_topic_ids_resolve_from_metadata_when_the_group_does_not_name_them():
    rows = [r for r in _join() if r["record_type"] != 4]
    assert group_states(rows)["billing"].members[0].assigned_partitions[0] == (TOPIC_ID, 0)
    named = group_states(rows, {TOPIC_ID: "orders"})["billing"].members[0]
    assert named.assigned_partitions[0] == ("orders", 0)


def test_protocol_switches_the_way_the_coordinator_replays_them():
    # offsets first (a simple classic group), then KIP-848 records: the consumer group replaces it
    g = group_states([commit_row(1, 0, 10, group="billing"), *_join(1)])["billing"]
    assert (g.protocol, g.state, g.problems) == ("consumer", "Stable", ())
    # a classic group's tombstone removes whichever group has the id (online downgrade/upgrade)
    assert group_states(_join() + [_group_row(6, 2, tombstone=True)])["billing"].state == "Dead"
    # a classic group with metadata then a consumer group record: Kafka's loader refuses it
    g = group_states([_classic(0, 1, "m-1"), *_join(1)])["billing"]
    assert g.protocol == "consumer" and len(g.problems) == 1 and "offset 1" in g.problems[0]
    # the groups of one replica are independent
    both = group_states([{**_classic(0, 1, "m-1"), "group": "a"}, *_join(1)])
    assert {n: (s.protocol, s.state) for n, s in both.items()} == {
        "a": ("classic", "Stable"),
        "billing": ("consumer", "Stable"),
    }
