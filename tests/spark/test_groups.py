"""``auditor.spark.groups.group_view`` and ``group_summaries``: each group's protocol, state and members as
the coordinator (the offsets partition's leader) loads them, beside its committed offsets."""

from __future__ import annotations

from auditor.kafka.topics import OFFSETS_TOPIC
from auditor.spark.groups import GroupInputs, group_summaries, group_view
from tests.rules.replica.cases_groups import GROUP, P, commit_row, replica

TOPIC_ID = "JhDLizgWSga6dDKcLH5WFQ"


def _row(broker: int, offset: int, record_type: int, group: str, **columns) -> dict:
    """A group record's ``rows.COMMIT`` row on broker ``broker``'s replica of partition ``P``."""
    return {
        "cluster": "c",
        "topic": OFFSETS_TOPIC,
        "partition": P,
        "broker": broker,
        "offset": offset,
        "live": True,
        "txn_state": "plain",
        "tombstone": False,
        "record_type": record_type,
        "group": group,
        **columns,
    }


def _consumer_group(broker: int, offset: int, group: str) -> list[dict]:
    """A KIP-848 group with one member, STABLE at epoch 3, its topic named only by id."""
    member = {"member_id": "m", "client_id": "c", "client_host": "/h", "classic": False}
    assigned = [{"topic": None, "topic_id": TOPIC_ID, "partition": 0}]
    return [
        _row(broker, offset, 5, group, member_id="m", members=[member]),
        _row(broker, offset + 1, 3, group, group_epoch=3),
        _row(broker, offset + 2, 7, group, member_id="m", assigned_partitions=assigned),
        _row(broker, offset + 3, 6, group, assignment_epoch=3),
        _row(
            broker,
            offset + 4,
            8,
            group,
            member_id="m",
            member_epoch=3,
            previous_member_epoch=2,
            member_state=0,
            assigned_partitions=assigned,
            partitions_pending_revocation=[],
        ),
    ]


def _inputs() -> GroupInputs:
    """Broker 1 leads the offsets partition and holds group ``billing`` (classic, offsets only) and the
    KIP-848 group ``ledger``; broker 2, a follower, also holds ``audit-app``, which broker 1 never got."""
    commits = []
    for broker in (1, 2):
        commits += [commit_row(broker, 0, 5), *_consumer_group(broker, 1, "ledger")]
    commits += _consumer_group(2, 6, "audit-app")
    replicas = [replica(b, 10, topic=OFFSETS_TOPIC, partition=P) for b in (1, 2)]
    replicas += [replica(b, 10) for b in (1, 2)]
    topic = {"cluster": "c", "node": 1, "seq": 0, "offset": 0, "end_offset": 1, "record_type": "TOPIC_RECORD"}
    metadata = [{**topic, "topic": "orders", "topic_id": TOPIC_ID}]
    return GroupInputs(commits=commits, replicas=replicas, metadata=metadata)


def test_summaries_read_the_coordinator_and_fall_back_to_a_replica_holding_the_group():
    summaries = {s["group"]: s for s in group_summaries(_inputs())}
    assert set(summaries) == {GROUP, "ledger", "audit-app"}
    billing, ledger, other = summaries[GROUP], summaries["ledger"], summaries["audit-app"]
    assert (billing["protocol"], billing["state"], billing["coordinator"], billing["state_broker"]) == (
        "classic",
        "Empty",
        1,
        1,
    )
    assert billing["offsets"] == [
        {"topic": "orders", "partition": 0, "committed_offset": 5, "leader_epoch": 0}
    ]
    assert (ledger["protocol"], ledger["state"], ledger["group_epoch"], ledger["state_broker"]) == (
        "consumer",
        "Stable",
        3,
        1,
    )
    (member,) = ledger["members"]
    assert member["assigned_partitions"] == [{"topic": "orders", "partition": 0}]  # named by the metadata
    assert (member["member_epoch"], member["member_state"]) == (3, "STABLE") and ledger["offsets"] == []
    assert (other["state"], other["state_broker"], other["coordinator"]) == ("Stable", 2, 1)
    assert [s["group"] for s in group_summaries(_inputs(), "ledger")] == ["ledger"]


def test_view_rows_carry_the_protocol_and_state():
    (row,) = group_view(_inputs())
    assert (row["group"], row["committed_offset"], row["protocol"], row["group_state"]) == (
        GROUP,
        5,
        "classic",
        "Empty",
    )
