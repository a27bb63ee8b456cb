"""Arrow schemas of the ingest warehouse: what ``kafka-auditor ingest`` writes from checkpoint captures and
what ``kafka-auditor report`` reads back (Spark, pandas and DuckDB read the same Parquet files).

A *capture* is one broker log dir's small files at one capture time: ``meta.properties``, the four offset
checkpoints (``replication-offset-checkpoint`` = high watermarks, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``), and per partition directory its
``leader-epoch-checkpoint`` and ``partition.metadata``. Every row of every table carries the identity of its
capture (:data:`CAPTURE_KEY`): ``captureId`` (SHA-256 of the capture's content, hex; ingesting the same
capture twice adds nothing), ``cluster``, ``broker``, ``logDir``, ``captureTime`` (UTC, ms) and
``captureDate``.

Tables (columns in camelCase, like every output of the tool; timestamps are Parquet timestamps, ms, UTC):

* ``captures``          one row per capture: where it came from, how its time and broker were found, counts;
* ``high_watermarks``   one row per entry of ``replication-offset-checkpoint``;
* ``recovery_points``   one row per entry of ``recovery-point-offset-checkpoint``;
* ``log_start_offsets`` one row per entry of ``log-start-offset-checkpoint``;
* ``cleaner_offsets``   one row per entry of ``cleaner-offset-checkpoint``;
* ``leader_epochs``     one row per entry of a partition's ``leader-epoch-checkpoint`` (``position``: its
  index in the file, from 0);
* ``brokers``           one row per ``meta.properties`` (node id, cluster id, directory id, version);
* ``partitions``        one row per partition directory of a capture (topic id from ``partition.metadata``);
* ``problems``          one row per malformed file (with its line and byte offset) or refused archive entry.

Every table is partitioned by ``cluster`` and ``captureDate`` (Hive style,
``<table>/cluster=<id>/captureDate=YYYY-MM-DD/part-*.parquet``); those two columns live in the directory
names, not in the files (:data:`PARTITION_COLUMNS`). :data:`WAREHOUSE_VERSION` is stored in the warehouse's
``warehouse.json`` and bumped on incompatible changes.
"""

from __future__ import annotations

import pyarrow as pa

from auditor.layout.warehouse import WAREHOUSE_VERSION as WAREHOUSE_VERSION  # with the on-disk layout

TIMESTAMP = pa.timestamp("ms", tz="UTC")
PARTITION_COLUMNS = ("cluster", "captureDate")
"""Hive partition columns of every table (in the directory names, not in the files)."""

TIME_SOURCES = ("manifest", "name", "archive", "mtime", "ingest")
"""Where a capture's time came from (``captures.timeSource``): the capture manifest's ``captureTime``, a
time in the capture's folder or archive name, the newest modification time of its members as the archive
recorded it, the newest modification time of its files in a directory (the time of the copy when the copy
did not keep the times), or the ingest's own time (no plausible time at all)."""
UNRELIABLE_TIME_SOURCES = frozenset({"mtime", "ingest"})
"""Time sources that may say when the files were copied or ingested rather than captured."""

CAPTURE_KEY = [
    pa.field("captureId", pa.string(), nullable=False),  # SHA-256 (hex) of the capture's files and contents
    pa.field("cluster", pa.string(), nullable=False),  # cluster.id (or --cluster)
    pa.field("broker", pa.int32()),  # node.id (broker.id) of meta.properties, or the manifest's
    pa.field("logDir", pa.string()),  # the log dir as captured (manifest, else the capture's path)
    pa.field("captureTime", TIMESTAMP, nullable=False),
    pa.field("captureDate", pa.string(), nullable=False),  # YYYY-MM-DD (UTC) of captureTime
]

_TP = [pa.field("topic", pa.string(), nullable=False), pa.field("partition", pa.int32(), nullable=False)]
_LINE = pa.field("line", pa.int32())  # 1-based line of the entry in its checkpoint file

CAPTURES = pa.schema(
    CAPTURE_KEY
    + [
        pa.field("source", pa.string()),  # the directory or archive given to ingest (as given)
        pa.field("root", pa.string()),  # the capture's directory inside the source ("" = the source itself)
        pa.field("timeSource", pa.string()),  # where captureTime came from: one of TIME_SOURCES
        pa.field("files", pa.int32()),  # files of the capture read
        pa.field("bytes", pa.int64()),  # their total size
        pa.field("partitionDirs", pa.int32()),
        pa.field("problems", pa.int32()),  # rows of the problems table for this capture
        pa.field("cleanShutdown", pa.bool_()),  # .kafka_cleanshutdown present: the broker was stopped
        pa.field("brokerStartTime", TIMESTAMP),  # from the manifest, when it records it
        pa.field("ingestId", pa.string()),  # the ingest run that added it
        pa.field("ingestedAt", TIMESTAMP),
    ]
)

OFFSETS = pa.schema(CAPTURE_KEY + _TP + [pa.field("offset", pa.int64(), nullable=False), _LINE])
"""The layout of the four offset-checkpoint tables."""

LEADER_EPOCHS = pa.schema(
    CAPTURE_KEY
    + _TP
    + [
        pa.field("epoch", pa.int32(), nullable=False),
        pa.field("startOffset", pa.int64(), nullable=False),
        pa.field("position", pa.int32(), nullable=False),  # index of the entry in the file, from 0
        _LINE,
    ]
)

BROKERS = pa.schema(
    CAPTURE_KEY
    + [
        pa.field("version", pa.int32()),  # meta.properties version (0 ZooKeeper, 1 KRaft)
        pa.field("nodeId", pa.int32()),  # node.id (KRaft) or broker.id (ZooKeeper)
        pa.field("clusterId", pa.string()),
        pa.field("directoryId", pa.string()),  # KIP-858, Kafka 3.7+
    ]
)

PARTITIONS = pa.schema(
    CAPTURE_KEY
    + _TP
    + [
        pa.field("directory", pa.string()),  # the partition directory's name (e.g. orders-3)
        pa.field("topicId", pa.string()),  # partition.metadata's topic_id, when present and valid
    ]
)

PROBLEMS = pa.schema(
    CAPTURE_KEY
    + [
        pa.field("kind", pa.string(), nullable=False),  # malformed | refused | unreadable | unidentified
        pa.field("source", pa.string()),  # the directory or archive given to ingest
        pa.field("file", pa.string()),  # the file (or archive entry) concerned, relative to the source
        pa.field("line", pa.int32()),  # 1-based line of a malformed text file
        pa.field("offset", pa.int64()),  # byte offset in that file
        pa.field("message", pa.string()),
    ]
)

OFFSET_TABLES: dict[str, str] = {
    "replication-offset-checkpoint": "high_watermarks",
    "recovery-point-offset-checkpoint": "recovery_points",
    "log-start-offset-checkpoint": "log_start_offsets",
    "cleaner-offset-checkpoint": "cleaner_offsets",
}
"""Offset checkpoint file -> its table."""

TABLES: dict[str, pa.Schema] = {
    "captures": CAPTURES,
    **{table: OFFSETS for table in OFFSET_TABLES.values()},
    "leader_epochs": LEADER_EPOCHS,
    "brokers": BROKERS,
    "partitions": PARTITIONS,
    "problems": PROBLEMS,
}
"""Every table of the warehouse and its full schema (partition columns included)."""


def file_schema(table: str) -> pa.Schema:
    """The schema of ``table``'s Parquet files: :data:`TABLES` less the partition columns."""
    schema = TABLES[table]
    return pa.schema([f for f in schema if f.name not in PARTITION_COLUMNS])


def empty(table: str) -> pa.Table:
    """An empty table of ``table``'s full schema."""
    return TABLES[table].empty_table()
