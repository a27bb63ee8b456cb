"""Parsing broker log directories into the Arrow tables of :mod:`auditor.observe.rows`, without Spark.

The unit of work is one partition directory (:class:`PartitionTask`), so the same function runs in a
single process (``kafka-auditor extract``) and on Spark executors (``auditor.spark.extract``). Batch
headers come from the columnar walk (``SegmentWalker.header_blocks``): no Python object per batch.
Records are decoded only for compacted partitions (offset + hash, for record-level comparison) and for
the KRaft metadata log.

The log end offset (``leo``) is the one Kafka loads, computed by ``auditor.kafka.recovery`` exactly as
``scan`` computes it: without ``.kafka_cleanshutdown`` (and always for ``__cluster_metadata``), recovery
re-reads every segment from the one containing the recovery point and cuts the log at the first invalid
batch (``auditor.kafka.batches``) or torn tail, deleting later segments; batches past that point have
``live = false``. With a clean shutdown nothing is re-validated. ``leo_on_disk`` is what the files hold: the
next offset after the last complete batch, valid or not (an empty last segment gives its base offset).

What cannot be read is never guessed: a segment that is not a regular file (opened only through
``parsers.files``: a FIFO or device is never opened), that raises an OS error or whose entries do not parse
is skipped, and a segment that is not the last and stops early leaves the rest of its offsets unread. The
replica row carries one span over these holes (``unreadable_from`` .. ``unreadable_to``, null when it runs to
the end of the log, whose LEO is then unknown: ``leo`` is the base offset of the unreadable last segment, a
lower bound) and why (``unreadable``); ``audit`` compares the replica outside that span only (KA691). Kafka
itself loads only regular files as segments (``LogLoader.loadSegmentFiles``: ``file.isFile``) and takes the
log directory offline on an I/O error (KIP-112), so the LEO of the later readable segments is the LEO Kafka
computes (the next offset after the last batch of the last segment), as ``scan`` reports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.kafka.recovery import LogRecovery, SegmentSummary, log_start_offset
from auditor.kafka.topics import METADATA_TOPIC, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.layout.inventory import segment_logs
from auditor.layout.logdir import LogDirInfo, read_log_dir, read_small
from auditor.layout.tasks import PartitionTask
from auditor.observe import rows
from auditor.observe.coordinator import transaction_state_rows
from auditor.observe.metadata import extract_metadata
from auditor.observe.offsets import offset_commit_rows
from auditor.observe.records import read_batch_records, record_hash
from parsers.checkpoints import parse_leader_epoch_checkpoint
from parsers.control import first_control_type
from parsers.dirfiles import (
    parse_partition_metadata,
)
from parsers.errors import ParseError
from parsers.files import regular_file_problem
from parsers.record_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)
from parsers.segment import HeaderBlock, SegmentWalker, WalkStop

# ------------------------------------------------------------------------------------------------ batches


def _concat(blocks: list[HeaderBlock]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not blocks:
        empty = np.zeros(0, dtype=np.int64)
        from parsers.segment import HEADER_DTYPE

        return empty, np.zeros(0, dtype=HEADER_DTYPE), np.zeros(0, dtype=np.uint32)
    if len(blocks) == 1:
        b = blocks[0]
        return b.positions, b.headers, b.computed_crc
    return (
        np.concatenate([b.positions for b in blocks]),
        np.concatenate([b.headers for b in blocks]),
        np.concatenate([b.computed_crc for b in blocks]),
    )


def _control_types(walker: SegmentWalker, positions, headers, valid) -> pa.Array:
    """``control_type`` of every batch: the first control record's type for valid magic-2 control batches
    (-1 when it cannot be read), null for data batches."""
    n = len(positions)
    control = ((headers["attributes"] & ATTR_CONTROL) != 0) & (headers["magic"] == 2)
    if not control.any():
        return pa.nulls(n, pa.int8())
    types = np.full(n, -1, dtype=np.int8)
    for i in np.flatnonzero(control & valid):
        raw = walker.read(int(positions[i]) + RECORD_BATCH_OVERHEAD, _CONTROL_PEEK)
        types[i] = first_control_type(raw)
    return pa.array(types, mask=~control)


_CONTROL_PEEK = 32
"""Bytes read after a control batch header: enough for the first record's varints and 4-byte key."""


def _batch_table(
    task: PartitionTask, segment: int, positions, headers, valid, live, control_types: pa.Array
) -> pa.Table:
    n = len(positions)
    base = headers["base_offset"].astype(np.int64)
    attributes = headers["attributes"].astype(np.int16)
    crc = headers["crc"].astype(np.int64)
    columns = {
        "cluster": rows.repeat_string(task.cluster, n),
        "topic": rows.repeat_string(task.topic, n),
        "partition": np.full(n, task.partition, dtype=np.int32),
        "broker": np.full(n, task.broker, dtype=np.int32),
        "log_dir": rows.repeat_string(task.log_dir, n),
        "segment": np.full(n, segment, dtype=np.int64),
        "position": positions.astype(np.int64),
        "base_offset": base,
        "last_offset": base + headers["last_offset_delta"].astype(np.int64),
        "partition_leader_epoch": headers["partition_leader_epoch"].astype(np.int32),
        "magic": headers["magic"].astype(np.int8),
        "crc": crc,
        "valid": valid,
        "live": live,
        "size": headers["batch_length"].astype(np.int32) + LOG_OVERHEAD,
        "attributes": attributes,
        "max_timestamp": headers["max_timestamp"].astype(np.int64),
        "producer_id": headers["producer_id"].astype(np.int64),
        "producer_epoch": headers["producer_epoch"].astype(np.int16),
        "base_sequence": headers["base_sequence"].astype(np.int32),
        "records_count": headers["records_count"].astype(np.int32),
        "is_control": (attributes & ATTR_CONTROL) != 0,
        "is_transactional": (attributes & ATTR_TRANSACTIONAL) != 0,
        "codec": (attributes & ATTR_COMPRESSION_MASK).astype(np.int8),
        "control_type": control_types,
    }
    return pa.Table.from_arrays(
        [pa.array(columns[f.name], type=f.type) for f in rows.BATCH], schema=rows.BATCH
    )


@dataclass
class _LogState:
    """Running totals while walking the segments of one replica."""

    recovery: LogRecovery | None = None
    batch_count: int = 0
    record_count: int = 0
    nbytes: int = 0
    first_offset: int | None = None
    max_epoch: int = -1
    invalid: int = 0
    tail_state: str = "end"
    tail_segment: int | None = None
    tail_position: int | None = None
    tail_bytes: int = 0
    tail_message: str | None = None
    # offsets whose batches could not be read (one span over every hole; ``hole_to`` None: to the end)
    hole_from: int | None = None
    hole_to: int | None = None
    hole_open: bool = False
    holes: list[str] = field(default_factory=list)
    # (segment, position, size) of every valid batch: where record rows are read from
    valid_batches: list[tuple[int, int, int]] = field(default_factory=list)

    def hole(self, lo: int, hi: int | None, why: str) -> None:
        """Record that offsets ``[lo, hi)`` (``hi`` None: up to the unknown end) could not be read."""
        if hi is not None and hi <= lo:
            return
        self.holes.append(why)
        self.hole_from = lo if self.hole_from is None else min(self.hole_from, lo)
        if hi is None:
            self.hole_open = True
            self.hole_to = None
        elif not self.hole_open:
            self.hole_to = hi if self.hole_to is None else max(self.hole_to, hi)


def _walk_partition(
    task: PartitionTask, segments: list[tuple[int, Path]], state: _LogState, keep_positions: bool
):
    """Yield batch tables segment by segment (``segments``: :func:`_segments` of the partition directory),
    feeding Kafka's recovery (``state.recovery``) and updating ``state`` (tail, totals, unreadable spans)."""
    recovery = state.recovery = LogRecovery(
        [base for base, _ in segments],
        task.clean_shutdown,
        task.recovery_point,
        task.topic == METADATA_TOPIC,
        task.log_start_checkpoint,
    )
    for i, (base, path) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        read = _read_segment(path)
        if isinstance(read, str):
            # the whole segment is unknown: [base, next segment) or, for the last one, the end of the log
            state.hole(base, next_base, f"{path.name}: {read}")
            recovery.add(SegmentSummary(path.name, base, 0, 0, None, None))
            continue
        walker, blocks = read
        positions, headers, computed = _concat(blocks)
        stop = walker.stop
        valid = valid_batches(headers, computed)
        prefix = ValidPrefix()
        first_bad = prefix.feed(positions, headers, valid)
        cut = recovery.add(
            SegmentSummary(
                path.name,
                base,
                walker.file_size,
                prefix.valid_end(stop.position if stop is not None else None),
                prefix.recovered_next_offset,
                prefix.next_offset_raw,
            )
        )
        # batches recovery truncates or deletes are evidence, not log
        live = positions < cut if cut is not None else np.ones(len(positions), dtype=bool)
        truncation = recovery.truncation
        if truncation is not None and truncation.base_offset == base:
            state.tail_segment = base
            if first_bad is not None:
                state.tail_state = "corrupt"
                state.tail_position = int(positions[first_bad])
                state.tail_bytes = walker.file_size - state.tail_position
                stored, crc = int(headers["crc"][first_bad]), int(computed[first_bad])
                state.tail_message = (
                    f"Record is corrupt (stored crc = {stored}, computed crc = {crc})"
                    if stored != crc
                    else f"Invalid magic {int(headers['magic'][first_bad])} (Kafka knows 0, 1 and 2)"
                )
            else:
                state.tail_state = stop.reason
                state.tail_position = stop.position
                state.tail_bytes = stop.trailing_bytes
                state.tail_message = stop.message
        elif cut is None and stop is not None and not stop.clean and state.tail_segment is None:
            state.tail_state = stop.reason
            state.tail_segment = base
            state.tail_position = stop.position
            state.tail_bytes = stop.trailing_bytes
            state.tail_message = stop.message
        state.invalid += int((~valid).sum())
        if len(positions):
            state.batch_count += len(positions)
            state.record_count += int(headers["records_count"].astype(np.int64).sum())
            state.nbytes += int((headers["batch_length"].astype(np.int64) + LOG_OVERHEAD).sum())
            if state.first_offset is None:
                state.first_offset = int(headers["base_offset"][0])
            state.max_epoch = max(state.max_epoch, int(headers["partition_leader_epoch"].max()))
            if keep_positions:
                sizes = headers["batch_length"].astype(np.int64) + LOG_OVERHEAD
                state.valid_batches.extend(
                    (base, int(p), int(s)) for p, s, v in zip(positions, sizes, valid, strict=True) if v
                )
        if next_base is not None and stop is not None and not stop.clean:
            # a segment that is not the last stops early: what lies between its valid prefix and the next
            # segment cannot be read (recovery would cut here; without recovery Kafka serves it as is)
            state.hole(
                prefix.next_offset_raw if prefix.next_offset_raw is not None else base,
                next_base,
                f"{path.name}: {stop.reason} at byte {stop.position}"
                + (f" ({stop.message})" if stop.message else ""),
            )
        if len(positions):
            controls = _control_types(walker, positions, headers, valid)
            yield _batch_table(task, base, positions, headers, valid, live, controls)


def _read_segment(path: Path) -> tuple[SegmentWalker, list[HeaderBlock]] | str:
    """The header blocks of one segment, or why it cannot be read (not a regular file, an OS error, an
    entry the walker cannot parse). Never opens a FIFO or device (``parsers.files``)."""
    problem = regular_file_problem(path)
    if problem is not None:
        return problem
    blocks: list[HeaderBlock] = []
    try:
        walker = SegmentWalker(path, stop_on_invalid=False)
        for block in walker.header_blocks():
            blocks.append(block)
    except OSError as exc:
        return exc.strerror or str(exc)
    except ParseError as exc:
        # an entry the walker cannot decode (e.g. a legacy wrapper that is not one): the walk ends there,
        # as in ``scan`` (auditor.observe.segments.collect_segment), and Kafka's reader rejects the entry
        done = [b for b in blocks if len(b)]
        pos = exc.offset
        if pos is None:
            last = done[-1] if done else None
            pos = 0
            if last is not None:
                pos = int(last.positions[-1]) + int(last.headers[-1]["batch_length"]) + LOG_OVERHEAD
        walker.stop = WalkStop("corrupt", pos, max(0, walker.file_size - pos), exc.message)
    return walker, blocks


# ------------------------------------------------------------------------------------------------ records


def _record_table(task: PartitionTask, part_dir: Path, valid_batches) -> tuple[pa.Table, list[str]]:
    offsets, bases, stamps, hashes, controls, sizes = [], [], [], [], [], []
    errors: list[str] = []
    for segment, position, size in valid_batches:
        path = part_dir / f"{segment:020d}.log"
        try:
            batch, records = read_batch_records(path, position, size)
            for rec in records:
                offsets.append(rec.offset)
                bases.append(batch.base_offset)
                stamps.append(rec.timestamp)
                hashes.append(record_hash(rec.key, rec.value, rec.headers))
                controls.append(batch.is_control)
                sizes.append(rec.size)
        except (ParseError, OSError) as exc:
            errors.append(f"{path.name}@{exc.offset if isinstance(exc, ParseError) else position}: {exc}")
            continue
    n = len(offsets)
    table = pa.Table.from_arrays(
        [
            pa.array([task.cluster] * n, pa.string()),
            pa.array([task.topic] * n, pa.string()),
            pa.array(np.full(n, task.partition, np.int32)),
            pa.array(np.full(n, task.broker, np.int32)),
            pa.array([task.log_dir] * n, pa.string()),
            pa.array(offsets, pa.int64()),
            pa.array(bases, pa.int64()),
            pa.array(stamps, pa.int64()),
            pa.array(hashes, pa.int64()),
            pa.array(controls, pa.bool_()),
            pa.array(sizes, pa.int32()),
        ],
        schema=rows.RECORD,
    )
    return table, errors


# ------------------------------------------------------------------------------------------------ epochs


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
    return pa.Table.from_pydict(
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
        schema=rows.EPOCH,
    )


# -------------------------------------------------------------------------------------------- one partition


def extract_partition(task: PartitionTask) -> Iterator[tuple[str, pa.Table]]:
    """``(kind, table)`` pieces for one partition directory: batches segment by segment, then the epoch
    entries, record rows (compacted partitions), metadata rows (``__cluster_metadata``) and the replica row.
    """
    part_dir = Path(task.log_dir) / task.dir_name
    errors: list[str] = []
    state = _LogState()
    segments: list[tuple[int, Path]] = []
    try:
        segments = segment_logs(part_dir)
        walk = _walk_partition(task, segments, state, keep_positions=task.compacted)
        for table in walk:
            yield "batch", table
    except OSError as exc:
        # the partition directory cannot be listed: nothing of the log is known
        state.hole(task.log_start_checkpoint or 0, None, f"{task.dir_name}: {exc.strerror or exc}")
    recovery = state.recovery
    leo = recovery.leo if recovery is not None else (task.log_start_checkpoint or 0)
    leo_on_disk = recovery.leo_on_disk if recovery is not None else leo
    entries, dropped, epoch_error = _epochs(task, part_dir)
    if epoch_error:
        errors.append(epoch_error)
    if entries:
        yield "epoch", _epoch_table(task, entries)
    has_records = False
    if task.compacted:
        table, rec_errors = _record_table(task, part_dir, state.valid_batches)
        errors.extend(rec_errors[:5])
        has_records = True
        if table.num_rows:
            yield "record", table
    if task.topic == OFFSETS_TOPIC:
        table = offset_commit_rows(
            task, part_dir, state.valid_batches, recovery.truncation if recovery is not None else None
        )
        if table.num_rows:
            yield "commit", table
    if task.topic == TRANSACTION_STATE_TOPIC:
        table = transaction_state_rows(
            task,
            part_dir,
            state.valid_batches,
            truncation=recovery.truncation if recovery is not None else None,
            errors=errors,
        )
        if table.num_rows:
            yield "txn_state", table
    if task.topic == METADATA_TOPIC:
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
        "recovered": recovery is not None and recovery.truncation is not None,
        "error": "; ".join(errors) if errors else None,
        "unreadable_from": state.hole_from,
        "unreadable_to": state.hole_to,
        "unreadable": "; ".join(state.holes) if state.holes else None,
    }
    yield "replica", pa.Table.from_pylist([replica], schema=rows.REPLICA)


def extract_partition_wrapped(task: PartitionTask) -> Iterator[pa.RecordBatch]:
    """:func:`extract_partition` in the one extract layout (``rows.EXTRACT``), as record batches."""
    for kind, table in extract_partition(task):
        yield from rows.wrap(kind, table).to_batches(max_chunksize=1 << 16)


# ------------------------------------------------------------------------------------------------ one log dir


def metadata_for(info: LogDirInfo, cluster: str) -> pa.Table | None:
    if not info.has_metadata or info.node is None:
        return None
    try:
        return extract_metadata(info.path, info.node, cluster)
    except (ParseError, OSError):
        return None


def extract_log_dir(path: str | os.PathLike, out: str | os.PathLike, cluster: str | None = None) -> dict:
    """Write one Parquet file (layout ``rows.EXTRACT``) for a broker log directory; return counts."""
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


class ExtractWriter:
    """Writes an extract Parquet file: every row group holds one kind only (so a reader filtering on
    ``kind`` skips the others by their statistics), batch rows in row groups of ``row_group`` rows, the
    small tables at the end."""

    def __init__(self, out: str | os.PathLike, row_group: int = 1 << 18) -> None:
        import pyarrow.parquet as pq

        self.metadata = {b"kafka-auditor.schema-version": str(rows.SCHEMA_VERSION).encode()}
        self.writer = pq.ParquetWriter(
            str(out), rows.EXTRACT.with_metadata(self.metadata), compression="zstd"
        )
        self.row_group = row_group
        self.pending: dict[str, list[pa.Table]] = {kind: [] for kind in rows.TABLES}
        self.sizes = dict.fromkeys(rows.TABLES, 0)

    def add(self, kind: str, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.pending[kind].append(table)
        self.sizes[kind] += table.num_rows
        if kind == "batch" and self.sizes[kind] >= self.row_group:
            self.flush(kind)

    def flush(self, kind: str) -> None:
        if not self.pending[kind]:
            return
        table = pa.concat_tables(self.pending[kind])
        wrapped = rows.wrap(kind, table).replace_schema_metadata(self.metadata)
        self.writer.write_table(wrapped, row_group_size=max(self.row_group, 1))
        self.pending[kind] = []
        self.sizes[kind] = 0

    def close(self) -> None:
        for kind in rows.TABLES:
            self.flush(kind)
        self.writer.close()

    def __enter__(self) -> ExtractWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_extract(path: str | os.PathLike) -> dict[str, pa.Table]:
    """The tables of an extract Parquet file (for tests and small tools; Spark reads it directly)."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    return {kind: rows.unwrap(table, kind) for kind in rows.TABLES}


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
