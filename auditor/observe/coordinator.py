"""Transaction coordinator rows (``rows.TXN_STATE``) of a ``__transaction_state`` replica.

One row per record of the replica's CRC-valid batches, in offset order, decoded by
:mod:`parsers.transaction_state`. ``txn_state`` is :func:`auditor.kafka.transactions.classify` of the record's
batch over the replica's live batches (the coordinator writes non-transactional batches: normally ``plain``;
null for a batch recovery cuts). ``live`` is false for a batch Kafka's load cuts (``recovery``,
:meth:`auditor.kafka.recovery.LogRecovery.keeps`); without one every valid batch is live.

A record that does not decode (truncated key or value) is skipped and described in ``errors`` (file, byte
position of its batch, record offset); so is a batch whose records do not decode from some record on. A
key of an unknown version gives a row without ``transactional_id``; a value of an unknown version (Kafka's
loader fails on it) or with an unknown status byte gives a row without ``state`` and an error entry.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from auditor.kafka.recovery import LogRecovery
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.records import logged_batches, logged_rows
from parsers.errors import ParseError
from parsers.transaction_state import (
    decode_txn_key,
    decode_txn_value,
    transactional_id,
    value_partitions,
)

MAX_ERRORS = 5
"""Errors kept per replica (the rest are counted)."""


def _decode(rec, where: str, errors: list[str]) -> dict | None:
    """The row fields of one coordinator record, or None (error noted) when it does not decode."""
    try:
        key = decode_txn_key(rec.key)
        value = decode_txn_value(rec.value)
    except ParseError as exc:
        errors.append(f"{where} offset {rec.offset}: {exc.message} (at byte {exc.offset} of the key/value)")
        return None
    row: dict = {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "tombstone": value is None,
        "transactional_id": transactional_id(key),
    }
    if key.get("data") is None:
        errors.append(f"{where} offset {rec.offset}: unknown transaction log key version {key['version']}")
        return row
    if value is None:
        return row
    data = value.get("data")
    if data is None:
        version = value["version"]
        errors.append(f"{where} offset {rec.offset}: unknown transaction log value version {version}")
        return row
    if value["state"] is None:
        errors.append(f"{where} offset {rec.offset}: unknown transaction status {data['transactionStatus']}")
    row.update(
        txn_producer_id=data["producerId"],
        previous_producer_id=data.get("previousProducerId", -1),
        next_producer_id=data.get("nextProducerId", -1),
        txn_producer_epoch=data["producerEpoch"],
        timeout_ms=data["transactionTimeoutMs"],
        state=value["state"],
        partitions=[{"topic": t, "partition": p} for t, p in value_partitions(value)],
        last_update_timestamp=data["transactionLastUpdateTimestampMs"],
        start_timestamp=data["transactionStartTimestampMs"],
    )
    return row


def transaction_state_rows(
    task: PartitionTask,
    part_dir: Path,
    valid_batches: list[tuple[int, int, int]],
    recovery: LogRecovery | None = None,
    errors: list[str] | None = None,
) -> pa.Table:
    """One ``rows.TXN_STATE`` row per transaction coordinator record of the replica's valid batches.

    ``recovery``: what Kafka's load cuts from this replica (:class:`LogRecovery`; None: nothing is cut).
    ``errors``: a list that receives one line per record or batch that could not be read (at most
    :data:`MAX_ERRORS` plus a count), for the replica row's ``error``."""
    problems: list[str] = []
    out = logged_rows(task, logged_batches(part_dir, valid_batches, recovery, _decode, problems))
    if errors is not None and problems:
        errors.extend(problems[:MAX_ERRORS])
        if len(problems) > MAX_ERRORS:
            errors.append(f"{task.dir_name}: {len(problems) - MAX_ERRORS} more transaction log errors")
    if not out:
        return rows.TXN_STATE.empty_table()
    return pa.Table.from_pylist(out, schema=rows.TXN_STATE)
