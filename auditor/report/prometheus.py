"""Prometheus textfile-collector format: finding counts and scan figures as gauges.

Write it with ``--output <dir>/kafka_auditor.prom`` (node_exporter's ``--collector.textfile.directory``).
The text is what ``prometheus_client.generate_latest`` writes for the same families (one HELP and one TYPE
line per family, then its samples; label values and HELP text escaped as the text exposition format says),
and :func:`auditor.report.output.write_file` writes the file as ``prometheus_client.write_to_textfile``
does (a temporary file in the same directory, renamed into place: node_exporter never reads half a file;
the mode a new file gets from the umask, so node_exporter's own user can read it), plus an fsync before the
rename. tests/report/test_prometheus.py checks both against prometheus_client.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import IO

from auditor.findings import Finding, Severity
from auditor.report.model import Gauge, Report
from auditor.text import visible

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
"""A valid metric name of the text exposition format."""


def _escape(value: object) -> str:
    """A label value as the text exposition format wants it: backslash, double quote and line feed escaped
    (https://prometheus.io/docs/instrumenting/exposition_formats/), after every other control or bidi
    character was made :func:`~auditor.report.escape.visible` (so ``\\x1b`` reads back as that text)."""
    return visible(str(value)).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kw: object) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in kw.items() if v is not None) + "}"


def counted(report: Report) -> list[Finding]:
    """The findings the textfile counts: those of the report and its open conditions it does not list
    (:attr:`Report.open_findings`: a condition still true keeps its series whatever ``--since`` says)."""
    listed = {f.fingerprint() for f in report.findings}
    extra = [f for f in report.open_findings or [] if f.fingerprint() not in listed]
    return [*report.findings, *extra]


def render_prometheus(report: Report, out: IO[str]) -> None:
    """``report`` as a textfile: findings (:func:`counted`) by (cluster, broker, check, severity), by check
    that ran and by severity, the open conditions by check (``report``), the run's figures
    (``kafka_auditor_bytes``, ``kafka_auditor_duration_seconds``, ...) and :attr:`Report.gauges`, every
    family a gauge whose samples carry the ``command`` label."""
    cmd = report.command
    findings = counted(report)
    lines = [
        "# HELP kafka_auditor_findings Findings of the last run, by severity and check.",
        "# TYPE kafka_auditor_findings gauge",
    ]
    counts = Counter(
        (f.evidence.get("cluster"), f.broker, f.code, f.name, f.severity.label) for f in findings
    )
    for (cluster, broker, code, name, sev), n in sorted(
        counts.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]), kv[0][2])
    ):
        labels = _labels(command=cmd, cluster=cluster, broker=broker, code=code, name=name, severity=sev)
        lines.append(f"kafka_auditor_findings{labels} {n}")
    lines += [
        "# HELP kafka_auditor_check_findings Findings of the last run per check that ran "
        "(0: it ran and found nothing; no series: it did not run).",
        "# TYPE kafka_auditor_check_findings gauge",
    ]
    by_code = Counter(f.code for f in findings)
    for rule in sorted(report.rules, key=lambda r: r.code):
        labels = _labels(command=cmd, code=rule.code, name=rule.name, severity=rule.severity.label)
        lines.append(f"kafka_auditor_check_findings{labels} {by_code.get(rule.code, 0)}")
    if report.open_findings is not None:
        lines += [
            "# HELP kafka_auditor_open_findings Conditions still true at the newest capture, per check that "
            "ran (0: none; no series: it did not run), whatever --since.",
            "# TYPE kafka_auditor_open_findings gauge",
        ]
        open_by_code = Counter(f.code for f in report.open_findings)
        for rule in sorted(report.rules, key=lambda r: r.code):
            labels = _labels(command=cmd, code=rule.code, name=rule.name, severity=rule.severity.label)
            lines.append(f"kafka_auditor_open_findings{labels} {open_by_code.get(rule.code, 0)}")
    lines += [
        "# HELP kafka_auditor_findings_by_severity Findings of the last run, by severity.",
        "# TYPE kafka_auditor_findings_by_severity gauge",
    ]
    sev_counts = Counter(f.severity for f in findings)
    for s in sorted(Severity, reverse=True):
        lines.append(
            f"kafka_auditor_findings_by_severity{_labels(command=cmd, severity=s.label)} "
            f"{sev_counts.get(s, 0)}"
        )
    stats = report.stats
    figures = {
        "kafka_auditor_partitions": ("Partition directories checked.", stats.get("partitions")),
        "kafka_auditor_segments": ("Segments read.", stats.get("segments")),
        "kafka_auditor_bytes": ("Bytes of segments read.", stats.get("bytes")),
        "kafka_auditor_duration_seconds": ("Duration of the run.", stats.get("seconds")),
        "kafka_auditor_exit_code": (
            "Exit code of the run (0 clean, 1 findings, 2 incomplete).",
            report.exit_code,
        ),
        "kafka_auditor_last_run_timestamp_seconds": (
            "Unix time the report was generated.",
            round(report.generated_at, 3),
        ),
    }
    for name, (help_text, value) in figures.items():
        if value is None:
            continue
        lines += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} gauge",
            f"{name}{_labels(command=cmd)} {value}",
        ]
    written = {line.split()[2] for line in lines if line.startswith("# TYPE")}
    lines += _gauge_lines(cmd, report.gauges, written)
    out.write("\n".join(lines) + "\n")


def _help(text: str) -> str:
    """HELP text as the format wants it: backslash and line feed escaped."""
    return visible(text).replace("\\", "\\\\").replace("\n", "\\n")


def _value(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _gauge_lines(command: str, gauges: list[Gauge], taken: set[str]) -> list[str]:
    """The report's extra gauges (:attr:`Report.gauges`), one family per name in order of first appearance,
    each sample labelled with the command; a name already written above or not a valid metric name is a
    programming error."""
    families: dict[str, list[Gauge]] = {}
    for g in gauges:
        if not METRIC_NAME.fullmatch(g.name) or g.name in taken:
            raise ValueError(f"gauge name {g.name!r} is invalid or already used")
        families.setdefault(g.name, []).append(g)
    lines: list[str] = []
    for name, samples in families.items():
        lines += [f"# HELP {name} {_help(samples[0].help)}", f"# TYPE {name} gauge"]
        for g in samples:
            lines.append(f"{name}{_labels(command=command, **g.labels)} {_value(g.value)}")
    return lines
