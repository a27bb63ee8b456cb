"""``kafka-auditor ingest``: checkpoint captures (directory trees and archives) parsed on Spark into a
warehouse of Parquet tables (:mod:`auditor.spark.ingest`, layout in :mod:`auditor.layout.warehouse`).

Spark is started as ``audit`` starts it (``--master``, one-line errors); the sources are never written to.
"""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path

import typer

from auditor.cli.listing import paths_argument
from auditor.cli.messages import fail
from auditor.cli.report_options import make_stages, progress_option, verbose_option
from auditor.cli.spark_options import checked_master, master_option, run_on_spark
from auditor.report.progress import configure_logging

SOURCES_HELP = (
    "Checkpoint captures: directory trees or archives (.tar, .tar.gz/.tgz, .zip) holding one or many "
    "captures (one broker log dir's meta.properties, offset checkpoints, leader-epoch-checkpoint and "
    "partition.metadata files). Read-only; archives are read in memory, never extracted."
)
MAX_CLUSTER_LABEL = 255


class IngestFormat(str, Enum):
    text = "text"
    json = "json"


def _check_cluster(label: str | None) -> None:
    if label is None:
        return
    if not label or len(label) > MAX_CLUSTER_LABEL or not all(" " <= c <= "~" for c in label):
        raise fail(
            f"--cluster {label!r}: give 1 to {MAX_CLUSTER_LABEL} printable ASCII characters "
            "(it names the warehouse's cluster= directories)"
        )


def _check_paths(sources: list[Path], into: Path) -> None:
    """Exit 2 on a missing source, one that is neither a directory nor an archive, or a warehouse that
    overlaps a source (the auditor never writes into what it reads)."""
    from auditor.layout.archives import is_archive
    from auditor.report.output import enclosing

    for source in sources:
        if not source.exists():
            raise fail(f"source {source} does not exist")
        if not (source.is_dir() or (source.is_file() and is_archive(source.name))):
            raise fail(f"source {source} is neither a directory nor an archive (.tar, .tar.gz, .tgz, .zip)")
    inside = enclosing(into, [s for s in sources if s.is_dir()])
    if inside is not None:
        raise fail(f"--into {into} is inside the source {inside}; put the warehouse elsewhere")
    for source in sources:
        if enclosing(source, [into]) is not None:
            raise fail(f"source {source} is inside the warehouse {into}")


def ingest_command(
    sources: list[Path] | None = paths_argument("SOURCE...", SOURCES_HELP),
    into: Path | None = typer.Option(
        None, "--into", help="The warehouse directory (created when missing or empty)."
    ),
    master: str | None = master_option(),
    cluster: str | None = typer.Option(
        None, "--cluster", help="Cluster label of every capture (default: cluster.id of meta.properties)."
    ),
    fmt: IngestFormat = typer.Option(
        IngestFormat.text,
        "--format",
        "-f",
        help="text: the summary line on stderr only; json: also on stdout.",
    ),
    verbose: int = verbose_option(),
    progress: bool | None = progress_option(),
) -> None:
    """Ingest checkpoint captures into a warehouse of Parquet tables (captures, high_watermarks,
    recovery_points, log_start_offsets, cleaner_offsets, leader_epochs, brokers, partitions, problems),
    parsed on Spark. A capture already in the warehouse (same content) is skipped; a run is committed whole or
    not at all. Malformed files and refused archive entries become rows of the problems table, reported by
    `kafka-auditor report`.

    Exit status: 0 committed, 2 for usage errors or a failed Spark job.
    """
    if not sources:
        raise fail(
            "missing SOURCE (directories or archives of checkpoint captures); see `kafka-auditor ingest -h`"
        )
    if into is None:
        raise fail("missing --into WAREHOUSE (the directory the tables are written to)")
    configure_logging(verbose)
    _check_cluster(cluster)
    spark_master = checked_master(master)
    into = Path(os.path.abspath(into))
    _check_paths(sources, into)

    from auditor.layout.warehouse import Warehouse, WarehouseError
    from auditor.spark.ingest import IngestError, IngestResult, ingest

    try:
        warehouse = Warehouse.open(into, create=True)
    except WarehouseError as exc:
        raise fail(str(exc)) from None

    def job(spark) -> IngestResult:
        try:
            with stages.stage(f"ingesting {len(sources)} source(s)", unit="Spark tasks", poll=True):
                return ingest(spark, sources, warehouse, cluster=cluster)
        except (IngestError, WarehouseError) as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"{exc.filename or into}: {exc.strerror or exc}") from None

    with make_stages(progress, verbose) as stages:
        result = run_on_spark(spark_master, job, stages, verbose)
    typer.echo(f"kafka-auditor: {result.line()}", err=True)
    if fmt is IngestFormat.json:
        typer.echo(json.dumps(result.to_json(), indent=1, sort_keys=True))
