"""The data contract (issue 12, point 5): the JSON Schemas published in the package validate every ``json``
and ``jsonl`` output, and no key of any of them has an underscore (camelCase everywhere, evidence
included).

Outputs checked here: ``scan`` (CLI) of generated clusters, clean, corrupted, several scenarios and hostile
names; a report of every rule's firing fixture (scan, audit and history rules: every evidence shape); the
lost-records row format on a real segment (headers, binary and UTF-8 bytes); ``report`` (history, Spark) on
the warehouse of ``tests/cli/test_report.py``. ``audit`` is checked in ``tests/spark/test_audit.py``.
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from auditor.cli import app
from auditor.findings import Finding, camel, camel_keys
from auditor.report import SCHEMA_VERSION, Report, render
from auditor.rules.registry import AUDIT_SCOPES, HISTORY_SCOPES, REGISTRY, load_rules, select_rules
from auditor.scan import SCAN_SCOPES, scan
from auditor.simulate import SimOptions, run_scenario
from parsers.dirfiles import segment_file_name
from parsers.record_batch import RecordSpec, build_batch
from tests.report.contract import SCHEMAS, schema, snake_keys, validate, validate_lines
from tests.rules.builder import LogDir, standard, truncate
from tests.rules.harness import load_cases
from tests.rules.replica.builders import Audit, audit_findings

REPO = Path(__file__).resolve().parents[2]
ESC, RLO = "\x1b[31mRED\x1b[0m", "\u202eexe.txt"
FIRE, _ = load_cases()
HOSTILE_TOPICS = (f"esc{ESC}", f"rlo{RLO}", "[blink]mk[link=https:evil]x", "snake_case_topic")


def _render(report: Report, fmt: str) -> str:
    out = io.StringIO()
    render(report, fmt, out)
    return out.getvalue()


def check_outputs(json_text: str, jsonl_text: str, where: str) -> dict:
    """Validate a ``-f json`` document and a ``-f jsonl`` text of one run; assert no key has an underscore.
    The parsed document."""
    doc = json.loads(json_text)
    validate("report", doc, f"{where} json")
    rows = validate_lines("finding", jsonl_text, f"{where} jsonl")
    assert not snake_keys(doc) and not snake_keys(rows), (where, snake_keys(doc)[:5], snake_keys(rows)[:5])
    assert [{k: v for k, v in r.items() if k not in ("schemaVersion", "command")} for r in rows] == doc[
        "findings"
    ]
    return doc


# ------------------------------------------------------------------------------------------- the schemas


def test_schemas_are_valid_2020_12_and_published_in_the_package():
    for name in SCHEMAS:
        Draft202012Validator.check_schema(schema(name))
        assert schema(name)["$id"].endswith(f"/auditor/schemas/{name}.schema.json")
    assert schema("report")["$defs"]["finding"] == schema("finding")["$defs"]["finding"]
    assert schema("report")["properties"]["schemaVersion"]["const"] == SCHEMA_VERSION
    assert schema("finding")["properties"]["schemaVersion"]["const"] == SCHEMA_VERSION
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    data = pyproject["tool"]["setuptools"]["package-data"]
    assert "schemas/*.json" in data["auditor"]
    for package, patterns in data.items():  # no entry pointing at a missing directory
        for pattern in patterns:
            assert list((REPO / package).glob(pattern)), (package, pattern)


def test_the_schemas_reject_what_the_contract_forbids(tmp_path):
    """The schemas are not vacuous: a snake_case evidence key, an old schema version, a base64 flag on text
    that is not base64, a lost-record row with a key of the old Parquet names are refused."""
    ld, p = standard(tmp_path / "broker-1", clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 7)
    result = scan([ld.root], jobs=1)
    report = Report("scan", result.findings, select_rules(scopes=SCAN_SCOPES).rules(), inputs=result.logdirs)
    doc = json.loads(_render(report, "json"))
    validate("report", doc)
    bad = json.loads(json.dumps(doc))
    bad["findings"][0]["evidence"]["committed_hw"] = 1
    with pytest.raises(AssertionError, match="committed_hw"):
        validate("report", bad)
    with pytest.raises(AssertionError):
        validate("report", {**doc, "schemaVersion": 1})
    row = lost_row()
    validate("lost-records", row)
    with pytest.raises(AssertionError):
        validate("lost-records", {**row, "value": "not base64!", "valueEncoding": "base64"})
    with pytest.raises(AssertionError):
        validate("lost-records", {**row, "committed_hw": 3})
    with pytest.raises(AssertionError):
        validate("lost-records", {**row, "key": None})  # keyEncoding "utf8" with a null key


def test_camel():
    assert [camel(n) for n in ("committed_hw", "log_dir", "hash_a", "ua_from", "leader_recovery_state")] == [
        "committedHw",
        "logDir",
        "hashA",
        "uaFrom",
        "leaderRecoveryState",
    ]
    assert [camel(n) for n in ("offsetStart", "1", "KA601", "__consumer_offsets", "x")] == [
        "offsetStart",
        "1",
        "KA601",
        "__consumer_offsets",
        "x",
    ]
    nested = {"at_offset": {"base_offset": 3, "a": {"last_offset": 4}}, "listed": [{"producer_id": 1}]}
    assert camel_keys(nested) == {
        "atOffset": {"baseOffset": 3, "a": {"lastOffset": 4}},
        "listed": [{"producerId": 1}],
    }


# ------------------------------------------------------------------------------------------------- scan


@pytest.fixture(scope="module")
def scan_inputs(tmp_path_factory) -> dict[str, list[Path]]:
    """Log dirs to scan: simulated clusters (clean and three corruptions), a hand-built corrupted log dir
    with stray files, and a log dir of hostile names."""
    root = tmp_path_factory.mktemp("scan")
    inputs: dict[str, list[Path]] = {}
    for name in ("clean", "torn-tail", "corrupt-batch", "stale-index"):
        run_scenario(name, root / name, SimOptions(seed=3, records=200))
        inputs[name] = sorted(d for d in (root / name).iterdir() if d.is_dir())
    ld, p = standard(root / "built" / "broker-1", clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 7)
    (ld.root / "notes.txt").write_text("x")
    inputs["corrupted"] = [ld.root]
    hostile = LogDir(root / "hostile" / f"broker{ESC}{RLO}-1")
    parts = [hostile.part(t) for t in HOSTILE_TOPICS]
    for part in parts:
        part.data(3)
    hostile.write()
    truncate(parts[0].seg_path(0), parts[0].seg_path(0).stat().st_size - 7)
    (hostile.root / f"a\nKA999 forged{ESC}").write_bytes(b"x")
    (parts[1].path / (segment_file_name(0, ".log") + ESC)).write_bytes(b"x")
    os.mkdir(os.fsencode(hostile.root) + b"/undecodable\xff\x80-0")
    inputs["hostile"] = [hostile.root]
    return inputs


@pytest.mark.parametrize(
    "name", ["clean", "torn-tail", "corrupt-batch", "stale-index", "corrupted", "hostile"]
)
def test_scan_json_and_jsonl_match_the_schemas(scan_inputs, name, tmp_path):
    dirs = [str(d) for d in scan_inputs[name]]
    texts = {}
    for fmt in ("json", "jsonl"):
        out = tmp_path / f"scan.{fmt}"
        res = CliRunner().invoke(app, ["scan", *dirs, "--format", fmt, "--no-progress", "--output", str(out)])
        assert res.exit_code in (0, 1), res.output
        texts[fmt] = out.read_text(encoding="utf-8")
    doc = check_outputs(texts["json"], texts["jsonl"], f"scan {name}")
    assert doc["command"] == "scan" and doc["partitions"] and doc["inputs"]
    if name != "clean":
        assert doc["findings"], name


def _case_findings(tmp_path: Path, monkeypatch) -> dict[str, list[Finding]]:
    """Every finding of every rule's firing fixture, by the command whose report holds it."""
    load_rules()
    out: dict[str, list[Finding]] = {"scan": [], "audit": [], "report": []}
    seen: set = set()
    for code, cases in sorted(FIRE.items()):
        for i, case in enumerate(cases):
            if case in seen:  # a fixture firing several codes runs once
                continue
            seen.add(case)
            with monkeypatch.context() as mp:
                subject = case(tmp_path / f"{code}-{i}", mp)
                if isinstance(subject, Audit) or hasattr(subject, "finding_rows"):
                    rows = audit_findings(subject) if isinstance(subject, Audit) else subject.finding_rows()
                    for r in rows:
                        rule = REGISTRY[r["code"]]
                        command = "report" if rule.scope in HISTORY_SCOPES else "audit"
                        out[command].append(Finding.from_row(r, rule.name))
                else:
                    out["scan"] += scan(subject, jobs=1).findings
    return out


def test_every_rule_fixture_finding_matches_the_schemas(tmp_path, monkeypatch):
    """Every evidence shape of every rule (scan, audit, history) is camelCase and valid in each command's
    report and JSON Lines."""
    scopes = {"scan": SCAN_SCOPES, "audit": AUDIT_SCOPES, "report": HISTORY_SCOPES}
    codes: set[str] = set()
    for command, findings in _case_findings(tmp_path, monkeypatch).items():
        assert findings, command
        report = Report(command, findings, select_rules(scopes=scopes[command]).rules())
        check_outputs(_render(report, "json"), _render(report, "jsonl"), f"{command} rule fixtures")
        codes |= {f.code for f in findings}
    assert codes >= set(FIRE)


# ---------------------------------------------------------------------------------------- lost records


def lost_row(**changes) -> dict:
    from auditor.spark.audit import lost_record_json

    row = {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "offset": 5,
        "timestamp": 1_700_000_000_000,
        "timestampType": "CreateTime",
        "key": b"k",
        "value": b"\xff\x00",
        "headers": [{"key": "h", "value": b"v"}],
        "leaderEpoch": 1,
        "batchBaseOffset": 5,
        "committedHighWatermark": 9,
        "producerId": -1,
        "producerEpoch": -1,
        "baseSequence": -1,
        "isTransactional": False,
        "broker": 1,
        "error": None,
        "holders": [1],
    }
    return lost_record_json({**row, **changes})


def test_lost_records_of_a_real_segment_follow_the_contract(tmp_path):
    """``_decode_lost`` (the executors' decoder) on a segment holding UTF-8, binary, null and header bytes:
    the JSONL rows validate and decode back to the bytes; the Parquet types are the documented ones."""
    from auditor.layout.relocate import SegmentRoots
    from auditor.spark.audit import (
        LOST_FIELDS,
        _decode_lost,
        bytes_text,
        lost_record_json,
        lost_records_schema,
    )

    specs = [
        RecordSpec(b"k0", "värde".encode(), 1_700_000_000_000, [("h1", b"\x00\xffraw"), ("h2", None)]),
        RecordSpec(None, b"\x80\x81", 1_700_000_000_001, [("trace", b"abc")]),
        RecordSpec(b"\xfe", None, 1_700_000_000_002),
    ]
    batch = build_batch(specs, base_offset=10, partition_leader_epoch=4, timestamp_type_log_append=True)
    part = tmp_path / "t-0"
    part.mkdir()
    (part / segment_file_name(0, ".log")).write_bytes(batch)
    todo = {
        "cluster": "c", "topic": "t", "partition": 0, "broker": 2, "log_dir": str(tmp_path), "segment": 0,
        "position": 0, "size": len(batch), "base_offset": 10, "leader_epoch": 4, "committed_hw": 13,
        "start": 10, "attributes": 0x08, "producer_id": -1, "producer_epoch": -1, "base_sequence": -1,
        "is_transactional": False,
    }  # fmt: skip
    [decoded] = list(_decode_lost(SegmentRoots())([pa.RecordBatch.from_pylist([todo])]))
    assert decoded.schema.names == [n for n, _ in LOST_FIELDS]
    rows = [dict(r, holders=[2]) for r in decoded.to_pylist()]
    table = pa.Table.from_pylist(rows, schema=lost_records_schema())  # the Parquet file's schema
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    lines = [lost_record_json(r) for r in rows]
    # LogAppendTime: every record has the batch's max timestamp (the broker's append time)
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [line["timestamp"] for line in lines]
    assert [line["timestamp"] for line in lines] == [1_700_000_000_002] * 3
    for line in lines:
        validate("lost-records", json.loads(json.dumps(line)))
    assert not snake_keys(lines)
    assert [line["offset"] for line in lines] == [10, 11, 12]
    assert {line["timestampType"] for line in lines} == {"LogAppendTime"}
    first, second, third = lines
    assert (first["value"], first["valueEncoding"]) == ("värde", "utf8")
    assert first["headers"] == [
        {"key": "h1", "value": base64.b64encode(b"\x00\xffraw").decode(), "valueEncoding": "base64"},
        {"key": "h2", "value": None, "valueEncoding": None},
    ]
    assert (second["key"], second["keyEncoding"], second["value"]) == (
        None,
        None,
        base64.b64encode(b"\x80\x81").decode(),
    )
    assert (third["key"], third["keyEncoding"], third["value"], third["valueEncoding"]) == (
        "/g==",
        "base64",
        None,
        None,
    )
    for line, spec in zip(lines, specs, strict=True):  # the text and its flag give the bytes back
        for field, raw in (("key", spec.key), ("value", spec.value)):
            text, encoding = line[field], line[f"{field}Encoding"]
            assert (text, encoding) == bytes_text(raw)
            back = None if text is None else text.encode() if encoding == "utf8" else base64.b64decode(text)
            assert back == raw


# ------------------------------------------------------------------------------------- report (history)


@pytest.mark.spark
def test_history_report_json_and_jsonl_match_the_schemas(spark, tmp_path):
    """``report`` on the warehouse of ``tests/cli/test_report.py`` (its checks run once on Spark,
    the JSON Lines run reuses the result)."""
    import auditor.spark.history as history
    from tests.cli.test_report import build_warehouse

    warehouse = build_warehouse(tmp_path / "warehouse")
    real, results = history.run_history, []

    def remembered(*args, **kwargs):
        if not results:
            results.append(real(*args, **kwargs))
        return results[-1]

    texts = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(history, "run_history", remembered)
        for fmt in ("json", "jsonl"):
            out = tmp_path / f"report.{fmt}"
            args = ["report", "--master", "local[2]", "--warehouse", str(warehouse), "--all"]
            res = CliRunner().invoke(app, [*args, "--format", fmt, "--output", str(out)])
            assert res.exit_code == 1, res.output
            texts[fmt] = out.read_text(encoding="utf-8")
    doc = check_outputs(texts["json"], texts["jsonl"], "report")
    assert doc["command"] == "report" and doc["findings"] and doc["history"]["charts"]
