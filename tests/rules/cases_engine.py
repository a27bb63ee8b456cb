"""Cases of ``auditor/rules/engine.py``: the findings the scan emits itself (unreadable file KA001, crashed
check KA002) and copies of one log dir or of one broker among the scanned log dirs (KA003), with the shapes
that must stay silent (JBOD dirs of one broker, replicas of two brokers, one node id in two clusters)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

from parsers.dirfiles import format_meta_properties, segment_file_name
from tests.rules.benign import baseline
from tests.rules.builder import CLUSTER_ID, LogDir, built, standard
from tests.rules.harness import fire, silent


@fire("KA001")
def dangling_segment(tmp, mp):
    ld, p = built(tmp)
    os.symlink(tmp / "nowhere", p.path / segment_file_name(999, ".log"))
    return [ld.root]


@fire("KA002")
def crashing_check(tmp, mp):
    from auditor.rules.registry import REGISTRY, load_rules

    load_rules()

    def boom(part):
        raise RuntimeError("boom")
        yield  # pragma: no cover

    mp.setitem(REGISTRY, "KA106", dataclasses.replace(REGISTRY["KA106"], check=boom))
    return [built(tmp)[0].root]


silent("KA003")(baseline)


def _zookeeper(ld: LogDir, node: int = 1, cluster: str = CLUSTER_ID) -> LogDir:
    """A ZooKeeper-era log dir: meta.properties version 0 (broker.id, no directory.id)."""
    ld.meta_override = format_meta_properties(0, node, cluster)
    return ld


@fire("KA003")
def copies_of_one_log_dir(tmp, mp):
    """Before and after copies of one KRaft log dir: same directory.id (and node.id)."""
    a, _ = standard(tmp / "before" / "broker-1")
    a.write()
    shutil.copytree(a.root, tmp / "after" / "broker-1")
    return [a.root, tmp / "after" / "broker-1"]


@fire("KA003")
def copies_of_one_zookeeper_broker(tmp, mp):
    """Two copies of a ZooKeeper-era broker (no directory.id) holding the same partition, the later one
    with two more batches."""
    a, _ = standard(tmp / "before" / "broker-1", metadata=False)
    _zookeeper(a).write()
    b, p = standard(tmp / "after" / "broker-1", metadata=False)
    p.data(2, epoch=2)
    _zookeeper(b).write()
    return [a.root, b.root]


@silent("KA003")
def jbod_dirs_of_one_broker(tmp, mp):
    """Two JBOD log dirs of broker 1: distinct directory.ids, each partition in one of them."""
    a, _ = standard(tmp / "disk-a", dir_salt="a")
    a.write()
    b = LogDir(tmp / "disk-b", dir_salt="b", metadata=False)
    b.part("payments").data(2)
    b.write()
    return [a.root, b.root]


@silent("KA003")
def zookeeper_jbod_dirs(tmp, mp):
    """Two ZooKeeper-era log dirs of broker 1 (no directory.id), each holding other partitions."""
    a = _zookeeper(LogDir(tmp / "disk-a", metadata=False))
    a.part("orders").data(2)
    a.write()
    b = _zookeeper(LogDir(tmp / "disk-b", metadata=False))
    b.part("payments").data(2)
    b.write()
    return [a.root, b.root]


@silent("KA003")
def replicas_on_two_brokers(tmp, mp):
    """Brokers 1 and 2 of one cluster, both holding a replica of orders-0."""
    roots = []
    for node in (1, 2):
        ld, _ = standard(tmp / f"broker-{node}", node_id=node, metadata=node == 1)
        ld.write()
        roots.append(ld.root)
    return roots


@silent("KA003")
def one_node_id_in_two_clusters(tmp, mp):
    """Node 1 of two different clusters (ZooKeeper era, no directory.id), same topic names."""
    roots: list[Path] = []
    for name, cluster in (("east", CLUSTER_ID), ("west", "WestClusterIdAAAAAAAAAA")):
        ld, _ = standard(tmp / name / "broker-1", metadata=False)
        _zookeeper(ld, cluster=cluster).write()
        roots.append(ld.root)
    return roots
