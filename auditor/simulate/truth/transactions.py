"""The ground truth of transactions: those left hanging on a partition's reference replica (with the
markers other replicas hold and the coordinator's view of them) and the transaction coordinator's log."""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.truth.replica_view import ReplicaView, internal_view


def _producer_of(cluster: Cluster, pid: int) -> dict | None:
    for prod in [*cluster._producers.values(), *cluster.retired_producers]:
        if prod["pid"] == pid:
            return prod
    return None


def coordinator_view(cluster: Cluster, pid: int) -> dict | None:
    """What the transaction coordinator would load for producer ``pid``'s transactional id: its latest
    ``__transaction_state`` record on the reference replica of the coordinating partition (None: the
    cluster has no transaction coordinator)."""
    from auditor.simulate.coordinators import STATE_NAMES, TRANSACTION_STATE_TOPIC

    co = cluster.coordinators
    prod = _producer_of(cluster, pid)
    if co is None or not co.transactions.partitions or prod is None:
        return None
    tid = prod["transactional_id"]
    part = co.transactions.partition_for(tid)
    ref_id, views = internal_view(cluster, TRANSACTION_STATE_TOPIC, part)
    ref = views[ref_id]
    out = {"transactional_id": tid, "partition": part, "broker": ref_id, "state": None}
    for t in ref.batches:
        if t[0] >= ref.leo:
            break
        for rec in cluster.coordinator_records.get(t[4], []) if t[4] is not None else []:
            if rec.kind == "transaction" and rec.key["transactionalId"] == tid and rec.value is not None:
                out.update(
                    state=STATE_NAMES[rec.value["transactionStatus"]],
                    producer_id=rec.value["producerId"],
                    producer_epoch=rec.value["producerEpoch"],
                    offset=t[0],
                )
    return out


def hanging_transactions(cluster: Cluster, ref: ReplicaView, views: dict[int, ReplicaView]) -> list[dict]:
    """Transactions open on the reference replica's loaded log: producer id and epoch, first and last
    offset, the last stable offset and high watermark it leaves, the markers of that producer other
    replicas hold after it (lost with the leader change: ``KA713``) and the coordinator's view
    (``KA714`` when it no longer tracks the transaction as ongoing)."""
    open_txns: dict[int, dict] = {}
    for t in ref.batches:
        if t[0] >= ref.leo:
            break
        b = ref.batch(t[0])
        if b is None:
            continue
        if b.control in ("COMMIT", "ABORT"):
            open_txns.pop(b.producer_id, None)
        elif b.control is None and b.transactional:
            cur = open_txns.setdefault(
                b.producer_id,
                {
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "first_offset": b.base_offset,
                    "records": 0,
                },
            )
            cur["last_offset"] = b.last_offset
            cur["records"] += b.count
    hw = min(max(ref.hw_ckpt or 0, ref.log_start), ref.leo)
    lso = min((x["first_offset"] for x in open_txns.values() if x["first_offset"] < hw), default=hw)
    out = []
    for txn in sorted(open_txns.values(), key=lambda x: x["first_offset"]):
        markers = []
        first = ref.by_base[txn["first_offset"]]
        for b, v in sorted(views.items()):
            if b == ref.broker or v.by_base.get(first[0], (None,))[:4] != first[:4]:
                continue
            for t in v.batches:
                bt = v.batch(t[0]) if t[0] > txn["first_offset"] else None
                if (
                    bt is not None
                    and bt.control in ("COMMIT", "ABORT")
                    and bt.producer_id == txn["producer_id"]
                ):
                    markers.append({"broker": b, "offset": t[0], "marker": bt.control})
                    break
        coord = coordinator_view(cluster, txn["producer_id"])
        forgot = coord is not None and not (
            coord["state"] == "Ongoing"
            and (coord.get("producer_id"), coord.get("producer_epoch"))
            == (txn["producer_id"], txn["producer_epoch"])
        )
        codes = (["KA713"] if markers else []) + (["KA714"] if forgot else [])
        out.append(
            {
                **txn,
                "last_stable_offset": lso,
                "high_watermark": hw,
                "log_end_offset": ref.leo,
                "leader": ref.broker,
                "markers_elsewhere": markers,
                "coordinator": coord,
                "expected_codes": codes,
            }
        )
    return out


def transactions_truth(cluster: Cluster) -> list[dict]:
    """What the transaction coordinator wrote: one entry per ``__transaction_state`` record (transactional
    id, producer id and epoch, state, coordinating partition, the transaction's partitions, and the
    status of the append: acked, pending, failed or rejected)."""
    co = cluster.coordinators
    if co is None:
        return []
    return [
        {**{k: v for k, v in e.items() if k != "write"}, "status": e["write"].status}
        for e in co.transactions.log
    ]
