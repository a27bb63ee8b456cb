"""Whole-cluster cases of the cross-replica checks: each ``@case`` writes a small cluster of log directories
(no KRaft metadata: the leader is inferred) and says which codes must fire on which broker and which must
stay silent. ``tests/rules/test_replica.py`` audits every case in ONE Spark run (one cluster label per case)
and checks each case's slice of the findings; the cases are in the case files of their rules
(``replica/cases_lag.py``, ``replica/cases_inputs.py``).

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


CODES = ("KA630", "KA691")
"""The codes the whole-cluster cases are about: each has a firing case in the case file of its rule module
and a silent one among all of them."""

LOSS = {"KA601", "KA602", "KA604", "KA701", "KA702", "KA704", "KA710", "KA711"}
