"""Renderers: one :class:`Report` in, text / JSON / JSON Lines / SARIF / JUnit / HTML / Prometheus out.

Checks never print; commands build a :class:`Report` (``scan`` and, with its own partition rows, ``audit``)
and call :func:`render`. Machine formats (json, jsonl, sarif, junit, prometheus) are a stable surface
(JSON carries ``schemaVersion``); text and html are for people and may change. Every output is safe for
its medium whatever the file names hold (:mod:`auditor.report.escape`): control and bidi characters are
shown as ``\\x1b``/``\\u202e`` escapes in text, HTML, JUnit (valid XML 1.0) and Prometheus labels, and
JSON-escaped in JSON, JSON Lines and SARIF, which keep the exact strings.
"""

from __future__ import annotations

from typing import IO

from auditor.report.model import SCHEMA_VERSION, Report, exit_code

FORMATS = ("text", "json", "jsonl", "sarif", "junit", "html", "prometheus")


def render(
    report: Report, fmt: str, out: IO[str], *, color: bool | None = None, width: int | None = None
) -> None:
    """Write ``report`` to ``out`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "text":
        from auditor.report.terminal import render_text

        render_text(report, out, color=color, width=width)
    elif fmt == "json":
        from auditor.report.json import render_json

        render_json(report, out)
    elif fmt == "jsonl":
        from auditor.report.json import render_jsonl

        render_jsonl(report, out)
    elif fmt == "sarif":
        from auditor.report.sarif import render_sarif

        render_sarif(report, out)
    elif fmt == "junit":
        from auditor.report.junit import render_junit

        render_junit(report, out)
    elif fmt == "html":
        from auditor.report.html import render_html

        render_html(report, out)
    elif fmt == "prometheus":
        from auditor.report.prometheus import render_prometheus

        render_prometheus(report, out)
    else:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")


__all__ = ["FORMATS", "SCHEMA_VERSION", "Report", "exit_code", "render"]
