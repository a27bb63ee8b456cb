"""The small-input settings (``auditor.spark.tuning``) change how an audit runs, never what it finds.

The session's audit of every scenario (``sim_audit``: raw log dirs, Parquet extracts, the consequence
clusters, ``--export-lost``) is small, so it ran with the extraction and the Python rules in the driver; the
same inputs audited again with the small-input settings off (extraction and rules in ``mapInArrow`` tasks,
code generation and broadcast joins on) give the same findings, replica summaries, loss runs, timelines,
transactions, consumer groups, elections and exported records.
"""

from __future__ import annotations

import json
from typing import Any

from auditor.spark.audit import AuditResult, run_audit
from auditor.spark.tuning import SMALL_INPUT_ENV


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def canonical(result: AuditResult) -> dict[str, list[str]]:
    """Everything an audit reports, each list sorted (order is not part of the comparison)."""
    findings = [
        _text([f.fingerprint, f.code, f.severity.label, f.message, f.offset_start, f.offset_end, f.evidence])
        for f in result.findings
    ]
    return {
        "findings": sorted(findings),
        "replicas": sorted(_text(r) for r in result.replicas),
        "loss": sorted(_text(r) for r in result.loss),
        "timelines": sorted(_text([list(k), v]) for k, v in result.timelines.items()),
        "transactions": sorted(_text(t) for t in result.transactions),
        "groups": sorted(_text(g) for g in result.groups),
        "elections": sorted(_text(e) for e in result.elections),
        "epoch_ranges": sorted(_text(e) for e in result.epoch_ranges),
        "metadata": sorted(_text(m) for m in result.metadata),
        "problems": sorted(result.problems),
    }


def test_small_input_settings_find_what_the_executors_find(spark, sim_audit, monkeypatch, tmp_path):
    assert sim_audit.result.stats["smallInput"] is True
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    export = tmp_path / "export"
    other = run_audit(spark, sim_audit.inputs, export_lost=export, chunk_bits=3)
    assert other.stats["smallInput"] is False
    ours, theirs = canonical(sim_audit.result), canonical(other)
    assert len(ours["findings"]) > 100 and ours["loss"] and ours["elections"]
    for key in ours:
        assert ours[key] == theirs[key], key
    lost = export / "lost-records.jsonl"
    exported = {}
    with open(lost, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            exported[(d["cluster"], d["topic"], d["partition"], d["offset"])] = d
    assert exported == sim_audit.exported
