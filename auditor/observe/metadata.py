"""KRaft metadata rows (``rows.METADATA``) of a node's ``__cluster_metadata-0``, in replay order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from auditor.kafka.kraft import (
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    MetadataEntry,
    MetadataReplay,
)
from auditor.kafka.topics import METADATA_TOPIC
from auditor.layout.inventory import complete_kraft_snapshots, segment_logs
from auditor.observe import rows


@dataclass
class _MetaRow:
    seq: int
    offset: int
    from_snapshot: bool
    timestamp: int
    record_type: str
    topic: str | None = None
    topic_id: str | None = None
    partition: int | None = None
    leader: int = -2
    leader_epoch: int = -1
    isr: list[int] | None = None
    replicas: list[int] | None = None
    leader_recovery_state: int = -1
    config_name: str | None = None
    config_value: str | None = None


METADATA_KEYS = frozenset(
    {TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD}
)
"""The records the audit's metadata rows hold."""


def extract_metadata(log_dir: str, node: int, cluster: str) -> pa.Table:
    """Topic, partition and topic-config records of a node's ``__cluster_metadata-0`` in replay order
    (``auditor.kafka.kraft.MetadataReplay`` with history: the log records below the latest snapshot's end
    offset, the snapshot, then the log from its end offset)."""
    part_dir = Path(log_dir) / f"{METADATA_TOPIC}-0"
    replay = MetadataReplay(segment_logs(part_dir), complete_kraft_snapshots(part_dir), METADATA_KEYS)
    out: list[_MetaRow] = []
    names: dict[str, str] = {}
    for entry in replay.entries(history=True):
        row = _meta_row(len(out), entry, names)
        if row is not None:
            out.append(row)
    n = len(out)
    columns = {f.name: [getattr(r, f.name, None) for r in out] for f in rows.METADATA}
    end = replay.end_offset
    columns.update(cluster=[cluster] * n, node=[node] * n, log_dir=[log_dir] * n, end_offset=[end] * n)
    return pa.Table.from_pydict(columns, schema=rows.METADATA)


def _meta_row(seq: int, entry: MetadataEntry, names: dict[str, str]) -> _MetaRow | None:
    """The ``rows.METADATA`` row of one record (``names``: topic ID -> name so far, updated)."""
    d = entry.data
    kind = entry.type_name
    row = _MetaRow(seq, entry.offset, entry.from_snapshot, entry.timestamp, kind)
    if kind == "TOPIC_RECORD":
        names[d["topicId"]] = d["name"]
        row.topic, row.topic_id = d["name"], d["topicId"]
    elif kind == "REMOVE_TOPIC_RECORD":
        row.topic_id = d["topicId"]
        row.topic = names.get(d["topicId"])
    elif kind == "CONFIG_RECORD":
        if d.get("resourceType") != 2:
            return None
        row.topic = d.get("resourceName")
        row.config_name, row.config_value = d.get("name"), d.get("value")
    else:
        row.topic_id = d["topicId"]
        row.topic = names.get(d["topicId"])
        row.partition = d.get("partitionId")
        row.leader = d.get("leader", -2 if kind == "PARTITION_CHANGE_RECORD" else -1)
        row.isr = d.get("isr")
        row.replicas = d.get("replicas")
        if kind == "PARTITION_RECORD":
            row.leader_epoch = d.get("leaderEpoch", -1)
            row.leader_recovery_state = d.get("leaderRecoveryState", 0)
        else:
            row.leader_recovery_state = d.get("leaderRecoveryState", -1)
    return row
