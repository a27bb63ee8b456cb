"""``--scale``: large multi-broker log directories for benchmarks, written without per-batch objects.

Supported scenarios: ``clean`` (every replica holds the same log, all brokers running) and
``unclean-election`` (every partition diverges like the named scenario: broker 1, down, holds phases A+B in
epoch 0 with its HW covering B; the other replicas hold A + C in epoch 2 after an unclean election). Each
batch carries one record (``--records`` = batches per partition) with a ``scale_value_bytes`` value, all
replicas' indexes follow the leader's one-batch-per-append rule, and the metadata log comes from the
same broker events replayed on a data-less :class:`~auditor.simulate.cluster.Cluster`. The ground truth
uses the regular schema with ``"compact": true``: record-level lists are replaced by offset ranges.
"""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from auditor.simulate.batches import FastBatchEncoder
from auditor.simulate.cluster import Cluster
from auditor.simulate.config import SimOptions
from auditor.simulate.identity import identity_truth
from auditor.simulate.scenarios import Scenario
from auditor.simulate.truth import GROUND_TRUTH_VERSION, controller_entry, topic_entries
from auditor.simulate.truth.partition import history_entry, partition_head
from auditor.simulate.writer import (
    MetadataLayout,
    bootstrap_checkpoint,
    broker_dir_name,
    partition_dir_name,
    write_metadata_dir,
)
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata
from parsers.indexes import build_offset_index, build_time_index
from parsers.producer_snapshot import build_producer_snapshot

SCALE_SCENARIOS = ("clean", "unclean-election")
TS_STEP_MS = 1
WRITER_THREADS = 8


@dataclass
class SegmentOut:
    base: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    index: list[tuple[int, int]] = field(default_factory=list)
    time_index: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class LogOut:
    segments: list[SegmentOut]
    leo: int
    batches: int


def build_log(
    extents: list[tuple[int, int, FastBatchEncoder]], *, segment_bytes: int, interval: int, ts0: int
) -> LogOut:
    """Segments of a log made of ``extents`` = [(batches, partitionLeaderEpoch, encoder)], appended one
    batch per append as a leader does (roll at segment.bytes, index entry every index.interval.bytes,
    final time index entry on roll)."""
    segments: list[SegmentOut] = []
    cur = SegmentOut(0)
    chunks = cur.chunks
    size = 0
    since = 0
    last_ts = -1
    offset = 0
    for n, epoch, enc in extents:
        bsize = enc.size
        encode = enc.encode
        for _ in range(n):
            ts = ts0 + offset * TS_STEP_MS
            if size and size > segment_bytes - bsize:
                cur.size = size
                if ts - TS_STEP_MS > last_ts:
                    cur.time_index.append((ts - TS_STEP_MS, offset - 1))
                segments.append(cur)
                cur = SegmentOut(offset)
                chunks = cur.chunks
                size = since = 0
                last_ts = -1
            if since > interval:
                cur.index.append((offset, size))
                cur.time_index.append((ts, offset))
                last_ts = ts
                since = 0
            chunks.append(encode(offset, epoch, ts))
            size += bsize
            since += bsize
            offset += 1
    cur.size = size
    segments.append(cur)
    return LogOut(segments, offset, offset)


@dataclass
class ReplicaPlan:
    log: LogOut
    epochs: list[tuple[int, int]]
    hw: int
    running: bool


def _write_files(files: list[tuple[str, bytes]]) -> None:
    for path, data in files:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _partition_files(
    root: Path, topic: str, partition: int, topic_id: str, plan: ReplicaPlan, index_bytes: int, cache: dict
) -> list[tuple[str, bytes]]:
    """The files of one partition replica (segments are encoded once and shared between replicas)."""
    pdir = root / partition_dir_name(topic, partition)
    pdir.mkdir(parents=True)
    d = str(pdir) + os.sep
    segs = plan.log.segments
    empty_snapshot = cache.setdefault("snap", build_producer_snapshot([]))
    files = []
    for k, seg in enumerate(segs):
        prealloc = index_bytes if k == len(segs) - 1 else None
        blob = cache.get(id(seg))
        if blob is None:
            blob = (
                b"".join(seg.chunks),
                build_offset_index(seg.index, seg.base, prealloc),
                build_time_index(seg.time_index, seg.base, prealloc),
            )
            cache[id(seg)] = blob
        name = d + f"{seg.base:020d}"
        files += [(name + ".log", blob[0]), (name + ".index", blob[1]), (name + ".timeindex", blob[2])]
        if k:
            files.append((name + ".snapshot", empty_snapshot))
    files.append((d + "leader-epoch-checkpoint", format_leader_epoch_checkpoint(plan.epochs)))
    files.append((d + "partition.metadata", format_partition_metadata(topic_id)))
    return files


def _replay_cluster(scenario: str, options: SimOptions, fixed: bool) -> Cluster:
    """The broker/controller events of the scenario on a cluster without data (for the metadata log)."""
    c = Cluster(options, truncation="epoch", rng=random.Random(options.seed))
    ids = list(range(1, options.rf + 1))
    for i in range(options.topics):
        assignment = {p: list(ids) for p in range(options.partitions)} if fixed else None
        c.add_topic(
            f"t{i}",
            options.partitions,
            kind="plain",
            unclean=scenario == "unclean-election",
            min_insync=1 if scenario == "unclean-election" else min(options.min_insync_replicas, options.rf),
            replicas=assignment,
            topic_index=i,
        )
    if scenario == "unclean-election":
        for f in ids[1:]:
            c.crash(f)
        c.tick(options.hw_checkpoint_interval_ms)
        c.crash(1)
        c.tick(60000)
        c.restart(2)
        for f in ids[2:]:
            c.restart(f)
        c.replicate(2)
    return c


def run_scale(scenario: Scenario, out_dir: Path, options: SimOptions, opts_json: dict) -> dict:
    name = scenario.name
    if name not in SCALE_SCENARIOS:
        raise ValueError(f"--scale supports the scenarios {', '.join(SCALE_SCENARIOS)}, not {name!r}")
    if name == "unclean-election" and options.rf < 2:
        raise ValueError("scenario 'unclean-election' needs a replication factor of at least 2")
    t_start = time.perf_counter()
    unclean = name == "unclean-election"
    c = _replay_cluster(name, options, fixed=unclean)
    n = max(1, options.records)
    value_len = options.extra.get("scale_value_bytes", 16)

    def encoder(label: str) -> FastBatchEncoder:
        return FastBatchEncoder([label.encode()], [(label + "|").encode().ljust(value_len, b"x")])

    enc = {k: encoder(k) for k in "ABC"}
    seg_bytes, interval = options.segment_bytes, options.index_interval_bytes
    ts0 = options.start_time_ms
    a_n, b_n, c_n = n // 2, n // 4, (n * 3) // 20
    out_dir.mkdir(parents=True, exist_ok=True)
    date = datetime.fromtimestamp(ts0 / 1000, tz=timezone.utc)
    generated = copies = 0
    partitions_truth = []
    ckpt: dict[int, dict[tuple[str, int], int]] = {b: {} for b in c.brokers}
    rp_ckpt: dict[int, dict[tuple[str, int], int]] = {b: {} for b in c.brokers}
    roots = {b: out_dir / broker_dir_name(b) for b in c.brokers}
    for root in roots.values():
        root.mkdir(parents=True, exist_ok=True)
    pool = ThreadPoolExecutor(max_workers=WRITER_THREADS)
    writes: list = []
    for tp, ps in c.partitions.items():
        while len(writes) > 4 * WRITER_THREADS:  # bound the memory held by queued file contents
            writes.pop(0).result()
        topic_id = c.topics[tp[0]].topic_id
        cache: dict = {}
        plans: dict[int, ReplicaPlan] = {}
        if not unclean:
            log = build_log([(n, 0, enc["A"])], segment_bytes=seg_bytes, interval=interval, ts0=ts0)
            generated += log.batches
            for b in ps.replicas:
                plans[b] = ReplicaPlan(log, [(0, 0)], log.leo, True)
        else:
            old = build_log(
                [(a_n, 0, enc["A"]), (b_n, 0, enc["B"])], segment_bytes=seg_bytes, interval=interval, ts0=ts0
            )
            new = build_log(
                [(a_n, 0, enc["A"]), (c_n, 2, enc["C"])], segment_bytes=seg_bytes, interval=interval, ts0=ts0
            )
            generated += old.batches + new.batches
            plans[ps.replicas[0]] = ReplicaPlan(old, [(0, 0)], old.leo, False)
            for b in ps.replicas[1:]:
                plans[b] = ReplicaPlan(new, [(0, 0), (2, a_n)], new.leo, True)
        for b, plan in plans.items():
            files = _partition_files(
                roots[b], tp[0], tp[1], topic_id, plan, options.segment_index_bytes, cache
            )
            writes.append(pool.submit(_write_files, files))
            copies += plan.log.batches
            ckpt[b][tp] = plan.hw
            rp_ckpt[b][tp] = plan.log.segments[-1].base
        partitions_truth.append(_partition_truth(c, tp, plans, unclean, a_n, b_n))
    for w in writes:
        w.result()
    pool.shutdown()
    gen_seconds = time.perf_counter() - t_start
    layout = MetadataLayout(c, options.segment_index_bytes) if options.kraft else None
    boot = bootstrap_checkpoint(ts0)
    for b, root in roots.items():
        br = c.brokers[b]
        (root / "meta.properties").write_bytes(format_meta_properties(1, b, c.cluster_id, br.dir_id, date))
        (root / ".lock").write_bytes(b"")
        (root / "replication-offset-checkpoint").write_bytes(
            format_offset_checkpoint((t, p, o) for (t, p), o in sorted(ckpt[b].items()))
        )
        (root / "recovery-point-offset-checkpoint").write_bytes(
            format_offset_checkpoint((t, p, o) for (t, p), o in sorted(rp_ckpt[b].items()))
        )
        (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
        (root / "cleaner-offset-checkpoint").write_bytes(b"")
        if layout is not None:
            (root / "bootstrap.checkpoint").write_bytes(boot)
            write_metadata_dir(root, layout.broker_log(b), options.controller_id, options.segment_index_bytes)
    if layout is not None:
        root = out_dir / f"controller-{options.controller_id}"
        root.mkdir(parents=True, exist_ok=True)
        (root / "meta.properties").write_bytes(
            format_meta_properties(1, options.controller_id, c.cluster_id, c.controller_dir_id, date)
        )
        (root / ".lock").write_bytes(b"")
        (root / "bootstrap.checkpoint").write_bytes(boot)
        write_metadata_dir(root, layout.controller_log(), options.controller_id, options.segment_index_bytes)
    total = time.perf_counter() - t_start
    brokers = [
        {
            "id": b,
            "dir": broker_dir_name(b),
            "state": "running" if br.alive else "crashed",
            "crash_kind": br.crash_kind if not br.alive else None,
            "clean_shutdown": False,
            "fenced": b in c.fenced,
        }
        for b, br in sorted(c.brokers.items())
    ]
    return {
        "version": GROUND_TRUTH_VERSION,
        "generator": "kafka-auditor simulate --scale",
        "scenario": name,
        "description": scenario.description,
        "truncation_mode": "epoch",
        "options": opts_json,
        "cluster_id": c.cluster_id,
        "compact": True,
        "controller": controller_entry(options),
        "brokers": brokers,
        "topics": topic_entries(c, compression=0),
        "partitions": partitions_truth,
        "groups": [],
        "transactions": [],
        "expected_codes": ["KA710"]
        if any(p["expected_findings"]["truncation_loss"] for p in partitions_truth)
        else [],
        "faults": [],
        "events": c.events,
        **identity_truth(c),
        "stats": {
            "batches_generated": generated,
            "batch_copies_written": copies,
            "generation_seconds": round(gen_seconds, 3),
            "total_seconds": round(total, 3),
            "batches_per_second": round(generated / gen_seconds) if gen_seconds else None,
            "batch_copies_per_second": round(copies / gen_seconds) if gen_seconds else None,
        },
    }


def _partition_truth(
    c: Cluster, tp: tuple[str, int], plans: dict[int, ReplicaPlan], unclean: bool, a_n: int, b_n: int
) -> dict:
    ps = c.partitions[tp]
    ids = sorted(plans)
    old = ps.replicas[0]
    state = {}
    for b in ids:
        plan = plans[b]
        state[str(b)] = {
            "online": c.brokers[b].alive,
            "disk": {
                "log_start_offset": 0,
                "log_end_offset": plan.log.leo,
                "recovered_log_end_offset": plan.log.leo,
                "high_watermark_checkpoint": plan.hw,
                "recovery_point_checkpoint": plan.log.segments[-1].base,
                "log_start_offset_checkpoint": None,
                "leader_epoch_checkpoint": [list(e) for e in plan.epochs],
                "segments": [s.base for s in plan.log.segments],
                "batches": plan.log.batches,
                "latest_epoch": plan.epochs[-1][0],
            },
            "memory": None,
        }
    divergence, epoch_trunc, hw_violations, loss, uncommitted, lost = [], [], [], [], [], []
    ref = ps.leader if ps.leader >= 0 else ids[0]
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            diverged = unclean and old in (a, b)
            divergence.append({"replicas": [a, b], "first_divergent_offset": a_n if diverged else None})
    for b in ids:
        if b != ref:
            trunc = a_n if unclean and b == old else plans[b].log.leo
            epoch_trunc.append({"follower": b, "leader": ref, "truncation_offset": trunc})
    if unclean:
        ref_leo, old_hw = plans[ref].log.leo, plans[old].hw
        if old_hw > ref_leo:
            hw_violations.append(
                {
                    "broker": old,
                    "kind": "hw_above_leader_leo",
                    "high_watermark": old_hw,
                    "compared_to": ref_leo,
                }
            )
        if old_hw > plans[ref].hw:
            hw_violations.append(
                {
                    "broker": old,
                    "kind": "follower_hw_above_leader_hw",
                    "high_watermark": old_hw,
                    "compared_to": plans[ref].hw,
                }
            )
        rng = {"first_offset": a_n, "last_offset": a_n + b_n - 1, "records": b_n}
        loss.append({**rng, "holders": [old]})
        lost.append({**rng, "epoch": 0, "acks": "1", "acknowledged": True, "still_on": [old]})
    hist = [
        history_entry(h, a_n if unclean and h.epoch == 2 else (0 if h.leader >= 0 else None))
        for h in c.leader_history[tp]
    ]
    return {
        **partition_head(c, tp),
        "reference": {
            "broker": ref,
            "source": "metadata" if c.options.kraft and ps.leader >= 0 else "inferred",
        },
        "leader_history": hist,
        "replica_state": state,
        "writes": None,
        "committed_lost": lost,
        "acknowledged_lost": lost,
        "divergence": divergence,
        "epoch_truncation": epoch_trunc,
        "expected_findings": {
            "hw_violations": hw_violations,
            "truncation_loss": loss,
            "truncation_loss_excluded": [],  # --scale writes plain batches only
            "lost_markers": [],
            "divergent_uncommitted": uncommitted,
        },
        "hanging_transactions": [],
    }
