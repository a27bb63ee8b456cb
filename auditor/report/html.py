"""HTML: the terminal report recorded by Rich (``Console(record=True)``) and exported as a standalone page
(``scan``, ``audit``); ``report`` has a page of its own with SVG charts (:mod:`auditor.report.history`)."""

from __future__ import annotations

import io
from typing import IO

from rich.terminal_theme import DEFAULT_TERMINAL_THEME

from auditor.report.model import TOOL_NAME, Report
from auditor.report.terminal import PLAIN, Layout, build, make_console

HTML_WIDTH = 140


def render_html(report: Report, out: IO[str], *, layout: Layout = PLAIN) -> None:
    """The people's report of ``layout`` (as :func:`auditor.report.terminal.render_text`) as one page;
    ``report``'s is the page of :mod:`auditor.report.page` with the history charts."""
    if report.command == "report":
        from auditor.report.history import render_history_html

        render_history_html(report, out)
        return
    console = make_console(io.StringIO(), color=True, width=HTML_WIDTH, record=True)
    console.print(build(report, layout))
    page = console.export_html(theme=DEFAULT_TERMINAL_THEME, inline_styles=True)
    title = f"<title>{TOOL_NAME} {report.command} report</title>"
    out.write(page.replace("<head>", "<head>\n" + title, 1))
