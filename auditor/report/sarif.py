"""SARIF 2.1.0 for GitHub code scanning: one run, the enabled rules in ``tool.driver.rules``, one result per
finding, each with a physical location GitHub can show and track.

What GitHub requires and how this module meets it (GitHub Docs, "SARIF support for code scanning",
https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning;
source ``github/docs``, ``content/code-security/code-scanning/integrating-with-code-scanning/``
``sarif-support-for-code-scanning.md``):

* ``$schema``, ``version`` 2.1.0, ``runs``; ``tool.driver.name`` and ``rules``; each rule an ``id``,
  ``shortDescription.text`` and ``fullDescription.text`` (at most 1024 characters each), ``help.text``
  (required; ``help.markdown`` recommended), ``name`` at most 255 characters, ``properties.tags`` (at most
  20, 10 shown), ``properties.problem.severity`` (recommended: ``error``, ``warning`` or ``recommendation``).
  Required properties must not be the empty string.
* Each result: ``message.text``; ``locations`` (at least one, at most 10, only the first used) whose
  ``physicalLocation`` has ``artifactLocation.uri`` and ``region.startLine``; ``partialFingerprints``
  ("code scanning only uses the ``primaryLocationLineHash``").
* Relative URIs are taken relative to the repository root; ``originalUriBaseIds`` is not used by GitHub,
  so the relative path alone must tell two log dirs apart ("Reporting consistent filepaths").
* Limits (``data/reusables/code-scanning/sarif-limits.md``): 20 runs per file, 25,000 results per run (only
  the top 5,000 shown, by severity), 25,000 rules per run, 1,000 locations per result (100 shown), 20 tags
  per rule; a gzip-compressed file of at most 10 MB. Beyond the results limit the whole upload is rejected,
  so the most severe :data:`MAX_RESULTS` are kept and the rest counted in a tool notification.
* The ``upload-sarif`` action computes ``primaryLocationLineHash`` from the file's text at ``startLine``
  only when the result has none (``github/codeql-action: src/fingerprints.ts``); Kafka's log files are
  rarely in the repository and their bytes change, so every result carries its own: the finding's stable
  fingerprint (:meth:`auditor.findings.Finding.fingerprint`, never an absolute path), also under
  :data:`FINGERPRINT_KEY`.

Locations. For ``scan`` (and for ``audit``/``report`` when every log dir is an existing local directory
of one broker, :func:`local_log_dirs`) every URI is relative to the common parent of the log dirs
(``uriBaseId`` ``EVIDENCE``, resolved to a ``file://`` URI in ``originalUriBaseIds``) and starts with the
log dir's own path below it, so it is unique per log dir:
``broker-1/kafka-logs/t0-0/00000000000000000000.log``.
Otherwise a log dir is a path on its broker's host (three brokers may each have ``/var/lib/kafka/data``; an
extract stores the path as typed) and URIs are ``[cluster/]broker-<id>/<log dir name>/<file>`` with no
base, unique per (cluster, broker, log dir); findings over checkpoint history (``report``, with a capture
time) are always placed so. A finding without a file points at its partition directory (``broker-1/t0-0``),
else at the log dir's ``meta.properties``. URIs are percent-encoded (RFC 3986) whatever bytes the names
hold. ``region.startLine`` is always set: for local text files (offset and leader-epoch checkpoints,
``*.properties``, ``partition.metadata``) the line holding the byte position, with ``startColumn`` in
Unicode code points (the run's ``columnKind``); for an offset checkpoint finding without a position, the
line of its partition's entry ``<topic> <partition> <offset>``; each file read once, bounded, never failing
the report; 1 when unknown, and for binary files 1 with ``byteOffset``. The topic-partition is also a
logical location. Each rule's ``helpUri`` is its page, ``docs/checks/KA601.md`` (generated from the
registry by :mod:`auditor.rules.docs`); its ``help.markdown`` links the JIRA issues and KIPs it cites.
``invocations[0].commandLine`` is the command as typed.

Levels: critical and error -> ``error``, warning -> ``warning``, info -> ``note``. Kafka's terms (broker,
offsets, epoch, evidence) are in each result's ``properties``, exactly as found; the human-facing
``message.text`` has its control and bidi characters made visible (:mod:`auditor.report.escape`).
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from auditor.findings import Finding, Severity, relative_file
from auditor.layout.filetypes import classify
from auditor.report.model import SCHEMA_VERSION, TOOL_NAME, TOOL_URI, Report
from auditor.rules.docs import linked_references, page_uri
from auditor.text import visible
from parsers.files import read_regular

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {
    Severity.CRITICAL: "error",
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
}
PROBLEM_SEVERITY = {
    Severity.CRITICAL: "error",
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "recommendation",
}
"""GitHub's ``properties.problem.severity`` of a rule (orders and filters alerts of non-security rules)."""
BASE_ID = "EVIDENCE"
"""The ``uriBaseId`` of every local artifact: the common parent of the log dirs."""
FINGERPRINT_KEY = "kafkaAuditorFinding/v2"
"""``partialFingerprints`` key of :meth:`Finding.fingerprint` (v2: from stable identity, no absolute path)."""
MAX_RESULTS = 25_000
"""GitHub rejects a run with more results; the most severe are kept."""
MAX_DESCRIPTION, MAX_NAME, MAX_TAGS = 1024, 255, 20
MAX_TEXT_BYTES = 16 * 1024 * 1024
"""A text file larger than this is not read for line numbers (``startLine`` 1)."""
TEXT_KINDS = frozenset(
    {
        "offset-checkpoint",
        "leader-epoch-checkpoint",
        "partition-metadata",
        "meta-properties",
        "quorum-state",
        "clean-shutdown",
    }
)
"""File kinds (:func:`auditor.layout.filetypes.classify`) Kafka writes as text; KRaft snapshots
(``*.checkpoint``) are binary."""


# ------------------------------------------------------------------------------------------------ rules


def help_uri(code: str) -> str:
    """The rule's own documentation: its page ``docs/checks/KAnnn.md`` (``page_uri``)."""
    return page_uri(code)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rule(r) -> dict[str, Any]:
    sections = r.sections
    title = r.title or r.name or r.code
    uri = help_uri(r.code)
    markdown = "\n\n".join(f"**{name}:** {linked_references(text)}" for name, text in sections.items())
    text = " ".join(f"{k}: {v}" for k, v in sections.items()) or title
    markdown = (markdown or text) + f"\n\n[{r.code} in the kafka-auditor documentation]({uri})"
    return {
        "id": r.code,
        "name": _clip(r.name or r.code, MAX_NAME),
        "shortDescription": {"text": _clip(title, MAX_DESCRIPTION)},
        "fullDescription": {"text": _clip(sections.get("What it finds") or title, MAX_DESCRIPTION)},
        "helpUri": uri,
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[r.severity]},
        "properties": {
            "severity": r.severity.label,
            "family": r.family,
            "scope": r.scope,
            "lifecycle": r.lifecycle,
            "tags": ["kafka", r.family][:MAX_TAGS],
            "problem.severity": PROBLEM_SEVERITY[r.severity],
        },
    }


# -------------------------------------------------------------------------------------------- locations


def _posix(path: str) -> str:
    return posixpath.join(*path.split(os.sep)) if path else path


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def _segment(text: str) -> str:
    """A name used as one path segment: ``/`` and NUL replaced (a cluster label may hold anything)."""
    return text.replace("/", "_").replace("\x00", "_") or "_"


def _owner(f: Finding) -> tuple[Any, int | None]:
    """The (cluster, broker) a finding's log dir belongs to."""
    return f.evidence.get("cluster"), f.broker


def local_log_dirs(report: Report) -> bool:
    """Whether the log dirs the findings name are this machine's directories, one per broker: always for
    ``scan`` (it reads them); for ``audit`` and ``report`` only when every log dir is an absolute path of an
    existing directory and no two brokers (or clusters) name the same one. Otherwise a log dir is a path on
    its broker's host (an extract stores it as typed; three hosts may each have ``/var/lib/kafka/data``)."""
    if report.command == "scan":
        return True
    owners: dict[str, set[tuple[Any, int | None]]] = {}
    for f in report.findings:
        if f.time is not None or not f.log_dir:
            continue
        if not os.path.isabs(f.log_dir) or not os.path.isdir(f.log_dir):
            return False
        owners.setdefault(os.path.abspath(f.log_dir), set()).add(_owner(f))
    for who in owners.values():
        if len({c for c, _ in who} - {None}) > 1 or len({b for _, b in who} - {None}) > 1:
            return False
    return True


class Places:
    """Where each finding is, as a URI relative to the evidence root (module docstring).

    When the log dirs are local (:func:`local_log_dirs`), findings without a capture time are placed below
    ``root``, the common parent of their log dirs (and of the log dirs of ``report.inputs``); every other
    finding below ``[cluster/]broker-<id>/<log dir>/``, unique per (cluster, broker, log dir).
    """

    def __init__(self, report: Report) -> None:
        self.local = local_log_dirs(report)
        local = [f for f in report.findings if f.time is None] if self.local else []
        inputs = report.inputs if self.local else []
        dirs = {os.path.abspath(f.log_dir) for f in local if f.log_dir}
        dirs |= {os.path.abspath(str(i["logDir"])) for i in inputs if i.get("logDir")}
        parents = {os.path.dirname(d) for d in dirs}
        parents |= {
            os.path.dirname(os.path.dirname(os.path.abspath(f.file)))
            for f in local
            if not f.log_dir and f.file and os.path.isabs(f.file)
        }
        self.root: str | None = os.path.commonpath(sorted(parents)) if parents else None
        self.prefix = {d: _posix(os.path.relpath(d, self.root)) for d in dirs} if self.root else {}
        by_broker: dict[tuple, set[str]] = {}
        for f in local:
            if f.log_dir and f.broker is not None:
                by_broker.setdefault(_owner(f), set()).add(os.path.abspath(f.log_dir))
        for i in inputs:
            if i.get("logDir") and i.get("broker") is not None:
                key = (i.get("clusterId"), i["broker"])
                by_broker.setdefault(key, set()).add(os.path.abspath(str(i["logDir"])))
        self.broker_dirs = {k: next(iter(v)) for k, v in by_broker.items() if len(v) == 1}
        remote = [f for f in report.findings if f.time is not None or not self.local]
        self.clusters = {f.evidence.get("cluster") for f in remote}
        """The clusters of the findings placed by broker (None, unknown, counts as one)."""
        remote_dirs: dict[tuple, set[str]] = {}
        for f in remote:
            if f.log_dir:
                remote_dirs.setdefault(_owner(f), set()).add(f.log_dir)
        self.remote_dirs = remote_dirs

    def _synthetic(self, f: Finding) -> str:
        """``[cluster/]broker-<id>[/<log dir below the broker's common parent>]`` for a finding whose log
        dir is not on this machine (or unknown); the cluster when there are several, or when the finding
        names neither a broker nor a log dir."""
        parts = []
        cluster = f.evidence.get("cluster")
        nowhere = f.broker is None and not f.log_dir  # a cluster-level finding: under its cluster
        if cluster is not None and (len(self.clusters) > 1 or nowhere):  # clusters share broker ids
            parts.append(_segment(str(cluster)))
        if f.broker is not None:
            parts.append(f"broker-{f.broker}")
        if f.log_dir:
            parts.append(self._remote_dir(cluster, f.broker, f.log_dir))
        return "/".join(p.strip("/") for p in parts if p.strip("/"))

    def _remote_dir(self, cluster: Any, broker: int | None, log_dir: str) -> str:
        """A broker's log dir as found on its host: its base name, or its path below the common parent of
        that broker's log dirs when it has several (JBOD dirs may share a base name)."""
        norm = posixpath.normpath(log_dir.replace("\\", "/"))
        siblings = {
            posixpath.normpath(s.replace("\\", "/")) for s in self.remote_dirs.get((cluster, broker), ())
        }
        if len(siblings) > 1:
            try:
                base = posixpath.commonpath(sorted(posixpath.dirname(s) for s in siblings))
                rel = posixpath.relpath(norm, base)
            except ValueError:  # absolute and relative paths mixed
                rel = norm
        else:
            rel = posixpath.basename(norm)
        rel = "/".join(p for p in rel.split("/") if p not in ("", ".", ".."))
        return rel or "_"

    def _leaf(self, f: Finding, log_dir: str | None) -> str:
        """The path below the log dir: the file, else the partition directory, else ``meta.properties``."""
        if f.file:
            return relative_file(f.file, log_dir) or "meta.properties"
        if f.partition_key is not None:
            return _segment(f.partition_key)
        return "meta.properties"

    def path(self, f: Finding) -> tuple[str, bool]:
        """(POSIX path relative to the evidence root, whether it is below :attr:`root`)."""
        if f.time is None and self.local and self.root is not None:
            log_dir = os.path.abspath(f.log_dir) if f.log_dir else None
            if log_dir is None and f.broker is not None:
                log_dir = self.broker_dirs.get((f.evidence.get("cluster"), f.broker))
            if log_dir is not None and log_dir in self.prefix:
                if f.file and os.path.isabs(f.file) and not _under(os.path.abspath(f.file), log_dir):
                    target = os.path.abspath(f.file)
                    if _under(target, self.root):
                        return _posix(os.path.relpath(target, self.root)), True
                return posixpath.join(self.prefix[log_dir], self._leaf(f, log_dir)), True
            if f.file and os.path.isabs(f.file) and _under(os.path.abspath(f.file), self.root):
                return _posix(os.path.relpath(os.path.abspath(f.file), self.root)), True
        head = self._synthetic(f)
        leaf = self._leaf(f, f.log_dir)
        return (posixpath.join(head, leaf) if head else leaf), (
            self.local and f.time is None and self.root is not None
        )


def uri_of(path: str) -> str:
    """A relative path as a URI reference: every byte outside RFC 3986's unreserved set and ``/``
    percent-encoded (an undecodable file-name byte as itself)."""
    return quote(os.fsencode(path), safe="/")


def is_text_file(name: str) -> bool:
    """Whether Kafka writes the file ``name`` as text (checkpoints, ``*.properties``,
    ``partition.metadata``)."""
    base = os.path.basename(name)
    return base.endswith(".properties") or classify(base) in TEXT_KINDS


class LineNumbers:
    """Line numbers of byte positions in local text files, each file read at most once and at most
    :data:`MAX_TEXT_BYTES` (regular files only: never blocks on a FIFO; unreadable means unknown)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes | None] = {}

    def _read(self, path: str) -> bytes | None:
        if path not in self._data:
            try:
                data: bytes | None = read_regular(path, MAX_TEXT_BYTES + 1)
            except (OSError, ValueError):
                data = None
            self._data[path] = data if data is not None and len(data) <= MAX_TEXT_BYTES else None
        return self._data[path]

    def line(self, path: str, position: int) -> int | None:
        data = self._read(path)
        if data is None or position > len(data):
            return None
        return data.count(b"\n", 0, position) + 1

    def column(self, path: str, position: int) -> int | None:
        """The 1-based column of ``position`` in Unicode code points (the run's ``columnKind``): the line's
        bytes before it decoded as UTF-8, an invalid byte counting as one."""
        data = self._data.get(path)
        if data is None or position > len(data):
            return None
        prefix = data[data.rfind(b"\n", 0, position) + 1 : position]
        return len(prefix.decode("utf-8", errors="replace")) + 1

    def entry_line(self, path: str, topic: str, partition: int) -> int | None:
        """The line of the entry ``<topic> <partition> <offset>`` of an offset checkpoint (spec: version
        line, count line, then one entry per line), or None when the file has no such entry."""
        data = self._read(path)
        if data is None:
            return None
        try:
            key = f"{topic} {partition} ".encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return None
        if data.startswith(key):
            return 1
        at = data.find(b"\n" + key)
        return None if at < 0 else data.count(b"\n", 0, at + 1) + 1


def _region(f: Finding, lines: LineNumbers, local: bool) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": 1}
    position = f.position if isinstance(f.position, int) and f.position >= 0 else None
    readable = bool(f.file) and local and f.time is None
    if f.file and readable and is_text_file(f.file) and position is not None:
        line = lines.line(f.file, position)
        if line is not None:
            region["startLine"] = line
            region["startColumn"] = lines.column(f.file, position)
    elif (
        f.file
        and readable
        and position is None
        and classify(os.path.basename(f.file)) == "offset-checkpoint"
        and f.topic is not None
        and f.partition is not None
    ):
        line = lines.entry_line(f.file, f.topic, f.partition)
        if line is not None:
            region["startLine"] = line
            region["startColumn"] = 1
    if position is not None:
        region["byteOffset"] = position
        length = f.evidence.get("trailingBytes")
        if f.file and not is_text_file(f.file) and isinstance(length, int) and length >= 0:
            region["byteLength"] = length
    return region


def _location(f: Finding, places: Places, lines: LineNumbers) -> dict[str, Any]:
    path, local = places.path(f)
    artifact: dict[str, Any] = {"uri": uri_of(path)}
    if local:
        artifact["uriBaseId"] = BASE_ID
    loc: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": artifact, "region": _region(f, lines, local)}
    }
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


# ----------------------------------------------------------------------------------------------- results


def _sort_key(result: dict[str, Any]) -> tuple:
    physical = result["locations"][0]["physicalLocation"]
    region = physical["region"]
    return (
        -Severity.parse(result["properties"]["severity"]),
        result["ruleId"],
        physical["artifactLocation"]["uri"],
        region["startLine"],
        region.get("byteOffset", -1),
        result["partialFingerprints"][FINGERPRINT_KEY],
    )


def sarif_dict(report: Report) -> dict[str, Any]:
    index = report.rule_index()
    rules = list(report.rules)
    places = Places(report)
    lines = LineNumbers()
    results = []
    for f in report.findings:
        if f.code not in index:
            from auditor.rules.registry import get

            index[f.code] = len(rules)
            rules.append(get(f.code))
        fingerprint = f.fingerprint()
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": LEVELS[f.severity],
                "kind": "fail",
                "message": {"text": visible(f.message) or f.code},
                "locations": [_location(f, places, lines)],
                "partialFingerprints": {FINGERPRINT_KEY: fingerprint, "primaryLocationLineHash": fingerprint},
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
                    "time": f.time,
                    "evidence": f.to_dict()["evidence"],
                },
            }
        )
    results.sort(key=_sort_key)
    notifications = [{"level": "error", "message": {"text": visible(e)}} for e in report.errors]
    omitted = len(results) - MAX_RESULTS
    if omitted > 0:
        results = results[:MAX_RESULTS]
        notifications.append(
            {
                "level": "warning",
                "message": {
                    "text": f"{omitted} least severe results omitted: GitHub code scanning rejects a run "
                    f"with more than {MAX_RESULTS} results (the JSON report has them all)"
                },
            }
        )
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": report.tool_version,
                "semanticVersion": report.tool_version,
                "informationUri": TOOL_URI,
                "rules": [_rule(r) for r in rules],
            }
        },
        "invocations": [
            {
                "executionSuccessful": not report.incomplete,
                "exitCode": report.exit_code,
                "commandLine": report.command_line or f"{TOOL_NAME} {report.command}",
                "toolExecutionNotifications": notifications,
            }
        ],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {
            "schemaVersion": SCHEMA_VERSION,
            "command": report.command,
            "stats": report.stats,
            "omittedResults": max(omitted, 0),
            # audit: the answer first (auditor.report.verdicts), as in the JSON report
            **({"verdicts": report.sections["verdicts"]} if "verdicts" in report.sections else {}),
        },
    }
    if places.root is not None:
        base = Path(places.root).as_uri()
        run["originalUriBaseIds"] = {
            BASE_ID: {
                "uri": base if base.endswith("/") else base + "/",
                "description": {"text": "The common parent of the log directories read"},
            }
        }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render_sarif(report: Report, out: IO[str]) -> None:
    json.dump(sarif_dict(report), out, indent=2, default=str)
    out.write("\n")
