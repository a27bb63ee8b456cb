"""``audit EXTRACTS --export-lost DIR`` on a host where the segments are not at the paths the extracts record:
one line naming the log dir, exit 2, before Spark starts, no file written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXE = str(Path(sys.executable).with_name("kafka-auditor"))


def test_export_from_extracts_whose_segments_are_elsewhere_is_refused_in_one_line(tmp_path):
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path / "c"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    extracts = []
    for broker in ("broker-1", "broker-2", "broker-3"):
        out = tmp_path / "extracts" / broker
        res = subprocess.run([EXE, "extract", str(root / broker), "--out", str(out)], capture_output=True)
        assert res.returncode == 0, res.stderr
        extracts.append(str(out))
    root.rename(tmp_path / "moved")  # the segments are no longer where the extracts say
    export = tmp_path / "lost"
    res = subprocess.run(
        [EXE, "audit", *extracts, "--export-lost", str(export)], capture_output=True, text=True
    )
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("kafka-auditor: error: --export-lost reads the lost records from the segments")
    assert str(root / "broker-") in line and "Traceback" not in res.stderr
    assert not export.exists()


def test_segments_root_maps_the_recorded_log_dirs_and_the_export_is_the_same(tmp_path):
    """The log dirs moved after extraction: ``--segments-root`` per broker finds them, and the export equals
    the one made while they were in place."""
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path / "c"
    run_scenario("unclean-election", root, SimOptions(seed=7))
    extracts = []
    for broker in ("broker-1", "broker-2", "broker-3"):
        out = tmp_path / "extracts" / broker
        res = subprocess.run([EXE, "extract", str(root / broker), "--out", str(out)], capture_output=True)
        assert res.returncode == 0, res.stderr
        extracts.append(str(out))
    before = tmp_path / "lost-before"
    res = subprocess.run(
        [EXE, "audit", *extracts, "--export-lost", str(before), "--exit-zero", "-q"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    moved = tmp_path / "moved"
    root.rename(moved)
    after = tmp_path / "lost-after"
    mappings = [
        a for b in (1, 2, 3) for a in ("--segments-root", f"{b}:{root}/broker-{b}={moved}/broker-{b}")
    ]
    res = subprocess.run(
        [EXE, "audit", *extracts, "--export-lost", str(after), *mappings, "--exit-zero", "-q"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    lines = (after / "lost-records.jsonl").read_text().splitlines()
    assert lines and lines == (before / "lost-records.jsonl").read_text().splitlines()
    assert '"error": null' in lines[0]


def test_segments_root_malformed_or_without_export_is_one_line(tmp_path):
    for args, words in (
        (
            ["--segments-root", "nothing-to-map", "--export-lost", str(tmp_path / "x")],
            "expected [BROKER:]FROM=TO",
        ),
        (["--segments-root", "/a=/b"], "add --export-lost DIR"),
    ):
        res = subprocess.run([EXE, "audit", str(tmp_path), *args], capture_output=True, text=True)
        assert res.returncode == 2
        (line,) = res.stderr.strip().splitlines()
        assert words in line, line


def test_segment_roots_locate():
    from auditor.layout.relocate import SegmentRoots

    roots = SegmentRoots.parse(["2:/var/lib/kafka=/mnt/b2", "/var/lib/kafka/=/mnt/any", "/data=rel"])
    assert roots.locate("/var/lib/kafka/data", 2) == "/mnt/b2/data"
    assert roots.locate("/var/lib/kafka/data", 1) == "/mnt/any/data"
    assert roots.locate("/var/lib/kafka", 1) == "/mnt/any"
    assert roots.locate("/var/lib/kafkaX/data", 1) == "/var/lib/kafkaX/data"  # a prefix of a name is no match
    assert roots.locate("/data/x", None).endswith("/rel/x")
    assert SegmentRoots.parse(None).locate("/a", 1) == "/a"
