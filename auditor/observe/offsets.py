"""Group coordinator rows (``rows.COMMIT``) of a ``__consumer_offsets`` replica.

Every record of the replica's CRC-valid data batches gives one row: the key's record type and group (offset
commits also their topic-partition, committed offset, leader epoch, metadata and timestamps; classic group
metadata its protocol type, generation, protocol, leader and members; the KIP-848 consumer group records
their group epoch, member, member epoch and state, target or current assignment, assignment epoch and
subscribed topics), whether the value is null (a tombstone), the transaction state of its batch and whether
recovery keeps the batch (``live``), both from :mod:`auditor.observe.records` (offsets committed by a
transactional producer count only once its COMMIT marker follows). A record that does not decode gives a row
with ``error`` set (file and byte position of its batch) and no key columns; a batch that cannot be read
gives one such row for the batch. Nothing is ever given up on: the rest of the replica is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from auditor.kafka.groups import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE,
    CONSUMER_GROUP_MEMBER_METADATA_TYPE,
    CONSUMER_GROUP_METADATA_TYPE,
    CONSUMER_GROUP_PARTITION_METADATA_TYPE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE,
    GROUP_METADATA_TYPE,
)
from auditor.kafka.recovery import LogRecovery
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.records import logged_batches, logged_rows, replica_key
from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value
from parsers.errors import ParseError


def _group_of(key: dict[str, Any]) -> str | None:
    data = key.get("data") or {}
    return data.get("group", data.get("groupId"))


def _commit_columns(key: dict[str, Any], value: dict[str, Any] | None) -> dict[str, Any]:
    record_type = int(key["type"])
    out: dict[str, Any] = {"record_type": record_type, "group": _group_of(key)}
    if value is not None:
        out["value_version"] = int(value["version"])
    if record_type in (0, 1) and key.get("data") is not None:
        out["commit_topic"] = key["data"]["topic"]
        out["commit_partition"] = key["data"]["partition"]
        data = (value or {}).get("data")
        if data is not None:
            out.update(
                committed_offset=data["offset"],
                committed_leader_epoch=data.get("leaderEpoch", -1),
                commit_metadata=data.get("metadata"),
                commit_timestamp=data.get("commitTimestamp"),
                expire_timestamp=data.get("expireTimestamp", -1),
            )
        elif value is not None:
            out["error"] = f"offset commit value version {value['version']} is not known"
        return out
    out["member_id"] = (key.get("data") or {}).get("memberId")
    body = (value or {}).get("data")
    if body is not None:
        out.update(_group_columns(record_type, out["member_id"], body))
    elif value is not None and key.get("data") is not None:
        out["error"] = f"record type {record_type}: value version {value['version']} is not known"
    return out


def _group_columns(record_type: int, member_id: str | None, data: dict[str, Any]) -> dict[str, Any]:
    """The columns of a classic group metadata value (type 2) or a KIP-848 consumer group value (3-8)."""
    if record_type == GROUP_METADATA_TYPE:
        return {
            "protocol_type": data["protocolType"],
            "generation": data["generation"],
            "protocol_name": data["protocol"],
            "group_leader": data["leader"],
            "state_timestamp": data.get("currentStateTimestamp", -1),
            "members": [_classic_member(m) for m in data["members"]],
        }
    if record_type == CONSUMER_GROUP_METADATA_TYPE:
        return {"group_epoch": data["epoch"]}
    if record_type == CONSUMER_GROUP_PARTITION_METADATA_TYPE:
        topics = data["topics"]
        return {
            "subscribed_topics": [
                {"topic_id": t["topicId"], "topic": t["topicName"], "num_partitions": t["numPartitions"]}
                for t in topics
            ]
        }
    if record_type == CONSUMER_GROUP_MEMBER_METADATA_TYPE:
        return {"members": [_consumer_member(member_id, data)]}
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE:
        return {"assignment_epoch": data["assignmentEpoch"]}
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE:
        return {"assigned_partitions": _by_topic_id(data["topicPartitions"])}
    if record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE:
        return {
            "member_epoch": data["memberEpoch"],
            "previous_member_epoch": data["previousMemberEpoch"],
            "member_state": data["state"],
            "assigned_partitions": _by_topic_id(data["assignedPartitions"]),
            "partitions_pending_revocation": _by_topic_id(data["partitionsPendingRevocation"]),
        }
    return {}


def _by_topic_id(topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"topic_id": t["topicId"], "partition": p} for t in topics for p in t["partitions"]]


def _classic_member(m: dict[str, Any]) -> dict[str, Any]:
    """A GroupMetadataValue member; a consumer's subscription and assignment when they decode (protocol
    type ``consumer``: :func:`parsers.consumer_offsets.decode_offsets_value` decodes them, else base64)."""
    subscription, assignment = m.get("subscription"), m.get("assignment")
    return {
        "member_id": m["memberId"],
        "group_instance_id": m.get("groupInstanceId"),
        "client_id": m["clientId"],
        "client_host": m["clientHost"],
        "rebalance_timeout_ms": m.get("rebalanceTimeout", -1),
        "session_timeout_ms": m["sessionTimeout"],
        "subscribed_topic_names": subscription.get("topics") if isinstance(subscription, dict) else None,
        "classic": True,
        "assignment": (
            [
                {"topic": tp["topic"], "partition": p}
                for tp in assignment.get("assignedPartitions") or []
                for p in tp["partitions"]
            ]
            if isinstance(assignment, dict)
            else None
        ),
    }


def _consumer_member(member_id: str | None, m: dict[str, Any]) -> dict[str, Any]:
    """A ConsumerGroupMemberMetadataValue; ``classic`` when the member joined with the classic protocol
    (its ClassicMemberMetadata is set)."""
    classic = m.get("classicMemberMetadata")
    return {
        "member_id": member_id,
        "group_instance_id": m["instanceId"],
        "client_id": m["clientId"],
        "client_host": m["clientHost"],
        "rack_id": m["rackId"],
        "rebalance_timeout_ms": m["rebalanceTimeoutMs"],
        "session_timeout_ms": classic["sessionTimeoutMs"] if classic else None,
        "subscribed_topic_names": m["subscribedTopicNames"],
        "subscribed_topic_regex": m["subscribedTopicRegex"],
        "server_assignor": m["serverAssignor"],
        "classic": classic is not None,
    }


def offset_commit_rows(
    task: PartitionTask,
    part_dir: Path,
    valid_batches: list[tuple[int, int, int]],
    recovery: LogRecovery | None = None,
) -> pa.Table:
    """One ``rows.COMMIT`` row per group coordinator record of the replica's valid batches (``recovery``:
    what Kafka's load cuts from this replica, :class:`LogRecovery`; None: nothing is cut); a batch that
    cannot be read gives one row with only ``error`` set."""
    problems: list[str] = []
    batches = logged_batches(part_dir, valid_batches, recovery, _record_row, problems)
    table = logged_rows(task, batches)
    key = replica_key(task)
    table += [{**key, "error": f"{task.dir_name}/{problem}"} for problem in problems]
    return pa.Table.from_pylist(table, schema=rows.COMMIT)


def _record_row(rec, where: str, errors: list[str]) -> dict[str, Any]:
    """The row fields of one coordinator record; ``error`` set (file, byte position of its batch, record
    offset) when it does not decode."""
    row = {"offset": rec.offset, "timestamp": rec.timestamp, "tombstone": rec.value is None}
    try:
        key = decode_offsets_key(rec.key)
        value = decode_offsets_value(key, rec.value)
        row.update(_commit_columns(key, value))
        if row.get("error"):  # a value version Kafka's loader does not know
            row["error"] = f"{where}: record at offset {rec.offset}: {row['error']}"
    except (ParseError, KeyError, TypeError, ValueError) as exc:
        row["error"] = f"{where}: record at offset {rec.offset}: {_reason(exc)}"
    return row


def _reason(exc: Exception) -> str:
    return getattr(exc, "message", None) or str(exc)
