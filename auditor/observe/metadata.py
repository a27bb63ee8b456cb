"""KRaft metadata rows (``rows.METADATA``) of a node's ``__cluster_metadata-0``, in replay order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from auditor.kafka.kraft import (
    BROKER_KEYS,
    BROKER_RESOURCE,
    CONFIG_RECORD,
    FENCING_CHANGE,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    TOPIC_RESOURCE,
    MetadataEntry,
    MetadataReplay,
)
from auditor.kafka.topics import METADATA_TOPIC
from auditor.layout.inventory import complete_kraft_snapshots, list_segments
from auditor.observe import rows
from auditor.observe.indexes import txn_index_corrupt

_NOT_NULL = {"leader": -2, "leader_epoch": -1, "leader_recovery_state": -1, "partition_epoch": -1}
"""The ``rows.METADATA`` columns a record that does not set them holds other than null (see their comments
there); every other column is null unless set."""


METADATA_KEYS = (
    frozenset({TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD})
    | BROKER_KEYS
)
"""The records the audit's metadata rows hold."""


def extract_metadata(log_dir: str, node: int, cluster: str) -> pa.Table:
    """Topic, partition, topic/broker config and broker registration records of a node's
    ``__cluster_metadata-0`` in replay order (``auditor.kafka.kraft.MetadataReplay`` with history: the log
    records below the latest snapshot's end offset, the snapshot, then the log from its end offset)."""
    part_dir = Path(log_dir) / f"{METADATA_TOPIC}-0"
    listing = list_segments(part_dir)
    snapshots = complete_kraft_snapshots(part_dir)
    corrupt = txn_index_corrupt(part_dir, listing.txn_indexed)
    replay = MetadataReplay(listing.logs, snapshots, METADATA_KEYS, listing.unindexed, corrupt)
    out: list[dict] = []
    names: dict[str, str] = {}
    for entry in replay.entries(history=True):
        row = _meta_row(len(out), entry, names)
        if row is not None:
            out.append(row)
    n = len(out)
    columns = {f.name: [r.get(f.name) for r in out] for f in rows.METADATA}
    end = replay.end_offset
    columns.update(cluster=[cluster] * n, node=[node] * n, log_dir=[log_dir] * n, end_offset=[end] * n)
    return pa.Table.from_pydict(columns, schema=rows.METADATA)


def _meta_row(seq: int, entry: MetadataEntry, names: dict[str, str]) -> dict | None:
    """The ``rows.METADATA`` row of one record (``names``: topic ID -> name so far, updated)."""
    d = entry.data
    kind = entry.type_name
    row = {
        "seq": seq,
        "offset": entry.offset,
        "from_snapshot": entry.from_snapshot,
        "timestamp": entry.timestamp,
        "record_type": kind,
        **_NOT_NULL,
    }
    if kind == "TOPIC_RECORD":
        names[d["topicId"]] = d["name"]
        row["topic"], row["topic_id"] = d["name"], d["topicId"]
    elif kind == "REMOVE_TOPIC_RECORD":
        row["topic_id"] = d["topicId"]
        row["topic"] = names.get(d["topicId"])
    elif kind == "CONFIG_RECORD":
        rtype = d.get("resourceType")
        if rtype not in (TOPIC_RESOURCE, BROKER_RESOURCE):
            return None
        row["config_resource_type"], row["config_resource"] = rtype, d.get("resourceName")
        if rtype == TOPIC_RESOURCE:
            row["topic"] = d.get("resourceName")
        row["config_name"], row["config_value"] = d.get("name"), d.get("value")
    elif kind in _BROKER_RECORDS:
        _broker_fields(row, kind, d)
    else:
        row["topic_id"] = d["topicId"]
        row["topic"] = names.get(d["topicId"])
        row["partition"] = d.get("partitionId")
        row["leader"] = d.get("leader", -2 if kind == "PARTITION_CHANGE_RECORD" else -1)
        row["isr"] = d.get("isr")
        row["replicas"] = d.get("replicas")
        row["elr"] = d.get("eligibleLeaderReplicas")
        row["last_known_elr"] = d.get("lastKnownElr")
        dirs = d.get("directories")
        row["directories"] = [str(x) for x in dirs] if dirs is not None else None
        if kind == "PARTITION_RECORD":
            row["leader_epoch"] = d.get("leaderEpoch", -1)
            row["partition_epoch"] = d.get("partitionEpoch", -1)
            row["leader_recovery_state"] = d.get("leaderRecoveryState", 0)
        else:
            row["leader_recovery_state"] = d.get("leaderRecoveryState", -1)
    return row


_BROKER_RECORDS = frozenset(
    {
        "REGISTER_BROKER_RECORD",
        "UNREGISTER_BROKER_RECORD",
        "FENCE_BROKER_RECORD",
        "UNFENCE_BROKER_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
    }
)


def _broker_fields(row: dict, kind: str, d: dict) -> None:
    """Broker id, epoch, fencing and controlled shutdown of a broker record (Fence/Unfence name them ``id``
    and ``epoch``; a ``BrokerRegistrationChangeRecord`` carries changes: fenced 1 fence, -1 unfence, 0 none;
    inControlledShutdown 1 entering it, 0 none)."""
    row["broker_id"] = d.get("brokerId", d.get("id"))
    row["broker_epoch"] = d.get("brokerEpoch", d.get("epoch"))
    if kind == "REGISTER_BROKER_RECORD":
        row["fenced"] = bool(d.get("fenced", True))
        row["in_controlled_shutdown"] = bool(d.get("inControlledShutdown", False))
    elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
        row["fenced"] = FENCING_CHANGE.get(d.get("fenced", 0))
        row["in_controlled_shutdown"] = True if d.get("inControlledShutdown", 0) == 1 else None
