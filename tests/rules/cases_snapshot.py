"""Cases of ``auditor/rules/snapshot.py`` (KA231-KA233): producer snapshots with a bad CRC, an unknown
version, or an offset beyond the log end offset."""

from __future__ import annotations

from pathlib import Path

from parsers.dirfiles import segment_file_name
from parsers.producer_snapshot import build_producer_snapshot
from tests.rules.builder import Part, built, flip, put
from tests.rules.harness import fire


def _snapshot(p: Part) -> Path:
    return p.path / segment_file_name(p.leo, ".snapshot")


@fire("KA231")
def snapshot_crc(tmp, mp):
    ld, p = built(tmp)
    flip(_snapshot(p), 3)
    return [ld.root]


@fire("KA232")
def snapshot_version(tmp, mp):
    ld, p = built(tmp)
    put(_snapshot(p), 0, ">h", 2)
    return [ld.root]


@fire("KA233")
def snapshot_beyond(tmp, mp):
    ld, p = built(tmp)
    (p.path / segment_file_name(p.leo + 70, ".snapshot")).write_bytes(build_producer_snapshot([]))
    return [ld.root]
