"""The ``scan`` engine: inventory each log dir, check every partition, then the log dirs; never writes.

Flow: :func:`auditor.layout.discover.discover` the log dirs -> :func:`prepare_logdir` (inventory,
meta.properties, offset checkpoints, clean-shutdown marker) -> KRaft topic views from the scanned
``__cluster_metadata-0`` replicas -> one :class:`auditor.layout.tasks.PartitionTask` (the type ``audit``
ships to Spark) per partition directory, run by :func:`scan_partition` (walk each segment once with
``collect_segment``, run segment rules, release the per-segment arrays, then partition rules) -> log-dir
rules with the partition summaries -> sorted findings.

Parallelism: partitions run in a process pool (``concurrent.futures`` with the ``forkserver`` start method),
not on Spark executors. Scanning is embarrassingly parallel per partition with no shuffle or join; a pool
starts in well under a second, needs no JVM, and each worker streams one segment at a time, so memory stays
bounded by the walker's window plus one segment's index entries. Spark's start-up (seconds) and its Python
workers would cost more than most scans take; it is kept for the cross-replica ``audit``, whose joins need
it. Small scans (under :data:`INLINE_BYTES` or a single partition) run in-process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from auditor import __version__
from auditor.errors import describe_error, error_evidence
from auditor.findings import Finding, Location
from auditor.kafka.identity import checkpointed
from auditor.kafka.kraft import TopicView, topic_view
from auditor.layout.discover import discover
from auditor.layout.filetypes import METADATA_DIR
from auditor.layout.inventory import LogDirInventory, PartitionDir, inventory, inventory_partition
from auditor.layout.logdir import read_meta_properties
from auditor.layout.tasks import PartitionTask
from auditor.observe.context import LogDirContext, LogDirFacts, PartitionContext
from auditor.observe.files import ParsedFile, load_snapshot, parse_file
from auditor.observe.indexes import txn_index_corrupt
from auditor.observe.segments import SegmentFacts, collect_segment
from auditor.rules import runner
from auditor.rules.registry import REGISTRY, Rule, Selection, load_rules, select_rules
from parsers.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from parsers.dirfiles import (
    parse_clean_shutdown,
    parse_partition_dir_name,
    parse_partition_metadata,
    parse_quorum_state,
)
from parsers.errors import ParseError

INLINE_BYTES = 64 << 20
"""Below this many bytes of segments a scan runs in-process: a pool would cost more than it saves."""
SCAN_SCOPES = ("segment", "partition", "logdir", "engine")

log = logging.getLogger(__name__)
ProgressFn = Callable[[int, int, str], None]
"""progress(bytes done, bytes total, label of the partition just finished)."""


@dataclass
class PartitionResult:
    findings: list[Finding]
    summary: dict[str, Any]
    bytes: int
    seconds: float
    incomplete: bool = False
    peak_rss_kb: int = 0


@dataclass
class ScanResult:
    """What a scan found: findings (sorted), per-partition summaries, per-log-dir facts and run statistics.

    ``incomplete`` is True when a file could not be read or a check failed (KA001/KA002): the CLI exits 2.
    """

    findings: list[Finding]
    partitions: list[dict[str, Any]]
    logdirs: list[dict[str, Any]]
    stats: dict[str, Any]
    selection: Selection
    input_errors: list[str] = field(default_factory=list)

    unreadable: bool = False

    @property
    def incomplete(self) -> bool:
        """Input errors, unreadable files or a failed check (even when KA001/KA002 are not selected)."""
        return bool(self.input_errors) or self.unreadable


# ------------------------------------------------------------------------------------------ running rules


class _Emitter:
    """Collects findings of enabled rules at one location (the rules run through
    :func:`auditor.rules.runner.run`, which turns a crashing check into KA002)."""

    def __init__(self, codes: frozenset[str], where: Location) -> None:
        self.codes = codes
        self.where = where
        self.findings: list[Finding] = []
        self.incomplete = False

    def run(self, rules: Iterable[Rule], *args: Any, file: str | None = None) -> None:
        for r, violation in runner.run(rules, *args, file=file):
            if r.code == runner.CRASH_CODE:
                self.incomplete = True
                if r.code not in self.codes:
                    continue
            self.findings.append(r.finding(violation, self.where))

    def engine(self, code: str, message: str, **kw: Any) -> None:
        self.incomplete = True
        if code not in self.codes:
            return
        from auditor.rules.registry import Violation

        self.findings.append(REGISTRY[code].finding(Violation(message, **kw), self.where))

    def unreadable(self, path: str, error: str) -> None:
        self.engine("KA001", f"cannot read {path}: {error}", file=path, evidence={"error": error})


def _rules(codes: frozenset[str], scope: str) -> list[Rule]:
    return runner.rules_of(scope, codes)


_TASK_FACTS = (
    "broker",
    "clean_shutdown",
    "hw",
    "recovery_point",
    "cleaner_offset",
    "checkpoint_files",
    "expected_topic_id",
    "metadata_source",
    "metadata_complete",
    "kraft",
)
"""Fields of :class:`PartitionTask` that :class:`LogDirFacts` holds under the same name."""


def _logdir_facts(task: PartitionTask) -> LogDirFacts:
    """The log-dir level inputs of the partition rules, from the task."""
    facts = {name: getattr(task, name) for name in _TASK_FACTS}
    return LogDirFacts(path=task.log_dir, log_start=task.log_start_checkpoint, **facts)


def _partition_dir(task: PartitionTask) -> PartitionDir:
    """The task's partition directory, classified in the worker (the task itself is plain data)."""
    part = inventory_partition(task.path, task.dir_name)
    if isinstance(part, str):  # the name parsed when the task was made; only a changed tree gets here
        raise ParseError(part, path=task.path)
    return part


def build_partition_context(part: PartitionDir, facts: LogDirFacts, emit: _Emitter) -> PartitionContext:
    """Read the partition's small files (checkpoint, metadata, snapshots) with Kafka's readers."""
    ctx = PartitionContext(part, facts)
    ctx.leader_epochs = parse_file(part.leader_epoch_checkpoint, parse_leader_epoch_checkpoint)
    if ctx.leader_epochs.ok:
        try:
            ctx.normalized_epochs = ctx.leader_epochs.value.normalized()
        except ParseError as exc:
            ctx.epoch_error = exc
    ctx.partition_metadata = parse_file(part.partition_metadata, parse_partition_metadata)
    if part.is_metadata:
        ctx.quorum_state = parse_file(part.quorum_state, parse_quorum_state)
    for parsed in (ctx.leader_epochs, ctx.partition_metadata, ctx.quorum_state):
        if parsed.read_error:
            emit.unreadable(parsed.path or "", parsed.read_error)
    for info in part.producer_snapshots:
        try:
            ctx.producer_snapshots.append(load_snapshot(info))
        except OSError as exc:
            emit.unreadable(info.path, exc.strerror or str(exc))
    for path, error in part.unreadable:
        emit.unreadable(path, error)
    return ctx


def _walk(seg: SegmentFacts, emit: _Emitter, seg_rules: list[Rule], ctx: PartitionContext) -> None:
    if seg.read_error:
        emit.unreadable(seg.path, seg.read_error)
    for path, error in seg.index_errors:
        emit.unreadable(path, error)
    if seg.read_error is None:
        emit.run(seg_rules, seg, ctx, file=seg.path)
    seg.release()


def scan_partition(
    task: PartitionTask, codes: frozenset[str], part: PartitionDir | None = None
) -> PartitionResult:
    """Check one partition directory with the rules ``codes``: every segment once, in order, then the
    partition as a whole.

    ``part``: the partition directory as the log dir's inventory classified it (None: classify it here, for a
    task that travelled as plain data). Never raises: an unexpected error stops this partition only and
    becomes a KA002 finding."""
    load_rules()
    started = time.perf_counter()
    emit = _Emitter(
        codes, Location(broker=task.broker, log_dir=task.log_dir, topic=task.topic, partition=task.partition)
    )
    facts = _logdir_facts(task)
    try:
        part = part if part is not None else _partition_dir(task)
        summary = _scan_partition(part, facts, codes, emit)
    except Exception as exc:  # noqa: BLE001 - one broken partition must not stop the scan
        emit.engine(
            "KA002",
            f"scanning {task.dir_name} stopped: {describe_error(exc)}",
            file=task.path,
            evidence=error_evidence(exc),
        )
        summary = PartitionContext(part or _unread_partition(task), facts).summary()
    summary["findings"] = len(emit.findings)
    return PartitionResult(
        emit.findings, summary, task.size, time.perf_counter() - started, emit.incomplete, _peak_rss_kb()
    )


def _peak_rss_kb() -> int:
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except (ImportError, OSError):  # pragma: no cover - not on Linux/macOS
        return 0


def _unread_partition(task: PartitionTask) -> PartitionDir:
    """The partition directory of a task whose scan stopped, as far as its name tells."""
    _topic, _partition, kind, unique_id = parse_partition_dir_name(task.dir_name)
    kind = "metadata" if task.dir_name == METADATA_DIR else kind
    return PartitionDir(task.path, task.dir_name, task.topic, task.partition, kind, unique_id)


def _scan_partition(
    part: PartitionDir, facts: LogDirFacts, codes: frozenset[str], emit: _Emitter
) -> dict[str, Any]:
    ctx = build_partition_context(part, facts, emit)
    seg_rules = _rules(codes, "segment")
    segments = part.log_segments
    for i, files in enumerate(segments):
        assert files.log is not None
        seg = collect_segment(
            files.log.path,
            files.base_offset,
            files=files,
            next_base=segments[i + 1].base_offset if i + 1 < len(segments) else None,
            is_last=i == len(segments) - 1,
            deep="KA111" in codes,  # decode every record only when KA111 (scan --deep) is selected
        )
        _walk(seg, emit, seg_rules, ctx)
        ctx.segments.append(seg)
    for info in part.kraft_snapshots:
        seg = collect_segment(info.path, info.base_offset or 0, kind="kraft-snapshot")
        _walk(seg, emit, seg_rules, ctx)
        ctx.kraft_snapshots.append(seg)
    ctx.finalize()
    emit.run(_rules(codes, "partition"), ctx, file=part.path)
    return ctx.summary()


# ------------------------------------------------------------------------------------------ log dirs


def prepare_logdir(path: str) -> LogDirContext:
    """Inventory a log dir and read its root files with Kafka's readers."""
    inv: LogDirInventory = inventory(path)
    meta = _meta_file(inv)
    clean = parse_file(inv.clean_shutdown, parse_clean_shutdown)
    ckpts = {
        name: parse_file(info, parse_offset_checkpoint) for name, info in sorted(inv.checkpoints.items())
    }
    broker = meta.value.node_id if meta.ok else None
    return LogDirContext(inv, meta, clean, ckpts, broker=broker)


def _meta_file(inv: LogDirInventory) -> ParsedFile:
    """``meta.properties`` read by :func:`auditor.layout.logdir.read_meta_properties` (absent when the
    inventory has no such regular file: a special file is reported by KA5xx, never read)."""
    if inv.meta_properties is None:
        return ParsedFile(None)
    meta = read_meta_properties(inv.path)
    if isinstance(meta.error, OSError):
        return ParsedFile(meta.path, read_error=meta.reason)
    if meta.error is not None:
        return ParsedFile(meta.path, error=meta.error)
    return ParsedFile(meta.path, meta.value)


def _cluster_id(ld: LogDirContext) -> str | None:
    return ld.meta_value.cluster_id if ld.meta_value is not None else None


def _views(contexts: list[LogDirContext]) -> dict[str, TopicView]:
    views: dict[str, TopicView] = {}
    for ld in contexts:
        md = ld.inventory.metadata_partition
        if md is None:
            continue
        try:
            bases = [s.base_offset for s in md.log_segments if s.txnindex is not None]
            views[ld.path] = topic_view(md, txn_index_corrupt(md.path, bases) if bases else frozenset())
        except (OSError, ParseError):
            continue
    return views


def _view_for(
    ld: LogDirContext, contexts: list[LogDirContext], views: dict[str, TopicView]
) -> TopicView | None:
    """The newest topic view of the same cluster (the log dir's own when it is the newest)."""
    cid = _cluster_id(ld)
    candidates = [
        views[c.path] for c in contexts if c.path in views and (cid is None or _cluster_id(c) in (cid, None))
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda v: (v.complete, v.end_offset, v.source == ld.path))


def partition_task(ld: LogDirContext, part: PartitionDir, view: TopicView | None) -> PartitionTask:
    """The task of one partition directory: its checkpoint values, clean shutdown, expected topic ID."""

    def value(name: str) -> int | None:
        ckpt = ld.checkpoint(name)
        if ckpt is None or not checkpointed(part.kind, name):  # a -delete/-stray log has no entries
            return None
        return ckpt.as_dict().get((part.topic, part.partition))

    meta = ld.meta_value
    task = PartitionTask(
        cluster=_cluster_id(ld) or "",
        log_dir=ld.path,
        broker=ld.broker,
        dir_name=part.name,
        topic=part.topic,
        partition=part.partition,
        clean_shutdown=ld.inventory.clean_shutdown is not None,
        size=part.size_bytes,
        checkpoint_files={name: parsed.ok for name, parsed in ld.checkpoints.items()},
        kraft=meta is not None and meta.version == 1,
    )
    if not part.is_metadata:
        task.hw = value("replication-offset-checkpoint")
        task.recovery_point = value("recovery-point-offset-checkpoint")
        task.log_start_checkpoint = value("log-start-offset-checkpoint")
        task.cleaner_offset = value("cleaner-offset-checkpoint")
    if view is not None:
        task.metadata_source = view.source
        task.metadata_complete = view.complete
        task.expected_topic_id = view.topics.get(part.topic)
    return task


def _run_tasks(
    work: list[tuple[PartitionTask, PartitionDir]],
    codes: frozenset[str],
    jobs: int,
    progress: ProgressFn | None,
) -> tuple[list[PartitionResult], dict[str, Any]]:
    """Scan every (task, inventoried partition directory) in-process or in a process pool; the directory
    listing of the inventory is reused, never made again."""
    total = sum(t.size for t, _part in work)
    work = sorted(work, key=lambda w: -w[0].size)  # largest first: better balance across workers
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if jobs <= 0:
        workers = 1 if (total < INLINE_BYTES or len(work) < 2) else min(cpus, len(work))
    else:
        workers = min(jobs, max(1, len(work)))
    done = 0
    results: list[PartitionResult] = []
    if workers <= 1:
        for task, part in work:
            res = scan_partition(task, codes, part)
            results.append(res)
            done += res.bytes
            if progress:
                progress(done, total, task.dir_name)
        return results, {"workers": 1, "mode": "in-process"}
    mp = multiprocessing.get_context("forkserver")
    mp.set_forkserver_preload(["auditor.scan"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp) as pool:
        futures = {pool.submit(scan_partition, task, codes, part): task for task, part in work}
        for fut in as_completed(futures):
            res = fut.result()
            results.append(res)
            done += res.bytes
            if progress:
                progress(done, total, futures[fut].dir_name)
    return results, {"workers": workers, "mode": "process-pool (forkserver)"}


def scan(
    paths: Iterable[str | os.PathLike],
    *,
    selection: Selection | None = None,
    jobs: int = 0,
    progress: ProgressFn | None = None,
) -> ScanResult:
    """Scan log directories (read-only) and return every finding of the enabled rules."""
    started = time.time()
    t0 = time.perf_counter()
    load_rules()
    selection = selection or select_rules(scopes=SCAN_SCOPES)
    codes = frozenset(c for c in selection.codes if REGISTRY[c].scope in SCAN_SCOPES)
    discovery = discover(paths)
    logdirs, problems = discovery.log_dirs, discovery.problems
    contexts = [prepare_logdir(p) for p in logdirs]
    for ld in contexts:
        ld.siblings = contexts
    views = _views(contexts)
    work: list[tuple[PartitionTask, PartitionDir]] = []
    for ld in contexts:
        view = _view_for(ld, contexts, views)
        ld.topic_view = view
        work += [(partition_task(ld, part, view), part) for part in ld.inventory.partitions]
    log.info(
        "%d partition(s) of %d log dir(s), %.1f MiB, %d check(s)",
        len(work),
        len(contexts),
        sum(t.size for t, _part in work) / (1 << 20),
        len(codes),
    )
    results, run_info = _run_tasks(work, codes, jobs, progress)
    log.info("scanned with %s worker(s) (%s)", run_info["workers"], run_info["mode"])
    findings: list[Finding] = []
    unreadable = any(res.incomplete for res in results)
    by_dir: dict[str, list[dict[str, Any]]] = {ld.path: [] for ld in contexts}
    for res in results:
        findings.extend(res.findings)
        by_dir.setdefault(res.summary["logDir"], []).append(res.summary)
    logdir_rules = _rules(codes, "logdir")
    logdir_rows = []
    for ld in contexts:
        ld.partitions = sorted(
            by_dir.get(ld.path, []), key=lambda s: (s["topic"], s["partition"], s["directory"])
        )
        emit = _Emitter(codes, ld.location)
        for path, error in ld.inventory.unreadable:
            emit.unreadable(path, error)
        for parsed in [ld.meta, ld.clean_shutdown, *ld.checkpoints.values()]:
            if isinstance(parsed, ParsedFile) and parsed.read_error:
                emit.unreadable(parsed.path or "", parsed.read_error)
        emit.run(logdir_rules, ld, file=ld.path)
        findings.extend(emit.findings)
        unreadable = unreadable or emit.incomplete
        logdir_rows.append(_logdir_row(ld))
    findings.extend(duplicate_ids(contexts, codes))
    findings.sort(key=Finding.sort_key)
    partitions = sorted(
        (r.summary for r in results), key=lambda s: (s["logDir"], s["topic"], s["partition"], s["directory"])
    )
    stats = {
        # ISO-8601 UTC like the report's generatedAt (the data contract: timestamps in reports are strings)
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.perf_counter() - t0, 3),
        "logDirs": len(contexts),
        "partitions": len(work),
        "segments": sum(p["segments"] for p in partitions),
        "bytes": sum(p["bytes"] for p in partitions),
        "batches": sum(p["batches"] for p in partitions),
        "rules": len(codes),
        "peakRssMiB": round(max([_peak_rss_kb(), *(r.peak_rss_kb for r in results)]) / 1024, 1),
        "version": __version__,
        **run_info,
    }
    return ScanResult(findings, partitions, logdir_rows, stats, selection, problems, unreadable)


def duplicate_ids(contexts: list[LogDirContext], codes: frozenset[str]) -> list[Finding]:
    """KA003 (``scan.duplicate-broker-id``): one finding per pair of scanned log dirs of one cluster that are
    copies of one log dir (same directory.id, KIP-858) or of one broker (same node.id and the same live
    partitions, where no distinct directory.ids say they are JBOD dirs). Not an error: scanning before and
    after copies of a broker is legitimate; ``audit`` refuses them."""
    if "KA003" not in codes:
        return []
    from auditor.rules.registry import Violation

    dirs = sorted((ld for ld in contexts if ld.meta_value is not None), key=lambda ld: ld.path)
    out = []
    for i, a in enumerate(dirs):
        for b in dirs[i + 1 :]:
            why = _same_identity(a, b)
            if why is None:
                continue
            ma = a.meta_value
            same = (
                f"same directory.id {ma.directory_id} and node.id {ma.node_id}"
                if why == "one log dir"
                else f"same node.id {ma.node_id} and partitions, no directory.id to tell JBOD dirs apart"
            )
            violation = Violation(
                f"this log dir and {a.path} are copies of {why} ({same})",
                file=os.path.join(b.path, "meta.properties"),
                evidence={
                    "nodeId": ma.node_id,
                    "clusterId": ma.cluster_id,
                    "directoryId": b.meta_value.directory_id,
                    "logDirs": [a.path, b.path],
                },
                related=[{"logDir": a.path, "broker": ma.node_id}],
            )
            out.append(REGISTRY["KA003"].finding(violation, b.location))
    return out


def _same_identity(a: LogDirContext, b: LogDirContext) -> str | None:
    """What ``a`` and ``b`` are copies of ("one log dir", "one broker"), or None (distinct brokers or
    clusters, or JBOD dirs of one broker)."""
    ma, mb = a.meta_value, b.meta_value
    if ma.cluster_id != mb.cluster_id or ma.node_id is None:
        return None
    if ma.directory_id is not None and ma.directory_id == mb.directory_id:
        return "one log dir"
    if ma.node_id != mb.node_id or (ma.directory_id is not None and mb.directory_id is not None):
        return None  # distinct directory.ids: JBOD dirs (a partition in both is KA514)
    live_a = {(p.topic, p.partition) for p in a.inventory.partitions if p.kind == "live"}
    if any(p.kind == "live" and (p.topic, p.partition) in live_a for p in b.inventory.partitions):
        return "one broker"
    return None


def _logdir_row(ld: LogDirContext) -> dict[str, Any]:
    meta = ld.meta_value
    view = ld.topic_view
    return {
        "logDir": ld.path,
        "broker": ld.broker,
        "clusterId": meta.cluster_id if meta else None,
        "directoryId": meta.directory_id if meta else None,
        "metaVersion": meta.version if meta else None,
        "cleanShutdown": ld.inventory.clean_shutdown is not None,
        "brokerEpoch": ld.clean_shutdown_value.broker_epoch if ld.clean_shutdown_value else None,
        "partitions": len(ld.inventory.partitions),
        "metadataSource": view.source if view is not None else None,
        "metadataEndOffset": view.end_offset if view is not None else None,
        "files": len(ld.inventory.files()),
    }
