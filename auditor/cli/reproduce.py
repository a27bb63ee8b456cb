"""``kafka-auditor reproduce``: the lost records ``audit --export-lost`` wrote, produced again to the same
topic-partitions of a live cluster through confluent-kafka's idempotent producer; a dry run unless
``--execute``."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.cli.messages import fail
from auditor.report.model import EXIT_CLEAN

EXIT_NOT_ALL = 1
"""``--execute``: some records could not be produced (the brokers refused them); a run again produces them."""


def reproduce_command(
    lost: Path | None = typer.Argument(
        None,
        metavar="LOST_RECORDS",
        help="lost-records.jsonl as `audit --export-lost DIR` wrote it (or DIR).",
        show_default=False,
    ),
    bootstrap: str = typer.Option(
        ...,
        "--bootstrap-server",
        "-b",
        metavar="HOST:PORT",
        help="The cluster to produce to (librdkafka's bootstrap.servers: HOST:PORT[,HOST:PORT...]).",
    ),
    execute: bool = typer.Option(
        False, "--execute", help="Produce the records (without it: a dry run that produces nothing)."
    ),
    include_superseded: bool = typer.Option(
        False,
        "--include-superseded",
        help="Also produce the records of a compacted topic whose key has a newer record on the current "
        "leader (left out by default: compaction would let them replace the newer value).",
    ),
    cluster: str | None = typer.Option(
        None,
        "--cluster",
        help="Only the records of this cluster (the file's `cluster` field), when the file holds several.",
    ),
    config: list[str] = typer.Option(
        [],
        "--config",
        "-X",
        metavar="KEY=VALUE",
        help="A librdkafka setting for the clients (security.protocol, sasl.*, ssl.*...); repeatable. "
        "Idempotence and acks are the command's own.",
    ),
    timeout: float = typer.Option(
        30.0,
        "--timeout",
        min=0.1,
        metavar="SECONDS",
        help="How long to wait for the cluster to answer (connecting, reading a partition).",
    ),
) -> None:
    """Produce the committed records an unclean election or a truncation lost (`audit --export-lost DIR`
    wrote them to DIR/lost-records.jsonl) again to the same topic and partition of a live cluster, with
    their key, value, headers and timestamp, in offset order, through confluent-kafka's idempotent producer
    (acks=all). Each record produced carries the header kafka-auditor-reproduced (the exported record's
    topic, partition, offset and hash): the command first reads the partitions and skips the records
    already there, so a second run, or one after a crash, produces no duplicate. In a compacted topic, a
    record whose key has a newer record on the current leader is left out and listed (--include-superseded
    produces it anyway). A dry run unless --execute: per topic-partition, the records, their offsets and
    bytes, and what the checks found.

    Exit status: 0 done or nothing to do, 1 when --execute could not produce every record, 2 for errors.
    """
    from auditor.reproduce.cluster import Cluster, client_settings, require_client
    from auditor.reproduce.flow import check
    from auditor.reproduce.flow import execute as execute_plan
    from auditor.reproduce.plan import build_plan
    from auditor.reproduce.records import ReproduceError, lost_records_file
    from auditor.reproduce.render import lines

    try:
        require_client()
        if lost is None:
            raise ReproduceError("missing LOST_RECORDS (the lost-records.jsonl of audit --export-lost)")
        settings = client_settings(config)
        path = lost_records_file(lost)
        plan = build_plan(path, cluster)
        plan.include_superseded = include_superseded
        if plan.partitions:
            with Cluster(bootstrap, settings, timeout, path) as client:
                check(plan, client)
                if execute:
                    execute_plan(plan, client)
    except ReproduceError as exc:
        raise fail(str(exc)) from None
    for line in lines(plan, bootstrap):
        typer.echo(line)
    failed = any(p.failed for p in plan.partitions.values())
    raise typer.Exit(EXIT_NOT_ALL if failed else EXIT_CLEAN)
