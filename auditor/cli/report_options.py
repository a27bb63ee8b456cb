"""The report options of every reporting command (``scan``, ``audit``, ``report``): the format and output,
the rule selection, the exit threshold, the baseline, what text shows; one :class:`ReportOptions` handed to
the command by :func:`report_options`.

Exit codes are those of :mod:`auditor.report.model` (0 clean, 1 findings at ``--fail-on``, 2 usage errors or
unreadable input).
"""

import functools
import inspect
import os
import sys
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import typer

from auditor.cli.messages import PROG, fail, print_markdown
from auditor.findings import Severity
from auditor.report import FORMATS
from auditor.report.model import EXIT_CLEAN, Report
from auditor.report.progress import configure_logging
from auditor.rules.registry import Selection, select_rules

ReportFormat = Enum("ReportFormat", {f: f for f in FORMATS}, type=str)
"""``--format``: every format of :func:`auditor.report.render`."""
FailOn = Enum("FailOn", {**{s.label: s.label for s in sorted(Severity)}, "never": "never"}, type=str)
"""``--fail-on``: a severity, or ``never`` (exit 0 or 2 only)."""
MinSeverity = Enum("MinSeverity", {s.label: s.label for s in sorted(Severity)}, type=str)
"""``--min-severity``: a severity."""
TEXT_DEFAULT_MIN = Severity.WARNING
"""What text output lists without ``--min-severity`` or ``-v``: info findings are only counted (by check in
the summary table), so a clean scan of a big log dir does not bury its warnings under info panels."""


class ColorMode(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


_COLOURS = {ColorMode.auto: None, ColorMode.always: True, ColorMode.never: False}


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
    baseline: Path | None = None
    known: frozenset[str] = frozenset()
    """The fingerprints of ``--baseline`` (read before any work)."""
    write_baseline: Path | None = None
    command_line: str = field(default="", compare=False)
    """The command as typed (:func:`command_line`), for the report's header."""
    min_severity: Severity | None = None
    """``--min-severity``: text and HTML list only findings at or above it (None: text lists warnings and
    up, :data:`TEXT_DEFAULT_MIN`, or everything with ``-v``; HTML lists everything)."""
    quiet: bool = False
    """``-q``: text shows the summary line, the findings at or above ``--fail-on`` and the verdict."""
    verbose: int = 0
    """``-v`` (repeatable): the engine's log and Spark's on stderr
    (:func:`auditor.report.progress.configure_logging`)."""
    progress: bool | None = None
    """``--progress/--no-progress``: the stages on stderr (None: on a terminal, without ``-v``)."""

    def stages(self):
        """The progress display of the command (:class:`auditor.report.progress.Stages`): on a terminal
        unless ``-v`` prints the log instead, or as ``--progress``/``--no-progress`` say."""
        return make_stages(self.progress, self.verbose)

    def displayed(self, report: Report) -> Report:
        """``report`` with what text or HTML list (``--min-severity``, ``-q``); other formats get it as is."""
        if self.fmt not in ("text", "html"):
            return report
        threshold = self.min_severity
        if threshold is None and self.fmt == "text" and not self.verbose:
            threshold = TEXT_DEFAULT_MIN
        from dataclasses import replace as replaced

        return replaced(report, min_severity=threshold, quiet=self.quiet and self.fmt == "text")

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
            command_line=self.command_line,
            **fields,
        )

    def check_outputs(self, protected: Iterable[str | os.PathLike]) -> str | None:
        """A usage-error message when ``--output`` or ``--write-baseline`` would land inside one of the
        ``protected`` directories (the evidence) or cannot be written; None when both are fine."""
        from auditor.report.output import check_output_path

        problem = check_output_path(self.output, protected)
        if problem is None and self.write_baseline is not None:
            problem = check_output_path(self.write_baseline, protected)
            if problem:
                problem = problem.replace("--output", "--write-baseline", 1).replace("the report", "it")
        return problem

    def finish(self, report: Report) -> Report:
        """Write ``--write-baseline`` (every finding of ``report``), then drop the findings of
        ``--baseline`` (counted in ``stats["suppressed"]``): the report every format renders."""
        from auditor.report.baseline import apply_baseline, write_baseline

        if self.write_baseline is not None:
            try:
                write_baseline(self.write_baseline, report.findings)
            except OSError as exc:
                problem = exc.strerror or exc
                raise fail(f"cannot write --write-baseline {self.write_baseline}: {problem}") from None
        if self.baseline is not None:
            report = apply_baseline(report, self.known)
        return report

    def emit(self, report: Report) -> None:
        """Write ``report`` as it is to stdout or ``--output`` (exit 2 with one line when that fails)."""
        from auditor.report.output import write_report

        try:
            write_report(self.displayed(report), self.fmt, self.output, color=self.color)
        except OSError as exc:
            raise fail(f"cannot write {self.output}: {exc.strerror or exc}") from None

    def write(self, report: Report, stages: Any = None) -> NoReturn:
        """Apply the baseline options (:meth:`finish`), write ``report`` to stdout or ``--output`` and exit
        with its exit code; ``stages``: the command's progress display, a stage for ``--output``, closed
        before anything reaches stdout."""
        report = self.finish(report)
        to_file = self.output is not None and str(self.output) != "-"
        if stages is not None:
            if to_file:
                with stages.stage(f"writing the {self.fmt} report"):
                    self.emit(report)
            stages.close()
        if not to_file or stages is None:
            self.emit(report)
        if to_file and sys.stderr.isatty():  # the report went to a file: its counts and verdict here
            from auditor.report.terminal import summary_tables, verdict

            counts = summary_tables(report)[0].plain
            typer.echo(f"{counts}\n{verdict(report).plain} (report: {self.output})", err=True)
        raise typer.Exit(report.exit_code)


def make_stages(progress: bool | None, verbose: int = 0):
    """A command's progress display on stderr (:class:`auditor.report.progress.Stages`): ``progress``
    True/False forces it on or off; None shows it on a terminal, unless ``-v`` prints log lines instead."""
    from auditor.report.progress import Stages

    return Stages(progress if progress is not None else (False if verbose else None))


def _list_rules(scopes: Callable[[], Iterable[str]]) -> Callable[[bool], None]:
    def callback(value: bool) -> None:
        if not value:
            return
        from auditor.rules.registry import all_rules, markdown_table

        allowed = set(scopes())
        print_markdown(markdown_table(r for r in all_rules() if r.scope in allowed))
        raise typer.Exit(EXIT_CLEAN)

    return callback


def _explain(value: str | None) -> None:
    if not value:
        return
    from auditor.rules.docs import page_uri
    from auditor.rules.registry import get, markdown_details

    try:
        found = get(value)
    except KeyError:
        raise fail(f"--explain: no rule {value!r}") from None
    print_markdown(markdown_details([found]) + f"\nDocumentation: {page_uri(found.code)}\n")
    raise typer.Exit(EXIT_CLEAN)


def verbose_option() -> Any:
    """``-v/--verbose`` (repeatable), shared by every command that runs an engine."""
    return typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        help="Log on stderr: -v the stages and Spark's warnings, -vv debug lines and Spark's INFO, -vvv "
        "Spark's DEBUG (instead of the progress display).",
    )


def progress_option() -> Any:
    """``--progress/--no-progress``, shared by every command that runs an engine."""
    return typer.Option(
        None,
        "--progress/--no-progress",
        help="Stages and progress on stderr (default: only when stderr is a terminal and without -v).",
    )


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
            "baseline",
            Path | None,
            typer.Option(
                None,
                "--baseline",
                metavar="FILE",
                help="Do not report the findings listed in FILE (written by --write-baseline); they are "
                "counted as suppressed.",
            ),
        ),
        (
            "write_baseline",
            Path | None,
            typer.Option(
                None,
                "--write-baseline",
                metavar="FILE",
                help="Write the fingerprints of this run's findings to FILE (atomically), for --baseline.",
            ),
        ),
        (
            "min_severity",
            MinSeverity | None,
            typer.Option(
                None,
                "--min-severity",
                metavar="LEVEL",
                help="Text/HTML: list only findings at or above LEVEL (the others are counted, and the exit "
                "code is unchanged). Default for text: warning (info findings counted by check), info "
                "with -v.",
            ),
        ),
        (
            "quiet",
            bool,
            typer.Option(
                False,
                "--quiet",
                "-q",
                help="Text: only the summary line, the findings at or above --fail-on and the verdict.",
            ),
        ),
        ("verbose", int, verbose_option()),
        ("progress", bool | None, progress_option()),
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


CONTEXT = "report_context"
"""The parameter through which typer hands the command's context to :func:`report_options`' wrapper."""


def _read_baseline(path: Path | None) -> frozenset[str]:
    """The fingerprints of ``--baseline`` (none given: empty); exit 2 with one line when it is unusable."""
    if path is None:
        return frozenset()
    from auditor.report.baseline import BaselineError, read_baseline

    try:
        return read_baseline(path)
    except BaselineError as exc:
        raise fail(f"--baseline {exc}") from None


def command_line(ctx: typer.Context | None) -> str:
    """The running command as typed, rebuilt from what the user set (options and arguments given on the
    command line or in the environment), quoted for a shell; ``kafka-auditor`` alone without a context."""
    import shlex

    if ctx is None:
        return PROG
    words = [PROG, ctx.info_name or ""]
    for param in ctx.command.params:
        name = param.name or ""
        source = ctx.get_parameter_source(name)
        if source is None or source.name not in ("COMMANDLINE", "ENVIRONMENT"):
            continue
        value = ctx.params.get(name)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if param.param_type_name == "argument":
            words += [str(getattr(v, "value", v)) for v in values]
            continue
        long = max(param.opts, key=len)
        if getattr(param, "count", False):  # -vv: the flag repeated
            words += [long] * int(value or 0)
            continue
        if getattr(param, "is_flag", False):
            secondary = param.secondary_opts
            words.append(long if value or not secondary else max(secondary, key=len))
            continue
        for v in values:
            words += [long, str(getattr(v, "value", v))]
    return shlex.join(w for w in words if w)


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

        context = inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            ctx = kwargs.pop(CONTEXT, None)
            given = {name: kwargs.pop(name) for name in names}
            fail_on = given["fail_on"].value
            kwargs["options"] = ReportOptions(
                baseline=given["baseline"],
                known=_read_baseline(given["baseline"]),
                write_baseline=given["write_baseline"],
                command_line=command_line(ctx),
                fmt=given["fmt"].value,
                output=given["output"],
                fail_on=None if fail_on == "never" else Severity.parse(fail_on),
                exit_zero=given["exit_zero"],
                select=given["select"],
                ignore=given["ignore"],
                color=_COLOURS[given["color"]],
                show_partitions=given["show_partitions"],
                scopes=tuple(scopes()),
                min_severity=Severity.parse(given["min_severity"].value) if given["min_severity"] else None,
                quiet=given["quiet"],
                verbose=given["verbose"],
                progress=given["progress"],
            )
            configure_logging(given["verbose"])
            command(**kwargs)

        parameters = [*own, *shared, context]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper

    return decorate
