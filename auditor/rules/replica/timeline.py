"""KA624-KA626: the KRaft timeline of a partition against the replicas' leader-epoch caches and batches."""

from __future__ import annotations
