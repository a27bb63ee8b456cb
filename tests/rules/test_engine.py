"""The scan engine's own guarantees: a failing partition or check becomes a finding, never an exception.

KA002 evidence and the one-line error descriptions: never a stack trace in a finding, the traceback only
on stderr when KAFKA_AUDITOR_DEBUG asks for it."""

from __future__ import annotations

import dataclasses

from auditor import scan as scan_module
from auditor.errors import describe_error, error_evidence, error_file, raised_at
from auditor.rules.registry import REGISTRY, load_rules, select_rules
from auditor.scan import SCAN_SCOPES, scan
from tests.rules.builder import LogDir


def _two_partitions(tmp_path):
    ld = LogDir(tmp_path / "broker-1")
    ld.part("alpha").data(3)
    ld.part("beta").data(3)
    return ld.write()


def test_a_crashing_partition_becomes_ka002(tmp_path, monkeypatch):
    root = _two_partitions(tmp_path)
    real = scan_module.collect_segment

    def flaky(path, *args, **kw):
        if "alpha" in str(path):
            raise RuntimeError("collector bug")
        return real(path, *args, **kw)

    monkeypatch.setattr(scan_module, "collect_segment", flaky)
    result = scan([root], jobs=1)
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert len(crashed) == 1 and crashed[0].topic == "alpha" and "collector bug" in crashed[0].message
    assert result.incomplete
    assert {p["topic"] for p in result.partitions} >= {"alpha", "beta", "__cluster_metadata"}


def test_unreadable_input_is_incomplete_even_when_ka001_is_ignored(tmp_path):
    root = _two_partitions(tmp_path)
    (root / "alpha-0" / "00000000000000000050.log").symlink_to(tmp_path / "missing")
    result = scan([root], jobs=1, selection=select_rules(None, ["KA001"], scopes=SCAN_SCOPES))
    assert result.incomplete and not [f for f in result.findings if f.code == "KA001"]


def test_selection_limits_the_checks_that_run(tmp_path):
    root = _two_partitions(tmp_path)
    (root / "alpha-0" / "notes.txt").write_text("x")
    only_segments = scan([root], jobs=1, selection=select_rules(["KA1"], scopes=SCAN_SCOPES))
    assert not only_segments.findings and only_segments.stats["rules"] == len(select_rules(["KA1"]).codes)
    everything = scan([root], jobs=1)
    assert [f.code for f in everything.findings] == ["KA501"]


HOSTILE_MESSAGE = (
    'first line \x1b[31m\u202e\n  File "x.py", line 1, in <module>\nTraceback (most recent call last)'
)


def _logdir(tmp_path):
    ld = LogDir(tmp_path / "broker-1")
    ld.part("alpha").data(3)
    return ld.write()


def _crash_check(monkeypatch):
    load_rules()

    def boom(*args):
        raise RuntimeError(HOSTILE_MESSAGE)
        yield  # pragma: no cover

    monkeypatch.setitem(REGISTRY, "KA106", dataclasses.replace(REGISTRY["KA106"], check=boom))


def _assert_one_line(finding) -> None:
    assert "\n" not in finding.message and "\x1b" not in finding.message and "\u202e" not in finding.message
    assert set(finding.evidence) <= {"rule", "error", "raisedAt"}
    error = finding.evidence["error"]
    assert error == "RuntimeError: first line \\x1b[31m\\u202e"
    assert finding.evidence["raisedAt"].startswith("tests/rules/test_engine.py:")
    assert "Traceback" not in repr(finding.to_dict())


def test_a_crashing_check_leaves_one_line_evidence(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KAFKA_AUDITOR_DEBUG", raising=False)
    _crash_check(monkeypatch)
    result = scan([_logdir(tmp_path)], jobs=1)
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert crashed and result.incomplete
    for f in crashed:
        _assert_one_line(f)
        assert f.evidence["rule"] == "KA106" and f.evidence["raisedAt"].endswith(" in boom")
    assert "Traceback" not in capsys.readouterr().err


def test_a_crashing_partition_leaves_one_line_evidence(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_AUDITOR_DEBUG", raising=False)

    def broken(*args, **kw):
        raise RuntimeError(HOSTILE_MESSAGE)

    monkeypatch.setattr(scan_module, "collect_segment", broken)
    result = scan([_logdir(tmp_path)], jobs=1)
    crashed = [f for f in result.findings if f.code == "KA002"]
    assert {f.topic for f in crashed} == {"alpha", "__cluster_metadata"}
    for f in crashed:
        _assert_one_line(f)


def test_debug_env_sends_the_traceback_to_stderr_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_AUDITOR_DEBUG", "1")
    _crash_check(monkeypatch)
    result = scan([_logdir(tmp_path)], jobs=1)
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    for f in result.findings:
        if f.code == "KA002":
            _assert_one_line(f)


def test_describe_error():
    assert describe_error(ValueError()) == "ValueError"
    assert describe_error(ValueError("x" * 1000)).endswith("…")
    assert len(describe_error(ValueError("x" * 1000))) == 300
    py4j = Exception(
        "An error occurred while calling o42.collectToPython.\n: org.apache.spark.SparkException: Job aborted"
        "\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2844)"
    )
    assert describe_error(py4j) == (
        "Exception: An error occurred while calling o42.collectToPython. "
        "org.apache.spark.SparkException: Job aborted"
    )


def test_error_file_and_raised_at():
    assert (
        error_file(FileNotFoundError(2, "No such file or directory", "/evidence/a.log")) == "/evidence/a.log"
    )
    try:
        try:
            raise OSError(5, "Input/output error", "/evidence/b.log")
        except OSError as exc:
            raise ValueError("wrapped") from exc
    except ValueError as exc:
        assert error_file(exc) == "/evidence/b.log"
        assert raised_at(exc).startswith("tests/rules/test_engine.py:")

    def reading(path: str) -> None:
        raise OverflowError("int too big")

    try:
        reading("/evidence/00000000000000000000.log")
    except OverflowError as exc:
        assert error_file(exc) == "/evidence/00000000000000000000.log"
        assert raised_at(exc).endswith(" in reading")
    assert error_file(ValueError("no file")) is None and raised_at(ValueError()) is None
    assert error_evidence(KeyError("k")) == {"error": "KeyError: 'k'", "raisedAt": None}
