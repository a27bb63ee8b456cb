"""``--scale`` writes valid files whose ground truth matches what the files show (tiny sizes here)."""

from __future__ import annotations

import pytest

from auditor.simulate import SimOptions, run_scenario
from auditor.simulate.truth.oracles import first_divergence
from tests.simulate.simvalidate import read_log, validate_tree


def disk_batches(root, pdir):
    out = []
    for log in sorted((root / pdir).glob("*.log")):
        out += [
            (b.base_offset, b.last_offset, b.crc, b.partition_leader_epoch)
            for b in read_log(log.read_bytes())[0]
        ]
    return out


@pytest.mark.parametrize("name", ["clean", "unclean-election"])
def test_scale_mode_tiny(tmp_path, name):
    out = tmp_path / "out"
    truth = run_scenario(name, out, SimOptions(scale=True, partitions=3, topics=2, records=2000))
    assert truth["compact"] is True and truth["stats"]["batches_generated"] >= 6 * 2000
    stats = validate_tree(out)
    assert stats["records"] == truth["stats"]["batch_copies_written"]  # one record per batch
    for p in truth["partitions"]:
        for d in p["divergence"]:
            a, b = d["replicas"]
            got = first_divergence(
                disk_batches(out / f"broker-{a}", p["dir"]), disk_batches(out / f"broker-{b}", p["dir"])
            )
            assert got == d["first_divergent_offset"]
        for b, st in p["replica_state"].items():
            batches = disk_batches(out / f"broker-{b}", p["dir"])
            assert st["disk"]["log_end_offset"] == batches[-1][1] + 1
    if name == "unclean-election":
        p = truth["partitions"][0]
        assert p["expected_findings"]["truncation_loss"] == [
            {"first_offset": 1000, "last_offset": 1499, "records": 500, "holders": [1]}
        ]
        assert p["final"]["leader"] == 2 and p["final"]["isr"] == [2, 3]


def test_scale_rejects_other_scenarios(tmp_path):
    with pytest.raises(ValueError, match="--scale supports"):
        run_scenario("torn-tail", tmp_path / "x", SimOptions(scale=True))
