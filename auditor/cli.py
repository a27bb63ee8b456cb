"""The ``kafka-auditor`` command line (Typer). Thin: parse options, call, render."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

import typer

from auditor import __version__

app = typer.Typer(
    name="kafka-auditor",
    help="Offline forensic and consistency auditor for Apache Kafka log directories.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class DumpFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class ValueFormat(str, Enum):
    auto = "auto"
    utf8 = "utf8"
    hex = "hex"


class Decoder(str, Enum):
    auto = "auto"
    metadata = "metadata"
    offsets = "offsets"
    none = "none"


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


def fail(message: str) -> typer.Exit:
    """Print one ``kafka-auditor: error:`` line (file names in it made visible) and return exit 2."""
    from auditor.text import visible

    typer.echo(f"kafka-auditor: error: {visible(message)}", err=True)
    return typer.Exit(EXIT_ERROR)


def internal_error_line(exc: BaseException) -> str:
    """The one line printed for an unexpected error: the input file when known, the error's type and first
    message line (:func:`auditor.errors.describe_error`), never a stack trace."""
    from auditor.errors import DEBUG_ENV, describe_error, error_file
    from auditor.text import visible

    described = describe_error(exc)
    path = error_file(exc)
    where = ""
    if path is not None and visible(path) not in described:
        where = f"{visible(path)}: "
    return f"kafka-auditor: internal error: {where}{described} (set {DEBUG_ENV}=1 for a traceback)"


@app.command()
def dump(
    files: list[Path] = typer.Argument(
        ...,
        help="Kafka files: .log, KRaft .checkpoint, .index, .timeindex, "
        ".txnindex, .snapshot, checkpoints, partition.metadata, meta.properties, "
        "quorum-state, .kafka_cleanshutdown.",
    ),
    deep: bool = typer.Option(False, "--deep", help="Decode the records inside each batch."),
    print_values: bool = typer.Option(
        False, "--print-values", help="Print keys and values (implies --deep)."
    ),
    value_format: ValueFormat = typer.Option(
        ValueFormat.auto,
        "--value-format",
        help="auto/utf8: UTF-8 text when it decodes, else hex; hex: always hex.",
    ),
    decoder: Decoder = typer.Option(
        Decoder.auto,
        "--decoder",
        help="Payload decoder: auto picks metadata for __cluster_metadata and KRaft "
        "snapshots, offsets for __consumer_offsets.",
    ),
    fmt: DumpFormat = typer.Option(DumpFormat.text, "--format", "-f", help="Output format."),
    max_bytes: int | None = typer.Option(
        None, "--max-bytes", min=0, help="Read at most this many bytes of each file."
    ),
) -> None:
    """Decode Kafka files, like kafka-dump-log.sh, read-only.

    Exit code 0 when every file decodes and validates, 2 when one does not (the valid prefix is
    printed first, then a marker saying where decoding stopped and why).
    """
    from auditor.dump import Dumper, DumpOptions
    from auditor.dump_render import RENDERERS, guarded

    options = DumpOptions(
        deep=deep or print_values,
        print_values=print_values,
        value_format=value_format.value,
        max_bytes=max_bytes,
        decoder=decoder.value,
    )
    dumper = Dumper(options)
    errors: list = []
    out = sys.stdout
    try:
        RENDERERS[fmt.value](guarded([str(f) for f in files], dumper.events, errors), out)
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_OK) from None
    from auditor.text import visible

    for err in errors:
        typer.echo(f"kafka-auditor: error: {visible(str(err))}", err=True)
    if errors:
        raise typer.Exit(EXIT_ERROR)


from auditor.cli_simulate import SIMULATE_HELP, simulate_command  # noqa: E402

app.command("simulate", help=SIMULATE_HELP)(simulate_command)

from auditor.cli_scan import scan_command  # noqa: E402

app.command("scan")(scan_command)

from auditor.cli_audit import audit_command, extract_command  # noqa: E402

app.command("audit")(audit_command)
app.command("extract")(extract_command)


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless KAFKA_AUDITOR_DEBUG is set."""
    try:
        app(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last-resort guard, the contract is "never a traceback"
        if os.environ.get("KAFKA_AUDITOR_DEBUG"):
            raise
        typer.echo(internal_error_line(exc), err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
