"""Fire/silent cases of the cross-replica checks (KA6xx/KA7xx) that need whole clusters: each case writes a
small cluster of log directories (no KRaft metadata: the leader is inferred) and says which codes must fire
on which broker and which must stay silent. ``tests/rules/test_replica.py`` audits every case in ONE
Spark run (one cluster label per case) and checks each case's slice of the findings.

Segments are written as Kafka does (one ``.log`` per segment, named by its base offset, clean shutdown,
checkpoints at the log end offset); the hostile variants replace a segment by a directory or a FIFO, or cut
a segment that is not the last in the middle of a batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, segment_file_name
from parsers.record_batch import RecordSpec, build_batch

CLUSTER_ID = "cmVwbGljYS1jYXNlcw"
T0 = 1_700_000_000_000
TOPIC = "t"


def batch(lo: int, hi: int, epoch: int = 0, ts: int = T0, tag: bytes = b"") -> bytes:
    """One batch of records ``lo..hi-1`` (key ``k<o>``, value ``v<o><tag>``, timestamps ``ts + o`` ms)."""
    specs = [RecordSpec(b"k%d" % o, b"v%d" % o + tag, ts + o, offset_delta=o - lo) for o in range(lo, hi)]
    return build_batch(specs, base_offset=lo, partition_leader_epoch=epoch)


def segments(*bounds: int, **kw) -> list[list[bytes]]:
    """Segments of 5-record batches: ``segments(0, 10, 20, 30)`` -> [0, 10), [10, 20), [20, 30)."""
    spans = zip(bounds[:-1], bounds[1:], strict=True)
    return [[batch(o, min(o + 5, b), **kw) for o in range(a, b, 5)] for a, b in spans]


@dataclass
class Replica:
    segs: list[list[bytes]]
    hw: int
    epochs: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])


def write_replica(root: Path, node: int, rep: Replica) -> Path:
    root.mkdir(parents=True)
    (root / "meta.properties").write_bytes(format_meta_properties(1, node, CLUSTER_ID))
    part = root / f"{TOPIC}-0"
    part.mkdir()
    for seg in rep.segs:
        base = int.from_bytes(seg[0][0:8], "big")
        (part / segment_file_name(base, ".log")).write_bytes(b"".join(seg))
    (part / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint(rep.epochs))
    ckpt = format_offset_checkpoint([(TOPIC, 0, rep.hw)])
    (root / "replication-offset-checkpoint").write_bytes(ckpt)
    (root / "recovery-point-offset-checkpoint").write_bytes(ckpt)
    (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return root


def unreadable(root: Path, base: int, kind: str = "dir") -> None:
    """Replace the segment at ``base`` of ``root``'s partition by a directory or a FIFO."""
    path = root / f"{TOPIC}-0" / segment_file_name(base, ".log")
    path.unlink()
    if kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(path)


@dataclass
class Case:
    name: str
    build: Callable[[Path], None]
    fire: dict[str, set[int]]  # code -> brokers it must fire on
    silent: set[str]  # codes that must not fire at all


CASES: list[Case] = []


def case(fire: dict[str, set[int]], silent: set[str]):
    def wrap(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        CASES.append(Case(fn.__name__.replace("_", "-"), fn, fire, silent))
        return fn

    return wrap


LOSS = {"KA601", "KA602", "KA604", "KA701", "KA702", "KA704", "KA710", "KA711"}


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


CODES = ("KA630", "KA691")
"""The codes whose fire and silent cases live here (the harness checks every listed code of every case)."""
