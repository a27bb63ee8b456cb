"""The ground truth of one partition: its replicas' state in memory and on disk, every write and what
was lost, the divergence and truncation points between replicas, and the findings its files must give."""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.model import TP, LeaderChange, tp_fields
from auditor.simulate.truth.oracles import epoch_truncation_offset, first_divergence
from auditor.simulate.truth.replica_view import ReplicaView, record_entries, reference_replica
from auditor.simulate.truth.transactions import hanging_transactions
from auditor.simulate.writer import partition_dir_name


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


def partition_truth(cluster: Cluster, tp: TP) -> dict:
    ps = cluster.partitions[tp]
    views = {b: ReplicaView(cluster, b, tp) for b in ps.replicas}
    ref_id, ref_source = reference_replica(cluster, tp, views)
    ref = views[ref_id]

    # ------------------------------------------------------------ simulation truth: writes and losses
    ref_ids = {t[4] for t in ref.batches if t[4] is not None}
    holders_of: dict[int, list[int]] = {}
    for v in views.values():
        for t in v.batches:
            if t[4] is not None:
                holders_of.setdefault(t[4], []).append(v.broker)
    writes, committed_lost, acked_lost = [], [], []
    for w in cluster.writes:
        if w.tp != tp:
            continue
        b = w.batch
        committed = b is not None and cluster.committed_ms(b) is not None
        writes.append(
            {
                "first_offset": b.base_offset if b else None,
                "last_offset": b.last_offset if b else None,
                "records": len(b.records) if b else 0,
                "acks": w.acks,
                "status": w.status,
                "error": w.error,
                "leader": w.leader,
                "epoch": w.epoch,
                "control": b.control if b else None,
                "committed": committed,
            }
        )
        if b is None or b.control is not None or b.batch_id in ref_ids:
            continue
        if b.transactional and cluster.txn_outcome.get(b.batch_id) != "committed":
            continue  # aborted, or never ended: no read_committed consumer ever saw it
        for off, bt, k in record_entries(b):
            rec = bt.records[k]
            item = {
                "offset": off,
                "key": _text(rec.key),
                "value": _text(rec.value),
                "epoch": bt.epoch,
                "acks": w.acks,
                "acknowledged": w.acknowledged,
                "still_on": sorted(holders_of.get(bt.batch_id, [])),
            }
            if committed:
                committed_lost.append(item)
            if w.acknowledged:
                acked_lost.append(item)

    # -------------------------------------------------------------------- on-disk expectations
    ids = sorted(views)
    divergence = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            divergence.append(
                {
                    "replicas": [a, b],
                    "first_divergent_offset": first_divergence(views[a].batches, views[b].batches),
                }
            )
    epoch_trunc = []
    for b in ids:
        if b == ref_id:
            continue
        v = views[b]
        hw = min(max(v.hw_ckpt or 0, v.log_start), v.leo)
        epoch_trunc.append(
            {
                "follower": b,
                "leader": ref_id,
                "truncation_offset": epoch_truncation_offset(ref.cache, ref.leo, v.cache, v.leo, hw),
            }
        )

    hw_violations = []
    for b in ids:
        v = views[b]
        if v.hw_ckpt is None:
            continue
        if v.hw_ckpt > v.leo:
            hw_violations.append(
                {"broker": b, "kind": "hw_above_leo", "high_watermark": v.hw_ckpt, "compared_to": v.leo}
            )
        if v.hw_ckpt < v.log_start:
            hw_violations.append(
                {
                    "broker": b,
                    "kind": "hw_below_log_start",
                    "high_watermark": v.hw_ckpt,
                    "compared_to": v.log_start,
                }
            )
        if b != ref_id:
            if v.hw_ckpt > ref.leo:
                hw_violations.append(
                    {
                        "broker": b,
                        "kind": "hw_above_leader_leo",
                        "high_watermark": v.hw_ckpt,
                        "compared_to": ref.leo,
                    }
                )
            if ref.hw_ckpt is not None and v.hw_ckpt > ref.hw_ckpt:
                hw_violations.append(
                    {
                        "broker": b,
                        "kind": "follower_hw_above_leader_hw",
                        "high_watermark": v.hw_ckpt,
                        "compared_to": ref.hw_ckpt,
                    }
                )

    # A record held by a replica but absent from / different on the reference was committed if some
    # replica holding that same batch checkpointed an HW above its offset (a follower's HW never covers
    # data it did not copy from the then-leader, so the batch was below that leader's HW).
    committed_hw: dict[tuple, int] = {}
    for v in views.values():
        for t in v.batches:
            committed_hw[t[:4]] = max(committed_hw.get(t[:4], 0), v.hw_ckpt or 0)
    loss: dict[int, dict] = {}
    lost_markers: dict[tuple[int, int], dict] = {}
    excluded: dict[int, dict] = {}
    uncommitted = []
    for b in ids:
        if b == ref_id:
            continue
        v = views[b]
        states = v.txn_states()
        run: list[int] | None = None
        for t in v.batches:
            differs = ref.by_base.get(t[0], (None,))[:4] != t[:4]
            hw = committed_hw[t[:4]]
            batch = v.batch(t[0]) if differs else None
            state = states.get(t[0], "plain")
            if differs and batch is not None and state == "marker":
                lost_markers[(b, t[0])] = {
                    "broker": b,
                    "offset": t[0],
                    "marker": batch.control,
                    "producer_id": batch.producer_id,
                    "producer_epoch": batch.producer_epoch,
                    "coordinator_epoch": batch.coordinator_epoch,
                    "epoch": batch.epoch,
                    "committed": t[0] < hw,
                }
            elif differs and t[0] < hw and batch is not None and state in ("aborted", "open"):
                for off, _bt, _k in record_entries(batch, hi=hw):
                    item = excluded.setdefault(off, {"offset": off, "state": state, "holders": []})
                    if b not in item["holders"]:
                        item["holders"].append(b)
            elif differs and t[0] < hw and batch is not None and state != "control":
                for off, bt, k in record_entries(batch, hi=hw):
                    rec = bt.records[k]
                    item = loss.setdefault(
                        off,
                        {
                            "offset": off,
                            "key": _text(rec.key),
                            "value": _text(rec.value),
                            "epoch": bt.epoch,
                            "holders": [],
                        },
                    )
                    if b not in item["holders"]:
                        item["holders"].append(b)
            if differs and t[1] >= hw:
                lo = max(t[0], hw)
                run = [run[0], t[1]] if run else [lo, t[1]]
            elif run:
                uncommitted.append({"broker": b, "first_offset": run[0], "last_offset": run[1]})
                run = None
        if run:
            uncommitted.append({"broker": b, "first_offset": run[0], "last_offset": run[1]})

    state = {}
    for b in ids:
        v = views[b]
        br = cluster.brokers[b]
        rep = v.rep
        state[str(b)] = {
            "online": br.alive,
            "disk": {
                "log_start_offset": v.log_start,
                "log_end_offset": v.leo_on_disk,
                "recovered_log_end_offset": v.recovered_leo,
                "high_watermark_checkpoint": v.hw_ckpt,
                "recovery_point_checkpoint": v.rp_ckpt,
                "log_start_offset_checkpoint": v.ls_ckpt,
                "leader_epoch_checkpoint": [list(e) for e in v.epoch_file],
                "segments": [s.base_offset for s in rep.log.segments],
                "batches": len(v.batches),
                "latest_epoch": v.cache[-1][0] if v.cache else None,
            },
            "memory": None
            if not br.alive
            else {
                "log_end_offset": rep.log.leo,
                "high_watermark": rep.hw,
                "recovery_point": rep.log.recovery_point,
                "leader_epoch_cache": [list(e) for e in rep.log.epoch_cache],
                "is_leader": rep.is_leader,
            },
        }
    return {
        **partition_head(cluster, tp),
        "reference": {"broker": ref_id, "source": ref_source},
        "leader_history": [history_entry(h, h.start_offset) for h in cluster.leader_history[tp]],
        "replica_state": state,
        "writes": writes,
        "committed_lost": committed_lost,
        "acknowledged_lost": acked_lost,
        "divergence": divergence,
        "epoch_truncation": epoch_trunc,
        "expected_findings": {
            "hw_violations": hw_violations,
            "truncation_loss": [loss[k] for k in sorted(loss)],
            "truncation_loss_excluded": [excluded[k] for k in sorted(excluded)],
            "lost_markers": [lost_markers[k] for k in sorted(lost_markers)],
            "divergent_uncommitted": uncommitted,
        },
        "hanging_transactions": hanging_transactions(cluster, ref, views),
    }


def partition_head(cluster: Cluster, tp: TP) -> dict:
    """The first keys of a partition's ground truth: its name, directory, replicas and final KRaft state."""
    ps = cluster.partitions[tp]
    return {
        **tp_fields(tp),
        "dir": partition_dir_name(*tp),
        "replicas": list(ps.replicas),
        "final": {
            "leader": ps.leader,
            "leader_epoch": ps.leader_epoch,
            "isr": list(ps.isr),
            "leader_recovery_state": ps.leader_recovery_state,
        },
    }


def history_entry(change: LeaderChange, start_offset: int | None) -> dict:
    """One ``leader_history`` item: a leader change with the first offset its epoch wrote."""
    return {
        "epoch": change.epoch,
        "leader": change.leader,
        "start_offset": start_offset,
        "time_ms": change.time_ms,
        "isr": change.isr,
        "unclean": change.unclean,
        "reason": change.reason,
    }
