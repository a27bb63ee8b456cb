"""Fixtures for the simulator tests: scenario outputs generated once per session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.simulate import SimOptions, run_scenario

SMALL = {"records": 400}


@pytest.fixture(scope="session")
def scenario_out(tmp_path_factory):
    """``scenario_out(name, **options)`` -> (output dir, ground truth), cached per argument set."""
    cache: dict = {}

    def make(name: str, **kw) -> tuple[Path, dict]:
        key = (name, tuple(sorted(kw.items())))
        if key not in cache:
            out = tmp_path_factory.mktemp(name.replace("-", "_")) / "out"
            opts = SimOptions(**{**SMALL, "check_invariants": True, **kw})
            truth = run_scenario(name, out, opts)
            assert json.loads((out / "ground-truth.json").read_text()) == truth
            cache[key] = (out, truth)
        return cache[key]

    return make
