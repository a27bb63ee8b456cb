"""What the session's one audit of every simulator scenario holds (the ``sim_audit`` fixture of
``tests/conftest.py``): the runs it audits, their cluster labels, and each cluster's slice of the findings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.simulate import SCENARIOS

if TYPE_CHECKING:
    from auditor.spark.audit import AuditResult
    from auditor.spark.inputs import Inputs
    from tests.support.consequences import ConsequencesAudit

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


def of_cluster(findings, cluster: str, topic: str | None = None, partition: int | None = None) -> list:
    return [
        f
        for f in findings
        if f.evidence.get("cluster") == cluster
        and (topic is None or f.topic == topic)
        and (partition is None or f.partition == partition)
    ]
