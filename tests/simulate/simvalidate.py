"""Validate a simulated output tree: every file parses with the project's parsers, every ``.log`` batch
also with kafka-python's reader, and the files agree with each other (indexes point at batch starts, etc.).
Expected anomalies are taken from ``ground-truth.json``'s ``faults``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from parsers.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from parsers.control import decode_control_record
from parsers.dirfiles import (
    parse_clean_shutdown,
    parse_meta_properties,
    parse_partition_metadata,
    parse_quorum_state,
)
from parsers.indexes import read_offset_index, read_time_index, read_txn_index
from parsers.metadata import decode_metadata_record
from parsers.producer_snapshot import verify_producer_snapshot
from parsers.record_batch import LOG_OVERHEAD, decode_records, parse_header, records_payload

CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def read_log(data: bytes) -> tuple[list, int]:
    """(batches with their position, bytes after the last complete batch) — spec §2's reader."""
    pos, out = 0, []
    while len(data) - pos > 17:
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + LOG_OVERHEAD
        if pos + size > len(data):
            break
        out.append(parse_header(data, pos))
        pos += size
    return out, len(data) - pos


def validate_log(path: Path, bad_crc_ok: set[int], torn_ok: bool, metadata: bool) -> Counter:
    data = path.read_bytes()
    stats: Counter = Counter()
    batches, trailing = read_log(data)
    assert trailing == 0 or torn_ok, f"{path}: {trailing} unexpected trailing bytes"
    stats["torn"] += bool(trailing)
    prev_next = None
    for b in batches:
        raw = data[b.position : b.position + b.size]
        if prev_next is not None:
            assert b.base_offset == prev_next, f"{path}: offsets not contiguous at {b.base_offset}"
        prev_next = b.next_offset
        if not b.crc_valid:
            assert b.position in bad_crc_ok, f"{path}: unexpected CRC error at {b.position}"
            stats["bad_crc"] += 1
            continue
        records = decode_records(b, records_payload(b, raw))
        assert len(records) == b.records_count == b.last_offset_delta + 1
        for r in records:
            if b.is_control:
                decode_control_record(r.key, r.value)
                stats["control"] += 1
            elif metadata:
                decode_metadata_record(r.value)
                stats["metadata_records"] += 1
            else:
                stats["records"] += 1
        stats["batches"] += 1
    # kafka-python's reader over the complete batches (it stops at a partial trailing batch)
    mr = MemoryRecords(data[: len(data) - trailing])
    n = 0
    while mr.has_next():
        kb = mr.next_batch()
        if kb.validate_crc():
            for _ in kb:
                pass
        n += 1
    assert n == len(batches)
    return stats


def check_producer_state(pdir: Path, logs: dict[int, bytes], skip_snapshots: set[str]) -> Counter:
    """Spec §9.2 / §10.2 cross-checks: every segment's .txnindex lists exactly its ABORT markers, with
    the first offset of the aborted transaction; every producer snapshot equals the state rebuilt from
    the batches below its offset."""
    stats: Counter = Counter()
    state: dict[int, dict] = {}
    snapshots_at: dict[int, dict] = {}
    snap_offsets = sorted(int(f.name.split(".")[0]) for f in pdir.glob("*.snapshot"))
    pending = list(snap_offsets)

    def take(upto: int) -> None:
        while pending and pending[0] <= upto:
            snapshots_at[pending.pop(0)] = {pid: dict(e) for pid, e in state.items()}

    for base in sorted(logs):
        data = logs[base]
        batches, _ = read_log(data)
        aborts = set()
        for b in batches:
            take(b.base_offset)
            if not b.crc_valid or b.producer_id < 0:
                continue
            e = state.setdefault(
                b.producer_id,
                {
                    "epoch": b.producer_epoch,
                    "last_sequence": -1,
                    "last_offset": -1,
                    "offset_delta": 0,
                    "timestamp": -1,
                    "coordinator_epoch": -1,
                    "txn_first": -1,
                    "epoch_of_seq": -1,
                },
            )
            e["epoch"] = b.producer_epoch
            if b.is_control:
                rec = decode_records(b, records_payload(b, data[b.position : b.position + b.size]))[0]
                marker = decode_control_record(rec.key, rec.value)
                if marker.type_name == "ABORT":
                    aborts.add((b.producer_id, e["txn_first"], b.base_offset))
                e["coordinator_epoch"] = marker.data["coordinatorEpoch"]
                e["txn_first"] = -1
                continue
            # spec §17.7: sequences contiguous within a producer epoch, a new epoch restarts at 0
            if e["epoch_of_seq"] == b.producer_epoch:
                assert b.base_sequence == e["last_sequence"] + 1, f"{pdir}: sequence gap at {b.base_offset}"
            else:
                assert b.base_sequence == 0, (
                    f"{pdir}: epoch {b.producer_epoch} starts at seq {b.base_sequence}"
                )
            e["epoch_of_seq"] = b.producer_epoch
            e.update(
                last_sequence=b.last_sequence,
                last_offset=b.last_offset,
                offset_delta=b.last_offset_delta,
                timestamp=b.max_timestamp,
            )
            if b.is_transactional and e["txn_first"] < 0:
                e["txn_first"] = b.base_offset
        txn = pdir / f"{base:020d}.txnindex"
        found = set()
        if txn.exists():
            found = {
                (t.producer_id, t.first_offset, t.last_offset)
                for t in read_txn_index(txn.read_bytes()).entries
            }
        assert found == aborts, f"{pdir}/{base}: txnindex {sorted(found)} != ABORT markers {sorted(aborts)}"
        stats["aborted_txns"] += len(aborts)
    take(1 << 62)
    for off, expected in snapshots_at.items():
        f = pdir / f"{off:020d}.snapshot"
        if f.name in skip_snapshots:
            continue
        got = {e.producer_id: e for e in verify_producer_snapshot(f.read_bytes()).entries}
        assert set(got) == set(expected), f"{f}: producers {sorted(got)} != {sorted(expected)}"
        for pid, e in expected.items():
            g = got[pid]
            assert (
                g.producer_epoch,
                g.last_sequence,
                g.last_offset,
                g.offset_delta,
                g.timestamp,
                g.coordinator_epoch,
                g.current_txn_first_offset,
            ) == (
                e["epoch"],
                e["last_sequence"],
                e["last_offset"],
                e["offset_delta"],
                e["timestamp"],
                e["coordinator_epoch"],
                e["txn_first"],
            ), f"{f}: producer {pid}: {g} != {e}"
        stats["snapshots_checked"] += 1
    return stats


def validate_tree(out: Path) -> Counter:
    """Validate every file under ``out``; return counters of what was checked."""
    truth = json.loads((out / "ground-truth.json").read_text())
    faults = truth["faults"]
    bad_crc = {(f["file"], f["batch_position"]) for f in faults if f["kind"] == "crc-flip"}
    torn = {f["file"] for f in faults if f["kind"] == "torn-tail"}
    stale_index = {(f["file"], f["position"]) for f in faults if f["kind"].endswith("index-entry-beyond-log")}
    stats: Counter = Counter()
    for node in sorted(p for p in out.iterdir() if p.is_dir()):
        props = parse_meta_properties((node / "meta.properties").read_bytes())
        assert props.version == 1 and props.cluster_id == truth["cluster_id"]
        if (node / ".kafka_cleanshutdown").exists():
            parse_clean_shutdown((node / ".kafka_cleanshutdown").read_bytes())
            assert not (node / ".lock").exists()
        for name in CHECKPOINTS:
            if (node / name).exists():
                parse_offset_checkpoint((node / name).read_bytes())
                stats["checkpoints"] += 1
        if (node / "bootstrap.checkpoint").exists():
            stats += validate_log(node / "bootstrap.checkpoint", set(), False, True)
        for pdir in sorted(p for p in node.iterdir() if p.is_dir()):
            metadata = pdir.name == "__cluster_metadata-0"
            parse_leader_epoch_checkpoint((pdir / "leader-epoch-checkpoint").read_bytes())
            parse_partition_metadata((pdir / "partition.metadata").read_bytes())
            if metadata:
                parse_quorum_state((pdir / "quorum-state").read_bytes())
            logs = {}
            for f in sorted(pdir.iterdir()):
                rel = f.relative_to(out).as_posix()
                name = f.name
                if name.endswith(".deleted"):
                    stats["deleted_files"] += 1
                    continue
                base = int(name.split(".")[0]) if name[0].isdigit() else None
                if name.endswith(".log"):
                    positions = {p for (fn, p) in bad_crc if fn == rel}
                    stats += validate_log(f, positions, rel in torn, metadata)
                    logs[base] = f.read_bytes()
                    stats["logs"] += 1
                elif name.endswith(".snapshot"):
                    verify_producer_snapshot(f.read_bytes())
                    stats["snapshots"] += 1
                elif name.endswith(".txnindex"):
                    read_txn_index(f.read_bytes())
                    stats["txnindexes"] += 1
            if not metadata:
                skip = {Path(f["file"]).name for f in faults if f["kind"] == "snapshot-beyond-log"}
                if not any(
                    Path(f["file"]).parent == pdir.relative_to(out)
                    for f in faults
                    if f["kind"] in ("crc-flip", "torn-tail")
                ):
                    stats += check_producer_state(pdir, logs, skip)
            for f in sorted(pdir.iterdir()):
                name = f.name
                rel = f.relative_to(out).as_posix()
                if name.endswith(".index"):
                    base = int(name.split(".")[0])
                    idx = read_offset_index(f.read_bytes(), base)
                    batches, _ = read_log(logs[base])
                    starts = {b.position: b for b in batches}
                    for k, (off, pos) in enumerate(idx.entries):
                        if (rel, 8 * k) in stale_index:
                            continue
                        assert pos in starts, f"{rel}: entry {k} position {pos} is not a batch start"
                        assert off >= starts[pos].last_offset, f"{rel}: entry {k} offset before its batch"
                    stats["index_entries"] += len(idx.entries)
                elif name.endswith(".timeindex"):
                    base = int(name.split(".")[0])
                    tix = read_time_index(f.read_bytes(), base)
                    ts = [t for t, _ in tix.entries]
                    assert ts == sorted(ts) and len(set(ts)) == len(ts), f"{rel}: timestamps not increasing"
                    stats["time_index_entries"] += len(tix.entries)
    return stats
