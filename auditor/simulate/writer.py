"""Lay a simulated cluster out as real Kafka 4.0 (KRaft) log directories.

Per broker ``broker-<id>/``: ``meta.properties``, ``.lock`` (unless shut down cleanly),
``.kafka_cleanshutdown`` (after a clean shutdown), the four offset checkpoint files, ``bootstrap.checkpoint``,
``__cluster_metadata-0/`` (the broker's replica of the metadata log) and one ``<topic>-<partition>/``
per replica with ``.log``/``.index``/``.timeindex``/``.txnindex`` segments, producer ``.snapshot`` files,
``leader-epoch-checkpoint``, ``partition.metadata`` and ``*.deleted`` leftovers of recent truncations.
A broker with several log dirs (JBOD) has ``broker-<id>-dir<k>/`` for its other ones (same files, each
with its own ``directory.id``, without the metadata log). Replicas of deleted topics and replicas being
moved keep their Kafka names: ``<topic>-<partition>`` (an old incarnation on a broker that was down),
``<topic>-<partition>.<uuid>-delete``, ``-stray`` and ``-future``.
With KRaft on, ``controller-<id>/`` holds the controller's metadata log. Every byte goes through the
project's builders in ``parsers/``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from auditor.simulate.batches import encode_leader_change_batch, encode_metadata_batch
from auditor.simulate.cluster import Cluster
from auditor.simulate.log import LogConfig, ReplicaLog, Segment, SimBatch, SimRecord
from auditor.simulate.model import Broker, MetadataEvent
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.control import encode_control_record
from parsers.dirfiles import format_meta_properties, format_partition_metadata, segment_file_name
from parsers.indexes import build_offset_index, build_time_index, build_txn_index
from parsers.metadata import encode_metadata_record
from parsers.primitives import METADATA_TOPIC_ID
from parsers.producer_snapshot import build_producer_snapshot
from parsers.record_batch import RecordSpec, build_batch

METADATA_DIR = "__cluster_metadata-0"
METADATA_SEGMENT_BYTES = 1 << 30
METADATA_EPOCH = 1
CHECKPOINT_FILES = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def broker_dir_name(broker_id: int) -> str:
    return f"broker-{broker_id}"


def log_dir_name(broker_id: int, index: int = 0) -> str:
    """Log dir ``index`` of a broker: ``broker-<id>`` (its metadata.log.dir), then
    ``broker-<id>-dir<index>``."""
    return broker_dir_name(broker_id) if index == 0 else f"{broker_dir_name(broker_id)}-dir{index}"


def metadata_record_offset(cluster: Cluster, event_index: int, record_index: int = 0) -> int:
    """The offset of record ``record_index`` of metadata event ``event_index`` in ``__cluster_metadata``
    (offset 0 is the LEADER_CHANGE batch; each event is one batch, as :class:`MetadataLayout` writes it)."""
    return 1 + sum(len(ev.records) for ev in cluster.metadata[:event_index]) + record_index


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _offset_checkpoint(values: dict[tuple[str, int], int] | None) -> bytes:
    """``None`` = the file Kafka creates empty at start-up and has not written yet."""
    if values is None:
        return b""
    return format_offset_checkpoint((t, p, o) for (t, p), o in sorted(values.items()))


def _in_log_dir(
    br: Broker, k: int, values: dict[tuple[str, int], int] | None, future_attr: str | None
) -> dict[tuple[str, int], int] | None:
    """The entries of a broker's checkpoint that belong in its log dir ``k``: those of the logs (current, or
    of a deleted topic when no current log has that name) living there, plus the future logs' own values."""
    if values is None or len(br.dir_ids) == 1:
        return values
    where = {r.replica.tp: r.replica.log_dir for r in br.retired}
    where.update((tp, rep.log_dir) for tp, rep in br.replicas.items())
    out = {tp: v for tp, v in values.items() if where.get(tp, 0) == k}
    for tp, fut in br.futures.items():
        value = getattr(fut, future_attr) if future_attr else None
        if fut.log_dir == k and value is not None:
            out[tp] = value
    return out


def write_segment_files(pdir: Path, seg: Segment, index_bytes: int, suffix: str = "") -> None:
    """``.log``, ``.index``, ``.timeindex`` (preallocated while active) and ``.txnindex`` (if any)."""
    base = seg.base_offset
    prealloc = index_bytes if seg.preallocated else None
    _write(pdir / (segment_file_name(base, ".log") + suffix), seg.file_bytes())
    _write(pdir / (segment_file_name(base, ".index") + suffix), build_offset_index(seg.index, base, prealloc))
    _write(
        pdir / (segment_file_name(base, ".timeindex") + suffix),
        build_time_index(seg.time_index, base, prealloc),
    )
    if seg.txn_index:
        entries = [
            (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in seg.txn_index
        ]
        _write(pdir / (segment_file_name(base, ".txnindex") + suffix), build_txn_index(entries))


def _snapshot_bytes(entries) -> bytes:
    return build_producer_snapshot(
        {
            "producer_id": e.producer_id,
            "producer_epoch": e.epoch,
            "last_sequence": e.last_sequence,
            "last_offset": e.last_offset,
            "offset_delta": e.offset_delta,
            "timestamp": e.timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_first_offset": e.current_txn_first_offset,
        }
        for e in entries
    )


def write_log_dir(
    pdir: Path,
    log: ReplicaLog,
    epoch_cache: list[tuple[int, int]],
    topic_id: str,
    index_bytes: int,
    now_ms: int,
    delete_delay_ms: int,
) -> None:
    """One partition directory."""
    pdir.mkdir(parents=True, exist_ok=True)
    for seg in log.segments:
        write_segment_files(pdir, seg, index_bytes)
    for off, entries in sorted(log.snapshots.items()):
        _write(pdir / segment_file_name(off, ".snapshot"), _snapshot_bytes(entries))
    for d in log.deleted:
        if now_ms - d.deleted_ms < delete_delay_ms:
            write_segment_files(pdir, d.segment, index_bytes, ".deleted")
            if d.snapshot is not None:
                _write(
                    pdir / (segment_file_name(d.segment.base_offset, ".snapshot") + ".deleted"),
                    _snapshot_bytes(d.snapshot),
                )
    _write(pdir / "leader-epoch-checkpoint", format_leader_epoch_checkpoint(epoch_cache))
    _write(pdir / "partition.metadata", format_partition_metadata(topic_id))


# ----------------------------------------------------------------------------------- metadata log


class MetadataLayout:
    """The controller's ``__cluster_metadata`` log built from the cluster's metadata events, and each
    broker's replica of it (a prefix: what it had fetched when it last went down)."""

    def __init__(self, cluster: Cluster, index_bytes: int) -> None:
        self.cluster = cluster
        self.config = LogConfig(METADATA_SEGMENT_BYTES, 4096, index_bytes)
        self.batches: list[SimBatch] = []
        self.event_batch: list[int] = []
        self.broker_epochs: dict[int, list[tuple[int, int]]] = {}
        self._build()

    def _record_data(self, name: str, data: dict, offset: int, event_index: int) -> dict:
        c = self.cluster
        if name == "RegisterBrokerRecord":
            b = data["brokerId"]
            self.broker_epochs.setdefault(b, []).append((event_index, offset))
            return {
                "brokerId": b,
                "isMigratingZkBroker": False,
                "incarnationId": _derived_uuid(c.cluster_id, b, offset),
                "brokerEpoch": offset,
                "endPoints": [
                    {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 29190 + b, "securityProtocol": 0}
                ],
                "features": [
                    {"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 25},
                    {"name": "transaction.version", "minSupportedVersion": 0, "maxSupportedVersion": 2},
                ],
                "rack": None,
                "fenced": True,
                "inControlledShutdown": False,
                "logDirs": data["logDirs"],
            }
        if name == "BrokerRegistrationChangeRecord":
            epochs = self.broker_epochs.get(data["brokerId"], [(0, 0)])
            return {**data, "brokerEpoch": epochs[-1][1]}
        return data

    def _build(self) -> None:
        c = self.cluster
        ts0 = c.options.start_time_ms
        data, rec = encode_leader_change_batch(
            leader_id=c.options.controller_id,
            voters=[c.options.controller_id],
            base_offset=0,
            epoch=METADATA_EPOCH,
            timestamp=ts0,
        )
        self.batches.append(SimBatch(0, 0, 0, METADATA_EPOCH, [rec], data, ts0, control="LEADER_CHANGE"))
        offset = 1
        for i, ev in enumerate(c.metadata):
            ts = ts0 + ev.time_ms
            values = []
            for j, (name, version, d) in enumerate(ev.records):
                full = self._record_data(name, d, offset + j, i)
                values.append(encode_metadata_record(name, version, full))
            raw = encode_metadata_batch(values, base_offset=offset, epoch=METADATA_EPOCH, timestamp=ts)
            recs = [SimRecord(None, v, ts) for v in values]
            self.event_batch.append(len(self.batches))
            self.batches.append(
                SimBatch(
                    i + 1,
                    offset,
                    offset + len(values) - 1,
                    METADATA_EPOCH,
                    recs,
                    raw,
                    ts,
                    append_ms=ev.time_ms,
                )
            )
            offset += len(values)

    def controller_log(self) -> ReplicaLog:
        log = ReplicaLog(self.config, 0)
        for b in self.batches:
            log.append([b], b.append_ms)
        return log

    def broker_log(self, broker_id: int) -> ReplicaLog:
        """Appended one batch per fetch while the broker ran; batches missed while it was down arrive
        in one multi-batch append when it restarts; it never has what was written after it went down."""
        br = self.cluster.brokers[broker_id]
        log = ReplicaLog(self.config, 0)
        pending: list[SimBatch] = [self.batches[0]]
        events: list[MetadataEvent] = self.cluster.metadata
        for i, ev in enumerate(events):
            b = self.batches[self.event_batch[i]]
            if broker_id in ev.alive:
                if pending:
                    log.append(pending, ev.time_ms)
                    pending = []
                log.append([b], ev.time_ms)
            else:
                pending.append(b)
        if br.alive and pending:
            log.append(pending, self.cluster.now)
        if br.clean_marker:
            log.close()
        elif not br.alive:
            log.active.preallocated = True
        return log


def _derived_uuid(cluster_id: str, *parts: int) -> str:
    import hashlib

    from parsers.primitives import uuid_to_str

    raw = bytearray(hashlib.sha256(f"{cluster_id}:{parts}".encode()).digest()[:16])
    raw[0] |= 0x01
    text = uuid_to_str(bytes(raw))
    return text if not text.startswith("-") else "A" + text[1:]


def bootstrap_checkpoint(start_ms: int) -> bytes:
    """``bootstrap.checkpoint`` as ``kafka-storage format`` writes it: a KRaft snapshot with the
    metadata.version feature level between SnapshotHeader and SnapshotFooter control batches."""
    hk, hv = encode_control_record("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": 0})
    fk, fv = encode_control_record("SNAPSHOT_FOOTER", {"version": 0})
    values = [
        encode_metadata_record("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 25})
    ]
    header = build_batch(
        [RecordSpec(hk, hv, start_ms)], base_offset=0, partition_leader_epoch=0, control=True
    )
    body = build_batch(
        [RecordSpec(None, v, start_ms) for v in values], base_offset=1, partition_leader_epoch=0
    )
    footer = build_batch(
        [RecordSpec(fk, fv, start_ms)], base_offset=1 + len(values), partition_leader_epoch=0, control=True
    )
    return header + body + footer


def quorum_state(controller_id: int) -> bytes:
    return json.dumps(
        {
            "clusterId": "",
            "leaderId": controller_id,
            "leaderEpoch": METADATA_EPOCH,
            "votedId": -1,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": controller_id}],
            "data_version": 0,
        },
        separators=(",", ":"),
    ).encode()


def write_metadata_dir(root: Path, log: ReplicaLog, controller_id: int, index_bytes: int) -> None:
    mdir = root / METADATA_DIR
    mdir.mkdir(parents=True, exist_ok=True)
    for seg in log.segments:
        write_segment_files(mdir, seg, index_bytes)
    for off, entries in sorted(log.snapshots.items()):
        _write(mdir / segment_file_name(off, ".snapshot"), _snapshot_bytes(entries))
    _write(mdir / "leader-epoch-checkpoint", format_leader_epoch_checkpoint(log.epoch_cache))
    _write(mdir / "partition.metadata", format_partition_metadata(METADATA_TOPIC_ID))
    _write(mdir / "quorum-state", quorum_state(controller_id))


# ----------------------------------------------------------------------------------------- cluster


def write_cluster(cluster: Cluster, out_dir: Path) -> dict[str, Path]:
    """Write every broker's log directory (and the controller's); returns node name → directory."""
    opts = cluster.options
    out_dir.mkdir(parents=True, exist_ok=True)
    date = datetime.fromtimestamp(opts.start_time_ms / 1000, tz=timezone.utc)
    boot = bootstrap_checkpoint(opts.start_time_ms)
    layout = MetadataLayout(cluster, opts.segment_index_bytes) if opts.kraft else None
    dirs: dict[str, Path] = {}
    for b, br in sorted(cluster.brokers.items()):
        for k, dir_id in enumerate(br.dir_ids):
            root = out_dir / log_dir_name(b, k)
            root.mkdir(parents=True, exist_ok=True)
            dirs[root.name] = root
            _write(root / "meta.properties", format_meta_properties(1, b, cluster.cluster_id, dir_id, date))
            if br.clean_marker:
                epoch = layout.broker_epochs.get(b, [(0, 0)])[-1][1] if layout else 0
                _write(
                    root / ".kafka_cleanshutdown",
                    json.dumps({"version": 0, "brokerEpoch": epoch}, separators=(",", ":")).encode(),
                )
            else:
                _write(root / ".lock", b"")
            ckpt = {
                "replication-offset-checkpoint": _in_log_dir(br, k, br.ckpt_hw, "ckpt_hw"),
                "recovery-point-offset-checkpoint": _in_log_dir(br, k, br.ckpt_recovery, "ckpt_recovery"),
                "log-start-offset-checkpoint": _in_log_dir(br, k, br.ckpt_log_start, "ckpt_log_start"),
                "cleaner-offset-checkpoint": _in_log_dir(br, k, br.ckpt_cleaner or None, None),
            }
            for name, values in ckpt.items():
                _write(root / name, _offset_checkpoint(values))
            for (topic, p), rep in sorted(br.replicas.items()):
                if rep.log_dir != k:
                    continue
                write_log_dir(
                    root / partition_dir_name(topic, p),
                    rep.log,
                    rep.disk_epoch_cache,
                    cluster.topics[topic].topic_id,
                    opts.segment_index_bytes,
                    cluster.now,
                    opts.file_delete_delay_ms,
                )
            for (topic, _p), fut in sorted(br.futures.items()):
                if fut.log_dir == k:
                    write_log_dir(
                        root / fut.dir_name,
                        fut.log,
                        fut.disk_epoch_cache,
                        cluster.topics[topic].topic_id,
                        opts.segment_index_bytes,
                        cluster.now,
                        opts.file_delete_delay_ms,
                    )
            for r in br.retired:
                if r.replica.log_dir == k:
                    write_log_dir(
                        root / r.dir_name,
                        r.replica.log,
                        r.replica.disk_epoch_cache,
                        r.topic_id,
                        opts.segment_index_bytes,
                        cluster.now,
                        opts.file_delete_delay_ms,
                    )
            if layout is not None:
                _write(root / "bootstrap.checkpoint", boot)
                if k == 0:
                    log = layout.broker_log(b)
                    write_metadata_dir(root, log, opts.controller_id, opts.segment_index_bytes)
    if layout is not None:
        root = out_dir / f"controller-{opts.controller_id}"
        root.mkdir(parents=True, exist_ok=True)
        dirs[root.name] = root
        _write(
            root / "meta.properties",
            format_meta_properties(
                1, opts.controller_id, cluster.cluster_id, cluster.controller_dir_id, date
            ),
        )
        _write(root / ".lock", b"")
        _write(root / "bootstrap.checkpoint", boot)
        write_metadata_dir(root, layout.controller_log(), opts.controller_id, opts.segment_index_bytes)
    return dirs
