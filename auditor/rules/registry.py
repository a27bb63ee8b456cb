"""The one registry of checks: code -> :class:`Rule`, with lifecycle, selection by prefix and doc tables.

A rule is a small function registered with :func:`rule`; its docstring has four sections, in this order::

    What it finds: ...
    Why it matters: ... (the Kafka mechanism: high watermark, log end offset, leader epoch, recovery ...)
    What to do: ...
    References: KIP-..., KAFKA-...

Codes are stable: ``KA`` + three digits, the first digit naming the family (:data:`FAMILIES`). A rule's
``check`` yields :class:`Violation` objects; the engine turns them into :class:`~auditor.findings.Finding`
objects with the rule's code, name and severity and the location it is checking (:meth:`Rule.finding`).

Check signatures by ``scope``:

* ``segment``:   ``check(seg: SegmentFacts, part: PartitionContext)``, once per ``.log`` (or KRaft snapshot);
* ``partition``: ``check(part: PartitionContext)``, once per partition directory;
* ``logdir``:    ``check(logdir: LogDirContext)``, once per log directory;
* ``identity``:  ``check(f: ReplicaFacts)``, once per replica directory of ``audit``, before any comparison
  (``auditor.rules.replica.identity``: old incarnations, unassigned, ``-future`` and ``-delete`` replicas);
* ``coverage``:  ``check(c: ClusterCoverage)``, once per cluster of ``audit`` (KRaft metadata in the inputs);
* ``replicas``:  ``check(part: PartitionReplicas)``, once per partition of ``audit`` (every replica of it, the
  reference leader, caches, divergences, truncation points: ``auditor.rules.replica.model``);
* ``lag``:       ``check(lag: LagRow)``, once per follower behind the leader, after Spark counted the lag;
* ``loss``:      ``check(run: LostRun)``, once per run of lost follower batches counted by Spark;
* ``cluster``:   ``check(cluster: ClusterLeaders)``, once per cluster of ``audit``;
* ``history``:   ``check(h: History)``, once per chunk of whole partitions of a warehouse (``report``, on
  Spark): vectorised over the chunk's checkpoint series (``auditor.rules.history.model``);
* ``fleet``:     ``check(h: History)``, once per ``report``, over the captures and brokers only;
* ``ingest``:    ``check(h: History)``, once per ``report``, over the problems recorded by ``ingest``;
* ``engine``:    emitted by the scan engine itself (unreadable files, a check that failed), no ``check``.

``python -m auditor.rules.registry --markdown`` prints the table of checks (``--list-rules``); the pages of
``docs/checks/`` are written by ``python -m auditor.rules.docs --write docs/checks``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from auditor.findings import PLACE_FIELDS, Finding, Location, Place, Severity

FAMILIES: dict[str, str] = {
    "KA0": "scan",
    "KA1": "segment",
    "KA2": "index",
    "KA3": "checkpoint",
    "KA4": "partition",
    "KA5": "inventory",
    "KA6": "replication",
    "KA7": "replication",
    "KA8": "history",
}
"""Code prefix -> family. KA6xx-KA7xx are reserved for the cross-replica checks of ``audit``, KA8xx for the
checks of ``report`` over the checkpoint history of an ingest warehouse. A family's rules may name a
narrower subject before the dot (``timeindex``, ``epoch-cache``, ``kraft``, ``transaction``, ``group``);
``--select FAMILY`` selects every rule of the family whatever its name."""

RULE_MODULES: list[str] = [
    "auditor.rules.engine",
    "auditor.rules.segment",
    "auditor.rules.index.offset_index",
    "auditor.rules.index.time_index",
    "auditor.rules.index.txn_index",
    "auditor.rules.snapshot",
    "auditor.rules.checkpoint",
    "auditor.rules.partition",
    "auditor.rules.inventory",
    "auditor.rules.replica.identity",
    "auditor.rules.replica.divergence",
    "auditor.rules.replica.kraft",
    "auditor.rules.replica.lag",
    "auditor.rules.replica.inputs",
    "auditor.rules.replica.hw",
    "auditor.rules.replica.loss",
    "auditor.rules.replica.transactions",
    "auditor.rules.replica.groups",
    "auditor.rules.replica.timeline",
    "auditor.rules.history.offsets",
    "auditor.rules.history.epochs",
    "auditor.rules.history.fleet",
    "auditor.rules.history.ordering",
]
"""Modules that register rules when imported."""

AUDIT_SCOPES = ("identity", "coverage", "replica-set", "replicas", "lag", "loss", "txn", "groups", "cluster")
"""The scopes of ``audit``'s cross-replica rules (KA6xx/KA7xx), run by ``auditor.spark.partition_rules``."""
HISTORY_SCOPES = ("history", "fleet", "ingest")
"""The scopes of ``report``'s rules over an ingest warehouse (KA8xx): ``history`` (per chunk of partitions,
on Spark), ``fleet`` (captures and brokers, once per report) and ``ingest`` (problems recorded at ingest)."""
SCOPES = ("segment", "partition", "logdir", *AUDIT_SCOPES, *HISTORY_SCOPES, "engine")
EVERY_COMMAND = ("KA002",)
"""Rules that every command reports whatever its scopes: KA002, a check that crashed (``auditor.rules.runner``
turns the crash into it in every engine)."""
LIFECYCLES = ("stable", "preview", "deprecated")
DOC_SECTIONS = ("What it finds", "Why it matters", "What to do", "References")
_CODE = re.compile(r"KA[0-9]{3}")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*")
_SECTION = re.compile(r"^(" + "|".join(DOC_SECTIONS) + r"):\s*", re.MULTILINE)

_UNSET: Any = object()


@dataclass(slots=True)
class Violation(Place):
    """What a check yields: a message plus whatever locates (its :class:`~auditor.findings.Place`) and proves
    it.

    ``expected``/``found`` land in the finding's evidence (when given); ``evidence`` adds more keys;
    ``severity`` overrides the rule's default for this one occurrence (e.g. a stale index entry is only a
    warning on an active segment that recovery will rebuild). ``topic``/``partition``/``broker`` override the
    location of the context (a log-dir check pointing at one partition's checkpoint line); ``log_dir``
    overrides the log directory (None: no single one). Cross-replica rules also name the ``peer`` replica
    (the leader or the other member of a pair) and the ``records``/``bytes`` concerned.
    """

    message: str
    severity: Severity | None = None
    expected: Any = _UNSET
    found: Any = _UNSET
    evidence: dict[str, Any] = field(default_factory=dict)
    related: list[dict[str, Any]] = field(default_factory=list)
    log_dir: Any = field(default=_UNSET, kw_only=True)
    peer: int | None = None
    records: int | None = None
    bytes: int | None = None

    @property
    def evidence_dict(self) -> dict[str, Any]:
        """``evidence`` plus ``expected``/``found`` when given."""
        evidence = dict(self.evidence)
        if self.expected is not _UNSET:
            evidence["expected"] = self.expected
        if self.found is not _UNSET:
            evidence["found"] = self.found
        return evidence

    def located(self, where: Location) -> dict[str, Any]:
        """The finding's place (:class:`~auditor.findings.Place` fields): the violation's, with the context's
        broker, topic and partition where it leaves them unset and the context's log dir unless it
        overrides it."""
        place = {name: getattr(self, name) for name in PLACE_FIELDS}
        for name in ("broker", "topic", "partition"):
            if place[name] is None:
                place[name] = getattr(where, name)
        place["log_dir"] = where.log_dir if self.log_dir is _UNSET else self.log_dir
        return place


@dataclass(frozen=True)
class Rule:
    """A registered check. ``severity`` is its default severity; ``doc`` the full docstring."""

    code: str
    name: str
    severity: Severity
    title: str
    scope: str
    lifecycle: str = "stable"
    check: Callable[..., Iterable[Violation]] | None = None
    doc: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return FAMILIES.get(self.code[:3], "other")

    @property
    def sections(self) -> dict[str, str]:
        """The docstring's four sections, whitespace-normalised."""
        return parse_doc(self.doc)

    def finding(self, violation: Violation, where: Location) -> Finding:
        """The finding for ``violation`` found at ``where``."""
        return Finding(
            code=self.code,
            name=self.name,
            severity=self.severity_of(violation),
            message=violation.message,
            **violation.located(where),
            evidence=violation.evidence_dict,
            related=list(violation.related),
        )

    def severity_of(self, violation: Violation) -> Severity:
        """The violation's severity: its override, else the rule's."""
        return violation.severity if violation.severity is not None else self.severity

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "title": self.title,
            "scope": self.scope,
            "family": self.family,
            "lifecycle": self.lifecycle,
            "aliases": list(self.aliases),
            **{_camel_section(k): v for k, v in self.sections.items()},
        }


REGISTRY: dict[str, Rule] = {}
"""code -> Rule, filled when the modules of :data:`RULE_MODULES` are imported."""
_BY_NAME: dict[str, str] = {}


def parse_doc(doc: str) -> dict[str, str]:
    """Split a rule docstring into its sections (missing sections are absent from the result)."""
    text = _dedent(doc)
    parts = _SECTION.split(text)
    out: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = " ".join(parts[i + 1].split())
    return out


def _dedent(doc: str) -> str:
    lines = (doc or "").expandtabs().splitlines()
    if not lines:
        return ""
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([lines[0].strip()] + [line[cut:] for line in lines[1:]])


def _camel_section(name: str) -> str:
    return {"What it finds": "whatItFinds", "Why it matters": "whyItMatters", "What to do": "whatToDo"}.get(
        name, name.lower()
    )


def register(rule_obj: Rule) -> Rule:
    """Add a rule, enforcing the conventions (code and name format, family, unique code/name, doc
    sections)."""
    if not _CODE.fullmatch(rule_obj.code):
        raise ValueError(f"rule code {rule_obj.code!r} is not KA + 3 digits")
    if rule_obj.code[:3] not in FAMILIES:
        raise ValueError(f"rule code {rule_obj.code!r} is outside the known families")
    if not _NAME.fullmatch(rule_obj.name):
        raise ValueError(f"rule name {rule_obj.name!r} is not 'family.short-name'")
    if rule_obj.scope not in SCOPES:
        raise ValueError(f"{rule_obj.code}: unknown scope {rule_obj.scope!r}")
    if rule_obj.lifecycle not in LIFECYCLES:
        raise ValueError(f"{rule_obj.code}: unknown lifecycle {rule_obj.lifecycle!r}")
    missing = [s for s in DOC_SECTIONS if s not in parse_doc(rule_obj.doc)]
    if missing:
        raise ValueError(f"{rule_obj.code}: docstring lacks section(s) {', '.join(missing)}")
    existing = REGISTRY.get(rule_obj.code)
    if existing is not None and existing.name != rule_obj.name:
        raise ValueError(f"duplicate rule code {rule_obj.code} ({existing.name}, {rule_obj.name})")
    other = _BY_NAME.get(rule_obj.name)
    if other is not None and other != rule_obj.code:
        raise ValueError(f"duplicate rule name {rule_obj.name} ({other}, {rule_obj.code})")
    REGISTRY[rule_obj.code] = rule_obj
    _BY_NAME[rule_obj.name] = rule_obj.code
    return rule_obj


def rule(
    code: str,
    name: str,
    severity: Severity,
    title: str,
    *,
    scope: str,
    lifecycle: str = "stable",
    aliases: tuple[str, ...] = (),
) -> Callable[[Callable[..., Iterable[Violation]]], Callable[..., Iterable[Violation]]]:
    """Decorator registering a check function (its docstring is the rule's documentation)."""

    def wrap(fn: Callable[..., Iterable[Violation]]) -> Callable[..., Iterable[Violation]]:
        register(Rule(code, name, severity, title, scope, lifecycle, fn, fn.__doc__ or "", aliases))
        fn.rule_code = code  # type: ignore[attr-defined]
        return fn

    return wrap


def declare(
    code: str,
    name: str,
    severity: Severity,
    title: str,
    doc: str,
    *,
    scope: str = "engine",
    lifecycle: str = "stable",
) -> Rule:
    """Register a rule without a check function (emitted by an engine, e.g. a Spark job of ``audit``)."""
    return register(Rule(code, name, severity, title, scope, lifecycle, None, doc))


def load_rules(extra_modules: Iterable[str] = ()) -> dict[str, Rule]:
    """Import every rule module (idempotent) and return the registry."""
    for module in [*RULE_MODULES, *extra_modules]:
        importlib.import_module(module)
    return REGISTRY


def scope_rules(scope: str) -> list[Rule]:
    """The rules with a check function of ``scope``, in code order (what an engine runs)."""
    load_rules()
    return [r for _c, r in sorted(REGISTRY.items()) if r.scope == scope and r.check is not None]


def all_rules(extra_modules: Iterable[str] = ()) -> list[Rule]:
    return [REGISTRY[c] for c in sorted(load_rules(extra_modules))]


def get(code_or_name: str) -> Rule:
    load_rules()
    key = code_or_name.strip()
    if key.upper() in REGISTRY:
        return REGISTRY[key.upper()]
    if key in _BY_NAME:
        return REGISTRY[_BY_NAME[key]]
    for r in REGISTRY.values():
        if key in r.aliases:
            return r
    raise KeyError(f"no rule {code_or_name!r}")


# ------------------------------------------------------------------------------------------ selection


def _split(selectors: Iterable[str] | None) -> list[str]:
    out: list[str] = []
    for item in selectors or ():
        out.extend(s.strip() for s in str(item).split(",") if s.strip())
    return out


def _matches(selector: str, r: Rule) -> tuple[bool, bool]:
    """(matches, exact): a code prefix (``KA1``, ``KA10``, ``KA101``), ``ALL``, a rule name, an alias, a
    family (:data:`FAMILIES`: ``replication`` is every KA6xx and KA7xx rule, ``index`` every KA2xx one) or
    a name prefix (``kraft``, ``epoch-cache``: the part of names before the dot)."""
    sel_upper = selector.upper()
    if sel_upper == "ALL":
        return True, False
    if _CODE.fullmatch(sel_upper):
        return r.code == sel_upper, True
    if re.fullmatch(r"KA[0-9]{0,2}", sel_upper):
        return r.code.startswith(sel_upper), False
    if selector == r.name or selector in r.aliases:
        return True, True
    if "." not in selector and selector in (r.name.split(".", 1)[0], r.family):
        return True, False
    return False, False


@dataclass(frozen=True)
class Selection:
    """The set of enabled rule codes after ``--select``/``--ignore``."""

    codes: frozenset[str]

    def __contains__(self, code: str) -> bool:
        return code in self.codes

    def rules(self, scope: str | None = None) -> list[Rule]:
        return [REGISTRY[c] for c in sorted(self.codes) if scope is None or REGISTRY[c].scope == scope]


def select_rules(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    *,
    scopes: Iterable[str] | None = None,
) -> Selection:
    """Enabled rules: those matched by ``select`` (default: every stable rule) minus those matched by
    ``ignore``.

    Preview and deprecated rules run only when selected by their exact code or name. A selector that matches
    no rule raises ``ValueError`` (a usage error for the CLI). ``scopes`` restricts the result (``scan`` does
    not run the cross-replica rules of :data:`AUDIT_SCOPES`); the rules of :data:`EVERY_COMMAND` stay.
    """
    load_rules()
    sel, ign = _split(select), _split(ignore)
    for selector in [*sel, *ign]:
        if not any(_matches(selector, r)[0] for r in REGISTRY.values()):
            raise ValueError(f"--select/--ignore: {selector!r} matches no rule")
    enabled: set[str] = set()
    for r in REGISTRY.values():
        if not sel:
            chosen = r.lifecycle == "stable"
        else:
            hits = [_matches(s, r) for s in sel]
            chosen = any(m and (exact or r.lifecycle == "stable") for m, exact in hits)
        if chosen and not any(_matches(s, r)[0] for s in ign):
            enabled.add(r.code)
    if scopes is not None:
        allowed = set(scopes)
        enabled = {c for c in enabled if REGISTRY[c].scope in allowed or c in EVERY_COMMAND}
    return Selection(frozenset(enabled))


# ------------------------------------------------------------------------------------------ docs


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rules: Iterable[Rule] | None = None) -> str:
    """The table of checks: code, name, severity, scope, meaning and remedy (``--list-rules``). The pages
    of ``docs/checks/`` are :mod:`auditor.rules.docs`'s."""
    rows = ["| Code | Name | Severity | Scope | Meaning | What to do |", "|---|---|---|---|---|---|"]
    for r in rules if rules is not None else all_rules():
        lifecycle = "" if r.lifecycle == "stable" else f" ({r.lifecycle})"
        rows.append(
            f"| {r.code} | `{r.name}`{lifecycle} | {r.severity.label} | {r.scope} | {_cell(r.title)} | "
            f"{_cell(r.sections.get('What to do', ''))} |"
        )
    return "\n".join(rows) + "\n"


def markdown_details(rules: Iterable[Rule] | None = None) -> str:
    """One section per rule with its full documentation."""
    out: list[str] = []
    for r in rules if rules is not None else all_rules():
        out.append(f"### {r.code} `{r.name}` ({r.severity.label})\n\n{r.title}.\n")
        for name, text in r.sections.items():
            out.append(f"* **{name}:** {text}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m auditor.rules.registry", description="Print the registry of kafka-auditor checks."
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--markdown", action="store_true", help="the table of checks (default)")
    group.add_argument("--details", action="store_true", help="full documentation of every rule, Markdown")
    group.add_argument("--json", action="store_true", help="every rule as JSON")
    args = parser.parse_args(argv)
    rules = all_rules()
    if args.json:
        sys.stdout.write(json.dumps([r.to_dict() for r in rules], indent=2) + "\n")
    elif args.details:
        sys.stdout.write(markdown_details(rules))
    else:
        sys.stdout.write(markdown_table(rules))
    return 0


if __name__ == "__main__":
    from auditor.rules import registry as _registry  # the imported module holds the registered rules

    sys.exit(_registry.main())
