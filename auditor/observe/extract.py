"""Parsing broker log directories into the Arrow tables of :mod:`auditor.observe.rows`, without Spark.

The unit of work is one partition directory (:class:`PartitionTask`), so the same function runs in a
single process (``kafka-auditor extract``) and on Spark executors (``auditor.spark.extract``). The segments
are walked by :mod:`auditor.observe.segment_walk`; records are decoded (:mod:`auditor.observe.record_rows`)
only for compacted partitions, the KRaft metadata log and the coordinators' topics.

The log end offset (``leo``) is the one Kafka loads, computed by ``auditor.kafka.recovery`` exactly as
``scan`` computes it: without ``.kafka_cleanshutdown`` (and always for ``__cluster_metadata``), recovery
re-reads every segment from the one containing the recovery point and cuts the log at the first invalid
batch (``auditor.kafka.batches``) or torn tail, deleting later segments; batches past that point have
``live = false``. Before that, clean shutdown or not, Kafka recovers at load each segment whose offset index
is missing or whose ``.txnindex`` fails its sanity check: cut at its first invalid batch, the later segments
kept. ``leo_on_disk`` is what the files
hold: the next offset after the last complete batch, valid or not (an empty last segment gives its base
offset). The replica row carries the span of offsets that could not be read (``unreadable_from`` ..
``unreadable_to``, null when it runs to the end of the log, whose LEO is then unknown: ``leo`` is the base
offset of the unreadable last segment, a lower bound) and why (``unreadable``); ``audit`` compares the
replica outside that span only (KA691). ``scan`` validates every byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.kafka.recovery import log_start_offset
from auditor.kafka.topics import METADATA_TOPIC, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.layout.inventory import list_segments
from auditor.layout.logdir import LogDirInfo, read_log_dir, read_small
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.arrow_build import small_table
from auditor.observe.coordinator import transaction_state_rows
from auditor.observe.extract_files import ExtractWriter
from auditor.observe.metadata import extract_metadata
from auditor.observe.offsets import offset_commit_rows
from auditor.observe.segment_walk import LogState, walk_partition
from parsers.checkpoints import parse_leader_epoch_checkpoint
from parsers.dirfiles import (
    parse_partition_metadata,
)
from parsers.errors import ParseError


def _epochs(task: PartitionTask, part_dir: Path) -> tuple[list[tuple[int, int]], int, str | None]:
    file = part_dir / "leader-epoch-checkpoint"
    if not file.is_file():
        return [], 0, None
    try:
        normalized = parse_leader_epoch_checkpoint(read_small(file), str(file)).normalized()
    except (ParseError, OSError) as exc:
        return [], 0, f"leader-epoch-checkpoint: {exc}"
    return normalized.entries, len(normalized.dropped), None


def _epoch_table(task: PartitionTask, entries: list[tuple[int, int]]) -> pa.Table:
    n = len(entries)
    return small_table(
        {
            "cluster": [task.cluster] * n,
            "topic": [task.topic] * n,
            "partition": [task.partition] * n,
            "broker": [task.broker] * n,
            "log_dir": [task.log_dir] * n,
            "epoch": [e for e, _ in entries],
            "start_offset": [s for _, s in entries],
            "ordinal": list(range(n)),
        },
        rows.EPOCH,
    )


def extract_partition(task: PartitionTask) -> Iterator[tuple[str, pa.Table]]:
    """``(kind, table)`` pieces for one partition directory: batches segment by segment, then the epoch
    entries, record rows (compacted partitions), metadata rows (``__cluster_metadata``) and the replica row.
    """
    part_dir = Path(task.log_dir) / task.dir_name
    errors: list[str] = []
    state = LogState()
    segments: list[tuple[int, Path]] = []
    live = task.dir_kind == "live"
    try:
        listing = list_segments(part_dir)
        segments = listing.logs
        for piece in walk_partition(task, listing, state):
            if live:  # a -future, -delete or -stray log: only its replica row (never compared)
                yield piece
    except OSError as exc:
        # the partition directory cannot be listed: nothing of the log is known
        state.hole(task.log_start_checkpoint or 0, None, f"{task.dir_name}: {exc.strerror or exc}")
    recovery = state.recovery
    leo = recovery.leo if recovery is not None else (task.log_start_checkpoint or 0)
    leo_on_disk = recovery.leo_on_disk if recovery is not None else leo
    entries, dropped, epoch_error = _epochs(task, part_dir)
    if epoch_error:
        errors.append(epoch_error)
    if entries and live:
        yield "epoch", _epoch_table(task, entries)
    has_records = task.compacted and live
    errors.extend(state.record_errors[:5])
    if task.topic == OFFSETS_TOPIC and live:
        table = offset_commit_rows(task, part_dir, state.valid_batches, recovery)
        if table.num_rows:
            yield "commit", table
    if task.topic == TRANSACTION_STATE_TOPIC and live:
        table = transaction_state_rows(
            task,
            part_dir,
            state.valid_batches,
            recovery=recovery,
            errors=errors,
        )
        if table.num_rows:
            yield "txn_state", table
    if task.topic == METADATA_TOPIC and live:
        try:
            yield "metadata", extract_metadata(task.log_dir, task.broker, task.cluster)
        except (ParseError, OSError) as exc:
            errors.append(f"metadata: {exc}")
    topic_id = None
    pm = part_dir / "partition.metadata"
    if pm.is_file():
        try:
            topic_id = parse_partition_metadata(read_small(pm), str(pm)).topic_id
        except (ParseError, OSError) as exc:
            errors.append(f"partition.metadata: {exc}")
    first_base = segments[0][0] if segments else None
    replica = {
        "cluster": task.cluster,
        "topic": task.topic,
        "partition": task.partition,
        "broker": task.broker,
        "log_dir": task.log_dir,
        "topic_id": topic_id,
        "hw": task.hw,
        "recovery_point": task.recovery_point,
        "log_start_checkpoint": task.log_start_checkpoint,
        "log_start": log_start_offset(task.log_start_checkpoint, first_base),
        "cleaner_offset": task.cleaner_offset,
        "leo": leo,
        "leo_on_disk": leo_on_disk,
        "clean_shutdown": task.clean_shutdown,
        "compacted": task.compacted,
        "has_records": has_records,
        "segment_count": len(segments),
        "first_segment": first_base,
        "last_segment": segments[-1][0] if segments else None,
        "batch_count": state.batch_count,
        "record_count": state.record_count,
        "bytes": state.nbytes,
        "first_offset": state.first_offset,
        "max_batch_epoch": state.max_epoch,
        "latest_epoch": entries[-1][0] if entries else None,
        "epoch_entries": len(entries),
        "epoch_dropped": dropped,
        "invalid_batches": state.invalid,
        "tail_state": state.tail_state,
        "tail_segment": state.tail_segment,
        "tail_position": state.tail_position,
        "tail_bytes": state.tail_bytes,
        "tail_message": state.tail_message,
        "recovered": recovery is not None and recovery.cuts,
        "error": "; ".join(errors) if errors else None,
        "unreadable_from": state.hole_from,
        "unreadable_to": state.hole_to,
        "unreadable": "; ".join(state.holes) if state.holes else None,
        "dir_name": task.dir_name,
        "dir_kind": task.dir_kind,
        "directory_id": task.directory_id,
    }
    yield "replica", small_table({name: [value] for name, value in replica.items()}, rows.REPLICA)


def metadata_for(info: LogDirInfo, cluster: str) -> pa.Table | None:
    if not info.has_metadata or info.node is None:
        return None
    try:
        return extract_metadata(info.path, info.node, cluster)
    except (ParseError, OSError):
        return None


def extract_log_dir(path: str | os.PathLike, out: str | os.PathLike, cluster: str | None = None) -> dict:
    """Write the extract directory ``out`` (:mod:`auditor.observe.extract_files`: one Parquet file per
    table kind) of a broker log directory, never partially; return the rows per kind and the ``errors``."""
    info = read_log_dir(path)
    if info.node is None:
        why = info.errors[0] if info.errors else "no node.id or broker.id in meta.properties"
        raise ParseError(f"not a broker log directory: {why}", path=str(path))
    label = cluster if cluster is not None else (info.cluster_id or "")
    meta = metadata_for(info, label)
    compacted = {label: compacted_topics(meta)} if meta is not None else None
    tasks = plan_tasks([info], [label], compacted)
    counts = dict.fromkeys(rows.TABLES, 0)
    errors = list(info.errors)
    with ExtractWriter(out) as writer:
        for task in tasks:
            for kind, table in extract_partition(task):
                counts[kind] += table.num_rows
                writer.add(kind, table)
                if kind == "replica":
                    errors += [
                        f"{task.dir_name}: incomplete from offset {r['unreadable_from']}: {r['unreadable']}"
                        for r in table.select(["unreadable_from", "unreadable"]).to_pylist()
                        if r["unreadable_from"] is not None
                    ]
    counts["errors"] = errors
    return counts


def extract_tables(path: str | os.PathLike, cluster: str | None = None) -> dict[str, pa.Table]:
    """All tables of one log directory in memory (no Parquet, no Spark)."""
    info = read_log_dir(path)
    label = cluster if cluster is not None else (info.cluster_id or "")
    meta = metadata_for(info, label)
    compacted = {label: compacted_topics(meta)} if meta is not None else None
    parts: dict[str, list[pa.Table]] = {kind: [] for kind in rows.TABLES}
    for task in plan_tasks([info], [label], compacted):
        for kind, table in extract_partition(task):
            parts[kind].append(table)
    return {
        kind: pa.concat_tables(tables) if tables else rows.TABLES[kind].empty_table()
        for kind, tables in parts.items()
    }
