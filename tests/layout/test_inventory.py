"""Inventory: every entry of a log dir is classified (nothing silently ignored), and discovery of log dirs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor.layout.discover import discover
from auditor.layout.filetypes import is_log_dir
from auditor.layout.inventory import inventory, inventory_partition, list_segments, unindexed_segments
from auditor.layout.logdir import META_PROPERTIES_LIMIT, read_log_dir
from auditor.layout.tasks import PartitionTask
from tests.conftest import corpus_path
from tests.rules.builder import CLUSTER_ID, standard

NO_BROKER = "cannot tell which broker this log dir belongs to"

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
    assert is_log_dir(tree)
    found = discover([tmp_path])  # the parent: its children that are log dirs
    assert found.log_dirs == [str(tree)] and not found.problems
    assert discover([tree, tree]).log_dirs == [str(tree)]
    (problem,) = discover([tmp_path / "missing"]).problems
    assert problem == f"{tmp_path / 'missing'}: no such file or directory"
    (problem,) = discover([tree / "orders-0"]).problems
    assert problem.endswith("this is a partition directory; give the log directory that holds it")
    empty = tmp_path / "empty"
    empty.mkdir()
    (problem,) = discover([empty]).problems
    assert problem.startswith(f"{empty}: no Kafka log directory found")


@pytest.mark.corpus
def test_corpus_inventory_knows_every_file():
    root = corpus_path()
    logdirs = [d for d in [*root.glob("*/*-*"), *root.glob("*/*/*-*")] if is_log_dir(d)]
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
    from tests.rules.cases_inventory import make_socket

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


@pytest.fixture
def evidence(tmp_path: Path) -> Path:
    """Log dirs at depths 1 to 3 below ``evidence``, one in a folder named ``dumps``, one hidden, one that
    lost its root files, and folders that are not log dirs (kafka-dump-log text output, broker logs)."""
    root = tmp_path / "evidence"
    for i, where in enumerate(("broker-1", "moment/broker-2", "dumps", ".hidden-broker", "a/b/too-deep"), 1):
        standard(root / where, node_id=i, dir_salt=where)[0].write()
    bare = root / "moment" / "bare"  # a log dir without meta.properties or checkpoints: its partition says so
    _touch(bare / "orders-0" / "00000000000000000000.log")
    _touch(root / "moment" / "dumps" / "broker-1" / "orders.print-data-log.txt.gz", b"\x1f\x8b")
    _touch(root / "_run" / "broker-logs" / "server.log", b"INFO started")
    return root


def test_discovery_recognises_log_dirs_by_kafka_markers_not_names(evidence):
    found = discover([evidence])
    assert found.problems == []
    assert found.log_dirs == [
        str(evidence / ".hidden-broker"),
        str(evidence / "broker-1"),
        str(evidence / "dumps"),
        str(evidence / "moment" / "bare"),
        str(evidence / "moment" / "broker-2"),
    ]  # a/b/too-deep is three levels down
    assert str(evidence / "a" / "b" / "too-deep") in discover([evidence], depth=3).log_dirs
    (problem,) = discover([evidence / "moment" / "dumps"]).problems
    assert problem == (
        f"{evidence}/moment/dumps: no Kafka log directory found (no meta.properties, offset checkpoint or "
        "partition directory in it or in the directories up to 2 levels below)"
    )
    assert not is_log_dir(evidence / "_run") and not is_log_dir(evidence / "moment" / "dumps" / "broker-1")


def test_scan_extract_and_audit_find_the_same_log_dirs(evidence, tmp_path):
    """``scan`` and ``audit`` walk with one function; ``extract`` accepts exactly what they find. Pure Python:
    the audit's discovery runs on the driver before Spark starts."""
    from auditor.scan import scan
    from auditor.spark.inputs import discover as audit_discover

    roots = [evidence, evidence / "dumps"]  # a root inside another is one input
    scanned = [row["logDir"] for row in scan(roots, jobs=1).logdirs]
    audited = audit_discover(roots)
    assert audited.problems == [] and not audited.parquet
    assert scanned == [s.path for s in audited.raw] == discover(roots).log_dirs
    assert len(scanned) == 5 and all(is_log_dir(path) for path in scanned)


def test_discovery_follows_links_once_and_reports_unreadable_folders(evidence):
    (evidence / "loop").symlink_to(evidence, target_is_directory=True)
    (evidence / "again").symlink_to(evidence / "broker-1", target_is_directory=True)
    found = discover([evidence, evidence / "again"])
    assert found.problems == [] and len(found.log_dirs) == 5
    # the name met first in the walk (sorted by name), never the loop's evidence/loop/broker-1
    assert str(evidence / "again") in found.log_dirs and str(evidence / "broker-1") not in found.log_dirs
    if os.geteuid() == 0:
        return  # root reads any directory
    locked = evidence / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        found = discover([evidence])
    finally:
        locked.chmod(0o755)
    assert found.skipped == [f"{locked}: cannot read: Permission denied"] and len(found.log_dirs) == 5


def _unlistable(monkeypatch, name: str) -> None:
    """Make ``os.scandir`` of a folder called ``name`` fail as for a root-only folder (tests run as root)."""
    import auditor.layout.discover as walk

    real = os.scandir

    def scandir(path):
        if os.path.basename(os.fspath(path)) == name:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(walk.os, "scandir", scandir)


def test_an_unreadable_folder_beside_log_dirs_is_skipped_with_a_warning(evidence, monkeypatch, tmp_path):
    """A root-only ``lost+found`` beside the log dirs of a mounted disk: both commands go on with the log
    dirs found and warn about the folder; a root whose only folder is unreadable is a problem (exit 2)."""
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.spark.inputs import discover as audit_discover

    (evidence / "lost+found").mkdir()
    _unlistable(monkeypatch, "lost+found")
    line = f"{evidence}/lost+found: cannot read: Permission denied"
    found = discover([evidence])
    assert (found.problems, found.skipped, len(found.log_dirs)) == ([], [line], 5)
    assert audit_discover([evidence]).skipped == [line]
    result = CliRunner().invoke(app, ["scan", str(evidence), "--format", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    assert f"kafka-auditor: warning: {line} (skipped: a log dir inside it is not scanned)" in result.stderr
    only = tmp_path / "only"
    (only / "lost+found").mkdir(parents=True)
    unreadable, nothing = discover([only]).problems
    assert unreadable == f"{only}/lost+found: cannot read: Permission denied"
    assert nothing.startswith(f"{only}: no Kafka log directory found")


@pytest.mark.parametrize(("padding", "node"), [(0, 1), (META_PROPERTIES_LIMIT, None)])
def test_every_command_reads_meta_properties_alike(tmp_path, padding, node):
    """scan, the root-file reader of extract and audit, and audit's pre-check read ``meta.properties`` with
    one reader and one size limit: a node.id past the limit is unseen by all three, or seen by all three."""
    from auditor.scan import prepare_logdir
    from auditor.spark.inputs import check_inputs
    from auditor.spark.inputs import discover as audit_discover

    ld, _ = standard(tmp_path / "broker-1")
    ld.meta_override = b"#" * padding + f"\nversion=1\nnode.id=1\ncluster.id={CLUSTER_ID}\n".encode()
    root = ld.write()
    scanned = prepare_logdir(str(root)).meta_value
    assert (scanned.node_id if scanned else None) == node
    assert read_log_dir(root).node == node
    problems = check_inputs(audit_discover([root]))
    assert problems == ([] if node else [f"{root}/meta.properties: no node.id or broker.id: {NO_BROKER}"])


def test_scan_runs_the_partition_task_audit_ships_as_json(tree):
    """One PartitionTask type: a scan task survives the JSON round trip Spark's tasks take, and the scan
    worker gives the same findings and summary from the copy."""
    from auditor.rules.registry import REGISTRY, load_rules
    from auditor.scan import SCAN_SCOPES, partition_task, prepare_logdir, scan_partition

    load_rules()
    codes = frozenset(c for c, r in REGISTRY.items() if r.scope in SCAN_SCOPES)
    ld = prepare_logdir(str(tree))
    for part in ld.inventory.partitions:
        task = partition_task(ld, part, None)
        copy = PartitionTask(**json.loads(json.dumps(task.to_dict())))
        assert copy == task and copy.path == part.path
        a, b = scan_partition(task, codes), scan_partition(copy, codes)
        assert (a.summary, a.findings) == (b.summary, b.findings)


def test_segments_without_their_offset_index_come_from_the_listing(tmp_path):
    """``LogSegment.sanityCheck`` looks for the 20-digit ``.index`` name (``File.exists``: any entry, a
    symbolic link by its target): the scan's inventory and the extraction's listing name the same segments,
    recovered at load."""
    part = tmp_path / "orders-0"
    part.mkdir()
    for base in (0, 15, 30, 45, 60, 75):
        (part / f"{base:020d}.log").write_bytes(b"")
    (part / f"{0:020d}.index").write_bytes(b"")
    (part / "15.index").write_bytes(b"")  # not the name Kafka opens
    (part / f"{30:020d}.index").mkdir()  # exists, whatever it is
    (part / f"{45:020d}.index.deleted").write_bytes(b"")
    (part / f"{60:020d}.index").symlink_to(tmp_path / "gone")  # File.exists follows the link: missing
    (tmp_path / "kept").write_bytes(b"")
    (part / f"{75:020d}.index").symlink_to(tmp_path / "kept")
    listing = list_segments(part)
    assert [b for b, _ in listing.logs] == [0, 15, 30, 45, 60, 75]
    assert listing.unindexed == {15, 45, 60} == inventory_partition(str(part)).unindexed
    assert unindexed_segments([0, 7], [f"{0:020d}.index"]) == {7}
