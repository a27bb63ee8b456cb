"""The fire/silent harness of the cross-replica checks over whole log directories: every ``@case`` of the
case files (``tests.rules.replica.logdirs.CASES``) audited in one Spark run (one cluster label per case),
then each (case, code) checked on its slice of the findings."""

from __future__ import annotations

import io

import pytest

from auditor.rules.registry import REGISTRY, load_rules
from auditor.spark.audit import AuditResult, run_audit
from auditor.spark.inputs import Inputs, Source
from tests.rules.harness import case_module, load_cases
from tests.rules.replica.logdirs import CASES, CODES, Case

load_cases()

CHECKS = [(c, code, True) for c in CASES for code in c.fire] + [
    (c, code, False) for c in CASES for code in sorted(c.silent)
]


@pytest.fixture(scope="module")
def replica_audit(spark, tmp_path_factory) -> AuditResult:
    root = tmp_path_factory.mktemp("replica-cases")
    inputs = Inputs()
    for c in CASES:
        c.build(root / c.name)
        for broker in sorted((root / c.name).iterdir()):
            inputs.sources.append(Source("raw", str(broker), c.name))
    return run_audit(spark, inputs)


def _findings(result: AuditResult, name: str) -> list:
    return [f for f in result.findings if f.evidence.get("cluster") == name]


def test_every_code_has_fire_and_silent_cases():
    load_rules()
    for code in CODES:
        home = case_module(REGISTRY[code].check.__module__)
        assert any(code in c.fire and c.build.__module__ == home for c in CASES), code
        assert any(code in c.silent for c in CASES), code


@pytest.mark.parametrize(
    ("case", "code", "fires"),
    CHECKS,
    ids=[f"{c.name}-{code}-{'fire' if f else 'silent'}" for c, code, f in CHECKS],
)
def test_case(replica_audit, case: Case, code: str, fires: bool):
    found = [f for f in _findings(replica_audit, case.name) if f.code == code]
    if fires:
        assert {f.broker for f in found} == case.fire[code], [f.message for f in found]
    else:
        assert not found, [f.message for f in found]


def _replica(result: AuditResult, name: str, broker: int) -> dict:
    return next(r for r in result.replicas if r["cluster"] == name and r["broker"] == broker)


def test_lag_counts_and_severity(replica_audit):
    (info,) = [f for f in _findings(replica_audit, "lagging-follower") if f.code == "KA630"]
    assert info.severity.label == "info"
    assert (info.offset_start, info.offset_end, info.evidence["records"]) == (20, 29, 10)
    assert info.evidence["batches"] == 2 and info.evidence["bytes"] > 0
    assert info.epoch == 0 and info.related[0]["broker"] == 1
    (warn,) = [f for f in _findings(replica_audit, "lagging-follower-for-minutes") if f.code == "KA630"]
    assert warn.severity.label == "warning" and warn.evidence["behindMs"] >= 300_000 - 20
    assert _replica(replica_audit, "lagging-follower", 2)["lag_records"] == 10
    assert _replica(replica_audit, "lagging-follower", 2)["lost_records"] == 0


def test_incomplete_replica_is_marked_and_fails_the_audit(replica_audit):
    r = _replica(replica_audit, "follower-middle-segment-is-a-directory", 2)
    assert (r["unreadable_from"], r["unreadable_to"], r["leo"], r["leo_known"]) == (10, 20, 30, True)
    assert "00000000000000000010.log: is a directory" in r["unreadable"]
    (f,) = [f for f in _findings(replica_audit, r["cluster"]) if f.code == "KA691"]
    assert (f.offset_start, f.offset_end) == (10, 19) and "is a directory" in f.message
    assert any("incomplete from offset 10" in p for p in replica_audit.problems)
    last = _replica(replica_audit, "follower-last-segment-unreadable", 2)
    assert (last["unreadable_from"], last["unreadable_to"], last["leo"], last["leo_known"]) == (
        20,
        None,
        20,
        False,
    )
    torn = _replica(replica_audit, "follower-middle-segment-torn", 2)
    assert (torn["unreadable_from"], torn["unreadable_to"]) == (15, 20)


def test_hole_keeps_the_loss_outside_it(replica_audit):
    r = _replica(replica_audit, "hole-does-not-hide-a-later-divergence", 2)
    assert r["divergence"] == 20 and r["lost_records"] == 10


def test_report_rows_and_exit_code(replica_audit):
    from auditor.cli.audit import build_report
    from auditor.cli.report_options import ReportOptions
    from auditor.rules.registry import AUDIT_SCOPES, select_rules

    name = "follower-last-segment-unreadable"
    report = build_report(
        replica_audit, select_rules(None, None, scopes=AUDIT_SCOPES), Inputs(), ReportOptions()
    )
    assert report.exit_code == 2
    row = next(p for p in report.partitions if p["cluster"] == name and p["broker"] == 2)
    assert (row["unreadableFrom"], row["unreadableTo"], row["logEndOffsetKnown"]) == (20, None, False)


def test_text_table_marks_the_incomplete_replica():
    from auditor.report.audit_terminal import replicas_table
    from auditor.report.terminal import make_console

    rows = [
        {"broker": 1, "role": "leader", "logEndOffset": 30, "logEndOffsetKnown": True},
        {
            "broker": 2,
            "role": "follower",
            "logEndOffset": 20,
            "logEndOffsetKnown": False,
            "unreadableFrom": 20,
        },
        {"broker": 3, "role": "follower", "logEndOffset": 30, "unreadableFrom": 10, "unreadableTo": 20},
    ]
    out = io.StringIO()
    make_console(out, color=False, width=160).print(replicas_table(rows))
    text = out.getvalue()
    assert "≥20" in text and "20.." in text and "10..19" in text
