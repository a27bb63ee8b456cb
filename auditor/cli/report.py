"""``kafka-auditor report``: the history checks (KA8xx) over an ingest warehouse, and what changed since the
last report.

The checks read the whole history (a high watermark going backwards needs the capture before it);
``--since`` only narrows which findings are reported, by their capture time. Open conditions (a broker still
missing, lag still going on: evidence ``open``) keep their Prometheus series whatever ``--since`` and the
earlier reports (:func:`open_conditions`). A duration (``30m``, ``24h``,
``7d``) is counted back from the newest capture in the warehouse, not from the clock, so a report over last
month's captures reads the same whenever it runs; an ISO-8601 date or time (UTC unless it says otherwise) is
used as it is.

By default a finding is reported once: the warehouse's state ``reports`` keeps the fingerprint of every
finding a report has shown and the time of each report, updated under the warehouse lock only after the
report was written; ``--all`` shows every finding again. Same report options, baseline, rule selection
(over the ``history``, ``fleet`` and ``ingest`` scopes) and exit codes as ``scan`` and ``audit``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from pathlib import Path
from typing import Any

import typer

from auditor.cli.listing import absolute_path
from auditor.cli.messages import fail
from auditor.cli.report_options import ReportOptions, report_options
from auditor.cli.spark_options import checked_master, master_option, run_on_spark
from auditor.report.model import Report
from auditor.rules.history.model import HistorySettings
from auditor.rules.registry import EVERY_COMMAND, HISTORY_SCOPES

STATE = "reports"
"""The warehouse state holding what the reports showed."""
REPORTS_KEPT = 1000
"""Reports remembered in the state (the newest; every reported fingerprint is kept)."""
_DURATION = re.compile(r"\s*(\d+)\s*(s|m|h|d|w)\s*")
_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_DEFAULTS = HistorySettings()


def _duration_option(name: str, default_ms: int, help: str) -> Any:
    """An option taking a duration (:func:`parse_duration`), its default ``default_ms`` shown in hours."""
    return typer.Option(f"{default_ms // 3_600_000}h", name, metavar="DURATION", help=help)


def parse_duration(text: str, option: str) -> int:
    """``30m``, ``24h``, ``7d`` (also ``s`` and ``w``) in ms; exit 2 with one line otherwise."""
    m = _DURATION.fullmatch(text)
    if not m:
        raise fail(f"{option} {text!r}: expected a duration such as 30m, 24h or 7d")
    return int(m.group(1)) * _UNITS[m.group(2)]


def parse_since(text: str | None) -> tuple[str, int] | None:
    """``--since``: ("duration", ms) or ("time", ms since the epoch); None when not given."""
    if text is None:
        return None
    if _DURATION.fullmatch(text):
        return "duration", parse_duration(text, "--since")
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise fail(
            f"--since {text!r}: expected a duration (30m, 24h, 7d) or an ISO-8601 date or time "
            "(2024-05-01, 2024-05-01T02:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return "time", int(when.timestamp() * 1000)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _time_ms(value: str | None) -> int | None:
    if not value:
        return None
    return int(dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def in_window(
    findings: list, since: tuple[str, int] | None, newest_ms: int | None
) -> tuple[list, int | None]:
    """The findings captured at or after the ``--since`` cutoff (a finding without a capture time is
    kept), and the cutoff in ms (None: no window)."""
    if since is None:
        return findings, None
    kind, value = since
    if kind == "duration":
        if newest_ms is None:
            return findings, None
        cutoff = newest_ms - value
    else:
        cutoff = value
    kept = [f for f in findings if f.time is None or (_time_ms(f.time) or 0) >= cutoff]
    return kept, cutoff


def open_conditions(findings: list, baseline: frozenset[str]) -> list:
    """The findings of the whole warehouse whose condition still holds at the newest capture (evidence
    ``open``), less those of the baseline: what the textfile keeps counting whatever ``--since`` and the
    earlier reports leave out."""
    return [f for f in findings if f.evidence.get("open") is True and f.fingerprint() not in baseline]


def _reports_state(warehouse) -> dict[str, Any]:
    """State ``reports``: {"fingerprints": {fingerprint: ms first reported}, "reports": [...]}; exit 2 with
    one line when it is not that."""
    from auditor.layout.warehouse import WarehouseError

    try:
        state = warehouse.read_state(STATE)
    except WarehouseError as exc:
        raise fail(str(exc)) from None
    prints = state.get("fingerprints", {})
    runs = state.get("reports", [])
    if not isinstance(prints, dict) or not isinstance(runs, list):
        path = warehouse.path / "state" / f"{STATE}.json"
        raise fail(f'{path}: not a report state ("fingerprints" must be an object, "reports" a list)')
    return {"fingerprints": prints, "reports": runs}


def _warehouse_input(warehouse, last_ingest: dict | None, state: dict[str, Any]) -> dict[str, Any]:
    last = state["reports"][-1] if state["reports"] else None
    previous = last.get("time") if isinstance(last, dict) else None
    return {
        "kind": "warehouse",
        "path": str(warehouse.path),
        "format": warehouse.info.get("format"),
        "version": warehouse.info.get("version"),
        "committedVersion": warehouse.current_version(),
        "lastIngest": _iso(last_ingest.get("endMs")) if last_ingest else None,
        "lastIngestId": last_ingest.get("id") if last_ingest else None,
        "previousReport": _iso(previous) if isinstance(previous, int) else None,
    }


def build_report(result, selection, options: ReportOptions, **fields: Any) -> Report:
    """The :class:`Report` of a history run: the selected rules' findings in order, the run's statistics."""
    findings = sorted((f for f in result.findings if f.code in selection), key=lambda f: f.sort_key())
    incomplete = any(f.code in EVERY_COMMAND for f in findings)  # a check crashed: exit 2
    return options.report(
        "report", selection, [], findings=findings, stats=dict(result.stats), incomplete=incomplete, **fields
    )


def with_history(report: Report, result, last_ingest_ms: int | None) -> Report:
    """``report`` with section ``history`` (charts of the partitions its findings are about, the latest
    capture per broker) and the textfile's gauges."""
    from auditor.report.history import history_gauges, history_section

    section = history_section(result.charts, result.captures, report.findings)
    gauges = history_gauges(section["captures"], last_ingest_ms, report.generated_at)
    return dataclasses.replace(
        report,
        sections={**report.sections, "history": section},
        gauges=[*report.gauges, *gauges],
    )


def record(warehouse, report: Report, shown: list[str]) -> None:
    """Add the fingerprints ``shown`` and this report to state ``reports`` (the caller holds the lock)."""
    state = _reports_state(warehouse)
    now = int(report.generated_at * 1000)
    prints = state["fingerprints"]
    new = 0
    for fp in shown:
        if fp not in prints:
            prints[fp] = now
            new += 1
    runs = [*state["reports"], {"time": now, "shown": len(shown), "new": new, "exitCode": report.exit_code}]
    warehouse.write_state(STATE, {"fingerprints": prints, "reports": runs[-REPORTS_KEPT:]})


@report_options(lambda: HISTORY_SCOPES)
def report_command(
    options: ReportOptions,
    warehouse: Path | None = typer.Option(
        None, "--warehouse", "-w", metavar="DIR", help="The warehouse `kafka-auditor ingest` writes."
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        metavar="DURATION|TIME",
        help="Only findings captured in the last DURATION (30m, 24h, 7d; counted back from the newest "
        "capture in the warehouse, not the clock) or since an ISO-8601 date/time.",
    ),
    show_all: bool = typer.Option(
        False,
        "--all",
        help="Show every finding, also those a previous report already showed (and mark none as shown).",
    ),
    lag_records: int = typer.Option(
        _DEFAULTS.lag_records,
        "--lag-records",
        min=0,
        help="KA806: the high-watermark spread across a partition's replicas that counts as lag.",
    ),
    lag_duration: str = _duration_option(
        "--lag-duration", _DEFAULTS.lag_duration_ms, "KA806: how long the spread must last."
    ),
    missing_after: str = _duration_option(
        "--missing-after",
        _DEFAULTS.missing_after_ms,
        "KA811: a broker whose newest capture is this much older than its cluster's is missing.",
    ),
    capture_skew: str = _duration_option(
        "--capture-skew",
        _DEFAULTS.capture_skew_ms,
        "KA806: captures of one night's brokers this close together are compared as one round.",
    ),
    master: str | None = master_option(),
) -> None:
    """Check the checkpoint history of an ingest warehouse (high watermarks, log start offsets, recovery
    points and leader epochs over time; brokers and partitions that vanish) and report what is new since
    the previous report.

    Exit status: 0 clean, 1 when a new finding reaches --fail-on, 2 for usage errors or an unreadable
    warehouse.
    """
    from auditor.layout.warehouse import Warehouse, WarehouseError

    if warehouse is None:
        raise fail("missing --warehouse (a warehouse written by `kafka-auditor ingest`)")
    selection = options.selection()
    settings = HistorySettings(
        lag_records=lag_records,
        lag_duration_ms=parse_duration(lag_duration, "--lag-duration"),
        missing_after_ms=parse_duration(missing_after, "--missing-after"),
        capture_skew_ms=parse_duration(capture_skew, "--capture-skew"),
    )
    window = parse_since(since)
    spark_master = checked_master(master)
    options = dataclasses.replace(options, output=absolute_path(options.output))
    try:
        wh = Warehouse.open(warehouse, create=False)
        last_ingest = wh.last_ingest()
        tables = wh.tables()
    except WarehouseError as exc:
        raise fail(str(exc)) from None
    problem = options.check_outputs([wh.path])
    if problem:
        raise fail(problem)
    state = _reports_state(wh)

    from auditor.spark.history import run_history

    def job(spark):
        with stages.stage("checking the checkpoint history", unit="Spark tasks", poll=True):
            return run_history(spark, tables, settings, selection=selection)

    with options.stages() as stages:
        result = run_on_spark(spark_master, job, stages, options.verbose)

    from auditor.report.baseline import suppress
    from auditor.report.history import to_ms

    newest = max((to_ms(c["captureTime"]) for c in result.captures), default=None)
    report = build_report(result, selection, options, inputs=[_warehouse_input(wh, last_ingest, state)])
    baseline = options.known if options.baseline is not None else frozenset()
    standing = open_conditions(report.findings, baseline)
    findings, cutoff = in_window(report.findings, window, newest)
    stats = {
        **report.stats,
        "newestCapture": _iso(newest),
        "since": _iso(cutoff),
        "openConditions": len(standing),
    }
    report = dataclasses.replace(report, findings=findings, stats=stats, open_findings=standing)
    report = options.finish(report)
    if options.baseline is None:  # the same statistics and gauges with or without a baseline
        report = suppress(report, frozenset(), reason="baseline", stat="suppressed")
    with wh.lock():
        known = set() if show_all else set(_reports_state(wh)["fingerprints"])
        report = suppress(report, known, reason="reported", stat="alreadyReported")
        report = with_history(report, result, last_ingest.get("endMs") if last_ingest else None)
        options.emit(report)
        try:
            # an --all report (the HTML page, the textfile of the cron lines) shows what others may not have
            # shown yet: only the default report marks findings as reported, and only those it listed (text
            # and HTML leave out what --min-severity/-q hide: they stay new for the next report)
            listed = options.displayed(report).shown
            record(wh, report, [] if show_all else [f.fingerprint() for f in listed])
        except (WarehouseError, OSError) as exc:
            raise fail(f"the report was written but the warehouse state was not updated: {exc}") from None
    raise typer.Exit(report.exit_code)
