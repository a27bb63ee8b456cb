"""Segments Kafka's loader trusts are read header by header, and give the rows of the full read.

Below the recovery point of a cleanly shut down log (``LogRecovery.trusts``) the extraction reads batch
headers only (``SegmentWalker(verify_crc=False)``): every table it yields must equal the full read's, except
that a batch whose CRC does not match is not found out there (``valid`` true, and the rows that follow from
it). Checked on simulated clusters, with each log forced to trust every segment but its last, and on the
corpus.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from auditor.kafka.planning import compacted_topics, plan_tasks
from auditor.layout.logdir import read_log_dir
from auditor.layout.tasks import PartitionTask
from auditor.observe import extract, segment_walk
from auditor.simulate import SimOptions, run_scenario
from tests.conftest import corpus_path

SCENARIOS = [
    ("clean", "none"),
    ("corrupt-batch", "none"),
    ("torn-tail", "lz4"),
    ("follower-crash", "zstd"),
    ("txn-marker-lost", "none"),
    ("offsets-commit-lost", "gzip"),
]


@pytest.fixture(scope="module")
def clusters(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trusted")
    out = {}
    for name, codec in SCENARIOS:
        run_scenario(name, root / name, SimOptions(seed=5, compression=codec))
        out[name] = root / name
    return out


@pytest.fixture
def walks(monkeypatch) -> list[tuple[str, bool]]:
    """(segment path, verify_crc) of every segment walker the extraction makes."""
    made: list[tuple[str, bool]] = []
    real = segment_walk.SegmentWalker

    def spy(path, **kwargs):
        made.append((str(path), kwargs.get("verify_crc", True)))
        return real(path, **kwargs)

    monkeypatch.setattr(segment_walk, "SegmentWalker", spy)
    return made


def _tasks(log_dir: Path) -> list[PartitionTask]:
    info = read_log_dir(log_dir)
    label = info.cluster_id or ""
    meta = extract.metadata_for(info, label)
    return plan_tasks([info], [label], {label: compacted_topics(meta)} if meta is not None else None)


def _tables(task: PartitionTask) -> dict[str, list[dict]]:
    parts: dict[str, list[pa.Table]] = {}
    for kind, table in extract.extract_partition(task):
        parts.setdefault(kind, []).append(table)
    return {kind: pa.concat_tables(tables).to_pylist() for kind, tables in parts.items()}


def _without(rows: list[dict], name: str) -> list[dict]:
    return [{k: v for k, v in row.items() if k != name} for row in rows]


def _compare(task: PartitionTask) -> tuple[int, int]:
    """The header-only and the full extraction of ``task`` agree; returns (batches, invalid batches) of the
    full read."""
    trusted = _tables(task)
    full = _tables(replace(task, verify_crc=True))
    invalid = sum(not row["valid"] for row in full.get("batch", []))
    if not invalid:
        assert trusted == full, task.dir_name
        return len(full.get("batch", [])), 0
    # a CRC mismatch goes unseen where the segment is trusted: only ``valid`` and what follows from it
    assert _without(trusted["batch"], "valid") == _without(full["batch"], "valid"), task.dir_name
    assert _without(trusted["replica"], "invalid_batches") == _without(full["replica"], "invalid_batches")
    assert trusted["epoch"] == full["epoch"] if "epoch" in full else "epoch" not in trusted
    return len(full["batch"]), invalid


@pytest.mark.parametrize(("name", "codec"), SCENARIOS)
def test_trusted_segments_give_the_full_reads_rows_on_simulated_clusters(clusters, walks, name, codec):
    batches = invalid = 0
    for log_dir in sorted(p for p in clusters[name].iterdir() if (p / "meta.properties").is_file()):
        for task in _tasks(log_dir):
            # every segment but the last is trusted: a clean shutdown with the recovery point at the end
            forced = replace(task, clean_shutdown=True, recovery_point=2**62)
            n, bad = _compare(forced)
            batches, invalid = batches + n, invalid + bad
            if task.clean_shutdown:
                _compare(task)
    header_only = [path for path, verify in walks if not verify]
    assert batches and header_only
    assert not [p for p in header_only if "__cluster_metadata" in p]  # always recovered, so always read
    if name == "corrupt-batch":
        assert invalid == 1  # the flipped bit, found by the full read only


def test_trusted_segments_give_the_full_reads_rows_on_the_corpus(walks):
    corpus = corpus_path()
    log_dirs = sorted(p.parent for p in corpus.rglob("meta.properties") if "_run" not in p.parts)
    assert log_dirs
    for log_dir in log_dirs:
        for task in _tasks(log_dir):
            assert _compare(task)[1] == 0
            _compare(replace(task, clean_shutdown=True, recovery_point=2**62))
    assert any(not verify for _, verify in walks)


def test_only_a_clean_log_below_its_recovery_point_is_trusted(tmp_path, walks):
    """Without ``.kafka_cleanshutdown``, in the segment holding the recovery point and after it, in a
    segment without an offset index (Kafka recovers it at load) and for a ``verify_crc`` task the extraction
    recomputes every CRC."""
    root = tmp_path / "c"
    run_scenario("clean", root, SimOptions(seed=2))
    log_dir = root / "broker-1"
    (task,) = [t for t in _tasks(log_dir) if t.topic == "t0"]
    logs = sorted((log_dir / task.dir_name).glob("*.log"))
    assert len(logs) >= 3
    bases = [int(p.name.split(".")[0]) for p in logs]
    (logs[0].with_suffix(".index")).unlink()
    cases = {
        "unclean": replace(task, clean_shutdown=False, recovery_point=2**62),
        "third segment holds the recovery point": replace(
            task, clean_shutdown=True, recovery_point=bases[2] + 1
        ),
        "verify": replace(task, clean_shutdown=True, recovery_point=2**62, verify_crc=True),
    }
    expected = {
        "unclean": [],
        "third segment holds the recovery point": [str(logs[1])],  # the first has no offset index
        "verify": [],
    }
    for name, case in cases.items():
        walks.clear()
        list(extract.extract_partition(case))
        assert [p for p, verify in walks if not verify] == expected[name], name
