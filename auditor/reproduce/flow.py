"""One ``reproduce`` run: the plan of the file checked against the cluster (topics and partitions exist, which
topics are compacted, which records are already there, which keys have a newer record), then, with
``--execute``, the records produced in offset order by the idempotent producer, each with its fingerprint
header."""

from __future__ import annotations

import time

from auditor.reproduce.cluster import Cluster
from auditor.reproduce.plan import PartitionPlan, Plan, key_digest
from auditor.reproduce.records import HEADER, ReproduceError, read_records


def check(plan: Plan, cluster: Cluster) -> None:
    """Fill ``plan`` with what the cluster holds; a topic or partition it lacks is a :class:`ReproduceError`
    naming the first line of the file that names it."""
    topics = cluster.topics()
    for p in plan.partitions.values():
        count = topics.get(p.topic, -1)
        if count == -1 or count is None:
            raise ReproduceError(
                f"{plan.path} line {p.line}: topic '{p.topic}' does not exist on the cluster at "
                f"{cluster.bootstrap} (create it with the partitions and configs it had, then run again)"
            )
        if p.partition >= count:
            raise ReproduceError(
                f"{plan.path} line {p.line}: topic '{p.topic}' has no partition {p.partition} on the cluster "
                f"at {cluster.bootstrap} (it has {count})"
            )
    configs = cluster.topic_configs(sorted(plan.topics()))
    for p in plan.partitions.values():
        config = configs.get(p.topic, {})
        p.compacted = "compact" in (config.get("cleanup.policy") or "").split(",")
        p.timestamp_type = config.get("message.timestamp.type")
        limit = config.get("message.timestamp.before.max.ms")
        p.before_max_ms = int(limit) if limit and limit.isdigit() else None
        p.too_old = (
            p.before_max_ms is not None
            and p.timestamp_type != "LogAppendTime"
            and p.min_timestamp is not None
            and p.min_timestamp < time.time() * 1000 - p.before_max_ms
        )
        read_partition(p, cluster)


def read_partition(p: PartitionPlan, cluster: Cluster) -> None:
    """Read the partition on its current leader, once, from the first offset that can matter up to its high
    watermark: records carrying the :data:`HEADER` of one of the plan's fingerprints are already there
    (they were produced again with their own timestamps, so they sit at or after the first offset whose
    timestamp is the plan's oldest); in a compacted topic, a record of the same key from the lost records'
    first batch base offset on (written by the leader elected since), and not produced again by this
    command, supersedes them. Memory: the plan's fingerprints and key digests, one record at a time."""
    if not p.entries:
        return
    low, high = cluster.watermarks(p.topic, p.partition)
    expected = {e.fingerprint for e in p.entries}
    starts = [low]
    if p.min_timestamp is not None and p.min_timestamp >= 0:
        found = cluster.offset_for_time(p.topic, p.partition, p.min_timestamp)
        starts = [high if found is None else found]
    keys: dict[bytes, list[int]] = {}
    if p.compacted:
        for e in p.entries:
            if e.key is not None:
                keys.setdefault(e.key, []).append(e.offset)
        if keys and p.first_base_offset is not None:
            starts.append(p.first_base_offset)
    start = min(max(min(starts), low), high)
    p.scanned = (start, high)
    newer: set[bytes] = set()
    for offset, key, headers in cluster.scan(p.topic, p.partition, start, high):
        ours = False
        for name, value in headers:
            if name == HEADER and value is not None:
                text = value.decode("utf-8", "replace")
                if text in expected:
                    p.present.add(text)
                    ours = True
        if keys and not ours and key is not None and offset >= (p.first_base_offset or 0):
            digest = key_digest(key)
            if digest in keys:
                newer.add(digest)
    for digest in newer:
        p.superseded.update(keys[digest])


def execute(plan: Plan, cluster: Cluster) -> None:
    """Produce the plan's selected records (a second pass over the file, in its order: each partition's in
    offset order), each with its fingerprint header; wait until the brokers acknowledged or refused every
    one (``produced`` and ``failed`` of each partition)."""
    selected = plan.selected()
    wanted = {e.line: e.fingerprint for p in plan.partitions.values() for e in p.entries}
    plan.executed = True
    if not selected:
        return
    for record in read_records(plan.path):
        p = selected.get(record.line)
        if p is None:
            continue
        fingerprint = record.fingerprint()
        if fingerprint != wanted.get(record.line):
            raise ReproduceError(f"{plan.path} line {record.line}: changed while the command read it")

        def done(error: str | None, offset: int, p: PartitionPlan = p, original: int = record.offset) -> None:
            if error is None:
                p.produced.append(offset)
            else:
                p.failed.append((original, error))

        headers = [*record.headers, (HEADER, fingerprint.encode())]
        cluster.produce(
            record.topic, record.partition, record.key, record.value, headers, record.timestamp, done
        )
    cluster.flush()
