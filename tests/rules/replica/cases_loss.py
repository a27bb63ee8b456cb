"""Cases of ``auditor/rules/replica/loss.py`` (KA710-KA711): the lost runs of a truncating replica,
committed records (below the high watermark) against an uncommitted tail."""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import fire, silent
from tests.rules.replica.builders import CACHES, KRAFT, Audit, div, lost_run, one, replica


def _diverged(*runs: dict) -> Audit:
    """Broker 2 differs from 200 on; Spark found ``runs`` from that zone."""
    audit = one(
        replica(1, 300, 250),
        replica(2, 300, 300),
        caches=CACHES,
        metadata=KRAFT,
        divergences=[div(1, 2, 200)],
    )
    audit.lost_runs = list(runs)
    return audit


@fire("KA710")
def committed_records_lost(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 299, 300))


@silent("KA710")
def only_an_uncommitted_tail(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("uncommitted", 250, 299, 250))


@fire("KA711")
def uncommitted_tail(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 249, 250), lost_run("uncommitted", 250, 299, 250))


@silent("KA711")
def only_committed_records(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 299, 300))
