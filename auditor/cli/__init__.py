"""The ``kafka-auditor`` command line (Typer): one module per command, thin (parse options, call, render).

:mod:`auditor.cli.common` holds what the commands share (the error line, the report options, exit codes
from :mod:`auditor.report.model`); the command modules import it and nothing else of this package; this
module builds the app from them. Heavy modules (pyspark, numpy) load only inside the commands.
"""

from __future__ import annotations

import os
import sys

import typer

from auditor import __version__
from auditor.cli import audit, dump, extract, ingest, scan, simulate
from auditor.cli import groups as groups_cli
from auditor.cli import report as report_cli
from auditor.cli import timeline as timeline_cli
from auditor.cli.common import internal_error_line
from auditor.errors import DEBUG_ENV
from auditor.report.model import EXIT_ERROR

app = typer.Typer(
    name="kafka-auditor",
    help="Offline forensic and consistency auditor for Apache Kafka log directories.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kafka-auditor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Offline forensic and consistency auditor for Apache Kafka log directories."""


app.command("dump")(dump.dump_command)
app.command("simulate")(simulate.simulate_command)
app.command("scan")(scan.scan_command)
app.command("audit")(audit.audit_command)
app.command("extract")(extract.extract_command)
app.command("groups")(groups_cli.groups_command)
app.command("timeline")(timeline_cli.timeline_command)
app.command("ingest")(ingest.ingest_command)
app.command("report")(report_cli.report_command)


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless KAFKA_AUDITOR_DEBUG is set."""
    try:
        app(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last-resort guard, the contract is "never a traceback"
        if os.environ.get(DEBUG_ENV):
            raise
        typer.echo(internal_error_line(exc), err=True)
        sys.exit(EXIT_ERROR)
