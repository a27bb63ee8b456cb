"""``kafka-auditor scan``: integrity of each broker's log directories, judged by Kafka's own recovery rules.

Registered in ``auditor.cli`` with ``app.command("scan")(scan_command)``. Exit codes: 0 clean, 1 when a
finding reaches ``--fail-on`` (default error), 2 for usage errors and input that could not be read.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"
    sarif = "sarif"
    junit = "junit"
    html = "html"
    prometheus = "prometheus"


class FailOn(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"
    critical = "critical"
    never = "never"


class ColorMode(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


# Report options shared by `scan` and `audit` (one definition, same help text).
FORMAT_OPTION = typer.Option(ReportFormat.text, "--format", "-f", help="Report format.")
OUTPUT_OPTION = typer.Option(
    None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."
)
FAIL_ON_OPTION = typer.Option(
    FailOn.error, "--fail-on", help="Exit 1 when a finding has at least this severity ('never': only 0/2)."
)
EXIT_ZERO_OPTION = typer.Option(
    False, "--exit-zero", help="Exit 0 even when findings reach --fail-on (2 still means bad input)."
)


def _fail(message: str) -> typer.Exit:
    from auditor.text import visible  # file names may hold control or bidi characters

    typer.echo(f"kafka-auditor: error: {visible(message)}", err=True)
    return typer.Exit(EXIT_ERROR)


def _list_rules(value: bool) -> None:
    if not value:
        return
    from auditor.rules.registry import markdown_table

    typer.echo(markdown_table(), nl=False)
    raise typer.Exit(EXIT_OK)


def _explain(value: str | None) -> None:
    if not value:
        return
    from auditor.rules.registry import get, markdown_details

    try:
        r = get(value)
    except KeyError:
        raise _fail(f"--explain: no rule {value!r}") from None
    typer.echo(markdown_details([r]))
    raise typer.Exit(EXIT_OK)


class _Progress:
    """A Rich progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.bar = None
        self.task = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("scanning"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(file=sys.stderr),
            transient=True,
        )

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
            self.task = self.bar.add_task("", total=None)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.bar is not None and self.task is not None:
            from rich.markup import escape

            from auditor.text import visible

            # a partition directory's name is evidence: no control characters, no Rich markup
            shown = escape(visible(label))
            self.bar.update(self.task, completed=done, total=total or None, description=shown)


def scan_command(
    logdirs: list[Path] | None = typer.Argument(
        None,
        metavar="LOGDIR...",
        help="Kafka log directories (log.dirs / metadata.log.dir), or directories holding several of them "
        "(e.g. broker-1/ broker-2/ controller-100/ copies). Read-only: nothing is written there.",
    ),
    fmt: ReportFormat = FORMAT_OPTION,
    output: Path | None = OUTPUT_OPTION,
    fail_on: FailOn = FAIL_ON_OPTION,
    exit_zero: bool = EXIT_ZERO_OPTION,
    select: list[str] | None = typer.Option(
        None,
        "--select",
        help="Run only these checks: codes or code prefixes (KA1, KA101), names or families "
        "(segment, index.stale-entry); comma-separated or repeated. Default: all stable checks.",
    ),
    ignore: list[str] | None = typer.Option(
        None, "--ignore", help="Skip these checks (same syntax as --select)."
    ),
    jobs: int = typer.Option(
        0, "--jobs", "-j", min=0, help="Worker processes (0: one per CPU, in-process for small scans)."
    ),
    progress: bool | None = typer.Option(
        None,
        "--progress/--no-progress",
        help="Progress bar on stderr (default: only when stderr is a terminal).",
    ),
    color: ColorMode = typer.Option(
        ColorMode.auto, "--color", help="Colour for text output (auto: terminal and no NO_COLOR)."
    ),
    show_partitions: bool = typer.Option(
        False, "--partitions", help="Text/HTML: add a table of every partition (LEO, HW, log start, epochs)."
    ),
    deep: bool = typer.Option(
        False, "--deep", help="Also decode every record of every data batch (check KA111; much slower)."
    ),
    list_rules: bool = typer.Option(
        False, "--list-rules", callback=_list_rules, is_eager=True, help="Print the table of checks and exit."
    ),
    explain: str | None = typer.Option(
        None,
        "--explain",
        callback=_explain,
        is_eager=True,
        metavar="CODE",
        help="Print one check's documentation.",
    ),
) -> None:
    """Check every file of Kafka log directories: segments, indexes, snapshots, checkpoints, partition offsets
    (HW, LEO, recovery point, log start), leftovers and unknown files.

    Exit status: 0 clean, 1 when a finding reaches --fail-on, 2 for usage errors or unreadable input.
    """
    from auditor.findings import Severity
    from auditor.layout.inventory import discover
    from auditor.report import Report
    from auditor.report.output import check_output_path, write_report
    from auditor.rules.registry import select_rules
    from auditor.scan import SCAN_SCOPES, scan

    if not logdirs:
        raise _fail("missing LOGDIR (a Kafka log directory to scan); see `kafka-auditor scan --help`")
    try:
        selection = select_rules(select, ignore, scopes=SCAN_SCOPES)
        if deep:  # KA111 decodes every record: opt-in (preview), unless --ignore'd
            selection = type(selection)(selection.codes | select_rules(["KA111"], ignore).codes)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    found, problems = discover(logdirs)
    if problems:
        for p in problems:
            typer.echo(f"kafka-auditor: error: {p}", err=True)
        raise typer.Exit(EXIT_ERROR)
    problem = check_output_path(output, [*found, *logdirs])
    if problem:
        raise _fail(problem)
    show_progress = progress if progress is not None else sys.stderr.isatty()
    with _Progress(show_progress) as bar:
        result = scan(found, selection=selection, jobs=jobs, progress=bar)
    fail_threshold = None if fail_on is FailOn.never else Severity.parse(fail_on.value)
    report = Report(
        command="scan",
        findings=result.findings,
        rules=selection.rules(),
        fail_on=fail_threshold,
        exit_zero=exit_zero,
        incomplete=result.incomplete,
        partitions=result.partitions,
        inputs=result.logdirs,
        stats=result.stats,
        errors=result.input_errors,
        partition_columns=PARTITION_COLUMNS if show_partitions else [],
    )
    colour = {ColorMode.auto: None, ColorMode.always: True, ColorMode.never: False}[color]
    try:
        write_report(report, fmt.value, output, color=colour)
    except OSError as exc:
        raise _fail(f"cannot write {output}: {exc.strerror or exc}") from None
    raise typer.Exit(report.exit_code)


PARTITION_COLUMNS = [
    ("broker", "broker"),
    ("directory", "partition"),
    ("segments", "segments"),
    ("logStartOffset", "log start"),
    ("logEndOffset", "LEO"),
    ("highWatermark", "HW"),
    ("recoveryPoint", "recovery pt"),
    ("latestEpoch", "epoch"),
    ("findings", "findings"),
]

SCAN_HELP = scan_command.__doc__

__all__ = ["SCAN_HELP", "scan_command", "PARTITION_COLUMNS"]
