"""The committed fixtures are reproducible and every one of them dumps as expected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor.dump import Dumper, DumpOptions
from parsers.errors import ParseError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = sorted(p for p in (FIXTURES / "logdir").rglob("*") if p.is_file())
BAD = sorted(p for p in (FIXTURES / "corrupt").rglob("*") if p.is_file())


def test_fixtures_are_what_the_script_builds():
    res = subprocess.run(
        [sys.executable, str(FIXTURES / "make_fixtures.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("path", GOOD, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_good_fixture_dumps_deep_without_error(path):
    events = list(Dumper(DumpOptions(deep=True, print_values=True)).events(path))
    assert events[0]["kind"] == "file" and events[0]["fileType"] is not None
    assert not [e for e in events if e["kind"] == "error"]
    if events[0]["fileType"] in ("log", "kraft-snapshot"):
        stop = next(e for e in events if e["kind"] == "stop")
        assert stop["reason"] == "end" and stop["batches"] == stop["validBatches"] > 0
        assert stop["records"] > 0


@pytest.mark.parametrize("path", BAD, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_corrupt_fixture_fails_with_a_byte_offset(path):
    with pytest.raises(ParseError) as info:
        list(Dumper(DumpOptions(deep=True)).events(path))
    assert info.value.offset is not None and info.value.path == str(path)


def test_fixture_contents_decode_to_what_was_written():
    events = list(
        Dumper(DumpOptions(print_values=True)).events(FIXTURES / "logdir/payments-0/00000000000000000000.log")
    )
    markers = [e["controlType"] for e in events if e["kind"] == "record" and "controlType" in e]
    assert markers == ["COMMIT", "ABORT", "COMMIT"]
    legacy = list(
        Dumper(DumpOptions(deep=True)).events(FIXTURES / "logdir/legacy-0/00000000000000000000.log")
    )
    assert [e["offset"] for e in legacy if e["kind"] == "record"] == list(range(10))
    meta = list(
        Dumper(DumpOptions(print_values=True)).events(
            FIXTURES / "logdir/__cluster_metadata-0/00000000000000000000.log"
        )
    )
    types = [
        e["payload"]["type"] for e in meta if e["kind"] == "record" and isinstance(e.get("payload"), dict)
    ]
    assert types == ["FEATURE_LEVEL_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD"]
