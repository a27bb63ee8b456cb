"""The KRaft timeline (``auditor.kafka.timeline``; the command in ``tests/cli/test_timeline.py``): the real
unclean election of the corpus, a simulated one, and the replay of the newest snapshot then the log agreeing
with the replay of the whole log."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from auditor.cli.timeline import collect
from auditor.kafka.kraft import (
    MetadataReplay,
    config_events,
    config_value,
    latest_snapshot,
    replay_brokers,
    replay_partitions,
)
from auditor.kafka.timeline import EpochLine, audit_timelines, build_timeline, disagreements
from auditor.layout.inventory import complete_kraft_snapshots, segment_logs
from auditor.observe.metadata import METADATA_KEYS, _meta_row, extract_metadata
from auditor.report.timeline import timeline_json, timeline_renderable
from auditor.simulate import SimOptions, run_scenario
from tests.conftest import corpus_path

UNCLEAN = "unclean-leader-election"


def _only(timelines: dict):
    (timeline,) = timelines.values()
    return timeline


@pytest.fixture(scope="module")
def after_rejoin():
    root = corpus_path() / UNCLEAN / "after-old-leader-rejoined"
    return root, _only(collect([str(p) for p in sorted(root.glob("*-*")) if p.name != "dumps"], "ule", 0)[0])


def test_corpus_timeline_shows_the_unclean_election(after_rejoin):
    _root, timeline = after_rejoin
    assert timeline.source["node"] == 100 and timeline.disagreements == []
    (pt,) = timeline.partitions
    assert (pt.topic, pt.partition) == ("ule", 0)
    changes = [
        (c["offset"], c["leader"], c["leader_epoch"], c["partition_epoch"], c["isr"]) for c in pt.changes
    ]
    assert changes[:5] == [
        (62, 3, 0, 0, [3, 1, 2]),  # created, led by 3
        (98, 3, 0, 1, [3, 2]),  # ISR shrinks: partition epoch bumps, leader epoch does not
        (105, 3, 0, 2, [3]),
        (152, -1, 1, 3, [3]),  # leader 3 gone: no leader
        (294, 1, 2, 4, [1]),  # broker 1, outside the ISR [3], elected uncleanly
    ]
    unclean = pt.changes[4]
    assert unclean["unclean"] and unclean["leader_recovery_state"] == 1 and unclean["previous_isr"] == [3]
    assert [c["offset"] for c in pt.changes[5:]] == [325, 359, 420, 431, 438]
    assert pt.changes[6]["leader_recovery_state"] == 0 and pt.changes[6]["isr"] == [1, 2, 3]
    epoch2 = next(ln for ln in pt.epochs if ln.epoch == 2)
    assert epoch2.leader == 1 and epoch2.unclean and epoch2.previous_isr == [3]
    assert epoch2.caches[1] == 1000 and epoch2.batches[1] == (1000, 1499)
    assert epoch2.describe().startswith(
        "epoch 2: leader 1, unclean (leaderRecoveryState 1), previous ISR [3], "
        "from offset 1000 per broker 1's cache"
    )
    assert [(c["name"], c["value"]) for c in pt.configs] == [
        ("min.insync.replicas", "1"),
        ("unclean.leader.election.enable", "true"),
    ]
    kinds = [(b["offset"], b["broker"], b["fenced"], b["in_controlled_shutdown"]) for b in timeline.brokers]
    assert (292, 1, True, False) in kinds and (293, 1, False, False) in kinds  # re-registered, unfenced
    assert (419, 1, False, True) in kinds  # controlled shutdown


def test_corpus_snapshot_plus_log_agrees_with_the_whole_log(after_rejoin):
    """Kafka's order (newest snapshot, then the log from its end offset) and the whole log on disk give the
    same partition state, partition epoch and broker registrations."""
    root, _timeline = after_rejoin
    part_dir = root / "controller-100" / "__cluster_metadata-0"
    snapshots = complete_kraft_snapshots(part_dir)
    assert snapshots, "the corpus controller has a snapshot"

    def rows(replay: MetadataReplay, history: bool) -> list[dict]:
        names: dict[str, str] = {}
        out = []
        for entry in replay.entries(history=history):
            row = _meta_row(len(out), entry, names)
            if row is not None:
                out.append(row)
        return out

    kafka_order = rows(MetadataReplay(segment_logs(part_dir), snapshots, METADATA_KEYS), False)
    whole_log = rows(MetadataReplay(segment_logs(part_dir), [], METADATA_KEYS), False)
    assert any(r["from_snapshot"] for r in kafka_order) and not any(r["from_snapshot"] for r in whole_log)
    a, b = replay_partitions(kafka_order)[("ule", 0)], replay_partitions(whole_log)[("ule", 0)]
    fields = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas", "leader_recovery_state", "elr")
    assert (
        [getattr(a, f) for f in fields]
        == [getattr(b, f) for f in fields]
        == [-1, 4, 9, [3], [3, 1, 2], 0, []]
    )
    snapshot_record = next(
        r for r in kafka_order if r["from_snapshot"] and r["record_type"] == "PARTITION_RECORD"
    )
    # the snapshot states partition epoch 6, exactly what the log's changes up to it add up to
    at_snapshot = [h for h in b.history if h["offset"] < latest_snapshot(snapshots)[0]][-1]
    assert snapshot_record["partition_epoch"] == at_snapshot["partition_epoch"] == 6
    brokers_a, brokers_b = replay_brokers(kafka_order)[0], replay_brokers(whole_log)[0]
    assert brokers_a == brokers_b and all(s.fenced for s in brokers_a.values())


def test_simulated_unclean_election(tmp_path):
    truth = run_scenario("unclean-election", tmp_path / "c", SimOptions(records=200))
    timeline = _only(
        collect(
            [str(tmp_path / "c" / d) for d in sorted(Path(tmp_path / "c").iterdir()) if d.is_dir()],
            None,
            None,
        )[0]
    )
    (pt,) = timeline.partitions
    (unclean,) = [c for c in pt.changes if c.get("unclean")]
    assert unclean["leader_recovery_state"] == 1 and unclean["leader"] not in unclean["previous_isr"]
    line = next(ln for ln in pt.epochs if ln.epoch == unclean["leader_epoch"])
    assert line.unclean and line.start_offset is not None
    (part_truth,) = truth["partitions"]
    lost = part_truth["committed_lost"]
    assert lost and line.start_offset == min(
        r["offset"] for r in lost
    )  # the new epoch starts where loss begins
    assert [c["partition_epoch"] for c in pt.changes] == list(range(len(pt.changes)))


# ------------------------------------------------------------------------------------------ replay units


def _p(seq, kind, **kw):
    base = {
        "node": 1,
        "seq": seq,
        "offset": seq,
        "end_offset": 50,
        "timestamp": 1000 + seq,
        "record_type": kind,
    }
    return {**base, "topic": "t", "topic_id": "T", "partition": 0, **kw}


def test_elr_and_partition_epoch_follow_merge():
    recs = [
        _p(
            0,
            "PARTITION_RECORD",
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1, 2, 3],
            replicas=[1, 2, 3],
        ),
        _p(1, "PARTITION_CHANGE_RECORD", leader=-2, isr=[1], elr=[2, 3], last_known_elr=None),
        _p(2, "PARTITION_CHANGE_RECORD", leader=-1, isr=[], elr=[2, 3], last_known_elr=[1]),
        _p(3, "PARTITION_CHANGE_RECORD", leader=2, isr=[2], elr=[3]),
        _p(4, "PARTITION_CHANGE_RECORD", leader=-2, directories=["a", "b", "c"]),
    ]
    state = replay_partitions(recs)[("t", 0)]
    assert [h["partition_epoch"] for h in state.history] == [0, 1, 2, 3, 4]
    assert [h["leader_epoch"] for h in state.history] == [0, 0, 1, 2, 2]
    assert [h["elr"] for h in state.history] == [[], [2, 3], [2, 3], [3], [3]]
    assert state.history[3]["last_known_elr"] == [1] and state.directories == ["a", "b", "c"]
    # broker 2 came from the ELR, not the (empty) ISR: a clean election under KIP-966
    assert state.history[3]["previous_isr"] == [] and not state.history[3]["unclean"] and state.unclean == []
    recs[3] = {**recs[3], "leader": 1}  # broker 1 was in neither: unclean
    assert [u["leader"] for u in replay_partitions(recs)[("t", 0)].unclean] == [1]


def test_orphan_change_and_skipped_epochs():
    recs = [
        _p(0, "PARTITION_CHANGE_RECORD", leader=3),  # the log on disk starts after the PartitionRecord
        _p(1, "PARTITION_RECORD", leader=1, leader_epoch=0, partition_epoch=0, isr=[1], replicas=[1]),
        _p(
            2,
            "PARTITION_RECORD",
            leader=1,
            leader_epoch=4,
            partition_epoch=9,
            isr=[1],
            replicas=[1],
            offset=-1,
            from_snapshot=True,
        ),
    ]
    state = replay_partitions(recs)[("t", 0)]
    assert [h["offset"] for h in state.history] == [1, -1] and state.gaps == [(1, 3)]
    assert state.covers(0) and not state.covers(2) and state.covers(4) and not state.covers(5)


def test_brokers_and_configs():
    def broker(seq: int, kind: str, **kw) -> dict:
        return {"record_type": kind, "seq": seq, "offset": seq, "broker_id": 1, "broker_epoch": 5, **kw}

    def config(seq: int, rtype: int, resource: str, value: str | None) -> dict:
        topic = resource if rtype == 2 else None
        return {
            "record_type": "CONFIG_RECORD",
            "seq": seq,
            "offset": seq,
            "topic": topic,
            "config_resource_type": rtype,
            "config_resource": resource,
            "config_name": "min.insync.replicas",
            "config_value": value,
        }

    recs = [
        broker(0, "REGISTER_BROKER_RECORD", fenced=True, in_controlled_shutdown=False),
        broker(1, "BROKER_REGISTRATION_CHANGE_RECORD", fenced=False),
        broker(2, "BROKER_REGISTRATION_CHANGE_RECORD", in_controlled_shutdown=True),
        broker(3, "FENCE_BROKER_RECORD"),
        broker(4, "UNREGISTER_BROKER_RECORD"),
        config(5, 4, "", "2"),
        config(6, 4, "1", "3"),
        config(7, 2, "t", "1"),
        config(8, 2, "t", None),
    ]
    brokers, events = replay_brokers(recs)
    assert [(e["fenced"], e["in_controlled_shutdown"], e["registered"]) for e in events] == [
        (True, False, True),
        (False, False, True),
        (False, True, True),
        (True, True, True),
        (True, True, False),
    ]
    cfg = config_events(recs)
    assert config_value(cfg, "t", "min.insync.replicas", 2, until=5) == "1"  # Kafka's default
    assert config_value(cfg, "t", "min.insync.replicas", 2, until=6) == "2"  # cluster default
    assert config_value(cfg, "t", "min.insync.replicas", 1, until=7) == "3"  # the leader's broker config
    assert config_value(cfg, "t", "min.insync.replicas", 1, until=8) == "1"  # the topic's own
    assert config_value(cfg, "t", "min.insync.replicas", 2) == "2"  # topic override deleted


def test_disagreeing_metadata_replicas_are_reported():
    a = [_p(0, "PARTITION_RECORD", leader=1, leader_epoch=0, isr=[1, 2], replicas=[1, 2])]
    a.append(_p(1, "PARTITION_CHANGE_RECORD", leader=2, isr=[2]))
    b = [{**r, "node": 2, "end_offset": 40} for r in a]
    b[1] = {**b[1], "leader": 1, "isr": [1]}
    assert disagreements(a + b) == [
        {
            "offset": 1,
            "nodes": {
                1: ["PARTITION_CHANGE_RECORD t-0 leader 2 isr [2]"],
                2: ["PARTITION_CHANGE_RECORD t-0 leader 1 isr [1]"],
            },
        }
    ]
    timeline = build_timeline(a + b)
    assert timeline.source["node"] == 1 and timeline.partitions[0].state.leader == 2
    assert disagreements(a + [{**r, "node": 2} for r in a]) == []


def test_metadata_rows_carry_the_new_fields():
    root = corpus_path() / UNCLEAN / "after-old-leader-rejoined" / "controller-100"
    rows = extract_metadata(str(root), 100, "c").to_pylist()
    created = next(r for r in rows if r["record_type"] == "PARTITION_RECORD" and not r["from_snapshot"])
    assert created["partition_epoch"] == 0 and len(created["directories"]) == 3
    kinds = {r["record_type"] for r in rows}
    assert {"REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD"} <= kinds
    assert all(r["broker_id"] is not None for r in rows if "BROKER" in r["record_type"])


def test_audit_timelines_from_what_audit_collects():
    created = _p(
        0, "PARTITION_RECORD", leader=1, leader_epoch=0, partition_epoch=0, isr=[1, 2], replicas=[1, 2]
    )
    other = _p(
        2, "PARTITION_RECORD", leader=1, leader_epoch=0, isr=[1], replicas=[1], topic="u", topic_id="U"
    )
    md = [created, _p(1, "PARTITION_CHANGE_RECORD", leader=2, isr=[2], leader_recovery_state=1), other]
    md = [{**r, "cluster": "c"} for r in md]
    key = {"cluster": "c", "topic": "t", "partition": 0}
    summary = [
        {**key, "broker": 1, "epochs": [{"epoch": 0, "start_offset": 0}]},
        {**key, "broker": 2, "epochs": [{"epoch": 0, "start_offset": 0}, {"epoch": 1, "start_offset": 70}]},
    ]
    ranges = [
        {"cluster": "c", "topic": "t", "partition": 0, "broker": 2, "epoch": 1, "first": 70, "last": 99},
        {"cluster": "c", "topic": "t", "partition": 0, "broker": 1, "epoch": 0, "first": 0, "last": 119},
    ]
    out = audit_timelines(md, summary, ranges, [("c", "t", 0)])
    assert list(out) == [("c", "t", 0)]
    (pt,) = out[("c", "t", 0)].partitions
    line = pt.epochs[1]
    assert line.describe() == (
        "epoch 1: leader 2, unclean (leaderRecoveryState 1), previous ISR [1, 2], "
        "from offset 70 per broker 2's cache (metadata offset 1); batches broker 2: 70..99"
    )
    doc = timeline_json(out[("c", "t", 0)])
    assert json.loads(json.dumps(doc))["partitions"][0]["epochs"][1]["startOffset"] == 70
    from auditor.report.terminal import make_console

    console = make_console(io.StringIO(), color=False, width=140)
    console.print(timeline_renderable(out[("c", "t", 0)]))
    assert "epoch 1: leader 2, unclean" in console.file.getvalue()


def test_an_epoch_line_is_written_with_its_published_keys_in_order():
    line = EpochLine(
        2,
        True,
        True,
        leader=3,
        unclean=True,
        leader_recovery_state=1,
        previous_isr=[2],
        isr=[3],
        metadata_offset=41,
        timestamp=1_700_000_000_000,
        caches={3: 1020, 1: 1000},
        batches={3: (1020, 1099)},
        batch_times={3: (1, 2)},
    )
    doc = line.to_dict()
    assert list(doc) == [
        "epoch",
        "inMetadata",
        "covered",
        "leader",
        "unclean",
        "leaderRecoveryState",
        "previousIsr",
        "isr",
        "metadataOffset",
        "timestamp",
        "startOffset",
        "caches",
        "batches",
        "text",
    ]
    assert (doc["leaderRecoveryState"], doc["previousIsr"], doc["metadataOffset"], doc["startOffset"]) == (
        1,
        [2],
        41,
        1020,
    )
    assert doc["caches"] == {"1": 1000, "3": 1020} and doc["batches"] == {"3": {"first": 1020, "last": 1099}}
