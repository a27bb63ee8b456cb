"""A small hand-written 3-broker cluster (no KRaft metadata) for cases the simulator does not produce:

* ``cmp-0`` is compacted: broker 1 cleaned below offset 10 (it keeps only the latest record of each key
  there), broker 2 never cleaned, broker 3 holds a different record at offset 12;
* ``plain-0``: broker 3's batch at offset 5 carries partitionLeaderEpoch 1 where the others have 0 (same
  CRC: the CRC does not cover the epoch), and its leader-epoch cache does not know epoch 1.
"""

from __future__ import annotations

from pathlib import Path

from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties
from parsers.record_batch import RecordSpec, build_batch

CLUSTER_ID = "aGFuZG1hZGUtY2x1c3Rlcg"
T0 = 1_700_000_000_000
Record = tuple[int, bytes, bytes]  # offset, key, value


def batch(records: list[Record], epoch: int = 0) -> bytes:
    base = records[0][0]
    specs = [RecordSpec(k, v, T0 + o, offset_delta=o - base) for o, k, v in records]
    return build_batch(specs, base_offset=base, partition_leader_epoch=epoch)


def full_log(lo: int, hi: int, changed: dict[int, bytes] | None = None) -> list[Record]:
    return [(o, b"k%d" % (o % 4), (changed or {}).get(o, b"v%d" % o)) for o in range(lo, hi)]


def write_broker(root: Path, node: int, parts: dict[tuple[str, int], dict]) -> Path:
    root.mkdir(parents=True)
    (root / "meta.properties").write_bytes(format_meta_properties(1, node, CLUSTER_ID))
    ckpt: dict[str, list] = {"hw": [], "cleaner": []}
    for (topic, partition), spec in parts.items():
        d = root / f"{topic}-{partition}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(b"".join(spec["batches"]))
        (d / "leader-epoch-checkpoint").write_bytes(
            format_leader_epoch_checkpoint(spec.get("epochs", [(0, 0)]))
        )
        ckpt["hw"].append((topic, partition, spec["hw"]))
        if spec.get("cleaner") is not None:
            ckpt["cleaner"].append((topic, partition, spec["cleaner"]))
    (root / "replication-offset-checkpoint").write_bytes(format_offset_checkpoint(ckpt["hw"]))
    (root / "recovery-point-offset-checkpoint").write_bytes(format_offset_checkpoint(ckpt["hw"]))
    (root / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
    (root / "cleaner-offset-checkpoint").write_bytes(format_offset_checkpoint(ckpt["cleaner"]))
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return root


def write_cluster(root: Path) -> Path:
    log = full_log(0, 16)
    cleaned = [r for r in log if r[0] >= 6]  # keys k0..k3: the latest of each below 10 is at 6..9
    plain = [batch(full_log(0, 5)), batch(full_log(5, 10)), batch(full_log(10, 15))]
    plain_3 = [batch(full_log(0, 5)), batch(full_log(5, 10), epoch=1), batch(full_log(10, 15))]
    cmp_2 = [batch(log[0:5]), batch(log[5:10]), batch(log[10:16])]
    brokers = {
        1: {
            ("cmp", 0): {"batches": [batch(cleaned[0:4]), batch(cleaned[4:])], "hw": 16, "cleaner": 10},
            ("plain", 0): {"batches": plain, "hw": 15},
        },
        2: {
            ("cmp", 0): {"batches": cmp_2, "hw": 16},
            ("plain", 0): {"batches": plain, "hw": 15},
        },
        3: {
            ("cmp", 0): {
                "batches": [batch(log[0:5]), batch(log[5:10]), batch(full_log(10, 16, {12: b"other"}))],
                "hw": 16,
            },
            ("plain", 0): {"batches": plain_3, "hw": 15},
        },
    }
    for node, parts in brokers.items():
        write_broker(root / f"broker-{node}", node, parts)
    return root
