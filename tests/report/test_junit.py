"""JUnit XML: every document the commands write validates against ``tests/report/junit.xsd`` (the Ant/Jenkins/
Surefire format, read with ``xmlschema``), names each test case by rule and location with (classname, name)
unique, counts tests/failures/errors/skipped right on every suite and the root, writes unreadable input as
``<error>`` (exit 2), findings at or above ``--fail-on`` as ``<failure>`` and passing cases for the rules
that ran and found nothing. Scans of simulated clusters (clean, corrupted, unreadable, hostile names, copies
of one broker), one audit on Spark of two clusters, and a history report built by hand."""

from __future__ import annotations

import io
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding, Severity
from auditor.report import Report, render
from auditor.report.model import INCOMPLETE_CODES
from auditor.rules.registry import REGISTRY, load_rules, select_rules
from auditor.scan import SCAN_SCOPES, scan
from auditor.simulate import SimOptions, run_scenario
from parsers.dirfiles import segment_file_name
from tests.rules.builder import LogDir, standard, truncate

XSD = Path(__file__).with_name("junit.xsd")
# XML 1.0 section 2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
NOT_XML10 = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
OUTCOMES = {"failure": "failures", "error": "errors", "skipped": "skipped"}


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def checked(schema: xmlschema.XMLSchema, document: str) -> ET.Element:
    """``document`` after every check a JUnit document of kafka-auditor must pass: XML 1.0 characters only,
    valid against the schema, (classname, name) unique, and the counts of each suite and of the root equal
    to its test cases and their outcomes."""
    assert not NOT_XML10.search(document), NOT_XML10.search(document)
    schema.validate(document)
    root = ET.fromstring(document)
    pairs = Counter((tc.get("classname"), tc.get("name")) for tc in root.iter("testcase"))
    assert not [p for p, n in pairs.items() if n > 1], [p for p, n in pairs.items() if n > 1]
    totals = Counter()
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        assert cases, f"empty suite {suite.get('name')}"
        counts = Counter(tests=len(cases))
        for tc in cases:
            outcome = [OUTCOMES[c.tag] for c in tc if c.tag in OUTCOMES]
            assert len(outcome) <= 1
            counts.update(outcome)
        for key in ("tests", "failures", "errors", "skipped"):
            assert int(suite.get(key)) == counts[key], (suite.get("name"), key)
        totals.update(counts)
    for key in ("tests", "failures", "errors", "skipped"):
        assert int(root.get(key)) == totals[key], key
    names = [s.get("name") for s in root.findall("testsuite")]
    assert len(names) == len(set(names)) and "(no log dir)" not in names
    assert not any("broker-unknown" in c or "broker-None" in c for c, _ in pairs)
    return root


def rendered(report: Report) -> str:
    out = io.StringIO()
    render(report, "junit", out)
    return out.getvalue()


def cases(root: ET.Element, classname: str | None = None) -> dict[tuple[str, str], ET.Element]:
    return {
        (tc.get("classname"), tc.get("name")): tc
        for tc in root.iter("testcase")
        if classname is None or tc.get("classname") == classname
    }


def outcome(tc: ET.Element) -> str:
    return next((c.tag for c in tc if c.tag in OUTCOMES), "passed")


def scan_junit(tmp: Path, *paths: Path, args: tuple[str, ...] = ()) -> tuple[int, str]:
    """``kafka-auditor scan --format junit --output`` in-process: (exit code, document)."""
    out = tmp / f"junit-{len(list(tmp.glob('junit-*')))}.xml"
    run = CliRunner().invoke(
        app, ["scan", *map(str, paths), "--format", "junit", "--no-progress", "--output", str(out), *args]
    )
    assert run.exception is None or isinstance(run.exception, SystemExit), run.output
    return run.exit_code, out.read_text(encoding="utf-8")


def brokers(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith("broker-"))


# ------------------------------------------------------------------------------------ a report by hand


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory) -> Report:
    """Broker 1 with a torn tail, checkpoints past its end and a stray file; broker 2 clean."""
    root = tmp_path_factory.mktemp("junit-report")
    ld, p = standard(root / "broker-1", clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 7)
    (ld.root / "notes.txt").write_text("x")
    ld2, _ = standard(root / "broker-2", node_id=2)
    ld2.write()
    result = scan([ld.root, ld2.root], jobs=1)
    return Report(
        command="scan",
        findings=result.findings,
        rules=select_rules(scopes=SCAN_SCOPES).rules(),
        partitions=result.partitions,
        inputs=result.logdirs,
        stats=result.stats,
    )


def test_scan_cases_are_rules_at_locations(schema, two_brokers):
    root = checked(schema, rendered(two_brokers))
    suites = root.findall("testsuite")
    assert [s.get("name").split(":")[0] for s in suites] == ["broker 1", "broker 2"]
    assert all(s.get("hostname") and s.get("timestamp") for s in suites)
    found = cases(root)
    hw = found[("kafka-auditor.scan.broker-1.orders-0", "KA401 partition.hw-above-leo")]
    failure = hw.find("failure")
    assert failure is not None and failure.get("type") == "KA401" and "KA401" in failure.text
    torn = found[("kafka-auditor.scan.broker-1.orders-0", "KA102 segment.torn-tail")]
    assert outcome(torn) == "passed" and "KA102" in torn.find("system-out").text  # a warning: below error
    stray = found[("kafka-auditor.scan.broker-1", "KA501 inventory.unknown-file")]
    assert "notes.txt" in stray.find("system-out").text
    # every enabled rule that ran is one case per log dir: the clean broker passes them all
    ran = {r.code for r in two_brokers.rules}
    clean = cases(suites[1])
    assert {name.split()[0] for _, name in clean} == ran
    assert all(c == "kafka-auditor.scan.broker-2" and outcome(tc) == "passed" for (c, _), tc in clean.items())
    assert int(suites[1].get("failures")) == 0 and int(root.get("errors")) == 0
    # a rule with a finding in a log dir has no passing case there
    broker1 = cases(suites[0])
    assert ("kafka-auditor.scan.broker-1", "KA401 partition.hw-above-leo") not in broker1
    assert ("kafka-auditor.scan.broker-1", "KA101 segment.crc-mismatch") in broker1


@pytest.mark.parametrize(
    ("fail_on", "failing"),
    [
        (Severity.WARNING, {"KA102", "KA205", "KA215", "KA233", "KA401", "KA403", "KA405", "KA501"}),
        (Severity.ERROR, {"KA401", "KA403"}),
        (Severity.CRITICAL, set()),
        (None, set()),
    ],
)
def test_fail_on_decides_failures(schema, two_brokers, fail_on, failing):
    import dataclasses

    report = dataclasses.replace(two_brokers, fail_on=fail_on)
    root = checked(schema, rendered(report))
    failed = {tc.get("name").split()[0] for tc in root.iter("testcase") if outcome(tc) == "failure"}
    assert failed == failing
    below = {tc.get("name").split()[0] for tc in root.iter("testcase") if tc.find("system-out") is not None}
    assert below == {f.code for f in report.findings} - failing


# --------------------------------------------------------------------------- scans of simulated clusters


@pytest.fixture(scope="module")
def clusters(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("junit-clusters")
    run_scenario("clean", root / "clean", SimOptions(seed=1))
    run_scenario("corrupt-batch", root / "corrupt", SimOptions(seed=1))
    return root


def test_scan_of_a_clean_cluster_passes_every_case(schema, clusters, tmp_path):
    code, document = scan_junit(tmp_path, *brokers(clusters / "clean"))
    root = checked(schema, document)
    assert code == 0 and root.get("failures") == "0" and root.get("errors") == "0"
    suites = root.findall("testsuite")
    assert [s.get("name").split(":")[0] for s in suites] == ["broker 1", "broker 2", "broker 3"]
    assert int(root.get("tests")) >= 3 * 40 and float(root.get("time")) >= 0


def test_scan_of_a_corrupted_cluster_fails_the_crc_case(schema, clusters, tmp_path):
    code, document = scan_junit(tmp_path, *brokers(clusters / "corrupt"))
    root = checked(schema, document)
    assert code == 1 and int(root.get("failures")) > 0 and root.get("errors") == "0"
    crc = [tc for (c, n), tc in cases(root).items() if n == "KA101 segment.crc-mismatch" and c.endswith("-0")]
    assert crc and all(outcome(tc) == "failure" for tc in crc)
    assert all(re.fullmatch(r"kafka-auditor\.scan\.broker-\d\.t0-0", tc.get("classname")) for tc in crc)


def test_unreadable_file_is_an_error_and_its_log_dir_checks_are_skipped(schema, clusters, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(clusters / "clean", copy, symlinks=True)
    os.symlink(tmp_path / "nowhere", copy / "broker-2" / "t0-0" / segment_file_name(99999, ".log"))
    code, document = scan_junit(tmp_path, *brokers(copy))
    root = checked(schema, document)
    assert code == 2 and int(root.get("errors")) == 1 and root.get("failures") == "0"
    [error] = [tc for tc in root.iter("testcase") if outcome(tc) == "error"]
    assert (error.get("classname"), error.get("name")) == (
        "kafka-auditor.scan.broker-2.t0-0",
        "KA001 scan.unreadable-file",
    )
    assert error.find("error").get("type") == "KA001" and "99999" in error.find("error").text
    suites = {s.get("name").split(":")[0]: s for s in root.findall("testsuite")}
    skipped = [tc for tc in suites["broker 2"].iter("testcase") if outcome(tc) == "skipped"]
    assert skipped and all("KA001" in tc.find("skipped").get("message") for tc in skipped)
    assert suites["broker 1"].get("skipped") == "0"  # the other brokers were read completely
    # the same run with KA001 ignored still exits 2: the error moves to the inputs suite, nothing passes
    code, document = scan_junit(tmp_path, *brokers(copy), args=("--ignore", "KA001"))
    root = checked(schema, document)
    assert code == 2 and root.get("errors") == "1"
    [inputs] = [s for s in root.findall("testsuite") if s.get("name") == "inputs"]
    assert outcome(inputs.find("testcase")) == "error"
    assert not [
        tc for tc in root.iter("testcase") if outcome(tc) == "passed" and tc.find("system-out") is None
    ]


def test_copies_of_one_broker_get_distinct_classnames(schema, clusters, tmp_path):
    one, two = tmp_path / "before" / "broker-1", tmp_path / "after" / "broker-1"
    shutil.copytree(clusters / "clean" / "broker-1", one)
    shutil.copytree(clusters / "clean" / "broker-1", two)
    code, document = scan_junit(tmp_path, one, two)
    root = checked(schema, document)
    classnames = {tc.get("classname") for tc in root.iter("testcase")}
    assert {
        "kafka-auditor.scan.broker-1.before/broker-1",
        "kafka-auditor.scan.broker-1.after/broker-1",
    } <= classnames
    assert any(n.startswith("KA003") for _, n in cases(root)) and code == 0


ESC, RLO = "\x1b[31mRED\x1b[0m", "\u202eexe.txt"


def test_hostile_names_stay_valid_xml(schema, tmp_path):
    ld = LogDir(tmp_path / f"broker{ESC}-1")
    parts = [ld.part(t) for t in (f"esc{ESC}", f"rlo{RLO}", "dots.in.name")]
    for p in parts:
        p.data(3)
    ld.write()
    truncate(parts[0].seg_path(0), parts[0].seg_path(0).stat().st_size - 7)
    (ld.root / f"a\nKA999 forged{ESC}").write_bytes(b"x")
    os.mkdir(os.fsencode(ld.root) + b"/undecodable\xff\x80-0")
    _code, document = scan_junit(tmp_path, ld.root)
    root = checked(schema, document)
    classnames = {tc.get("classname") for tc in root.iter("testcase")}
    assert "kafka-auditor.scan.broker-1.esc\\x1b[31mRED\\x1b[0m-0" in classnames
    assert root.find("testsuite").get("name").endswith("broker\\x1b[31mRED\\x1b[0m-1")
    assert "a\\nKA999 forged" in document and "KA999 forged" not in {n for _, n in cases(root)}


# ------------------------------------------------------------------------------ report (history), no Spark


def test_history_report(schema):
    load_rules()
    rules = [REGISTRY[c] for c in ("KA801", "KA805", "KA811")]
    findings = [
        Finding(
            "KA801",
            Severity.ERROR,
            "hw went back",
            name="history.hw-backwards",
            broker=3,
            topic="orders",
            partition=0,
            time="2026-01-02T00:00:00Z",
            evidence={"cluster": "c"},
        ),
        Finding(
            "KA801",
            Severity.ERROR,
            "hw went back",
            name="history.hw-backwards",
            broker=3,
            topic="orders",
            partition=0,
            time="2026-01-03T00:00:00Z",
            evidence={"cluster": "c"},
        ),
        Finding(
            "KA811",
            Severity.ERROR,
            "broker 4 missing",
            name="history.broker-missing",
            broker=4,
            evidence={"cluster": "c"},
        ),
    ]
    report = Report(
        command="report",
        findings=findings,
        rules=rules,
        inputs=[{"kind": "warehouse", "path": "/wh"}],
        stats={"seconds": 1.5},
    )
    root = checked(schema, rendered(report))
    found = cases(root)
    [hw] = [tc for (c, n), tc in found.items() if c == "kafka-auditor.report.orders-0"]
    assert (
        hw.get("name") == "KA801 history.hw-backwards (broker 3)" and hw.find("failure").text.count("\n") == 1
    )
    assert outcome(found[("kafka-auditor.report", "KA811 history.broker-missing (broker 4)")]) == "failure"
    assert outcome(found[("kafka-auditor.report", "KA805 history.epoch-cache-rewritten")]) == "passed"
    assert {s.get("name") for s in root.findall("testsuite")} == {
        "topic orders",
        "cluster c",
        "warehouse /wh",
    }
    assert root.get("time") == "1.500" and root.get("failures") == "2"


def test_incomplete_run_without_a_finding_has_an_inputs_error(schema):
    load_rules()
    report = Report(
        command="audit",
        findings=[],
        rules=[REGISTRY["KA601"], REGISTRY["KA623"]],
        incomplete=True,
        errors=["/evidence/b3: not a log dir; skipped"],
        partitions=[{"cluster": "c", "topic": "t", "partition": 0, "broker": 1}],
    )
    assert report.exit_code == 2
    root = checked(schema, rendered(report))
    assert root.get("errors") == "1" and root.get("skipped") == "2" and root.get("tests") == "3"
    error = cases(root)[("kafka-auditor.audit", "inputs read completely")].find("error")
    assert "not a log dir" in error.text


def test_incomplete_codes_are_the_exit_2_codes():
    load_rules()
    assert all(REGISTRY[c] for c in INCOMPLETE_CODES)
    # KA001/KA002 are the scan engine's, KA691 the audit's unreadable span (tests/observe/test_extract.py)
    assert {REGISTRY[c].scope for c in INCOMPLETE_CODES} == {"engine", "replicas"}


# ----------------------------------------------------------------------------------------- audit (Spark)


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory) -> tuple[int, str]:
    """One audit of two clusters: an unclean election, and a clean cluster where broker 2 cannot read one
    middle segment of t0-0 (a directory where the file should be: KA691, exit 2)."""
    root = tmp_path_factory.mktemp("junit-audit")
    run_scenario("unclean-election", root / "ule", SimOptions(seed=1))
    run_scenario("clean", root / "holed", SimOptions(seed=2))
    logs = sorted((root / "holed" / "broker-2" / "t0-0").glob("*.log"))
    middle = logs[len(logs) // 2]
    middle.unlink()
    middle.mkdir()
    out = root / "audit.xml"
    run = CliRunner().invoke(
        app, ["audit", str(root / "ule"), str(root / "holed"), "--format", "junit", "--output", str(out)]
    )
    assert run.exception is None or isinstance(run.exception, SystemExit), run.output
    return run.exit_code, out.read_text(encoding="utf-8")


@pytest.mark.spark
def test_audit_cases_per_rule_partition_and_replica_pair(schema, audited):
    code, document = audited
    root = checked(schema, document)
    assert code == 2 and int(root.get("errors")) >= 1 and int(root.get("failures")) >= 1
    clusters = {p.get("value") for p in root.iter("property") if p.get("name") == "kafka-auditor.cluster"}
    assert len(clusters) == 2
    ule = next(
        c
        for c in clusters
        if any(
            f"{c}.t0-0" in (tc.get("classname") or "")
            for tc in root.iter("testcase")
            if "KA710" in tc.get("name")
        )
    )
    t0 = {n: tc for (c, n), tc in cases(root, f"kafka-auditor.audit.{ule}.t0-0").items()}
    # the cases of partition t0-0 are told apart by rule and by replica (pair)
    divergence = [n for n in t0 if n.startswith("KA601 replication.divergence (brokers ")]
    assert divergence and all(
        re.fullmatch(r"KA601 replication\.divergence \(brokers \d-\d\)", n) for n in divergence
    )
    assert outcome(t0[next(n for n in t0 if n.startswith("KA710"))]) == "failure"
    # the rules that ran on topic t0 and found nothing pass there, in the topic's suite
    [suite] = [s for s in root.findall("testsuite") if s.get("name") == f"topic t0 (cluster {ule})"]
    passing = {n for (c, n), tc in cases(suite).items() if c == f"kafka-auditor.audit.{ule}.t0"}
    assert passing and all(
        outcome(cases(suite)[(f"kafka-auditor.audit.{ule}.t0", n)]) == "passed" for n in passing
    )
    assert not {n.split()[0] for n in passing} & {n.split()[0] for n in t0}
    assert not any(n.startswith(("KA720", "KA721", "KA714")) for n in passing)  # no __consumer_offsets input
    # the unreadable span is an error of broker 2's replica; the other checks of that topic are skipped
    holed = next(c for c in clusters if c != ule)
    error = cases(root)[
        (f"kafka-auditor.audit.{holed}.t0-0", "KA691 replication.replica-incomplete (broker 2)")
    ]
    assert outcome(error) == "error" and error.find("error").get("type") == "KA691"
    assert root.get("errors") == "1"  # the run's problem list holds the same span: not a second error
    [holed_suite] = [s for s in root.findall("testsuite") if s.get("name") == f"topic t0 (cluster {holed})"]
    assert int(holed_suite.get("skipped")) > 0 and holed_suite.get("failures") == "0"


def test_coinciding_names_are_made_unique(schema):
    """A topic named ``t0-0`` beside partition 0 of topic ``t0``: the topic's passing case and the
    partition's case would share classname and name; the document keeps both, told apart."""
    load_rules()
    rule = REGISTRY["KA620"]
    finding = Finding(
        "KA620", rule.severity, "unclean", name=rule.name, topic="t0", partition=0, evidence={"cluster": "c"}
    )
    rows = [{"cluster": "c", "topic": t, "partition": 0, "broker": 1} for t in ("t0", "t0-0")]
    report = Report(command="audit", findings=[finding], rules=[rule], partitions=rows)
    root = checked(schema, rendered(report))
    names = sorted(n for c, n in cases(root) if c == "kafka-auditor.audit.t0-0")
    assert names == ["KA620 replication.unclean-election", "KA620 replication.unclean-election #2"]


def test_rules_whose_scope_did_not_run_are_not_passed(schema, tmp_path):
    ld = LogDir(tmp_path / "broker-1")
    ld.write()
    shutil.rmtree(ld.root / "__cluster_metadata-0")  # meta.properties and checkpoints, no partition directory
    code, document = scan_junit(tmp_path, ld.root)
    root = checked(schema, document)
    scopes = {REGISTRY[n.split()[0]].scope for _, n in cases(root)}
    assert code in (0, 1) and scopes == {"logdir", "engine"}


def _suite(cases_xml: str, tests: int = 1, **attrs: str) -> str:
    extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
    head = f'<testsuite name="s" tests="{tests}" failures="0" errors="0" skipped="0"{extra}>'
    return f"<testsuites>{head}{cases_xml}</testsuite></testsuites>"


@pytest.mark.parametrize(
    "document",
    [
        _suite('<testcase name="KA101"/>'),  # no classname
        _suite('<testcase name="n" classname="c"><failure message="m"/></testcase>'),  # no type
        _suite('<testcase name="n" classname="c"/>', timestamp="2026-01-01T00:00:00Z"),  # a zone
        _suite('<testcase name="n" classname="c"><failure type="t"/></testcase>'),  # miscounted
        _suite('<testcase name="n" classname="c"/>' * 2, tests=2),  # one (classname, name) twice
    ],
)
def test_the_checks_reject_broken_documents(schema, document):
    with pytest.raises((xmlschema.XMLSchemaValidationError, AssertionError)):
        checked(schema, document)
