"""Cases of ``auditor/rules/replica/inputs.py`` (KA690-KA691): replicas the audit could not read whole (an
unreadable leader-epoch checkpoint, a segment that is a directory, a FIFO or cut short), typed inputs and
whole clusters (``@case``, audited on Spark by ``tests/rules/test_replica.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from parsers.dirfiles import segment_file_name
from tests.rules.harness import fire, silent
from tests.rules.replica.builders import CACHES, Audit, one, replica
from tests.rules.replica.logdirs import LOSS, TOPIC, Replica, case, segments, unreadable, write_replica


@fire("KA690")
def leader_epoch_checkpoint_unreadable(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, error="leader-epoch-checkpoint: not a regular file"))


@silent("KA690")
def replica_with_an_unreadable_segment(tmp: Path, mp) -> Audit:
    """An unreadable segment is KA691, not KA690."""
    return one(replica(1, 300), replica(2, 300, unreadable_from=100, unreadable_to=200, unreadable="d"))


@fire("KA691")
def last_segment_unreadable(tmp: Path, mp) -> Audit:
    follower = replica(2, 200, 300, unreadable_from=200, unreadable_to=None, unreadable="x.log: I/O error")
    return one(replica(1, 300), follower, caches=CACHES)


@fire("KA691")
def middle_segment_cut_short(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, unreadable_from=100, unreadable_to=200, unreadable="torn"))


@silent("KA691")
def replica_with_an_unreadable_checkpoint(tmp: Path, mp) -> Audit:
    """A replica with an unreadable checkpoint but every segment read (KA690)."""
    return one(replica(1, 300), replica(2, 300, error="partition.metadata: permission denied"))


@case(fire={"KA691": {2}}, silent=LOSS | {"KA630"})
def follower_middle_segment_is_a_directory(root: Path) -> None:
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root / "b2", 10)


@case(fire={"KA691": {1}}, silent=LOSS | {"KA630"})
def leader_middle_segment_is_a_fifo(root: Path) -> None:
    """The follower's batches 10..19 are not lost: the leader's copy there could not be read."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root / "b1", 10, "fifo")


@case(fire={"KA691": {2}}, silent=LOSS | {"KA630"})
def follower_last_segment_unreadable(root: Path) -> None:
    """Its LEO is unknown (at least 20): no KA701 for its HW 30, no lag."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root / "b2", 20)


@case(fire={"KA691": {1}}, silent=LOSS | {"KA630"})
def leader_last_segment_unreadable(root: Path) -> None:
    """The leader (latest epoch 1) has an unknown LEO: no KA702/KA710/KA711 for follower 2's 20..29."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30, [(0, 0), (1, 30)]))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
    unreadable(root / "b1", 20)


@case(fire={"KA691": {2}, "KA710": {2}, "KA601": {1}}, silent={"KA630", "KA701", "KA702", "KA711"})
def hole_does_not_hide_a_later_divergence(root: Path) -> None:
    """Follower 2 (old leader, HW 30) lacks segment 10 and differs from the leader from offset 20 on: the
    divergence at 20 and the 10 committed records 20..29 are still found."""
    new = segments(20, 30, epoch=1)
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20) + new, 30, [(0, 0), (1, 20)]))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20) + segments(20, 30, tag=b"old"), 30))
    unreadable(root / "b2", 10)


@case(fire={"KA691": {2}}, silent=LOSS | {"KA630"})
def follower_middle_segment_torn(root: Path) -> None:
    """Segment 10 of follower 2 ends inside its second batch: offsets 15..19 cannot be read."""
    write_replica(root / "b1", 1, Replica(segments(0, 10, 20, 30), 30))
    write_replica(root / "b2", 2, Replica(segments(0, 10, 20, 30), 30))
    seg = root / "b2" / f"{TOPIC}-0" / segment_file_name(10, ".log")
    os.truncate(seg, seg.stat().st_size - 7)
