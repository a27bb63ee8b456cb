"""The Prometheus textfile (``--format prometheus``) as node_exporter's textfile collector reads it.

- It parses with ``prometheus_client``'s own parser, and its names pass the checks of Prometheus' metric
  linter (``promtool check metrics``, the ``promlint`` validations of prometheus/client_golang: help text,
  ``_total`` only on counters, base units, no type or reserved suffix in names, no colon, snake_case, no
  abbreviated unit, no duplicate sample) plus the text format's grouping rule (one HELP and one TYPE line
  per family, before its samples, the samples of a family together).
- Same content as ``prometheus_client``: the families parsed from our text, written back by
  ``prometheus_client.generate_latest`` (what ``write_to_textfile`` writes), parse to the same families,
  HELP lines byte for byte.
- Same file behaviour as ``prometheus_client.write_to_textfile`` (a temporary file in the same directory,
  renamed into place; the mode a new file gets from the umask) plus an fsync before the rename, and a
  temporary name node_exporter does not collect (not ``*.prom``). Written under umask 022 the file is read by
  another user (uid 65534 in a forked child when the tests run as root).
"""

from __future__ import annotations

import io
import math
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest, write_to_textfile
from prometheus_client.parser import text_string_to_metric_families

from auditor.findings import Finding, Severity
from auditor.report import render
from auditor.report.baseline import suppress
from auditor.report.history import history_gauges
from auditor.report.model import Report
from auditor.report.output import write_file

NOBODY = 65534
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# promlint's lintMetricUnits / lintUnitAbbreviations: units other than the base ones, and abbreviations
NON_BASE_UNITS = {
    "minutes", "hours", "days", "weeks", "milliseconds", "microseconds", "nanoseconds", "millis",
    "kilobytes", "megabytes", "gigabytes", "terabytes", "kibibytes", "mebibytes", "gibibytes", "bits",
    "celsius", "fahrenheit", "grams", "percent",
}  # fmt: skip
ABBREVIATIONS = {"ms", "us", "ns", "sec", "secs", "min", "mins", "hr", "kb", "mb", "gb", "kib", "mib", "b"}
TYPE_WORDS = {"gauge", "counter", "summary", "histogram", "untyped"}
HOSTILE = 'c"\\\n\x1b[31m\u202e'


def _render(report: Report) -> str:
    out = io.StringIO()
    render(report, "prometheus", out)
    return out.getvalue()


@pytest.fixture(scope="module")
def unit_text() -> str:
    """A report with findings of every severity (one with a hostile cluster id), every figure of the scan
    and the extra gauges of ``report`` and ``--baseline``."""
    findings = [
        *(
            Finding(
                "KA102", Severity.ERROR, "t", name="segment.torn-tail", broker=b, evidence={"cluster": "c"}
            )
            for b in (1, 2)
        ),
        Finding("KA406", Severity.INFO, "re-read", name="recovery.reread", broker=1),
        Finding("KA801", Severity.WARNING, "hw", name="history.hw-backwards", evidence={"cluster": HOSTILE}),
        Finding("KA001", Severity.CRITICAL, "x", name="input.unreadable"),
    ]
    captures = [
        {"cluster": "c", "broker": 1, "captureTimeMs": 1_767_225_600_000},
        {"cluster": HOSTILE, "broker": 2, "captureTimeMs": 1_767_225_660_000},
    ]
    report = Report(
        command="report",
        findings=findings,
        rules=[],
        stats={"partitions": 3, "segments": 7, "bytes": 123_456, "seconds": 1.25},
        gauges=history_gauges(captures, 1_767_312_000_000, 1_767_312_001.5),
    )
    return _render(suppress(report, frozenset({findings[2].fingerprint()}), reason="baseline", stat="s"))


@pytest.fixture(scope="module")
def scan_file(tmp_path_factory) -> Path:
    """``kafka-auditor scan --format prometheus -o DIR/kafka_auditor.prom`` of a simulated cluster with a
    corrupt batch, run under umask 022 as a cron job would."""
    base = tmp_path_factory.mktemp("prom")
    cluster = base / "cluster"
    cli = [sys.executable, "-m", "auditor.cli"]
    res = subprocess.run(
        [*cli, "simulate", "corrupt-batch", "--out", str(cluster), "--seed", "3"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = base / "textfile" / "kafka_auditor.prom"
    out.parent.mkdir()
    dirs = sorted(str(p) for p in cluster.iterdir() if p.is_dir())
    res = subprocess.run(
        [*cli, "scan", *dirs, "--format", "prometheus", "--output", str(out)],
        capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    return out


@pytest.fixture(params=["unit", "scan"])
def text(request, unit_text) -> str:
    if request.param == "unit":
        return unit_text
    return request.getfixturevalue("scan_file").read_text(encoding="utf-8")


def _families(text: str) -> list:
    return list(text_string_to_metric_families(text))


def _value(v: float) -> str:
    return "NaN" if math.isnan(v) else repr(float(v))


def _normal(text: str) -> list[tuple]:
    """The families as comparable data: name, type, help, samples (name, labels, value) in order."""
    return [
        (
            f.name,
            f.type,
            f.documentation,
            [(s.name, tuple(sorted(s.labels.items())), _value(s.value), s.timestamp) for s in f.samples],
        )
        for f in _families(text)
    ]


def lint(text: str) -> list[str]:
    """Problems ``promtool check metrics`` would report, and breaches of the text format's grouping."""
    problems: list[str] = []
    families = _families(text)
    assert families, "no metric family"
    seen: set[tuple] = set()
    for fam in families:
        name = fam.name
        words = name.split("_")
        if not NAME.fullmatch(name):
            problems.append(f"{name}: invalid metric name")
        if ":" in name:
            problems.append(f"{name}: metric names should not contain ':'")
        if name != name.lower():
            problems.append(f"{name}: metric names should be written in 'snake_case' not 'camelCase'")
        if not fam.documentation.strip():
            problems.append(f"{name}: no help text")
        if fam.type != "counter" and name.endswith("_total"):
            problems.append(f'{name}: non-counter metrics should not have "_total" suffix')
        if fam.type == "counter" and not name.endswith("_total"):
            problems.append(f'{name}: counter metrics should have "_total" suffix')
        if fam.type not in ("histogram", "summary") and re.search(r"_(bucket|count|sum)$", name):
            problems.append(f"{name}: name reserved for histograms and summaries")
        for word in words:
            if word in TYPE_WORDS:
                problems.append(f'{name}: metric name should not include type "{word}"')
            if word in NON_BASE_UNITS:
                problems.append(f"{name}: use base unit instead of {word}")
            if word in ABBREVIATIONS:
                problems.append(f"{name}: metric name should not contain abbreviated units ({word})")
        if ("timestamp" in words or "duration" in words) and not name.endswith("_seconds"):
            problems.append(f"{name}: times and durations are in seconds, suffix _seconds")
        if "bytes" in words and not name.endswith("_bytes"):
            problems.append(f"{name}: a size is in bytes, suffix _bytes")
        for sample in fam.samples:
            for label in sample.labels:
                if not LABEL_NAME.fullmatch(label) or label.startswith("__"):
                    problems.append(f"{name}: invalid label name {label!r}")
                if label != label.lower():
                    problems.append(f"{name}: label names should be written in 'snake_case' ({label})")
                if label in ("le", "quantile"):
                    problems.append(f"{name}: label {label} is reserved for histograms and summaries")
            key = (sample.name, frozenset(sample.labels.items()))
            if key in seen:
                problems.append(f"{name}: duplicate sample {sample.labels}")
            seen.add(key)
    problems += _grouping(text, [f.name for f in families])
    return problems


def _grouping(text: str, names: list[str]) -> list[str]:
    """One HELP and one TYPE line per family, both before its samples, the lines of a family together."""
    problems = []
    runs: list[str] = []  # the family of each run of consecutive lines
    helps: dict[str, int] = {}
    types: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            name = line.split()[2]
            seen = helps if line.startswith("# HELP ") else types
            seen[name] = seen.get(name, 0) + 1
        else:
            name = NAME.match(line).group(0)
            if name not in types or name not in helps:
                problems.append(f"{name}: sample before its HELP and TYPE lines")
        if runs[-1:] != [name]:
            runs.append(name)
    for name in names:
        if helps.get(name) != 1 or types.get(name) != 1:
            problems.append(f"{name}: {helps.get(name, 0)} HELP and {types.get(name, 0)} TYPE lines")
        if runs.count(name) != 1:
            problems.append(f"{name}: the lines of the family are not together")
    return problems


# ----------------------------------------------------------------------------------------------- content


def test_parses_and_passes_the_metric_linter(text):
    assert lint(text) == []
    names = {f.name for f in _families(text)}
    assert {
        "kafka_auditor_findings",
        "kafka_auditor_findings_by_severity",
        "kafka_auditor_exit_code",
    } <= names
    assert all(f.type == "gauge" for f in _families(text))


def test_the_unit_report_covers_every_family(unit_text):
    names = {f.name for f in _families(unit_text)}
    assert {
        "kafka_auditor_bytes",
        "kafka_auditor_duration_seconds",
        "kafka_auditor_last_run_timestamp_seconds",
        "kafka_auditor_last_capture_timestamp_seconds",
        "kafka_auditor_last_ingest_timestamp_seconds",
        "kafka_auditor_last_report_timestamp_seconds",
        "kafka_auditor_findings_suppressed",
    } <= names
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in _families(unit_text) for s in f.samples
    }
    suppressed = ("kafka_auditor_findings_suppressed", (("command", "report"), ("reason", "baseline")))
    assert samples[suppressed] == 1
    by_severity = {
        labels[1][1]: v for (n, labels), v in samples.items() if n == "kafka_auditor_findings_by_severity"
    }
    assert by_severity == {"critical": 1, "error": 2, "warning": 1, "info": 0}
    hostile = {dict(labels).get("cluster") for (n, labels), _ in samples.items()} - {None, "c"}
    assert hostile == {'c"\\\\n\\x1b[31m\\u202e'}  # one label value, control characters made visible


def test_the_linter_finds_what_promtool_finds():
    bad = (
        "# HELP a_total x\n# TYPE a_total gauge\na_total 1\n"
        "# HELP b_milliseconds x\n# TYPE b_milliseconds gauge\nb_milliseconds 1\n"
        "# HELP c_gauge x\n# TYPE c_gauge gauge\nc_gauge 1\n"
        "# HELP d:e x\n# TYPE d:e gauge\nd:e 1\n"
        "# HELP f_duration x\n# TYPE f_duration gauge\nf_duration 1\n"
        '# HELP g x\n# TYPE g gauge\ng{a="1"} 1\ng{a="1"} 2\n'
        '# HELP h x\n# TYPE h gauge\nh 1\n# HELP i x\n# TYPE i gauge\ni 1\nh{x="2"} 1\n'
        "# HELP j x\n# HELP j y\n# TYPE j gauge\nj 1\n"
    )
    found = "\n".join(lint(bad))
    for name in (
        "a_total",
        "b_milliseconds",
        "c_gauge",
        "d:e",
        "f_duration",
        "g: duplicate",
        "h: the lines",
        "j: 2 HELP",
    ):
        assert name in found, (name, found)


class _Replay:
    """A prometheus_client collector yielding already built families."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return iter(self.families)


def _registry(text: str) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Replay(_families(text)))
    return registry


def test_same_content_as_prometheus_clients_writer(text):
    reference = generate_latest(_registry(text)).decode("utf-8")
    assert _normal(reference) == _normal(text)
    ours = [line for line in text.splitlines() if line.startswith("# HELP ")]
    assert ours == [line for line in reference.splitlines() if line.startswith("# HELP ")]


# ------------------------------------------------------------------------------------------------ the file


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_same_mode_as_write_to_textfile(unit_text, tmp_path, mask):
    old = os.umask(mask)
    try:
        write_file(tmp_path / "ours.prom", unit_text)
        write_to_textfile(str(tmp_path / "reference.prom"), _registry(unit_text))
    finally:
        os.umask(old)
    assert _mode(tmp_path / "ours.prom") == _mode(tmp_path / "reference.prom") == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.prom", "reference.prom"]  # no temp left
    assert _normal((tmp_path / "ours.prom").read_text()) == _normal((tmp_path / "reference.prom").read_text())


def test_temporary_file_beside_it_fsynced_then_renamed(unit_text, tmp_path, monkeypatch):
    target = tmp_path / "kafka_auditor.prom"
    target.write_text("# the previous run\n")
    events: list[tuple] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self") else fd))
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", str(src), str(dst), Path(src).read_text(), target.read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_file(target, unit_text)
    (renames,) = [e for e in events if e[0] == "replace"]
    _, src, dst, complete, before = renames
    assert dst == str(target) and os.path.dirname(src) == str(tmp_path)
    assert not src.endswith(".prom")  # the textfile collector reads *.prom only
    assert complete == unit_text and before == "# the previous run\n"  # a reader sees old or new, whole
    assert ("fsync", src) in events[: events.index(renames)]  # the data is on disk before the rename
    assert target.read_text() == unit_text


def test_the_cli_textfile_is_readable_by_another_user(scan_file):
    assert _mode(scan_file) == 0o644 and _mode(scan_file) & stat.S_IROTH
    text = scan_file.read_text(encoding="utf-8")
    assert lint(text) == []
    errors = [
        s.value
        for f in _families(text)
        for s in f.samples
        if f.name == "kafka_auditor_findings_by_severity" and s.labels["severity"] == "error"
    ]
    assert errors and errors[0] > 0  # the corrupt batch was found


def _read_as(uid: int, path: Path) -> int:
    """Exit status of a forked child that drops to ``uid`` and reads ``path`` (0 read, 13 refused)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            with open(path, "rb") as fh:
                fh.read()
            os._exit(0)
        except PermissionError:
            os._exit(13)
        except BaseException:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to change uid")
def test_node_exporter_as_nobody_reads_the_textfile(unit_text):
    # a collector directory as node_exporter's is set up: 0755, under a world-traversable parent
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        os.chmod(d, 0o755)
        shared, private = Path(d, "kafka_auditor.prom"), Path(d, "private.prom")
        old = os.umask(0o022)
        try:
            write_file(shared, unit_text)
            os.umask(0o077)
            write_file(private, unit_text)
        finally:
            os.umask(old)
        assert _read_as(NOBODY, shared) == 0
        assert _read_as(NOBODY, private) == 13  # the check can fail: a 0600 file is refused


def test_every_check_that_ran_has_a_series_zero_when_clean(scan_file):
    """Absence of a check's series means it did not run; a check that ran and found nothing says 0."""
    text = scan_file.read_text(encoding="utf-8")
    samples = [s for f in _families(text) if f.name == "kafka_auditor_check_findings" for s in f.samples]
    by_code = {s.labels["code"]: s.value for s in samples}
    assert len(by_code) == len(samples) > 20  # every enabled check once
    assert 0 in by_code.values() and any(v > 0 for v in by_code.values())
    findings = {
        s.labels["code"]: s.value
        for f in _families(text)
        if f.name == "kafka_auditor_findings"
        for s in f.samples
    }
    for code in findings:
        assert by_code[code] >= 1
