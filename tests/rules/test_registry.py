"""The registry: conventions every rule follows, selection by prefix, and the table of checks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.findings import Finding, Severity
from auditor.rules.registry import (
    AUDIT_SCOPES,
    DOC_SECTIONS,
    FAMILIES,
    HISTORY_SCOPES,
    REGISTRY,
    RULE_MODULES,
    Location,
    Rule,
    Violation,
    all_rules,
    get,
    load_rules,
    markdown_table,
    parse_doc,
    register,
    select_rules,
)
from tests.rules.harness import case_module, case_modules, load_cases, rule_module

REPO = Path(__file__).resolve().parents[2]


def test_every_rule_is_documented():
    rules = all_rules()
    assert len(rules) >= 60
    for r in rules:
        sections = parse_doc(r.doc)
        assert list(sections) == list(DOC_SECTIONS), r.code
        assert all(len(text) > 20 for name, text in sections.items() if name != "References"), r.code
        refs = sections["References"]
        # Kafka's own words: a KIP, a JIRA or a class (``LeaderEpochFileCache.endOffsetFor``), never a
        # section of a document users do not have
        assert re.search(r"KIP-\d+|KAFKA-\d+|``[A-Z][A-Za-z]+(\.[a-z][A-Za-z]*)?``|CVE-|^none\b", refs), (
            r.code,
            refs,
        )
        assert "§" not in r.doc and not re.search(r"\bspec\b", r.doc), r.code
        assert r.title and r.title[0].isupper() and not r.title.endswith("."), r.code
        # the cross-replica checks (family replication) name what they are about: the KRaft metadata, a
        # transaction, a consumer group
        prefix = r.name.split(".")[0]
        assert (
            r.family == prefix
            or r.code.startswith(("KA2", "KA3"))
            or (r.family == "replication" and prefix in ("kraft", "transaction", "group"))
        ), r.code


def test_codes_and_names_are_unique_and_families_match():
    rules = all_rules()
    assert len({r.code for r in rules}) == len({r.name for r in rules}) == len(rules)
    for r in rules:
        if r.scope in AUDIT_SCOPES:  # cross-replica checks of `audit`
            assert re.fullmatch(r"KA[67]\d\d", r.code) and r.check is not None, r.code
        elif r.scope in HISTORY_SCOPES:  # checks of `report` over an ingest warehouse
            assert re.fullmatch(r"KA8\d\d", r.code) and r.check is not None, r.code
            assert r.name.startswith("history."), r.code
        else:
            assert re.fullmatch(r"KA[0-5]\d\d", r.code), "KA6xx-KA7xx are reserved for audit"
            assert r.scope in ("segment", "partition", "logdir", "engine")
            assert (r.check is None) == (r.scope == "engine")


def test_register_enforces_conventions():
    doc = "What it finds: x.\nWhy it matters: y.\nWhat to do: z.\nReferences: KIP-1."
    with pytest.raises(ValueError, match="KA \\+ 3 digits"):
        register(Rule("XX1", "a.b", Severity.INFO, "T", "engine", doc=doc))
    with pytest.raises(ValueError, match="family.short-name"):
        register(Rule("KA099", "Bad Name", Severity.INFO, "T", "engine", doc=doc))
    with pytest.raises(ValueError, match="lacks section"):
        register(Rule("KA099", "scan.test-rule", Severity.INFO, "T", "engine", doc="What it finds: x."))
    with pytest.raises(ValueError, match="duplicate rule code"):
        register(Rule("KA101", "scan.other-name", Severity.INFO, "T", "engine", doc=doc))
    assert "KA099" not in REGISTRY


def test_selection_by_prefix_name_and_family():
    everything = select_rules()
    assert everything.codes == {c for c, r in REGISTRY.items() if r.lifecycle == "stable"}
    assert select_rules(["KA1"]).codes == {c for c in everything.codes if c.startswith("KA1")}
    assert select_rules(["KA10"]).codes == {c for c in everything.codes if c.startswith("KA10")}
    assert select_rules(["KA101"]).codes == {"KA101"}
    assert select_rules(["segment.crc-mismatch"]).codes == {"KA101"}
    # a family selects every rule of it, whatever subject its name starts with; a name prefix, its own
    assert select_rules(["index"]).codes == {c for c in everything.codes if c.startswith("KA2")}
    assert select_rules(["timeindex"]).codes == {
        c for c, r in REGISTRY.items() if r.name.startswith("timeindex.")
    }
    assert select_rules(["KA1,KA2"], ["KA10"]).codes == {
        c for c in everything.codes if c.startswith(("KA1", "KA2")) and not c.startswith("KA10")
    }
    assert "KA101" not in select_rules(None, ["KA101"]).codes
    assert select_rules(["ALL"]).codes == everything.codes
    with pytest.raises(ValueError, match="matches no rule"):
        select_rules(["KA9"])
    with pytest.raises(ValueError, match="matches no rule"):
        select_rules(None, ["nonsense.rule"])


@pytest.mark.parametrize("prefix", sorted(FAMILIES))
def test_select_by_family_finds_every_rule_of_it(prefix):
    family = FAMILIES[prefix]
    codes = {c for c in select_rules().codes if FAMILIES[c[:3]] == family}
    assert codes and select_rules([family]).codes == codes
    # --select replication finds KA624 (kraft.*) and KA712 (transaction.*); checkpoint finds KA311
    assert all(REGISTRY[c].family == family for c in codes)


def test_preview_rules_need_an_exact_selection(monkeypatch):
    import dataclasses

    preview = dataclasses.replace(REGISTRY["KA108"], lifecycle="preview")
    monkeypatch.setitem(REGISTRY, "KA108", preview)
    assert "KA108" not in select_rules().codes
    assert "KA108" not in select_rules(["KA1"]).codes
    assert "KA108" in select_rules(["KA108"]).codes


def test_rule_finding_fills_location_and_evidence():
    r = get("KA101")
    f = r.finding(
        Violation("msg", file="/x/0.log", position=5, expected=1, found=2, evidence={"k": "v"}),
        Location(broker=3, log_dir="/x", topic="t", partition=0),
    )
    assert isinstance(f, Finding)
    assert (f.code, f.name, f.severity, f.broker, f.topic, f.partition) == (
        "KA101",
        r.name,
        r.severity,
        3,
        "t",
        0,
    )
    assert f.evidence == {"k": "v", "expected": 1, "found": 2}
    g = r.finding(
        Violation("m", severity=Severity.INFO, topic="u", partition=4), Location(broker=3, log_dir="/x")
    )
    assert (g.severity, g.topic, g.partition) == (Severity.INFO, "u", 4)
    assert get("segment.crc-mismatch") is r
    with pytest.raises(KeyError):
        get("KA999")


def test_markdown_table_lists_every_rule_and_module_entry_point_prints_it():
    table = markdown_table()
    for r in all_rules():
        assert f"| {r.code} | `{r.name}`" in table
    res = subprocess.run(
        [sys.executable, "-m", "auditor.rules.registry", "--markdown"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == table
    details = subprocess.run(
        [sys.executable, "-m", "auditor.rules.registry", "--details"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert "### KA101 `segment.crc-mismatch` (critical)" in details.stdout


def test_finding_serialisation_round_trips():
    f = Finding(
        "KA401",
        Severity.ERROR,
        "m",
        "partition.hw-above-leo",
        broker=1,
        log_dir="/l",
        topic="t",
        partition=0,
        file="/l/f",
        position=3,
        offset_start=10,
        offset_end=20,
        epoch=2,
        evidence={"expected": (1, 2), "found": b"\x01"},
    )
    d = f.to_dict()
    assert d["severity"] == "error" and d["evidence"] == {"expected": [1, 2], "found": "01"}
    back = Finding.from_dict(d)
    assert back.fingerprint() == f.fingerprint() and back.severity is Severity.ERROR
    row = {"cluster": "c", "code": "KA601", "severity": "warning", "topic": "t", "partition": 0, "peer": 2}
    row.update(message="m", evidence='{"mode": "batch"}')
    spark = Finding.from_row(row, "replication.divergence")
    assert spark.severity is Severity.WARNING and spark.name == "replication.divergence"
    assert spark.evidence == {"mode": "batch", "cluster": "c", "peer": 2}
    assert spark.related == [{"broker": 2, "topic": "t", "partition": 0}]
    assert Severity.parse("Warning") is Severity.WARNING and Severity.CRITICAL > Severity.ERROR
    with pytest.raises(ValueError):
        Severity.parse("fatal")


def _rule_module(rule: Rule) -> str:
    """The module declaring a rule: its check's, or for an engine rule (no check) the module holding it."""
    if rule.check is not None:
        return rule.check.__module__
    return next(m for m in RULE_MODULES if any(v is rule for v in vars(sys.modules[m]).values()))


def test_every_rule_module_has_a_case_file_named_after_it_and_every_case_file_a_rule_module():
    load_rules()
    modules = {_rule_module(r) for r in all_rules()}
    assert modules == set(RULE_MODULES)
    files = case_modules()
    assert sorted(case_module(m) for m in modules) == sorted(files), "case files and rule modules differ"
    assert all(rule_module(case_module(m)) == m for m in modules)
    assert case_module("auditor.rules.index.time_index") == "tests.rules.index.cases_time_index"
    assert case_module("auditor.rules.segment") == "tests.rules.cases_segment"


def test_every_rule_has_fire_and_silent_cases_in_the_case_file_of_its_module():
    """Fire and silent cases in the case file named after the rule's module; the clean baselines of
    ``tests.rules.benign`` count as silent cases of every rule they list. Every case of a case file names a
    rule of its module."""
    fire, silent = load_cases()
    for r in all_rules():
        home = case_module(_rule_module(r))
        assert any(fn.__module__ == home for fn in fire.get(r.code, [])), (
            f"{r.code}: no firing case in {home}"
        )
        assert any(fn.__module__ in (home, "tests.rules.benign") for fn in silent.get(r.code, [])), (
            f"{r.code}: no silent case in {home}"
        )
    codes: dict[object, set[str]] = {}
    for table in (fire, silent):
        for code, fns in table.items():
            for fn in fns:
                codes.setdefault(fn, set()).add(code)
    for fn, named in codes.items():
        if fn.__module__ == "tests.rules.benign":
            continue
        own = {r.code for r in all_rules() if case_module(_rule_module(r)) == fn.__module__}
        assert named & own, f"{fn.__module__}.{fn.__name__} names no rule of its module: {sorted(named)}"
