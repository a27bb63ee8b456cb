"""``scan`` and ``audit`` share one set of report options (:func:`auditor.cli.report_options.report_options`):
the same flags, choices and defaults, the same rule selection semantics over their own scopes, and the same
refusals (exit 2) — ``audit`` refusing an unknown selector before Spark is loaded.

The terminal side of the reporting commands: findings ordered by severity, ``--min-severity`` and ``-q``
(display only), the progress display on stderr (on a terminal only, never on stdout), ``-v`` logs,
Rich-rendered ``--explain``/``--list-rules`` on a terminal (Markdown when piped), shell completion, and
(every ``KAFKA_AUDITOR_*`` environment variable is documented: ``tests/docs/test_docs.py``)."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from auditor.cli import app
from auditor.cli.report_options import ReportOptions, report_options
from auditor.findings import Finding, Severity
from auditor.report import render
from auditor.report.model import Report
from auditor.report.progress import Stages, amount, human_bytes
from auditor.rules.registry import AUDIT_SCOPES, REGISTRY, load_rules
from auditor.scan import SCAN_SCOPES
from auditor.spark.startup import spark_tasks
from auditor.spark.tuning import CDS_ENV
from tests.rules.builder import standard, truncate

SHARED = {
    "fmt",
    "output",
    "fail_on",
    "exit_zero",
    "select",
    "ignore",
    "color",
    "show_partitions",
    "list_rules",
    "explain",
}


def _params(command: str) -> dict:
    group = typer.main.get_command(app)
    return {p.name: p for p in group.commands[command].params}


def _describe(param) -> tuple:
    choices = tuple(getattr(param.type, "choices", None) or ())
    return (tuple(param.opts), param.default, choices, param.type.name, param.help, param.is_eager)


def test_scan_and_audit_take_the_same_report_options():
    scan, audit = _params("scan"), _params("audit")
    assert set(scan) >= SHARED and set(audit) >= SHARED
    for name in SHARED:
        assert _describe(scan[name]) == _describe(audit[name]), name
    assert _describe(scan["fmt"])[2] == ("text", "json", "jsonl", "sarif", "junit", "html", "prometheus")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    ld, _ = standard(tmp_path_factory.mktemp("cli") / "broker-1")
    return ld.write()


@pytest.mark.parametrize("command", ["scan", "audit"])
@pytest.mark.parametrize(
    "option", [["--select", "KA999"], ["--ignore", "nonsense.rule"], ["--explain", "KA999"]]
)
def test_unknown_selector_is_a_usage_error_before_any_work(command, option, logdir):
    """Run in a fresh interpreter: the refusal is one line, exit 2, and pyspark was never imported."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from auditor.cli import app\n"
        f"r = CliRunner().invoke(app, {[command, str(logdir), *option]!r})\n"
        "sys.stdout.write(f'{r.exit_code} {\"pyspark\" in sys.modules}\\n')\n"
        "sys.stderr.write(r.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["2", "False"], (res.stdout, res.stderr)
    [line] = res.stderr.splitlines()
    assert line.startswith("kafka-auditor: error: ") and option[1] in line


def _listed_codes(command: str) -> set[str]:
    res = CliRunner().invoke(app, [command, "--list-rules"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("| Code | Name | Severity | Scope |")
    return {line.split("|")[1].strip() for line in res.stdout.splitlines()[2:]}


def test_list_rules_lists_the_rules_of_the_command_scopes():
    load_rules()
    scanned, audited = _listed_codes("scan"), _listed_codes("audit")
    assert scanned == {c for c, r in REGISTRY.items() if r.scope in SCAN_SCOPES}
    assert audited == {c for c, r in REGISTRY.items() if r.scope in AUDIT_SCOPES}
    assert "KA101" in scanned and "KA710" in audited and not scanned & audited


@pytest.mark.parametrize("code", ["KA401", "KA710"])
def test_explain_prints_the_same_documentation_in_both(code):
    outputs = [CliRunner().invoke(app, [command, "--explain", code]) for command in ("scan", "audit")]
    assert [r.exit_code for r in outputs] == [0, 0]
    assert outputs[0].stdout == outputs[1].stdout and f"### {code} " in outputs[0].stdout
    assert "What to do:" in outputs[0].stdout


def test_report_options_reach_the_command_parsed():
    seen: list[ReportOptions] = []
    demo = typer.Typer()

    @demo.command()
    @report_options(lambda: ("segment",))
    def run(options: ReportOptions, path: str = typer.Argument(...)) -> None:
        seen.append(options)

    @demo.command()
    def other() -> None:
        """A second command, so that typer keeps ``run`` as a subcommand."""

    args = [
        "run",
        "x",
        "-f",
        "json",
        "-o",
        "r.json",
        "--fail-on",
        "never",
        "--exit-zero",
        "--select",
        "KA1,KA2",
    ]
    res = CliRunner().invoke(demo, [*args, "--ignore", "KA101", "--color", "always", "--partitions"])
    assert res.exit_code == 0, res.output
    [options] = seen
    assert options == ReportOptions(
        fmt="json",
        output=Path("r.json"),
        fail_on=None,
        exit_zero=True,
        select=["KA1,KA2"],
        ignore=["KA101"],
        color=True,
        show_partitions=True,
        scopes=("segment",),
    )
    expected = {
        c
        for c, r in REGISTRY.items()
        if r.scope == "segment" and r.lifecycle == "stable" and c[:3] in ("KA1", "KA2")
    }
    assert "KA101" in expected and options.selection().codes == expected - {"KA101"}
    res = CliRunner().invoke(demo, ["run", "x"])
    assert seen[-1].fail_on is Severity.ERROR and seen[-1].color is None and seen[-1].fmt == "text"


REPO = Path(__file__).resolve().parents[2]
EXE = [sys.executable, "-m", "auditor.cli"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env=full, cwd=REPO, timeout=300)


def run_on_tty(args: list[str], stdout_file: Path | None, env: dict | None = None) -> tuple[int, str]:
    """Run the CLI with stderr (and stdout unless ``stdout_file``) on a pseudo-terminal: (exit code, what
    the terminal received)."""
    full = {**os.environ, "COLUMNS": "120", "TERM": "xterm-256color", **(env or {})}
    full.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    out = open(stdout_file, "w") if stdout_file is not None else follower  # noqa: SIM115
    proc = subprocess.Popen(
        [*EXE, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=follower, env=full, cwd=REPO
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            proc.kill()
            raise TimeoutError(args)
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    if stdout_file is not None:
        out.close()
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    """A torn tail (warning), HW and recovery point above the LEO (errors), recovery to run (info)."""
    ld, p = standard(tmp_path_factory.mktemp("term") / "broker-2", node_id=2, clean=False)
    ld.write()
    truncate(p.seg_path(1), p.seg_path(1).stat().st_size - 9)
    return ld.root


TORN = "trailing bytes at position"  # KA102's message (warning)
HW = "high watermark 30 is above the log end offset 27"  # KA401's (error)
RECOVERY_CODE = "KA406"  # info


# ------------------------------------------------------------------------------------ severity order


def _finding(
    code: str, severity: Severity, topic: str | None, partition: int | None, message: str
) -> Finding:
    return Finding(
        code, severity, message, broker=1, log_dir="/data/broker-1", topic=topic, partition=partition
    )


def test_text_lists_the_most_severe_first_then_by_location():
    findings = sorted(
        [
            _finding("KA405", Severity.WARNING, None, None, "log dir warning"),
            _finding("KA406", Severity.INFO, "a", 0, "a-0 info"),
            _finding("KA102", Severity.WARNING, "a", 1, "a-1 warning"),
            _finding("KA101", Severity.CRITICAL, "z", 9, "z-9 critical"),
            _finding("KA401", Severity.ERROR, "b", 0, "b-0 error"),
            _finding("KA205", Severity.WARNING, "z", 9, "z-9 warning"),
        ],
        key=Finding.sort_key,
    )
    out = io.StringIO()
    render(Report("scan", findings, []), "text", out, color=False, width=120)
    text = out.getvalue()
    order = [
        text.index(m) for m in ("z-9 critical", "z-9 warning", "b-0 error", "log dir warning", "a-1 warning")
    ]
    assert order == sorted(order), text
    assert text.index("a-1 warning") < text.index("a-0 info")  # same group order rule: worst first
    # the JSON keeps the report's (location) order: machines see every finding as before
    doc = io.StringIO()
    render(Report("scan", findings, [], min_severity=Severity.ERROR, quiet=True), "json", doc)
    assert [f["code"] for f in json.loads(doc.getvalue())["findings"]] == [f.code for f in findings]


# ------------------------------------------------------------------------- --min-severity, -q, default


def test_default_text_counts_info_findings_without_listing_them(broken):
    res = run("scan", str(broken))
    assert res.returncode == 1, res.stderr
    assert HW in res.stdout and TORN in res.stdout
    assert "Findings: 0 critical, 2 error, 5 warning, 1 info" in res.stdout
    assert "Not listed below: 1 info (counted above; --min-severity info lists them)" in res.stdout
    assert "will re-read" not in res.stdout.split("Not listed below")[1]  # no KA406 panel
    for more in (["--min-severity", "info"], ["-v"]):
        shown = run("scan", str(broken), *more)
        assert "Not listed below" not in shown.stdout and shown.stdout.count(RECOVERY_CODE) == 2, more


def test_min_severity_hides_and_counts_but_keeps_the_exit_code_and_machine_formats(broken):
    res = run("scan", str(broken), "--min-severity", "error")
    assert res.returncode == 1
    assert HW in res.stdout and TORN not in res.stdout
    assert "Not listed below: 5 warning, 1 info" in res.stdout
    assert "Findings: 0 critical, 2 error, 5 warning, 1 info" in res.stdout
    res = run("scan", str(broken), "--min-severity", "critical")
    assert (
        res.returncode == 1
        and HW not in res.stdout
        and "exit 1: 2 finding(s) at or above error" in res.stdout
    )
    doc = json.loads(run("scan", str(broken), "-f", "json", "--min-severity", "critical", "-q").stdout)
    assert len(doc["findings"]) == 8
    assert run("scan", str(broken), "--min-severity", "bogus").returncode == 2


def test_quiet_prints_the_summary_line_the_failing_findings_and_the_verdict(broken):
    res = run("scan", str(broken), "-q")
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert lines[0] == "Findings: 0 critical, 2 error, 5 warning, 1 info"
    assert "Findings by check" not in res.stdout and "kafka-auditor scan:" not in res.stdout
    assert HW in res.stdout and TORN not in res.stdout
    assert "Not listed below: 5 warning, 1 info (counted above; without -q lists them)" in res.stdout
    assert lines[-1] == "exit 1: 2 finding(s) at or above error"
    res = run("scan", str(broken), "-q", "--fail-on", "warning")
    assert TORN in res.stdout and HW in res.stdout
    res = run("scan", str(broken), "-q", "--fail-on", "never")
    assert HW not in res.stdout and res.returncode == 0


# ------------------------------------------------------------------------------------------ progress


def test_progress_is_drawn_on_a_terminal_and_never_reaches_stdout(broken, tmp_path):
    report = tmp_path / "stdout.txt"
    code, terminal = run_on_tty(["scan", str(broken)], report)
    assert code == 1
    plain = ANSI.sub("", terminal)
    assert re.search(r"✓ scanning 1 log dir\(s\)\s.*\d\.\d/\d\.\d KiB\s+\d+\.\d s", plain), plain
    stdout = report.read_text()
    assert "scanning" not in stdout and "\x1b" not in stdout and HW in stdout


def test_progress_is_silent_when_piped_or_on_a_dumb_terminal_unless_forced(broken, tmp_path):
    res = run("scan", str(broken))
    assert res.stderr == ""
    code, terminal = run_on_tty(["scan", str(broken)], tmp_path / "out.txt", env={"TERM": "dumb"})
    assert code == 1 and "scanning" not in terminal
    forced = run("scan", str(broken), "--progress")
    assert "scanning 1 log dir(s)" in ANSI.sub("", forced.stderr)
    # stdout identical with or without the display (but for the seconds the scan took)
    assert re.sub(r"[\d.]+ s\n", "", forced.stdout) == re.sub(r"[\d.]+ s\n", "", res.stdout)
    code, terminal = run_on_tty(["scan", str(broken), "--no-progress"], tmp_path / "out.txt")
    assert "scanning" not in terminal


def test_stages_time_every_stage_and_draw_only_when_enabled():
    sink = io.StringIO()
    with Stages(enabled=False, file=sink) as stages:
        with stages.stage("one", total=4, unit="log dirs") as stage:
            stage.advance(2)
        with pytest.raises(RuntimeError), stages.stage("two"):
            raise RuntimeError("boom")
    assert [name for name, _ in stages.timings] == ["one", "two"] and sink.getvalue() == ""
    drawn = io.StringIO()
    with Stages(enabled=True, file=drawn) as stages:
        with stages.stage("reading", total=3 << 20, unit="bytes") as stage:
            stage.update(1 << 20, label="orders-0")
        with pytest.raises(RuntimeError), stages.stage("failing"):
            raise RuntimeError("boom")
    text = ANSI.sub("", drawn.getvalue())
    assert "✓ reading" in text and "1.0/3.0 MiB" in text and "✗ failing (failed)" in text


def test_amounts_use_binary_units():
    assert amount(12 << 20, int(243.5 * (1 << 20)), "bytes") == "12.0/243.5 MiB"
    assert amount(1536, 3072, "bytes") == "1.5/3.0 KiB"
    assert amount(3, 4, "log dirs") == "3/4 log dirs"
    assert human_bytes(5 << 30) == "5.0 GiB" and human_bytes(731) == "731 B"


def test_spark_task_poller_sums_the_stages_started_since_it_was_made():
    class Info:
        def __init__(self, done: int, total: int) -> None:
            self.numCompletedTasks, self.numTasks = done, total

    class Tracker:
        active = [1]
        infos = {1: Info(5, 5), 2: Info(1, 4), 3: Info(0, 2)}

        def getActiveStageIds(self):
            return list(self.active)

        def getStageInfo(self, stage_id):
            return self.infos.get(stage_id)

    class Context:
        tracker = Tracker()

        def statusTracker(self):
            return self.tracker

    class Session:
        sparkContext = Context()

    poll = spark_tasks(Session())
    assert poll() is None  # stage 1 ran before the poller: not counted
    Tracker.active = [2, 3]
    assert poll() == (1, 6)
    Tracker.active = [3]  # stage 2 ended: all its tasks ran
    assert poll() == (4, 6)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    """The simulated unclean election (4 log dirs), 200 records per partition: what the display shows does not
    depend on the size, and the audit process below is the slowest test of this module."""
    out = tmp_path_factory.mktemp("sim") / "cluster"
    res = run("simulate", "unclean-election", "--out", str(out), "--seed", "7", "--records", "200")
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.spark
def test_audit_tells_its_stages_and_keeps_spark_console_progress_off(spark, unclean_audit):
    """The stages ``run_audit`` told in the session's CLI audit of the simulated unclean election
    (``unclean_audit``, tests/conftest.py: with ``--export-lost`` and ``--save``, whose stages come last)."""
    assert unclean_audit.audited.findings
    assert unclean_audit.stages == [
        "extracting 4 log dir(s)",
        "identifying the replicas (topic IDs, replica sets)",
        "comparing the replicas",
        "per-partition results: transactions, consumer groups, elections",
        "exporting the lost records",
        "saving the tables (--save)",
    ]
    assert spark.conf.get("spark.ui.showConsoleProgress") == "false"


def _at(text: str, pattern: str) -> int:
    found = re.search(pattern, text)
    assert found, pattern
    return found.start()


@pytest.mark.spark
def test_audit_draws_its_stages_on_a_terminal_only(cluster, tmp_path):
    """A real ``audit -q`` process with stderr on a pseudo-terminal: every stage with its seconds, Spark's
    task counts, nothing of it in the report; the quiet report lists the findings at or above ``--fail-on``,
    most severe first. (Silence when piped: the test of ``scan`` above and every in-process audit of the
    suite, whose stderr is no terminal.)"""
    report = tmp_path / "audit.txt"
    # no class-data-sharing archive: the first local audit process of the session would spend ~12 s writing
    # one at exit that no later test maps (the archive's own end-to-end test is tests/spark/test_tuning.py's)
    off = {CDS_ENV: "off"}
    code, terminal = run_on_tty(["audit", str(cluster), "--master", "local[2]", "-q"], report, env=off)
    assert code == 1, terminal
    plain = ANSI.sub("", terminal)
    for stage in (
        "discovering the inputs",
        "starting Spark (local[2])",
        "extracting 4 log dir(s)",
        "identifying the replicas (topic IDs, replica sets)",
        "comparing the replicas",
        "per-partition results: transactions, consumer groups, elections",
    ):
        assert re.search(rf"✓ {re.escape(stage)}\s.*\d+\.\d s", plain), (stage, plain)
    assert re.search(r"\d+/\d+ Spark tasks", plain) and "Exception" not in plain
    text = report.read_text()
    assert "\x1b" not in text and "Spark tasks" not in text
    assert text.startswith("Findings: 1 critical") and "KA620" not in text  # a warning, below --fail-on
    assert _at(text, r"critical\s+KA710") < _at(text, r"error\s+KA601")


# ------------------------------------------------------------------------------------------- -v logs


def test_verbose_logs_the_stages_and_the_engine_on_stderr_only(broken):
    res = run("scan", str(broken), "-v", "-f", "json")
    assert res.returncode == 1
    json.loads(res.stdout)  # stdout holds the report only
    assert "INFO auditor.progress: scanning 1 log dir(s): done in" in res.stderr
    assert re.search(r"INFO auditor\.scan: \d+ partition\(s\) of 1 log dir\(s\)", res.stderr), res.stderr
    assert run("scan", str(broken), "-f", "json").stderr == ""


def test_spark_log_levels_follow_verbose():
    from auditor.spark.startup import SPARK_LOG_LEVELS

    assert SPARK_LOG_LEVELS[0] == "ERROR" and SPARK_LOG_LEVELS[1:] == ("WARN", "INFO", "DEBUG")


# ----------------------------------------------------------------------------- --explain, --list-rules


@pytest.mark.parametrize("command", ["scan", "audit", "report"])
def test_explain_is_rendered_on_a_terminal_and_markdown_when_piped(command):
    code, terminal = run_on_tty([command, "--explain", "KA401"], None)
    assert code == 0
    plain = ANSI.sub("", terminal)
    assert "What to do:" in plain and "###" not in plain and "**" not in plain
    piped = run(command, "--explain", "KA401")
    assert piped.stdout.startswith("### KA401 `partition.hw-above-leo` (error)")


def test_list_rules_is_a_table_on_a_terminal_and_markdown_when_piped():
    code, terminal = run_on_tty(["audit", "--list-rules"], None)
    assert code == 0
    plain = ANSI.sub("", terminal)
    assert "KA710" in plain and "|---|" not in plain
    assert run("audit", "--list-rules").stdout.startswith("| Code | Name | Severity | Scope |")


# ------------------------------------------------------------------------------------ completion


def _script() -> Path:
    script = Path(sys.executable).parent / "kafka-auditor"
    if not script.exists():
        pytest.skip("the kafka-auditor console script is not installed beside this Python")
    return script


def test_shell_completion_is_on():
    res = run("--help")
    assert "--install-completion" in res.stdout and "--show-completion" in res.stdout
    # Typer finds the current shell from the parent processes, else from $SHELL (never from an argument)
    env = {**os.environ, "SHELL": "/bin/bash"}
    shown = subprocess.run(
        [str(_script()), "--show-completion"], capture_output=True, text=True, env=env, timeout=60
    )
    assert shown.returncode == 0 and "_KAFKA_AUDITOR_COMPLETE=complete_" in shown.stdout, shown.stderr
    env.update(_KAFKA_AUDITOR_COMPLETE="complete_bash", COMP_WORDS="kafka-auditor scan --min-severity ")
    env["COMP_CWORD"] = "3"
    asked = subprocess.run([str(_script())], capture_output=True, text=True, env=env, timeout=60)
    assert asked.stdout.split() == ["info", "warning", "error", "critical"]


# ------------------------------------------------------------------------- the same options everywhere


def test_reporting_and_spark_commands_take_the_terminal_options():
    import typer.main

    from auditor.cli import app

    commands = typer.main.get_command(app).commands
    for name in ("scan", "audit", "report"):
        params = {p.name: p for p in commands[name].params}
        assert {"min_severity", "quiet", "verbose", "progress", "explain", "list_rules"} <= set(params), name
        assert params["verbose"].count and params["quiet"].opts == ["--quiet", "-q"]
    ingest = {p.name: p for p in commands["ingest"].params}
    assert ingest["verbose"].count and "--progress" in ingest["progress"].opts


def test_a_report_lists_what_is_not_hidden_and_marks_only_that_as_reported():
    """``report`` records the findings it listed as reported: with text's default threshold an info finding
    stays new (:meth:`ReportOptions.displayed` is what the state records)."""
    from auditor.cli.report_options import ReportOptions

    findings = [
        _finding("KA801", Severity.ERROR, "a", 0, "hw went back"),
        _finding("KA812", Severity.INFO, "a", 0, "a fact"),
    ]
    report = Report("report", findings, [])
    assert [f.code for f in ReportOptions().displayed(report).shown] == ["KA801"]
    assert [f.code for f in ReportOptions(verbose=1).displayed(report).shown] == ["KA801", "KA812"]
    assert [f.code for f in ReportOptions(fmt="json").displayed(report).shown] == ["KA801", "KA812"]
    quiet = ReportOptions(quiet=True).displayed(report)  # -q: the findings at or above the report's --fail-on
    assert [f.code for f in quiet.shown] == ["KA801"]
    never = ReportOptions(quiet=True).displayed(Report("report", findings, [], fail_on=None))
    assert never.shown == [] and len(never.hidden) == 2


def test_output_to_a_file_from_a_terminal_prints_the_counts_and_verdict(broken, tmp_path):
    """``-o FILE`` on a terminal: the report goes to the file, the counts and the verdict line to stderr."""
    report = tmp_path / "scan.json"
    code, seen = run_on_tty(["scan", str(broken), "-f", "json", "-o", str(report), "--no-progress"], None)
    assert code == 1 and json.loads(report.read_text())["exitCode"] == 1
    assert "Findings: 0 critical, 2 error" in seen
    assert f"exit 1: 2 finding(s) at or above error (report: {report})" in seen
