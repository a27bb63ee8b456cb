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


def listed_log_dirs(roots: list[Path], output: Path | None, missing: str) -> list:
    """The log dirs under ``roots`` for a listing command (``groups``, ``timeline``): one error line and
    exit 2 when none is given or one is refused, skipped folders as warnings, and an ``--output`` inside the
    evidence refused."""
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
    return found.log_dirs


def gathered(collect: Callable[[], tuple]) -> tuple:
    """What a listing command read, ``collect()``: its last element, the problems met, printed as warnings
    (one line each); an OS error reading the inputs is one error line and exit 2."""
    try:
        result = collect()
    except OSError as exc:
        raise fail(f"{getattr(exc, 'filename', None) or ''}: {exc.strerror or exc}") from None
    for line in result[-1]:
        warn(line)
    return result


def write_listing(write: Callable[[Any, bool | None], None], output: Path | None) -> None:
    """``write(stream, color)`` to stdout or ``output`` (written whole, :func:`auditor.report.output.emit`);
    exit 2 with one line when it cannot be written."""
    from auditor.report.output import emit

    try:
        emit(write, output)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
