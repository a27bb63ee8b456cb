"""The one rule runner: every engine (``scan``, ``audit`` per partition and per cluster, transactions,
groups, ``report``'s history) runs its registered checks through :func:`run`.

:func:`run` calls each rule's ``check`` over one subject and yields ``(rule, violation)`` pairs; a check
that raises yields KA002 (``scan.check-failed``, :func:`crash`) instead, with the same message and
evidence in every engine, and the other checks still run. The pairs then take one of two forms, each
written once: a :class:`~auditor.findings.Finding` at a :class:`~auditor.findings.Location`
(:meth:`~auditor.rules.registry.Rule.finding`, used by ``scan`` and ``report``) or a ``rows.FINDING`` row
for Spark (:func:`to_row`, used by ``audit``).

Adding a check is one decorated function (``@rule(..., scope=...)``) and its fire/silent cases: the
engine of its scope finds it in the registry (:func:`scope_rules`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from auditor.errors import describe_error, error_evidence
from auditor.findings import Finding, Location, jsonable
from auditor.rules.registry import REGISTRY, Rule, Violation, load_rules, scope_rules

CRASH_CODE = "KA002"
"""The rule a crashing check becomes (``scan.check-failed``, declared in :mod:`auditor.rules.engine`)."""

Hit = tuple[Rule, Violation]
"""What the runner yields: the rule (KA002's for a crash) and one of its violations."""


def crash(rule: Rule, exc: BaseException, file: str | None = None) -> Violation:
    """KA002's violation for ``rule`` raising ``exc``: the rule's code and name and the error in one line
    (never a stack trace); ``file`` is the file being checked, when there is one."""
    return Violation(
        f"check {rule.code} ({rule.name}) failed: {describe_error(exc)}",
        file=file,
        evidence={"rule": rule.code, **error_evidence(exc)},
    )


def crash_rule() -> Rule:
    """The registered KA002."""
    load_rules()
    return REGISTRY[CRASH_CODE]


def rules_of(scope: str, codes: Iterable[str] | None = None) -> list[Rule]:
    """The rules of ``scope`` with a check, in code order; only those of ``codes`` when given."""
    rules = scope_rules(scope)
    if codes is None:
        return rules
    wanted = set(codes)
    return [r for r in rules if r.code in wanted]


def run(rules: Iterable[Rule] | str, *args: Any, file: str | None = None) -> Iterator[Hit]:
    """Every check of ``rules`` (or of the scope so named) over ``args``, as ``(rule, violation)`` pairs in
    rule order. A check that raises keeps what it yielded before and adds KA002 (:func:`crash`); the
    others still run."""
    for r in rules_of(rules) if isinstance(rules, str) else rules:
        assert r.check is not None, f"{r.code} has no check"
        try:
            for violation in r.check(*args):
                yield r, violation
        except Exception as exc:  # noqa: BLE001 - a failing check must not stop the others
            yield crash_rule(), crash(r, exc, file)


def findings(hits: Iterable[Hit], where: Location) -> list[Finding]:
    """The pairs as findings located at ``where`` (the violation's own location wins)."""
    return [r.finding(v, where) for r, v in hits]


def to_row(
    rule: Rule,
    v: Violation,
    cluster: str | None,
    topic: str | None = None,
    partition: int | None = None,
    log_dirs: Mapping[int, str | None] | None = None,
) -> dict:
    """A violation of ``rule`` as a ``rows.FINDING`` row (Spark's layout: severity as its label, evidence
    as JSON text); the log dir defaults to the one of the violation's broker among ``log_dirs``."""
    default_dir = (log_dirs or {}).get(v.broker) if v.broker is not None else None
    place = v.located(Location(log_dir=default_dir, topic=topic, partition=partition))
    return {
        "cluster": cluster,
        "code": rule.code,
        "severity": rule.severity_of(v).label,
        "topic": place["topic"],
        "partition": place["partition"],
        "broker": v.broker,
        "peer": v.peer,
        "log_dir": place["log_dir"],
        "offset_start": v.offset_start,
        "offset_end": v.offset_end,
        "epoch": v.epoch,
        "records": v.records,
        "bytes": v.bytes,
        "message": v.message,
        "evidence": json.dumps(jsonable(v.evidence_dict), sort_keys=True),
    }


def rows(
    hits: Iterable[Hit],
    cluster: str | None,
    topic: str | None = None,
    partition: int | None = None,
    log_dirs: Mapping[int, str | None] | None = None,
) -> list[dict]:
    """The pairs as ``rows.FINDING`` rows (:func:`to_row`)."""
    return [to_row(r, v, cluster, topic, partition, log_dirs) for r, v in hits]
