"""``kafka-auditor extract``: one log directory parsed into an extract (a directory of Parquet files, one per
table kind: :mod:`auditor.observe.extract_files`), without Spark, for ``audit`` to compare the extracts of
many machines."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.cli.messages import fail, warn


def extract_command(
    logdir: Path = typer.Argument(..., metavar="LOGDIR", help="One broker (or controller) log directory."),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="The extract directory to write (e.g. broker-1): new, empty, or an earlier extract (replaced).",
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", help="Cluster label stored in the rows (default: cluster.id of meta.properties)."
    ),
) -> None:
    """Parse a log directory into an extract: a directory holding one Parquet file per table (batch headers,
    leader-epoch caches, checkpoint offsets, KRaft partition records, record hashes of compacted partitions),
    written without Spark, so each broker can extract locally and `kafka-auditor audit` can compare the
    extracts of many machines. The directory appears whole or not at all.

    Exit status: 0 written, 2 for usage errors or a directory that is not a Kafka log directory.
    """
    from auditor.layout.filetypes import is_log_dir
    from auditor.observe.extract import extract_log_dir
    from auditor.observe.extract_files import output_problem
    from auditor.report.output import enclosing
    from parsers.errors import ParseError

    if not logdir.is_dir() or not is_log_dir(logdir):
        raise fail(f"{logdir} is not a Kafka log directory (no meta.properties)")
    if enclosing(out, [str(logdir)]):
        raise fail(f"--out {out} is inside the log directory; write it elsewhere")
    problem = output_problem(out)
    if problem is not None:
        raise fail(problem)
    try:
        counts = extract_log_dir(logdir, out, cluster=cluster)
    except ParseError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    errors = counts.pop("errors", [])
    for err in errors:
        warn(err)
    summary = ", ".join(f"{n} {kind} rows" for kind, n in counts.items())
    typer.echo(f"{out}: {summary}", err=True)
