"""The ``kafka-auditor`` command line (Typer): one module per command, thin (parse options, call, render).

What the commands share: :mod:`~auditor.cli.messages` (the error line), :mod:`~auditor.cli.report_options`
(the report options, exit codes from :mod:`auditor.report.model`), :mod:`~auditor.cli.listing` and
:mod:`~auditor.cli.spark_options` (``--master``); the command modules import those and nothing else of this
package; this module builds the app from them. Heavy modules (pyspark, numpy) load only inside the commands.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

import typer

from auditor import __version__
from auditor.cli import audit, dump, extract, ingest, scan, simulate
from auditor.cli import groups as groups_cli
from auditor.cli import report as report_cli
from auditor.cli import reproduce as reproduce_cli
from auditor.cli import timeline as timeline_cli
from auditor.cli.messages import internal_error_line
from auditor.errors import DEBUG_ENV, on_interrupt
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
app.command("reproduce")(reproduce_cli.reproduce_command)


def _children() -> list[int]:
    """This process's children (Linux ``/proc``; none elsewhere)."""
    me, out = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _end_children(grace: float = 2.0) -> None:
    """Stop this process's children (the Spark JVM): SIGTERM, then SIGKILL after ``grace`` seconds. The JVM
    ends by itself when its standard input closes, but one interrupted while it starts can miss that and
    keep its py4j server alive."""
    import time

    children = _children()
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while children and time.monotonic() < deadline:
        children = [pid for pid in children if _alive(pid)]
        time.sleep(0.05)
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (a zombie child is reaped when this process exits)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT): 128 + 2, as shells report it."""


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless KAFKA_AUDITOR_DEBUG is set; a usage
    or option-value error is one line (exit 2) like the tool's own errors; Ctrl-C prints ``interrupted``
    and exits 130 (the output files are written whole or not at all, the JVM ends with its parent)."""
    try:
        from typer._click import exceptions as click  # the Click typer bundles (typer >= 0.20)
    except ImportError:  # an older typer on the system Click
        import click.exceptions as click
    stopped = (KeyboardInterrupt, getattr(click, "Abort", KeyboardInterrupt))
    no_args = getattr(click, "NoArgsIsHelpError", ())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_interrupt)

    try:
        code = app(standalone_mode=False)
    except SystemExit:
        raise
    except stopped:
        _interrupted_exit()
    except no_args as exc:  # the bare command prints its help (exit 2, as Click has it)
        typer.echo(exc.ctx.get_help() if exc.ctx is not None else str(exc))
        sys.exit(2)
    except click.ClickException as exc:
        where = (
            f"kafka-auditor {exc.ctx.info_name}" if getattr(exc, "ctx", None) is not None else "kafka-auditor"
        )
        if where == "kafka-auditor kafka-auditor":
            where = "kafka-auditor"
        hint = f" (see `{where} --help`)" if isinstance(exc, click.UsageError) else ""
        typer.echo(f"{where}: error: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - last-resort guard, the contract is "never a traceback"
        if os.environ.get(DEBUG_ENV):
            raise
        typer.echo(internal_error_line(exc), err=True)
        sys.exit(EXIT_ERROR)
    from auditor.errors import interrupted

    if interrupted():  # typer turned the KeyboardInterrupt into exit code 130
        _interrupted_exit()
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted_exit() -> None:
    """Ctrl-C: ``interrupted`` (once), the Spark JVM stopped, exit 130 without the exit handlers (py4j's and
    pyspark's would talk to a JVM that is going, and print its errors)."""
    from auditor.errors import interrupted

    if not interrupted():  # on_interrupt said it already
        typer.echo("kafka-auditor: interrupted", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    _end_children()
    os._exit(EXIT_INTERRUPTED)
