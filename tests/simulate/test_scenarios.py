"""Every scenario generates valid Kafka files and the ground truth it promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.simulate import SCENARIOS, SimOptions, run_scenario
from parsers.checkpoints import parse_offset_checkpoint
from parsers.indexes import read_offset_index
from parsers.metadata import decode_metadata_record
from parsers.record_batch import decode_records, records_payload
from tests.simulate.simvalidate import read_log, validate_tree


def part(truth: dict, topic: str = "t0", partition: int = 0) -> dict:
    return next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (topic, partition))


def lost_offsets(items: list[dict]) -> list[int]:
    return [x["offset"] for x in items]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_writes_valid_files(scenario_out, name):
    out, truth = scenario_out(name)
    stats = validate_tree(out)
    assert stats["batches"] > 0 and stats["logs"] > 0
    assert truth["version"] == 2 and truth["scenario"] == name
    assert truth["description"] == SCENARIOS[name].description
    for p in truth["partitions"]:
        assert {
            "leader_history",
            "replica_state",
            "writes",
            "committed_lost",
            "divergence",
            "epoch_truncation",
            "expected_findings",
        } <= set(p)


@pytest.mark.parametrize("name", ["clean", "follower-crash", "unclean-election", "random"])
def test_idempotent_and_transactional_topics_with_compression(scenario_out, name):
    out, truth = scenario_out(name, topics=3, partitions=2, records=150, compression="lz4", seed=5)
    stats = validate_tree(out)
    assert stats["aborted_txns"] > 0
    assert stats["snapshots_checked"] > 0 or name == "random"
    assert {t["producer"] for t in truth["topics"]} == {"plain", "idempotent", "transactional"}


def test_clean(scenario_out):
    out, truth = scenario_out("clean", partitions=3)
    assert all(b["state"] == "shutdown" for b in truth["brokers"])
    for p in truth["partitions"]:
        assert all(d["first_divergent_offset"] is None for d in p["divergence"])
        assert p["committed_lost"] == [] and p["acknowledged_lost"] == []
        assert p["expected_findings"] == {
            "hw_violations": [],
            "truncation_loss": [],
            "truncation_loss_excluded": [],
            "lost_markers": [],
            "divergent_uncommitted": [],
        }
        assert p["hanging_transactions"] == []
        leos = {s["disk"]["log_end_offset"] for s in p["replica_state"].values()}
        hws = {s["disk"]["high_watermark_checkpoint"] for s in p["replica_state"].values()}
        assert leos == hws == {400}
    assert truth["faults"] == []
    for b in truth["brokers"]:
        assert (out / b["dir"] / ".kafka_cleanshutdown").exists()


def test_follower_crash_recovers_without_loss(scenario_out):
    _, truth = scenario_out("follower-crash")
    assert any(e["event"] == "lost-unflushed" for e in truth["events"])
    p = part(truth)
    assert p["committed_lost"] == [] and p["acknowledged_lost"] == []
    assert all(d["first_divergent_offset"] is None for d in p["divergence"])
    assert {s["disk"]["log_end_offset"] for s in p["replica_state"].values()} == {400}


def test_hw_truncation_loses_exactly_offset_1(scenario_out):
    _, truth = scenario_out("hw-truncation-loss")
    assert truth["truncation_mode"] == "hw"
    p = part(truth)
    assert lost_offsets(p["committed_lost"]) == [1]
    (lost,) = p["committed_lost"]
    assert lost["value"].startswith("m-0-0000001|") and lost["acks"] == "all" and lost["acknowledged"]
    assert lost["still_on"] == []  # gone from both replicas
    assert [h["leader"] for h in p["leader_history"]][:2] == [1, 2]


def test_epoch_truncation_keeps_offset_1(scenario_out):
    out, truth = scenario_out("epoch-truncation-safe")
    assert truth["truncation_mode"] == "epoch"
    p = part(truth)
    assert p["committed_lost"] == [] and p["acknowledged_lost"] == []
    for b in (1, 2):
        data = (out / f"broker-{b}" / "t0-0" / "00000000000000000000.log").read_bytes()
        batches, _ = read_log(data)
        second = decode_records(batches[1], records_payload(batches[1], data[batches[1].position :]))
        assert second[0].offset == 1 and second[0].value.startswith(b"m-0-0000001|")


def test_truncation_override(scenario_out):
    _, truth = scenario_out("hw-truncation-loss", truncation="epoch")
    assert truth["truncation_mode"] == "epoch" and part(truth)["committed_lost"] == []


def test_unclean_election(scenario_out):
    out, truth = scenario_out("unclean-election")
    p = part(truth)
    a_end, b_end, c_end = 200, 300, 260  # phases A 50%, B 25%, C 15% of 400 records
    assert p["reference"] == {"broker": 2, "source": "metadata"}
    assert lost_offsets(p["committed_lost"]) == list(range(a_end, b_end))
    assert all(x["still_on"] == [1] and x["acks"] == "1" for x in p["committed_lost"])
    div = {tuple(d["replicas"]): d["first_divergent_offset"] for d in p["divergence"]}
    assert div == {(1, 2): a_end, (1, 3): a_end, (2, 3): None}
    assert {e["follower"]: e["truncation_offset"] for e in p["epoch_truncation"]} == {1: a_end, 3: c_end}
    found = p["expected_findings"]
    assert lost_offsets(found["truncation_loss"]) == list(range(a_end, b_end))
    assert {v["kind"] for v in found["hw_violations"]} == {
        "hw_above_leader_leo",
        "follower_hw_above_leader_hw",
    }
    assert found["divergent_uncommitted"] == []
    unclean = [h for h in p["leader_history"] if h["unclean"]]
    assert [(h["epoch"], h["leader"], h["start_offset"]) for h in unclean] == [(2, 2, a_end)]
    # the controller's metadata log records the unclean election
    data = (out / "controller-100" / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    records = []
    for b in read_log(data)[0]:
        if not b.is_control:
            records += [
                decode_metadata_record(r.value).to_json()
                for r in decode_records(b, records_payload(b, data[b.position :]))
            ]
    changes = [r["data"] for r in records if r["type"] == "PARTITION_CHANGE_RECORD"]
    assert {"isr": [2], "leader": 2, "leaderRecoveryState": 1}.items() <= next(
        c for c in changes if c.get("leader") == 2
    ).items()


def test_acks1_leader_crash(scenario_out):
    _, truth = scenario_out("acks1-leader-crash")
    p = part(truth)
    assert p["committed_lost"] == []
    assert lost_offsets(p["acknowledged_lost"]) == list(range(240, 320))
    assert all(x["acks"] == "1" and x["still_on"] == [1] for x in p["acknowledged_lost"])
    assert p["expected_findings"]["divergent_uncommitted"] == [
        {"broker": 1, "first_offset": 240, "last_offset": 319}
    ]
    assert p["expected_findings"]["truncation_loss"] == []


def test_torn_tail(scenario_out):
    out, truth = scenario_out("torn-tail")
    (fault,) = truth["faults"]
    assert fault["kind"] == "torn-tail" and fault["broker"] == 1
    data = (out / fault["file"]).read_bytes()
    batches, trailing = read_log(data)
    assert trailing == fault["length"] > 0
    assert fault["position"] == len(data) - trailing
    st = part(truth)["replica_state"]["1"]["disk"]
    assert st["recovered_log_end_offset"] == st["log_end_offset"] == batches[-1].next_offset


def test_corrupt_batch(scenario_out):
    out, truth = scenario_out("corrupt-batch")
    (fault,) = truth["faults"]
    assert fault["kind"] == "crc-flip"
    data = (out / fault["file"]).read_bytes()
    other = (out / fault["file"].replace(f"broker-{fault['broker']}", "broker-1")).read_bytes()
    diff = [i for i in range(min(len(data), len(other))) if data[i] != other[i]]
    assert (
        diff == [fault["position"]]
        and data[fault["position"]] ^ other[fault["position"]] == 1 << fault["bit"]
    )
    bad = [b for b in read_log(data)[0] if not b.crc_valid]
    assert [b.position for b in bad] == [fault["batch_position"]]
    st = part(truth)["replica_state"][str(fault["broker"])]["disk"]
    assert st["recovered_log_end_offset"] == fault["batch_base_offset"] >= st["recovery_point_checkpoint"]
    assert all(d["first_divergent_offset"] is None for d in part(truth)["divergence"])


def test_stale_index(scenario_out):
    out, truth = scenario_out("stale-index")
    stale = [f for f in truth["faults"] if f["kind"] == "index-entry-beyond-log"]
    assert stale
    for f in stale:
        path = out / f["file"]
        base = int(path.name.split(".")[0])
        idx = read_offset_index(path.read_bytes(), base)
        assert idx.preallocated and path.stat().st_size == 65536
        off, pos = idx.entries[f["position"] // 8]
        assert pos >= path.with_suffix(".log").stat().st_size


def test_hw_ahead_of_log(scenario_out):
    out, truth = scenario_out("hw-ahead-of-log")
    p = part(truth)
    (v,) = p["expected_findings"]["hw_violations"]
    assert v["kind"] == "hw_above_leo" and v["high_watermark"] > v["compared_to"]
    ckpt = parse_offset_checkpoint(
        (out / f"broker-{v['broker']}" / "replication-offset-checkpoint").read_bytes()
    )
    assert dict(((t, p_), o) for t, p_, o in ckpt.entries)[("t0", 0)] == v["high_watermark"]
    assert any(f["kind"] == "hw-checkpoint-beyond-log" for f in truth["faults"])


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_seeds(scenario_out, seed):
    out, truth = scenario_out("random", seed=seed, records=200, partitions=2)
    validate_tree(out)


def test_same_seed_same_bytes(tmp_path):
    def tree(root: Path) -> dict:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    opts = {"seed": 11, "records": 120}
    run_scenario("random", tmp_path / "a", SimOptions(**opts))
    run_scenario("random", tmp_path / "b", SimOptions(**opts))
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_bad_input_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown scenario"):
        run_scenario("nope", tmp_path / "x", SimOptions())
    with pytest.raises(ValueError, match="compression"):
        run_scenario("clean", tmp_path / "x", SimOptions(compression="brotli"))
    with pytest.raises(ValueError, match="at least 2 brokers"):
        run_scenario("unclean-election", tmp_path / "x", SimOptions(brokers=1))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        run_scenario("clean", tmp_path / "full", SimOptions(records=10))
    run_scenario("clean", tmp_path / "empty-ok", SimOptions(records=10, brokers=1))
