"""The inputs of ``audit``, found and checked on the driver before Spark starts (so that a refusal costs
about a second): :func:`discover` finds log directories and extracts (directories of ``kafka-auditor
extract``, :mod:`auditor.observe.extract_files`) and makes every path absolute; :func:`check_inputs` refuses
inputs that name no broker, extracts of another layout or schema version, and inputs that are copies of one
log dir or one broker.

Imports neither pyarrow nor pyspark unless an extract is given (its footers and replica rows are read with
pyarrow).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from auditor.layout.discover import DISCOVERY_DEPTH, LOG_DIR
from auditor.layout.discover import discover as discover_paths
from auditor.layout.relocate import SegmentRoots


@dataclass
class Source:
    """One input of an audit: a broker (or controller) log directory or an extract."""

    kind: str  # "raw" (a log dir) | "parquet" (an extract directory, or a .parquet file found, to refuse)
    path: str
    label: str | None = None  # cluster label overriding meta.properties cluster.id


@dataclass
class Inputs:
    sources: list[Source] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Folders below a root that could not be listed (:attr:`auditor.layout.discover.Discovery.skipped`)."""

    @property
    def raw(self) -> list[Source]:
        return [s for s in self.sources if s.kind == "raw"]

    @property
    def parquet(self) -> list[Source]:
        return [s for s in self.sources if s.kind == "parquet"]


PARQUET_WEIGHT = 16
"""For the small-input decision, a byte of extract counts as this many bytes of segments: an extract holds a
batch's header in about 5 bytes (its flat ``batch.parquet``, offsets as deltas; 10 in the single-file layout
of schema version 2, when this was 8), against the ~200 bytes or more the segment gives the batch (records
are not copied)."""


def input_bytes(inputs: Inputs, parquet_weight: int = 1) -> int:
    """Bytes of the segments of the log dirs plus those of the extracts (times ``parquet_weight``):
    the size that chooses the audit's settings (``auditor.spark.tuning``; there with
    :data:`PARQUET_WEIGHT`)."""
    segments, parquet = input_sizes(inputs)
    return segments + parquet * parquet_weight


def input_sizes(inputs: Inputs) -> tuple[int, int]:
    """Bytes of the segments of the log dirs, and bytes of the extracts (their Parquet files)."""
    sizes = {"raw": 0, "parquet": 0}
    for source in inputs.sources:
        if source.kind == "parquet":
            paths = [Path(source.path)] if not os.path.isdir(source.path) else Path(source.path).glob("**/*")
        else:
            paths = Path(source.path).glob("*/*.log")
        for p in paths:
            with contextlib.suppress(OSError):
                if p.is_file():
                    sizes[source.kind] += p.stat().st_size
    return sizes["raw"], sizes["parquet"]


def discover(
    roots: list[str | os.PathLike], label: str | None = None, depth: int = DISCOVERY_DEPTH
) -> Inputs:
    """Log directories and extracts under ``roots`` (:func:`auditor.layout.discover.discover`, the walk
    ``scan`` uses too), as audit sources labelled ``label``; every path is absolute."""
    found = discover_paths(roots, depth=depth, extracts=True)
    sources = [Source("raw" if kind == LOG_DIR else "parquet", path, label) for kind, path in found.found]
    return Inputs(sources, found.problems, found.skipped)


# ------------------------------------------------------------------------------------------ pre-checks

ReplicaKey = tuple[str, int, str, int]
"""(cluster, broker, topic, partition): one replica of the audit."""


@dataclass
class Identity:
    """Who an input is: its cluster label, broker id(s), directory.id and the replicas it holds."""

    source: Source
    replicas: set[ReplicaKey] = field(default_factory=set)
    cluster: str | None = None  # log dirs only (an extract may hold several brokers)
    broker: int | None = None
    directory_id: str | None = None
    problem: str | None = None


def check_inputs(inputs: Inputs) -> list[str]:
    """Problems that make an audit of ``inputs`` meaningless, found on the driver before Spark starts
    (reads only ``meta.properties``, the names of the partition directories, and the Parquet footers and
    replica rows of the extracts):

    * a log dir whose ``meta.properties`` is missing, unreadable or names no ``node.id``/``broker.id``
      (its replicas could not be attributed to a broker);
    * an extract of an earlier layout (one Parquet file) or another schema version, one line naming the
      file and saying to extract again; a Parquet file that is not an extract of ``kafka-auditor extract``;
    * one log dir given twice: the same ``directory.id`` (KIP-858) in two inputs of one cluster;
    * one replica given twice: the same (cluster, broker, topic, partition) in two inputs, e.g. the
      before and after copies of one broker. The audit compares one copy per broker; merged copies read as
      false divergence and loss. JBOD log dirs of one broker (same node.id, distinct directory.id,
      distinct partitions) are one broker and are accepted.
    """
    identities = [_identity(s) for s in inputs.sources]
    problems = [i.problem for i in identities if i.problem]
    if problems:
        return problems
    copies = _duplicate_directories(identities)
    return [text for _pair, text in copies] + _duplicate_replicas(identities, {pair for pair, _ in copies})


def _identity(source: Source) -> Identity:
    try:
        return _parquet_identity(source) if source.kind == "parquet" else _raw_identity(source)
    except OSError as exc:
        return Identity(source, problem=f"{source.path}: cannot read: {exc.strerror or exc}")


def _raw_identity(source: Source) -> Identity:
    from auditor.layout.logdir import live_partition_dirs, read_meta_properties

    ident = Identity(source)
    meta = read_meta_properties(source.path)
    props = meta.value
    if props is None or props.node_id is None:
        why = meta.reason if props is None else "no node.id or broker.id"
        ident.problem = f"{meta.path}: {why}: cannot tell which broker this log dir belongs to"
        return ident
    cluster = source.label if source.label is not None else (props.cluster_id or "")
    ident.cluster, ident.broker, ident.directory_id = cluster, props.node_id, props.directory_id
    ident.replicas = {(cluster, props.node_id, t, p) for _name, t, p in live_partition_dirs(source.path)}
    return ident


_REPLICA_COLUMNS = ["cluster", "broker", "topic", "partition"]


def _parquet_identity(source: Source) -> Identity:
    """The replicas of an extract: its footers checked (``extract_files.extract_problem``), then four
    columns of its ``replica`` table read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from auditor.observe.extract_files import extract_problem, kind_path, part_files

    ident = Identity(source)
    ident.problem = extract_problem(source.path)
    if ident.problem is not None:
        return ident
    for file in part_files(kind_path(source.path, "replica")):
        try:
            table = pq.read_table(file, columns=_REPLICA_COLUMNS)
        except (pa.ArrowException, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            ident.problem = f"{file}: not a readable Parquet extract: {first}"
            return ident
        columns = [table.column(c).to_pylist() for c in _REPLICA_COLUMNS]
        for cluster, broker, topic, partition in zip(*columns, strict=True):
            if None not in (broker, topic, partition):
                label = source.label if source.label is not None else (cluster or "")
                ident.replicas.add((label, broker, topic, partition))
    return ident


def _duplicate_directories(identities: list[Identity]) -> list[tuple[tuple[str, str], str]]:
    """((first path, second path), message) for every log dir whose (cluster, directory.id) came before."""
    seen: dict[tuple[str, str], Identity] = {}
    out = []
    for ident in identities:
        if ident.directory_id is None or ident.cluster is None:
            continue
        first = seen.setdefault((ident.cluster, ident.directory_id), ident)
        if first is not ident:
            a, b = first.source.path, ident.source.path
            text = (
                f"{a} and {b} are copies of one log dir (node {ident.broker}, directory.id "
                f"{ident.directory_id}): {_ONE_COPY_PER_RUN}"
            )
            out.append(((a, b), text))
    return out


def _user_topics_first(key: ReplicaKey) -> tuple:
    cluster, broker, topic, partition = key
    return (cluster or "", broker if broker is not None else -1, topic.startswith("__"), topic, partition)


def _duplicate_replicas(identities: list[Identity], reported: set[tuple[str, str]]) -> list[str]:
    """One message per pair of inputs holding the same replicas (skipping pairs already ``reported``)."""
    owner: dict[ReplicaKey, Identity] = {}
    clashes: dict[tuple[str, str], list[ReplicaKey]] = {}
    for ident in identities:
        for key in sorted(ident.replicas, key=_user_topics_first):
            first = owner.setdefault(key, ident)
            if first is not ident and (first.source.path, ident.source.path) not in reported:
                clashes.setdefault((first.source.path, ident.source.path), []).append(key)
    problems = []
    for (a, b), keys in clashes.items():
        nodes = ", ".join(str(x) for x in sorted({k[1] for k in keys}))
        problems.append(
            f"{a} and {b} both hold replicas of node {nodes} ({len(keys)} partitions, e.g. "
            f"{keys[0][2]}-{keys[0][3]}): {_ONE_COPY_PER_RUN}"
        )
    return problems


_ONE_COPY_PER_RUN = (
    "an audit compares one copy of each broker; audit copies taken at different moments in separate runs, "
    "each with the other brokers of that moment"
)


__all__ = ["Identity", "Inputs", "Source", "check_inputs", "discover"]


def unreadable_segments(inputs: Inputs, roots: SegmentRoots | None = None) -> list[str]:
    """The log directories that the extracts among ``inputs`` record for their replicas and that are not
    readable here, where ``roots`` (``--segments-root``) puts them (``--export-lost`` decodes the lost
    records from them): one line each, naming the broker and the extract. Read from the extracts' replica
    tables before Spark starts (small)."""
    import pyarrow.parquet as pq

    from auditor.observe.extract_files import kind_path

    roots = roots or SegmentRoots()
    missing: dict[tuple[str, int | None], str] = {}
    seen: set[tuple[str, int | None]] = set()
    for source in inputs.parquet:
        try:
            table = pq.read_table(kind_path(source.path, "replica"), columns=["log_dir", "broker"])
        except (OSError, ValueError):
            continue  # the audit's own checks name an unreadable extract
        for row in table.to_pylist():
            log_dir = row.get("log_dir")
            key = (log_dir, row.get("broker"))
            if not log_dir or key in seen:
                continue
            seen.add(key)
            here = roots.locate(log_dir, row.get("broker"))
            if not (os.path.isdir(here) and os.access(here, os.R_OK | os.X_OK)):
                where = f", looked for at {here}" if here != log_dir else ""
                missing[key] = f"{log_dir} (broker {row.get('broker')}, recorded in {source.path}{where})"
    return sorted(missing.values())
