"""``kafka-auditor groups`` on the real corpus (skipped without it) and on generated log dirs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from auditor.cli import app
from auditor.simulate import SimOptions, run_scenario
from tests.rules.builder import LogDir
from tests.support.groups import (
    Records,
    classic_group,
    commit_record,
    consumer_join,
    consumer_leave,
    lost_commit_cluster,
    offsets_part,
)

runner = CliRunner()


def groups(*args: str):
    return runner.invoke(app, ["groups", *map(str, args)], env={"COLUMNS": "120", "NO_COLOR": "1"})


def _json(*args: str) -> list[dict]:
    res = groups(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["groups"]


def _end_offsets(corpus: Path) -> dict[tuple[str, int], int]:
    out = {}
    for line in (corpus / "clean" / "_run" / "end-offsets.txt").read_text().split():
        topic, partition, offset = line.rsplit(":", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def test_clean_corpus_groups(corpus):
    rows = _json(corpus / "clean")
    got = {(r["group"], r["offsetsPartition"], r["topic"], r["partition"]): r for r in rows}
    assert {(g, p) for g, p, _, _ in got} == {("group-plain", 2), ("group-txn", 1)}
    assert all(r["offsetsPartitions"] == 3 and r["offsetsPartitionsSource"] == "kraft" for r in rows)
    assert all(r["expectedPartition"] == r["offsetsPartition"] for r in rows)
    plain = {p: got[("group-plain", 2, "plain", p)]["committedOffset"] for p in range(3)}
    assert sum(plain.values()) == 1000  # the scenario's consumer read 1000 records of 'plain'
    ends = _end_offsets(corpus)
    for p in (0, 1):  # group-txn read every committed record of 'txn': it sits at the log end offset
        r = got[("group-txn", 1, "txn", p)]
        assert r["committedOffset"] == ends[("txn", p)] == r["leaderLogEndOffset"] and r["lag"] == 0
    for r in rows:
        assert r["heldBy"] == [1, 2, 3] and r["leaderHolds"] and not r["aboveLogEndOffset"]
        assert r["commitTime"].endswith("Z") and r["commitTimestamp"] > 0
        assert r["lag"] == r["leaderLogEndOffset"] - r["committedOffset"]
    only = _json(corpus / "clean", "--group", "group-txn")
    assert {r["group"] for r in only} == {"group-txn"} and len(only) == 2


def test_single_node_corpus_group(corpus):
    rows = _json(corpus / "single-node")
    assert {(r["group"], r["offsetsPartition"], r["offsetsPartitions"]) for r in rows} == {("g1", 42, 50)}


def test_generated_cluster_text_and_jsonl(tmp_path):
    dirs = lost_commit_cluster(tmp_path)
    res = groups(dirs["broker-1"], dirs["broker-2"])
    assert res.exit_code == 0, res.output
    assert "group g-lost  __consumer_offsets-18 of 50 (default)" in res.stdout
    assert "above LEO by 3" in res.stdout  # committed 18, the newest leader (broker 2) ends at 15
    lines = groups(tmp_path, "--format", "jsonl", "--group", "g-lost").stdout.splitlines()
    (row,) = [json.loads(line) for line in lines]
    assert (row["committedOffset"], row["leader"], row["leaderLogEndOffset"], row["lag"]) == (18, 2, 15, -3)
    assert row["aboveLogEndOffset"] and row["heldBy"] == [1, 2] and row["leaderEpoch"] == 0
    out = tmp_path.parent / f"{tmp_path.name}-groups.json"
    assert groups(tmp_path, "--format", "json", "--output", out).exit_code == 0
    assert {r["group"] for r in json.loads(out.read_text())["groups"]} == {"g-lost", "g-fine"}


def test_errors_are_one_line_exit_2(tmp_path):
    res = groups(tmp_path / "missing")
    assert res.exit_code == 2 and "no such file or directory" in res.output
    assert "Traceback" not in res.output
    dirs = lost_commit_cluster(tmp_path / "c")
    inside = groups(dirs["broker-1"], "--output", dirs["broker-1"] / "x.json")
    assert inside.exit_code == 2 and "inside the scanned directory" in inside.output


def test_undecodable_record_is_a_warning(tmp_path):
    ld = LogDir(tmp_path / "b1")
    offsets_part(ld, "billing").add(
        Records(specs=[(b"\x00", b"junk"), commit_record("billing", "orders", 0, 4, epoch=0)])
    )
    ld.write()
    res = groups(ld.root, "--format", "jsonl")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["committedOffset"] == 4
    (warning,) = [line for line in res.stderr.splitlines() if "warning:" in line]
    assert "__consumer_offsets-9" in warning and "record at offset 0" in warning


TOPIC_ID = "JhDLizgWSga6dDKcLH5WFQ"
MEMBER = "jCzgEC6nReO32M8qi0xG9Q"


def test_groups_of_both_protocols_text_and_json(tmp_path):
    ld = LogDir(tmp_path / "b1")
    ld.part("orders", 0).data(1, records=10)
    offsets_part(ld, "classic-app").add(
        Records(specs=[classic_group("classic-app", 4, {"m-1": [("orders", 0)]})]),
        Records(specs=[commit_record("classic-app", "orders", 0, 6, epoch=0)]),
    )
    offsets_part(ld, "kip848-app").add(
        Records(specs=consumer_join("kip848-app", MEMBER, "orders", TOPIC_ID, [0])),
        Records(specs=[commit_record("kip848-app", "orders", 0, 9, epoch=0)]),
    )
    offsets_part(ld, "gone-app").add(
        Records(specs=consumer_join("gone-app", "m-9", "orders", TOPIC_ID, [0])),
        Records(specs=consumer_leave("gone-app", "m-9", 2)),
    )
    ld.write()
    doc = json.loads(groups(ld.root, "--format", "json").stdout)
    states = {s["group"]: s for s in doc["groupStates"]}
    assert set(states) == {"classic-app", "kip848-app", "gone-app"}  # gone-app committed nothing
    classic, kip848, gone = states["classic-app"], states["kip848-app"], states["gone-app"]
    assert (classic["protocol"], classic["state"], classic["generation"], classic["protocolName"]) == (
        "classic",
        "Stable",
        4,
        "range",
    )
    (m,) = classic["members"]
    assert (m["memberId"], m["assignedPartitions"], m["protocol"]) == (
        "m-1",
        [{"topic": "orders", "partition": 0}],
        "classic",
    )
    assert (kip848["protocol"], kip848["state"], kip848["groupEpoch"], kip848["assignmentEpoch"]) == (
        "consumer",
        "Stable",
        1,
        1,
    )
    (m,) = kip848["members"]
    assert (m["memberId"], m["memberEpoch"], m["memberState"], m["clientId"]) == (
        MEMBER,
        1,
        "STABLE",
        "console-consumer",
    )
    assert m["assignedPartitions"] == m["targetPartitions"] == [{"topic": "orders", "partition": 0}]
    assert kip848["offsets"] == [{"topic": "orders", "partition": 0, "committedOffset": 9, "leaderEpoch": 0}]
    assert (gone["state"], gone["groupEpoch"], gone["members"], gone["offsets"]) == ("Empty", 2, [], [])
    rows = {r["group"]: r for r in doc["groups"]}
    assert set(rows) == {"classic-app", "kip848-app"}
    assert {g: (r["protocol"], r["groupState"], r["committedOffset"]) for g, r in rows.items()} == {
        "classic-app": ("classic", "Stable", 6),
        "kip848-app": ("consumer", "Stable", 9),
    }
    text = groups(ld.root).stdout
    assert "classic (consumer) protocol, Stable: generation 4, protocol range, leader m-1, 1 member" in text
    assert "consumer protocol, Stable: group epoch 1, assignment epoch 1, 1 member" in text
    assert "consumer protocol, Empty: group epoch 2, assignment epoch 1, 0 members" in text
    assert MEMBER in text and "STABLE" in text and "no committed offsets" in text
    only = json.loads(groups(ld.root, "--format", "json", "--group", "kip848-app").stdout)
    assert [s["group"] for s in only["groupStates"]] == ["kip848-app"]
    assert [r["group"] for r in only["groups"]] == ["kip848-app"]


def test_simulated_cluster_lists_both_protocols(tmp_path):
    """``simulate group-commit-lost-range``: safe-app consumes with the KIP-848 consumer protocol, the other
    groups commit as classic (simple) groups; ``groups`` shows each with the protocol the truth gives."""
    truth = run_scenario("group-commit-lost-range", tmp_path / "sim", SimOptions(records=400, partitions=2))
    expected = {g["group"]: g["protocol"] for g in truth["groups"]}
    assert expected == {"safe-app": "consumer", "orders-app": "classic", "reports-app": "classic"}
    doc = json.loads(groups(tmp_path / "sim", "--format", "json").stdout)
    states = {s["group"]: s for s in doc["groupStates"]}
    assert {g: s["protocol"] for g, s in states.items()} == expected
    safe = states["safe-app"]
    assert (safe["state"], safe["groupEpoch"], safe["assignmentEpoch"], safe["coordinator"]) == (
        "Stable",
        1,
        1,
        3,
    )
    (m,) = safe["members"]
    everything = [{"topic": "t0", "partition": p} for p in range(2)]
    assert (m["memberEpoch"], m["assignedPartitions"], m["targetPartitions"]) == (1, everything, everything)
    assert all(
        states[g]["state"] == "Empty" and states[g]["protocolType"] is None
        for g in expected
        if expected[g] == "classic"
    )
    # the committed offsets are the truth's, whichever the protocol
    committed = {
        (g["group"], p["topic"], p["partition"]): p["committed_offset"]
        for g in truth["groups"]
        for p in g["partitions"]
    }
    assert {
        (r["group"], r["topic"], r["partition"]): r["committedOffset"] for r in doc["groups"]
    } == committed
    text = groups(tmp_path / "sim").stdout
    assert "group safe-app" in text and "consumer protocol, Stable" in text
    assert "classic protocol, Empty: offsets only" in text
