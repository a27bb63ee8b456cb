"""`simulate history`: deterministic nightly captures that parse, keep Kafka's invariants on benign nights,
and whose ground truth is what the simulated states show (an independent reading of KA801-KA808, KA814)."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections import defaultdict
from pathlib import Path

import pytest

from auditor.layout.captures import MANIFEST, parse_manifest, time_from_name
from auditor.simulate.history import HistoryOptions, ground_truth, run_history, simulate_history
from auditor.simulate.history_model import truncate_from_start
from auditor.simulate.history_run import DAY_MS, capture_ms
from auditor.text import iso_time as iso
from parsers.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from parsers.dirfiles import parse_clean_shutdown, parse_meta_properties, parse_partition_metadata
from parsers.errors import ParseError

SMALL = {"brokers": 5, "topics": 2, "partitions": 4, "days": 10}
ALL_CODES = [f"KA{n}" for n in range(801, 815)]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("hist") / "out"
    truth = run_history(out, HistoryOptions(seed=3, **SMALL))
    return out, truth


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes(written, tmp_path):
    out, truth = written
    again = tmp_path / "again"
    assert run_history(again, HistoryOptions(seed=3, **SMALL)) == truth
    assert tree(again) == tree(out)
    other = run_history(tmp_path / "other", HistoryOptions(seed=4, **SMALL))
    assert other["cluster_id"] != truth["cluster_id"]


def test_truth_lists_every_injected_code(written, tmp_path):
    _, truth = written
    assert truth["version"] == 1 and truth["scenario"] == "history"
    assert truth["expected_codes"] == ALL_CODES
    assert truth["settings"] == {
        "lag_records": 10_000,
        "lag_duration_ms": DAY_MS,
        "missing_after_ms": 12 * 3600_000,
    }
    for f in truth["expected_findings"]:
        assert set(f) >= {"code", "cluster", "broker", "topic", "partition", "time"}
        assert f["time"] in truth["captures"]
        assert (f["topic"] is None) == (f["code"] in ("KA809", "KA810", "KA811", "KA812", "KA813"))
    kinds = {e["kind"]: e for e in truth["events"]}
    assert kinds["restart-recovery-point"]["silent"] and kinds["brief-lag"]["silent"]
    folders = ground_truth(simulate_history(HistoryOptions(seed=3, format="folders", **SMALL)))
    assert folders["expected_codes"] == [
        c for c in ALL_CODES if c != "KA813"
    ]  # no archive, no refused member


def test_every_file_parses_and_carries_the_capture_time(written):
    out, truth = written
    torn = [e["details"] for e in truth["events"] if e["kind"] == "malformed-checkpoint"]
    malformed, manifests, named = [], 0, 0
    nights = sorted((out / "dumps").iterdir())
    assert [iso(time_from_name(n.name)) for n in nights] == truth["captures"]
    for night in nights:
        when = time_from_name(night.name)
        for broker_dir in sorted(night.iterdir()):
            for log_dir in sorted(broker_dir.iterdir()):
                files = {p.relative_to(log_dir).as_posix(): p for p in log_dir.rglob("*") if p.is_file()}
                assert all(p.stat().st_mtime == when / 1000 for p in files.values())
                meta = parse_meta_properties(files.pop("meta.properties").read_bytes())
                assert f"broker-{meta.node_id}" == broker_dir.name and meta.directory_id
                if MANIFEST in files:
                    manifest = parse_manifest(files.pop(MANIFEST).read_bytes(), MANIFEST)
                    assert manifest.capture_time_ms == when and manifest.broker == meta.node_id
                    assert manifest.cluster == meta.cluster_id and manifest.log_dir.endswith(log_dir.name)
                    manifests += 1
                else:
                    named += 1
                if ".kafka_cleanshutdown" in files:
                    assert parse_clean_shutdown(files.pop(".kafka_cleanshutdown").read_bytes()).broker_epoch
                for name, path in files.items():
                    data = path.read_bytes()
                    try:
                        if name.endswith("leader-epoch-checkpoint"):
                            parse_leader_epoch_checkpoint(data, name).normalized()
                        elif name.endswith("partition.metadata"):
                            parse_partition_metadata(data, name)
                        else:
                            assert parse_offset_checkpoint(data, name).warnings == []
                    except ParseError as exc:
                        line = data[: exc.offset].count(b"\n") + 1
                        malformed.append((night.name, broker_dir.name, f"{log_dir.name}/{name}", line))
    assert manifests and named  # both capture-time sources: the manifest, else the folder name
    assert len(malformed) == 1 and malformed[0][2].endswith("recovery-point-offset-checkpoint")
    assert torn[0]["file"].endswith(malformed[0][2]) and torn[0]["line"] == malformed[0][3]


def test_archives_hold_the_same_captures_under_the_log_dir_path(written):
    out, truth = written
    refused = [e for e in truth["events"] if e["kind"] == "refused-entry"]
    links = []
    for archive in sorted((out / "archives").iterdir()):
        when = time_from_name(archive.name)
        assert archive.stat().st_mtime == when / 1000
        broker = archive.name.split("-")[1]
        with tarfile.open(fileobj=io.BytesIO(archive.read_bytes()), mode="r:gz") as tar:
            for m in tar.getmembers():
                assert m.name.startswith("var/lib/kafka/data") and m.mtime == when // 1000
                if m.issym():
                    links.append((archive.name, m.name, m.linkname))
                    continue
                log_dir, name = m.name.split("/")[3], "/".join(m.name.split("/")[4:])
                folder = out / "dumps" / iso(when).replace(":", "") / f"broker-{broker}" / log_dir / name
                assert tar.extractfile(m).read() == folder.read_bytes(), m.name
    assert links == [
        (
            f"broker-{refused[0]['broker']}-{refused[0]['time'].replace('-', '').replace(':', '')}.tgz",
            refused[0]["details"]["member"],
            "/etc/shadow",
        )
    ]


# ------------------------------------------------------------------------ the states against the truth


def _epoch(cache: list[tuple[int, int]], offset: int) -> int | None:
    found = None
    for epoch, start in cache:
        if start > offset:
            break
        found = epoch
    return found


def _first_fork(a, hw_a, b, hw_b) -> int | None:
    """The first offset below both high watermarks and both caches' first entries where they disagree."""
    if not a or not b:
        return None
    low, high = max(a[0][1], b[0][1]), min(hw_a, hw_b)
    for offset in sorted({low} | {s for _, s in a + b if low <= s < high}):
        if offset < high and _epoch(a, offset) != _epoch(b, offset):
            return offset
    return None


def _rewritten(before: list, hw_before: int, after: list) -> bool:
    """KA805 by its definition: entries removed or changed other than truncateFromStart, or a new epoch
    starting below the previous capture's high watermark."""
    if not after:
        return bool(before)
    trimmed = truncate_from_start(before, after[0][1]) if before and before[0][1] <= after[0][1] else before
    if after[: len(trimmed)] != trimmed:
        return True
    return any(start < hw_before for _, start in after[len(trimmed) :])


@pytest.fixture(scope="module")
def simulated():
    run = simulate_history(HistoryOptions(seed=11, brokers=6, topics=4, partitions=4, days=16))
    truth = ground_truth(run)
    expected = {
        (f["code"], f["broker"], f["topic"], f["partition"], f["time"]) for f in truth["expected_findings"]
    }
    return run, truth, expected


def _recreated(truth) -> tuple[str, str]:
    e = next(e for e in truth["events"] if e["kind"] == "topic-recreated")
    return e["topic"], e["time"]


def test_every_capture_keeps_kafkas_invariants(simulated):
    run, _, _ = simulated
    for day, state in run.states.items():
        for (b, topic, part), (leo, hw, rp, log_start, cache) in state.items():
            where = (day, b, topic, part)
            assert 0 <= log_start <= hw <= leo and log_start <= rp <= leo, where
            assert all(x[0] < y[0] and x[1] < y[1] for x, y in zip(cache, cache[1:], strict=False)), where
            assert cache and cache[0][1] <= max(log_start, cache[0][1]) and cache[-1][1] <= leo, where


def test_consecutive_captures_change_only_where_the_truth_says(simulated):
    run, truth, expected = simulated
    topic_r, time_r = _recreated(truth)
    # the recovery point may go back only across a restart: the injected one, the unclean election's old
    # leader (truncated on rejoining), the reformatted log dir (its replicas fetched again)
    kinds = ("restart-recovery-point", "unclean-election", "log-dir-reformatted")
    restarts = {(e["time"], e["broker"]) for e in truth["events"] if e["kind"] in kinds}
    seen = defaultdict(set)
    days = sorted(run.states)
    for b in sorted(run.model.brokers):
        mine = [d for d in days if b in run.broker_days[d]]
        for d1, d2 in zip(mine, mine[1:], strict=False):
            t2 = iso(capture_ms(d2))
            restarted = run.broker_days[d2][b][0] != run.broker_days[d1][b][0] or run.broker_days[d1][b][1]
            s1 = {k[1:]: v for k, v in run.states[d1].items() if k[0] == b}
            s2 = {k[1:]: v for k, v in run.states[d2].items() if k[0] == b}
            for tp in s1.keys() - s2.keys():
                seen["KA807"].add(("KA807", b, *tp, t2))
            for tp in s2.keys() - s1.keys():
                seen["KA808"].add(("KA808", b, *tp, t2))
            for tp in s1.keys() & s2.keys():
                key = (b, *tp, t2)
                if tp[0] == topic_r and t2 == time_r:
                    seen["KA814"].add(("KA814", None, topic_r, None, t2))  # one per topic
                    continue
                (_, hw1, rp1, lso1, c1), (_, hw2, rp2, lso2, c2) = s1[tp], s2[tp]
                if hw2 < hw1:
                    seen["KA801"].add(("KA801", *key))
                if lso2 < lso1:
                    seen["KA802"].add(("KA802", *key))
                if rp2 < rp1:
                    if restarted:
                        assert (t2, b) in restarts, key
                    else:
                        seen["KA803"].add(("KA803", *key))
                if _rewritten(c1, hw1, c2):
                    seen["KA805"].add(("KA805", *key))
    for code in ("KA801", "KA802", "KA803", "KA805", "KA807", "KA808", "KA814"):
        assert seen[code] == {k for k in expected if k[0] == code}, code


def test_replicas_agree_on_epochs_except_the_unclean_election(simulated):
    run, truth, expected = simulated
    topic_r, time_r = _recreated(truth)
    captures = defaultdict(list)  # tp -> [(day, broker, hw, cache)]
    for day, state in run.states.items():
        for (b, topic, part), (_, hw, _, _, cache) in state.items():
            era = topic == topic_r and iso(capture_ms(day)) >= time_r
            captures[(topic, part, era)].append((day, b, hw, cache))
    forks = set()
    for (topic, part, _), caps in captures.items():
        for i, (d1, b1, hw1, c1) in enumerate(caps):
            for d2, b2, hw2, c2 in caps[i + 1 :]:
                if b1 != b2 and _first_fork(c1, hw1, c2, hw2) is not None:
                    older = (
                        b1
                        if _epoch(c1, _first_fork(c1, hw1, c2, hw2))
                        < _epoch(c2, _first_fork(c1, hw1, c2, hw2))
                        else b2
                    )
                    forks.add((older, topic, part, max(d1, d2)))
    first = {}
    for b, topic, part, day in forks:
        key = (b, topic, part)
        first[key] = min(first.get(key, day), day)
    assert {("KA804", *k, iso(capture_ms(d))) for k, d in first.items()} == {
        k for k in expected if k[0] == "KA804"
    }


def test_lag_above_the_threshold_for_a_day_only_where_the_truth_says(simulated):
    run, truth, expected = simulated
    settings = truth["settings"]
    latest: dict[int, dict] = {}
    runs: dict[tuple, list[int]] = {}
    found = set()
    for day in sorted(run.states):
        for b in run.broker_days[day]:
            latest[b] = {k[1:]: v for k, v in run.states[day].items() if k[0] == b}
        hws = defaultdict(dict)
        for b, tps in latest.items():
            for tp, v in tps.items():
                hws[tp][b] = v[1]
        for tp, by_broker in hws.items():
            spread = max(by_broker.values()) - min(by_broker.values())
            if spread > settings["lag_records"]:
                run_days = runs.setdefault(tp, [])
                if run_days and run_days[-1] != day - 1:
                    run_days.clear()
                run_days.append(day)
                if (day - run_days[0]) * DAY_MS == settings["lag_duration_ms"]:
                    lagging = min(by_broker, key=by_broker.get)
                    found.add(("KA806", lagging, *tp, iso(capture_ms(day))))
            else:
                runs.pop(tp, None)
    assert found == {k for k in expected if k[0] == "KA806"}
    brief = next(e for e in truth["events"] if e["kind"] == "brief-lag")
    assert all(f[2:4] != (brief["topic"], brief["partition"]) for f in found)


def test_fleet_events_match_the_captured_identity(simulated):
    run, truth, expected = simulated
    days = run.options.days
    missing = run.roles["missing"]
    assert [d for d in range(days) if missing not in run.broker_days[d]] == [days - 3, days - 2, days - 1]
    assert ("KA811", missing, None, None, iso(capture_ms(days - 3))) in expected
    assert ("KA809", run.roles["cluster_id_changed"], None, None, iso(capture_ms(days - 1))) in expected
    reformat = next(e for e in truth["events"] if e["kind"] == "log-dir-reformatted")
    assert (
        reformat["broker"] == run.roles["reformatted"]
        and reformat["details"]["before"] != reformat["details"]["after"]
    )


# ------------------------------------------------------------------------ the command


def test_cli_lists_writes_and_refuses(tmp_path):
    from typer.testing import CliRunner

    from auditor.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["simulate", "--list"])
    assert listed.exit_code == 0 and any(line.startswith("history ") for line in listed.output.splitlines())
    out = tmp_path / "cli"
    res = runner.invoke(
        app,
        [
            "simulate",
            "history",
            "--out",
            str(out),
            "--days",
            "10",
            "--brokers",
            "5",
            "--topics",
            "2",
            "--partitions",
            "4",
            "--format",
            "archives",
            "--seed",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads((out / "ground-truth.json").read_text())["options"]["format"] == "archives"
    assert (out / "archives").is_dir() and not (out / "dumps").exists()
    bad = runner.invoke(app, ["simulate", "history", "--out", str(tmp_path / "x"), "--brokers", "3"])
    assert bad.exit_code == 2 and "needs 5 to 64 brokers" in bad.output
    assert not (tmp_path / "x").exists()
    again = runner.invoke(app, ["simulate", "history", "--out", str(out), "--brokers", "5"])
    assert again.exit_code == 2 and "not empty" in again.output
    fmt = runner.invoke(app, ["simulate", "history", "--out", str(tmp_path / "y"), "--format", "zip"])
    assert fmt.exit_code == 2 and "--format" in fmt.output


def test_mtime_is_the_capture_time_of_each_night(written):
    out, truth = written
    stamps = sorted(os.stat(p).st_mtime for p in (out / "dumps").iterdir())
    assert stamps == [capture_ms(d) / 1000 for d in range(len(truth["captures"]))]
