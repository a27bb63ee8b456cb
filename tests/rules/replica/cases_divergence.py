"""Cases of ``auditor/rules/replica/divergence.py`` (KA601-KA604): replicas that diverge (committed or
uncommitted), leader-epoch caches that hide a divergence or disagree on an epoch's start, and epochs the
leader never had."""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import fire, silent
from tests.rules.replica.builders import CACHES, KRAFT, Audit, div, in_sync, one, replica


def epoch_range(epoch: int, first: int, last: int) -> dict:
    return {
        "epoch": epoch,
        "first": first,
        "last": last,
        "records": last - first + 1,
        "bytes": 10,
        "batches": 1,
    }


@fire("KA601")
def committed_divergence(tmp: Path, mp) -> Audit:
    """Broker 3 differs from offset 200, below both high watermarks (300)."""
    return one(*in_sync(), caches=CACHES, divergences=[div(1, 3, 200)])


@fire("KA601")
def uncommitted_divergence(tmp: Path, mp) -> Audit:
    """Broker 2's tail differs above both high watermarks (a warning)."""
    return one(replica(1, 300, 250), replica(2, 300, 250), divergences=[div(1, 2, 280)])


@silent("KA601", "KA602", "KA603", "KA604", "KA690", "KA691", "KA701", "KA702", "KA703", "KA704", "KA711")
def replicas_in_sync(tmp: Path, mp) -> Audit:
    """Identical caught-up replicas with the same cache and epoch ranges."""
    ranges = {b: [epoch_range(0, 0, 299)] for b in (1, 2, 3)}
    return one(*in_sync(), caches=CACHES, ranges=ranges, metadata=KRAFT)


@silent("KA601", "KA602")
def follower_behind(tmp: Path, mp) -> Audit:
    """A follower whose log is a shorter prefix of the leader's: lag, not divergence."""
    return one(replica(1, 300), replica(2, 250), caches=CACHES)


@fire("KA602")
def cache_hides_the_divergence(tmp: Path, mp) -> Audit:
    """Identical caches, but the logs differ at 120: Kafka's truncation (at the LEO, 200) keeps divergent
    data."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 0, 0), (1, 1, 100)]}
    return one(
        replica(1, 200, 200, 1), replica(2, 200, 150, 1), caches=caches, divergences=[div(1, 2, 120, 200)]
    )


@silent("KA602")
def cache_describes_the_divergence(tmp: Path, mp) -> Audit:
    """Leader epoch 2 starts at 120 on the leader while the follower wrote epoch 1 there:
    OffsetsForLeaderEpoch truncates the follower exactly at the divergence (KIP-279)."""
    caches = {1: [(0, 0, 0), (1, 2, 120)], 2: [(0, 0, 0), (1, 1, 120)]}
    leader, follower = replica(1, 200, 150, 2), replica(2, 180, 150, 1)
    return one(leader, follower, caches=caches, divergences=[div(1, 2, 120, 180)])


@fire("KA603")
def epoch_starts_disagree(tmp: Path, mp) -> Audit:
    """Epoch 1 starts at 100 on brokers 1 and 3, at 110 on broker 2."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 0, 0), (1, 1, 110)], 3: [(0, 0, 0), (1, 1, 100)]}
    return one(*[replica(b, 300, latest_epoch=1) for b in (1, 2, 3)], caches=caches)


@silent("KA603")
def epoch_start_moved_to_log_start(tmp: Path, mp) -> Audit:
    """Broker 2's log starts at 150 (retention): Kafka moved its epoch-1 entry up to the log start; an entry
    at the log end offset is benign too."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 1, 150), (1, 2, 300)], 3: [(0, 0, 0), (1, 1, 100)]}
    replicas = [replica(1, 300, latest_epoch=1), replica(2, 300, latest_epoch=2, log_start=150)]
    return one(*replicas, replica(3, 300, latest_epoch=1), caches=caches)


@fire("KA604")
def follower_holds_an_epoch_the_leader_never_had(tmp: Path, mp) -> Audit:
    """Broker 2 wrote epoch 1 records at 250..299 as a zombie leader; the leader went from epoch 0 to 2."""
    caches = {1: [(0, 0, 0), (1, 2, 250)], 2: [(0, 0, 0), (1, 1, 250)]}
    ranges = {
        1: [epoch_range(0, 0, 249), epoch_range(2, 250, 299)],
        2: [epoch_range(0, 0, 249), epoch_range(1, 250, 299)],
    }
    return one(replica(1, 300, 250, 2), replica(2, 300, 250, 1), caches=caches, ranges=ranges)


@silent("KA604")
def unknown_epoch_below_the_leader_log_start(tmp: Path, mp) -> Audit:
    """The follower's epoch-1 batches lie below the leader's log start (deleted there by retention), and
    those the leader could not read are unknown, not missing."""
    caches = {1: [(0, 2, 400)], 2: [(0, 0, 0), (1, 1, 100)]}
    leader = replica(1, 600, 600, 2, log_start=400, unreadable_from=500, unreadable_to=550, unreadable="d")
    ranges = {1: [epoch_range(2, 400, 599)], 2: [epoch_range(1, 100, 399), epoch_range(3, 500, 549)]}
    return one(leader, replica(2, 550, 550, 1), caches=caches, ranges=ranges)
