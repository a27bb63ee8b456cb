"""What ``reproduce`` would produce, per topic-partition: the exported records (a first pass over the file
keeps only their offsets, fingerprints, key digests and sizes, never their values), what the cluster already
holds, and which records are left out and why."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from auditor.reproduce.records import LostRecord, ReproduceError, read_records


def key_digest(key: bytes) -> bytes:
    """128 bits standing for a record key in the compacted-topic check (a set of them, whatever the keys'
    sizes)."""
    return hashlib.blake2b(key, digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One readable exported record, as the plan keeps it."""

    line: int
    offset: int
    fingerprint: str
    key: bytes | None
    """:func:`key_digest` of the key (None: a null key)."""
    size: int
    """Bytes of key, value and headers (:attr:`LostRecord.size`)."""


@dataclass
class PartitionPlan:
    """The exported records of one topic-partition and what the cluster's current leader holds of them."""

    topic: str
    partition: int
    line: int
    """The first line of the file naming this partition."""
    entries: list[Entry] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)
    """Offsets of rows whose batch the audit could not read (``error``): nothing to produce."""
    first_base_offset: int | None = None
    """The lowest ``batchBaseOffset`` of the readable records: the records the current leader holds from
    here on were written after them (by the leader elected since)."""
    min_timestamp: int | None = None

    compacted: bool = False
    """The topic's cleanup.policy has ``compact`` (read from the cluster)."""
    timestamp_type: str | None = None
    """The topic's message.timestamp.type (LogAppendTime: the broker replaces the timestamps)."""
    before_max_ms: int | None = None
    """The topic's message.timestamp.before.max.ms: the broker refuses a CreateTime older than that."""
    too_old: bool = False
    """The oldest record is older than :attr:`before_max_ms` (the topic keeps the producers' CreateTime)."""
    present: set[str] = field(default_factory=set)
    """Fingerprints of records already produced again (found on the cluster with the header)."""
    superseded: set[int] = field(default_factory=set)
    """Offsets of records of a compacted topic whose key has a newer record on the current leader."""
    scanned: tuple[int, int] | None = None
    """The offsets read from the current leader, [from, to)."""
    produced: list[int] = field(default_factory=list)
    """The offsets the produced records got on the cluster (``--execute``)."""
    failed: list[tuple[int, str]] = field(default_factory=list)
    """Original offset and the broker's error of each record that could not be produced."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def first_offset(self) -> int | None:
        offsets = [e.offset for e in self.entries] + self.unreadable
        return min(offsets) if offsets else None

    @property
    def last_offset(self) -> int | None:
        offsets = [e.offset for e in self.entries] + self.unreadable
        return max(offsets) if offsets else None

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)

    def keyless(self) -> list[int]:
        """Offsets of null-key records of a compacted topic: Kafka refuses them (compaction needs a key)."""
        return [e.offset for e in self.entries if self.compacted and e.key is None]

    def to_produce(self, include_superseded: bool = False) -> list[Entry]:
        """The records to produce, in offset order: not already there, not keyless on a compacted topic, and
        not superseded unless ``include_superseded``."""
        keyless = set(self.keyless())
        return [
            e
            for e in self.entries
            if e.fingerprint not in self.present
            and e.offset not in keyless
            and (include_superseded or e.offset not in self.superseded)
        ]


@dataclass
class Plan:
    """Every partition of the file, in file order."""

    path: str
    cluster: str | None
    """The cluster the records were lost from (the file's ``cluster``)."""
    partitions: dict[tuple[str, int], PartitionPlan]
    include_superseded: bool = False
    executed: bool = False

    def selected(self) -> dict[int, PartitionPlan]:
        """Line number -> partition of every record to produce."""
        return {e.line: p for p in self.partitions.values() for e in p.to_produce(self.include_superseded)}

    def topics(self) -> dict[str, int]:
        """Each topic and the first line naming it."""
        out: dict[str, int] = {}
        for p in self.partitions.values():
            out.setdefault(p.topic, p.line)
        return out


def build_plan(path: str, cluster: str | None = None) -> Plan:
    """A first pass over ``path`` (every line checked): the plan of its records, those of ``cluster`` only
    when given. One file holds one cluster's records: several without ``cluster`` is a
    :class:`ReproduceError`, as are an offset twice or out of order within a partition (the export writes
    each offset once, ascending)."""
    partitions: dict[tuple[str, int], PartitionPlan] = {}
    seen: dict[str, int] = {}
    last: dict[tuple[str, int], int] = {}
    for record in read_records(path):
        seen.setdefault(record.cluster, record.line)
        if cluster is not None and record.cluster != cluster:
            continue
        if cluster is None and len(seen) > 1:
            first = next(iter(seen))
            raise ReproduceError(
                f"{path} line {record.line}: cluster '{record.cluster}', line {seen[first]} cluster "
                f"'{first}': the file holds the lost records of several clusters; choose one with --cluster"
            )
        key = (record.topic, record.partition)
        if key in last and record.offset <= last[key]:
            order = "twice" if record.offset == last[key] else f"after offset {last[key]}"
            raise ReproduceError(
                f"{path} line {record.line}: offset {record.offset} of {record.topic}-{record.partition} "
                f"comes {order}; the records of a partition must be in offset order, each once (as "
                "audit --export-lost writes them)"
            )
        last[key] = record.offset
        plan = partitions.get(key)
        if plan is None:
            plan = partitions[key] = PartitionPlan(record.topic, record.partition, record.line)
        add(plan, record)
    if cluster is not None and cluster not in seen:
        known = ", ".join(sorted(seen)) or "none"
        raise ReproduceError(f"{path}: no record of cluster '{cluster}' (clusters in the file: {known})")
    label = cluster if cluster is not None else next(iter(seen), None)
    return Plan(path, label, partitions)


def add(plan: PartitionPlan, record: LostRecord) -> None:
    """Count ``record`` in its partition's plan."""
    if record.error is not None:
        plan.unreadable.append(record.offset)
        return
    digest = None if record.key is None else key_digest(record.key)
    plan.entries.append(Entry(record.line, record.offset, record.fingerprint(), digest, record.size))
    if plan.first_base_offset is None or record.batch_base_offset < plan.first_base_offset:
        plan.first_base_offset = record.batch_base_offset
    if record.timestamp is not None and (plan.min_timestamp is None or record.timestamp < plan.min_timestamp):
        plan.min_timestamp = record.timestamp
