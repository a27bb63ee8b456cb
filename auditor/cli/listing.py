"""What the commands that read paths share: the paths argument, absolute paths for the executors, and the
log dirs of the listing commands (``groups``, ``timeline``) with what they say of a replica read in part."""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from auditor.cli.messages import fail, fail_all, warn


def paths_argument(metavar: str, help: str) -> Any:
    """The paths a reporting command reads: optional for typer, the command names what is missing."""
    return typer.Argument(None, metavar=metavar, help=help)


def format_option() -> Any:
    """``--format`` of a listing command."""
    return typer.Option(
        ListingFormat.text, "--format", "-f", help="text (default, on a terminal and piped), json or jsonl."
    )


def output_option() -> Any:
    """``--output`` of a listing command."""
    return typer.Option(None, "--output", "-o", help="Write here instead of stdout.")


def absolute_path(path: Path | None) -> Path | None:
    """``path`` made absolute against the driver's working directory (``-`` stays stdout)."""
    return path if path is None or str(path) == "-" else Path(os.path.abspath(path))


class ListingFormat(str, Enum):
    """Output of the listing commands (``groups``, ``timeline``): Rich text for people, JSON or JSON Lines."""

    text = "text"
    json = "json"
    jsonl = "jsonl"


def replica_warnings(path: str, row: dict[str, Any]) -> list[str]:
    """What a listing command (``groups``, ``timeline``) says about a replica it read only in part (its
    ``rows.REPLICA`` row): what could not be read, and a torn or corrupt tail that log recovery cuts (the
    records past it are not used, as Kafka would not load them)."""
    out = []
    if row.get("error"):
        out.append(f"{path}: {row['error']}")
    if row.get("unreadable"):
        hi = row.get("unreadable_to")
        span = f"{row.get('unreadable_from')}..{hi - 1 if hi is not None else 'the end'}"
        out.append(f"{path}: offsets {span} could not be read: {row['unreadable']}")
    if row.get("tail_state") in ("torn-tail", "corrupt"):
        cut = "log recovery truncates it" if row.get("recovered") else "its records are read up to there"
        out.append(
            f"{path}: {row['tail_state']} in segment {row.get('tail_segment')} at byte "
            f"{row.get('tail_position')} ({row.get('tail_message') or 'no detail'}); {cut}"
        )
    return out


def read_listing(
    roots: list[Path], output: Path | None, missing: str, collect: Callable[[list[str]], tuple]
) -> tuple:
    """What a listing command (``groups``, ``timeline``) reads: ``collect(log_dirs)`` of the log dirs under
    ``roots``, its last element the problems met, printed as warnings (one line each). One error line and
    exit 2 (``missing`` when no root is given) when a root is refused, an ``--output`` lies inside the
    evidence or an OS error stops the reading; skipped folders are warnings."""
    from auditor.layout.discover import discover
    from auditor.report.output import check_output_path

    if not roots:
        raise fail(missing)
    found = discover(roots)
    if found.problems:
        raise fail_all(found.problems)
    for line in found.skipped:
        warn(line)
    problem = check_output_path(output, found.log_dirs)
    if problem:
        raise fail(problem)
    try:
        result = collect(found.log_dirs)
    except OSError as exc:
        raise fail(f"{getattr(exc, 'filename', None) or ''}: {exc.strerror or exc}") from None
    for line in result[-1]:
        warn(line)
    return result


def write_listing(
    fmt: ListingFormat,
    output: Path | None,
    *,
    json: Callable[[Any], None],
    jsonl: Callable[[Any], None],
    text: Callable[[Any], None],
) -> None:
    """A listing in ``fmt`` to stdout or ``output`` (written whole, :func:`auditor.report.output.emit`):
    ``json(stream)``, ``jsonl(stream)`` or ``text(console)`` (a Rich console on the stream); exit 2 with one
    line when it cannot be written."""
    from auditor.report.output import emit

    def write(stream: Any, color: bool | None) -> None:
        if fmt is ListingFormat.json:
            json(stream)
        elif fmt is ListingFormat.jsonl:
            jsonl(stream)
        else:
            from auditor.report.terminal import make_console

            text(make_console(stream, color=color))

    try:
        emit(write, output)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
