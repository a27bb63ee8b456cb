"""``bench/fuzz.py`` (issue 8): a short real run over every parser entry point, and the harness itself —
each outcome is classified, a dead or stuck worker is recorded and its chunk finished, inputs are
reproducible."""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402
from fuzz_mutate import mutate_inside  # noqa: E402
from fuzz_seeds import build_seeds  # noqa: E402
from fuzz_targets import TARGETS, Scratch, Target  # noqa: E402

from parsers import record_batch  # noqa: E402
from parsers.errors import ParseError  # noqa: E402

FINAL = re.compile(
    r"^fuzz: ([\d,]+) inputs, ([\d,]+) parse errors, ([\d,]+) accepted, ([\d,]+) other exceptions, "
    r"([\d,]+) over 1 s, ([\d,]+) over \+200 MB$",
    re.M,
)


@pytest.fixture(scope="module")
def seeds():
    return build_seeds(None)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_fuzz_command_runs_every_entry_point_without_other_exceptions(tmp_path):
    """2,000 mutated inputs, no corpus: only ParseError or acceptance, within 1 s and +200 MB each."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(BENCH / "fuzz.py"), "--count", "2000", "--jobs", "2", "--seed", "0"]
    cmd += ["--no-corpus", "--save", str(tmp_path / "saved")]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert time.monotonic() - start < 45
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    inputs, parse_errors, accepted, other, slow, big = map(_number, FINAL.search(proc.stdout).groups())
    assert (inputs, other, slow, big) == (2000, 0, 0, 0)
    assert parse_errors + accepted == inputs and parse_errors > 0 and accepted > 0
    for target in TARGETS:  # every entry point got its share (2000 / 25 targets)
        row = re.search(rf"^{re.escape(target.name)}\s+([\d,]+)\s", proc.stdout, re.M)
        assert row and _number(row.group(1)) == 2000 // len(TARGETS), target.name
    assert not (tmp_path / "saved").exists()


class FakeInputs(fuzz.Inputs):
    """Input ``i`` goes to ``runs[i % len(runs)]`` (no mutation)."""

    def __init__(self, runs) -> None:
        self.targets = [Target(f"fake{i}", ("x",), run) for i, run in enumerate(runs)]

    def make(self, index: int):
        import random

        return self.targets[index % len(self.targets)], b"\x00" * 8, random.Random(index)


def _parse_error(data, rng, scratch):
    raise ParseError("bad input", offset=3)


def _accept(data, rng, scratch):
    return None


def _type_error(data, rng, scratch):
    return len(5)


def _slow(data, rng, scratch):
    end = time.process_time() + 0.25
    while time.process_time() < end:  # CPU time: what the limit measures
        pass


def _endless(data, rng, scratch):
    while True:  # burns CPU: aborted by the CPU-time alarm
        pass


def _big(data, rng, scratch):
    block = b"\x01" * (150 << 20)  # touched pages: peak RSS grows by 150 MB
    assert block[-1] == 1


def _segfault(data, rng, scratch):
    os.kill(os.getpid(), signal.SIGSEGV)


def _stuck(data, rng, scratch):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGPROF])  # as if stuck in native code
    time.sleep(60)


def test_outcomes_are_classified(tmp_path):
    inputs = FakeInputs([_parse_error, _accept, _type_error, _slow, _endless, _big])
    settings = fuzz.Settings(
        time_limit=0.1, memory_growth_mb=100, scratch_root=str(tmp_path), abort_after=0.5
    )
    scratch, peak = Scratch(str(tmp_path / "w")), fuzz._Peak()
    previous = signal.signal(signal.SIGPROF, fuzz._on_alarm)
    try:
        got = [fuzz.run_one(inputs, i, settings, scratch, peak) for i in range(6)]
    finally:
        signal.signal(signal.SIGPROF, previous)
    assert [r[1] for r in got[:5]] == [
        ["parse_error"],
        ["accepted"],
        ["exception"],
        ["accepted", "over_time"],
        ["over_time"],
    ]
    assert got[5][1][0] == "accepted" and "over_memory" in got[5][1]  # (maybe also slow on a busy machine)
    assert got[0][2] is None and got[1][2] is None
    event = got[2][2]
    assert event.kind == "TypeError" and event.location.startswith("bench/test_fuzz.py:")
    assert got[5][4] >= 140 and got[4][3] < 2


def test_dead_and_stuck_workers_are_recorded_and_their_chunks_finished(tmp_path):
    inputs = FakeInputs([_accept, _accept, _segfault, _accept, _stuck, _accept, _accept])
    settings = fuzz.Settings(time_limit=0.1, scratch_root=str(tmp_path), abort_after=0.5, kill_after=1.5)
    totals = fuzz.Totals()
    start = time.monotonic()
    dumping = faulthandler.is_enabled()
    faulthandler.disable()  # the forked worker's SIGSEGV is expected: no traceback dump on stderr
    try:
        fuzz.Pool(1, inputs, settings, 7, totals).run(lambda done: None)
    finally:
        if dumping:
            faulthandler.enable()
    assert time.monotonic() - start < 15
    per = {name: dict(c) for name, c in totals.per_target.items()}
    assert per["fake2"] == {"inputs": 1, "exception": 1}
    assert per["fake4"] == {"inputs": 1, "over_time": 1}
    assert sum(c["inputs"] for c in totals.per_target.values()) == 7
    kinds = sorted(kind for _target, _outcome, kind, _location in totals.events)
    assert kinds[0].startswith("worker died (exit code -11)") and kinds[1].startswith("worker stuck")
    saved = fuzz.save_events(totals.events, inputs, tmp_path / "out", "--seed 0")
    assert len(saved) == 2 and all(path.read_bytes() == b"\x00" * 8 for _, _, path in saved)


def test_inputs_are_reproducible(seeds):
    a, b = fuzz.Inputs(seeds, 7, TARGETS), fuzz.Inputs(seeds, 7, TARGETS)
    other = fuzz.Inputs(seeds, 8, TARGETS)
    same = [a.make(i)[1] == b.make(i)[1] for i in range(200)]
    assert all(same)
    assert sum(a.make(i)[1] != other.make(i)[1] for i in range(200)) > 150


def test_edits_inside_compression_keep_the_batch_valid(seeds):
    """``mutate_inside`` rebuilds the batch: CRC and length right, so the edit reaches the record decoder."""
    import random

    decoded_differently = 0
    for i, seed in enumerate(s for s in seeds["batch"] if s[22] & 0x07):
        data = mutate_inside(random.Random(i), seed)
        batch = record_batch.parse_header(data, 0)
        assert batch.crc_valid and batch.size == len(data)
        decoded_differently += data[61:] != seed[61:]
    assert decoded_differently > 0


def test_seeds_do_not_depend_on_the_clock(seeds):
    """The same seeds on every run (no wall-clock dates), so ``--seed S --replay I`` reproduces a finding."""
    from fuzz_seeds import fingerprint

    time.sleep(1.05)  # meta.properties dates have one-second resolution
    assert fingerprint(build_seeds(None)) == fingerprint(seeds)
