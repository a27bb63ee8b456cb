"""Scan of the scenario generator's clusters: every injected fault is found with the right code at the right
broker and file, and nothing above info is reported where no fault was injected."""

from __future__ import annotations

import os

import pytest

simulate = pytest.importorskip("auditor.simulate")

from auditor.findings import Severity  # noqa: E402
from auditor.scan import scan  # noqa: E402

FAULT_CODES = {
    "torn-tail": "KA102",
    "crc-flip": "KA101",
    "index-entry-beyond-log": "KA205",
    "time-index-entry-beyond-log": "KA215",
    "hw-checkpoint-beyond-log": "KA401",
    "recovery-point-beyond-log": "KA403",
    "epoch-entry-beyond-log": "KA312",
}
"""Ground-truth fault kind -> the code scan must report for it."""

CONSEQUENCES = {"KA401", "KA403", "KA233", "KA312", "KA205", "KA215"}
"""Codes that a torn tail or a corrupt batch legitimately entails on the same partition (lost tail data)."""


def _run(name: str, tmp_path, **options):
    out = tmp_path / name
    truth = simulate.run_scenario(name, out, simulate.SimOptions(**options))
    return truth, scan([out], jobs=1)


def _fault_matches(fault: dict, findings) -> bool:
    code = FAULT_CODES[fault["kind"]]
    for f in findings:
        if f.code != code or f.broker != fault["broker"]:
            continue
        if f.topic is not None and (f.topic, f.partition) != (fault.get("topic"), fault.get("partition")):
            continue
        if code in ("KA101", "KA102", "KA205", "KA215") and os.path.basename(
            f.file or ""
        ) != os.path.basename(fault["file"]):
            continue
        return True
    return False


def _check(truth: dict, result) -> None:
    faults = truth["faults"]
    for fault in faults:
        if fault["kind"] in FAULT_CODES:
            assert _fault_matches(fault, result.findings), (
                fault,
                [(f.code, f.broker) for f in result.findings],
            )
    faulty = {(f["broker"], f.get("topic"), f.get("partition")) for f in faults}
    faulty_brokers = {f["broker"] for f in faults}
    # replicas by identity: the scan code the ground truth gives each old-incarnation, -delete or -future dir
    identity = {
        (e["scan_code"], e["broker"], e["topic"], e["partition"])
        for key in ("incarnations", "deleted_replicas", "moves")
        for e in truth.get(key, [])
    }
    assert identity <= {(f.code, f.broker, f.topic, f.partition) for f in result.findings}
    crashed = {b["id"] for b in truth["brokers"] if not b.get("clean_shutdown")}
    for f in result.findings:
        if f.severity <= Severity.INFO or (f.code, f.broker, f.topic, f.partition) in identity:
            continue
        if f.code == "KA405":
            assert f.broker in crashed, (
                f
            )  # no clean-shutdown marker only where the broker did not stop cleanly
            continue
        if f.code in FAULT_CODES.values() or f.code in CONSEQUENCES:
            assert f.broker in faulty_brokers, (f.code, f.broker, f.message)
            assert f.topic is None or (f.broker, f.topic, f.partition) in faulty, (f.code, f.message)
            continue
        raise AssertionError(f"unexpected finding on simulated data: {f.code} {f.message}")
    assert not result.incomplete


FAULT_SCENARIOS = ["torn-tail", "corrupt-batch", "stale-index", "hw-ahead-of-log"]
"""The scenarios that inject on-disk faults; every other scripted scenario leaves none."""
WITHOUT_FAULTS = [n for n in simulate.SCENARIOS if n not in FAULT_SCENARIOS and n != "random"]


@pytest.mark.parametrize("name", WITHOUT_FAULTS)
def test_scenarios_without_on_disk_faults(name, tmp_path):
    truth, result = _run(name, tmp_path, seed=3)
    _check(truth, result)
    if name in ("clean", "follower-crash"):
        assert not [f for f in result.findings if f.severity > Severity.INFO]


@pytest.mark.parametrize("name", FAULT_SCENARIOS)
def test_fault_scenarios_are_found(name, tmp_path):
    truth, result = _run(name, tmp_path, seed=1)
    assert truth["faults"]
    _check(truth, result)


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_random_scenarios(seed, tmp_path):
    truth, result = _run(
        "random", tmp_path, seed=seed, partitions=2, compression=["none", "gzip", "zstd"][seed % 3]
    )
    _check(truth, result)


def test_process_pool_gives_the_same_findings(tmp_path):
    out = tmp_path / "pool"
    simulate.run_scenario("random", out, simulate.SimOptions(seed=35, partitions=3))
    one = scan([out], jobs=1)
    two = scan([out], jobs=2)
    assert two.stats["workers"] == 2
    assert [f.to_dict() for f in one.findings] == [f.to_dict() for f in two.findings]
    assert one.partitions == two.partitions
