"""``kafka-auditor timeline``: the KRaft timeline of partitions (leader, ISR, ELR, replicas, leader and
partition epochs, leaderRecoveryState, broker registrations, configs), each epoch lined up with the
replicas' leader-epoch caches and batches, without Spark."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.cli.listing import (
    ListingFormat,
    format_option,
    output_option,
    paths_argument,
    read_listing,
    replica_warnings,
    write_listing,
)
from auditor.cli.messages import fail


def timeline_command(
    roots: list[Path] = paths_argument(
        "ROOT...", "Broker and controller log directories, or folders holding them (e.g. one per node)."
    ),
    topic: str | None = typer.Option(None, "--topic", "-t", help="Only this topic."),
    partition: int | None = typer.Option(None, "--partition", "-p", help="Only this partition number."),
    fmt: ListingFormat = format_option(),
    output: Path | None = output_option(),
) -> None:
    """Show the KRaft timeline of each partition: every change of leader, ISR, ELR, replicas, leader epoch,
    partition epoch and leaderRecoveryState with its metadata offset and batch time, replayed from the
    most complete __cluster_metadata replica among the inputs (history on disk, the newest snapshot, then
    the log; replicas that hold different records at the same offset are reported); broker registrations,
    fencing and controlled shutdowns; min.insync.replicas and unclean.leader.election.enable as they
    changed. Each leader epoch is lined up with every replica's leader-epoch cache and the offsets of its
    batches in that epoch.

    Exit status: 0 shown, 2 for usage errors or input that cannot be read.
    """
    if roots and partition is not None and partition < 0:
        raise fail(f"--partition must be 0 or more, not {partition}")
    timelines, problems = read_listing(
        roots,
        output,
        "give at least one log directory (ROOT...)",
        lambda dirs: collect(dirs, topic, partition),
    )
    from auditor.report import timeline as render

    def text(console) -> None:
        for cluster, t in timelines.items():
            console.print(render.timeline_renderable(t, cluster if len(timelines) > 1 else None))

    write_listing(
        fmt,
        output,
        json=lambda stream: render.write_json(timelines, stream, problems),
        jsonl=lambda stream: render.write_jsonl(timelines, stream),
        text=text,
    )


def collect(log_dirs: list[str], topic: str | None, partition: int | None):
    """The timeline of every cluster among ``log_dirs`` (cluster label -> ``Timeline``) and the problems met
    (one line each): the metadata rows of every node, then the leader-epoch caches and batch epoch ranges of
    the selected partitions' replicas."""
    from auditor.kafka.identity import identify_rows
    from auditor.kafka.planning import plan_tasks
    from auditor.kafka.timeline import build_timeline
    from auditor.kafka.topics import METADATA_TOPIC
    from auditor.layout.logdir import read_log_dir
    from auditor.observe.extract import extract_partition
    from auditor.observe.metadata import extract_metadata
    from parsers.errors import ParseError

    infos = [read_log_dir(path) for path in log_dirs]
    problems: list[str] = [f"{info.path}: {e}" for info in infos for e in info.errors]
    labels = [info.cluster_id or "" for info in infos]
    metadata: dict[str, list[dict]] = {}
    for info, label in zip(infos, labels, strict=True):
        metadata.setdefault(label, [])
        if not info.has_metadata or info.node is None:
            continue
        try:
            metadata[label] += extract_metadata(info.path, info.node, label).to_pylist()
        except (ParseError, OSError) as exc:
            problems.append(_problem(info.path, exc))
    caches: dict[str, dict] = {}
    ranges: dict[str, dict] = {}
    held: list[tuple[dict, list, list]] = []  # replica row, cache, epoch ranges of each replica read
    for task in plan_tasks(infos, labels, None):
        if task.topic == METADATA_TOPIC:
            continue
        if (topic is not None and task.topic != topic) or (
            partition is not None and task.partition != partition
        ):
            continue
        key = (task.topic, task.partition)
        path = str(Path(task.log_dir) / task.dir_name)
        cache: list[tuple[int, int, int]] = []
        per_epoch: dict[int, dict] = {}
        replica: dict | None = None
        try:
            for kind, table in extract_partition(task):
                if kind == "epoch":
                    cache += [(r["ordinal"], r["epoch"], r["start_offset"]) for r in table.to_pylist()]
                elif kind == "batch":
                    _add_batches(per_epoch, table)
                elif kind == "replica":
                    replica = table.to_pylist()[0]
                    problems += [w for w in replica_warnings(path, replica)]
        except (ParseError, OSError) as exc:
            problems.append(_problem(path, exc))
        if replica is not None:
            held.append((replica, cache, [per_epoch[e] for e in sorted(per_epoch)]))
    # only the replicas Kafka's identity compares line up with the metadata (auditor.kafka.identity)
    everything = [m for rows_ in metadata.values() for m in rows_]
    apart: dict[str, list[str]] = {}
    for (replica, cache, per), verdict in zip(
        held, (v for _r, v in identify_rows([h[0] for h in held], everything)), strict=True
    ):
        key = (replica["topic"], int(replica["partition"]))
        if not verdict.compared:
            apart.setdefault(replica["cluster"], []).append(
                f"broker {replica['broker']} {replica.get('dir_name')} ({replica['log_dir']}) left out: "
                f"{verdict.status}: {verdict.reason}"
            )
            continue
        caches.setdefault(replica["cluster"], {}).setdefault(key, {})[replica["broker"]] = [
            (e, s) for _o, e, s in sorted(cache)
        ]
        ranges.setdefault(replica["cluster"], {}).setdefault(key, {})[replica["broker"]] = per
    timelines = {}
    for label in sorted(set(metadata) | set(caches)):
        timelines[label] = build_timeline(
            metadata.get(label, []), caches.get(label), ranges.get(label), topic, partition
        )
        timelines[label].notes.extend(apart.get(label, []))
    return timelines, problems


def _add_batches(per_epoch: dict[int, dict], table) -> None:
    """Fold the live, valid batches of a ``rows.BATCH`` table into epoch ranges (first/last offset, records,
    bytes, batches, lowest/highest batch max timestamp)."""
    cols = table.select(
        [
            "live",
            "valid",
            "partition_leader_epoch",
            "base_offset",
            "last_offset",
            "records_count",
            "size",
            "max_timestamp",
        ]
    ).to_pydict()
    for live, valid, e, first, last, n, size, ts in zip(*cols.values(), strict=True):
        if not live or not valid or e is None:
            continue
        g = per_epoch.get(e)
        if g is None:
            per_epoch[e] = {
                "epoch": e,
                "first": first,
                "last": last,
                "records": n or 0,
                "bytes": size or 0,
                "batches": 1,
                "first_timestamp": ts,
                "last_timestamp": ts,
            }
            continue
        g["first"], g["last"] = min(g["first"], first), max(g["last"], last)
        g["records"] += n or 0
        g["bytes"] += size or 0
        g["batches"] += 1
        if ts is not None:
            g["first_timestamp"] = ts if g["first_timestamp"] is None else min(g["first_timestamp"], ts)
            g["last_timestamp"] = ts if g["last_timestamp"] is None else max(g["last_timestamp"], ts)


def _problem(path: str, exc: BaseException) -> str:
    """One line for an input that could not be read: a parse error names its file and byte offset."""
    from parsers.errors import ParseError

    if isinstance(exc, ParseError):
        return str(exc) if exc.path else f"{path}: {exc}"
    return f"{path}: {getattr(exc, 'strerror', None) or exc}"
