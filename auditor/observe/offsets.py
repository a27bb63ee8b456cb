"""Group coordinator rows (``rows.COMMIT``) of a ``__consumer_offsets`` replica.

Every record of the replica's CRC-valid data batches gives one row: the key's record type and group
(offset commits also their topic-partition, committed offset, leader epoch, metadata and timestamps),
whether the value is null (a tombstone), the transaction state of its batch and whether recovery keeps the
batch (``live``), both from :mod:`auditor.observe.records` (offsets committed by a transactional producer
count only once its COMMIT marker follows). A record that does not decode gives a row with ``error`` set
(file and byte position of its batch) and no key columns; a batch that cannot be read gives one such row
for the batch. Nothing is ever given up on: the rest of the replica is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from auditor.kafka.recovery import RecoveryTruncation
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.records import logged_batches, logged_rows, replica_key
from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value
from parsers.errors import ParseError


def _group_of(key: dict[str, Any]) -> str | None:
    data = key.get("data") or {}
    return data.get("group", data.get("GroupId"))


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


def offset_commit_rows(
    task: PartitionTask,
    part_dir: Path,
    valid_batches: list[tuple[int, int, int]],
    truncation: RecoveryTruncation | None = None,
) -> pa.Table:
    """One ``rows.COMMIT`` row per group coordinator record of the replica's valid batches (``truncation``:
    where log recovery cuts this replica, ``LogRecovery.truncation``; None: nothing is cut); a batch that
    cannot be read gives one row with only ``error`` set."""
    problems: list[str] = []
    batches = logged_batches(part_dir, valid_batches, truncation, _record_row, problems)
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
    except (ParseError, KeyError, TypeError, ValueError) as exc:
        row["error"] = f"{where}: record at offset {rec.offset}: {_reason(exc)}"
    return row


def _reason(exc: Exception) -> str:
    return getattr(exc, "message", None) or str(exc)
