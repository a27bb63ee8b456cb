"""Inventory: every entry of a log dir is classified (nothing silently ignored), and discovery of log dirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor.layout.inventory import discover, inventory, looks_like_logdir
from tests.conftest import corpus_path
from tests.rules.builder import standard

UID = "0123456789abcdef0123456789abcdef"


def _touch(path: Path, data: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    ld, p = standard(tmp_path / "broker-1")
    root = ld.write()
    part = p.path
    for name in (
        "00000000000000000000.log.deleted",
        "00000000000000000000.index.deleted",
        "00000000000000000015.log.cleaned",
        "00000000000000000015.log.swap",
        "00000000000000000007.snapshot.deleted",
        "00000000000000000099.index",
        "15.timeindex",
        "leader-epoch-checkpoint.tmp",
        "core.12345",
    ):
        _touch(part / name)
    (part / "subdir").mkdir()
    md = root / "__cluster_metadata-0"
    _touch(md / "00000000000000000005-0000000001.checkpoint")
    _touch(md / "00000000000000000009-0000000001-abc.checkpoint.part")
    _touch(md / "00000000000000000003-0000000001.checkpoint.deleted")
    for suffix in ("future", "delete", "stray"):
        _touch(root / f"my-topic.v2-3.{UID}-{suffix}" / "00000000000000000000.log")
    _touch(root / "replication-offset-checkpoint.tmp")
    _touch(root / ".lock")
    _touch(root / "bootstrap.checkpoint")
    _touch(root / "stray-file.txt")
    (root / "remote-log-index-cache").mkdir()
    (root / "not a partition").mkdir()
    (root / "lost+found").mkdir()
    return root


def test_every_entry_is_classified(tree):
    inv = inventory(tree)
    assert (
        inv.meta_properties and inv.clean_shutdown and inv.lock and inv.bootstrap and inv.remote_index_cache
    )
    assert set(inv.checkpoints) == {
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    }
    assert [f.name for f in inv.leftovers] == ["replication-offset-checkpoint.tmp"]
    assert [f.name for f in inv.unknown] == ["stray-file.txt"]
    assert sorted(info.name for info, _ in inv.invalid_dirs) == ["lost+found", "not a partition"]
    assert all("is not in the form of topic-partition" in msg for _, msg in inv.invalid_dirs)
    kinds = {(p.topic, p.partition, p.kind) for p in inv.partitions}
    assert kinds == {
        ("orders", 0, "live"),
        ("__cluster_metadata", 0, "metadata"),
        ("my-topic.v2", 3, "future"),
        ("my-topic.v2", 3, "delete"),
        ("my-topic.v2", 3, "stray"),
    }
    part = next(p for p in inv.partitions if p.kind == "live")
    assert [s.base_offset for s in part.log_segments] == [0, 15]
    assert {(f.name, f.state) for f in part.leftovers} == {
        ("00000000000000000000.log.deleted", "deleted"),
        ("00000000000000000000.index.deleted", "deleted"),
        ("00000000000000000015.log.cleaned", "cleaned"),
        ("00000000000000000015.log.swap", "swap"),
        ("00000000000000000007.snapshot.deleted", "deleted"),
        ("leader-epoch-checkpoint.tmp", "tmp"),
    }
    assert [f.name for f in part.orphan_indexes] == ["00000000000000000099.index"]
    assert {f.name for f in part.unknown} == {"core.12345", "subdir"}
    noncanonical = [f.name for f in part.files() if not f.canonical]
    assert noncanonical == ["15.timeindex"]
    assert part.segments[1].timeindex.name == "00000000000000000015.timeindex"  # the canonical name wins
    assert [f.name for f in part.duplicates] == ["15.timeindex"]
    md = inv.metadata_partition
    assert md is not None and md.quorum_state is not None
    assert [(f.base_offset, f.epoch) for f in md.kraft_snapshots] == [(5, 1)]
    assert {f.state for f in md.leftovers} == {"partial", "deleted"}
    # every regular file under the tree is accounted for exactly once
    on_disk = {str(p) for p in tree.rglob("*") if p.is_file()}
    listed = {f.path for f in inv.files() if not f.is_dir}
    assert on_disk == listed


def test_discovery(tree, tmp_path):
    assert looks_like_logdir(tree)
    found, problems = discover([tmp_path])  # the parent: its children that are log dirs
    assert found == [str(tree)] and not problems
    found, problems = discover([tree, tree])
    assert found == [str(tree)]
    _, problems = discover([tmp_path / "missing"])
    assert "no such file" in problems[0]
    _, problems = discover([tree / "orders-0"])
    assert "partition directory" in problems[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    _, problems = discover([empty])
    assert "not a Kafka log directory" in problems[0]


@pytest.mark.corpus
def test_corpus_inventory_knows_every_file():
    root = corpus_path()
    logdirs = [d for d in [*root.glob("*/*-*"), *root.glob("*/*/*-*")] if looks_like_logdir(d)]
    assert len(logdirs) == 13
    for logdir in logdirs:
        inv = inventory(logdir)
        assert not inv.unknown and not inv.invalid_dirs and not inv.unreadable, logdir
        for part in inv.partitions:
            assert not part.unknown and not part.orphan_indexes, (logdir, part.name)
            assert all(f.canonical for f in part.files())
        on_disk = {os.path.join(d, f) for d, _, files in os.walk(logdir) for f in files}
        assert on_disk == {f.path for f in inv.files()}, logdir


def test_special_files_are_set_apart_and_never_classified_as_data(tmp_path):
    """A FIFO, a socket and a link to a character device, named like a segment, a checkpoint and an index,
    land in ``special`` with their type; readers (segments, checkpoints) never see them."""
    from tests.rules.cases_files import make_socket

    ld, p = standard(tmp_path / "broker-1")
    root = ld.write()
    part_dir = p.path
    (part_dir / "00000000000000000015.log").unlink()
    os.mkfifo(part_dir / "00000000000000000015.log")
    (root / "replication-offset-checkpoint").unlink()
    make_socket(root / "replication-offset-checkpoint")
    (part_dir / "00000000000000000000.index").unlink()
    (part_dir / "00000000000000000000.index").symlink_to("/dev/zero")
    os.mkfifo(part_dir / "not-a-kafka-name")
    inv = inventory(root)
    assert [(f.name, f.kind, f.file_type) for f in inv.special] == [
        ("replication-offset-checkpoint", "offset-checkpoint", "a socket")
    ]
    assert "replication-offset-checkpoint" not in inv.checkpoints
    part = next(x for x in inv.partitions if x.topic == "orders")
    assert [(f.name, f.kind, f.file_type, f.link_target) for f in part.special] == [
        ("00000000000000000000.index", "offset-index", "a character device", "/dev/zero"),
        ("00000000000000000015.log", "log", "a FIFO (named pipe)", None),
        ("not-a-kafka-name", "unknown", "a FIFO (named pipe)", None),
    ]
    assert [s.base_offset for s in part.log_segments] == [0]
    assert part.segments[0].index is None and not part.unknown
    assert [f.name for f in part.orphan_indexes] == [
        "00000000000000000015.index",
        "00000000000000000015.timeindex",
    ]
    assert [(pd.name if pd else None, f.name) for pd, f in inv.special_files()] == [
        (None, "replication-offset-checkpoint"),
        *(("orders-0", f.name) for f in part.special),
    ]
    assert {f.path for f in inv.files()} >= {f.path for _, f in inv.special_files()}


def test_links_outside_the_log_dir(tmp_path):
    ld, p = standard(tmp_path / "real" / "broker-1")
    root = ld.write()
    part_dir = p.path
    inside = part_dir / "00000000000000000000.timeindex"
    inside.rename(root / "kept.timeindex")
    inside.symlink_to("../kept.timeindex")  # stays inside: not reported
    seg = part_dir / "00000000000000000015.log"
    seg.rename(tmp_path / "elsewhere.log")
    seg.symlink_to(tmp_path / "elsewhere.log")
    md = root / "__cluster_metadata-0"
    md.rename(tmp_path / "metadata-copy")
    md.symlink_to(tmp_path / "metadata-copy", target_is_directory=True)
    os.mkfifo(tmp_path / "pipe")
    (part_dir / "leader-epoch-checkpoint").unlink()
    (part_dir / "leader-epoch-checkpoint").symlink_to(tmp_path / "pipe")  # a special file: KA515, not here
    via_link = tmp_path / "evidence"
    via_link.symlink_to(root, target_is_directory=True)
    for given in (root, via_link):  # a log dir reached through a link changes nothing
        inv = inventory(given)
        found = sorted((entry.name, target) for _part, entry, target in inv.links_outside())
        assert found == [
            ("00000000000000000015.log", str(tmp_path / "elsewhere.log")),
            ("__cluster_metadata-0", str(tmp_path / "metadata-copy")),
        ], given
