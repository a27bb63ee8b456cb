"""Fixtures of the audit tests: every simulator scenario (plus random seeds), the consequence tests' clusters
(``tests.consequences``) and the real corpus, each audited ONCE in a single Spark run with one cluster label
per input (the session ``spark`` fixture of
``tests/conftest.py``); the tests then check their own cluster's slice of the results."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from auditor.observe.extract import extract_log_dir
from auditor.simulate import SCENARIOS, SimOptions, run_scenario
from auditor.spark.audit import AuditResult, run_audit
from auditor.spark.inputs import Inputs, discover
from tests.audit.handmade import write_cluster
from tests.consequences import ConsequencesAudit, add_inputs, from_result

RANDOM_SEEDS = tuple(range(1, 9))
SIM_RUNS = [(name, 1) for name in SCENARIOS if name != "random"] + [("random", s) for s in RANDOM_SEEDS]
PARQUET_TWINS = ("unclean-election-1", "acks1-leader-crash-1")
"""Scenarios audited a second time from `extract` directories (label ``<name>@parquet``)."""

CORPUS_STATES = {
    "clean": "clean",
    "ule-before": "unclean-leader-election/before-old-leader-restart",
    "ule-after": "unclean-leader-election/after-old-leader-rejoined",
    "single-node": "single-node",
}


@dataclass
class SimAudit:
    root: Path
    truths: dict[str, dict]
    result: AuditResult
    exported: dict[tuple, dict]
    consequences: ConsequencesAudit
    inputs: Inputs | None = None


def label(name: str, seed: int) -> str:
    return f"{name}-{seed}"


@pytest.fixture(scope="session")
def sim_root(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    root = tmp_path_factory.mktemp("scenarios")
    truths = {}
    for name, seed in SIM_RUNS:
        truths[label(name, seed)] = run_scenario(name, root / label(name, seed), SimOptions(seed=seed))
    return root, truths


@pytest.fixture(scope="session")
def sim_audit(spark, sim_root, tmp_path_factory) -> SimAudit:
    root, truths = sim_root
    inputs = Inputs()
    for lab in truths:
        inputs.sources += discover([root / lab], label=lab).sources
    extracts = tmp_path_factory.mktemp("extracts")
    for lab in PARQUET_TWINS:
        for broker_dir in sorted((root / lab).iterdir()):
            if broker_dir.is_dir():
                out = extracts / f"{lab}-{broker_dir.name}"
                extract_log_dir(broker_dir, out)
                inputs.sources += discover([out], label=f"{lab}@parquet").sources
    inputs.sources += discover([write_cluster(tmp_path_factory.mktemp("handmade"))], label="handmade").sources
    consequence_truths = add_inputs(inputs, tmp_path_factory.mktemp("consequences"))
    export = tmp_path_factory.mktemp("export")
    result = run_audit(spark, inputs, export_lost=export, chunk_bits=3)
    exported = {}
    with open(export / "lost-records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            exported[(d["cluster"], d["topic"], d["partition"], d["offset"])] = d
    consequences = from_result(result, consequence_truths, export)
    return SimAudit(root, truths, result, exported, consequences, inputs)


@pytest.fixture(scope="session")
def consequences_audit(sim_audit) -> ConsequencesAudit:
    """The consequence tests' clusters (``tests.consequences``) in the one ``sim_audit`` run."""
    return sim_audit.consequences


@pytest.fixture(scope="session")
def corpus_audit(spark, corpus) -> AuditResult:
    inputs = Inputs()
    for lab, rel in CORPUS_STATES.items():
        inputs.sources += discover([corpus / rel], label=lab).sources
    return run_audit(spark, inputs)


def of_cluster(findings, cluster: str, topic: str | None = None, partition: int | None = None) -> list:
    return [
        f
        for f in findings
        if f.evidence.get("cluster") == cluster
        and (topic is None or f.topic == topic)
        and (partition is None or f.partition == partition)
    ]
