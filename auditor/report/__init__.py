"""Renderers: one :class:`Report` in, text / JSON / JSON Lines / SARIF / JUnit / HTML / Prometheus out.

Checks never print; commands build a :class:`Report` (``scan`` and, with its own partition rows, ``audit``)
and call :func:`render`. Machine formats (json, jsonl, sarif, junit, prometheus) are a stable surface
(JSON carries ``schemaVersion``); text and html are for people and may change: they draw the layout of the
report's command (:data:`auditor.report.audit_terminal.AUDIT_LAYOUT` for ``audit``). Every output is safe
for its medium whatever the file names hold (:mod:`auditor.report.escape`): control and bidi characters are
shown as ``\\x1b``/``\\u202e`` escapes in text, HTML, JUnit (valid XML 1.0) and Prometheus labels, and
JSON-escaped in JSON, JSON Lines and SARIF, which keep the exact strings.
"""

from __future__ import annotations

import importlib
from typing import IO

from auditor.report.model import SCHEMA_VERSION, Report, exit_code

RENDERERS: dict[str, str] = {
    "text": "auditor.report.terminal:render_text",
    "json": "auditor.report.json:render_json",
    "jsonl": "auditor.report.json:render_jsonl",
    "sarif": "auditor.report.sarif:render_sarif",
    "junit": "auditor.report.junit:render_junit",
    "html": "auditor.report.html:render_html",
    "prometheus": "auditor.report.prometheus:render_prometheus",
}
"""Format -> ``module:function`` writing a report (imported when used)."""
FORMATS = tuple(RENDERERS)


def _layout(report: Report):
    """The people's layout (:class:`auditor.report.terminal.Layout`) of the report's command."""
    if report.command == "audit":
        from auditor.report.audit_terminal import AUDIT_LAYOUT

        return AUDIT_LAYOUT
    if report.command == "report":
        from auditor.report.history import HISTORY_LAYOUT

        return HISTORY_LAYOUT
    from auditor.report.terminal import PLAIN

    return PLAIN


def render(
    report: Report, fmt: str, out: IO[str], *, color: bool | None = None, width: int | None = None
) -> None:
    """Write ``report`` to ``out`` in format ``fmt`` (one of :data:`FORMATS`); ``color`` and ``width`` apply
    to text."""
    if fmt not in RENDERERS:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    module, name = RENDERERS[fmt].split(":")
    write = getattr(importlib.import_module(module), name)
    if fmt == "text":
        write(report, out, color=color, width=width, layout=_layout(report))
    elif fmt == "html":
        write(report, out, layout=_layout(report))
    else:
        write(report, out)


__all__ = ["FORMATS", "RENDERERS", "SCHEMA_VERSION", "Report", "exit_code", "render"]
