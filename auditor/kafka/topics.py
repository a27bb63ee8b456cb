"""Kafka's internal topics and which partitions compaction is in play for."""

from __future__ import annotations

METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log (``__cluster_metadata-0``): replicated by Raft, always recovered from offset 0."""
OFFSETS_TOPIC = "__consumer_offsets"
"""The group coordinator's log: offset commits and group metadata (``offsets.topic.num.partitions``, 50)."""
TRANSACTION_STATE_TOPIC = "__transaction_state"
"""The transaction coordinator's log: one state record per transactional id."""
COMPACTED_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, "__share_group_state"})
"""Kafka's internal topics, all ``cleanup.policy=compact``."""
