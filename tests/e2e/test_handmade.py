"""Cases the simulator does not produce (see ``tests/support/handmade.py``), audited in the same Spark run as
the scenarios: record-level comparison of a compacted partition, the same CRC with a different
partitionLeaderEpoch, an epoch the leader never had, and Kafka's epoch truncation missing the divergence."""

from __future__ import annotations

import pytest

from tests.support.sim_audit import of_cluster

pytestmark = pytest.mark.spark


def _codes(findings):
    return sorted((f.code, f.broker, f.offset_start) for f in findings if f.severity.label != "info")


def test_compacted_partition_compared_by_record(sim_audit):
    """Offsets 0..5 exist on brokers 2 and 3 only, below broker 1's cleaner offset 10: benign. Broker 3 holds
    a different record at offset 12: divergence there, with both other replicas."""
    findings = of_cluster(sim_audit.result.findings, "handmade", "cmp", 0)
    div = {(f.broker, f.related[0]["broker"]): f for f in findings if f.code == "KA601"}
    assert {k: f.offset_start for k, f in div.items()} == {(1, 3): 12, (2, 3): 12}
    assert all(f.evidence["mode"] == "record" for f in div.values())
    # the leader (broker 1, inferred) lacks broker 3's committed record 12; the rest of that batch is counted
    # with it (loss is computed batch by batch, from the first differing record)
    (lost,) = [f for f in findings if f.code == "KA710"]
    assert (lost.broker, lost.offset_start, lost.offset_end) == (3, 12, 15)
    # same epoch on both sides: Kafka's epoch-based truncation would leave broker 3's record in place
    (kept,) = [f for f in findings if f.code == "KA602"]
    assert (kept.broker, kept.evidence["truncationOffset"], kept.evidence["divergence"]) == (3, 16, 12)
    assert {f.code for f in findings if f.severity.label != "info"} == {"KA601", "KA602", "KA710"}


def test_same_crc_different_leader_epoch(sim_audit):
    findings = of_cluster(sim_audit.result.findings, "handmade", "plain", 0)
    assert _codes(findings) == [
        ("KA601", 1, 5),
        ("KA601", 2, 5),
        ("KA602", 3, 5),
        ("KA604", 3, 5),
        ("KA710", 3, 5),
    ]
    by_code = {f.code: f for f in findings}
    at = by_code["KA601"].evidence["atOffset"]
    assert at["a"]["crc"] == at["b"]["crc"] and (at["a"]["leaderEpoch"], at["b"]["leaderEpoch"]) == (0, 1)
    # Kafka would not truncate broker 3 at all (its cache has no epoch 1): divergent data survives
    assert by_code["KA602"].severity.label == "error"
    assert (by_code["KA602"].evidence["truncationOffset"], by_code["KA602"].evidence["divergence"]) == (
        15,
        5,
    )
    assert (by_code["KA604"].epoch, by_code["KA604"].evidence["records"]) == (1, 5)
    assert (by_code["KA710"].offset_end, by_code["KA710"].evidence["records"]) == (9, 5)


def test_inferred_leader_without_metadata(sim_audit):
    (inferred,) = [f for f in of_cluster(sim_audit.result.findings, "handmade") if f.code == "KA623"]
    assert inferred.severity.label == "info"
    leaders = {
        (r["topic"], r["broker"]): (r["is_leader"], r["leader_source"])
        for r in sim_audit.result.replicas
        if r["cluster"] == "handmade"
    }
    assert leaders[("plain", 1)] == (True, "inferred") and leaders[("cmp", 1)] == (True, "inferred")
