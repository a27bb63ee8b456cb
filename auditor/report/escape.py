"""Making names from the evidence safe for each output medium.

Kafka itself restricts topic names to ``[a-zA-Z0-9._-]`` (``org.apache.kafka.common.internals.Topic``),
but a log dir on disk is just a POSIX directory: a partition directory, segment or stray file may be named
with any byte except ``/`` and NUL, and a hostile or corrupt copy will be. Those names, and strings read
from the data (keys, evidence), reach the reports. Written raw they let a file name move the terminal's
cursor or recolour it (ESC, CSI), reverse what a reader sees (the Unicode bidirectional overrides behind
"Trojan Source", CVE-2021-42574), forge report lines (newline, CR), or make a JUnit file invalid XML 1.0
(which forbids most C0 controls, even as character references).

:func:`visible` turns every such character into a visible backslash form (``\\x1b``, ``\\u202e``,
``\\n``), the way Python's ``repr`` shows them; text, HTML and JUnit renderers use :func:`escaped` on the
whole report, the Prometheus renderer escapes label values with it. JSON and SARIF keep the exact strings:
their encoder (``ensure_ascii``) writes every control and non-ASCII character as a ``\\uXXXX`` escape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from auditor.findings import Finding
from auditor.report.model import Report
from auditor.text import UNSAFE, visible, visible_data

_FINDING_TEXT = ("message", "name", "log_dir", "topic", "file")


def visible_finding(f: Finding) -> Finding:
    """A copy of ``f`` whose strings (message, location, evidence, related) are :func:`visible`; ``f``
    itself when none needed it."""
    changes: dict[str, Any] = {}
    for name in _FINDING_TEXT:
        value = getattr(f, name)
        if isinstance(value, str) and UNSAFE.search(value):
            changes[name] = visible(value)
    for name in ("evidence", "related"):
        value = getattr(f, name)
        safe = visible_data(value)
        if safe is not value:
            changes[name] = safe
    return dataclasses.replace(f, **changes) if changes else f


def escaped(report: Report) -> Report:
    """A copy of ``report`` whose findings, partition rows,
    inputs, statistics and errors are :func:`visible`; what the text, HTML and JUnit renderers draw."""
    return dataclasses.replace(
        report,
        findings=[visible_finding(f) for f in report.findings],
        partitions=visible_data(report.partitions),
        inputs=visible_data(report.inputs),
        stats=visible_data(report.stats),
        errors=visible_data(report.errors),
    )
