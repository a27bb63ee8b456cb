"""Cases of ``auditor/rules/replica/lag.py`` (KA630): a follower behind the leader, typed inputs and whole
clusters (``@case``, audited on Spark by ``tests/rules/test_replica.py``), and shapes that are not lag (a
shorter follower that diverged, replicas in sync)."""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import fire, silent
from tests.rules.replica.builders import CACHES, KRAFT, Audit, div, one, replica
from tests.rules.replica.logdirs import LOSS, T0, Replica, batch, case, segments, write_replica


@fire("KA630")
def follower_lags(tmp: Path, mp) -> Audit:
    """Broker 2's log is a prefix of the leader's, 50 offsets shorter."""
    return one(replica(1, 300), replica(2, 250), replica(3, 300), caches=CACHES, metadata=KRAFT)


@silent("KA630")
def shorter_follower_that_diverged(tmp: Path, mp) -> Audit:
    """Broker 2 is shorter but differs from 200: not lag (KA601), and a follower with an unknown log end
    offset (unreadable last segment) gets no lag either."""
    follower = replica(3, 200, unreadable_from=200, unreadable_to=None, unreadable="x.log: I/O error")
    return one(replica(1, 300), replica(2, 250), follower, caches=CACHES, divergences=[div(1, 2, 200, 250)])


@case(fire={"KA630": {2}}, silent=LOSS | {"KA691"})
def lagging_follower(root: Path) -> None:
    """Follower 2 holds a prefix of the leader's log (0..19 of 0..29), its HW at its own LEO."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20), 20))


@case(fire={"KA630": {2}}, silent=LOSS | {"KA691"})
def lagging_follower_for_minutes(root: Path) -> None:
    """As above, the leader's newest batch written 5 minutes after the first one the follower lacks: longer
    than replica.lag.time.max.ms (warning)."""
    later = [[batch(20, 25), batch(25, 30, ts=T0 + 300_000)]]
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20) + later, 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20), 20))


@case(fire={"KA601": {1}, "KA710": {2}}, silent={"KA630", "KA691"})
def divergent_follower_is_not_lag(root: Path) -> None:
    """Follower 2 is shorter but differs at offset 10: a divergence, not lag."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10) + segments(10, 20, tag=b"x"), 20))


@case(fire={}, silent=LOSS | {"KA630", "KA691"})
def in_sync(root: Path) -> None:
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
