"""Seed inputs for ``bench/fuzz.py``: real, valid Kafka files grouped by kind.

Three sources, all deterministic:
* the project's own builders (``parsers`` ``build_*`` / ``encode_*`` / ``format_*`` functions);
* ``kafka-auditor simulate`` log directories (written once into a temporary directory and read back);
* when present, the real-Kafka corpus (``../shared/corpus``): its files, cut to a bounded head.

Kinds derived by walking the valid segments: single v2 batches, compressed records sections per codec,
KRaft metadata record values, control record keys/values, flexible message bodies.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from parsers import codecs
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    KEY_SCHEMAS,
    VALUE_SCHEMAS,
    encode_consumer_protocol,
    encode_offsets_key,
    encode_offsets_value,
)
from parsers.control import CONTROL_SCHEMAS, encode_control_record, encode_end_txn_marker
from parsers.dirfiles import format_meta_properties, format_partition_metadata
from parsers.errors import ParseError
from parsers.indexes import build_offset_index, build_time_index, build_txn_index
from parsers.legacy import LegacyMessageSpec, build_legacy_message, build_legacy_wrapper
from parsers.metadata import METADATA_SCHEMAS, encode_metadata_record
from parsers.primitives import read_uvarint
from parsers.producer_snapshot import ProducerStateEntry, build_producer_snapshot
from parsers.record_batch import RECORD_BATCH_OVERHEAD, RecordSpec, build_batch, parse_header

HEAD_BYTES = {"segment": 48 << 10, "kraft_checkpoint": 48 << 10, "index": 4 << 10, "timeindex": 6 << 10}
"""Corpus and simulated files are cut to this many leading bytes (a cut segment is a torn tail)."""
MAX_SEEDS_PER_KIND = 96
SIM_RUNS = (
    ("clean", "none", 1),
    ("unclean-election", "gzip", 2),
    ("random", "snappy", 3),
    ("random", "lz4", 4),
    ("random", "zstd", 5),
    ("stale-index", "none", 6),
)
"""(scenario, compression, seed) of the simulated clusters used as seeds (60 records per partition)."""

FLEXIBLE_SCHEMAS = (
    [METADATA_SCHEMAS[key] for key in sorted(METADATA_SCHEMAS)]
    + [CONTROL_SCHEMAS[key] for key in sorted(CONTROL_SCHEMAS)]
    + [KEY_SCHEMAS[key] for key in sorted(KEY_SCHEMAS)]
    + [VALUE_SCHEMAS[key] for key in sorted(VALUE_SCHEMAS)]
    + [CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT]
)
"""The schemas the ``flexible`` target decodes with (indexed by an input's first byte): KRaft metadata
records, KRaft control records, ``__consumer_offsets`` keys and values, the embedded consumer protocol."""

_CHECKPOINT_NAMES = {
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
}


def frame_pair(first: bytes | None, second: bytes | None) -> bytes:
    """Two byte strings as one fuzz input: ``int16 len(first)`` (-1 = None), first, second."""
    if first is None:
        return struct.pack(">h", -1) + (second or b"")
    return struct.pack(">h", len(first)) + first + (second or b"")


def split_pair(data: bytes) -> tuple[bytes | None, bytes]:
    """Inverse of :func:`frame_pair` for any bytes (a lying length just moves the split)."""
    if len(data) < 2:
        return None, data
    (n,) = struct.unpack_from(">h", data, 0)
    if n < 0:
        return None, data[2:]
    return data[2 : 2 + n], data[2 + n :]


def file_kind(path: Path) -> str | None:
    """The seed kind of a file found in a log directory (None: not a parser input)."""
    name = path.name
    for state in (".deleted", ".cleaned", ".swap"):
        name = name.removesuffix(state)
    if name.endswith(".log"):
        return "segment"
    if name.endswith(".checkpoint"):
        return "kraft_checkpoint"
    suffix_kinds = {
        ".index": "index",
        ".timeindex": "timeindex",
        ".txnindex": "txnindex",
        ".snapshot": "snapshot",
    }
    for suffix, kind in suffix_kinds.items():
        if name.endswith(suffix):
            return kind
    if name == "leader-epoch-checkpoint":
        return "leader_epoch_checkpoint"
    if name in _CHECKPOINT_NAMES:
        return "offset_checkpoint"
    named = {
        "partition.metadata": "partition_metadata",
        "meta.properties": "meta_properties",
        "quorum-state": "quorum_state",
        ".kafka_cleanshutdown": "clean_shutdown",
    }
    return named.get(name)


class Seeds:
    """Seed byte strings by kind, deduplicated, in a deterministic order. Seeds added while ``pinned`` is
    set (the builders') are always kept; the others are thinned to ``MAX_SEEDS_PER_KIND``."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[bytes]] = defaultdict(list)
        self.pinned_by_kind: dict[str, list[bytes]] = defaultdict(list)
        self.pinned = False
        self._seen: set[tuple[str, bytes]] = set()

    def add(self, kind: str, data: bytes) -> None:
        key = (kind, hashlib.blake2b(data, digest_size=16).digest())
        if key not in self._seen:
            self._seen.add(key)
            (self.pinned_by_kind if self.pinned else self.by_kind)[kind].append(bytes(data))

    def finish(self) -> dict[str, list[bytes]]:
        """Every pinned seed plus up to ``MAX_SEEDS_PER_KIND`` others per kind, spread evenly."""
        out = {}
        for kind in sorted(set(self.by_kind) | set(self.pinned_by_kind)):
            items = self.by_kind.get(kind, [])
            if len(items) > MAX_SEEDS_PER_KIND:
                step = len(items) / MAX_SEEDS_PER_KIND
                items = [items[int(i * step)] for i in range(MAX_SEEDS_PER_KIND)]
            out[kind] = self.pinned_by_kind.get(kind, []) + items
        return out


def fingerprint(seeds: dict[str, list[bytes]]) -> str:
    """A short digest of every seed (runs with the same seeds and --seed are identical)."""
    digest = hashlib.blake2b(digest_size=6)
    for kind in sorted(seeds):
        digest.update(kind.encode())
        for data in seeds[kind]:
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------- builders


def _built(seeds: Seeds) -> None:
    """Seeds from the parsers' own builders: every codec, legacy formats, control and metadata records."""
    ts = 1_795_000_000_000
    recs = [
        RecordSpec(b"k%d" % i, b"value-%03d" % i * 3, ts + i, [("h", b"v")] if i % 2 else [])
        for i in range(5)
    ]
    for codec in range(5):
        seeds.add("batch", build_batch(recs, base_offset=40, partition_leader_epoch=3, compression=codec))
        seeds.add(f"compressed:{codec}", codecs.compress(codec, b"".join(r.value for r in recs) * 4))
    seeds.add(
        "batch",
        build_batch(recs[:2], transactional=True, producer_id=7, producer_epoch=1, base_sequence=2**31 - 1),
    )
    seeds.add("batch", build_batch([], base_offset=0))
    _many_records(seeds)
    seeds.add("batch", build_batch([RecordSpec(None, None, ts)], timestamp_type_log_append=True))
    key, value = encode_end_txn_marker(True, 5)
    seeds.add(
        "batch", build_batch([RecordSpec(key, value, ts)], control=True, transactional=True, producer_id=7)
    )
    seeds.add("control_record", frame_pair(key, value))
    key, value = encode_end_txn_marker(False, 0)
    seeds.add("control_record", frame_pair(key, value))
    leader_change = encode_control_record(
        "LEADER_CHANGE", {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": []}
    )
    seeds.add("control_record", frame_pair(*leader_change))
    seeds.add("batch", build_batch([RecordSpec(*leader_change, ts)], control=True))
    topic = encode_metadata_record("TOPIC_RECORD", 0, {"name": "t0", "topicId": "Kz5kVcW0S0eNQDNgu_bqyw"})
    seeds.add("metadata_record", topic)
    seeds.add("batch", build_batch([RecordSpec(None, topic, ts)]))
    for magic in (0, 1):
        plain = build_legacy_message(3, b"key", b"value", magic=magic, timestamp=ts if magic else -1)
        seeds.add("legacy_entry", plain)
        entries = [plain]
        for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4):
            msgs = [LegacyMessageSpec(b"k", b"v%d" % i, ts + i if magic else -1) for i in range(3)]
            wrapper = build_legacy_wrapper(msgs, magic=magic, compression=codec, offset=10)
            seeds.add("legacy_entry", wrapper)
            entries.append(wrapper)
            inner = build_legacy_message(0, b"k", b"v", magic=magic, timestamp=ts if magic else -1)
            seeds.add(f"compressed:{codec}", codecs.compress(codec, inner * 3, magic=magic))
        seeds.add("legacy_segment", b"".join(entries))
        seeds.add("segment", b"".join(entries))
    seeds.add(
        "snapshot",
        build_producer_snapshot(
            [
                ProducerStateEntry(7, 1, 4, 10, 4, ts, 2, -1),
                ProducerStateEntry(8, 0, 2**31 - 1, 30, 2, ts, -1, 28),
            ]
        ),
    )
    seeds.add("snapshot", build_producer_snapshot([]))
    seeds.add("index", build_offset_index([(0, 0), (30, 4120), (61, 8300)], base_offset=0, preallocate_to=96))
    seeds.add("timeindex", build_time_index([(ts, 0), (ts + 9, 30)], base_offset=0, preallocate_to=96))
    seeds.add("txnindex", build_txn_index([(7, 10, 20, 10), (8, 12, 25, 21)]))
    seeds.add("offset_checkpoint", format_offset_checkpoint([("t0", 0, 60), ("__consumer_offsets", 12, 9)]))
    seeds.add("leader_epoch_checkpoint", format_leader_epoch_checkpoint([(0, 0), (2, 31), (5, 2**40)]))
    seeds.add("partition_metadata", format_partition_metadata("Kz5kVcW0S0eNQDNgu_bqyw"))
    written = datetime(2026, 11, 14, 22, 13, 20, tzinfo=timezone.utc)  # fixed: seeds must not vary
    seeds.add("meta_properties", format_meta_properties(0, node_id=1, date=written))
    seeds.add(
        "meta_properties",
        format_meta_properties(
            1,
            node_id=1,
            cluster_id="MkU3OEVBNTcwNTJENDM2Qg",
            directory_id="Kz5kVcW0S0eNQDNgu_bqyw",
            date=written,
        ),
    )
    seeds.add(
        "quorum_state",
        b'{"leaderId":1,"leaderEpoch":3,"votedId":-1,"votedDirectoryId":"'
        b'AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
    )
    seeds.add(
        "quorum_state",
        b'{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,'
        b'"currentVoters":[{"voterId":1}],"data_version":0}',
    )
    seeds.add("clean_shutdown", b'{"version":0,"brokerEpoch":123456}')
    seeds.add("clean_shutdown", b"")
    for name in (
        b"t0-0",
        b"t0-1.9a1b0c2d3e4f40a1b2c3d4e5f6a7b8c9-delete",
        b"t0-0.abc-future",
        b"t0-0.abc-stray",
        b"00000000000000000000.log",
        b"00000000000000000030.snapshot.deleted",
        b"00000000000000000100-0000000002.checkpoint",
        b"00000000000000000100-0000000002-x.checkpoint.part",
    ):
        seeds.add("name", name)
    _built_offsets(seeds)


MINIMAL_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"
"""The smallest v2 record: length 6, attributes 0, deltas 0, null key, null value, no headers."""
MANY_RECORDS = 100_000
BOMB_BYTES = 70 << 20
"""Just over the 64 MiB decompression cap."""


def _many_records(seeds: Seeds) -> None:
    """Small inputs that expand: a zstd batch of 100,000 minimal records (700 KB decompressed), and gzip /
    zstd streams of 70 MiB of zeros (over the decompression cap)."""
    body = codecs.compress(codecs.ZSTD, MINIMAL_RECORD * MANY_RECORDS)
    header = build_batch([], compression=codecs.ZSTD)[:61]
    raw = bytearray(header + body)
    struct.pack_into(">i", raw, 8, 49 + len(body))
    struct.pack_into(">i", raw, 23, MANY_RECORDS - 1)  # lastOffsetDelta (offset deltas are all 0)
    struct.pack_into(">i", raw, 57, MANY_RECORDS)
    from fuzz_mutate import fix_v2_crcs

    seeds.add("batch", fix_v2_crcs(bytes(raw)))
    seeds.add("compressed:4", body)
    zeros = bytes(BOMB_BYTES)
    for codec in (codecs.GZIP, codecs.ZSTD):
        seeds.add(f"compressed:{codec}", codecs.compress(codec, zeros))


def _built_offsets(seeds: Seeds) -> None:
    """``__consumer_offsets`` keys and values (offset commits, classic group metadata, KIP-848 records)."""
    key = encode_offsets_key(1, {"group": "g", "topic": "t0", "partition": 1})
    for version, data in (
        (1, {"offset": 5, "metadata": "", "commitTimestamp": 100, "expireTimestamp": 200}),
        (3, {"offset": 87, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1795238682515}),
        (4, {"offset": 87, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 9}),
    ):
        seeds.add("offsets_record", frame_pair(key, encode_offsets_value(1, version, data)))
    sub = encode_consumer_protocol(
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        3,
        {"topics": ["t0"], "userData": None, "ownedPartitions": [], "generationId": -1, "rackId": None},
    )
    assignment = encode_consumer_protocol(
        CONSUMER_PROTOCOL_ASSIGNMENT,
        0,
        {"assignedPartitions": [{"topic": "t0", "partitions": [0, 1]}], "userData": ""},
    )
    seeds.add("consumer_protocol", b"\x00" + sub)
    seeds.add("consumer_protocol", b"\x01" + assignment)
    import base64

    member = {
        "memberId": "m",
        "clientId": "c",
        "clientHost": "h",
        "sessionTimeout": 10,
        "rebalanceTimeout": 5,
        "groupInstanceId": None,
        "subscription": base64.b64encode(sub).decode(),
        "assignment": base64.b64encode(assignment).decode(),
    }
    group = {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "m",
        "currentStateTimestamp": 7,
        "members": [member],
    }
    seeds.add(
        "offsets_record", frame_pair(encode_offsets_key(2, {"group": "g"}), encode_offsets_value(2, 3, group))
    )
    seeds.add("offsets_record", frame_pair(encode_offsets_key(2, {"group": "g"}), None))


# ------------------------------------------------------------------------------------------- files


def _from_files(seeds: Seeds, root: Path) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        kind = file_kind(path)
        if kind is None:
            continue
        with open(path, "rb") as fh:  # our own seed files, not an audited directory
            data = fh.read(HEAD_BYTES.get(kind, 64 << 10))
        seeds.add(kind, data)
        if kind in ("segment", "kraft_checkpoint"):
            _derive(
                seeds,
                data,
                metadata="__cluster_metadata" in str(path) or kind == "kraft_checkpoint",
                offsets="__consumer_offsets" in str(path),
            )


def _derive(seeds: Seeds, data: bytes, *, metadata: bool, offsets: bool) -> None:
    """Split the valid v2 batches of a segment into batch, payload and record seeds."""
    from parsers.record_batch import decode_records, records_payload

    pos = 0
    taken = 0
    while pos + RECORD_BATCH_OVERHEAD <= len(data) and taken < 24:
        try:
            batch = parse_header(data, pos)
        except ParseError:
            return
        raw = data[pos : pos + batch.size]
        pos += batch.size
        if batch.magic != 2 or not batch.crc_valid:
            return
        taken += 1
        seeds.add("batch", raw)
        if batch.compression:
            seeds.add(f"compressed:{batch.compression}", raw[RECORD_BATCH_OVERHEAD:])
        try:
            records = list(decode_records(batch, records_payload(batch, raw)))
        except ParseError:
            continue
        for record in records[:4]:
            if batch.is_control:
                seeds.add("control_record", frame_pair(record.key, record.value))
            elif metadata and record.value is not None:
                seeds.add("metadata_record", record.value)
                _flexible_seed(seeds, record.value)
            elif offsets:
                seeds.add("offsets_record", frame_pair(record.key, record.value))


def _flexible_seed(seeds: Seeds, value: bytes) -> None:
    """A metadata record value as a ``flexible`` seed: schema index, version, body."""
    try:
        _frame, pos = read_uvarint(value, 0)
        api_key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except ParseError:
        return
    schema = METADATA_SCHEMAS.get(api_key)
    if schema is not None and version < 256:
        seeds.add("flexible", bytes([FLEXIBLE_SCHEMAS.index(schema), version]) + value[pos:])


def _simulated(seeds: Seeds) -> None:
    from auditor.simulate import SimOptions, run_scenario

    with tempfile.TemporaryDirectory(prefix="kafka-auditor-fuzz-seeds-") as tmp:
        for scenario, compression, seed in SIM_RUNS:
            out = Path(tmp) / f"{scenario}-{compression}-{seed}"
            run_scenario(scenario, out, SimOptions(seed=seed, records=60, compression=compression))
            _from_files(seeds, out)


def _flexible_bodies(seeds: Seeds) -> None:
    """Control record values and ``__consumer_offsets`` keys/values as ``flexible`` seeds."""
    for framed in list(seeds.by_kind.get("control_record", [])):
        key, value = split_pair(framed)
        if key is not None and len(key) >= 4 and value:
            schema = CONTROL_SCHEMAS.get(int.from_bytes(key[2:4], "big", signed=True))
            if schema is not None:
                seeds.add("flexible", bytes([FLEXIBLE_SCHEMAS.index(schema), 0]) + value)
    for framed in list(seeds.by_kind.get("offsets_record", [])):
        key, value = split_pair(framed)
        if key is None or len(key) < 2:
            continue
        record_type = int.from_bytes(key[:2], "big", signed=True)
        if record_type in KEY_SCHEMAS and 0 <= record_type < 256:
            seeds.add(
                "flexible", bytes([FLEXIBLE_SCHEMAS.index(KEY_SCHEMAS[record_type]), record_type]) + key[2:]
            )
        if record_type in VALUE_SCHEMAS and len(value) >= 2 and value[0] == 0:
            seeds.add(
                "flexible", bytes([FLEXIBLE_SCHEMAS.index(VALUE_SCHEMAS[record_type]), value[1]]) + value[2:]
            )
    for blob in list(seeds.by_kind.get("consumer_protocol", [])):
        if len(blob) >= 3 and blob[1] == 0:
            schema = (CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT)[blob[0] % 2]
            seeds.add("flexible", bytes([FLEXIBLE_SCHEMAS.index(schema), blob[2]]) + blob[3:])


def build_seeds(corpus: Path | None) -> dict[str, list[bytes]]:
    """Every seed kind; the corpus adds real-Kafka files when given (and present)."""
    seeds = Seeds()
    seeds.pinned = True
    _built(seeds)
    seeds.pinned = False
    _simulated(seeds)
    if corpus is not None and corpus.is_dir():
        _from_files(seeds, corpus)
    _flexible_bodies(seeds)
    return seeds.finish()


def default_corpus() -> Path | None:
    """``../shared/corpus`` beside the repository (as the tests use it), when it exists."""
    path = (Path(__file__).resolve().parents[1].parent / "shared" / "corpus").resolve()
    return path if path.is_dir() else None


__all__ = ["build_seeds", "default_corpus", "fingerprint", "frame_pair", "split_pair", "FLEXIBLE_SCHEMAS"]

if __name__ == "__main__":  # a quick look at what the seeds are
    table = build_seeds(default_corpus())
    for kind, items in table.items():
        print(f"{kind:26} {len(items):4} seeds, {sum(map(len, items)):9} bytes")
    print("fingerprint", fingerprint(table), os.getpid())
