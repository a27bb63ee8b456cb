"""Cases of ``auditor/rules/inventory.py`` (KA501-KA516): unknown files and directories, swap, cleaned and
deleted leftovers, orphan indexes, stray and pending-deletion partition directories, topic IDs against the
KRaft metadata, non-canonical names, JBOD duplicates, special files where Kafka keeps regular ones (KA515)
and symbolic links out of the log dir (KA516)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from parsers.dirfiles import segment_file_name
from tests.rules.benign import BASELINE_CODES
from tests.rules.builder import built, standard, topic_id
from tests.rules.harness import fire, silent


@fire("KA501")
def unknown_files(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "notes.txt").write_text("hi")
    (p.path / "00000000000000000000.log.bak").write_bytes(b"x")
    return [ld.root]


@fire("KA502")
def invalid_dir(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "lost+found").mkdir()
    return [ld.root]


@silent("KA502", "KA501")
def remote_index_cache(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "remote-log-index-cache").mkdir()
    (ld.root / ".lock").write_bytes(b"")
    return [ld.root]


def _leftover(tmp: Path, name: str) -> list[Path]:
    ld, p = built(tmp)
    shutil.copy(p.seg_path(1), p.path / name)
    return [ld.root]


@fire("KA503")
def swap(tmp, mp):
    return _leftover(tmp, segment_file_name(15, ".log") + ".swap")


@fire("KA504")
def cleaned(tmp, mp):
    return _leftover(tmp, segment_file_name(15, ".log") + ".cleaned")


@fire("KA505")
@silent(*[c for c in BASELINE_CODES if c != "KA505"])
def deleted_files(tmp, mp):
    """Segments renamed .deleted, waiting for file.delete.delay.ms (benign)."""
    return _leftover(tmp, segment_file_name(0, ".log") + ".deleted")


@fire("KA506")
def orphan_index(tmp, mp):
    ld, p = built(tmp)
    (p.path / segment_file_name(99, ".index")).write_bytes(b"")
    return [ld.root]


@fire("KA507")
def tmp_checkpoint(tmp, mp):
    ld, p = built(tmp)
    (ld.root / "replication-offset-checkpoint.tmp").write_bytes(b"0\n1\norders 0 31\n")
    (p.path / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n")
    return [ld.root]


def _moved(tmp: Path, suffix: str) -> list[Path]:
    ld, p = built(tmp)
    shutil.copytree(p.path, ld.root / f"orders-1.0123456789abcdef0123456789abcdef-{suffix}")
    return [ld.root]


@fire("KA508")
def stray(tmp, mp):
    return _moved(tmp, "stray")


@fire("KA509")
def pending_delete(tmp, mp):
    return _moved(tmp, "delete")


@fire("KA510")
def topic_id_mismatch(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    p.topic_id = topic_id("something-else")
    ld.write()
    return [ld.root]


@fire("KA511")
def topic_gone(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    ld.hidden_topics.add("orders")
    ld.extra_topics["other"] = topic_id("other")
    ld.write()
    return [ld.root]


@fire("KA512")
def no_partition_metadata(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    p.topic_id = None
    ld.write()
    return [ld.root]


@fire("KA513")
def short_name(tmp, mp):
    ld, p = built(tmp)
    os.rename(p.seg_path(1), p.path / "15.log")
    return [ld.root]


@fire("KA514")
def jbod_duplicate(tmp, mp):
    a, _ = standard(tmp / "disk-a", dir_salt="a")
    a.write()
    b, _ = standard(tmp / "disk-b", dir_salt="b", metadata=False)
    b.write()
    return [a.root, b.root]


@silent("KA514")
def two_copies_of_one_dir(tmp, mp):
    """Evidence copies of the same log dir (same directory.id) taken at two moments."""
    a, _ = standard(tmp / "before" / "broker-1")
    a.write()
    shutil.copytree(a.root, tmp / "after" / "broker-1")
    return [a.root, tmp / "after" / "broker-1"]


def make_socket(path: Path) -> None:
    """A UNIX socket file at ``path`` (bound from its directory: socket paths are limited to ~108 bytes)."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(cwd)


def _replace(path: Path, make) -> None:
    path.unlink()
    make(path)


@fire("KA515")
def fifo_segment(tmp, mp):
    ld, p = built(tmp)
    _replace(p.seg_path(1), os.mkfifo)
    return [ld.root]


@fire("KA515")
def fifo_meta_properties(tmp, mp):
    ld, _p = built(tmp)
    _replace(ld.root / "meta.properties", os.mkfifo)
    return [ld.root]


@fire("KA515")
def socket_checkpoint(tmp, mp):
    ld, _p = built(tmp)
    _replace(ld.root / "replication-offset-checkpoint", make_socket)
    return [ld.root]


@fire("KA515")
def dev_zero_index(tmp, mp):
    """A symbolic link to /dev/zero (a character device: an endless read) named like an offset index."""
    ld, p = built(tmp)
    _replace(p.seg_path(0, ".index"), lambda path: path.symlink_to("/dev/zero"))
    return [ld.root]


@fire("KA515")
def fifo_behind_link_epoch_checkpoint(tmp, mp):
    ld, p = built(tmp)
    os.mkfifo(tmp / "pipe")
    _replace(p.path / "leader-epoch-checkpoint", lambda path: path.symlink_to(tmp / "pipe"))
    return [ld.root]


@fire("KA515")
def directory_named_like_segment(tmp, mp):
    """A middle segment replaced by a directory of the same name (Kafka's loader skips it: a hole)."""
    ld, p = built(tmp)
    _replace(p.seg_path(1), os.mkdir)
    return [ld.root]


@silent("KA515", "KA516")
def link_within_log_dir(tmp, mp):
    """A segment that is a (relative) symbolic link to a regular file inside the same log dir."""
    ld, p = built(tmp)
    seg = p.seg_path(0)
    seg.rename(p.path / "kept-segment.bin")
    seg.symlink_to("kept-segment.bin")
    return [ld.root]


@silent("KA515", "KA516")
def log_dir_reached_through_link(tmp, mp):
    """The log dir given is itself a symbolic link (evidence mounted elsewhere)."""
    ld, _p = built(tmp)
    link = tmp / "evidence"
    link.symlink_to(ld.root, target_is_directory=True)
    return [link]


def _linked_outside(tmp: Path, path: Path, name: str) -> None:
    """Move ``path`` (a file or a directory) out of the log dir to ``tmp/name``; a symbolic link to it is
    left in its place."""
    outside = tmp / name
    shutil.move(path, outside)
    path.symlink_to(outside, target_is_directory=outside.is_dir())


@fire("KA516")
def segment_linked_outside(tmp, mp):
    ld, p = built(tmp)
    _linked_outside(tmp, p.seg_path(1), "elsewhere.log")
    return [ld.root]


@fire("KA516")
def index_linked_outside(tmp, mp):
    ld, p = built(tmp)
    _linked_outside(tmp, p.seg_path(0, ".index"), "elsewhere.index")
    return [ld.root]


@fire("KA516")
def partition_dir_linked_outside(tmp, mp):
    ld, p = built(tmp)
    _linked_outside(tmp, p.path, "moved-partition")
    return [ld.root]
