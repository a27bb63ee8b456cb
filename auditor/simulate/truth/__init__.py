"""``ground-truth.json``: what really happened in a simulation and what an auditor must find on disk.

:func:`ground_truth` assembles the document from the partitions (:mod:`.partition`), the consumer groups
(:mod:`.groups`), the transaction coordinator (:mod:`.transactions`), the faults in the files (:mod:`.faults`)
and the replicas by Kafka's identity (:mod:`auditor.simulate.identity`). Its fields and their definitions:
``docs/simulator.md`` ("The ground truth").
"""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.config import SimOptions
from auditor.simulate.identity import identity_codes, identity_truth
from auditor.simulate.truth.faults import collect_faults
from auditor.simulate.truth.groups import groups_truth
from auditor.simulate.truth.partition import partition_truth
from auditor.simulate.truth.transactions import transactions_truth
from auditor.simulate.writer import broker_dir_name

GROUND_TRUTH_VERSION = 2


def expected_codes(partitions: list[dict], groups: list[dict]) -> list[str]:
    """The consequence codes (KA710-KA723) this run's files must produce."""
    codes: set[str] = set()
    for p in partitions:
        ef = p["expected_findings"]
        if ef["truncation_loss"]:
            codes.add("KA710")
        if ef["lost_markers"]:
            codes.add("KA712")
        for h in p["hanging_transactions"]:
            codes.update(h["expected_codes"])
    for g in groups:
        for tp in g["partitions"]:
            codes.update(c["code"] for c in tp["consequences"] if c["code"])
    return sorted(codes)


def controller_entry(opts: SimOptions) -> dict | None:
    """The KRaft controller's id and directory (None without KRaft)."""
    return {"id": opts.controller_id, "dir": f"controller-{opts.controller_id}"} if opts.kraft else None


def topic_entries(cluster: Cluster, compression: int | None = None) -> list[dict]:
    """The ``topics`` of the ground truth; ``compression`` overrides every topic's codec (the ``--scale``
    path writes uncompressed batches)."""
    return [
        {
            "name": t.name,
            "topic_id": t.topic_id,
            "partitions": t.partitions,
            "producer": t.kind,
            "unclean_leader_election": t.unclean,
            "min_insync_replicas": t.min_insync,
            "compression": t.compression if compression is None else compression,
        }
        for t in cluster.topics.values()
    ]


def ground_truth(cluster: Cluster, *, scenario: str, description: str, options: dict) -> dict:
    """The ground truth of ``cluster`` at the end of scenario ``scenario`` run with ``options``."""
    opts = cluster.options
    brokers = []
    for b, br in sorted(cluster.brokers.items()):
        state = "running" if br.alive else ("shutdown" if br.clean_marker else "crashed")
        brokers.append(
            {
                "id": b,
                "dir": broker_dir_name(b),
                "state": state,
                "crash_kind": br.crash_kind if state == "crashed" else None,
                "clean_shutdown": br.clean_marker,
                "fenced": b in cluster.fenced,
            }
        )
    partitions = [partition_truth(cluster, tp) for tp in cluster.partitions]
    groups = groups_truth(cluster)
    identity = identity_truth(cluster)
    return {
        "version": GROUND_TRUTH_VERSION,
        "generator": "kafka-auditor simulate",
        "scenario": scenario,
        "description": description,
        "truncation_mode": cluster.truncation,
        "options": options,
        "cluster_id": cluster.cluster_id,
        "controller": controller_entry(opts),
        "brokers": brokers,
        "topics": topic_entries(cluster),
        "partitions": partitions,
        "groups": groups,
        "transactions": transactions_truth(cluster),
        "expected_codes": sorted({*expected_codes(partitions, groups), *identity_codes(identity)}),
        "faults": collect_faults(cluster),
        "events": cluster.events,
        **identity,
    }
