"""JSON (one document with ``schemaVersion``) and JSON Lines (one finding per line)."""

from __future__ import annotations

import json
from typing import IO, Any

from auditor.report.model import SCHEMA_VERSION, TOOL_NAME, Report


def report_dict(report: Report) -> dict[str, Any]:
    """The JSON document: schema version, tool, summary, statistics, inputs, partitions and findings."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": report.tool_version},
        "command": report.command,
        "generatedAt": report.iso_time(),
        "failOn": report.fail_on.label if report.fail_on is not None else None,
        "exitCode": report.exit_code,
        "summary": report.summary(),
        "stats": report.stats,
        "errors": report.errors,
        "inputs": report.inputs,
        "partitions": report.partitions,
        **report.sections,
        "rules": [
            {"code": r.code, "name": r.name, "severity": r.severity.label, "title": r.title}
            for r in report.rules
        ],
        "findings": [f.to_dict() for f in report.findings],
    }


def render_json(report: Report, out: IO[str]) -> None:
    json.dump(report_dict(report), out, indent=2, sort_keys=False, default=str)
    out.write("\n")


def render_jsonl(report: Report, out: IO[str]) -> None:
    """One finding per line (``schemaVersion`` and ``command`` on each, so lines stand alone)."""
    for f in report.findings:
        row = {"schemaVersion": SCHEMA_VERSION, "command": report.command, **f.to_dict()}
        out.write(json.dumps(row, default=str, separators=(",", ":")) + "\n")
