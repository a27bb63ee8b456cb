"""``kafka-auditor scan``: the integrity of each broker's log directories, judged by Kafka's own recovery
rules."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.cli.listing import paths_argument
from auditor.cli.messages import fail, fail_all, warn
from auditor.cli.report_options import ReportOptions, report_options
from auditor.report.columns import SCAN_COLUMNS

LOGDIRS_HELP = (
    "Kafka log directories (log.dirs / metadata.log.dir), or directories holding several of them "
    "(e.g. broker-1/ broker-2/ controller-100/ copies). Read-only: nothing is written there."
)
SHARED_FIELDS = ("findings", "incomplete", "partitions", "stats")
"""What a :class:`auditor.scan.ScanResult` gives its report under the same name."""


def scan_scopes() -> tuple[str, ...]:
    """The rule scopes ``scan`` runs (:data:`auditor.scan.SCAN_SCOPES`; imported only when needed)."""
    from auditor.scan import SCAN_SCOPES

    return SCAN_SCOPES


@report_options(scan_scopes)
def scan_command(
    options: ReportOptions,
    logdirs: list[Path] | None = paths_argument("LOGDIR...", LOGDIRS_HELP),
    jobs: int = typer.Option(
        0, "--jobs", "-j", min=0, help="Worker processes (0: one per CPU, in-process for small scans)."
    ),
    deep: bool = typer.Option(
        False, "--deep", help="Also decode every record of every data batch (check KA111; much slower)."
    ),
) -> None:
    """Check every file of Kafka log directories: segments, indexes, snapshots, checkpoints, partition offsets
    (HW, LEO, recovery point, log start), leftovers and unknown files.

    Exit status: 0 clean, 1 when a finding reaches --fail-on, 2 for usage errors or unreadable input.
    """
    from auditor.layout.discover import discover
    from auditor.scan import scan

    if not logdirs:
        raise fail("missing LOGDIR (a Kafka log directory to scan); see `kafka-auditor scan --help`")
    # KA111 decodes every record: opt-in (preview) with --deep, unless --ignore'd
    selection = options.selection(also=["KA111"] if deep else [])
    discovery = discover(logdirs)
    found, problems = discovery.log_dirs, discovery.problems
    if problems:
        raise fail_all(problems)
    for line in discovery.skipped:
        warn(f"{line} (skipped: a log dir inside it is not scanned)")
    problem = options.check_outputs([*found, *logdirs])
    if problem:
        raise fail(problem)
    with options.stages() as stages:
        with stages.stage(f"scanning {len(found)} log dir(s)", unit="bytes") as stage:
            result = scan(found, selection=selection, jobs=jobs, progress=stage.update)
        found_report = options.report(
            "scan",
            selection,
            SCAN_COLUMNS,
            inputs=result.logdirs,
            errors=result.input_errors,
            **{name: getattr(result, name) for name in SHARED_FIELDS},
        )
        options.write(found_report, stages)
