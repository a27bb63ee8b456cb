"""The ground truth of consumer groups: their commits, which replicas of ``__consumer_offsets`` hold them,
and the consequences for each consumed partition."""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.model import TP, tp_fields
from auditor.simulate.truth.replica_view import ReplicaView, internal_view, record_entries, reference_replica


def groups_truth(cluster: Cluster) -> list[dict]:
    """Per consumer group: its ``__consumer_offsets`` partition and every commit (which replicas of that
    partition hold it), then per consumed partition the commit the coordinator loads from the reference
    replica and its consequences: ``in-lost-range`` (KA721: ``consumed_gone`` records the group read no
    longer exist, ``skipped`` different records now at those offsets will not be read), ``above-leo``
    (KA720), ``commit-lost`` (KA723: a later commit only on a replica that truncates, ``re_read`` offsets
    read again) or ``ok``."""
    from auditor.simulate.coordinators import OFFSETS_TOPIC

    co = cluster.coordinators
    if co is None or not co.groups.commits:
        return []
    offsets_views: dict[int, tuple[int, dict[int, ReplicaView]]] = {}
    data_refs: dict[TP, ReplicaView] = {}
    by_group: dict[str, list] = {}
    for cm in co.groups.commits:
        by_group.setdefault(cm.group, []).append(cm)
    commit_index = {id(cm): i for i, cm in enumerate(co.groups.commits)}
    out = []
    for group, commits in by_group.items():
        part = commits[0].offsets_partition
        if part not in offsets_views:
            offsets_views[part] = internal_view(cluster, OFFSETS_TOPIC, part)
        ref_id, views = offsets_views[part]
        items = []
        for cm in commits:
            holders, record_offset = [], None
            for b, v in sorted(views.items()):
                for t in v.batches:
                    if t[4] is not None and t[4] == cm.batch_id and t[0] < v.leo:
                        holders.append(b)
                        record_offset = t[0]
            items.append((cm, holders, record_offset))
        tps = list(dict.fromkeys(cm.tp for cm in commits))
        per_tp = []
        for tp in tps:
            mine = [x for x in items if x[0].tp == tp]
            forgotten = _tombstoned_before(cluster, group, tp, views[ref_id])
            mine = [x for x in mine if commit_index[id(x[0])] >= forgotten]
            on_ref = [x for x in mine if ref_id in x[1]]
            effective = on_ref[-1][0] if on_ref else None
            consequences = []
            last_index = mine.index(on_ref[-1]) if on_ref else -1
            for cm, holders, rec_off in mine[last_index + 1 :]:
                if holders:
                    consequences.append(
                        {
                            "kind": "commit-lost",
                            "code": "KA723",
                            "brokers": holders,
                            "record_offset": rec_off,
                            "lost_offset": cm.offset,
                            "committed_offset": effective.offset if effective else None,
                            "re_read": cm.offset - effective.offset if effective else None,
                        }
                    )
            if effective is not None and tp in cluster.partitions:
                if tp not in data_refs:
                    views_d = {b: ReplicaView(cluster, b, tp) for b in cluster.partitions[tp].replicas}
                    data_refs[tp] = views_d[reference_replica(cluster, tp, views_d)[0]]
                dref = data_refs[tp]
                ids = {t[4] for t in dref.batches if t[4] is not None and t[0] < dref.leo}
                consumed = [r for x in mine[: last_index + 1] for r in x[0].consumed]
                gone = sorted(off for off, bid, _k in consumed if off < effective.offset and bid not in ids)
                o = effective.offset
                if gone:
                    skipped = 0
                    for t in dref.batches:
                        bt = dref.batch(t[0])
                        if bt is not None and bt.control is None and t[0] < dref.leo:
                            skipped += len(record_entries(bt, gone[0], min(o, dref.leo)))
                    consequences.append(
                        {
                            "kind": "in-lost-range",
                            "code": "KA721",
                            "committed_offset": o,
                            "first_gone_offset": gone[0],
                            "last_gone_offset": gone[-1],
                            "consumed_gone": len(gone),
                            "skipped": skipped,
                        }
                    )
                if o > dref.leo:
                    consequences.append(
                        {
                            "kind": "above-leo",
                            "code": "KA720",
                            "committed_offset": o,
                            "log_end_offset": dref.leo,
                            "log_start_offset": dref.log_start,
                            "consumed_gone": len(gone),
                        }
                    )
            if not consequences:
                consequences.append({"kind": "ok", "code": None})
            per_tp.append(
                {
                    **tp_fields(tp),
                    "committed_offset": effective.offset if effective else None,
                    "committed_leader_epoch": effective.leader_epoch if effective else None,
                    "consequences": consequences,
                }
            )
        out.append(
            {
                "group": group,
                "protocol": co.groups.protocol_of(group),
                "offsets_partition": part,
                "coordinator": ref_id,
                "commits": [
                    {
                        "topic": cm.tp[0],
                        "partition": cm.tp[1],
                        "offset": cm.offset,
                        "leader_epoch": cm.leader_epoch,
                        "metadata": cm.metadata,
                        "commit_timestamp": cm.commit_ms,
                        "status": cm.status,
                        "record_offset": rec_off,
                        "holders": holders,
                        "on_coordinator": ref_id in holders,
                    }
                    for cm, holders, rec_off in items
                ],
                "partitions": per_tp,
            }
        )
    return out


def _tombstoned_before(cluster: Cluster, group: str, tp: TP, ref: ReplicaView) -> int:
    """How many of the coordinator's commits (in order) came before the last offset tombstone of ``group``
    for ``tp`` that the reference replica of the offsets partition holds (a topic deletion): the group's
    commits before it are gone. 0 when there is none."""
    held = {t[4] for t in ref.batches if t[4] is not None and t[0] < ref.leo}
    out = 0
    for d in cluster.topic_deletions:
        for t in d.tombstones:
            batch = t["write"].batch
            if (t["group"], t["tp"]) == (group, tp) and batch is not None and batch.batch_id in held:
                out = max(out, t["commits"])
    return out
