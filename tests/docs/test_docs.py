"""The documentation stays true: the README is a front door with one example per command, docs/ documents
every command, option and environment variable, every check has its current generated page, and nothing a
user reads cites a document users do not have."""

from __future__ import annotations

import re
import subprocess
import sys

import typer.main

from auditor.cli import app
from auditor.rules import docs as rule_docs
from auditor.rules.registry import all_rules
from tests.docs.markdown import REPO, documents

README = (REPO / "README.md").read_text(encoding="utf-8")
COMMANDS = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
ALL_DOCS = "\n".join(p.read_text(encoding="utf-8") for p in documents())


def _group():
    return typer.main.get_command(app)


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_every_command_has_a_section_in_docs_and_an_example_in_the_readme():
    names = sorted(_group().commands)
    assert {"dump", "scan", "audit", "report"} <= set(names)
    for name in names:
        assert re.search(rf"^## `kafka-auditor {name}\b", COMMANDS, re.M), f"docs/commands.md lacks `{name}`"
        assert re.search(rf"^kafka-auditor {name}\b", README, re.M), f"README lacks an example of `{name}`"


def test_every_option_of_every_command_is_documented():
    group = _group()
    missing = [opt for p in group.params for opt in p.opts + p.secondary_opts if not _mentions(ALL_DOCS, opt)]
    for name, command in sorted(group.commands.items()):
        for param in command.params:
            if param.param_type_name != "option":
                continue
            opts = param.opts + param.secondary_opts
            missing += [f"{name} {o}" for o in opts if not _mentions(COMMANDS, o)]
    assert not missing, f"options not documented in docs/commands.md: {missing}"


def test_the_option_check_sees_a_missing_option():
    assert _mentions("`--fail-on LEVEL`", "--fail-on") and _mentions("`-q`, `--quiet`", "-q")
    assert not _mentions("--fail-only", "--fail-on") and not _mentions("--quiet-v", "-v")


def test_every_kafka_auditor_environment_variable_is_documented():
    names: set[str] = set()
    for package in ("auditor", "parsers"):
        for path in (REPO / package).rglob("*.py"):
            names |= set(re.findall(r"\bKAFKA_AUDITOR_[A-Z0-9_]+\b", path.read_text(encoding="utf-8")))
    assert {"KAFKA_AUDITOR_DEBUG", "KAFKA_AUDITOR_SPARK_MASTER", "KAFKA_AUDITOR_MASTER_TIMEOUT"} <= names
    missing = sorted(n for n in names if f"`{n}`" not in COMMANDS)
    assert not missing, f"environment variables not documented in docs/commands.md: {missing}"


def test_the_two_commands_and_ci_agree():
    assert "make demo" in README and "make test" in README
    makefile = (REPO / "Makefile").read_text()
    for target in ("demo", "test", "docs"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_the_readme_is_a_front_door():
    lines = README.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the details to docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:4] == ["## Install", "## The two commands", "## After an incident", "## Every night"]


def test_no_placeholder_and_no_private_reference_in_what_users_read():
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        for marker in ("TODO", "TBD", "PERFORMANCE_TABLE", "XXX"):
            assert marker not in text, (doc, marker)
        # rule references cite Kafka's classes, KIPs and JIRAs, never sections of a private document
        assert "§" not in text and "kafka-format-spec" not in text, doc


def test_every_check_has_its_current_page():
    directory = REPO / "docs" / "checks"
    problems = rule_docs.differences(directory)
    assert not problems, "\n".join(problems) + f"\nregenerate them with: {rule_docs.REGENERATE} (make docs)"
    index = (directory / rule_docs.INDEX).read_text(encoding="utf-8")
    for r in all_rules():
        assert f"[{r.code}]({r.code}.md)" in index, r.code
        page = (directory / f"{r.code}.md").read_text(encoding="utf-8")
        for section in r.sections:
            assert f"\n## {section}\n" in page, (r.code, section)


def test_a_stale_or_missing_page_is_named_with_the_command(tmp_path):
    assert rule_docs.write(tmp_path)  # every page written
    assert rule_docs.differences(tmp_path) == []
    (tmp_path / "KA601.md").write_text("# KA601 edited by hand\n", encoding="utf-8")
    (tmp_path / "KA101.md").unlink()
    (tmp_path / "KA999.md").write_text("# a rule that does not exist\n", encoding="utf-8")
    assert rule_docs.differences(tmp_path) == [
        f"{tmp_path / 'KA101.md'}: missing",
        f"{tmp_path / 'KA601.md'}: stale",
        f"{tmp_path / 'KA999.md'}: no such rule",
    ]
    res = subprocess.run(
        [sys.executable, "-m", "auditor.rules.docs", "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 1 and rule_docs.REGENERATE in res.stderr and "KA601.md: stale" in res.stderr
    assert sorted(rule_docs.write(tmp_path)) == ["KA101.md", "KA601.md", "KA999.md"]
    assert rule_docs.differences(tmp_path) == [] and not (tmp_path / "KA999.md").exists()


def test_the_project_urls_lead_to_the_docs():
    pyproject = (REPO / "pyproject.toml").read_text()  # tomllib is Python 3.11+; the project runs on 3.10
    section = re.search(r"^\[project\.urls\]\n(.*?)(?:^\[|\Z)", pyproject, re.M | re.S)
    assert section, "pyproject.toml lacks [project.urls]"
    urls = dict(re.findall(r'^(\w+) = "([^"]+)"', section.group(1), re.M))
    assert urls["Homepage"] == rule_docs.PROJECT_URI
    assert urls["Documentation"] == rule_docs.DOCS_URI
    assert rule_docs.page_uri("ka601") == f"{rule_docs.PROJECT_URI}/blob/main/docs/checks/KA601.md"


def test_explain_ends_with_the_address_of_the_page():
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["audit", "--explain", "KA710"])
    assert res.exit_code == 0 and "What to do:" in res.stdout
    assert res.stdout.rstrip().endswith(f"Documentation: {rule_docs.page_uri('KA710')}")
