"""The command line's own lines on stderr: one ``kafka-auditor: error:`` line and exit 2 for bad input or
usage, warnings, the line of an unexpected error, and Markdown on stdout."""

import os
import sys

import typer

from auditor.report.model import EXIT_ERROR
from auditor.text import visible  # file names may hold control or bidi characters

PROG = "kafka-auditor"


def fail(message: str) -> typer.Exit:
    """Print one ``kafka-auditor: error:`` line (file names in it made visible) and return exit 2 (raise it
    to stop; call it alone to report one of several problems)."""
    typer.echo(f"{PROG}: error: {visible(message)}", err=True)
    return typer.Exit(EXIT_ERROR)


def warn(message: str) -> None:
    """Print one ``kafka-auditor: warning:`` line (file names in it made visible); the command goes on."""
    typer.echo(f"{PROG}: warning: {visible(message)}", err=True)


def fail_all(messages: list[str]) -> typer.Exit:
    """:func:`fail` for each of ``messages`` (one line each, in order); exit 2."""
    for message in messages:
        fail(message)
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
    return f"{PROG}: internal error: {where}{described} (set {DEBUG_ENV}=1 for a traceback)"


def print_markdown(text: str) -> None:
    """``text`` (Markdown) on stdout: rendered by Rich on a terminal, as it is when piped (scripts, the
    docs generator and ``grep`` read the Markdown)."""
    from auditor.report.progress import terminal

    if not terminal(sys.stdout):
        typer.echo(text, nl=not text.endswith("\n"))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=sys.stdout, no_color=bool(os.environ.get("NO_COLOR")), emoji=False)
    console.print(Markdown(text))
