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
