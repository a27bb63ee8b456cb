"""The scenarios of replicas by Kafka's identity: a topic deleted and re-created while a broker was down
(``recreated-topic``), that broker restarted (``recreated-topic-restarted``: ``-stray`` directories), and two
log dirs per broker with interrupted moves between them (``jbod-move``). The written layout is read back with
the project's parsers and checked against the ground truth; ``scan`` must report exactly the directory
codes the ground truth gives (KA508, KA509, KA510)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from auditor.findings import Severity
from auditor.scan import scan
from auditor.simulate import SCENARIOS, SimOptions, run_scenario
from auditor.simulate.coordinators import OFFSETS_TOPIC
from parsers.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from parsers.consumer_offsets import decode_offsets_key
from parsers.dirfiles import parse_meta_properties, parse_partition_metadata
from parsers.metadata import decode_metadata_record
from parsers.record_batch import decode_records, records_payload
from tests.simulate.simvalidate import read_log, validate_tree

IDENTITY = ("recreated-topic", "recreated-topic-restarted", "jbod-move")
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
RENAMED = re.compile(r"(.+)-(\d+)\.[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}-(delete|stray|future)")
"""``<topic>-<partition>.<UUID.randomUUID without dashes><suffix>`` (a version 4 UUID)."""


def _records(pdir: Path) -> list[tuple]:
    """(batch header, record) of every record in a partition directory, in offset order."""
    out = []
    for log in sorted(pdir.glob("*.log")):
        data = log.read_bytes()
        for b in read_log(data)[0]:
            out += [(b, r) for r in decode_records(b, records_payload(b, data[b.position :]))]
    return out


def metadata(node: Path) -> list[tuple[int, int, str, dict]]:
    """(offset, batch timestamp, record type, data) of every metadata record of a node's metadata log."""
    return [
        (r.offset, b.max_timestamp, rec["type"], rec["data"])
        for b, r in _records(node / "__cluster_metadata-0")
        if not b.is_control
        for rec in [decode_metadata_record(r.value).to_json()]
    ]


def replay(records: list[tuple[int, int, str, dict]]) -> tuple[dict[str, str], dict[tuple[str, int], dict]]:
    """Topic name -> ID and (topic ID, partition) -> {replicas, directories} after the records."""
    topics: dict[str, str] = {}
    parts: dict[tuple[str, int], dict] = {}
    for _offset, _ts, kind, d in records:
        if kind == "TOPIC_RECORD":
            topics[d["name"]] = d["topicId"]
        elif kind == "REMOVE_TOPIC_RECORD":
            topics = {n: i for n, i in topics.items() if i != d["topicId"]}
            parts = {k: v for k, v in parts.items() if k[0] != d["topicId"]}
        elif kind == "PARTITION_RECORD":
            parts[(d["topicId"], d["partitionId"])] = {k: d[k] for k in ("replicas", "directories")}
        elif kind == "PARTITION_CHANGE_RECORD":
            state = parts[(d["topicId"], d["partitionId"])]
            state.update({k: d[k] for k in ("replicas", "directories") if d.get(k) is not None})
    return topics, parts


def java_uuid_key(text: str) -> tuple[int, int]:
    raw = base64.urlsafe_b64decode(text + "==")
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


def topic_id(pdir: Path) -> str:
    return parse_partition_metadata((pdir / "partition.metadata").read_bytes()).topic_id


def checkpoint(log_dir: Path, name: str) -> dict[tuple[str, int], int]:
    return {(t, p): o for t, p, o in parse_offset_checkpoint((log_dir / name).read_bytes()).entries}


def batches(pdir: Path) -> list:
    return [b for log in sorted(pdir.glob("*.log")) for b in read_log(log.read_bytes())[0]]


def leo(pdir: Path) -> int:
    found = batches(pdir)
    return found[-1].next_offset if found else 0


def t0_dirs(log_dir: Path) -> list[str]:
    return sorted(p.name for p in log_dir.iterdir() if p.is_dir() and p.name.startswith("t0-"))


# ------------------------------------------------------------------------------------ recreated-topic


@pytest.mark.parametrize("kw", [{}, {"partitions": 4, "seed": 3, "records": 150}])
def test_recreated_topic_layout(scenario_out, kw):
    out, truth = scenario_out("recreated-topic", **kw)
    n = max(3, kw.get("partitions", 1))
    (deletion,) = truth["topic_deletions"]
    old, new = deletion["topic_id"], next(t["topic_id"] for t in truth["topics"] if t["name"] == "t0")
    assert old != new and deletion["current_topic_id"] == new
    assert (deletion["deleted_on"], deletion["kept_on"]) == ([1, 2], [3])
    # partition.metadata: the old topic ID on broker 3, the new one on brokers 1 and 2
    assert t0_dirs(out / "broker-3") == [f"t0-{p}" for p in range(n)]
    for p in range(n):
        assert topic_id(out / "broker-3" / f"t0-{p}") == old
        for b in (1, 2):
            assert topic_id(out / f"broker-{b}" / f"t0-{p}") == new
    # broker 3 keeps its old HW and recovery-point checkpoint entries; brokers 1 and 2 hold the new ones
    hw3 = checkpoint(out / "broker-3", "replication-offset-checkpoint")
    for inc in truth["incarnations"]:
        tp = (inc["topic"], inc["partition"])
        pdir = out / inc["log_dir"] / inc["dir"]
        assert (inc["broker"], inc["dir_kind"], inc["topic_id"], inc["current_topic_id"]) == (
            3,
            "live",
            old,
            new,
        )
        assert hw3[tp] == inc["high_watermark_checkpoint"] == inc["log_end_offset"] == leo(pdir)
        assert inc["records"] == sum(1 for b, _r in _records(pdir) if not b.is_control)
        assert inc["bytes"] == sum(f.stat().st_size for f in pdir.glob("*.log"))
        assert [
            list(e)
            for e in parse_leader_epoch_checkpoint((pdir / "leader-epoch-checkpoint").read_bytes()).entries
        ] == inc["leader_epoch_checkpoint"]
    assert sorted(i["partition"] for i in truth["incarnations"]) == list(range(n))
    for b in (1, 2):
        hw = checkpoint(out / f"broker-{b}", "replication-offset-checkpoint")
        rp = checkpoint(out / f"broker-{b}", "recovery-point-offset-checkpoint")
        for p in range(n):
            assert hw[("t0", p)] == rp[("t0", p)] == leo(out / f"broker-{b}" / f"t0-{p}")
    # the -delete directories of brokers 1 and 2 (they stopped within file.delete.delay.ms)
    deleted = {(d["broker"], d["dir"]): d for d in truth["deleted_replicas"]}
    on_disk = {(b, name) for b in (1, 2) for name in t0_dirs(out / f"broker-{b}") if name.endswith("-delete")}
    assert set(deleted) == on_disk and len(on_disk) == 2 * n
    for (b, name), d in deleted.items():
        m = RENAMED.fullmatch(name)
        assert m and m.group(1, 2, 3) == ("t0", str(d["partition"]), "delete")
        assert topic_id(out / f"broker-{b}" / name) == old == d["topic_id"]
        assert (
            d["log_end_offset"]
            == leo(out / f"broker-{b}" / name)
            > leo(out / f"broker-{b}" / f"t0-{d['partition']}")
        )
        assert d["high_watermark_checkpoint"] is None and d["scan_code"] == "KA509"
    # the new incarnation: no divergence, loss or HW violation, replicas 1 and 2 only
    for part in (p for p in truth["partitions"] if p["topic"] == "t0"):
        assert part["replicas"] == [1, 2] and set(part["replica_state"]) == {"1", "2"}
        assert all(d["first_divergent_offset"] is None for d in part["divergence"])
        assert part["committed_lost"] == [] and part["acknowledged_lost"] == []
        assert not any(part["expected_findings"].values())
    assert truth["expected_codes"] == ["KA605", "KA608"]
    validate_tree(out)


def test_recreated_topic_metadata_log(scenario_out):
    out, truth = scenario_out("recreated-topic")
    (deletion,) = truth["topic_deletions"]
    old, new = deletion["topic_id"], truth["topics"][-1]["topic_id"]
    records = metadata(out / "controller-100")
    kinds = [
        (k, d.get("topicId")) for _o, _t, k, d in records if k in ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD")
    ]
    assert kinds[-3:] == [("TOPIC_RECORD", old), ("REMOVE_TOPIC_RECORD", old), ("TOPIC_RECORD", new)]
    removal = next((o, t) for o, t, k, _d in records if k == "REMOVE_TOPIC_RECORD")
    assert removal == (deletion["remove_topic_offset"], deletion["remove_topic_timestamp"])
    for inc in truth["incarnations"]:
        assert (inc["remove_topic_offset"], inc["remove_topic_timestamp"]) == removal
    created = {
        d["partitionId"]: d["replicas"]
        for _o, _t, k, d in records
        if k == "PARTITION_RECORD" and d["topicId"] == old
    }
    assert created and all(r == [1, 2, 3] for r in created.values())
    topics, parts = replay(records)
    assert topics["t0"] == new
    dirs = {e["broker"]: e["directory_id"] for e in truth["log_dirs"]}
    for p in range(deletion["partitions"]):
        assert (old, p) not in parts
        assert parts[(new, p)] == {"replicas": [1, 2], "directories": [dirs[1], dirs[2]]}
    # broker 3 was down: its replica of the metadata log ends before the deletion
    assert all(k != "REMOVE_TOPIC_RECORD" for _o, _t, k, _d in metadata(out / "broker-3"))
    assert replay(metadata(out / "broker-3"))[0]["t0"] == old
    for b in (1, 2):
        assert replay(metadata(out / f"broker-{b}"))[0]["t0"] == new


def test_recreated_topic_offset_tombstones(scenario_out):
    """The group coordinator wrote a tombstone for every offset committed on the deleted incarnation; the
    groups' truth keeps only the commits made after them."""
    out, truth = scenario_out("recreated-topic")
    (deletion,) = truth["topic_deletions"]
    tombstones = deletion["offset_tombstones"]
    assert {(t["group"], t["partition"]) for t in tombstones} == {
        (g, p) for g in ("orders-app", "billing-app") for p in range(deletion["partitions"])
    }
    for t in tombstones:
        assert t["status"] == "acked" and t["holders"] == [1, 2]
        for b in t["holders"]:
            at = [
                r
                for _b, r in _records(out / f"broker-{b}" / f"{OFFSETS_TOPIC}-{t['offsets_partition']}")
                if r.offset >= t["record_offset"]
            ]
            keys = [decode_offsets_key(r.key)["data"] for r in at if r.value is None]
            assert {"group": t["group"], "topic": "t0", "partition": t["partition"]}.items() <= next(
                k for k in keys if (k["group"], k["partition"]) == (t["group"], t["partition"])
            ).items()
    groups = {g["group"]: g for g in truth["groups"]}
    new_leo = {
        p["partition"]: p["replica_state"]["1"]["disk"]["log_end_offset"]
        for p in truth["partitions"]
        if p["topic"] == "t0"
    }
    for part in groups["orders-app"]["partitions"]:  # re-read the new incarnation from 0 to its end
        assert part["committed_offset"] == new_leo[part["partition"]]
        assert [c["kind"] for c in part["consequences"]] == ["ok"]
    for part in groups["billing-app"]["partitions"]:  # only committed on the deleted incarnation
        assert part["committed_offset"] is None and [c["kind"] for c in part["consequences"]] == ["ok"]
    assert not {"KA720", "KA721", "KA723"} & set(truth["expected_codes"])


def test_recreated_topic_restarted_layout(scenario_out):
    out, truth = scenario_out("recreated-topic-restarted")
    (deletion,) = truth["topic_deletions"]
    old = deletion["topic_id"]
    n = deletion["partitions"]
    strays = t0_dirs(out / "broker-3")
    assert len(strays) == n and sorted(i["dir"] for i in truth["incarnations"]) == strays
    for inc in truth["incarnations"]:
        m = RENAMED.fullmatch(inc["dir"])
        assert m and m.group(1, 2, 3) == ("t0", str(inc["partition"]), "stray")
        assert (inc["dir_kind"], inc["topic_id"], inc["scan_code"], inc["expected_codes"]) == (
            "stray",
            old,
            "KA508",
            ["KA605"],
        )
        assert topic_id(out / "broker-3" / inc["dir"]) == old
        assert inc["log_end_offset"] == leo(out / "broker-3" / inc["dir"]) > 0
        assert inc["high_watermark_checkpoint"] is None
    # the stray logs lost their checkpoint entries; the -delete directories are gone (file.delete.delay.ms)
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        assert not any(t == "t0" for t, _p in checkpoint(out / "broker-3", name))
    assert truth["deleted_replicas"] == [] and not any(
        name.endswith("-delete") for b in (1, 2) for name in t0_dirs(out / f"broker-{b}")
    )
    assert any(e["event"] == "stray-log" for e in truth["events"])
    # broker 3 caught up with the metadata log when it started again
    topics, parts = replay(metadata(out / "broker-3"))
    assert topics["t0"] != old and all(parts[(topics["t0"], p)]["replicas"] == [1, 2] for p in range(n))
    assert truth["expected_codes"] == ["KA605"]
    validate_tree(out)


# ------------------------------------------------------------------------------------------ jbod-move


def test_jbod_log_dirs_and_directory_assignment(scenario_out):
    out, truth = scenario_out("jbod-move")
    log_dirs = truth["log_dirs"]
    assert [(e["broker"], e["dir"]) for e in log_dirs] == [
        (b, name) for b in (1, 2, 3) for name in (f"broker-{b}", f"broker-{b}-dir1")
    ]
    for e in log_dirs:
        props = parse_meta_properties((out / e["dir"] / "meta.properties").read_bytes())
        assert (props.node_id, props.cluster_id, props.directory_id) == (
            e["broker"],
            truth["cluster_id"],
            e["directory_id"],
        )
        assert (out / e["dir"] / "__cluster_metadata-0").is_dir() == e["metadata_log_dir"]
        assert (out / e["dir"] / ".kafka_cleanshutdown").exists()
    assert len({e["directory_id"] for e in log_dirs}) == len(log_dirs)
    dir_of = {e["dir"]: e["directory_id"] for e in log_dirs}
    records = metadata(out / "controller-100")
    registered = {d["brokerId"]: d["logDirs"] for _o, _t, k, d in records if k == "REGISTER_BROKER_RECORD"}
    for b in (1, 2, 3):  # sorted as Uuid.compareTo does: signed most, then least significant bits
        assert set(registered[b]) == {dir_of[f"broker-{b}"], dir_of[f"broker-{b}-dir1"]}
        assert registered[b] == sorted(registered[b], key=java_uuid_key)
    created = [
        d
        for _o, _t, k, d in records
        if k == "PARTITION_RECORD" and d["topicId"] == truth["topics"][0]["topic_id"]
    ]
    assert created and all(d["directories"] == [UNASSIGNED] * 3 for d in created)
    # the final assignment names the log dir holding each live replica, except the mismatch's
    _topics, parts = replay(records)
    mismatches = {(m["broker"], m["topic"], m["partition"]): m for m in truth["directory_mismatches"]}
    seen = 0
    for spec in truth["topics"]:
        for p in range(spec["partitions"]):
            state = parts[(spec["topic_id"], p)]
            for b, assigned in zip(state["replicas"], state["directories"], strict=True):
                holding = [
                    d
                    for d in (f"broker-{b}", f"broker-{b}-dir1")
                    if (out / d / f"{spec['name']}-{p}").is_dir()
                ]
                assert len(holding) == 1
                m = mismatches.get((b, spec["name"], p))
                if m is None:
                    assert assigned == dir_of[holding[0]]
                else:
                    seen += 1
                    assert (m["log_dir"], m["directory_id"]) == (holding[0], dir_of[holding[0]])
                    assert (
                        assigned
                        == m["assigned_directory_id"]
                        == dir_of[m["assigned_log_dir"]]
                        != dir_of[holding[0]]
                    )
    assert seen == len(mismatches) == 1
    assert truth["expected_codes"] == ["KA607", "KA610"]


def test_jbod_future_dirs(scenario_out):
    out, truth = scenario_out("jbod-move")
    moves = {m["broker"]: m for m in truth["moves"]}
    assert set(moves) == {2, 3}
    assert not moves[2]["caught_up"] and moves[3]["caught_up"]
    for b, m in moves.items():
        future = out / m["target_log_dir"] / m["dir"]
        live = out / m["source_log_dir"] / f"{m['topic']}-{m['partition']}"
        assert m["target_log_dir"] != m["source_log_dir"] and m["target_log_dir"].startswith(f"broker-{b}")
        match = RENAMED.fullmatch(m["dir"])
        assert match and match.group(1, 2, 3) == (m["topic"], str(m["partition"]), "future")
        assert topic_id(future) == topic_id(live) == m["topic_id"]
        assert [p.name for p in (out / m["source_log_dir"]).iterdir() if p.name.endswith("-future")] == []
        # the future log is a prefix of the live one, batch for batch
        fut_batches = [(x.base_offset, x.crc) for x in batches(future)]
        live_batches = [(x.base_offset, x.crc) for x in batches(live)]
        assert fut_batches == live_batches[: len(fut_batches)] and len(set(fut_batches)) == len(fut_batches)
        assert (leo(future), leo(live)) == (m["future_log_end_offset"], m["log_end_offset"])
        # the future log's entries are in the checkpoints of its own log dir, the live one's in its own
        assert checkpoint(out / m["target_log_dir"], "replication-offset-checkpoint") == {
            (m["topic"], m["partition"]): m["future_high_watermark_checkpoint"]
        }
        assert (
            checkpoint(out / m["source_log_dir"], "replication-offset-checkpoint")[
                (m["topic"], m["partition"])
            ]
            == m["log_end_offset"]
        )
    assert 0 < moves[2]["future_log_end_offset"] < moves[2]["log_end_offset"]
    assert moves[2]["assigned_directory_id"] == moves[2]["source_directory_id"]
    assert moves[3]["future_log_end_offset"] == moves[3]["log_end_offset"]
    assert moves[3]["assigned_directory_id"] == moves[3]["target_directory_id"]
    for part in truth["partitions"]:
        assert all(d["first_divergent_offset"] is None for d in part["divergence"])
        assert not any(part["expected_findings"].values()) and part["committed_lost"] == []
    validate_tree(out)


def test_jbod_with_several_topics_and_partitions(scenario_out):
    out, truth = scenario_out("jbod-move", topics=2, partitions=3, seed=4, records=120)
    # replicas spread over both log dirs of each broker (the dir with the fewest logs first)
    for b in (1, 2, 3):
        counts = [
            sum(
                1
                for p in (out / d).iterdir()
                if p.is_dir() and not p.name.startswith("__") and "." not in p.name
            )
            for d in (f"broker-{b}", f"broker-{b}-dir1")
        ]
        assert sum(counts) == 6 and abs(counts[0] - counts[1]) <= 1
    assert len(truth["moves"]) == 2 and len(truth["directory_mismatches"]) == 1
    validate_tree(out)


# -------------------------------------------------------------------------------------- every scenario


@pytest.mark.parametrize("name", IDENTITY)
def test_descriptions_name_the_expected_codes(scenario_out, name):
    _out, truth = scenario_out(name)
    description = SCENARIOS[name].description
    codes = set(truth["expected_codes"]) | {
        e["scan_code"] for k in ("incarnations", "deleted_replicas", "moves") for e in truth[k]
    }
    assert codes and all(code in description for code in codes)


def _dir_of(finding) -> str:
    path = Path(finding.file)
    return path.parent.name if path.name == "partition.metadata" else path.name


@pytest.mark.parametrize("name", IDENTITY)
def test_scan_reports_the_identity_directories(scenario_out, name):
    out, truth = scenario_out(name)
    expected = {
        (e["scan_code"], e["broker"], e["topic"], e["partition"], e["dir"])
        for k in ("incarnations", "deleted_replicas", "moves")
        for e in truth[k]
    }
    result = scan([out], jobs=1)
    found = {
        (f.code, f.broker, f.topic, f.partition, _dir_of(f))
        for f in result.findings
        if f.code in ("KA508", "KA509", "KA510", "KA511")
    }
    assert found == expected and expected
    assert [
        f for f in result.findings if f.severity > Severity.INFO and f.code not in ("KA508", "KA510")
    ] == []


@pytest.mark.parametrize("name", IDENTITY)
def test_same_seed_same_bytes(tmp_path, name):
    def tree(root: Path) -> dict:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    run_scenario(name, tmp_path / "a", SimOptions(seed=9, records=60))
    run_scenario(name, tmp_path / "b", SimOptions(seed=9, records=60))
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_too_few_brokers(tmp_path):
    for name in IDENTITY:
        with pytest.raises(ValueError, match="at least 3 brokers"):
            run_scenario(name, tmp_path / name, SimOptions(brokers=2))
