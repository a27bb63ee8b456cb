"""HTML: one self-contained page per report, built from the findings and the command's data (never a
terminal dump): ``scan`` and ``audit`` by :mod:`auditor.report.findings_page` (``audit`` with its replicas,
epoch timelines drawn as SVG, KRaft timelines and elections), ``report`` by :mod:`auditor.report.history`
(the checkpoint history charts). All three share the page of :mod:`auditor.report.page`: inline CSS and
script, a Content-Security-Policy that forbids any external resource, every evidence string escaped."""

from __future__ import annotations

from typing import IO

from auditor.report.model import Report
from auditor.report.terminal import PLAIN, Layout


def render_html(report: Report, out: IO[str], *, layout: Layout = PLAIN) -> None:
    """The page of ``report`` (``layout``, the text report's, is not used: the page has its own sections)."""
    del layout
    if report.command == "report":
        from auditor.report.history import render_history_html

        render_history_html(report, out)
        return
    from auditor.report.findings_page import render_findings_html

    render_findings_html(report, out)
