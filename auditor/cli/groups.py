"""``kafka-auditor groups``: every consumer group (classic and KIP-848 consumer protocol) with its state,
members and committed offsets, read from each broker's replicas of ``__consumer_offsets`` without Spark."""

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


def groups_command(
    roots: list[Path] = paths_argument(
        "ROOT...", "Broker log directories, or folders holding them (e.g. one per broker)."
    ),
    group: str | None = typer.Option(None, "--group", "-g", help="Only this consumer group."),
    fmt: ListingFormat = format_option(),
    output: Path | None = output_option(),
) -> None:
    """List every consumer group of the brokers' __consumer_offsets replicas: its offsets partition
    (abs(Java String.hashCode(group)) % the partition count the KRaft metadata gives, 50 by default) and
    coordinator; its protocol (classic, or consumer for KIP-848 groups), state and members as the
    coordinator (the offsets partition's leader) loads them; and per topic-partition the committed offset,
    leader epoch, metadata and commit time, which replicas hold that commit, whether the offsets
    partition's leader does, and the data partition's leader log end offset and lag when that partition is
    among the inputs. JSON: "groups" has one item per committed partition, "groupStates" one per group.

    Exit status: 0 listed, 2 for usage errors or input that cannot be read.
    """
    view, summaries, problems = read_listing(
        roots, output, "give at least one broker log directory (ROOT...)", lambda dirs: _collect(dirs, group)
    )
    from auditor.report import groups as render

    write_listing(
        fmt,
        output,
        json=lambda stream: render.write_json(view, stream, problems, summaries),
        jsonl=lambda stream: render.write_jsonl(view, stream),
        text=lambda console: render.render_groups(view, console, summaries),
    )


def _collect(log_dirs: list[str], group: str | None) -> tuple[list[dict], list[dict], list[str]]:
    """Extract the offsets partitions (and then the data partitions their commits name) of every log dir
    in one process; return the group view, the group summaries and the problems met (one line each)."""
    from auditor.kafka.planning import compacted_topics, plan_tasks
    from auditor.kafka.topics import OFFSETS_TOPIC
    from auditor.layout.logdir import read_log_dir
    from auditor.observe.extract import extract_partition, metadata_for
    from auditor.spark.groups import GroupInputs, group_summaries, group_view

    infos = [read_log_dir(path) for path in log_dirs]
    problems: list[str] = [f"{info.path}: {e}" for info in infos for e in info.errors]
    labels = [info.cluster_id or "" for info in infos]
    metadata: list[dict] = []
    compacted: dict[str, set[str]] = {}
    for info, label in zip(infos, labels, strict=True):
        table = metadata_for(info, label)
        if table is not None:
            metadata += table.to_pylist()
            compacted.setdefault(label, set()).update(compacted_topics(table))
    tasks = plan_tasks(infos, labels, compacted)
    inputs = GroupInputs(metadata=metadata)

    def run(task) -> None:
        epochs: list[dict] = []
        for kind, table in extract_partition(task):
            if kind == "commit":
                for row in table.to_pylist():
                    if row["error"]:
                        problems.append(row["error"])
                    else:
                        inputs.commits.append(row)
            elif kind == "epoch":
                epochs += table.to_pylist()
            elif kind == "replica":
                for row in table.to_pylist():
                    row["epochs"] = [{"epoch": e["epoch"], "start_offset": e["start_offset"]} for e in epochs]
                    problems.extend(replica_warnings(str(task.path), row))
                    inputs.replicas.append(row)

    for task in tasks:
        if task.topic == OFFSETS_TOPIC:
            run(task)
    _compared_only(inputs, metadata, problems)
    if group is not None:
        inputs.commits = [c for c in inputs.commits if c.get("group") == group]
    wanted = {(c["cluster"], c["commit_topic"], c["commit_partition"]) for c in inputs.commits}
    for task in tasks:
        if (task.cluster, task.topic, task.partition) in wanted and task.topic != OFFSETS_TOPIC:
            run(task)
    _compared_only(inputs, metadata, problems)
    return group_view(inputs, group), group_summaries(inputs, group), problems


def _compared_only(inputs, metadata: list[dict], problems: list[str]) -> None:
    """Keep only the replicas Kafka's identity compares (``auditor.kafka.identity``: the current topic ID on a
    broker of the replica set, live directories) and the commit rows read from them; say which were left
    out. Commits of a stale ``__consumer_offsets`` replica are never the coordinator's."""
    from auditor.kafka.identity import identify_rows

    apart = set()
    kept = []
    for row, verdict in identify_rows(inputs.replicas, metadata):
        if verdict.compared:
            kept.append(row)
            continue
        apart.add((row.get("cluster"), row.get("log_dir"), row["topic"], row["partition"]))
        if (row.get("dir_kind") or "live") == "live":
            problems.append(
                f"{row.get('log_dir')}/{row.get('dir_name')}: left out ({verdict.status}: {verdict.reason})"
            )
    inputs.replicas = kept
    inputs.commits = [
        c
        for c in inputs.commits
        if (c.get("cluster"), c.get("log_dir"), c["topic"], c["partition"]) not in apart
    ]
