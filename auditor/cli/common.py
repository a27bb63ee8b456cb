"""What the commands share: the one error line, the unexpected-error line, and the report options of every
reporting command (``scan``, ``audit``) with the rule selection and the writing of the report.

Exit codes are those of :mod:`auditor.report.model` (0 clean, 1 findings at ``--fail-on``, 2 usage errors or
unreadable input). Command modules import this module only; ``auditor.cli`` registers them.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import typer

from auditor.findings import Severity
from auditor.report import FORMATS
from auditor.report.model import EXIT_CLEAN, EXIT_ERROR, Report
from auditor.rules.registry import Selection, select_rules
from auditor.text import visible  # file names may hold control or bidi characters

PROG = "kafka-auditor"

ReportFormat = Enum("ReportFormat", {f: f for f in FORMATS}, type=str)
"""``--format``: every format of :func:`auditor.report.render`."""
FailOn = Enum("FailOn", {**{s.label: s.label for s in sorted(Severity)}, "never": "never"}, type=str)
"""``--fail-on``: a severity, or ``never`` (exit 0 or 2 only)."""


class ColorMode(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


_COLOURS = {ColorMode.auto: None, ColorMode.always: True, ColorMode.never: False}


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


@dataclass(frozen=True)
class ReportOptions:
    """The report options of one reporting command, as parsed (``--format`` ... ``--partitions``; the
    defaults are the command line's) with the rule scopes of the command (``scan``: :data:`SCAN_SCOPES
    <auditor.scan.SCAN_SCOPES>`; ``audit``: :data:`AUDIT_SCOPES <auditor.rules.registry.AUDIT_SCOPES>`)."""

    fmt: str = "text"
    output: Path | None = None
    fail_on: Severity | None = Severity.ERROR
    exit_zero: bool = False
    select: list[str] | None = None
    ignore: list[str] | None = None
    color: bool | None = None
    show_partitions: bool = False
    scopes: tuple[str, ...] = ()

    def selection(self, also: Iterable[str] = ()) -> Selection:
        """The enabled rules of the command's scopes (``--select``/``--ignore``), plus the rules ``also``
        names unless ignored; exit 2 on a selector that matches no rule."""
        try:
            codes = select_rules(self.select, self.ignore, scopes=self.scopes).codes
            if also:
                codes |= select_rules(list(also), self.ignore, scopes=self.scopes).codes
        except ValueError as exc:
            raise fail(str(exc)) from None
        return Selection(codes)

    def report(
        self, command: str, selection: Selection, columns: list[tuple[str, str]], **fields: Any
    ) -> Report:
        """The command's :class:`Report` of the selected rules, with these options' threshold and, when
        ``--partitions`` asked for it, the partition table of ``columns``; ``fields``: the results."""
        return Report(
            command=command,
            rules=selection.rules(),
            fail_on=self.fail_on,
            exit_zero=self.exit_zero,
            partition_columns=columns if self.show_partitions else [],
            **fields,
        )

    def write(self, report: Report) -> NoReturn:
        """Write ``report`` to stdout or ``--output`` and exit with its exit code."""
        from auditor.report.output import write_report

        try:
            write_report(report, self.fmt, self.output, color=self.color)
        except OSError as exc:
            raise fail(f"cannot write {self.output}: {exc.strerror or exc}") from None
        raise typer.Exit(report.exit_code)


def paths_argument(metavar: str, help: str) -> Any:
    """The paths a reporting command reads: optional for typer, the command names what is missing."""
    return typer.Argument(None, metavar=metavar, help=help)


def _list_rules(scopes: Callable[[], Iterable[str]]) -> Callable[[bool], None]:
    def callback(value: bool) -> None:
        if not value:
            return
        from auditor.rules.registry import all_rules, markdown_table

        allowed = set(scopes())
        typer.echo(markdown_table(r for r in all_rules() if r.scope in allowed), nl=False)
        raise typer.Exit(EXIT_CLEAN)

    return callback


def _explain(value: str | None) -> None:
    if not value:
        return
    from auditor.rules.registry import get, markdown_details

    try:
        found = get(value)
    except KeyError:
        raise fail(f"--explain: no rule {value!r}") from None
    typer.echo(markdown_details([found]))
    raise typer.Exit(EXIT_CLEAN)


def _report_parameters(scopes: Callable[[], Iterable[str]]) -> list[inspect.Parameter]:
    """The typer parameters of :func:`report_options`, in ``--help`` order."""
    options: list[tuple[str, Any, Any]] = [
        ("fmt", ReportFormat, typer.Option(ReportFormat.text, "--format", "-f", help="Report format.")),
        (
            "output",
            Path | None,
            typer.Option(
                None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."
            ),
        ),
        (
            "fail_on",
            FailOn,
            typer.Option(
                FailOn.error,
                "--fail-on",
                help="Exit 1 when a finding has at least this severity ('never': only 0/2).",
            ),
        ),
        (
            "exit_zero",
            bool,
            typer.Option(
                False,
                "--exit-zero",
                help="Exit 0 even when findings reach --fail-on (2 still means bad input).",
            ),
        ),
        (
            "select",
            list[str] | None,
            typer.Option(
                None,
                "--select",
                help="Run only these checks: codes or code prefixes (KA1, KA101, KA7), names or families "
                "(segment, index.stale-entry, replication); comma-separated or repeated. Default: every "
                "stable check of the command (--list-rules).",
            ),
        ),
        (
            "ignore",
            list[str] | None,
            typer.Option(None, "--ignore", help="Skip these checks (same syntax as --select)."),
        ),
        (
            "color",
            ColorMode,
            typer.Option(
                ColorMode.auto, "--color", help="Colour for text output (auto: terminal and no NO_COLOR)."
            ),
        ),
        (
            "show_partitions",
            bool,
            typer.Option(
                False,
                "--partitions",
                help="Text/HTML: add a table of every partition replica (LEO, HW, log start, epochs).",
            ),
        ),
        (
            "list_rules",
            bool,
            typer.Option(
                False,
                "--list-rules",
                callback=_list_rules(scopes),
                is_eager=True,
                help="Print the table of the command's checks and exit.",
            ),
        ),
        (
            "explain",
            str | None,
            typer.Option(
                None,
                "--explain",
                callback=_explain,
                is_eager=True,
                metavar="CODE",
                help="Print one check's documentation.",
            ),
        ),
    ]
    return [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for name, annotation, default in options
    ]


def report_options(scopes: Callable[[], Iterable[str]]):
    """Decorate a reporting command: add the shared report options to its typer signature and pass them as
    one :class:`ReportOptions` in its ``options`` parameter. ``scopes`` returns the rule scopes of the
    command (called lazily: ``--help`` stays fast)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name != "options"
        ]
        shared = _report_parameters(scopes)
        names = [p.name for p in shared]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            given = {name: kwargs.pop(name) for name in names}
            fail_on = given["fail_on"].value
            kwargs["options"] = ReportOptions(
                fmt=given["fmt"].value,
                output=given["output"],
                fail_on=None if fail_on == "never" else Severity.parse(fail_on),
                exit_zero=given["exit_zero"],
                select=given["select"],
                ignore=given["ignore"],
                color=_COLOURS[given["color"]],
                show_partitions=given["show_partitions"],
                scopes=tuple(scopes()),
            )
            command(**kwargs)

        parameters = [*own, *shared]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper

    return decorate


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
