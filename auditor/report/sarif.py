"""SARIF 2.1.0: one run, the enabled rules in ``tool.driver.rules``, one result per finding.

Levels: critical and error -> ``error``, warning -> ``warning``, info -> ``note``. Files are given relative to
their log dir (``uriBaseId`` ``LOGDIR<n>``, resolved in ``originalUriBaseIds``) with the byte position as
``region.byteOffset``; the topic-partition is a logical location. Kafka's terms (broker, offsets, epoch,
evidence) are in each result's ``properties``, exactly as found; the human-facing ``message.text`` has its
control and bidi characters made visible (:mod:`auditor.report.escape`) and artifact URIs are
percent-encoded (RFC 3986), whatever bytes the file names hold.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from auditor.findings import Finding, Severity
from auditor.report.model import SCHEMA_VERSION, TOOL_NAME, TOOL_URI, Report
from auditor.text import visible

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {
    Severity.CRITICAL: "error",
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
}


def _rule(r) -> dict[str, Any]:
    sections = r.sections
    markdown = "\n\n".join(f"**{name}:** {text}" for name, text in sections.items())
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": sections.get("What it finds", r.title)},
        "help": {"text": " ".join(f"{k}: {v}" for k, v in sections.items()), "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[r.severity]},
        "properties": {
            "severity": r.severity.label,
            "family": r.family,
            "scope": r.scope,
            "lifecycle": r.lifecycle,
            "tags": ["kafka", r.family],
        },
    }


def _bases(report: Report) -> dict[str, str]:
    dirs = sorted(
        {f.log_dir for f in report.findings if f.log_dir}
        | {i.get("logDir") for i in report.inputs if i.get("logDir")}
    )
    return {d: f"LOGDIR{i}" for i, d in enumerate(dirs)}


def _location(f: Finding, bases: dict[str, str]) -> dict[str, Any]:
    loc: dict[str, Any] = {}
    if f.file:
        base = bases.get(f.log_dir or "")
        if base and f.log_dir and os.path.abspath(f.file).startswith(os.path.abspath(f.log_dir) + os.sep):
            rel = Path(os.path.relpath(f.file, f.log_dir)).as_posix()
            artifact = {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": base}
        else:
            artifact = {"uri": Path(os.path.abspath(f.file)).as_uri()}
        physical: dict[str, Any] = {"artifactLocation": artifact}
        if f.position is not None:
            physical["region"] = {"byteOffset": int(f.position)}
        loc["physicalLocation"] = physical
    names = []
    if f.partition_key:
        prefix = f"broker-{f.broker}/" if f.broker is not None else ""
        names.append(
            {"name": f.partition_key, "fullyQualifiedName": prefix + f.partition_key, "kind": "module"}
        )
    elif f.broker is not None:
        names.append({"name": f"broker-{f.broker}", "kind": "namespace"})
    if names:
        loc["logicalLocations"] = names
    return loc


def sarif_dict(report: Report) -> dict[str, Any]:
    index = report.rule_index()
    rules = list(report.rules)
    bases = _bases(report)
    results = []
    for f in report.findings:
        if f.code not in index:
            from auditor.rules.registry import get

            index[f.code] = len(rules)
            rules.append(get(f.code))
        loc = _location(f, bases)
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": LEVELS[f.severity],
                "kind": "fail",
                "message": {"text": visible(f.message)},
                "locations": [loc] if loc else [],
                "partialFingerprints": {"kafkaAuditorFinding/v1": f.fingerprint()},
                "properties": {
                    "severity": f.severity.label,
                    "name": f.name,
                    "broker": f.broker,
                    "logDir": f.log_dir,
                    "topic": f.topic,
                    "partition": f.partition,
                    "offsetStart": f.offset_start,
                    "offsetEnd": f.offset_end,
                    "epoch": f.epoch,
                    "evidence": f.to_dict()["evidence"],
                },
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": report.tool_version,
                        "semanticVersion": report.tool_version,
                        "informationUri": TOOL_URI,
                        "rules": [_rule(r) for r in rules],
                    }
                },
                "originalUriBaseIds": {
                    base: {"uri": Path(os.path.abspath(d)).as_uri() + "/"} for d, base in bases.items()
                },
                "invocations": [
                    {
                        "executionSuccessful": not report.incomplete,
                        "exitCode": report.exit_code,
                        "commandLine": f"{TOOL_NAME} {report.command}",
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": visible(e)}} for e in report.errors
                        ],
                    }
                ],
                "results": results,
                "properties": {
                    "schemaVersion": SCHEMA_VERSION,
                    "command": report.command,
                    "stats": report.stats,
                },
            }
        ],
    }


def render_sarif(report: Report, out: IO[str]) -> None:
    json.dump(sarif_dict(report), out, indent=2, default=str)
    out.write("\n")
