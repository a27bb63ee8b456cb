"""Baselines: the fingerprints of findings already known, suppressed from later reports.

``--write-baseline FILE`` writes the findings of a run as JSON::

    {"tool": "kafka-auditor", "version": 2,
     "fingerprints": [{"fingerprint": "...", "code": "KA801", "message": "..."}, ...]}

``--baseline FILE`` reads such a file back: every finding whose :meth:`~auditor.findings.Finding.fingerprint`
(code and location, not the message) is listed is removed from the report before it is rendered, so every
format agrees, and counted in ``stats["suppressed"]`` and the ``kafka_auditor_findings_suppressed`` gauge.
``code`` and ``message`` are there for the people reviewing the file; only ``fingerprint`` is read.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable

from auditor.findings import Finding
from auditor.report.model import TOOL_NAME, Gauge, Report

BASELINE_VERSION = 2
MAX_BASELINE_BYTES = 256 * 1024 * 1024
"""A larger file is refused rather than read (about two million fingerprints fit)."""
SUPPRESSED_GAUGE = "kafka_auditor_findings_suppressed"
SUPPRESSED_HELP = "Findings of the run not reported: in the baseline, or already reported on this warehouse."


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message is one line naming the file."""


def read_baseline(path: str | os.PathLike) -> frozenset[str]:
    """The fingerprints listed in the baseline at ``path``; :class:`BaselineError` when it is missing,
    too large, not JSON (with line, column and byte offset) or not a version-2 ``kafka-auditor`` baseline."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_BASELINE_BYTES:
                limit = MAX_BASELINE_BYTES
                raise BaselineError(f"{name}: {size} bytes, more than a baseline may hold ({limit})")
            data = fh.read(MAX_BASELINE_BYTES + 1)
    except OSError as exc:
        raise BaselineError(f"{name}: cannot read the baseline: {exc.strerror or exc}") from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{name}: not UTF-8 at byte offset {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{name}: not JSON at line {exc.lineno} column {exc.colno} (byte offset "
            f"{len(exc.doc[: exc.pos].encode('utf-8'))}): {exc.msg}"
        ) from None
    if not isinstance(doc, dict) or doc.get("tool") != TOOL_NAME:
        raise BaselineError(f'{name}: not a baseline (expected a JSON object with "tool": "{TOOL_NAME}")')
    if doc.get("version") == 1:
        raise BaselineError(
            f"{name}: a version-1 baseline (its fingerprints hashed the evidence's absolute paths); "
            "write it again with --write-baseline"
        )
    if doc.get("version") != BASELINE_VERSION:
        raise BaselineError(
            f"{name}: baseline version {doc.get('version')!r} is not supported (expected {BASELINE_VERSION})"
        )
    entries = doc.get("fingerprints")
    if not isinstance(entries, list):
        raise BaselineError(f'{name}: "fingerprints" must be a list')
    out = set()
    for i, entry in enumerate(entries):
        value = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(value, str) or not value:
            raise BaselineError(f'{name}: fingerprints[{i}] has no "fingerprint" string')
        out.add(value)
    return frozenset(out)


def baseline_document(findings: Iterable[Finding]) -> dict:
    """The baseline of ``findings``: one entry per fingerprint, sorted by code then fingerprint."""
    seen: dict[str, Finding] = {}
    for f in findings:
        seen.setdefault(f.fingerprint(), f)
    entries = sorted(
        ({"fingerprint": fp, "code": f.code, "message": f.message} for fp, f in seen.items()),
        key=lambda e: (e["code"], e["fingerprint"]),
    )
    return {"tool": TOOL_NAME, "version": BASELINE_VERSION, "fingerprints": entries}


def write_baseline(path: str | os.PathLike, findings: Iterable[Finding]) -> None:
    """Write the baseline of ``findings`` to ``path`` (:func:`auditor.report.output.write_file`: atomic, the
    mode from the umask)."""
    from auditor.report.output import write_file

    write_file(path, json.dumps(baseline_document(findings), indent=1, ensure_ascii=True) + "\n")


def suppress(report: Report, fingerprints: frozenset[str] | set[str], *, reason: str, stat: str) -> Report:
    """``report`` without the findings whose fingerprint is in ``fingerprints``: their number in
    ``stats[stat]`` and a :data:`SUPPRESSED_GAUGE` sample labelled ``reason``."""
    kept = [f for f in report.findings if f.fingerprint() not in fingerprints]
    dropped = len(report.findings) - len(kept)
    gauge = Gauge(SUPPRESSED_GAUGE, SUPPRESSED_HELP, dropped, {"reason": reason})
    return dataclasses.replace(
        report,
        findings=kept,
        stats={**report.stats, stat: dropped},
        gauges=[*report.gauges, gauge],
    )


def apply_baseline(report: Report, fingerprints: frozenset[str]) -> Report:
    """``report`` less the findings of the baseline (``stats["suppressed"]``)."""
    return suppress(report, fingerprints, reason="baseline", stat="suppressed")
