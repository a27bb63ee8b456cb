"""The ``auditor.cli`` package: every module imports alone, first, in a fresh interpreter (no import cycle,
no pyspark at import time), command modules use only ``auditor.cli.common`` of their package, and no module
needs a late import (``noqa: E402``)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import auditor.cli

PACKAGE = Path(auditor.cli.__file__).parent
MODULES = sorted(
    f"auditor.cli.{m.name}" for m in pkgutil.iter_modules([str(PACKAGE)]) if m.name != "__main__"
)
COMMANDS = {
    "auditor.cli.audit",
    "auditor.cli.dump",
    "auditor.cli.extract",
    "auditor.cli.groups",
    "auditor.cli.ingest",
    "auditor.cli.report",
    "auditor.cli.scan",
    "auditor.cli.simulate",
    "auditor.cli.timeline",
}


def test_every_command_has_its_module():
    assert COMMANDS | {"auditor.cli.common"} == set(MODULES)


@pytest.mark.parametrize("first", MODULES)
def test_each_module_imports_first_in_a_fresh_interpreter(first):
    rest = [m for m in MODULES if m != first]
    code = (
        "import importlib, sys\n"
        f"importlib.import_module({first!r})\n"
        f"for m in {rest!r} + {rest[::-1]!r}: importlib.import_module(m)\n"
        "import auditor.cli\n"
        "assert callable(auditor.cli.main) and auditor.cli.app is not None\n"
        "assert 'pyspark' not in sys.modules, 'pyspark imported at CLI import time'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_command_modules_use_only_common_of_their_package(module):
    path = PACKAGE / f"{module.rsplit('.', 1)[1]}.py"
    own = {n for n in _imported(path) if n == "auditor.cli" or n.startswith("auditor.cli.")}
    assert own and all(n.startswith("auditor.cli.common") for n in own), own


def test_no_late_imports():
    for path in PACKAGE.glob("*.py"):
        assert "E402" not in path.read_text(encoding="utf-8"), path


def test_python_dash_m_runs_the_app():
    res = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0 and res.stdout.startswith("kafka-auditor "), res.stderr
