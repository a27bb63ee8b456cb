"""Fire/silent fixtures of scan rules added for hostile inputs (files): special files where Kafka keeps
regular ones (KA515), symbolic links out of the log dir (KA516), meta.properties naming no node (KA304)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

CODES: list[str] = ["KA515", "KA516"]
"""The scan rule codes whose fixtures live here (added to ``cases.ALL_CODES``); set before importing
``cases``, which reads it while this module may still be initialising."""

from parsers.dirfiles import format_meta_properties  # noqa: E402
from tests.rules.builder import CLUSTER_ID  # noqa: E402
from tests.rules.cases import built, fire, silent  # noqa: E402


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


# ------------------------------------------------------------------------------------------ KA515


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


# ------------------------------------------------------------------------------------------ KA516


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


# ------------------------------------------------------------------------------------------ KA304


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
