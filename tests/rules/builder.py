"""Builds small, Kafka-faithful log directories for rule fixtures.

``LogDir`` writes ``meta.properties``, the four offset checkpoints (high watermark, recovery point and cleaner
values derived from the partitions unless overridden), ``.kafka_cleanshutdown`` and, optionally, a KRaft
``__cluster_metadata-0`` holding a ``TopicRecord`` per topic. ``Part`` writes segments the way Kafka's append
path does: consecutive offsets, an offset-index entry (and a time-index ``maybeAppend``) whenever more than
``index_interval`` bytes were appended since the last entry, the roll-time time-index entry for rolled
segments, ``.txnindex`` entries for ABORT markers, a ``leader-epoch-checkpoint`` with the first offset of each
epoch, ``partition.metadata`` and a producer snapshot at the log end offset. Tests then damage the files.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.control import encode_end_txn_marker
from parsers.dirfiles import format_meta_properties, format_partition_metadata, segment_file_name
from parsers.indexes import build_offset_index, build_time_index, build_txn_index
from parsers.metadata import encode_metadata_record
from parsers.producer_snapshot import build_producer_snapshot
from parsers.record_batch import RecordSpec, build_batch

CLUSTER_ID = "vyF_svkNTCmuElFZJ9FAng"
T0 = 1_795_000_000_000
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def topic_id(name: str) -> str:
    """A stable, valid topic ID per topic name."""
    raw = bytearray(hashlib.sha256(name.encode()).digest()[:16])
    raw[0] |= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def directory_id(node: int, salt: str = "") -> str:
    raw = bytearray(hashlib.sha256(f"dir-{node}-{salt}".encode()).digest()[:16])
    raw[0] |= 0x80
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


@dataclass
class Batch:
    """One batch to write: ``records`` data records, or a transaction marker (``marker`` ABORT/COMMIT)."""

    records: int = 3
    epoch: int = 0
    producer_id: int = -1
    transactional: bool = False
    marker: str | None = None
    ts: int | None = None
    value_bytes: int = 20
    base_offset: int | None = None  # forced base offset (gaps, overlaps); default: next offset
    offset_step: int = 1  # > 1 leaves gaps between records (compaction-like)


@dataclass
class Written:
    """Where a batch landed."""

    segment: int
    base_offset: int
    last_offset: int
    position: int
    size: int
    epoch: int
    max_ts: int
    marker: str | None = None
    producer_id: int = -1


class Part:
    """A partition directory under construction."""

    def __init__(
        self,
        logdir: LogDir,
        topic: str,
        partition: int,
        *,
        index_interval: int = 150,
        dirname: str | None = None,
    ) -> None:
        self.logdir = logdir
        self.topic = topic
        self.partition = partition
        self.index_interval = index_interval
        self.dirname = dirname or f"{topic}-{partition}"
        self.segments: list[list[Batch]] = [[]]
        self.written: list[Written] = []
        self.epoch_cache: list[tuple[int, int]] | None = None  # override
        self.hw: int | None = None  # override (None: LEO)
        self.recovery_point: int | None = None
        self.log_start: int | None = None
        self.cleaner: int | None = None
        self.preallocate_active: int | None = None  # bytes: zero-pad the active segment's indexes
        self.topic_id: str | None = topic_id(topic)
        self.leo = 0
        self.bases: list[int] = []

    @property
    def path(self) -> Path:
        return self.logdir.root / self.dirname

    def add(self, *batches: Batch) -> Part:
        self.segments[-1].extend(batches)
        return self

    def data(self, n: int = 1, **kw) -> Part:
        return self.add(*[Batch(**kw) for _ in range(n)])

    def roll(self) -> Part:
        self.segments.append([])
        return self

    def seg_path(self, i: int, suffix: str = ".log") -> Path:
        return self.path / segment_file_name(self.bases[i], suffix)

    # ------------------------------------------------------------------------------------------ writing

    def _encode(self, b: Batch, base: int, ts: int) -> tuple[bytes, int]:
        if b.marker:
            key, value = encode_end_txn_marker(b.marker == "COMMIT", 0)
            if b.marker == "BAD":  # a control key too short to decode
                key, value = b"\x00", b""
            raw = build_batch(
                [RecordSpec(key, value, ts)],
                base_offset=base,
                partition_leader_epoch=b.epoch,
                transactional=True,
                control=True,
                producer_id=b.producer_id,
                producer_epoch=0,
            )
            return raw, base
        specs = [
            RecordSpec(b"k%d" % i, b"v" * b.value_bytes, ts + i, offset_delta=i * b.offset_step)
            for i in range(b.records)
        ]
        raw = build_batch(
            specs,
            base_offset=base,
            partition_leader_epoch=b.epoch,
            transactional=b.transactional,
            producer_id=b.producer_id,
            producer_epoch=0 if b.producer_id >= 0 else -1,
            base_sequence=0 if b.producer_id >= 0 else -1,
        )
        return raw, base + (b.records - 1) * b.offset_step

    def write(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        offset = 0
        ts = T0
        first_of_epoch: dict[int, int] = {}
        self.bases = []
        for si, batches in enumerate(self.segments):
            base_name = batches[0].base_offset if batches and batches[0].base_offset is not None else offset
            self.bases.append(base_name)
            log = bytearray()
            oi: list[tuple[int, int]] = []
            ti: list[tuple[int, int]] = []
            txn: list[tuple[int, int, int, int]] = []
            since = 0
            max_ts, max_off = -1, -1
            open_txn: dict[int, int] = {}
            for b in batches:
                base = b.base_offset if b.base_offset is not None else offset
                bts = b.ts if b.ts is not None else ts
                raw, last = self._encode(b, base, bts)
                pos = len(log)
                batch_max = bts if b.marker else bts + b.records - 1
                if batch_max > max_ts:
                    max_ts, max_off = batch_max, last
                if since > self.index_interval:
                    oi.append((last, pos))
                    if not ti or max_ts > ti[-1][0]:
                        ti.append((max_ts, max_off))
                    since = 0
                since += len(raw)
                log += raw
                if b.transactional and not b.marker:
                    open_txn.setdefault(b.producer_id, base)
                if b.marker:
                    first = open_txn.pop(b.producer_id, base)
                    if b.marker == "ABORT":
                        txn.append((b.producer_id, first, last, last + 1))
                first_of_epoch.setdefault(b.epoch, base)
                self.written.append(
                    Written(si, base, last, pos, len(raw), b.epoch, batch_max, b.marker, b.producer_id)
                )
                offset = last + 1
                ts = bts + 10
            is_last = si == len(self.segments) - 1
            if not is_last and max_ts > (ti[-1][0] if ti else -1):
                ti.append((max_ts, max_off))
            self.seg_path(si).write_bytes(bytes(log))
            pre = self.preallocate_active if is_last else None
            self.seg_path(si, ".index").write_bytes(build_offset_index(oi, base_name, preallocate_to=pre))
            self.seg_path(si, ".timeindex").write_bytes(build_time_index(ti, base_name, preallocate_to=pre))
            if txn:
                self.seg_path(si, ".txnindex").write_bytes(build_txn_index(txn))
        self.leo = offset if self.written else self.bases[-1]
        cache = self.epoch_cache
        if cache is None:
            cache = sorted(first_of_epoch.items())
        (self.path / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint(cache))
        if self.topic_id is not None:
            (self.path / "partition.metadata").write_bytes(format_partition_metadata(self.topic_id))
        (self.path / segment_file_name(self.leo, ".snapshot")).write_bytes(build_producer_snapshot([]))


class LogDir:
    """A broker log directory under construction."""

    def __init__(
        self, root: Path, *, node_id: int = 1, clean: bool = True, metadata: bool = True, dir_salt: str = ""
    ) -> None:
        self.root = Path(root)
        self.node_id = node_id
        self.clean = clean
        self.metadata = metadata
        self.dir_salt = dir_salt
        self.parts: list[Part] = []
        self.extra_topics: dict[str, str] = {}
        self.hidden_topics: set[str] = set()
        self.meta_override: bytes | None = None
        self.checkpoint_override: dict[str, bytes] = {}

    def part(self, topic: str = "orders", partition: int = 0, **kw) -> Part:
        p = Part(self, topic, partition, **kw)
        self.parts.append(p)
        return p

    def write(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        for p in self.parts:
            p.write()
        meta = self.meta_override
        if meta is None:
            meta = format_meta_properties(
                1, self.node_id, CLUSTER_ID, directory_id(self.node_id, self.dir_salt)
            )
        (self.root / "meta.properties").write_bytes(meta)
        live = [p for p in self.parts if not p.dirname.endswith(("-delete", "-stray"))]

        def ckpt(values: list[tuple[str, int, int | None]]) -> bytes:
            return format_offset_checkpoint([(t, p, v) for t, p, v in values if v is not None])

        files = {
            "replication-offset-checkpoint": ckpt(
                [(p.topic, p.partition, p.leo if p.hw is None else p.hw) for p in live]
            ),
            "recovery-point-offset-checkpoint": ckpt(
                [
                    (p.topic, p.partition, p.leo if p.recovery_point is None else p.recovery_point)
                    for p in live
                ]
            ),
            "log-start-offset-checkpoint": ckpt([(p.topic, p.partition, p.log_start) for p in live]),
            "cleaner-offset-checkpoint": ckpt([(p.topic, p.partition, p.cleaner) for p in live]),
        }
        files.update(self.checkpoint_override)
        for name, data in files.items():
            (self.root / name).write_bytes(data)
        if self.clean:
            (self.root / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":5}')
        if self.metadata:
            self._metadata()
        return self.root

    def _metadata(self) -> None:
        md = self.root / "__cluster_metadata-0"
        md.mkdir(exist_ok=True)
        topics = {p.topic: topic_id(p.topic) for p in self.parts if p.topic not in self.hidden_topics}
        topics.update(self.extra_topics)
        log = bytearray()
        offset = 0
        for name, tid in sorted(topics.items()):
            value = encode_metadata_record("TopicRecord", 0, {"name": name, "topicId": tid})
            log += build_batch([RecordSpec(None, value, T0)], base_offset=offset, partition_leader_epoch=1)
            offset += 1
        (md / segment_file_name(0, ".log")).write_bytes(bytes(log))
        (md / segment_file_name(0, ".index")).write_bytes(b"")
        (md / segment_file_name(0, ".timeindex")).write_bytes(b"")
        (md / "leader-epoch-checkpoint").write_bytes(
            format_leader_epoch_checkpoint([(1, 0)] if offset else [])
        )
        (md / "partition.metadata").write_bytes(format_partition_metadata(METADATA_TOPIC_ID))
        (md / "quorum-state").write_bytes(
            b'{"clusterId":"","leaderId":100,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
            b'"currentVoters":[{"voterId":100}],"data_version":0}'
        )
        (md / segment_file_name(offset, ".snapshot")).write_bytes(build_producer_snapshot([]))


def standard(root: Path, **kw) -> tuple[LogDir, Part]:
    """The baseline: one partition, two segments of five 3-record batches (epochs 0 then 2)."""
    ld = LogDir(root, **kw)
    p = ld.part()
    p.data(5, epoch=0).roll().data(3, epoch=0).data(2, epoch=2)
    return ld, p


def built(tmp: Path, **kw) -> tuple[LogDir, Part]:
    """The standard log dir of broker 1 under ``tmp``, written."""
    ld, p = standard(tmp / "broker-1", **kw)
    ld.write()
    return ld, p


def txn_part(tmp: Path) -> tuple[LogDir, Part]:
    """A transactional partition: a committed and an aborted transaction with their markers."""
    ld = LogDir(tmp / "broker-1")
    p = ld.part("payments")
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="COMMIT", producer_id=7))
    p.data(2, producer_id=7, transactional=True).add(Batch(marker="ABORT", producer_id=7))
    p.data(1)
    ld.write()
    return ld, p


def flip(path: Path, position: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def put(path: Path, position: int, fmt: str, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, position, value)
    path.write_bytes(bytes(data))


def truncate(path: Path, size: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:size])


def append(path: Path, extra: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(extra)
