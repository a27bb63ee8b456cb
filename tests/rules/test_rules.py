"""One parametrised test drives every rule: each case of ``FIRE`` must make its code fire, each case of
``SILENT`` must leave it silent. The cases of the rules of ``auditor/rules/<package>/<module>.py`` are in
``tests/rules/<package>/cases_<module>.py`` (``tests.rules.harness``): scan's run through ``scan``, audit's
cross-replica ones through ``auditor.spark.partition_rules`` without Spark (``replica.builders.Audit``) and
report's history ones over small checkpoint histories (``history.builders.Story``); every registered rule has
both."""

from __future__ import annotations

import pytest

from auditor.findings import Severity
from auditor.rules.registry import AUDIT_SCOPES, HISTORY_SCOPES, REGISTRY, all_rules
from auditor.scan import SCAN_SCOPES, scan
from tests.rules.harness import load_cases
from tests.rules.replica.builders import Audit, audit_findings

FIRE, SILENT = load_cases()

SCAN_RULES = sorted(r.code for r in all_rules() if r.scope in SCAN_SCOPES)
AUDIT_RULES = sorted(r.code for r in all_rules() if r.scope in AUDIT_SCOPES)
HISTORY_RULES = sorted(r.code for r in all_rules() if r.scope in HISTORY_SCOPES)


def _params(table: dict, expect: str) -> list:
    return [
        pytest.param(code, fn, expect, id=f"{code}-{expect}-{fn.__name__}")
        for code in sorted(table)
        for fn in table[code]
    ]


def _findings(subject, code: str) -> list[tuple[str, str]]:
    """(code, message) of every finding of a case: a list of log dirs is scanned, an :class:`Audit` runs the
    cross-replica rules. Each finding of ``code`` is checked to be the registered rule's."""
    rule = REGISTRY[code]
    if isinstance(subject, Audit) or hasattr(subject, "finding_rows"):
        # an audit case: the cross-replica rules over small typed inputs (replica.builders' Audit), or any
        # case object that evaluates its own scope's rules (``finding_rows()``: rows.FINDING dicts)
        rows = audit_findings(subject) if isinstance(subject, Audit) else subject.finding_rows()
        for row in rows:
            if row["code"] == code:
                assert row["message"] and Severity.parse(row["severity"]), row
                assert rule.scope in (*AUDIT_SCOPES, *HISTORY_SCOPES) and row["cluster"] == "c", row
        return [(row["code"], row["message"]) for row in rows]
    result = scan(subject, jobs=1)
    for f in result.findings:
        if f.code == code:
            assert f.message and f.name == rule.name
            assert f.log_dir is not None
    return [(f.code, f.message) for f in result.findings]


@pytest.mark.parametrize(("code", "case", "expect"), _params(FIRE, "fires") + _params(SILENT, "silent"))
def test_rule_fixture(code, case, expect, tmp_path, monkeypatch):
    findings = _findings(case(tmp_path, monkeypatch), code)
    hits = [(c, m) for c, m in findings if c == code]
    if expect == "fires":
        assert hits, f"{code} did not fire; findings: {findings}"
    else:
        assert not hits, f"{code} fired on a benign fixture: {hits}"


def test_every_rule_has_fixtures():
    rules = SCAN_RULES + AUDIT_RULES + HISTORY_RULES
    assert sorted(set(FIRE) | set(SILENT)) == sorted(rules), (
        "the cases must name exactly the registered rules"
    )
    assert AUDIT_RULES and all(REGISTRY[c].check is not None for c in AUDIT_RULES)
    assert HISTORY_RULES and all(REGISTRY[c].check is not None for c in HISTORY_RULES)
    missing_fire = [c for c in rules if not FIRE.get(c)]
    missing_silent = [c for c in rules if not SILENT.get(c)]
    assert not missing_fire, f"rules without a firing fixture: {missing_fire}"
    assert not missing_silent, f"rules without a silent fixture: {missing_silent}"


def test_baseline_has_no_findings_at_all(tmp_path, monkeypatch):
    from tests.rules.benign import baseline, txn_baseline

    for case in (baseline, txn_baseline):
        root = tmp_path / case.__name__
        result = scan(case(root, monkeypatch), jobs=1)
        assert result.findings == [], [(f.code, f.message) for f in result.findings]
        assert not result.incomplete
