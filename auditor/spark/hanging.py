"""Transactions open on the current leader (KA713 hanging, KA714 forgotten by the coordinator).

The pass over each partition (``auditor.spark.pass_loss.open_transactions``) finds the transactions open
on the current leader (``is_leader`` of the per-replica summary), classified by the one model of
``auditor.kafka.transactions``, with the COMMIT/ABORT markers of its producer that OTHER replicas hold after
its first offset (the markers lost to truncation). The leader's high watermark is the checkpointed one as
Kafka loads it (clamped into ``[log start, LEO]``); the coordinator's latest state for its producer id is read
from the ``__transaction_state`` partition leaders among the inputs (``auditor.kafka.coordinator``). The rules
of :mod:`auditor.rules.replica.transactions` then decide, in the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.kafka.hw import clamp_high_watermark
from auditor.kafka.topics import TRANSACTION_STATE_TOPIC
from auditor.kafka.transactions import MARKER_NAMES, Batch, last_stable_offset
from auditor.rules import runner
from auditor.rules.replica.model import partition_of
from auditor.rules.replica.transactions import CoordinatorView, MarkerElsewhere, OpenTransaction

_PART = ["cluster", "topic", "partition"]


def coordinator_leaders(summary: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The leaders of the ``__transaction_state`` partitions among the inputs (cluster, topic, partition,
    broker), from the audit's per-replica summary rows."""
    return [
        {k: r[k] for k in (*_PART, "broker")}
        for r in summary
        if r["is_leader"] and r["topic"] == TRANSACTION_STATE_TOPIC
    ]


def coordinator_records(records: Iterable[Mapping[str, Any]], leaders: list[dict[str, Any]]) -> list[dict]:
    """The live coordinator records (``rows.TXN_STATE``, collected) of the ``__transaction_state`` partition
    ``leaders``."""
    wanted = {tuple(r[k] for k in (*_PART, "broker")) for r in leaders}
    return [dict(r) for r in records if tuple(r[k] for k in (*_PART, "broker")) in wanted]


def coordinators(
    leaders: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]]
) -> dict[str, dict[int, list[dict]]] | None:
    """``cluster -> {__transaction_state partition -> its records on the partition leader}`` from the
    collected rows of :func:`coordinator_leaders` and :func:`coordinator_records` (``coordinator_states``
    orders the records by offset); None when no ``__transaction_state`` leader is among the inputs."""
    out: dict[str, dict[int, list[dict]]] = {}
    for r in leaders:
        out.setdefault(r["cluster"], {}).setdefault(int(r["partition"]), [])
    if not out:
        return None
    for rec in records:
        out[rec["cluster"]][int(rec["partition"])].append(dict(rec))
    return out


def coordinator_partition_counts(metadata: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many partitions ``__transaction_state`` has per cluster, from the KRaft metadata rows (when
    known)."""
    seen: dict[str, set[int]] = {}
    for r in metadata:
        if r.get("topic") == TRANSACTION_STATE_TOPIC and r.get("partition") is not None:
            seen.setdefault(r["cluster"], set()).add(int(r["partition"]))
    return {cluster: len(parts) for cluster, parts in seen.items()}


def coordinator_view(
    by_partition: Mapping[int, list[dict]] | None, producer_id: int, partitions: int | None = None
) -> CoordinatorView:
    """The coordinator's latest state for ``producer_id`` over the ``__transaction_state`` partitions read
    (``auditor.kafka.coordinator``), or why it is not known."""
    if by_partition is None:
        return CoordinatorView("unavailable")
    from auditor.kafka.coordinator import by_producer, coordinator_states

    meta, partition = None, None
    for number, rows_ in sorted(by_partition.items()):
        meta, partition = by_producer(coordinator_states(rows_), producer_id), number
        if meta is not None:
            break
    if meta is None:
        read = sorted(by_partition)
        if partitions is not None and len(read) < partitions:
            return CoordinatorView(
                "incomplete",
                f"producer id {producer_id} is in none of the __transaction_state partitions read "
                f"({read} of {partitions})",
                producer_id=producer_id,
            )
        return CoordinatorView(
            "unknown",
            f"__transaction_state partitions {read} read: tombstoned or expired",
            producer_id=producer_id,
        )
    return CoordinatorView("found", metadata=meta, partition=partition)


# ------------------------------------------------------------------------------------------ rules


def open_transaction(row: Mapping[str, Any], coordinator: CoordinatorView, lso: int) -> OpenTransaction:
    """The rules' subject for one row of :func:`open_transaction_rows`."""
    leo = int(row["leo"])
    return OpenTransaction(
        **partition_of(row),
        leader=int(row["leader"]),
        log_dir=row.get("log_dir"),
        leader_source=row.get("leader_source") or "",
        producer_id=int(row["producer_id"]),
        producer_epoch=int(row["producer_epoch"]),
        first_offset=int(row["first_offset"]),
        last_offset=int(row["last_offset"]),
        records=int(row["records"]),
        batches=int(row["batches"]),
        hw=_leader_hw(row),
        leo=leo,
        lso=lso,
        markers=tuple(
            MarkerElsewhere(
                int(m["broker"]),
                int(m["base_offset"]),
                MARKER_NAMES.get(int(m["control_type"]), str(m["control_type"])),
                int(m["producer_epoch"]),
                int(m.get("markers") or 1),
            )
            for m in row.get("markers") or ()
        ),
        coordinator=coordinator,
    )


def _leader_hw(row: Mapping[str, Any]) -> int:
    hw = row.get("hw")
    return clamp_high_watermark(
        None if hw is None else int(hw), int(row.get("log_start") or 0), int(row["leo"])
    )


def subjects(
    found: Iterable[Mapping[str, Any]],
    coordinators: Mapping[str, Mapping[int, list[dict]]] | None,
    partition_counts: Mapping[str, int] | None = None,
) -> list[OpenTransaction]:
    """The open transactions with the partition's last stable offset (``transactions.last_stable_offset``
    over the leader's open transactions) and the coordinator's view of their producer ids."""
    found = list(found)
    per_part: dict[tuple, list[Batch]] = {}
    for r in found:
        per_part.setdefault((r["cluster"], r["topic"], r["partition"]), []).append(
            Batch(
                int(r["first_offset"]),
                int(r["last_offset"]),
                int(r["producer_id"]),
                int(r["producer_epoch"]),
                is_transactional=True,
            )
        )
    out = []
    for r in sorted(found, key=lambda r: (r["cluster"], r["topic"], r["partition"], r["first_offset"])):
        key = (r["cluster"], r["topic"], r["partition"])
        batches = sorted(per_part[key], key=lambda b: b.base_offset)
        lso = last_stable_offset(batches, _leader_hw(r))
        by_partition = None if coordinators is None else coordinators.get(r["cluster"])
        view = coordinator_view(
            by_partition, int(r["producer_id"]), (partition_counts or {}).get(r["cluster"])
        )
        out.append(open_transaction(r, view, lso))
    return out


def finding_rows(txns: Iterable[OpenTransaction]) -> list[dict]:
    """The ``txn`` rules (KA713/KA714) over the open transactions, as ``rows.FINDING`` dicts."""
    return [
        row
        for txn in txns
        for row in runner.rows(runner.run("txn", txn), txn.cluster, txn.topic, txn.partition)
    ]


def transaction_dict(txn: OpenTransaction, codes: Iterable[str]) -> dict[str, Any]:
    """One open transaction for ``AuditResult.transactions`` (reports, JSON)."""
    return {
        "cluster": txn.cluster,
        "topic": txn.topic,
        "partition": txn.partition,
        "leader": txn.leader,
        "leader_source": txn.leader_source,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch,
        "first_offset": txn.first_offset,
        "last_offset": txn.last_offset,
        "records": txn.records,
        "batches": txn.batches,
        "high_watermark": txn.hw,
        "log_end_offset": txn.leo,
        "last_stable_offset": txn.lso,
        "markers_elsewhere": [
            {"broker": m.broker, "offset": m.offset, "marker": m.marker, "producer_epoch": m.producer_epoch}
            for m in txn.markers
        ],
        "coordinator": txn.coordinator.as_dict(),
        "coordinator_view": txn.coordinator.describe(),
        "findings": sorted(set(codes)),
    }


def assess_transactions(
    found: list[dict[str, Any]],
    leaders: list[dict[str, Any]],
    records: list[dict[str, Any]],
    metadata: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict]]:
    """KA713/KA714 over the collected rows of :func:`open_transactions`, :func:`coordinator_leaders`,
    :func:`coordinator_records` and the KRaft metadata: the open transactions for
    ``AuditResult.transactions`` and the finding rows (``rows.FINDING`` dicts)."""
    if not found:
        return [], []
    by_cluster = coordinators(leaders, records)
    counts = coordinator_partition_counts(metadata) if by_cluster is not None else {}
    txns = subjects(found, by_cluster, counts)
    findings = finding_rows(txns)
    codes: dict[tuple, list[str]] = {}
    for f in findings:
        codes.setdefault((f["cluster"], f["topic"], f["partition"], f["offset_start"]), []).append(f["code"])
    out = [
        transaction_dict(t, codes.get((t.cluster, t.topic, t.partition, t.first_offset), [])) for t in txns
    ]
    return out, findings
