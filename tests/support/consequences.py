"""The clusters of the tests of an incident's consequences (transactions, consumer groups, which replica to
elect), each with its own cluster label: ``tests/conftest.py`` audits them ONCE, in the same Spark run
as every simulator scenario (``sim_audit``, small offset chunks: ``chunk_bits=3`` makes the comparisons'
candidate chunks cut through the transactions; with ``--export-lost``). Each test reads its own cluster's
slice of the result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from auditor.simulate import SimOptions, run_scenario
from auditor.spark.audit import AuditResult
from auditor.spark.inputs import Inputs, discover
from tests.conftest import CORPUS  # noqa: E402


@dataclass
class ConsequencesAudit:
    result: AuditResult
    truths: dict[str, dict]
    exported: dict[str, list[dict]]  # lost-records.jsonl rows by cluster label
    exported_table: list[dict]  # lost-records.parquet rows


def add_inputs(inputs: Inputs, root: Path) -> dict[str, dict]:
    """Write every cluster of the consequence tests under ``root`` and add them to ``inputs`` (one label
    each); returns the simulator's ground truth of the simulated ones."""
    from tests.e2e.test_election_truth import OFFLINE, SEED, UNCLEAN, offline_cluster
    from tests.spark.test_hanging import write_broker
    from tests.spark.test_pass_loss import _generated, _truncated_txn0
    from tests.support.groups import lost_commit_cluster

    for label, coordinator in (("hang", True), ("nocoord", False)):
        for node in (1, 2):
            write_broker(root / label, node, coordinator)
        inputs.sources += discover([root / label], label=label).sources
    inputs.sources += discover([_generated(root / "gen")], label="gen").sources
    if CORPUS.is_dir():
        inputs.sources += discover([_truncated_txn0(CORPUS, root / "txn0")], label="txn0").sources
    (root / "groups-lost").mkdir()
    lost_commit_cluster(root / "groups-lost")
    inputs.sources += discover([root / "groups-lost"], label="groups-lost").sources
    truths = {
        UNCLEAN: run_scenario("unclean-election", root / UNCLEAN, SimOptions(seed=SEED)),
        OFFLINE: offline_cluster(root / OFFLINE),
    }
    for lab in truths:
        inputs.sources += discover([root / lab], label=lab).sources
    return truths


def from_result(result: AuditResult, truths: dict[str, dict], export: Path) -> ConsequencesAudit:
    """The consequence tests' view of an audit that included :func:`add_inputs` (``export``: its
    ``--export-lost`` directory)."""
    exported: dict[str, list[dict]] = {}
    with open(export / "lost-records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            exported.setdefault(d["cluster"], []).append(d)
    table = pq.read_table(export / "lost-records.parquet").to_pylist()
    return ConsequencesAudit(result, truths, exported, table)
