"""Transactions open on the current leader (KA713 hanging, KA714 forgotten by the coordinator) on Spark.

Only the live transactional batch rows are read (once, persisted while the audit's results are collected),
and of those only the current leader's batches are classified
(:func:`auditor.spark.transactions.with_txn_state`: the one model of ``auditor.kafka.transactions``).
The leader is the one the per-partition rules chose (``is_leader`` of the audit's per-replica summary); its
high watermark is the checkpointed one as Kafka loads it (clamped into ``[log start, LEO]``). One row per
open transaction comes back to the driver (one action for them all), with the
COMMIT/ABORT markers of its producer that OTHER replicas hold after its first offset (the markers lost to
truncation); the coordinator's latest state for its producer id is read from the ``__transaction_state``
partition leaders among the inputs (``auditor.kafka.coordinator``). The rules of
:mod:`auditor.rules.replica.transactions` then decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from auditor.kafka.hw import clamp_high_watermark
from auditor.kafka.topics import METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.kafka.transactions import MARKER_NAMES, OPEN, Batch, last_stable_offset
from auditor.rules.registry import REGISTRY, load_rules
from auditor.rules.replica.transactions import CoordinatorView, MarkerElsewhere, OpenTransaction
from auditor.spark.partition_rules import finding_row
from auditor.spark.transactions import end_marker, with_txn_state
from auditor.spark.tuning import broadcast

HANGING_CODES = ("KA713", "KA714")
"""The rules evaluated over every open transaction (scope ``txn``)."""

_PART = ["cluster", "topic", "partition"]


_TXN_COLUMNS = [
    *_PART,
    "broker",
    "base_offset",
    "last_offset",
    "producer_id",
    "producer_epoch",
    "records_count",
    "is_transactional",
    "is_control",
    "control_type",
    "live",
]


def transactional_batches(batches: DataFrame) -> DataFrame:
    """The live transactional batch rows (data and markers): the only batches the state of a transactional
    batch depends on. The caller persists them while :func:`open_transactions` reads them twice."""
    return batches.where(F.col("live") & F.col("is_transactional")).select(*_TXN_COLUMNS)


def open_transactions(txn_rows: DataFrame, summary: DataFrame) -> DataFrame:
    """One row per transaction open on the current leader (``txn_rows``: :func:`transactional_batches`):
    partition, leader, producer id and epoch, first and last data offset, records, batches, the leader's HW,
    LEO and log start, and ``markers`` (the first COMMIT/ABORT marker of its producer after its first offset
    on each other replica, with their count; ordered by offset and broker). One plan, no action."""
    leaders = summary.where(F.col("is_leader") & (F.col("topic") != METADATA_TOPIC)).select(
        *_PART,
        F.col("broker").alias("leader"),
        "leader_source",
        "log_dir",
        "hw",
        "leo",
        "log_start",
    )
    leader_ids = leaders.select(*_PART, "leader")
    on_leader = txn_rows.join(leader_ids, _PART).where(F.col("broker") == F.col("leader"))
    opened = (
        with_txn_state(on_leader.drop("leader"))
        .where(F.col("txn_state") == OPEN)
        .groupBy(*_PART, "producer_id")
        .agg(
            F.min(F.struct("base_offset", "producer_epoch")).alias("first"),
            F.max("last_offset").alias("last_offset"),
            F.sum("records_count").alias("records"),
            F.count(F.lit(1)).alias("batches"),
        )
        .select(
            *_PART,
            "producer_id",
            F.col("first.base_offset").alias("first_offset"),
            F.col("first.producer_epoch").alias("producer_epoch"),
            "last_offset",
            "records",
            "batches",
        )
    )
    starts = opened.select(*_PART, "producer_id", F.col("first_offset").alias("m_first"))
    marker = F.struct("base_offset", "broker", "control_type", "producer_epoch", "markers")
    markers = (
        txn_rows.where(end_marker())
        .join(starts, [*_PART, "producer_id"])
        .where(F.col("base_offset") > F.col("m_first"))
        .join(leader_ids, _PART)
        .where(F.col("broker") != F.col("leader"))
        .groupBy(*_PART, "producer_id", "broker")
        .agg(
            F.min(F.struct("base_offset", "control_type", "producer_epoch")).alias("m"),
            F.count(F.lit(1)).alias("markers"),
        )
        .select(*_PART, "producer_id", "broker", "m.*", "markers")
        .groupBy(*_PART, "producer_id")
        .agg(F.sort_array(F.collect_list(marker)).alias("markers"))
    )
    return (
        opened.join(leaders, _PART)
        .join(markers, [*_PART, "producer_id"], "left")
        .withColumn(
            "markers", F.coalesce(F.col("markers"), F.array().cast(markers.schema["markers"].dataType))
        )
    )


# ------------------------------------------------------------------------------------------ coordinator


def coordinator_leaders(summary: DataFrame) -> DataFrame:
    """The leaders of the ``__transaction_state`` partitions among the inputs (cluster, topic, partition,
    broker)."""
    return summary.where(F.col("is_leader") & (F.col("topic") == TRANSACTION_STATE_TOPIC)).select(
        *_PART, "broker"
    )


def coordinator_records(tables, summary: DataFrame) -> DataFrame | None:
    """The live records (``rows.TXN_STATE``) of every ``__transaction_state`` partition leader; None when the
    inputs carry no such records."""
    if tables.txn_state is None:
        return None
    return tables.txn_state.where(F.col("live")).join(
        broadcast(coordinator_leaders(summary)), [*_PART, "broker"], "left_semi"
    )


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
    return CoordinatorView(
        "found",
        transactional_id=meta.transactional_id,
        producer_id=int(meta.producer_id),
        previous_producer_id=_int(meta.previous_producer_id),
        next_producer_id=_int(meta.next_producer_id),
        producer_epoch=int(meta.producer_epoch),
        state=str(meta.state),
        partitions=tuple((str(t), int(p)) for t, p in (meta.partitions or ())),
        last_update_timestamp=_int(meta.last_update_timestamp),
        broker=_int(meta.broker),
        partition=partition,
        offset=_int(meta.offset),
    )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


# ------------------------------------------------------------------------------------------ rules


def open_transaction(row: Mapping[str, Any], coordinator: CoordinatorView, lso: int) -> OpenTransaction:
    """The rules' subject for one row of :func:`open_transaction_rows`."""
    leo = int(row["leo"])
    return OpenTransaction(
        cluster=row["cluster"],
        topic=row["topic"],
        partition=int(row["partition"]),
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
    """KA713/KA714 over the open transactions, as ``rows.FINDING`` dicts."""
    load_rules()
    out = []
    for txn in txns:
        for code in HANGING_CODES:
            rule = REGISTRY[code]
            out += [finding_row(rule, v, txn.cluster, txn.topic, txn.partition) for v in rule.check(txn)]
    return out


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
