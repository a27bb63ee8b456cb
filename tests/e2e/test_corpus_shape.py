"""The simulator's output has the shape of the real Kafka 4.0 log directories in ``../shared/corpus``:
file names, checkpoint and metadata file formats, index preallocation and density."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parsers.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from parsers.dirfiles import parse_meta_properties, parse_partition_metadata
from parsers.indexes import read_offset_index, read_time_index
from tests.simulate.simvalidate import read_log

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus not present"),
]
CORPUS_INTERVAL = 4096  # index.interval.bytes of the corpus brokers
CORPUS_INDEX_BYTES = 65536  # log.index.size.max.bytes of the corpus brokers

NAME_PATTERNS = {
    "segment": re.compile(r"^\d{20}\.(log|index|timeindex|txnindex|snapshot)(\.deleted)?$"),
    "kraft-snapshot": re.compile(r"^\d{20}-\d{10}\.checkpoint$"),
    "fixed": re.compile(r"^(leader-epoch-checkpoint|partition\.metadata|quorum-state)$"),
}
ROOT_FILES = {
    "meta.properties",
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "bootstrap.checkpoint",
    ".kafka_cleanshutdown",
    ".lock",
}


def corpus_nodes() -> list[Path]:
    return sorted(p for p in CORPUS.glob("**/broker-*") if p.is_dir() and (p / "meta.properties").exists())


def kinds(root: Path) -> set[str]:
    out = set()
    for f in root.rglob("*"):
        if f.is_file() and f.parent != root:
            kind = next((k for k, rx in NAME_PATTERNS.items() if rx.match(f.name)), f"other:{f.name}")
            suffix = f.name.split(".", 1)[1] if kind == "segment" else f.name
            out.add(f"{kind}:{suffix}" if kind != "kraft-snapshot" else kind)
    return out


@pytest.fixture(scope="module")
def sim(scenario_out):
    return scenario_out("unclean-election", topics=3, records=600)[0], scenario_out("clean", topics=3)[0]


def test_same_file_kinds_and_root_files(sim):
    real_kinds = set().union(*(kinds(n) for n in corpus_nodes()))
    for out in sim:
        for node in (p for p in out.iterdir() if p.is_dir()):
            root_files = {f.name for f in node.iterdir() if f.is_file()}
            assert root_files <= ROOT_FILES
            assert ".lock" in root_files or ".kafka_cleanshutdown" in root_files
            assert kinds(node) <= real_kinds, kinds(node) - real_kinds
            for d in node.iterdir():
                if d.is_dir():
                    assert re.match(r"^[A-Za-z0-9._-]+-\d+$", d.name)


def test_checkpoint_and_metadata_formats_match(sim):
    real = corpus_nodes()[0]
    real_props = parse_meta_properties((real / "meta.properties").read_bytes())
    real_quorum = json.loads(next(real.glob("__cluster_metadata-0/quorum-state")).read_text())
    for out in sim:
        for node in (p for p in out.iterdir() if p.is_dir()):
            text = (node / "meta.properties").read_text()
            assert re.match(r"^#\n#\w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}\n", text)
            props = parse_meta_properties(text.encode())
            assert set(props.raw) == set(real_props.raw) and not props.problems
            quorum = json.loads((node / "__cluster_metadata-0" / "quorum-state").read_text())
            assert set(quorum) == set(real_quorum)
            marker = node / ".kafka_cleanshutdown"
            if marker.exists():
                assert re.fullmatch(r'\{"version":0,"brokerEpoch":\d+\}', marker.read_text())
            is_broker = node.name.startswith("broker-")
            assert is_broker == (node / "replication-offset-checkpoint").exists()  # controllers have none
            for name in (
                ("replication-offset-checkpoint", "recovery-point-offset-checkpoint") if is_broker else ()
            ):
                data = (node / name).read_bytes()
                if data:
                    ckpt = parse_offset_checkpoint(data)
                    assert data == b"0\n%d\n" % len(ckpt.entries) + b"".join(
                        b"%s %d %d\n" % (t.encode(), p, o) for t, p, o in ckpt.entries
                    )
            for pdir in (d for d in node.iterdir() if d.is_dir()):
                meta = (pdir / "partition.metadata").read_bytes()
                assert re.fullmatch(rb"version: 0\ntopic_id: [A-Za-z0-9_-]{22}", meta)
                parse_partition_metadata(meta)
                parse_leader_epoch_checkpoint((pdir / "leader-epoch-checkpoint").read_bytes())


def index_shape(pdir: Path, interval: int, prealloc: int) -> int:
    """Check preallocation/trim and index.interval.bytes density of one partition dir; return entries."""
    n = 0
    logs = sorted(pdir.glob("*.log"))
    for i, log in enumerate(logs):
        base = int(log.name.split(".")[0])
        raw_idx = log.with_suffix(".index").read_bytes()
        raw_tix = log.with_suffix(".timeindex").read_bytes()
        idx = read_offset_index(raw_idx, base)
        tix = read_time_index(raw_tix, base)
        if idx.preallocated or tix.preallocated:
            assert i == len(logs) - 1, f"{log}: only the active segment is preallocated"
            assert len(raw_idx) == prealloc // 8 * 8 and len(raw_tix) == prealloc // 12 * 12
        else:
            assert len(raw_idx) == 8 * len(idx.entries) and len(raw_tix) == 12 * len(tix.entries)
        positions = [p for _, p in idx.entries]
        if positions:
            assert positions[0] > interval
            assert all(b - a > interval for a, b in zip(positions, positions[1:], strict=False))
        size = log.stat().st_size
        assert len(idx.entries) <= size // interval + 1
        if i < len(logs) - 1 and size:
            batches, _ = read_log(log.read_bytes())
            if batches and max(b.max_timestamp for b in batches) > 0:
                assert tix.entries and tix.entries[-1][0] == max(b.max_timestamp for b in batches)
        n += len(idx.entries)
    return n


def test_index_preallocation_and_density_match(sim):
    real_entries = 0
    for node in corpus_nodes():
        for pdir in node.iterdir():
            if pdir.is_dir() and not pdir.name.startswith("__") and not pdir.name.startswith("compacted"):
                real_entries += index_shape(pdir, CORPUS_INTERVAL, CORPUS_INDEX_BYTES)
    ours = 0
    for out in sim:
        for node in (p for p in out.iterdir() if p.is_dir()):
            for pdir in node.iterdir():
                if pdir.is_dir():
                    ours += index_shape(pdir, 4096, 65536)
    assert real_entries > 0 and ours > 0


def test_epoch_checkpoints_look_alike(sim):
    """Both have (epoch, start) lines with strictly increasing epochs and offsets; benign trailing entries
    at the log end after a clean shutdown exist in both."""
    for root in [*corpus_nodes(), *(n for out in sim for n in out.iterdir() if n.is_dir())]:
        for f in root.glob("*/leader-epoch-checkpoint"):
            entries = parse_leader_epoch_checkpoint(f.read_bytes()).entries
            assert all(e2 > e1 and s2 > s1 for (e1, s1), (e2, s2) in zip(entries, entries[1:], strict=False))
