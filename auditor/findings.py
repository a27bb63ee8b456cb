"""What every check reports: a :class:`Finding` with a :class:`Severity` and a location in Kafka's terms.

Findings are plain data. Checks yield them, renderers (``auditor.report``) print them; the cross-replica
``audit`` command computes them as Spark rows (``auditor.observe.rows.FINDING``) and turns the collected rows
into findings with :meth:`Finding.from_row`. Nothing here prints or touches files.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any

from auditor.text import camel


class Severity(IntEnum):
    """How bad a finding is; ordered so that ``Severity.ERROR >= Severity.WARNING``.

    * ``info``: a fact worth knowing that needs no action (pending deletions, recovery that will run);
    * ``warning``: something Kafka tolerates or repairs by itself but that is evidence of a crash or a bug;
    * ``error``: data or metadata that is wrong: Kafka will truncate, refuse to load, or serve wrong data;
    * ``critical``: committed data is corrupt or will be destroyed when the broker starts.
    """

    INFO = 10
    WARNING = 20
    ERROR = 30
    CRITICAL = 40

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str | Severity) -> Severity:
        if isinstance(text, Severity):
            return text
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            names = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of {names})") from None

    def __str__(self) -> str:
        return self.label


@dataclass(slots=True, kw_only=True)
class Location:
    """Where a check runs: the finding fields a context fills in."""

    broker: int | None = None
    log_dir: str | None = None
    topic: str | None = None
    partition: int | None = None


@dataclass(slots=True, kw_only=True)
class Place(Location):
    """Where in the evidence: a :class:`Location` plus the ``file``, the byte ``position`` in it, an
    inclusive range of Kafka offsets ``offset_start``/``offset_end`` and a leader ``epoch``. What a finding
    and a rule's violation share."""

    file: str | None = None
    position: int | None = None
    offset_start: int | None = None
    offset_end: int | None = None
    epoch: int | None = None


@dataclass(slots=True)
class Finding(Place):
    """One problem (or fact) found by a rule, located as precisely as the evidence allows (its
    :class:`Place`).

    ``evidence`` holds at least ``expected`` and ``found`` when the rule compares two values, plus whatever
    else explains the finding (JSON-serialisable values only); ``time`` is the capture time of history
    evidence. ``related`` lists other locations involved (e.g. the same offset on another replica), each a
    dict with the same location keys as :meth:`to_dict`.
    """

    code: str
    severity: Severity
    message: str
    name: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    related: list[dict[str, Any]] = field(default_factory=list)
    time: str | None = None
    """When the evidence was captured (ISO-8601 UTC), for findings over checkpoint history (``report``)."""

    # ------------------------------------------------------------------------------- identity

    @property
    def partition_key(self) -> str | None:
        """``topic-partition`` as Kafka names the directory, or None for log-dir level findings."""
        if self.topic is None:
            return None
        return f"{self.topic}-{self.partition}" if self.partition is not None else self.topic

    def fingerprint(self) -> str:
        """A stable id from the finding's identity (:meth:`identity`), never from the message or an
        absolute path: equal findings of two runs share it, wherever the evidence was copied."""
        key = json.dumps(self.identity(), separators=(",", ":"), default=str)
        # surrogatepass: a file name with undecodable bytes (PEP 383) still has a fingerprint
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def identity(self) -> list[Any]:
        """What makes two findings the same, as JSON-ready values: the code, the cluster (evidence
        ``cluster``), broker, the log dir's base name only when the broker is unknown (the broker id names
        the log dir: a scan on the broker host and one of a copy under another name agree; the JBOD limit:
        two log dirs of one broker share the fingerprint of a same-code finding in their root files),
        topic, partition, the file relative to the log dir (POSIX; its base name when outside it), byte
        position, offsets, epoch, the peer replica (evidence ``peer``, else the brokers of ``related``) and
        the capture time. Absolute paths never enter: copying the evidence elsewhere changes nothing."""
        peer = self.evidence.get("peer")
        if peer is None:
            brokers = {r.get("broker") for r in self.related if isinstance(r, dict)} - {None}
            peer = sorted(brokers, key=str)
            peer = peer[0] if len(peer) == 1 else peer or None
        return [
            self.code,
            self.evidence.get("cluster"),
            self.broker,
            _base_name(self.log_dir) if self.broker is None else None,
            self.topic,
            self.partition,
            relative_file(self.file, self.log_dir),
            self.position,
            self.offset_start,
            self.offset_end,
            self.epoch,
            peer,
            self.time,
        ]

    def sort_key(self) -> tuple:
        """Log dir, partition, file, position, then most severe first."""
        return (
            self.log_dir or "",
            self.broker if self.broker is not None else -1,
            self.topic or "",
            self.partition if self.partition is not None else -1,
            self.file or "",
            self.position if self.position is not None else -1,
            self.offset_start if self.offset_start is not None else -1,
            -int(self.severity),
            self.code,
        )

    # ---------------------------------------------------------------------------- serialising

    def to_dict(self) -> dict[str, Any]:
        """JSON form (camelCase keys at every depth, evidence and related included: :func:`camel_keys`;
        severity as its label), the one used by every machine format."""
        out: dict[str, Any] = {camel(name): getattr(self, name) for name in PLAIN_FIELDS}
        out["severity"] = self.severity.label
        out["evidence"] = camel_keys(jsonable(self.evidence))
        out["related"] = camel_keys(jsonable(self.related))
        out["fingerprint"] = self.fingerprint()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """The inverse of :meth:`to_dict` (the fingerprint is recomputed; evidence and related keep the
        camelCase keys of the dict)."""
        values = {name: data.get(camel(name)) for name in PLAIN_FIELDS}
        values["name"] = values["name"] or ""
        return cls._of(values, data.get("evidence"), data.get("related"))

    @classmethod
    def from_row(cls, row: Mapping[str, Any], name: str = "") -> Finding:
        """A row of the cross-replica findings (``auditor.observe.rows.FINDING``, Spark's layout: severity as
        its label, ``evidence`` a JSON object in a string) as a finding. The row's ``cluster``, ``records``,
        ``bytes`` and ``peer`` (the other replica) join the evidence when set; ``peer`` is also
        ``related``."""
        evidence = json.loads(row.get("evidence") or "{}")
        for key in ("cluster", "records", "bytes", "peer"):
            if row.get(key) is not None:
                evidence.setdefault(key, row[key])
        related = []
        if row.get("peer") is not None:
            related.append({"broker": row["peer"], "topic": row["topic"], "partition": row["partition"]})
        values = {f: row.get(f) for f in PLAIN_FIELDS}
        values["name"] = name
        return cls._of(values, evidence, related)

    @classmethod
    def _of(cls, values: dict[str, Any], evidence: Any, related: Any) -> Finding:
        values["severity"] = Severity.parse(values["severity"])
        return cls(**values, evidence=dict(evidence or {}), related=list(related or []))


def relative_file(file: str | None, log_dir: str | None) -> str | None:
    """``file`` as a POSIX path relative to ``log_dir`` when it lies under it (``t0-0/0000.log``), a
    relative ``file`` normalised as given, else its base name; None without a file. Pure string work: no file
    system access, symlinks are not resolved."""
    if file is None:
        return None
    if log_dir is not None:
        base, path = os.path.abspath(log_dir), os.path.abspath(file)
        if path.startswith(base.rstrip(os.sep) + os.sep):
            return posixpath.join(*os.path.relpath(path, base).split(os.sep))
    if not os.path.isabs(file):
        normal = os.path.normpath(file)
        if normal != os.pardir and not normal.startswith(os.pardir + os.sep):
            return posixpath.join(*normal.split(os.sep))
    return os.path.basename(os.path.normpath(file))


def _base_name(log_dir: str | None) -> str | None:
    """The last component of a log dir path (``kafka-logs`` of ``/data/1/kafka-logs/``)."""
    return None if log_dir is None else os.path.basename(os.path.normpath(log_dir))


PLACE_FIELDS = tuple(f.name for f in fields(Place))
"""The fields of :class:`Place`, in their order."""

PLAIN_FIELDS = ("code", "name", "severity", "message", *PLACE_FIELDS, "time")
"""The plain fields of a finding (all but evidence and related) in the order of :meth:`Finding.to_dict`."""


def camel_keys(value: Any) -> Any:
    """``value`` (JSON-ready data) with every dict key at every depth through :func:`camel`."""
    if isinstance(value, dict):
        return {camel(k) if isinstance(k, str) else k: camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def optional_int(value: Any) -> int | None:
    """An optional integer from a Spark/pandas value (None and NaN are missing)."""
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
    except TypeError:
        pass
    return int(value)


def jsonable(value: Any) -> Any:
    """Evidence values as JSON-ready data: tuples to lists, bytes to hex, sets sorted, numpy scalars to
    int, exceptions to one line (type and first message line)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, Severity):
        return value.label
    if isinstance(value, BaseException):  # one line, never a stack trace (a Java one included)
        from auditor.errors import describe_error

        return describe_error(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    return value


def counts_by_severity(findings: list[Finding]) -> dict[str, int]:
    """``{"critical": n, "error": n, "warning": n, "info": n}`` (every severity present, most severe
    first)."""
    out = {s.label: 0 for s in sorted(Severity, reverse=True)}
    for f in findings:
        out[f.severity.label] += 1
    return out


def counts_by_code(findings: list[Finding]) -> dict[str, dict[str, Any]]:
    """Per code: its name, worst severity and count, sorted by code."""
    out: dict[str, dict[str, Any]] = {}
    for f in findings:
        entry = out.setdefault(f.code, {"name": f.name, "severity": f.severity, "count": 0})
        entry["count"] += 1
        entry["severity"] = max(entry["severity"], f.severity)
    return {
        code: {**v, "severity": v["severity"].label} for code, v in sorted(out.items(), key=lambda kv: kv[0])
    }


def worst(findings: list[Finding]) -> Severity | None:
    return max((f.severity for f in findings), default=None)
