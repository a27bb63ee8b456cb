"""Scenario generator: simulate Kafka replication and write real multi-broker log directories with
known ground truth (issue 3).

Public API (used by ``kafka-auditor simulate``)::

    SCENARIOS: dict[str, Scenario]          # .name, .description
    SimOptions(seed=0, brokers=3, topics=1, partitions=1, records=1000, segment_bytes=16384,
               compression="none", scale=False, truncation=None, ...)
    run_scenario(name, out_dir, options) -> dict   # writes out_dir/broker-N/..., controller-100/,
                                                    # ground-truth.json; returns the ground truth

``ValueError`` means bad input (unknown scenario, invalid options, non-empty output directory).

``CAPTURE_SCENARIOS`` lists the scenarios that write nightly checkpoint captures instead of log directories
(``history``: :func:`auditor.simulate.history.run_history` with
:class:`~auditor.simulate.history.HistoryOptions`); they are not in ``SCENARIOS``, whose scenarios all
write one cluster's log directories.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from auditor.simulate.config import SimOptions
from auditor.simulate.history import HISTORY_DESCRIPTION
from auditor.simulate.scenarios import SCENARIOS, Scenario

__all__ = ["SCENARIOS", "CAPTURE_SCENARIOS", "Scenario", "SimOptions", "run_scenario", "GROUND_TRUTH_FILE"]

CAPTURE_SCENARIOS: dict[str, str] = {"history": HISTORY_DESCRIPTION}
"""Scenarios writing nightly checkpoint captures (name -> description for ``simulate --list``)."""

GROUND_TRUTH_FILE = "ground-truth.json"


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ValueError(f"output path {out_dir} exists and is not a directory")
        if any(out_dir.iterdir()):
            raise ValueError(f"output directory {out_dir} is not empty (choose a new or empty directory)")


def run_scenario(name: str, out_dir: Path | str, options: SimOptions | None = None) -> dict:
    """Simulate scenario ``name``, write the broker log directories and ``ground-truth.json`` into
    ``out_dir`` (which must not exist or be empty) and return the ground truth."""
    options = options or SimOptions()
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise ValueError(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}")
    options.validate()
    if options.brokers < scenario.min_brokers:
        raise ValueError(
            f"scenario {name!r} needs at least {scenario.min_brokers} brokers "
            f"(got --brokers {options.brokers})"
        )
    out_dir = Path(out_dir)
    _check_out_dir(out_dir)
    opts_json = {
        k: v for k, v in dataclasses.asdict(options).items() if k not in ("extra", "check_invariants")
    }
    opts_json["producer_kinds"] = list(options.producer_kinds)
    if options.scale:
        from auditor.simulate.scale import run_scale

        truth = run_scale(scenario, out_dir, options, opts_json)
    else:
        from auditor.simulate.truth import ground_truth
        from auditor.simulate.writer import write_cluster

        cluster = scenario.build(options)
        write_cluster(cluster, out_dir)
        truth = ground_truth(cluster, scenario=name, description=scenario.description, options=opts_json)
    (out_dir / GROUND_TRUTH_FILE).write_text(json.dumps(truth, indent=1) + "\n")
    return truth
