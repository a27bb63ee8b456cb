"""The ground truth of replicas by Kafka's identity: which log dir (``directory.id``) holds each replica, the
replicas of deleted topics still on disk (old incarnations, ``-stray`` and ``-delete`` directories), replicas
being moved between the log dirs of a broker (``-future``) and KRaft directory assignments that name another
log dir than the one holding the replica. ``truth.ground_truth`` adds these keys (their fields:
``docs/simulator.md``).

Every entry carries the ``expected_codes`` the audit must report for it and the ``scan_code`` that ``scan``
reports on its directory:

* old incarnation (``incarnations``, a directory whose ``partition.metadata`` holds the topic ID of a deleted
  topic): KA605 (not KA606, which is for replicas of the current topic ID outside its replica set), also
  when renamed ``-stray``; scan: KA510 on a directory still named ``<topic>-<partition>`` when a topic of
  that name exists again (its current ID differs), KA511 when none does, KA508 on a ``-stray`` one;
* ``deleted_replicas`` (``-delete``): KA608, scan KA509;
* ``moves`` (``-future``): KA607, scan KA509;
* ``directory_mismatches`` (the controller's ``directories`` entry names another log dir of the broker than
  the one holding the live replica): KA610.
"""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.log import ReplicaLog
from auditor.simulate.model import UNASSIGNED_DIR, RetiredReplica, TopicDeletion, tp_fields
from auditor.simulate.writer import log_dir_name, metadata_record_offset

OLD_INCARNATION, LOG_DIR_MOVE, DELETED_REPLICA, DIRECTORY_MISMATCH = "KA605", "KA607", "KA608", "KA610"
SCAN_STRAY, SCAN_MOVING_OR_DELETED, SCAN_TOPIC_ID_MISMATCH, SCAN_TOPIC_NOT_IN_METADATA = (
    "KA508",
    "KA509",
    "KA510",
    "KA511",
)


def log_facts(log: ReplicaLog) -> dict:
    """Log start and end offset, record count and ``.log`` bytes of a log as written."""
    batches = log.all_batches()
    return {
        "log_start_offset": log.log_start_offset,
        "log_end_offset": log.leo,
        "records": sum(len(b.records) for b in batches),
        "bytes": sum(seg.size + len(seg.tail) for seg in log.segments),
    }


def _removal(cluster: Cluster, deletion: TopicDeletion) -> dict:
    event = cluster.metadata[deletion.metadata_index]
    return {
        "remove_topic_offset": metadata_record_offset(cluster, deletion.metadata_index),
        "remove_topic_timestamp": cluster.options.start_time_ms + event.time_ms,
    }


def _current_topic_id(cluster: Cluster, topic: str) -> str | None:
    spec = cluster.topics.get(topic)
    return spec.topic_id if spec is not None else None


def log_dirs_truth(cluster: Cluster) -> list[dict]:
    """Every broker log dir: its directory name, ``directory.id`` and whether it is the metadata.log.dir."""
    return [
        {"broker": b, "dir": log_dir_name(b, k), "directory_id": dir_id, "metadata_log_dir": k == 0}
        for b, br in sorted(cluster.brokers.items())
        for k, dir_id in enumerate(br.dir_ids)
    ]


def topic_deletions_truth(cluster: Cluster) -> list[dict]:
    """Every deleted topic: its ID, partitions and replicas, the metadata offset and batch timestamp of its
    ``RemoveTopicRecord``, the brokers that renamed their replicas ``-delete`` and those that were down, and
    the offset tombstones the group coordinators wrote (``holders``: the replicas of the
    ``__consumer_offsets`` partition whose files hold the tombstone batch intact)."""
    out = []
    for d in cluster.topic_deletions:
        tombstones = []
        for t in d.tombstones:
            batch = t["write"].batch
            holders, offset = [], None
            if batch is not None:
                for b, br in sorted(cluster.brokers.items()):
                    rep = br.replicas.get(t["write"].tp)
                    for seg in rep.log.segments if rep is not None else []:
                        for i, x in enumerate(seg.batches):
                            if x.batch_id == batch.batch_id and i not in seg.damaged:
                                holders.append(b)
                                offset = x.base_offset
            tombstones.append(
                {
                    "group": t["group"],
                    "topic": t["tp"][0],
                    "partition": t["tp"][1],
                    "offsets_partition": t["offsets_partition"],
                    "status": t["write"].status,
                    "record_offset": offset,
                    "holders": holders,
                }
            )
        out.append(
            {
                "topic": d.spec.name,
                "topic_id": d.spec.topic_id,
                "partitions": d.spec.partitions,
                "replicas": {str(p): list(ps.replicas) for p, ps in sorted(d.partitions.items())},
                "time_ms": d.time_ms,
                **_removal(cluster, d),
                "deleted_on": list(d.deleted_on),
                "kept_on": list(d.kept_on),
                "current_topic_id": _current_topic_id(cluster, d.spec.name),
                "offset_tombstones": tombstones,
            }
        )
    return out


def _retired_entry(cluster: Cluster, b: int, r: RetiredReplica) -> dict:
    br = cluster.brokers[b]
    rep = r.replica
    tp = rep.tp
    deletion = cluster.topic_deletions[r.deletion]

    def ckpt(values: dict | None) -> int | None:
        """The entry of this log in its log dir's checkpoint: only a directory that kept its live name still
        owns one (a -delete or -stray log lost it; the entry of that name is the current log's)."""
        return None if values is None or r.state != "old-incarnation" else values.get(tp)

    return {
        "broker": b,
        "log_dir": log_dir_name(b, rep.log_dir),
        "directory_id": br.dir_ids[rep.log_dir],
        "dir": r.dir_name,
        **tp_fields(tp),
        "topic_id": r.topic_id,
        "current_topic_id": _current_topic_id(cluster, tp[0]),
        **log_facts(rep.log),
        "high_watermark_checkpoint": ckpt(br.ckpt_hw),
        "recovery_point_checkpoint": ckpt(br.ckpt_recovery),
        "leader_epoch_checkpoint": [list(e) for e in rep.disk_epoch_cache],
        "deleted_ms": deletion.time_ms,
        **_removal(cluster, deletion),
    }


def incarnations_truth(cluster: Cluster) -> list[dict]:
    """The replicas of old incarnations of topics (the topic was deleted while their broker was down):
    ``dir_kind`` ``live`` (still ``<topic>-<partition>``, its checkpoint entries kept) or ``stray`` (renamed
    when the broker started again; no checkpoint entries any more)."""
    out = []
    for b, br in sorted(cluster.brokers.items()):
        for r in br.retired:
            if r.state not in ("old-incarnation", "stray"):
                continue
            entry = _retired_entry(cluster, b, r)
            stray = r.state == "stray"
            if stray:
                scan = SCAN_STRAY
            elif entry["current_topic_id"] is not None:
                scan = SCAN_TOPIC_ID_MISMATCH
            else:
                scan = SCAN_TOPIC_NOT_IN_METADATA
            out.append(
                {
                    **entry,
                    "dir_kind": "stray" if stray else "live",
                    "expected_codes": [OLD_INCARNATION],
                    "scan_code": scan,
                }
            )
    return out


def deleted_replicas_truth(cluster: Cluster) -> list[dict]:
    """The ``-delete`` directories still on disk (their broker stopped within file.delete.delay.ms of the
    deletion)."""
    return [
        {
            **_retired_entry(cluster, b, r),
            "dir_kind": "delete",
            "expected_codes": [DELETED_REPLICA],
            "scan_code": SCAN_MOVING_OR_DELETED,
        }
        for b, br in sorted(cluster.brokers.items())
        for r in br.retired
        if r.state == "deleted"
    ]


def moves_truth(cluster: Cluster) -> list[dict]:
    """Every ``-future`` directory: the broker's move of a replica from its current (source) log dir to
    another (target) one, with the current and future logs' ends and the controller's final assignment."""
    out = []
    for b, br in sorted(cluster.brokers.items()):
        for tp, fut in sorted(br.futures.items()):
            rep = br.replicas[tp]
            ps = cluster.partitions[tp]
            out.append(
                {
                    "broker": b,
                    **tp_fields(tp),
                    "topic_id": cluster.topics[tp[0]].topic_id,
                    "dir": fut.dir_name,
                    "source_log_dir": log_dir_name(b, rep.log_dir),
                    "source_directory_id": br.dir_ids[rep.log_dir],
                    "target_log_dir": log_dir_name(b, fut.log_dir),
                    "target_directory_id": br.dir_ids[fut.log_dir],
                    "log_end_offset": rep.log.leo,
                    "future_log_start_offset": fut.log.log_start_offset,
                    "future_log_end_offset": fut.log.leo,
                    "future_records": log_facts(fut.log)["records"],
                    "future_high_watermark_checkpoint": fut.ckpt_hw,
                    "caught_up": fut.log.leo == rep.log.leo,
                    "assigned_directory_id": ps.directories[ps.replicas.index(b)],
                    "expected_codes": [LOG_DIR_MOVE],
                    "scan_code": SCAN_MOVING_OR_DELETED,
                }
            )
    return out


def directory_mismatches_truth(cluster: Cluster) -> list[dict]:
    """Replicas whose KRaft directory assignment names another log dir of their broker than the one holding
    the live replica (UNASSIGNED is no mismatch: the broker has not reported yet)."""
    out = []
    for tp, ps in cluster.partitions.items():
        for i, b in enumerate(ps.replicas):
            br = cluster.brokers[b]
            rep = br.replicas.get(tp)
            assigned = ps.directories[i] if i < len(ps.directories) else None
            if rep is None or assigned in (None, UNASSIGNED_DIR) or assigned == br.dir_ids[rep.log_dir]:
                continue
            where = br.dir_ids.index(assigned) if assigned in br.dir_ids else None
            fut = br.futures.get(tp)
            out.append(
                {
                    "broker": b,
                    **tp_fields(tp),
                    "topic_id": cluster.topics[tp[0]].topic_id,
                    "log_dir": log_dir_name(b, rep.log_dir),
                    "directory_id": br.dir_ids[rep.log_dir],
                    "assigned_directory_id": assigned,
                    "assigned_log_dir": log_dir_name(b, where) if where is not None else None,
                    "future_in_assigned_dir": fut is not None and fut.log_dir == where,
                    "expected_codes": [DIRECTORY_MISMATCH],
                }
            )
    return out


def identity_truth(cluster: Cluster) -> dict:
    """The identity keys of ``ground-truth.json``."""
    return {
        "log_dirs": log_dirs_truth(cluster),
        "topic_deletions": topic_deletions_truth(cluster),
        "incarnations": incarnations_truth(cluster),
        "deleted_replicas": deleted_replicas_truth(cluster),
        "moves": moves_truth(cluster),
        "directory_mismatches": directory_mismatches_truth(cluster),
    }


def identity_codes(identity: dict) -> set[str]:
    """The audit codes the identity entries of a run call for."""
    return {
        code
        for key in ("incarnations", "deleted_replicas", "moves", "directory_mismatches")
        for entry in identity[key]
        for code in entry["expected_codes"]
    }
