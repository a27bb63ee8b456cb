"""The scan engine's own guarantees: a failing partition or check becomes a finding, never an exception."""

from __future__ import annotations

from auditor import scan as scan_module
from auditor.rules.registry import select_rules
from auditor.scan import SCAN_SCOPES, scan
from tests.rules.builder import LogDir


def _two_partitions(tmp_path):
    ld = LogDir(tmp_path / "broker-1")
    ld.part("alpha").data(3)
    ld.part("beta").data(3)
    return ld.write()


def test_a_crashing_partition_becomes_ka002(tmp_path, monkeypatch):
    root = _two_partitions(tmp_path)
    real = scan_module.collect_segment

    def flaky(path, *args, **kw):
        if "alpha" in str(path):
            raise RuntimeError("collector bug")
        return real(path, *args, **kw)

    monkeypatch.setattr(scan_module, "collect_segment", flaky)
    result = scan([root], jobs=1)
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert len(crashed) == 1 and crashed[0].topic == "alpha" and "collector bug" in crashed[0].message
    assert result.incomplete
    assert {p["topic"] for p in result.partitions} >= {"alpha", "beta", "__cluster_metadata"}


def test_unreadable_input_is_incomplete_even_when_ka001_is_ignored(tmp_path):
    root = _two_partitions(tmp_path)
    (root / "alpha-0" / "00000000000000000050.log").symlink_to(tmp_path / "missing")
    result = scan([root], jobs=1, selection=select_rules(None, ["KA001"], scopes=SCAN_SCOPES))
    assert result.incomplete and not [f for f in result.findings if f.code == "KA001"]


def test_selection_limits_the_checks_that_run(tmp_path):
    root = _two_partitions(tmp_path)
    (root / "alpha-0" / "notes.txt").write_text("x")
    only_segments = scan([root], jobs=1, selection=select_rules(["KA1"], scopes=SCAN_SCOPES))
    assert not only_segments.findings and only_segments.stats["rules"] == len(select_rules(["KA1"]).codes)
    everything = scan([root], jobs=1)
    assert [f.code for f in everything.findings] == ["KA501"]
