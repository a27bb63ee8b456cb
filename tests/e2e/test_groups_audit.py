"""``audit`` runs the group rules: a generated unclean election where a group consumed records the new leader
lacks (KA721), with its committed offset above the new leader's log end offset (KA720)."""

from __future__ import annotations

CLUSTER = "groups-lost"
"""The label of ``tests.support.groups.lost_commit_cluster`` in the one consequences audit."""


def test_audit_reports_a_group_that_consumed_lost_records(consequences_audit):
    result = consequences_audit.result
    by_code = {}
    for f in result.findings:
        if f.evidence.get("cluster") == CLUSTER:
            by_code.setdefault(f.code, []).append(f)
    (lost,) = by_code["KA721"]
    assert (lost.topic, lost.partition, lost.broker, lost.evidence["peer"]) == ("orders", 0, 1, 2)
    assert (lost.offset_start, lost.offset_end, lost.evidence["records"]) == (10, 17, 8)
    assert "skip the 5 different records now at offsets 10..14" in lost.message
    assert lost.evidence["group"] == "g-lost" and lost.evidence["committedOffset"] == 18
    (above,) = by_code["KA720"]
    assert above.evidence["leaderLogEndOffset"] == 15 and above.broker == 2
    assert "KA722" not in by_code and "KA723" not in by_code
    groups = {(g["group"], g["topic"], g["partition"]): g for g in result.groups if g["cluster"] == CLUSTER}
    assert groups[("g-fine", "orders", 0)]["lag"] == 10 and groups[("g-lost", "orders", 0)]["above_leo"]
    assert all(g["leader"] == 2 and g["held_by"] == [1, 2] for g in groups.values())
