"""Cases of ``auditor/rules/replica/hw.py`` (KA701-KA704): high watermarks above the replica's own log end
offset, above the leader's, or below the log start offset."""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import fire, silent
from tests.rules.replica.builders import CACHES, KRAFT, Audit, one, replica


@fire("KA701")
def hw_above_own_leo(tmp: Path, mp) -> Audit:
    """Broker 2 checkpointed HW 300 but its log ends at 250 (lost unflushed tail)."""
    return one(replica(1, 300), replica(2, 250, 300), caches=CACHES)


@silent("KA701", "KA702")
def hw_above_an_unknown_leo(tmp: Path, mp) -> Audit:
    """The HW is above what could be read, but the last segment is unreadable: the LEO is unknown."""
    follower = replica(2, 250, 300, unreadable_from=250, unreadable_to=None, unreadable="d")
    return one(replica(1, 300), follower, replica(3, 300), caches=CACHES)


@fire("KA702", "KA704")
def follower_hw_above_the_leader(tmp: Path, mp) -> Audit:
    """The KRaft leader 1 ends at 250 (HW 250) while broker 2 checkpointed HW 300."""
    return one(replica(1, 250), replica(2, 300), replica(3, 250), caches=CACHES, metadata=KRAFT)


@silent("KA702", "KA704")
def follower_hw_trails_the_leader(tmp: Path, mp) -> Audit:
    """Followers learn the HW from the leader: theirs trails it."""
    return one(replica(1, 300), replica(2, 300, 280), replica(3, 300, 290), caches=CACHES, metadata=KRAFT)


@fire("KA703")
def hw_below_log_start(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, 50, log_start=100), caches=CACHES)


@silent("KA703")
def hw_at_log_start(tmp: Path, mp) -> Audit:
    """An empty log whose HW equals its log start offset."""
    return one(replica(1, 300, 300, log_start=300), replica(2, 300, 300, log_start=300))
