"""Cases of ``auditor/rules/checkpoint.py`` (KA301-KA314): malformed offset and leader-epoch checkpoints,
partition.metadata, meta.properties (missing, empty, naming no node) and quorum-state, and leader-epoch
caches that disagree with the log; a leader elected during shutdown (an epoch starting at the log end
offset) is benign for every scan rule."""

from __future__ import annotations

from pathlib import Path

from parsers.checkpoints import format_offset_checkpoint
from parsers.dirfiles import format_meta_properties
from tests.rules.benign import BASELINE_CODES
from tests.rules.builder import CLUSTER_ID, built, standard
from tests.rules.harness import fire, silent


@fire("KA301")
def checkpoint_count_mismatch(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(b"0\n2\norders 0 30\n")
    return [ld.root]


@fire("KA302")
def epoch_checkpoint_malformed(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0\n")
    return [ld.root]


@fire("KA302")
def epoch_checkpoint_negative(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").write_bytes(b"0\n1\n-1 0\n")
    return [ld.root]


@fire("KA303")
def partition_metadata_bad(tmp, mp):
    ld, p = built(tmp)
    (p.path / "partition.metadata").write_bytes(b"version: 0\ntopic_id: xyz")
    return [ld.root]


@fire("KA304")
def meta_properties_missing(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "meta.properties").unlink()
    return [ld.root]


@fire("KA305")
def quorum_state_bad(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "__cluster_metadata-0" / "quorum-state").write_bytes(b"not json")
    return [ld.root]


@fire("KA306")
def checkpoint_duplicates(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(format_offset_checkpoint([("orders", 0, 30)] * 2))
    return [ld.root]


@fire("KA307")
def checkpoint_orphan(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint").write_bytes(
        format_offset_checkpoint([("orders", 0, 30), ("gone", 0, 5)])
    )
    return [ld.root]


def _epochs(tmp: Path, cache: list[tuple[int, int]]) -> list[Path]:
    ld, p = standard(tmp / "broker-1")
    p.epoch_cache = cache
    ld.write()
    return [ld.root]


@fire("KA311")
def epoch_cache_disorder(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 24), (1, 26)])


@fire("KA312")
def epoch_beyond_leo(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 24), (3, 50)])


@silent(*[c for c in BASELINE_CODES if c not in ("KA505",)])
def epoch_trailing_at_leo(tmp, mp):
    """A leader elected during shutdown: its epoch starts at the log end offset, with no data (benign)."""
    return _epochs(tmp, [(0, 0), (2, 24), (3, 30)])


@fire("KA313")
def epoch_missing(tmp, mp):
    return _epochs(tmp, [(0, 0)])


@fire("KA313")
def epoch_file_missing(tmp, mp):
    ld, p = built(tmp)
    (p.path / "leader-epoch-checkpoint").unlink()
    return [ld.root]


@fire("KA314")
def epoch_start_wrong(tmp, mp):
    return _epochs(tmp, [(0, 0), (2, 21)])


@fire("KA314")
def epoch_without_batches(tmp, mp):
    return _epochs(tmp, [(0, 0), (1, 9), (2, 24)])


def _meta(tmp: Path, data: bytes) -> list[Path]:
    ld, _p = built(tmp)
    (ld.root / "meta.properties").write_bytes(data)
    return [ld.root]


@fire("KA304")
def meta_properties_empty(tmp, mp):
    return _meta(tmp, b"")


@fire("KA304")
def meta_properties_only_comments(tmp, mp):
    return _meta(tmp, b"#\n#Sat Nov 21 04:55:32 UTC 2026\n\n   \n! another comment\n")


@fire("KA304")
def meta_properties_v0_without_broker_id(tmp, mp):
    return _meta(tmp, b"version=0\ncluster.id=" + CLUSTER_ID.encode() + b"\n")


@silent("KA304")
def meta_properties_v0_zookeeper(tmp, mp):
    """A ZooKeeper-era file: version 0 with broker.id and cluster.id (no directory.id) is valid."""
    return _meta(tmp, format_meta_properties(0, 1, CLUSTER_ID))
