"""JUnit XML (the Ant/Jenkins/Surefire format CI servers read): one test case per rule and location.

A test case is one rule at one place, so that CI views keep cases apart and track them from run to run:

* ``scan``: a suite per log dir (named by broker and path); a case per (rule, partition directory), classname
  ``kafka-auditor.scan.broker-1.orders-0``, or per (rule, log dir) for log-dir findings, classname
  ``kafka-auditor.scan.broker-1`` (a log dir whose broker id is unknown, or one of several of a broker, adds
  the end of its path: ``kafka-auditor.scan.broker-1.data2``);
* ``audit``: a suite per topic and one per cluster; a case per (rule, partition, broker or replica pair),
  classname ``kafka-auditor.audit.orders-0``, name ``KA601 replication.divergence (brokers 1-2)``; cluster
  findings under classname ``kafka-auditor.audit`` (with several clusters the cluster name is inserted:
  ``kafka-auditor.audit.<cluster>.orders-0``);
* ``report``: the same suites as ``audit`` for its findings, and one suite for the warehouse with the rules
  that found nothing.

Outcome of a case: ``<error>`` for the rules meaning the input could not be fully read
(:data:`~auditor.report.model.INCOMPLETE_CODES`, exit status 2), ``<failure>`` for findings at or above
``--fail-on``, passed (with the findings in ``system-out``) below it. Every enabled rule that ran and found
nothing in a suite is one passing case there (classname of the suite's log dir, topic or cluster), so CI
shows what was checked; a rule whose scope did not run there (segment rules on a log dir without segments,
group rules without ``__consumer_offsets``) is left out, and one that ran on only part of the input (a
KA001/KA002/KA691 in the suite) is ``<skipped>`` with the reason. The problems of a run that no such
finding shows (an ``audit`` source skipped, KA001 ``--ignore``'d) are an ``<error>`` case of an ``inputs``
suite: ``errors`` is non-zero exactly when the exit status is 2.

Valid XML 1.0 whatever the file names: every string from the evidence is made
:func:`~auditor.text.visible` first (:mod:`auditor.report.escape`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any
from xml.etree import ElementTree as ET

from auditor.findings import Finding
from auditor.kafka.topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from auditor.report.escape import escaped
from auditor.report.model import INCOMPLETE_CODES, TOOL_NAME, Report
from auditor.rules.registry import Rule
from auditor.text import visible

SCAN_RAN_ALWAYS = ("logdir", "engine")
"""Scan scopes that run on every log dir (``partition`` needs a partition directory, ``segment`` a
segment)."""
AUDIT_TOPIC_SCOPES = ("replicas", "lag", "loss", "txn", "groups")
"""Audit scopes whose rules run on every partition of a topic (their passing cases go in the topic suite)."""
NEEDS_TOPIC: dict[str, str] = {"KA714": TRANSACTION_STATE_TOPIC}
"""Rules that run only when that topic's replicas are among the audit's inputs of the cluster (KA714 asks
the transaction coordinator)."""
SCOPE_NEEDS_TOPIC: dict[str, str] = {"groups": OFFSETS_TOPIC}
"""The same by scope: the ``groups`` rules (KA720-KA723) read the commits of ``__consumer_offsets``."""


@dataclass
class _Case:
    classname: str
    name: str
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None
    """A problem of the run itself (the ``inputs`` case): its lines."""


@dataclass
class _Suite:
    name: str
    properties: dict[str, Any]
    cases: dict[tuple[str, str], _Case] = field(default_factory=dict)

    def case(self, classname: str, name: str) -> _Case:
        return self.cases.setdefault((classname, name), _Case(classname, name))

    def codes(self) -> set[str]:
        return {f.code for c in self.cases.values() for f in c.findings}


class _Document:
    """Suites in insertion order, keyed by what they stand for (a log dir, a topic, a cluster)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.suites: dict[tuple, _Suite] = {}
        self.rule_names = {r.code: r.name for r in report.rules}

    def suite(self, key: tuple, name: str, **properties: Any) -> _Suite:
        if key not in self.suites:
            self.suites[key] = _Suite(name, properties)
        return self.suites[key]

    def label(self, code: str, name: str = "") -> str:
        """``KA601 replication.divergence``: the rule's code and name."""
        return f"{code} {name or self.rule_names.get(code, '')}".rstrip()

    def passes(self, suite: _Suite, classname: str, rules: Iterable[Rule], skipped: _Skip) -> None:
        """A passing (or skipped) case for every rule of ``rules`` without a finding in ``suite``."""
        found = suite.codes()
        for r in rules:
            if r.code in found:
                continue
            suite.case(classname, self.label(r.code, r.name)).skipped = skipped.reason(r.code)


@dataclass
class _Skip:
    """Why the rules of one suite did not run on all of its input (None: they did)."""

    whole: str | None = None
    rules: dict[str, str] = field(default_factory=dict)

    def reason(self, code: str) -> str | None:
        return self.whole or self.rules.get(code)

    @classmethod
    def of(cls, findings: list[Finding], unlocated: str | None) -> _Skip:
        """From the suite's KA001/KA002/KA691 findings (a KA002 naming its rule skips that rule only), or
        ``unlocated`` (the run is incomplete and no finding says where)."""
        if unlocated:
            return cls(unlocated)
        skip = cls()
        partial = sorted({f.code for f in findings if f.code in INCOMPLETE_CODES})
        for f in findings:
            if f.code == "KA002" and f.evidence.get("rule"):
                skip.rules[str(f.evidence["rule"])] = f"the check failed here (KA002): {f.message}"
            elif f.code in INCOMPLETE_CODES:
                skip.whole = f"ran on part of the input only: {', '.join(partial)} in this suite"
        return skip


# ------------------------------------------------------------------------------------------------- scan


def _path_labels(paths: list[str]) -> dict[str, str]:
    """The shortest tail of each path (whole components) that tells it apart from the others."""
    parts = {p: [c for c in p.split("/") if c] or [p or "."] for p in paths}
    out: dict[str, str] = {}
    for depth in range(1, max((len(v) for v in parts.values()), default=1) + 1):
        tails = {p: "/".join(parts[p][-depth:]) for p in paths if p not in out}
        counts: dict[str, int] = {}
        for tail in tails.values():
            counts[tail] = counts.get(tail, 0) + 1
        out.update({p: t for p, t in tails.items() if counts[t] == 1})
    for i, p in enumerate(sorted(p for p in paths if p not in out)):  # equal tails ("/a/x" and "a/x")
        out[p] = f"{'/'.join(parts[p])}#{i + 1}"
    return out


def _scan(doc: _Document, report: Report, unlocated: str | None) -> None:
    prefix = f"{TOOL_NAME}.{report.command}"
    dirs: dict[str, dict[str, Any]] = {}
    for row in report.inputs:
        path = row.get("logDir") or row.get("source")
        if path:
            dirs.setdefault(path, {"broker": row.get("broker"), "clusterId": row.get("clusterId")})
    rows_of: dict[str, list[dict[str, Any]]] = {}
    for row in report.partitions:
        if row.get("logDir"):
            dirs.setdefault(row["logDir"], {"broker": row.get("broker")})
            rows_of.setdefault(row["logDir"], []).append(row)
    for f in report.findings:
        if f.log_dir:
            dirs.setdefault(f.log_dir, {"broker": f.broker})
    by_broker: dict[Any, list[str]] = {}
    for path, info in dirs.items():
        by_broker.setdefault(info["broker"], []).append(path)
    labels: dict[str, str] = {}
    for broker, paths in by_broker.items():
        if broker is not None and len(paths) == 1:
            labels[paths[0]] = f"broker-{broker}"
        else:
            tails = _path_labels(paths)
            labels.update(
                {p: f"broker-{broker if broker is not None else 'unknown'}.{tails[p]}" for p in paths}
            )
    suites: dict[str, _Suite] = {}
    for path in sorted(dirs, key=lambda p: (labels[p], p)):
        broker = dirs[path]["broker"]
        name = f"broker {broker}: {path}" if broker is not None else f"{path} (broker id unknown)"
        suites[path] = doc.suite(
            ("logdir", path), name, broker=broker, logDir=path, clusterId=dirs[path].get("clusterId")
        )
    for f in report.findings:
        if f.log_dir not in suites:
            suite, base = doc.suite(("other",), "findings outside the scanned log dirs"), prefix
        else:
            suite, base = suites[f.log_dir], f"{prefix}.{labels[f.log_dir]}"
        where = f.partition_key
        if where is not None:
            where = _directory(f, rows_of.get(f.log_dir or "", []))
        suite.case(
            f"{base}.{where}" if where is not None else base, doc.label(f.code, f.name)
        ).findings.append(f)
    for path, suite in suites.items():
        rows = rows_of.get(path, [])
        ran = set(SCAN_RAN_ALWAYS)
        if rows:
            ran.add("partition")
        if any(r.get("segments") or r.get("bytes") for r in rows):
            ran.add("segment")
        findings = [f for c in suite.cases.values() for f in c.findings]
        doc.passes(
            suite,
            f"{prefix}.{labels[path]}",
            (r for r in report.rules if r.scope in ran),
            _Skip.of(findings, unlocated),
        )


def _directory(f: Finding, rows: list[dict[str, Any]]) -> str:
    """The partition directory of ``f`` in its log dir: the one of its topic-partition (several: the one
    holding its file, e.g. ``orders-0.<id>-delete`` beside ``orders-0``), else ``topic-partition``."""
    key = f.partition_key or ""
    dirs = [
        r.get("directory") for r in rows if r.get("topic") == f.topic and r.get("partition") == f.partition
    ]
    dirs = [d for d in dirs if d]
    if len(dirs) == 1:
        return dirs[0]
    for d in sorted(dirs, key=len, reverse=True):
        inside = os.path.join(f.log_dir or "", d)
        if f.file and (f.file == inside or f.file.startswith(inside + os.sep)):
            return d
    return key


# ------------------------------------------------------------------------------------ audit and report


def _cluster(value: Any) -> str:
    return "" if value is None else str(value)


def _pair(f: Finding) -> str:
    """`` (brokers 1-2)`` for a replica pair, `` (broker 2)`` for one replica, nothing for the partition."""
    peer = f.evidence.get("peer")
    if f.broker is not None and peer is not None and peer != f.broker:
        a, b = sorted((int(f.broker), int(peer)))
        return f" (brokers {a}-{b})"
    if f.broker is not None:
        return f" (broker {f.broker})"
    return ""


def _clustered(doc: _Document, report: Report, unlocated: str | None) -> None:
    """``audit`` and ``report``: a suite per topic (per cluster and topic when several clusters) and one per
    cluster for the findings of no partition."""
    prefix = f"{TOOL_NAME}.{report.command}"
    topics: dict[str, set[str]] = {}
    for row in report.partitions:
        if row.get("topic") is not None:
            topics.setdefault(_cluster(row.get("cluster")), set()).add(row["topic"])
    clusters = set(topics) | {_cluster(f.evidence.get("cluster")) for f in report.findings}
    several = len(clusters) > 1

    def base(c: str) -> str:
        return f"{prefix}.{c or '(no cluster id)'}" if several else prefix

    def topic_suite(c: str, topic: str) -> _Suite:
        name = f"topic {topic}" + (f" (cluster {c})" if several else "")
        return doc.suite(("topic", c, topic), name, cluster=c or None, topic=topic)

    def cluster_suite(c: str) -> _Suite:
        return doc.suite(("cluster", c), f"cluster {c}" if c else "cluster", cluster=c or None)

    for c in sorted(topics):
        for t in sorted(topics[c]):
            topic_suite(c, t)
    cluster_rules = [r for r in report.rules if r.scope == "cluster"]
    if cluster_rules:
        for c in sorted(topics):
            cluster_suite(c)
    for f in sorted(report.findings, key=Finding.sort_key):
        c = _cluster(f.evidence.get("cluster"))
        if f.topic is not None:
            suite = topic_suite(c, f.topic)
            classname = f"{base(c)}.{f.partition_key}"
        else:
            suite, classname = cluster_suite(c), base(c)
        suite.case(classname, doc.label(f.code, f.name) + _pair(f)).findings.append(f)
    if report.command != "audit":
        _rules_suite(doc, report, prefix, unlocated)
        return
    for (kind, c, *rest), suite in list(doc.suites.items()):
        findings = [f for case in suite.cases.values() for f in case.findings]
        skip = _Skip.of(findings, unlocated)
        if kind == "topic":
            rules = [r for r in report.rules if _ran_on_topic(r, topics.get(c, set()))]
            doc.passes(suite, f"{base(c)}.{rest[0]}", rules, skip)
        elif kind == "cluster" and c in topics:
            doc.passes(suite, base(c), cluster_rules, skip)


def _ran_on_topic(rule: Rule, held: set[str]) -> bool:
    """Whether an audit rule ran on the partitions of a topic of a cluster whose inputs hold ``held``."""
    if rule.scope not in AUDIT_TOPIC_SCOPES:
        return False
    needed = NEEDS_TOPIC.get(rule.code) or SCOPE_NEEDS_TOPIC.get(rule.scope)
    return needed is None or needed in held


def _rules_suite(doc: _Document, report: Report, prefix: str, unlocated: str | None) -> None:
    """``report`` (and any other command): the rules that found nothing anywhere, in one suite named after
    the input (the warehouse)."""
    source = next((row for row in report.inputs if row.get("path")), None)
    name = f"{source.get('kind') or 'input'} {source['path']}" if source else report.command
    found = {f.code for f in report.findings}
    rules = [r for r in report.rules if r.code not in found]
    if rules:
        suite = doc.suite(("rules",), name, input=source["path"] if source else None)
        doc.passes(suite, prefix, rules, _Skip(unlocated))


# ---------------------------------------------------------------------------------------------- writing


def _line(f: Finding) -> str:
    """One finding on one line: severity, code, name, where (file@byte position, else the broker),
    offsets, epoch, capture time, message."""
    where = os.path.basename(f.file) if f.file else ""
    if f.position is not None:
        where += f"@{f.position}"
    if not where and f.broker is not None:
        where = f"broker {f.broker}"
    parts = [f.severity.label.upper(), f.code, f.name, where]
    if f.offset_start is not None:
        end = f"..{f.offset_end}" if f.offset_end not in (None, f.offset_start) else ""
        parts.append(f"offsets {f.offset_start}{end}")
    if f.epoch is not None:
        parts.append(f"epoch {f.epoch}")
    if f.time:
        parts.append(f"at {f.time}")
    return " ".join(p for p in parts if p) + f": {f.message}"


def _summary(findings: list[Finding]) -> str:
    top = max(findings, key=lambda f: f.severity)
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{top.severity.label} {top.code}: {top.message}{more}"


def _verdict_properties(report: Report) -> dict[str, str]:
    """``audit``: one property per verdict (``kafka-auditor.verdict.N``: its head line, the partition's state
    and committed loss; the JSON report has the whole verdict and its next steps)."""
    from auditor.report.verdicts import verdict_lines

    verdicts = report.sections.get("verdicts")
    if verdicts is None:
        return {}
    lines = verdict_lines(verdicts, report.stats.get("consistentPartitions", 0))
    heads = [line for line in lines if not line.startswith(" ")]
    return {f"{TOOL_NAME}.verdict.{i}": line for i, line in enumerate(heads, 1)}


def _timestamp(report: Report) -> str:
    """When the run started, ISO 8601 in UTC without a zone designator (the Ant schema allows none): scan's
    ``startedAt`` (ISO-8601 UTC, ``...Z``), else the report's time less the run's seconds."""
    started = report.stats.get("startedAt")
    if isinstance(started, str) and started.endswith("Z") and len(started) >= 20:
        return started[:19]
    seconds = report.stats.get("seconds")
    started = report.generated_at - (seconds if isinstance(seconds, int | float) else 0)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started))


def _hostname() -> str:
    """The host that ran the checks ('localhost' when unknown, as the Ant schema says)."""
    try:
        return visible(socket.gethostname()) or "localhost"
    except OSError:
        return "localhost"


def _write_case(parent: ET.Element, case: _Case, report: Report) -> str:
    """The ``<testcase>``; returns its outcome: error, failure, skipped or passed."""
    tc = ET.SubElement(parent, "testcase", name=case.name, classname=case.classname)
    incomplete = [f for f in case.findings if f.code in INCOMPLETE_CODES]
    failing = [
        f
        for f in case.findings
        if f.code not in INCOMPLETE_CODES and report.fail_on is not None and f.severity >= report.fail_on
    ]
    rest = [f for f in case.findings if f not in incomplete and f not in failing]
    outcome = "passed"
    if case.error is not None:
        ET.SubElement(tc, "error", message=case.error.splitlines()[0], type="input").text = case.error
        outcome = "error"
    elif incomplete:
        kind = "error"
        element = ET.SubElement(tc, kind, message=_summary(incomplete), type=incomplete[0].code)
        element.text = "\n".join(_line(f) for f in incomplete)
        outcome = kind
    elif failing:
        element = ET.SubElement(tc, "failure", message=_summary(failing), type=failing[0].code)
        element.text = "\n".join(_line(f) for f in failing)
        outcome = "failure"
    elif case.skipped is not None:
        ET.SubElement(tc, "skipped", message=case.skipped)
        outcome = "skipped"
    if rest:
        ET.SubElement(tc, "system-out").text = "\n".join(_line(f) for f in rest)
    return outcome


def junit_tree(report: Report) -> ET.Element:
    """The JUnit document of ``report`` (see the module docstring). Every string from the evidence is made
    :func:`~auditor.text.visible` first: XML 1.0 cannot carry most C0 controls even as character
    references, so a file name holding ESC or NUL would otherwise make the whole report unparsable."""
    report = escaped(report)
    doc = _Document(report)
    located = any(f.code in INCOMPLETE_CODES for f in report.findings)
    unlocated = None
    if report.incomplete and not located:
        unlocated = "part of the input could not be read (exit status 2): see the inputs suite"
    if report.command == "scan":
        _scan(doc, report, unlocated)
    else:
        _clustered(doc, report, unlocated)
    problems = _uncovered(report)
    if problems or unlocated:
        problems = problems or ["part of the input could not be read"]
        case = doc.suite(("inputs",), "inputs").case(
            f"{TOOL_NAME}.{report.command}", "inputs read completely"
        )
        case.error = f"{len(problems)} input problem(s)\n" + "\n".join(problems)
    stamp, host = _timestamp(report), _hostname()
    root = ET.Element("testsuites", name=f"{TOOL_NAME} {report.command}")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for i, suite in enumerate(s for s in doc.suites.values() if s.cases):
        element = ET.SubElement(root, "testsuite", name=suite.name)
        counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
        props = {
            f"{TOOL_NAME}.version": report.tool_version,
            f"{TOOL_NAME}.command": report.command,
            f"{TOOL_NAME}.failOn": report.fail_on.label if report.fail_on is not None else "never",
            **_verdict_properties(report),
            **{f"{TOOL_NAME}.{k}": v for k, v in suite.properties.items()},
        }
        properties = ET.SubElement(element, "properties")
        for key, value in props.items():
            if value is not None:
                ET.SubElement(properties, "property", name=key, value=visible(str(value)))
        for case in sorted(suite.cases.values(), key=lambda c: (c.classname, c.name)):
            outcome = _write_case(element, case, report)
            counts["tests"] += 1
            key = {"failure": "failures", "error": "errors"}.get(outcome, outcome)
            if key in counts:
                counts[key] += 1
        for key, value in counts.items():
            element.set(key, str(value))
            totals[key] += value
        element.set("id", str(i))
        element.set("timestamp", stamp)
        element.set("hostname", host)
    _unique_names(root)
    for key, value in totals.items():
        root.set(key, str(value))
    seconds = report.stats.get("seconds")
    if isinstance(seconds, int | float):
        root.set("time", f"{max(float(seconds), 0.0):.3f}")
    return root


def _uncovered(report: Report) -> list[str]:
    """The run's problems (``Report.errors``) but those a KA691 case already shows: ``audit`` lists every
    unreadable replica span as ``broker B topic-P (log dir): incomplete from offset ...``
    (:mod:`auditor.spark.audit`); a change of that wording only shows those problems twice."""
    spans = {
        f"broker {f.broker} {f.partition_key} ("
        for f in report.findings
        if f.code == "KA691" and f.topic is not None
    }
    return [e for e in report.errors if not any(e.startswith(s) for s in spans)]


def _unique_names(root: ET.Element) -> None:
    """Make every (classname, name) pair of the document unique: CI merges equal pairs into one case.
    Cases are built unique per suite and classnames per log dir, topic or cluster, so this only acts on
    names that happen to coincide (a topic named ``orders-0`` beside partition 0 of topic ``orders``)."""
    seen: set[tuple[str, str]] = set()
    for tc in root.iter("testcase"):
        key = (tc.get("classname") or "", tc.get("name") or "")
        n = 1
        while key in seen:
            n += 1
            key = (key[0], f"{tc.get('name')} #{n}")
        seen.add(key)
        tc.set("name", key[1])


def render_junit(report: Report, out: IO[str]) -> None:
    tree = junit_tree(report)
    ET.indent(tree)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(tree, encoding="unicode"))
    out.write("\n")
