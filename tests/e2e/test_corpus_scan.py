"""Scan of the real Kafka 4.0 corpus: silent on clean data, the recovery facts on crash-consistent copies,
and every damage made by hand to copies of real segments found with the right code.

Skips cleanly when ``../shared/corpus`` is absent. The corpus is never written to: damage is done to copies.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from auditor.findings import Severity
from auditor.scan import scan
from parsers.record_batch import HEADER_FIELDS, HEADER_STRUCT
from parsers.segment import SegmentWalker
from tests.conftest import corpus_path

pytestmark = pytest.mark.corpus

CLEAN_DIRS = [
    "clean/broker-1",
    "clean/broker-2",
    "clean/broker-3",
    "clean/controller-100",
    "single-node/broker-1",
    "unclean-leader-election/after-old-leader-rejoined/broker-1",
    "unclean-leader-election/after-old-leader-rejoined/broker-2",
    "unclean-leader-election/after-old-leader-rejoined/broker-3",
    "unclean-leader-election/after-old-leader-rejoined/controller-100",
]


@pytest.mark.parametrize("rel", CLEAN_DIRS)
def test_clean_corpus_has_no_finding_above_info(rel):
    result = scan([corpus_path() / rel], jobs=1)
    loud = [(f.code, f.partition_key, f.message) for f in result.findings if f.severity > Severity.INFO]
    assert not loud
    assert not result.incomplete
    assert {f.code for f in result.findings} <= {"KA505"}  # only the .deleted files awaiting deletion


def test_clean_cluster_scanned_as_one_directory():
    result = scan([corpus_path() / "clean"], jobs=1)
    assert result.stats["logDirs"] == 4
    assert {row["broker"] for row in result.logdirs} == {1, 2, 3, 100}
    assert all(f.severity == Severity.INFO for f in result.findings)
    part = next(p for p in result.partitions if p["broker"] == 1 and p["directory"] == "plain-0")
    assert (part["logEndOffset"], part["highWatermark"], part["recoveryPoint"]) == (520, 520, 520)
    assert part["leaderEpochCache"] == [[0, 0]]


def test_crash_consistent_copies_report_the_coming_recovery():
    """before-old-leader-restart: no .kafka_cleanshutdown. Scan says recovery will run (KA405, warning) and
    which
    segments it re-reads (KA406, info), and nothing else: the divergence is a cross-replica finding."""
    root = corpus_path() / "unclean-leader-election" / "before-old-leader-restart"
    result = scan([root], jobs=1)
    codes = {(f.code, f.broker) for f in result.findings}
    assert codes == {("KA405", 1), ("KA405", 2), ("KA405", 3), ("KA406", 1), ("KA406", 2), ("KA406", 3)}
    assert all(f.severity <= Severity.WARNING for f in result.findings)
    reread = {f.broker: f for f in result.findings if f.code == "KA406"}
    assert reread[3].offset_start == 881  # broker-3's recovery point: from the segment holding offset 881
    assert reread[1].offset_start == 0 and "no recovery point" in reread[1].message
    ule = {p["broker"]: p for p in result.partitions if p["topic"] == "ule"}
    assert {b: (p["logEndOffset"], p["highWatermark"]) for b, p in ule.items()} == {
        1: (1300, 1300),
        2: (1000, 0),
        3: (1500, 1500),
    }


# ------------------------------------------------------------------------------------ hand-made damage


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """A copy of clean/broker-1 with only the txn-0 partition (plus its root files)."""
    src = corpus_path() / "clean" / "broker-1"
    dst = tmp_path / "broker-1"
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copy(f, dst / f.name)
    shutil.copytree(src / "txn-0", dst / "txn-0")
    for f in [dst, *dst.rglob("*")]:
        f.chmod(0o755 if f.is_dir() else 0o644)
    return dst


def _codes(root: Path) -> set[str]:
    return {f.code for f in scan([root], jobs=1).findings}


def _batches(path: Path) -> list:
    return list(SegmentWalker(path))


FIELD_OFFSETS = {}
_pos = 0
for _name, _code in zip(HEADER_FIELDS, HEADER_STRUCT.format.lstrip(">"), strict=True):
    FIELD_OFFSETS[_name] = _pos
    _pos += struct.calcsize(">" + _code)

EXPECTED_BY_FIELD = {
    # not covered by the CRC: caught by offset and epoch checks
    "base_offset": {"KA105", "KA106"},
    "partition_leader_epoch": {"KA107", "KA313", "KA314"},
    "magic": {"KA103", "KA101"},
    # every other field is inside the CRC-32C (bytes 21..end) or changes the batch size
    "batch_length": {"KA101", "KA102", "KA103"},
}


@pytest.mark.parametrize("field", HEADER_FIELDS)
def test_bit_flip_in_each_header_field_is_found(logdir, field):
    log = logdir / "txn-0" / "00000000000000000000.log"
    batch = _batches(log)[10]
    data = bytearray(log.read_bytes())
    # the most significant byte of the field, bit 6: far from any neighbouring valid value
    data[batch.position + FIELD_OFFSETS[field]] ^= 0x40
    log.write_bytes(bytes(data))
    codes = _codes(logdir)
    expected = EXPECTED_BY_FIELD.get(field, {"KA101"})
    assert codes & expected, (field, codes)


def test_truncation_at_every_byte_of_the_last_batch(logdir):
    log = logdir / "txn-0" / "00000000000000000163.log"
    last = _batches(log)[-1]
    original = log.read_bytes()
    assert len(original) == last.position + last.size
    for cut in range(last.position, len(original)):
        log.write_bytes(original[:cut])
        result = scan([logdir], jobs=1)
        torn = [f for f in result.findings if f.code == "KA102"]
        if cut == last.position:
            assert not torn
        else:
            assert len(torn) == 1, cut
            assert torn[0].position == last.position
            assert torn[0].evidence["trailingBytes"] == cut - last.position
        assert any(f.code == "KA401" for f in result.findings), cut  # HW 186 is now above the LEO
    log.write_bytes(original)
    assert not [f for f in scan([logdir], jobs=1).findings if f.severity > Severity.INFO]


def test_zeroed_index_tail_is_benign_and_stale_tail_is_not(logdir):
    part = logdir / "txn-0"
    index = part / "00000000000000000163.index"
    timeindex = part / "00000000000000000163.timeindex"
    index.write_bytes(index.read_bytes() + bytes(8 * 500))  # preallocated active index (zero tail)
    timeindex.write_bytes(timeindex.read_bytes() + bytes(12 * 500))
    assert not [f for f in scan([logdir], jobs=1).findings if f.severity > Severity.INFO]
    size = (part / "00000000000000000163.log").stat().st_size
    index.write_bytes(
        struct.pack(">ii", 185 - 163 + 5, size + 4096) + bytes(8 * 10)
    )  # stale entry past the log
    result = scan([logdir], jobs=1)
    stale = [f for f in result.findings if f.code == "KA205"]
    assert len(stale) == 1 and stale[0].severity == Severity.ERROR  # clean shutdown: recovery will not fix it
    (logdir / ".kafka_cleanshutdown").unlink()
    stale = [f for f in scan([logdir], jobs=1).findings if f.code == "KA205"]
    assert len(stale) == 1 and stale[0].severity == Severity.WARNING  # recovery rebuilds the active index


def test_zeroed_index_slots_in_a_rolled_segment(logdir):
    index = logdir / "txn-0" / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    assert len(data) == 24
    data[8:16] = bytes(8)  # zero the middle entry: the real prefix ends, a non-zero entry follows
    index.write_bytes(bytes(data))
    assert "KA206" in _codes(logdir)
