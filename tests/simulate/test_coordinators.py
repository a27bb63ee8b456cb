"""The simulator's group and transaction coordinators: what they write into ``__consumer_offsets`` and
``__transaction_state`` (read back with the project's parsers), transaction markers on every partition, and
the ground truth of the consumer-group and transaction scenarios (issue 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.simulate import SimOptions, run_scenario
from auditor.simulate.coordinators import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    coordinator_partition,
    java_string_hash,
)
from parsers.consumer_offsets import decode_offsets_key, decode_offsets_value
from parsers.control import decode_control_record
from parsers.record_batch import decode_records, records_payload
from parsers.transaction_state import decode_txn_key, decode_txn_value
from tests.simulate.simvalidate import read_log, validate_tree


def _records(pdir: Path) -> list[tuple]:
    """(batch header, record) of every record in a partition directory, in offset order."""
    out = []
    for log in sorted(pdir.glob("*.log")):
        data = log.read_bytes()
        batches, _tail = read_log(data)
        for b in batches:
            for r in decode_records(b, records_payload(b, data[b.position :])):
                out.append((b, r))
    return out


def _part(truth: dict, topic: str, partition: int = 0) -> dict:
    return next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (topic, partition))


def test_java_string_hash_and_coordinator_partition():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # a surrogate pair: two UTF-16 units
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert coordinator_partition("polygenelubricants", 7) == 0  # Utils.abs(Integer.MIN_VALUE) = 0
    # the real corpus: group-plain in __consumer_offsets-2 and group-txn in -1 of 3, g1 in -42 of 50
    assert coordinator_partition("group-plain", 3) == 2
    assert coordinator_partition("group-txn", 3) == 1
    assert coordinator_partition("g1", 50) == 42


def test_offset_commits_decode_and_match_the_truth(scenario_out):
    out, truth = scenario_out("group-commit-lost-range", partitions=2)
    validate_tree(out)
    seen = {}
    joins: dict[str, list[tuple]] = {}
    for p in range(3):
        for b, r in _records(out / "broker-3" / f"{OFFSETS_TOPIC}-{p}"):
            key, value = decode_offsets_key(r.key), decode_offsets_value(decode_offsets_key(r.key), r.value)
            if key["type"] != "1":  # a KIP-848 consumer group's join (before its first commit)
                group = key["data"]["groupId"]
                assert coordinator_partition(group, 3) == p and group not in {g for g, _, _ in seen}
                joins.setdefault(group, []).append((int(key["type"]), b.base_offset, key, value))
                continue
            assert key["type"] == "1" and value["version"] == "3"
            assert coordinator_partition(key["data"]["group"], 3) == p
            assert b.producer_id == -1 and not b.is_transactional
            d = key["data"]
            seen[(d["group"], d["topic"], d["partition"])] = (value["data"], b.base_offset, p)
    commits = {
        (g["group"], c["topic"], c["partition"]): (c, g["offsets_partition"])
        for g in truth["groups"]
        for c in g["commits"]
    }
    assert set(seen) == set(commits) and len(commits) == 3 * 2
    # safe-app consumes with the KIP-848 protocol: one heartbeat batch, in Kafka 4.0's order
    protocols = {g["group"]: g["protocol"] for g in truth["groups"]}
    assert protocols == {"safe-app": "consumer", "orders-app": "classic", "reports-app": "classic"}
    (join,) = joins.values()
    assert [t for t, *_ in join] == [5, 4, 3, 7, 6, 8] and len({base for _, base, _, _ in join}) == 1
    by_type = {t: (key["data"], value["data"]) for t, _, key, value in join}
    member = by_type[5][0]["memberId"]
    assert by_type[8][0] == by_type[7][0] == {"groupId": "safe-app", "memberId": member}
    assert by_type[5][1]["subscribedTopicNames"] == ["t0"] and by_type[3][1] == {"epoch": 1}
    assigned = by_type[8][1]["assignedPartitions"]
    assert assigned == by_type[7][1]["topicPartitions"] and assigned[0]["partitions"] == [0, 1]
    t0 = next(t["topic_id"] for t in truth["topics"] if t["name"] == "t0")
    assert assigned[0]["topicId"] == by_type[4][1]["topics"][0]["topicId"] == t0
    assert (by_type[8][1]["memberEpoch"], by_type[8][1]["state"], by_type[6][1]) == (
        1,
        0,
        {"assignmentEpoch": 1},
    )
    for k, (c, part) in commits.items():
        value, record_offset, p = seen[k]
        assert (value["offset"], value["leaderEpoch"], value["commitTimestamp"]) == (
            c["offset"],
            c["leader_epoch"],
            c["commit_timestamp"],
        )
        assert (record_offset, p, c["holders"]) == (c["record_offset"], part, [3])
    for g in truth["groups"]:
        for tp in g["partitions"]:
            kinds = [c["kind"] for c in tp["consequences"]]
            expected = {
                "safe-app": ["ok"],
                "orders-app": ["in-lost-range"],
                "reports-app": ["in-lost-range", "above-leo"],
            }
            assert kinds == expected[g["group"]]
            if g["group"] == "orders-app":
                (c,) = tp["consequences"]
                assert (
                    c["consumed_gone"] == c["skipped"] == c["committed_offset"] - c["first_gone_offset"] > 0
                )
    assert truth["expected_codes"] == ["KA710", "KA720", "KA721"]


def test_transaction_log_and_markers_on_every_partition(scenario_out):
    out, truth = scenario_out("txn-marker-lost", partitions=2)
    stats = validate_tree(out)
    assert stats["aborted_txns"] > 0
    states: dict[str, list[str]] = {}
    for p in range(3):
        for _b, r in _records(out / "broker-3" / f"{TRANSACTION_STATE_TOPIC}-{p}"):
            tid = decode_txn_key(r.key)["data"]["transactionalId"]
            assert coordinator_partition(tid, 3) == p
            value = decode_txn_value(r.value)
            states.setdefault(tid, []).append(value["state"])
            if value["state"] in ("Ongoing", "PrepareCommit", "PrepareAbort"):
                assert value["data"]["transactionPartitions"][0]["topic"] == "t0"
    assert len(states) == 2  # the first producer and its replacement
    for seq in states.values():
        assert seq[0] == "Ongoing" and seq[-1] in ("CompleteCommit", "CompleteAbort")
        for i, s in enumerate(seq):
            if s.startswith("Prepare"):
                assert seq[i + 1] == "Complete" + s[len("Prepare") :]
    # markers on every partition of each transaction: on the old leader (which had all of the first
    # producer's transactions) no transaction is left open and each partition holds one marker per
    # transaction that included it
    old = next(e["transactional_id"] for e in truth["transactions"] if e["producer_id"] == 0)
    prepared = [
        e for e in truth["transactions"] if e["transactional_id"] == old and e["state"].startswith("Prepare")
    ]
    for p in range(2):
        ends: dict[int, str] = {}
        markers = 0
        for b, r in reversed(_records(out / "broker-1" / f"t0-{p}")):
            if b.is_control:
                ends[b.producer_id] = decode_control_record(r.key, r.value).type_name
                markers += 1
            elif b.is_transactional:
                assert b.producer_id in ends, (p, r.offset)
        assert markers == sum(["t0", p] in e["transaction_partitions"] for e in prepared) > 0
    for p in range(2):
        part = _part(truth, "t0", p)
        (hang,) = part["hanging_transactions"]
        assert hang["leader"] == 2 and hang["expected_codes"] == ["KA713", "KA714"]
        assert hang["markers_elsewhere"][0]["broker"] == 1
        assert hang["coordinator"]["state"] in ("CompleteCommit", "CompleteAbort")
    assert truth["expected_codes"] == ["KA710", "KA712", "KA713", "KA714"]


def test_transaction_aware_loss_truth(scenario_out):
    """Lost committed records exclude aborted and open records and the markers, which are listed apart; the
    simulation's own committed_lost agrees with what the files show."""
    out, truth = scenario_out("txn-marker-lost")
    p = _part(truth, "t0")
    ef = p["expected_findings"]
    lost = {x["offset"] for x in ef["truncation_loss"]}
    excluded = {x["offset"] for x in ef["truncation_loss_excluded"]}
    markers = {m["offset"] for m in ef["lost_markers"]}
    assert lost and excluded and markers
    assert {x["state"] for x in ef["truncation_loss_excluded"]} == {"aborted"}
    assert not (lost & excluded) and not (lost & markers) and not (excluded & markers)
    assert {x["offset"] for x in p["committed_lost"]} == lost
    # read broker 1's files: each lost record's transaction ends with COMMIT, each excluded one with ABORT
    recs = _records(out / "broker-1" / "t0-0")
    ends = {}
    for b, r in reversed(recs):
        if b.is_control:
            ends[b.producer_id] = decode_control_record(r.key, r.value).type_name
        elif b.is_transactional:
            outcome = ends.get(b.producer_id)
            if r.offset in lost:
                assert outcome == "COMMIT"
            if r.offset in excluded:
                assert outcome == "ABORT"
    assert {m["marker"] for m in ef["lost_markers"]} == {"COMMIT", "ABORT"}


def test_offsets_commit_lost_truth(scenario_out):
    _out, truth = scenario_out("offsets-commit-lost")
    (lost_group,) = [g for g in truth["groups"] if any(c["holders"] == [1] for c in g["commits"])]
    first, last = lost_group["commits"]
    assert first["holders"] == [1, 2] and first["on_coordinator"]
    assert last["holders"] == [1] and not last["on_coordinator"] and last["status"] == "failed"
    (tp,) = lost_group["partitions"]
    (c,) = tp["consequences"]
    assert c == {
        "kind": "commit-lost",
        "code": "KA723",
        "brokers": [1],
        "record_offset": last["record_offset"],
        "lost_offset": last["offset"],
        "committed_offset": first["offset"],
        "re_read": last["offset"] - first["offset"],
    }
    other = next(g for g in truth["groups"] if g is not lost_group)
    assert other["offsets_partition"] == lost_group["offsets_partition"]
    assert other["commits"][0]["record_offset"] == last["record_offset"]  # the divergence in the offsets log
    assert truth["expected_codes"] == ["KA723"]


@pytest.mark.parametrize("name", ["group-commit-lost-range", "txn-marker-lost", "offsets-commit-lost"])
def test_consequence_scenarios_need_three_brokers(tmp_path, name):
    with pytest.raises(ValueError, match="at least 3 brokers"):
        run_scenario(name, tmp_path / "out", SimOptions(brokers=2))
