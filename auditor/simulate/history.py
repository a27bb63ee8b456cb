"""``kafka-auditor simulate history``: a month of nightly checkpoint captures of a KRaft cluster, with
injected regressions and the findings ``kafka-auditor report --warehouse`` must give (ground truth).

The cluster (:mod:`auditor.simulate.history_model`) has ``--brokers`` brokers (even ids run two log dirs,
JBOD; ids not divisible by 3 have a collector that writes the ``kafka-auditor-capture.json`` manifest) and
``--topics`` topics of ``--partitions`` partitions, replication factor 3, replicas spread round robin. It
has been running for a while when the month starts (offsets in the millions, a few past leader epochs).
Every night at 02:00:00Z (from 2026-01-01) every broker's log dirs are captured. Between captures, producers
append, followers fetch, DeleteRecords (even-numbered topics) and retention (odd-numbered topics) move log
start offsets, leaders change cleanly now and then, brokers are restarted.

Injected events (each at a day, broker and partition chosen from the seed; all visible by the fourth-last
night, except the two at the end): an unclean leader election whose old leader rejoins (KA801, KA804,
KA805), a log start offset that goes back (KA802), a recovery point that goes back without a restart (KA803)
and one after a restart (silent), a follower stuck for three nights (KA806) and one behind for a single night
(silent), a partition reassigned from one broker to another (KA807, KA808), a log dir reformatted (KA810), a
topic deleted and recreated (KA814), a torn recovery-point checkpoint (KA812), a symlink in an archive
(KA813, archives only), a broker whose captures stop three nights before the end (KA811) and a broker whose
cluster.id changes on the last night (KA809). Nothing else may be reported.

Ground truth (``ground-truth.json``, version 1): the run's parameters, the captures, brokers, topics, the
events (silent ones included) and ``expected_findings``: {code, cluster, broker, topic, partition, time}
where ``time`` is the ISO-8601 time of the capture in which the finding becomes visible (the later capture of
a comparison; for KA806 the capture at which the lag has lasted ``lag_duration``; for KA811 the cluster's
first capture more than ``missing_after`` after the broker's last one) and ``broker``/``topic``/``partition``
are null where the finding has none (KA809-KA813 have no partition; KA813 has no broker either: the refused
member is outside every capture; KA814 is one finding per recreated topic, with neither).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from auditor.layout.captures import MANIFEST
from auditor.simulate.history_nights import Sim
from auditor.simulate.history_run import (
    GROUND_TRUTH_VERSION,
    HISTORY_DESCRIPTION,
    START_MS,
    HistoryOptions,
    HistoryRun,
    capture_ms,
)
from auditor.simulate.history_write import BrokerCapture, write_archive, write_folders
from auditor.text import iso_time as iso

__all__ = [
    "HISTORY_DESCRIPTION",
    "HistoryOptions",
    "HistoryRun",
    "MANIFEST",
    "START_MS",
    "simulate_history",
    "run_history",
]


# ------------------------------------------------------------------------------------------- entry points


def simulate_history(opts: HistoryOptions, out_dir: Path | None = None) -> HistoryRun:
    """Run the simulation; with ``out_dir``, write the captures there (``dumps/`` and/or ``archives/``) as the
    nights go (captures are then not kept in memory)."""
    opts.validate()

    def write(capture: BrokerCapture) -> None:
        assert out_dir is not None
        if opts.format in ("folders", "both"):
            write_folders(out_dir, capture)
        if opts.format in ("archives", "both"):
            write_archive(out_dir, capture)

    sim = Sim(opts, write if out_dir is not None else None)
    sim.run()
    sim.findings.sort(key=lambda f: (f.time_ms, f.code, f.broker or 0, f.topic or "", f.partition or 0))
    roles = {
        "unclean_old_leader": sim.unclean_broker,
        "clean_shutdown": sim.shutdown_broker,
        "reformatted": sim.reformat_broker,
        "missing": sim.missing_broker,
        "cluster_id_changed": sim.renamed_broker,
        "lag_follower": sim.lag_follower,
        "brief_lag_follower": sim.brief_follower,
    }
    return HistoryRun(
        opts,
        sim.model,
        sim.cluster_id,
        sim.new_cluster_id,
        sim.captures,
        sorted(sim.events, key=lambda e: (e.day, e.kind)),
        sim.findings,
        roles,
        sim.states,
        sim.topic_ids,
        sim.broker_days,
    )


def ground_truth(run: HistoryRun) -> dict:
    """The ``ground-truth.json`` of ``run`` (see the module docstring)."""
    opts, model = run.options, run.model
    expected = [f.as_json() for f in run.findings]
    codes = sorted({f.code for f in run.findings})
    return {
        "version": GROUND_TRUTH_VERSION,
        "generator": "kafka-auditor simulate",
        "scenario": "history",
        "description": HISTORY_DESCRIPTION,
        "options": {
            k: v
            for k, v in asdict(opts).items()
            if k not in ("lag_records", "lag_duration_ms", "missing_after_ms")
        },
        "settings": {
            "lag_records": opts.lag_records,
            "lag_duration_ms": opts.lag_duration_ms,
            "missing_after_ms": opts.missing_after_ms,
        },
        "start": iso(START_MS),
        "captures": [iso(capture_ms(d)) for d in range(opts.days)],
        "cluster_id": run.cluster_id,
        "brokers": [
            {
                "id": b,
                "log_dirs": [
                    {"name": ld.name, "path": ld.path, "directory_id": ld.directory_id} for ld in br.log_dirs
                ],
                "manifest": br.manifest,
                "last_capture": iso(
                    capture_ms(opts.days - 4 if b == run.roles["missing"] else opts.days - 1)
                ),
            }
            for b, br in sorted(model.brokers.items())
        ],
        "topics": [
            {
                "name": t,
                "topic_ids": ids,
                "partitions": opts.partitions,
                "log_start": "delete-records" if i % 2 == 0 else "retention",
            }
            for i, (t, ids) in enumerate(run.topic_ids.items())
        ],
        "roles": run.roles,
        "events": [e.as_json() for e in run.events],
        "expected_codes": codes,
        "expected_findings": expected,
        "summary": {
            "nights": opts.days,
            "dumps": sum(
                len(br.log_dirs) * (opts.days - (3 if b == run.roles["missing"] else 0))
                for b, br in model.brokers.items()
            ),
            "expected_findings": len(expected),
            "codes": codes,
        },
    }


def run_history(out_dir: Path | str, opts: HistoryOptions) -> dict:
    """Write the captures and ``ground-truth.json`` into ``out_dir`` (which must not exist or be empty) and
    return the ground truth."""
    out_dir = Path(out_dir)
    opts.validate()
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ValueError(f"output directory {out_dir} is not empty (choose a new or empty directory)")
    out_dir.mkdir(parents=True, exist_ok=True)
    truth = ground_truth(simulate_history(opts, out_dir))
    (out_dir / "ground-truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth
