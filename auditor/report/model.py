"""The report every renderer consumes, and the exit-code contract shared by ``scan`` and ``audit``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from auditor import __version__
from auditor.findings import Finding, Severity, counts_by_code, counts_by_severity, worst
from auditor.rules.registry import Rule

SCHEMA_VERSION = 2
"""Version of the JSON/JSONL/SARIF property layout; bumped on incompatible changes (2: camelCase keys at
every depth, evidence included; the published schemas ``auditor/schemas/*.schema.json``)."""
TOOL_NAME = "kafka-auditor"
TOOL_URI = "https://github.com/kafka-auditor/kafka-auditor"

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

INCOMPLETE_CODES = frozenset({"KA001", "KA002", "KA691"})
"""Rules whose findings mean the input could not be fully read, so the run exits 2 (``Report.incomplete``):
KA001 and KA002, emitted by the scan engine (``auditor.scan._Emitter.engine``), and KA691, a replica ``audit``
could not read completely (``auditor.spark.audit``: a problem per unreadable span). JUnit writes them as
``<error>``, every other finding at or above ``fail_on`` as ``<failure>``."""


@dataclass(frozen=True)
class Gauge:
    """One sample of a Prometheus gauge a command adds to its report (the ``prometheus`` format writes it
    after the finding counts; samples sharing a ``name`` form one family, ``help`` taken from the first).
    ``name`` must match ``[a-zA-Z_:][a-zA-Z0-9_:]*``; ``labels`` values may hold anything (escaped)."""

    name: str
    help: str
    value: float
    labels: dict[str, Any] = field(default_factory=dict)


def exit_code(
    findings: list[Finding], fail_on: Severity | None, *, exit_zero: bool = False, incomplete: bool = False
) -> int:
    """0 clean, 1 when a finding reaches ``fail_on`` (None: never), 2 when the input could not be fully read
    (unreadable files, a failed check) — like ruff and sqlfluff. ``exit_zero`` turns 1 into 0, never 2."""
    if incomplete:
        return EXIT_ERROR
    if exit_zero or fail_on is None:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in findings) else EXIT_CLEAN


@dataclass
class Report:
    """One command's results.

    ``partitions``: one row per partition replica (``scan``) or per partition (``audit``), each a dict with at
    least ``topic``, ``partition`` and optionally ``broker``/``logDir``; ``partition_columns`` lists
    (key, header) pairs the terminal and HTML renderers show for them. ``inputs``: one row per log dir or
    source. ``rules``: the enabled rules (SARIF and JUnit list them).
    """

    command: str
    findings: list[Finding]
    rules: list[Rule]
    fail_on: Severity | None = Severity.ERROR
    exit_zero: bool = False
    incomplete: bool = False
    partitions: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    partition_columns: list[tuple[str, str]] = field(default_factory=list)
    generated_at: float = field(default_factory=time.time)
    tool_version: str = __version__
    errors: list[str] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)
    """Command-specific results beside the findings (``audit``: ``transactions``, ``groups``, ``elections``,
    ``timelines``), JSON-ready with camelCase keys; the JSON report holds each under its name."""
    views: dict[str, Any] = field(default_factory=dict)
    """The same results as the people's renderers draw them (text and HTML; never serialised)."""
    gauges: list[Gauge] = field(default_factory=list)
    """Extra Prometheus gauges of the command (``report``: the last capture per broker, the last ingest)."""
    open_findings: list[Finding] | None = None
    """``report``: the open conditions of the whole warehouse (findings whose evidence says ``open``: still
    true at the newest capture), whatever ``--since`` and the earlier reports left out of ``findings``; the
    Prometheus textfile counts them with the findings, so a condition keeps its series while it holds.
    None for commands without open conditions."""
    command_line: str = ""
    """The command line as given (options the user set), shown in the HTML page's header."""
    min_severity: Severity | None = None
    """Display only (text, HTML): findings below it are counted in the summary, not listed
    (``--min-severity``); every other format, the exit code and the summary keep them all."""
    quiet: bool = False
    """Display only (text, ``-q``): the summary line, the findings at or above ``fail_on``, the verdict."""

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings, self.fail_on, exit_zero=self.exit_zero, incomplete=self.incomplete)

    @property
    def failing(self) -> list[Finding]:
        """Findings at or above the fail-on threshold."""
        if self.fail_on is None:
            return []
        return [f for f in self.findings if f.severity >= self.fail_on]

    def listed(self, finding: Finding) -> bool:
        """Whether text and HTML list ``finding`` (display only): at or above ``min_severity`` and, with
        ``quiet``, at or above ``fail_on`` (``-q --fail-on never`` lists none)."""
        if self.min_severity is not None and finding.severity < self.min_severity:
            return False
        if self.quiet:
            return self.fail_on is not None and finding.severity >= self.fail_on
        return True

    @property
    def shown(self) -> list[Finding]:
        """The findings text and HTML list (:meth:`listed`), in the report's order."""
        return [f for f in self.findings if self.listed(f)]

    @property
    def hidden(self) -> list[Finding]:
        """The findings text and HTML count but do not list."""
        return [f for f in self.findings if not self.listed(f)]

    def summary(self) -> dict[str, Any]:
        w = worst(self.findings)
        return {
            "total": len(self.findings),
            "bySeverity": counts_by_severity(self.findings),
            "byCode": counts_by_code(self.findings),
            "worst": w.label if w is not None else None,
            "failing": len(self.failing),
        }

    def suppressed_notes(self) -> list[str]:
        """One line per kind of finding left out before rendering (``--baseline``; ``report``'s already
        reported findings), for the people's summaries; empty when none was."""
        notes = []
        if self.stats.get("suppressed"):
            notes.append(f"{self.stats['suppressed']} more suppressed by --baseline")
        if self.stats.get("alreadyReported"):
            notes.append(f"{self.stats['alreadyReported']} more already reported (--all shows them)")
        return notes

    def rule_index(self) -> dict[str, int]:
        return {r.code: i for i, r in enumerate(self.rules)}

    def groups(self) -> list[tuple[tuple, list[Finding]]]:
        """Findings grouped for "detail per partition": log-dir findings first, then by partition replica."""
        out: dict[tuple, list[Finding]] = {}
        for f in self.findings:
            key = (
                f.topic is not None,
                f.topic or "",
                f.partition if f.partition is not None else -1,
                f.broker if f.broker is not None else -1,
                f.log_dir or "",
            )
            out.setdefault(key, []).append(f)
        return sorted(out.items(), key=lambda kv: kv[0])

    def iso_time(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.generated_at))
