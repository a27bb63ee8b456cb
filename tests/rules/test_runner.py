"""The one rule runner (``auditor.rules.runner``): no engine runs checks itself, and a crashing check becomes
the same KA002 in ``scan``, ``audit`` (per partition, per cluster, transactions, groups, identity) and
``report`` (history)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import auditor
from auditor.findings import Finding, Location
from auditor.rules import runner
from auditor.rules.registry import REGISTRY, Violation, load_rules, select_rules
from tests.rules.replica.builders import audit_findings

ROOT = Path(auditor.__file__).parent
ALLOWED = {ROOT / "rules" / "runner.py", ROOT / "rules" / "registry.py"}
"""Where rules may be listed by scope and their checks called: the runner and the registry."""
ENGINES = (
    "auditor.scan",
    "auditor.spark.partition_rules",
    "auditor.spark.identity",
    "auditor.spark.hanging",
    "auditor.spark.groups",
    "auditor.rules.history.model",
)
"""Every module that runs registered rules: each does it through the runner."""


def _violations(path: Path) -> list[str]:
    """Where ``path`` calls a rule's ``check`` or lists the rules of a scope (``scope_rules``) itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check":
            out.append(f"{path.name}:{node.lineno} calls .check()")
        names = []
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        if "scope_rules" in names:
            out.append(f"{path.name}:{node.lineno} uses scope_rules")
    return out


def test_no_rule_loop_outside_the_runner():
    found = [v for path in sorted(ROOT.rglob("*.py")) if path not in ALLOWED for v in _violations(path)]
    assert found == []


def test_the_source_scan_sees_a_rule_loop(tmp_path):
    """The check above fails on a module that runs checks itself (both ways of doing it)."""
    bad = tmp_path / "engine.py"
    bad.write_text(
        "from auditor.rules.registry import scope_rules\n\n\n"
        "def go(x):\n    return [v for r in scope_rules('lag') for v in r.check(x)]\n",
        encoding="utf-8",
    )
    assert _violations(bad) == [
        "engine.py:1 uses scope_rules",
        "engine.py:5 calls .check()",
        "engine.py:5 uses scope_rules",
    ]


@pytest.mark.parametrize("module", ENGINES)
def test_every_engine_runs_its_rules_through_the_runner(module):
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "runner"
    }
    assert "run" in calls, f"{module} does not call runner.run"


# ------------------------------------------------------------------------------------------ crashes

MESSAGE = "no such thing"


def _crash(monkeypatch, code: str) -> None:
    """Replace the check of rule ``code`` by one that yields nothing and raises."""
    load_rules()

    def boom(*_args):
        raise LookupError(MESSAGE)
        yield  # pragma: no cover

    monkeypatch.setitem(REGISTRY, code, dataclasses.replace(REGISTRY[code], check=boom))


def _assert_crash(f: Finding, code: str) -> None:
    """The KA002 of a crash of ``code``: the same fields whatever the engine."""
    rule = REGISTRY[code]
    assert (f.code, f.name, f.severity.label) == ("KA002", "scan.check-failed", "error")
    assert f.message == f"check {code} ({rule.name}) failed: LookupError: {MESSAGE}"
    assert f.evidence["rule"] == code
    assert f.evidence["error"] == f"LookupError: {MESSAGE}"
    assert f.evidence["raisedAt"].endswith(" in boom")


def _from_rows(rows: list[dict]) -> list[Finding]:
    return [Finding.from_row(r, REGISTRY[r["code"]].name) for r in rows]


def test_the_runner_keeps_the_other_checks_and_what_a_crashing_check_yielded_first():
    load_rules()

    def half(_subject):
        yield Violation("before the crash")
        raise ValueError("broken")

    crashing = dataclasses.replace(REGISTRY["KA623"], check=half)
    fine = dataclasses.replace(REGISTRY["KA622"], check=lambda _s: iter([Violation("fine")]))
    hits = list(runner.run([crashing, fine], object(), file="f.log"))
    assert [(r.code, v.message) for r, v in hits] == [
        ("KA623", "before the crash"),
        ("KA002", "check KA623 (replication.leader-inferred) failed: ValueError: broken"),
        ("KA622", "fine"),
    ]
    (crash,) = runner.findings(hits[1:2], Location(broker=1))
    assert (crash.file, crash.broker, crash.evidence["rule"]) == ("f.log", 1, "KA623")
    (row,) = runner.rows(hits[1:2], "c", "t", 0)
    assert (row["code"], row["severity"], row["topic"], json.loads(row["evidence"])["rule"]) == (
        "KA002",
        "error",
        "t",
        "KA623",
    )


def test_scan_turns_a_crash_into_ka002(tmp_path, monkeypatch):
    from auditor.scan import scan
    from tests.rules.builder import LogDir

    ld = LogDir(tmp_path / "broker-1")
    ld.part("alpha").data(3)
    _crash(monkeypatch, "KA401")
    assert REGISTRY["KA401"].scope == "partition"
    result = scan([ld.write()], jobs=1)
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert crashed and result.incomplete
    for f in crashed:
        _assert_crash(f, "KA401")


def test_audit_partition_rules_turn_a_crash_into_ka002(monkeypatch):
    from tests.rules.replica.builders import CACHES, KRAFT, in_sync, one

    _crash(monkeypatch, "KA601")
    assert REGISTRY["KA601"].scope == "replicas"
    rows = audit_findings(one(*in_sync(), caches=CACHES, metadata=KRAFT))
    crashed = [f for f in _from_rows(rows) if f.code == "KA002"]
    assert len(crashed) == 1
    _assert_crash(crashed[0], "KA601")
    assert (crashed[0].topic, crashed[0].partition, crashed[0].evidence["cluster"]) == ("t", 0, "c")


def test_audit_cluster_rules_turn_a_crash_into_ka002(monkeypatch):
    from auditor.spark.partition_pass import cluster_rows

    _crash(monkeypatch, "KA621")
    summary = [{"cluster": "c", "topic": "t", "partition": 0, "leader": 1, "leader_source": "inferred"}]
    kept, cluster = cluster_rows([], summary)
    assert kept == [] and {r["code"] for r in cluster} == {"KA002", "KA623"}
    (crash,) = [f for f in _from_rows(cluster) if f.code == "KA002"]
    _assert_crash(crash, "KA621")
    assert crash.evidence["cluster"] == "c"


@pytest.mark.parametrize("code", ["KA713", "KA720", "KA605", "KA611", "KA630"])
def test_transaction_group_identity_and_lag_rules_turn_a_crash_into_ka002(code, tmp_path, monkeypatch):
    from tests.rules.harness import load_cases
    from tests.rules.replica.builders import Audit

    FIRE, _ = load_cases()

    subject = FIRE[code][0](tmp_path, monkeypatch)
    _crash(monkeypatch, code)
    rows = audit_findings(subject) if isinstance(subject, Audit) else subject.finding_rows()
    crashed = [f for f in _from_rows(rows) if f.code == "KA002"]
    assert crashed and code not in {f.code for f in _from_rows(rows)}
    for f in crashed:
        _assert_crash(f, code)


def test_loss_rules_turn_a_crash_into_ka002(monkeypatch):
    from auditor.spark.partition_rules import loss_findings
    from tests.rules.replica.cases_loss import lost_run

    _crash(monkeypatch, "KA710")
    codes = [f.code for f in _from_rows(loss_findings(lost_run("committed", 200, 299, 300)))]
    assert codes == ["KA002"]
    (crash,) = _from_rows(loss_findings(lost_run("committed", 200, 299, 300)))
    _assert_crash(crash, "KA710")
    assert (crash.topic, crash.partition) == ("t", 0)


def test_history_rules_turn_a_crash_into_ka002(monkeypatch):
    from auditor.rules.history.model import run_rules
    from tests.rules.history.cases_offsets import hw_went_back

    _crash(monkeypatch, "KA801")
    h = hw_went_back(None, None).history()
    (crash,) = [f for f in run_rules(h, "history") if f.code == "KA002"]
    _assert_crash(crash, "KA801")
    assert crash.time is None


def test_every_command_selects_ka002():
    from auditor.rules.registry import AUDIT_SCOPES, HISTORY_SCOPES

    for scopes in (AUDIT_SCOPES, HISTORY_SCOPES, ("segment", "partition", "logdir", "engine")):
        assert "KA002" in select_rules(scopes=scopes)
        assert "KA002" not in select_rules(ignore=["KA002"], scopes=scopes)


@pytest.mark.spark
def test_audit_on_spark_reports_a_crash_and_exits_2(spark, tmp_path, monkeypatch):
    """A crashing rule of each audit stage run in the driver (small inputs: per partition, per cluster)
    becomes KA002 in the audit's findings, and the report exits 2."""
    from auditor.cli.audit import build_report
    from auditor.cli.report_options import ReportOptions
    from auditor.rules.registry import AUDIT_SCOPES
    from auditor.simulate import SimOptions, run_scenario
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover

    run_scenario("clean", tmp_path / "sim", SimOptions(seed=7, records=50))
    _crash(monkeypatch, "KA601")
    _crash(monkeypatch, "KA621")
    inputs = discover([tmp_path / "sim"])
    result = run_audit(spark, inputs)
    assert result.stats["smallInput"] is True
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert {f.evidence["rule"] for f in crashed} == {"KA601", "KA621"}
    for f in crashed:
        _assert_crash(f, f.evidence["rule"])
    assert any(f.topic is not None for f in crashed if f.evidence["rule"] == "KA601")
    selection = select_rules(scopes=AUDIT_SCOPES)
    report = build_report(result, selection, inputs, ReportOptions(exit_zero=True))
    assert report.exit_code == 2


@pytest.mark.spark
def test_report_on_spark_reports_a_crash_and_exits_2(spark, tmp_path, monkeypatch):
    """A crashing history rule run on the driver (scope ``fleet``) becomes KA002 in ``report``'s findings,
    with the same fields as in ``scan`` and ``audit``, and the report exits 2."""
    from auditor.cli.report import build_report
    from auditor.cli.report_options import ReportOptions
    from auditor.rules.registry import HISTORY_SCOPES
    from auditor.spark.history import run_history
    from tests.spark.test_history import combined, write_warehouse

    story = combined()
    tables = write_warehouse(story, tmp_path / "w")
    _crash(monkeypatch, "KA811")
    assert REGISTRY["KA811"].scope == "fleet"
    result = run_history(spark, tables, story.settings, partitions=1)
    (crash,) = [f for f in result.findings if f.code == "KA002"]
    _assert_crash(crash, "KA811")
    assert "KA811" not in {f.code for f in result.findings} and "KA801" in {f.code for f in result.findings}
    report = build_report(result, select_rules(scopes=HISTORY_SCOPES), ReportOptions(exit_zero=True))
    assert report.exit_code == 2
