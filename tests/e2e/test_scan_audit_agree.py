"""scan and audit share one Kafka model: for every simulator scenario and every corpus cluster state, scan's
per-partition log start offset, log end offset, high watermark and recovery point equal audit's replica row
(the values audit's replica summary copies), replica by replica."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor.layout.discover import discover
from auditor.layout.filetypes import is_log_dir
from auditor.observe.extract import extract_tables
from auditor.scan import scan
from auditor.simulate import SCENARIOS, SimOptions, run_scenario
from parsers.checkpoints import format_offset_checkpoint
from parsers.dirfiles import segment_file_name
from tests.conftest import CORPUS
from tests.rules.replica.logdirs import TOPIC, Replica, segments, unreadable, write_replica


def _log_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and is_log_dir(p))


def _corpus_states() -> list[str]:
    """Cluster states of the corpus: directories holding broker log dirs (relative paths)."""
    if not CORPUS.is_dir():
        return ["<corpus absent>"]
    # a state is the folder holding a group of log dirs (found by Kafka's markers, never by folder name)
    found = discover([CORPUS], depth=3).log_dirs
    return sorted({str(Path(p).parent.relative_to(CORPUS)) for p in found})


def _scan_view(log_dirs: list[Path]) -> dict[tuple, tuple]:
    result = scan([str(p) for p in log_dirs])
    return {
        (os.path.realpath(s["logDir"]), s["topic"], s["partition"]): (
            s["logStartOffset"],
            s["logEndOffset"],
            s["highWatermark"],
            s["recoveryPoint"],
        )
        for s in result.partitions
        if s["directory"] == f"{s['topic']}-{s['partition']}"
    }


def _audit_view(log_dirs: list[Path]) -> dict[tuple, tuple]:
    out = {}
    for path in log_dirs:
        for r in extract_tables(path)["replica"].to_pylist():
            if r.get("dir_kind") not in (None, "live"):  # -future/-delete/-stray: scan's view has live dirs
                continue
            key = (os.path.realpath(r["log_dir"]), r["topic"], r["partition"])
            out[key] = (r["log_start"], r["leo"], r["hw"], r["recovery_point"])
    return out


def _assert_agree(log_dirs: list[Path]) -> None:
    assert log_dirs
    scanned, audited = _scan_view(log_dirs), _audit_view(log_dirs)
    assert audited, "no replica rows"
    assert set(scanned) == set(audited)
    differ = {k: (scanned[k], audited[k]) for k in scanned if scanned[k] != audited[k]}
    assert not differ, f"(logStart, LEO, HW, recoveryPoint) scan vs audit: {differ}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_simulated_scenario(tmp_path, name):
    run_scenario(name, tmp_path, SimOptions(seed=7, records=300))
    _assert_agree(_log_dirs(tmp_path))


@pytest.mark.parametrize("state", _corpus_states())
def test_corpus_state(state):
    if not CORPUS.is_dir():
        pytest.skip("the corpus is absent")
    _assert_agree(_log_dirs(CORPUS / state))


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize(
    "damage",
    ["middle-dir", "middle-fifo", "last-fifo", "middle-torn", "last-torn", "middle-crc", "recovery-mid"],
)
def test_partly_unreadable_replica(tmp_path, damage, clean):
    """The replicas of ``audit``'s incomplete-replica cases (where scan once said LEO 1500 and audit 1174),
    with and without a clean shutdown."""
    root = write_replica(tmp_path / "b", 1, Replica(segments(0, 10, 20, 30), 30))
    part = root / f"{TOPIC}-0"
    where, what = damage.split("-", 1)
    base = {"middle": 10, "last": 20, "recovery": 20}[where]
    seg = part / segment_file_name(base, ".log")
    if what in ("dir", "fifo"):
        unreadable(root, base, what)
    elif what == "torn":
        os.truncate(seg, seg.stat().st_size - 7)
    elif what == "crc":
        data = bytearray(seg.read_bytes())
        data[70] ^= 1
        seg.write_bytes(bytes(data))
    else:  # recovery point inside the last segment, the middle one corrupt: below the point, not re-read
        (root / "recovery-point-offset-checkpoint").write_bytes(format_offset_checkpoint([(TOPIC, 0, 25)]))
        middle = part / segment_file_name(10, ".log")
        os.truncate(middle, middle.stat().st_size - 7)
    if not clean:
        (root / ".kafka_cleanshutdown").unlink()
    _assert_agree([root])
