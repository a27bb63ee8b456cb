"""The README stays true: every command is documented with an example (in the README or a page of docs/), and
the two commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from auditor.cli import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
DOCS = {
    path.name: path.read_text(encoding="utf-8")
    for path in sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md"))
}


def command_names() -> list[str]:
    group = typer.main.get_command(app)
    return sorted(group.commands)


def test_every_command_has_a_section_and_an_example():
    names = command_names()
    assert "dump" in names
    for name in names:
        # the section and its example in one page: the README, or a page of docs/
        pages = [text for text in (README, *DOCS.values()) if f"### `kafka-auditor {name}" in text]
        assert pages, f"neither the README nor docs/ has a section for `{name}`"
        assert any(re.search(rf"^kafka-auditor {name}\b", text, re.M) for text in pages), (
            f"the section of `{name}` has no example"
        )


def test_the_two_commands_and_ci_agree():
    root = Path(__file__).resolve().parents[1]
    assert "make demo" in README and "make test" in README
    makefile = (root / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (root / ".ci" / "run").read_text()


def test_no_placeholder_left_in_the_readme():
    for marker in ("TODO", "TBD", "PERFORMANCE_TABLE", "XXX"):
        assert marker not in README


def test_checks_table_is_the_registry():
    import re

    from auditor.rules.registry import markdown_table

    block = re.search(r"<!-- checks:start -->\n(.*?)\n<!-- checks:end -->", README, re.S)
    assert block, "README lacks the checks table markers"
    assert block.group(1).strip() == markdown_table().strip(), (
        "README checks table is stale: regenerate it with python -m auditor.rules.registry --markdown"
    )
