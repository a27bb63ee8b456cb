"""JUnit XML: one test suite per log dir (or input), one test case per partition replica plus one for the
log dir itself; a case fails when one of its findings reaches ``--fail-on`` (the failure lists them all),
findings below the threshold go to ``system-out``. Valid XML 1.0 whatever the file names (see
:mod:`auditor.report.escape`)."""

from __future__ import annotations

import os
from typing import IO
from xml.etree import ElementTree as ET

from auditor.findings import Finding
from auditor.report.escape import escaped
from auditor.report.model import TOOL_NAME, Report


def _line(f: Finding) -> str:
    where = os.path.basename(f.file) if f.file else ""
    if f.position is not None:
        where += f"@{f.position}"
    offsets = ""
    if f.offset_start is not None:
        offsets = f" offsets {f.offset_start}" + (
            f"..{f.offset_end}" if f.offset_end not in (None, f.offset_start) else ""
        )
    return f"{f.severity.label.upper()} {f.code} {f.name} {where}{offsets}: {f.message}"


def junit_tree(report: Report) -> ET.Element:
    """The JUnit document. Every string from the evidence is made :func:`~auditor.report.escape.visible`
    first: XML 1.0 cannot carry most C0 controls even as character references, so a file name holding ESC
    or NUL would otherwise make the whole report unparsable."""
    report = escaped(report)
    suites = ET.Element("testsuites", name=f"{TOOL_NAME} {report.command}")
    by_dir: dict[str, dict[str, list[Finding]]] = {}
    broker_of: dict[str, str] = {}
    for row in report.inputs:
        key = row.get("logDir") or row.get("source") or ""
        by_dir.setdefault(key, {}).setdefault("(log dir)", [])
        broker_of[key] = str(row.get("broker"))
    for row in report.partitions:
        key = row.get("logDir") or ""
        case = row.get("directory") or f"{row.get('topic')}-{row.get('partition')}"
        by_dir.setdefault(key, {}).setdefault(case, [])
    for f in report.findings:
        key = f.log_dir or ""
        case = f"{f.topic}-{f.partition}" if f.topic is not None else "(log dir)"
        cases = by_dir.setdefault(key, {})
        match = next((c for c in cases if c == case or c.startswith(case + ".")), case)
        cases.setdefault(match, []).append(f)
    total_tests = total_fail = 0
    for logdir in sorted(by_dir):
        cases = by_dir[logdir]
        failures = 0
        suite = ET.SubElement(suites, "testsuite", name=logdir or "(no log dir)")
        for case in sorted(cases):
            findings = cases[case]
            tc = ET.SubElement(
                suite,
                "testcase",
                name=case,
                classname=f"{TOOL_NAME}.{report.command}.broker-{broker_of.get(logdir, 'unknown')}",
            )
            failing = [f for f in findings if report.fail_on is not None and f.severity >= report.fail_on]
            if failing:
                failures += 1
                top = max(failing, key=lambda f: f.severity)
                fe = ET.SubElement(
                    tc,
                    "failure",
                    message=f"{len(failing)} finding(s), worst {top.code}: {top.message}",
                    type=top.code,
                )
                fe.text = "\n".join(_line(f) for f in failing)
            rest = [f for f in findings if f not in failing]
            if rest:
                ET.SubElement(tc, "system-out").text = "\n".join(_line(f) for f in rest)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        total_tests += len(cases)
        total_fail += failures
    suites.set("tests", str(total_tests))
    suites.set("failures", str(total_fail))
    suites.set("errors", "0")
    return suites


def render_junit(report: Report, out: IO[str]) -> None:
    tree = junit_tree(report)
    ET.indent(tree)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(tree, encoding="unicode"))
    out.write("\n")
