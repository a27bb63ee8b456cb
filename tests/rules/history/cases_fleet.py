"""Cases of ``auditor/rules/history/fleet.py`` (KA809-KA813): brokers reformatted into another cluster,
log dirs reformatted, brokers no longer captured, malformed checkpoints and refused archive entries."""

from __future__ import annotations

from dataclasses import replace

from tests.rules.harness import fire, silent
from tests.rules.history.builders import Capture, Story, part, steady


def reformatted_log_dir() -> list[Capture]:
    """Broker 2's only log dir was formatted again between the second and third capture (a new
    directory.id, KA810's) with no clean shutdown captured and no start time recorded: the replica it holds
    afterwards is a new one, still fetching from scratch (HW, recovery point, cache all lower)."""
    caps = steady(days=2)
    caps += [part(b, 2, 3000, rp=3000) for b in (1, 3)]
    caps += [part(2, 2, 1200, [(0, 0)], rp=900, directory_id="new-disk")]
    return caps


@fire("KA810")
@silent("KA801", "KA802", "KA803", "KA805")
def reformatted_log_dir_refetching(tmp, mp) -> Story:
    return Story(reformatted_log_dir())


@fire("KA809")
@silent("KA810", "KA811")
def broker_reformatted_into_another_cluster(tmp, mp) -> Story:
    caps = steady(days=2)
    caps += [part(b, 2, 3000) for b in (1, 2)]
    caps += [Capture(3, 2, cluster_id="other", directory_id="fresh")]
    return Story(caps)


@silent("KA809")
def two_clusters_side_by_side(tmp, mp) -> Story:
    """Two clusters whose brokers share ids and log dir paths, captured the same nights."""
    caps = steady(days=3)
    caps += [replace(c, cluster="d", cluster_id="d") for c in steady(days=3)]
    return Story(caps)


@fire("KA810")
def log_dir_reformatted(tmp, mp) -> Story:
    caps = steady(days=2)
    caps += [part(b, 2, 3000, directory_id="new-disk" if b == 2 else None) for b in (1, 2, 3)]
    return Story(caps)


@fire("KA811")
def broker_stopped_being_captured(tmp, mp) -> Story:
    caps = [c for c in steady(days=4) if c.broker != 3 or c.day < 2]
    return Story(caps)


@silent("KA811")
def broker_captured_a_little_later(tmp, mp) -> Story:
    """Broker 3's nightly capture ran two hours after the others (within the 12 h default)."""
    caps = [c for c in steady(days=3) if c.broker != 3] + [
        part(3, d + 1 / 12, 1000 * (d + 1)) for d in range(3)
    ]
    return Story(caps)


@fire("KA812")
def malformed_checkpoint(tmp, mp) -> Story:
    problem = {
        "kind": "malformed",
        "source": "/dumps",
        "file": "broker-1/replication-offset-checkpoint",
        "line": 4,
        "offset": 18,
        "message": "Malformed line in checkpoint file: 'ule 0'",
    }
    return Story(steady(days=1), problems=[problem])


@fire("KA813")
@silent("KA812")
def refused_archive_entry(tmp, mp) -> Story:
    problem = {
        "kind": "refused",
        "source": "/dumps/broker-1.tgz",
        "file": "broker-1.tgz!../etc/passwd",
        "message": "refused: a '..' component",
    }
    return Story(steady(days=1), problems=[problem])


@silent("KA813")
def malformed_is_not_refused(tmp, mp) -> Story:
    return malformed_checkpoint(tmp, mp)


@fire("KA809")
def jbod_broker_reformatted(tmp, mp) -> Story:
    """Both log dirs of broker 3 carry the new cluster.id: one finding for the broker (checked in
    tests/rules/test_history.py)."""
    caps = [replace(c, log_dir=d) for c in steady(days=2) for d in ("/d1", "/d2")]
    caps += [Capture(3, 2, cluster_id="other", log_dir=d, directory_id=f"n{d}") for d in ("/d1", "/d2")]
    return Story(caps)
