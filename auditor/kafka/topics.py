"""Kafka's internal topics and which partitions compaction is in play for."""

from __future__ import annotations

METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log (``__cluster_metadata-0``): replicated by Raft, always recovered from offset 0."""
COMPACTED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's internal topics, all ``cleanup.policy=compact``."""
