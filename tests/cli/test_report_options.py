"""``scan`` and ``audit`` share one set of report options (:func:`auditor.cli.report_options.report_options`):
the same flags, choices and defaults, the same rule selection semantics over their own scopes, and the same
refusals (exit 2) — ``audit`` refusing an unknown selector before Spark is loaded."""

from __future__ import annotations

import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from auditor.cli import app
from auditor.cli.report_options import ReportOptions, report_options
from auditor.findings import Severity
from auditor.rules.registry import AUDIT_SCOPES, REGISTRY, load_rules
from auditor.scan import SCAN_SCOPES
from tests.rules.builder import standard

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
    annotation = param.type_descriptor.annotation
    choices = tuple(m.value for m in annotation) if isinstance(annotation, type(Enum)) else ()
    return (tuple(param.opts), param.default, choices, annotation, param.help, param.is_eager)


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
