"""``dump`` takes kafka-dump-log.sh's own flag names (``--files``, ``--print-data-log``, ``--deep-iteration``,
``--offsets-decoder``, ``--cluster-metadata-decoder``, ``--index-sanity-check``) and a partition directory
(all its files, segment by segment)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path_factory.mktemp("dump-aliases") / "c"
    run_scenario("clean", root, SimOptions(seed=7))
    return root / "broker-1" / "t0-0"


def _dump(*args: str):
    return CliRunner().invoke(app, ["dump", *args])


def test_kafka_dump_log_flag_names_are_aliases(partition):
    log = str(sorted(partition.glob("*.log"))[0])
    ours = _dump("--deep", "--print-values", log)
    theirs = _dump("--deep-iteration", "--print-data-log", log)
    assert ours.exit_code == theirs.exit_code == 0 and ours.output == theirs.output
    listed = _dump("--files", f"{log},{partition / 'leader-epoch-checkpoint'}")
    assert (
        listed.exit_code == 0
        and listed.output == _dump(log, str(partition / "leader-epoch-checkpoint")).output
    )


def test_a_partition_directory_is_dumped_segment_by_segment(partition):
    res = _dump(str(partition))
    assert res.exit_code == 0, res.output
    dumped = [line.split(" ", 1)[1] for line in res.output.splitlines() if line.startswith("Dumping ")]
    names = [Path(p).name for p in dumped]
    segments = [n for n in names if n[0].isdigit()]
    bases = [int(n.split(".")[0]) for n in segments]
    assert bases == sorted(bases) and names.index(segments[-1]) < names.index("leader-epoch-checkpoint")
    first = [n for n in segments if n.startswith(segments[0].split(".")[0])]
    assert first[0].endswith(".log") and first[1].endswith(".index")


def test_index_sanity_check_prints_one_line_per_file(partition, tmp_path):
    index = sorted(partition.glob("*.index"))[0]
    bad = tmp_path / index.name
    bad.write_bytes(index.read_bytes()[:-3])  # a torn last entry
    res = _dump("--index-sanity-check", str(index), str(bad))
    lines = res.output.strip().splitlines()
    assert lines[0] == f"{index}: passed the sanity check"
    assert lines[1].startswith(f"{bad}") and "passed" not in lines[1]
    assert res.exit_code == 2
