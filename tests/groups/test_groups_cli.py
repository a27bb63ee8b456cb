"""``kafka-auditor groups`` on the real corpus (skipped without it) and on generated log dirs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from auditor.cli import app
from tests.groups.fixture import Records, commit_record, lost_commit_cluster, offsets_part
from tests.rules.builder import LogDir

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
