"""One parametrised test drives every rule: each fixture of ``cases.FIRE`` must make its code fire, each
fixture of ``cases.SILENT`` must leave it silent; every registered scan rule has both."""

from __future__ import annotations

import pytest

from auditor.rules.registry import REGISTRY, all_rules
from auditor.scan import SCAN_SCOPES, scan
from tests.rules.cases import ALL_CODES, FIRE, SILENT

SCAN_RULES = sorted(r.code for r in all_rules() if r.scope in SCAN_SCOPES)


def _params(table: dict, expect: str) -> list:
    return [
        pytest.param(code, fn, expect, id=f"{code}-{expect}-{fn.__name__}")
        for code in sorted(table)
        for fn in table[code]
    ]


@pytest.mark.parametrize(("code", "case", "expect"), _params(FIRE, "fires") + _params(SILENT, "silent"))
def test_rule_fixture(code, case, expect, tmp_path, monkeypatch):
    paths = case(tmp_path, monkeypatch)
    result = scan(paths, jobs=1)
    codes = {f.code for f in result.findings}
    if expect == "fires":
        assert code in codes, (
            f"{code} did not fire; findings: {[(f.code, f.message) for f in result.findings]}"
        )
        for f in result.findings:
            if f.code == code:
                assert f.message and f.name == REGISTRY[code].name
                assert f.log_dir is not None
    else:
        hits = [(f.code, f.message) for f in result.findings if f.code == code]
        assert not hits, f"{code} fired on a benign fixture: {hits}"


def test_every_scan_rule_has_fixtures():
    assert sorted(ALL_CODES) == SCAN_RULES, "cases.ALL_CODES must list exactly the registered scan rules"
    missing_fire = [c for c in SCAN_RULES if not FIRE.get(c)]
    missing_silent = [c for c in SCAN_RULES if not SILENT.get(c)]
    assert not missing_fire, f"rules without a firing fixture: {missing_fire}"
    assert not missing_silent, f"rules without a silent fixture: {missing_silent}"


def test_baseline_has_no_findings_at_all(tmp_path, monkeypatch):
    from tests.rules.cases import baseline, txn_baseline

    for case in (baseline, txn_baseline):
        root = tmp_path / case.__name__
        result = scan(case(root, monkeypatch), jobs=1)
        assert result.findings == [], [(f.code, f.message) for f in result.findings]
        assert not result.incomplete
