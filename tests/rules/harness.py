"""The fire/silent registry of the rule cases, and where each rule's cases live.

A case is ``fn(tmp_path, monkeypatch)`` returning what the rule's engine reads: a list of log dirs (scan),
an ``Audit`` or an object with ``finding_rows()`` (audit and report). ``@fire(code, ...)`` lists it in
``FIRE[code]``, ``@silent(code, ...)`` in ``SILENT[code]``.

The cases of the rules of ``auditor/rules/<package>/<module>.py`` live in
``tests/rules/<package>/cases_<module>.py`` (``auditor.rules.index.time_index`` ->
``tests.rules.index.cases_time_index``); :func:`load_cases` imports every case file, so a new one is found
without being listed anywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

Case = Callable[[Path, object], object]
FIRE: dict[str, list[Case]] = {}
SILENT: dict[str, list[Case]] = {}

TESTS = Path(__file__).resolve().parent
"""``tests/rules``: the root of the case files."""


def fire(*codes: str):
    def wrap(fn: Case) -> Case:
        for code in codes:
            FIRE.setdefault(code, []).append(fn)
        return fn

    return wrap


def silent(*codes: str):
    def wrap(fn: Case) -> Case:
        for code in codes:
            SILENT.setdefault(code, []).append(fn)
        return fn

    return wrap


def case_module(rule_module: str) -> str:
    """A rule module's case file: ``auditor.rules.replica.loss`` -> ``tests.rules.replica.cases_loss``."""
    package, _, name = rule_module.removeprefix("auditor.rules").lstrip(".").rpartition(".")
    return ".".join(p for p in ("tests.rules", package, f"cases_{name}") if p)


def rule_module(case_module: str) -> str:
    """The rule module a case file is named after (the inverse of :func:`case_module`)."""
    package, _, name = case_module.removeprefix("tests.rules").lstrip(".").rpartition(".")
    return ".".join(p for p in ("auditor.rules", package, name.removeprefix("cases_")) if p)


def case_modules() -> list[str]:
    """Every case file under ``tests/rules``, as a module name."""
    files = sorted(TESTS.rglob("cases_*.py"))
    return [".".join(("tests", "rules", *f.relative_to(TESTS).with_suffix("").parts)) for f in files]


def load_cases() -> tuple[dict[str, list[Case]], dict[str, list[Case]]]:
    """Import every case file (registering its cases) and return ``(FIRE, SILENT)``."""
    for name in case_modules():
        importlib.import_module(name)
    return FIRE, SILENT
