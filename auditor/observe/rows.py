"""Arrow (and derived Spark) schemas of what extraction yields from broker log directories.

An extract is one flat table per kind (:data:`TABLES`), each in its own schema below. ``kafka-auditor
extract --out DIR`` writes one Parquet file per kind (``DIR/batch.parquet``, ...:
:mod:`auditor.observe.extract_files`), the Spark executors that parse raw directories stream the same flat
tables to Parquet, and ``audit`` reads both into the same DataFrames:

* ``batch``    one row per record batch of a live partition directory (the columnar header walk);
* ``epoch``    one row per entry of a replica's leader-epoch cache (after Kafka's load-time ``assign``);
* ``replica``  one row per partition replica: checkpointed high watermark, recovery point, log start
  offset, cleaner offset, log end offset (LEO) and how the log ends (torn or corrupt tail);
* ``record``   one row per record of a compacted partition: its offset and a hash of key, value, headers;
* ``metadata`` one row per KRaft metadata record about topics, partitions and brokers (``TopicRecord``,
  ``PartitionRecord``, ``PartitionChangeRecord``, ``RemoveTopicRecord``, topic and broker ``ConfigRecord``,
  broker registration, fencing and unfencing records), in replay order (snapshot first, then the log);
* ``commit``   one row per group coordinator record of a ``__consumer_offsets`` replica (offset commits,
  group metadata keys and tombstones);
* ``txn_state`` one row per transaction coordinator record of a ``__transaction_state`` replica.

Unsigned 32-bit CRCs are stored as int64 (Spark has no unsigned types). ``cluster`` is the
``cluster.id`` of ``meta.properties`` unless the audit assigns a label.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 4
"""Version of the extract's schemas, in the key-value metadata of every extract file: 4 is the directory of
flat per-kind files with ``record_hash`` over Kafka's encoding of a record's content
(``records.record_hash``); 3, the same directory with the hash of an earlier definition; 2 and before, one
Parquet file in the :data:`EXTRACT` layout (all refused: extract again)."""

_KEY = [
    pa.field("cluster", pa.string()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("broker", pa.int32()),
    pa.field("log_dir", pa.string()),
]

_TP = pa.field("tp", pa.int64())
"""The partition's key (``partition_key.partition_key``: Spark's ``xxhash64(cluster, topic, partition)``) on
the two tables of millions of rows, so that the audit's digest scan reads no string and its second scan
hashes none (:data:`DERIVED`)."""

DERIVED = frozenset({"tp"})
"""Columns an extract file may lack (one written before they were added, in the same schema version): each
is worked out from the others where it is missing (``tp``: ``partition_key.with_partition_key``, in Spark
``auditor.spark.extract.parquet_extract``)."""

BATCH = pa.schema(
    _KEY
    + [
        pa.field("segment", pa.int64()),  # base offset in the segment's file name
        pa.field("position", pa.int64()),  # byte position of the batch in the segment
        pa.field("base_offset", pa.int64()),
        pa.field("last_offset", pa.int64()),
        pa.field("partition_leader_epoch", pa.int32()),
        pa.field("magic", pa.int8()),
        pa.field("crc", pa.int64()),  # stored CRC (unsigned 32 bits)
        # stored CRC == computed CRC and a known magic; in a segment Kafka's loader trusts (below the recovery
        # point of a cleanly shut down log, read header by header) the CRC is not computed: known magic only
        pa.field("valid", pa.bool_()),
        pa.field("live", pa.bool_()),  # part of the log Kafka would load (not cut by recovery)
        pa.field("size", pa.int32()),  # bytes including the 12-byte log overhead
        pa.field("attributes", pa.int16()),
        pa.field("max_timestamp", pa.int64()),
        pa.field("producer_id", pa.int64()),
        pa.field("producer_epoch", pa.int16()),
        pa.field("base_sequence", pa.int32()),
        pa.field("records_count", pa.int32()),
        pa.field("is_control", pa.bool_()),
        pa.field("is_transactional", pa.bool_()),
        pa.field("codec", pa.int8()),
        # type of the first control record of a control batch (0 ABORT, 1 COMMIT, 2..6 KRaft control
        # records, -1 unreadable or unknown); null for data batches
        pa.field("control_type", pa.int8()),
        _TP,
    ]
)

EPOCH = pa.schema(
    _KEY
    + [
        pa.field("epoch", pa.int32()),
        pa.field("start_offset", pa.int64()),
        pa.field("ordinal", pa.int32()),  # position in the normalised cache
    ]
)

REPLICA = pa.schema(
    _KEY
    + [
        pa.field("topic_id", pa.string()),  # partition.metadata
        pa.field("hw", pa.int64()),  # replication-offset-checkpoint (null: no entry)
        pa.field("recovery_point", pa.int64()),  # recovery-point-offset-checkpoint (null: no entry)
        pa.field("log_start_checkpoint", pa.int64()),  # log-start-offset-checkpoint (null: no entry)
        pa.field("log_start", pa.int64()),  # max(checkpoint, base offset of the first segment)
        pa.field("cleaner_offset", pa.int64()),  # cleaner-offset-checkpoint (null: no entry)
        pa.field("leo", pa.int64()),  # the LEO Kafka loads, after recovery (auditor.kafka.recovery; = scan's)
        pa.field("leo_on_disk", pa.int64()),  # next offset after the last complete batch, valid or not
        pa.field("clean_shutdown", pa.bool_()),
        pa.field("compacted", pa.bool_()),  # compacted topic (cleaner checkpoint, topic config, internal)
        pa.field("has_records", pa.bool_()),  # record rows were extracted for this replica
        pa.field("segment_count", pa.int32()),
        pa.field("first_segment", pa.int64()),
        pa.field("last_segment", pa.int64()),
        pa.field("batch_count", pa.int64()),  # complete batches in the files
        pa.field("record_count", pa.int64()),  # records in them
        pa.field("bytes", pa.int64()),  # their bytes
        pa.field("first_offset", pa.int64()),  # base offset of the first batch
        pa.field("max_batch_epoch", pa.int32()),  # highest partitionLeaderEpoch of a batch
        pa.field("latest_epoch", pa.int32()),  # latest epoch of the normalised leader-epoch cache
        pa.field("epoch_entries", pa.int32()),
        pa.field("epoch_dropped", pa.int32()),  # checkpoint lines Kafka's load-time assign drops
        pa.field("invalid_batches", pa.int32()),
        pa.field("tail_state", pa.string()),  # end | torn-tail | corrupt (first non-clean segment end)
        pa.field("tail_segment", pa.int64()),
        pa.field("tail_position", pa.int64()),
        pa.field("tail_bytes", pa.int64()),  # bytes recovery would truncate there
        pa.field("tail_message", pa.string()),
        pa.field("recovered", pa.bool_()),  # Kafka's next load cuts the log (recoverLog, or a missing .index)
        pa.field("error", pa.string()),  # what could not be read
        # offsets whose batches could not be read (an unreadable segment: not a regular file, an I/O error,
        # a parse error; or a segment that is not the last and stops early): from, to (null: to the end, the
        # log end offset is then unknown and ``leo`` is only a lower bound), and which file and why
        pa.field("unreadable_from", pa.int64()),
        pa.field("unreadable_to", pa.int64()),
        pa.field("unreadable", pa.string()),
        pa.field("dir_name", pa.string()),  # the partition directory's name
        pa.field("dir_kind", pa.string()),  # live | future | delete | stray (null: live, an older extract)
        pa.field("directory_id", pa.string()),  # directory.id of the log dir's meta.properties (KIP-858)
    ]
)

RECORD = pa.schema(
    _KEY
    + [
        pa.field("offset", pa.int64()),
        pa.field("batch_base_offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
        pa.field("record_hash", pa.int64()),  # blake2b-64 of key, value and headers (records.record_hash)
        pa.field("is_control", pa.bool_()),
        pa.field("size", pa.int32()),
        _TP,
    ]
)

METADATA = pa.schema(
    [
        pa.field("cluster", pa.string()),
        pa.field("node", pa.int32()),  # node whose __cluster_metadata replica this came from
        pa.field("log_dir", pa.string()),
        pa.field("seq", pa.int64()),  # replay order within this node's metadata
        pa.field("offset", pa.int64()),  # metadata log offset (-1 for snapshot records)
        pa.field("from_snapshot", pa.bool_()),
        pa.field("end_offset", pa.int64()),  # end offset of this node's metadata log
        pa.field("timestamp", pa.int64()),  # batch max timestamp
        pa.field("record_type", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("topic_id", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("leader", pa.int32()),  # -2: unchanged (PartitionChangeRecord), -1: none
        pa.field("leader_epoch", pa.int32()),  # PartitionRecord only, else -1
        pa.field("isr", pa.list_(pa.int32())),
        pa.field("replicas", pa.list_(pa.int32())),
        pa.field("leader_recovery_state", pa.int8()),  # -1: unchanged
        pa.field("config_name", pa.string()),
        pa.field("config_value", pa.string()),
        # PartitionRecord's partition epoch (-1 otherwise: every PartitionChangeRecord bumps it by one)
        pa.field("partition_epoch", pa.int32()),
        pa.field("elr", pa.list_(pa.int32())),  # eligibleLeaderReplicas (null: unchanged / absent)
        pa.field("last_known_elr", pa.list_(pa.int32())),  # lastKnownElr (null: unchanged / absent)
        pa.field("directories", pa.list_(pa.string())),  # log directory IDs (null: unchanged / absent)
        pa.field("config_resource_type", pa.int8()),  # ConfigRecord: 2 topic, 4 broker
        pa.field("config_resource", pa.string()),  # ConfigRecord's resource name (broker id, "" = cluster)
        # broker records (Register/Unregister/Fence/Unfence/BrokerRegistrationChange)
        pa.field("broker_id", pa.int32()),
        pa.field("broker_epoch", pa.int64()),
        pa.field("fenced", pa.bool_()),  # null: unchanged
        pa.field("in_controlled_shutdown", pa.bool_()),  # null: unchanged
    ]
)

_LOGGED = [
    pa.field("offset", pa.int64()),  # of the record in the internal topic's log
    pa.field("batch_base_offset", pa.int64()),
    pa.field("timestamp", pa.int64()),  # record timestamp, ms since the epoch
    pa.field("producer_id", pa.int64()),
    pa.field("producer_epoch", pa.int16()),
    pa.field("is_transactional", pa.bool_()),
    # auditor.kafka.transactions.classify of its batch in this replica's log: plain, committed, aborted, open
    pa.field("txn_state", pa.string()),
    pa.field("live", pa.bool_()),  # part of the log Kafka would load (not cut by recovery)
    pa.field("tombstone", pa.bool_()),  # null value: the key's state is deleted
]

_TOPIC_PARTITION = pa.struct(
    [
        ("topic", pa.string()),  # classic assignments name the topic
        ("topic_id", pa.string()),  # KIP-848 assignments give its id (base64url)
        ("partition", pa.int32()),
    ]
)
"""One partition of a group member's assignment."""

_GROUP_MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),  # static membership (groupInstanceId / InstanceId); null: none
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("rack_id", pa.string()),  # KIP-848 only (null: none)
        ("rebalance_timeout_ms", pa.int32()),
        ("session_timeout_ms", pa.int32()),  # classic (and a KIP-848 member on the classic protocol)
        ("subscribed_topic_names", pa.list_(pa.string())),
        ("subscribed_topic_regex", pa.string()),  # KIP-848 only
        ("server_assignor", pa.string()),  # KIP-848 only (null: the group's default)
        ("classic", pa.bool_()),  # joined with the classic protocol (a KIP-848 member: ClassicMemberMetadata)
        # classic: the assignment the leader gave (decoded ConsumerProtocolAssignment; null: not decodable)
        ("assignment", pa.list_(_TOPIC_PARTITION)),
    ]
)
"""A group member as a group metadata record stores it."""

COMMIT = pa.schema(
    _KEY
    + _LOGGED
    + [
        pa.field("record_type", pa.int16()),  # key type: 0/1 offset commit, 2 group metadata, 3.. KIP-848
        pa.field("group", pa.string()),
        pa.field("commit_topic", pa.string()),  # offset commits only
        pa.field("commit_partition", pa.int32()),
        pa.field("committed_offset", pa.int64()),
        pa.field("committed_leader_epoch", pa.int32()),  # -1: none
        pa.field("commit_metadata", pa.string()),
        pa.field("commit_timestamp", pa.int64()),  # ms since the epoch
        pa.field("expire_timestamp", pa.int64()),  # -1: none (value versions above 1)
        pa.field("value_version", pa.int16()),  # null: tombstone or undecoded
        pa.field("error", pa.string()),  # a record that does not decode (its other columns null)
        # classic group metadata (type 2, GroupMetadataValue)
        pa.field("protocol_type", pa.string()),  # protocolType: consumer, connect, ... ("" none)
        pa.field("generation", pa.int32()),  # the generation id
        pa.field("protocol_name", pa.string()),  # protocol: the assignor the group chose (null: none)
        pa.field("group_leader", pa.string()),  # leader: the leader's member id (null: none)
        pa.field("state_timestamp", pa.int64()),  # currentStateTimestamp (-1: none)
        # KIP-848 consumer groups (types 3-8)
        pa.field("group_epoch", pa.int32()),  # 3: ConsumerGroupMetadataValue.Epoch
        pa.field("assignment_epoch", pa.int32()),  # 6: the target assignment epoch
        pa.field("member_id", pa.string()),  # 5, 7, 8 (share groups: 10, 13, 14): the key's MemberId
        pa.field("member_epoch", pa.int32()),  # 8: MemberEpoch
        pa.field("previous_member_epoch", pa.int32()),  # 8: PreviousMemberEpoch
        pa.field("member_state", pa.int8()),  # 8: State (MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, ...)
        # 2: every member of the classic group; 5: the key's member (ConsumerGroupMemberMetadataValue)
        pa.field("members", pa.list_(_GROUP_MEMBER)),
        # 7: the member's target assignment (TopicPartitions); 8: its current AssignedPartitions
        pa.field("assigned_partitions", pa.list_(_TOPIC_PARTITION)),
        pa.field("partitions_pending_revocation", pa.list_(_TOPIC_PARTITION)),  # 8
        # 4: the subscription metadata's topics (ConsumerGroupPartitionMetadataValue: id, name, partitions)
        pa.field(
            "subscribed_topics",
            pa.list_(
                pa.struct([("topic_id", pa.string()), ("topic", pa.string()), ("num_partitions", pa.int32())])
            ),
        ),
    ]
)
"""Group coordinator records of ``__consumer_offsets`` replicas: offset commits, classic group metadata and
the KIP-848 consumer group records (group, member, target and current assignment), and their tombstones."""

TXN_STATE = pa.schema(
    _KEY
    + _LOGGED
    + [
        pa.field("transactional_id", pa.string()),
        pa.field("txn_producer_id", pa.int64()),  # the value's ProducerId
        pa.field("previous_producer_id", pa.int64()),  # -1: none
        pa.field("next_producer_id", pa.int64()),  # -1: none
        pa.field("txn_producer_epoch", pa.int16()),
        pa.field("timeout_ms", pa.int32()),
        pa.field("state", pa.string()),  # Empty, Ongoing, PrepareCommit, ... (TransactionState names)
        pa.field(
            "partitions",
            pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())])),
        ),
        pa.field("last_update_timestamp", pa.int64()),
        pa.field("start_timestamp", pa.int64()),
    ]
)
"""Transaction coordinator records of ``__transaction_state`` replicas (``TransactionLogKey``/``Value``)."""

TABLES: dict[str, pa.Schema] = {
    "batch": BATCH,
    "epoch": EPOCH,
    "replica": REPLICA,
    "record": RECORD,
    "metadata": METADATA,
    "commit": COMMIT,
    "txn_state": TXN_STATE,
}

EXTRACT = pa.schema(
    [pa.field("kind", pa.string())]
    + [pa.field(kind, pa.struct(list(schema))) for kind, schema in TABLES.items()]
)
"""``kind`` plus one struct column per table, the others null: the rows the driver extracts in memory for a
small audit (``auditor.spark.extract.driver_extract``) and, before schema version 3, the layout of the
single-file extract (no longer read)."""

FINDING = pa.schema(
    [
        pa.field("cluster", pa.string()),
        pa.field("code", pa.string()),
        pa.field("severity", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("broker", pa.int32()),
        pa.field("peer", pa.int32()),  # the other replica (leader or pair member)
        pa.field("log_dir", pa.string()),
        pa.field("offset_start", pa.int64()),
        pa.field("offset_end", pa.int64()),  # inclusive, like auditor.findings.Finding
        pa.field("epoch", pa.int32()),
        pa.field("records", pa.int64()),
        pa.field("bytes", pa.int64()),
        pa.field("message", pa.string()),
        pa.field("evidence", pa.string()),  # JSON object
        pa.field("time", pa.string()),  # capture time (ISO-8601 UTC) of history findings (``report``)
    ]
)
"""Findings of the cross-replica comparisons, as a Spark DataFrame and in ``--save`` Parquet; ``evidence``
stays a JSON object in a string: its keys are free-form, per rule."""

# ----------------------------------------------------------- outputs of the per-partition rules (``audit``)

_LEADER = [
    pa.field("leader", pa.int32()),  # the reference (current) leader's broker id
    pa.field("leader_source", pa.string()),  # kraft, kraft-last-known, inferred(-kraft-leader-absent)
]
_KRAFT = [
    pa.field("kraft_leader", pa.int32()),
    pa.field("kraft_leader_epoch", pa.int32()),
    pa.field("kraft_isr", pa.list_(pa.int32())),  # broker ids
    pa.field("kraft_leader_recovery_state", pa.int32()),
]


def _of(schema: pa.Schema, names: str) -> list[pa.Field]:
    """The fields ``names`` (space-separated) of ``schema``."""
    return [schema.field(name) for name in names.split()]


LAG = pa.schema(
    _KEY
    + _LEADER
    + [
        pa.field("from", pa.int64()),  # the follower's log end offset
        pa.field("to", pa.int64()),  # the leader's
        pa.field("epoch", pa.int32()),  # leader epoch at ``from`` in the leader's cache
        pa.field("in_isr", pa.bool_()),  # null: no KRaft metadata
        pa.field("isr", pa.list_(pa.int32())),  # broker ids (KRaft metadata; null: none)
    ]
)
"""A follower whose log is a prefix of the leader's and ends below it (KA630, counted by Spark)."""

SUMMARY = pa.schema(
    _KEY
    + [pa.field("is_leader", pa.bool_())]
    + _LEADER
    + _of(REPLICA, "leo leo_on_disk hw log_start recovery_point cleaner_offset latest_epoch max_batch_epoch")
    + _of(REPLICA, "clean_shutdown compacted tail_state tail_bytes")
    + [pa.field("leo_known", pa.bool_())]  # false: unreadable to the end, ``leo`` is a lower bound
    + _of(REPLICA, "unreadable_from unreadable_to unreadable")
    + [
        pa.field("divergence", pa.int64()),  # first offset differing from the leader
        pa.field("truncation_offset", pa.int64()),  # where OffsetsForLeaderEpoch truncates it
        # its leader-epoch cache as loaded (entries in file order)
        pa.field("epochs", pa.list_(pa.struct([("epoch", pa.int32()), ("start_offset", pa.int64())]))),
    ]
    + _KRAFT
)
"""One row per replica: what the audit concluded about it (``--save``: ``replicas/``)."""

TIMELINE = pa.schema(
    _KEY[:4]
    + [pa.field("epoch", pa.int32())]  # partitionLeaderEpoch of the batches
    + [pa.field(name, pa.int64()) for name in ("first", "last", "records", "bytes", "batches")]
    # the lowest and highest batch max timestamp among them
    + [pa.field("first_timestamp", pa.int64()), pa.field("last_timestamp", pa.int64())]
)
"""The leader-epoch ranges of every replica's batches, for partitions that diverged."""

_I64 = pa.int64()
_I32 = pa.int32()
_PARTITION_KEY = _KEY[:3]
_COUNTS = [pa.field(name, _I64) for name in ("records", "bytes", "batches")] + [
    pa.field("first_timestamp", _I64),  # batch max timestamps: of the first batch, the newest
    pa.field("last_timestamp", _I64),
]

LAG_COUNTED = pa.schema(list(LAG) + _COUNTS)
"""A :data:`LAG` row with the leader's records, bytes and batches from the follower's LEO on."""

_AT_BATCH = pa.struct([("last_offset", _I64), ("leader_epoch", _I32), ("crc", _I64), ("valid", pa.bool_())])
_PAIR = _PARTITION_KEY + [pa.field("a", _I32), pa.field("b", _I32)]

PAIR = pa.schema(
    _PAIR
    + [pa.field(name, _I64) for name in ("cleaner_offset_a", "cleaner_offset_b")]
    + [pa.field(name, _I64) for name in ("ua_from", "ua_to", "ub_from", "ub_to")]  # unreadable spans
    + [pa.field("mode", pa.string()), pa.field("lo", _I64), pa.field("hi", _I64)]
)
"""A replica pair (brokers ``a < b``) with its common range ``[lo, hi)`` and comparison mode."""

DIVERGENCE = pa.schema(
    _PAIR
    + [pa.field("lo", _I64), pa.field("hi", _I64), pa.field("offset", _I64), pa.field("mode", pa.string())]
    + [
        pa.field(
            "detail",
            pa.struct(
                [
                    ("base_offset", _I64),
                    ("a", _AT_BATCH),
                    ("b", _AT_BATCH),
                    ("hash_a", _I64),
                    ("hash_b", _I64),
                ]
            ),
        )
    ]
)
"""The first offset where a replica pair differs inside its common range (``detail``: what each holds)."""

_MARKER = pa.struct(
    [
        ("offset", _I64),
        ("marker", pa.string()),
        ("producer_id", _I64),
        ("producer_epoch", _I32),
        ("first_offset", _I64),
        ("epoch", _I32),
    ]
)

LOST_RUN = pa.schema(
    _KEY
    + _LEADER
    + [pa.field("lo", _I64), pa.field("hi", _I64)]  # the offsets of the records ``records`` counts
    + [pa.field("span_lo", _I64), pa.field("span_hi", _I64)]  # the whole truncated span
    + [pa.field(name, _I64) for name in ("records", "bytes", "batches")]
    + [pa.field("epochs", pa.list_(_I32)), pa.field("committed_hw", _I64)]
    + [pa.field(n, _I64) for n in ("aborted_records", "open_records", "markers", "commit_markers")]
    + [pa.field("lost_markers", pa.list_(_MARKER)), pa.field("producer_ids", pa.list_(_I64))]
    + [pa.field("first_timestamp", _I64), pa.field("last_timestamp", _I64), pa.field("kind", pa.string())]
)
"""A run of follower offsets the leader lacks: ``kind`` committed or uncommitted (``--save``: ``lost/``)."""

EPOCH_RANGE = pa.schema(
    [pa.field("broker", _I32), pa.field("epoch", _I32)]
    + [pa.field(name, _I64) for name in ("first", "last")]
    + _COUNTS
    + _PARTITION_KEY
)
"""Per replica and batch leader epoch: offsets, records, bytes, batches and timestamps (``epochs/``)."""

COST = pa.schema(
    _PARTITION_KEY
    + [pa.field("leader", _I32), pa.field("broker", _I32)]
    + [pa.field(name, _I64) for name in ("first_difference", "from", "records", "committed", "markers")]
    + [pa.field(name, _I64) for name in ("bytes", "batches", "first", "last")]
)
"""What ``broker`` loses when candidate ``leader`` is elected (``auditor.spark.election``)."""

LOST_BATCH = pa.schema(
    _KEY
    + [
        pa.field("leader", _I32),
        pa.field("segment", _I64),
        pa.field("position", _I64),
        pa.field("size", _I32),
        pa.field("base_offset", _I64),
        pa.field("leader_epoch", _I32),
        pa.field("committed_hw", _I64),
        pa.field("start", _I64),
        pa.field("attributes", pa.int16()),
        pa.field("producer_id", _I64),
        pa.field("producer_epoch", pa.int16()),
        pa.field("base_sequence", _I32),
        pa.field("is_transactional", pa.bool_()),
        pa.field("txn_state", pa.string()),
    ]
)
"""A committed data batch the current leader lacks (``--export-lost`` decodes its records)."""

OPEN_TXN = pa.schema(
    _PARTITION_KEY
    + [
        pa.field("producer_id", _I64),
        pa.field("first_offset", _I64),
        pa.field("producer_epoch", pa.int16()),
        pa.field("last_offset", _I64),
        pa.field("records", _I64),
        pa.field("batches", _I64),
    ]
    + _LEADER
    + [pa.field("log_dir", pa.string())]
    + [pa.field(name, _I64) for name in ("hw", "leo", "log_start")]
    + [
        pa.field(
            "markers",
            pa.list_(
                pa.struct(
                    [
                        ("base_offset", _I64),
                        ("broker", _I32),
                        ("control_type", pa.int8()),
                        ("producer_epoch", pa.int16()),
                        ("markers", _I64),
                    ]
                )
            ),
        )
    ]
)
"""A transaction open on the current leader, with the first COMMIT/ABORT marker of its producer after its
first offset on each other replica (``auditor.spark.hanging``: KA713/KA714)."""

PASS_OUTPUTS: dict[str, pa.Schema] = {
    "finding": FINDING,
    "summary": SUMMARY,
    "timeline": TIMELINE,
    "lag": LAG_COUNTED,
    "loss": LOST_RUN,
    "divergence": DIVERGENCE,
    "pair": PAIR,
    "epochs": EPOCH_RANGE,
    "cost": COST,
    "open_txn": OPEN_TXN,
    "lost": LOST_BATCH,
}

PASS_OUTPUT = pa.schema([pa.field(kind, pa.struct(list(s))) for kind, s in PASS_OUTPUTS.items()])
"""What the pass over one partition (``auditor.spark.partition_pass``) yields: one struct column per output
kind, the others null (like :data:`EXTRACT`)."""


def wrap(kind: str, table: pa.Table | pa.RecordBatch) -> pa.RecordBatch | pa.Table:
    """Rows of one table in the extract layout (``kind`` set, the other struct columns null)."""
    n = table.num_rows
    columns = [repeat_string(kind, n)]
    for name, schema in TABLES.items():
        struct_type = pa.struct(list(schema))
        if name == kind:
            arrays = [_combined(table.column(f.name)) for f in schema]
            columns.append(pa.StructArray.from_arrays(arrays, fields=list(schema)))
        else:
            columns.append(pa.nulls(n, struct_type))
    cls = pa.RecordBatch if isinstance(table, pa.RecordBatch) else pa.Table
    return cls.from_arrays(columns, schema=EXTRACT)


def _combined(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def repeat_string(text: str, n: int) -> pa.Array:
    """A string array holding ``text`` ``n`` times, built from buffers (no Python objects per row)."""
    import numpy as np

    data = text.encode()
    offsets = (np.arange(n + 1, dtype=np.int32) * len(data)).tobytes()
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data * n))


def spark_schema(schema: pa.Schema):
    """The Spark ``StructType`` equivalent of an Arrow schema (imports pyspark)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
