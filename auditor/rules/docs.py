"""The documentation of the checks, generated from the registry: one page per rule (``docs/checks/KAnnn.md``)
and an index (``docs/checks/index.md``), plus the published address of each page (SARIF ``helpUri``,
``--explain``).

``python -m auditor.rules.docs --write docs/checks`` (``make docs``) writes the pages and removes those of
rules that no longer exist; ``--check docs/checks`` exits 1 naming every page that is missing, stale or left
over. A page holds the rule's code, name, severity, scope, the command that runs it and its lifecycle, the
four docstring sections (KIPs and KAFKA JIRA issues linked), then how to run it alone and where its findings
show in the machine outputs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from auditor.rules.registry import AUDIT_SCOPES, HISTORY_SCOPES, Rule, all_rules

PROJECT_URI = "https://github.com/kafka-auditor/kafka-auditor"
"""The project's home (``[project.urls] Homepage`` in ``pyproject.toml``)."""
DOCS_URI = f"{PROJECT_URI}/tree/main/docs"
"""The documentation folder (``[project.urls] Documentation``)."""
PAGES_URI = f"{PROJECT_URI}/blob/main/docs/checks"
JIRA_URI = "https://issues.apache.org/jira/browse/{}"
KIP_URI = "https://cwiki.apache.org/confluence/dosearchsite.action?where=KAFKA&queryString={}"
"""A KIP's page title is not derivable from its number; the wiki's search for it lists the page first."""
INDEX = "index.md"
REGENERATE = "python -m auditor.rules.docs --write docs/checks"
_REFERENCE = re.compile(r"(?<![\w\[/=-])(KAFKA-\d+|KIP-\d+)\b")
_EXAMPLE_INPUT = {
    "scan": "/var/lib/kafka/data",
    "audit": "/evidence",
    "report": "-w /srv/kafka-warehouse --all",
}
_LITERAL = re.compile(r"``(.+?)``")


def page_name(code: str) -> str:
    """The file name of a rule's page (``KA601.md``)."""
    return f"{code.upper()}.md"


def page_uri(code: str) -> str:
    """The published address of a rule's page, e.g. ``.../blob/main/docs/checks/KA601.md``."""
    return f"{PAGES_URI}/{page_name(code)}"


def command_of(r: Rule) -> str:
    """The command that runs ``r``: ``audit`` (cross-replica scopes), ``report`` (history) or ``scan``."""
    if r.scope in AUDIT_SCOPES:
        return "audit"
    if r.scope in HISTORY_SCOPES:
        return "report"
    return "scan"


def linked_references(text: str) -> str:
    """``text`` with each KAFKA JIRA issue and KIP named in it as a Markdown link (a KIP to the Kafka wiki's
    search for it)."""

    def link(m: re.Match[str]) -> str:
        ref = m.group(1)
        uri = JIRA_URI.format(ref) if ref.startswith("KAFKA-") else KIP_URI.format(ref)
        return f"[{ref}]({uri})"

    return _REFERENCE.sub(link, text)


def _markdown(text: str) -> str:
    """A docstring section as Markdown: a capital first letter, ````code```` as ```code```."""
    text = _LITERAL.sub(r"`\1`", text)
    return text[:1].upper() + text[1:]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def page(r: Rule) -> str:
    """The Markdown page of one rule."""
    command = command_of(r)
    lifecycle = r.lifecycle if r.lifecycle == "stable" else f"{r.lifecycle}: runs only when selected by code"
    out = [
        f"# {r.code} `{r.name}`",
        "",
        f"{r.title}.",
        "",
        "| code | name | severity | scope | command | lifecycle |",
        "|---|---|---|---|---|---|",
        f"| {r.code} | `{r.name}` | {r.severity.label} | {r.scope} | `{command}` | {lifecycle} |",
        "",
    ]
    for name, text in r.sections.items():
        body = _markdown(linked_references(text) if name == "References" else text)
        out += [f"## {name}", "", body, ""]
    run = f"kafka-auditor {command} {_EXAMPLE_INPUT[command]}"
    out += [
        "## Running it",
        "",
        "```bash",
        f"{run} --select {r.code}  # this check alone",
        f"{run} -f jsonl | jq 'select(.code == \"{r.code}\")'  # its findings, one JSON object each",
        f"kafka-auditor {command} --explain {r.code}  # this page in the terminal",
        "```",
        "",
        f"Its findings carry `code` `{r.code}` and `name` `{r.name}` in every output: SARIF rule `{r.code}`, "
        f"JUnit test cases named `{r.code} {r.name}`, and the Prometheus textfile's "
        f'`kafka_auditor_check_findings{{command="{command}",code="{r.code}",name="{r.name}",'
        f'severity="{r.severity.label}"}}` (0 when the check ran and found nothing). Severity '
        f"{r.severity.label} is the default; a finding can state its own.",
        "",
        f"[All checks]({INDEX}) · [Commands](../commands.md) · [Outputs](../outputs.md)",
        "",
    ]
    return "\n".join(out)


def index(rules: Iterable[Rule]) -> str:
    """The Markdown index of every rule: a table linking each page."""
    rules = list(rules)
    out = [
        "# Checks",
        "",
        f"Every check of kafka-auditor, {len(rules)} in all, generated from the rule registry "
        f"(`{REGENERATE}`; a test fails when a page is stale). `scan` runs the KA0xx-KA5xx checks on each "
        "log dir, `audit` the cross-replica KA6xx-KA7xx, `report` the KA8xx over the history of an ingest "
        "warehouse. `kafka-auditor COMMAND --list-rules` lists a command's checks, `--explain CODE` prints a "
        "page in the terminal; `--select`/`--ignore` take codes, code prefixes (`KA2`), names and families "
        "(`index`). Preview checks run only when selected by code or name.",
        "",
        "| Code | Name | Severity | Command | Scope | Meaning |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        lifecycle = "" if r.lifecycle == "stable" else f" ({r.lifecycle})"
        out.append(
            f"| [{r.code}]({page_name(r.code)}) | `{r.name}`{lifecycle} | {r.severity.label} | "
            f"`{command_of(r)}` | {r.scope} | {_cell(r.title)} |"
        )
    out.append("")
    return "\n".join(out)


def pages(rules: Iterable[Rule] | None = None) -> dict[str, str]:
    """File name -> content of every generated page, the index included."""
    rules = list(rules if rules is not None else all_rules())
    out = {page_name(r.code): page(r) for r in rules}
    out[INDEX] = index(rules)
    return out


def differences(directory: Path, expected: dict[str, str] | None = None) -> list[str]:
    """What differs between ``directory`` and the generated pages: one line per missing, stale or extra
    page (empty when up to date)."""
    expected = expected if expected is not None else pages()
    problems = []
    for name, text in sorted(expected.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: stale")
    extra = (
        sorted(p.name for p in directory.glob("KA*.md") if p.name not in expected)
        if directory.is_dir()
        else []
    )
    problems += [f"{directory / name}: no such rule" for name in extra]
    return problems


def write(directory: Path) -> list[str]:
    """Write every page into ``directory`` (created if needed) and remove the pages of rules that no longer
    exist; returns the names written or removed."""
    expected = pages()
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in sorted(expected.items()):
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    for path in sorted(directory.glob("KA*.md")):
        if path.name not in expected:
            path.unlink()
            changed.append(path.name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m auditor.rules.docs", description="Generate the pages of kafka-auditor's checks."
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="DIR", type=Path, help="write the pages into DIR (docs/checks)")
    group.add_argument("--check", metavar="DIR", type=Path, help="exit 1 when a page in DIR is not current")
    args = parser.parse_args(argv)
    if args.write is not None:
        changed = write(args.write)
        print(f"{len(changed)} page(s) written or removed in {args.write}")
        return 0
    problems = differences(args.check)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"regenerate them with: {REGENERATE}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
