"""Hostile files: FIFOs, sockets, devices and links to them named like every kind of Kafka file, links out of
the log dir, and meta.properties naming no node. No command may open a special file for reading (a FIFO
blocks, ``/dev/zero`` never ends): each runs as a subprocess killed after its timeout, so a command that
blocks fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from parsers.errors import ParseError
from parsers.files import NotRegularFile, open_regular, read_regular, regular_file_problem
from tests.rules.builder import standard
from tests.rules.cases_inventory import make_socket

SECONDS = 10
"""Upper bound for every command here (they take about one second: interpreter start and imports)."""
RSS_MB = 300


def _block_device() -> str | None:
    try:
        names = sorted(os.listdir("/dev"))
    except OSError:
        return None
    for name in names:
        path = os.path.join("/dev", name)
        try:
            if stat.S_ISBLK(os.stat(path).st_mode):
                return path
        except OSError:
            continue
    return None


def _makers(tmp: Path) -> dict[str, Callable[[Path], None]]:
    """How to turn a path into each kind of special file (links point out of the log dir, into ``tmp``)."""
    pipe = tmp / "pipe"
    if not pipe.exists():
        os.mkfifo(pipe)
    makers: dict[str, Callable[[Path], None]] = {
        "fifo": os.mkfifo,
        "socket": make_socket,
        "char-device": lambda p: p.symlink_to("/dev/zero"),
        "link-to-fifo": lambda p: p.symlink_to(pipe),
    }
    block = _block_device()
    if block is not None:
        makers["block-device"] = lambda p: p.symlink_to(block)
    return makers


# Every kind of file the auditor reads, as a special file of each type: a FIFO, directly and through a
# link, for the ones read first (segments, KRaft snapshot, meta.properties, checkpoints).
SPECIALS = {
    "meta.properties": "fifo",
    "replication-offset-checkpoint": "socket",
    "recovery-point-offset-checkpoint": "char-device",
    "log-start-offset-checkpoint": "link-to-fifo",
    "cleaner-offset-checkpoint": "block-device",
    ".kafka_cleanshutdown": "fifo",
    "orders-0/00000000000000000015.log": "fifo",
    "orders-0/00000000000000000099.log": "link-to-fifo",
    "orders-0/00000000000000000000.index": "char-device",
    "orders-0/00000000000000000000.timeindex": "fifo",
    "orders-0/00000000000000000000.txnindex": "socket",
    "orders-0/00000000000000000030.snapshot": "fifo",
    "orders-0/leader-epoch-checkpoint": "link-to-fifo",
    "orders-0/partition.metadata": "char-device",
    "__cluster_metadata-0/00000000000000000000.log": "fifo",
    "__cluster_metadata-0/00000000000000000001-0000000001.checkpoint": "fifo",
    "__cluster_metadata-0/quorum-state": "block-device",
}
SPECIAL_NAMES = list(SPECIALS)


def hostile_tree(tmp: Path, names: list[str] = SPECIAL_NAMES) -> tuple[Path, dict[str, str]]:
    """A log dir whose files ``names`` are special files (as in :data:`SPECIALS`; a socket stands in for a
    block device when /dev has none); returns it and name -> kind."""
    ld, _p = standard(tmp / "broker-1")
    root = ld.write()
    makers = _makers(tmp)
    made = {}
    for name in names:
        path = root / name
        if path.exists() or path.is_symlink():
            path.unlink()
        kind = SPECIALS[name] if SPECIALS[name] in makers else "socket"
        makers[kind](path)
        made[name] = kind
    return root, made


def _bounded(result) -> None:
    assert result.seconds < SECONDS, f"took {result.seconds:.1f} s"
    assert result.peak_rss_mb < RSS_MB, f"peak RSS {result.peak_rss_mb:.0f} MB"
    assert "Traceback" not in result.stderr, result.stderr


def test_scan_reports_every_special_file_and_opens_none(tmp_path, bounded):
    root, made = hostile_tree(tmp_path)
    outside = tmp_path / "elsewhere.index"
    index = root / "orders-0" / "00000000000000000015.index"
    index.rename(outside)
    index.symlink_to(outside)
    res = bounded(["scan", str(root), "--format", "json"], timeout=60)
    _bounded(res)
    assert res.returncode == 1, res.stderr  # error findings; nothing unreadable (that would be 2)
    findings = json.loads(res.stdout)["findings"]
    special = {f["evidence"]["file"]: f for f in findings if f["code"] == "KA515"}
    assert set(special) == {str(root / name) for name in made}
    for name, kind in made.items():
        evidence = special[str(root / name)]["evidence"]
        if kind == "fifo":
            assert evidence["fileType"] == "a FIFO (named pipe)" and "linkTarget" not in evidence
        elif kind == "link-to-fifo":
            assert evidence["fileType"] == "a FIFO (named pipe)"
            assert evidence["resolvedTarget"] == str(tmp_path / "pipe")
        elif kind == "char-device":
            assert evidence["fileType"] == "a character device" and evidence["linkTarget"] == "/dev/zero"
        elif kind == "block-device":
            assert evidence["fileType"] == "a block device"
        else:
            assert evidence["fileType"] == "a socket"
    assert not [f for f in findings if f["code"] in ("KA001", "KA002")], "a special file was opened"
    links = [f for f in findings if f["code"] == "KA516"]
    assert len(links) == 1 and links[0]["evidence"]["links"][0]["resolvedTarget"] == str(outside)


def test_dump_fails_fast_on_each_special_file(tmp_path, bounded):
    root, made = hostile_tree(tmp_path)
    zero = tmp_path / "00000000000000000000.log"  # an endless read if it were ever opened
    zero.symlink_to("/dev/zero")
    files = [str(root / name) for name in made] + [str(zero)]
    res = bounded(["dump", "--deep", *files], timeout=60)
    _bounded(res)
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if line.startswith("kafka-auditor: error:")]
    assert len(lines) == len(files), res.stderr
    for path, line in zip(files, lines, strict=True):
        assert line.startswith(f"kafka-auditor: error: {path}: byte 0: is a ")
        assert line.endswith("not a regular file")
    assert lines[-1] == (
        f"kafka-auditor: error: {zero}: byte 0: is a character device (through a symbolic link), "
        "not a regular file"
    )


def test_extract_and_audit_planning_never_open_special_files(tmp_path, bounded):
    """``extract`` (and ``audit``'s driver-side planning, the same reader of root files) on a log dir whose
    partition files are special files finishes; a special meta.properties is refused with one line naming
    it, before any partition is planned."""
    partition_files = [n for n in SPECIAL_NAMES if "/" in n]
    good, _made = hostile_tree(tmp_path / "a", partition_files)
    bad, _made = hostile_tree(tmp_path / "b")
    code = f"""
from auditor.observe.extract import extract_log_dir
from auditor.spark.extract import plan_raw
from auditor.spark.inputs import Source
from parsers.errors import ParseError
counts = extract_log_dir({str(good)!r}, {str(tmp_path / "a-extract")!r})
print(counts["batch"] > 0, counts["errors"])
try:
    extract_log_dir({str(bad)!r}, {str(tmp_path / "b-extract")!r})
except ParseError as exc:
    print(exc)
infos, tasks, problems = plan_raw([Source("raw", {str(bad)!r})])
print(len(infos), len(tasks), *problems, sep="\\n")
"""
    res = bounded([sys.executable, "-c", code], timeout=60)
    _bounded(res)
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0].startswith("True ") and (tmp_path / "a-extract" / "batch.parquet").is_file()
    # the special segments are named as unreadable (the replica is incomplete from there), never read
    assert "00000000000000000015.log: is a FIFO (named pipe), not a regular file" in out[0]
    meta = bad / "meta.properties"
    reason = f"{meta}: byte 0: {regular_file_problem(meta)}"
    assert out[1] == f"{bad}: not a broker log directory: {reason}"
    assert sorted(p.name for p in tmp_path.iterdir() if "extract" in p.name) == ["a-extract"]  # nothing of b
    assert out[2:] == ["0", "0", f"{bad}: {reason}; skipped"]


def test_meta_properties_naming_no_node(tmp_path, bounded):
    cases = {
        "empty": (b"", "is empty (0 bytes)"),
        "comments-only": (b"#\n#Sat Nov 21 04:55:32 UTC 2026\n   \n", "holds no properties at all"),
        "v0-without-broker-id": (b"version=0\ncluster.id=vyF_svkNTCmuElFZJ9FAng\n", "has no broker.id"),
    }
    roots = {}
    for name, (data, _reason) in cases.items():
        ld, _p = standard(tmp_path / name)
        roots[name] = ld.write()
        (roots[name] / "meta.properties").write_bytes(data)
    res = bounded(["scan", *map(str, roots.values()), "--format", "json", "--select", "KA304"], timeout=60)
    _bounded(res)
    assert res.returncode == 1, res.stdout + res.stderr
    findings = {f["file"]: f for f in json.loads(res.stdout)["findings"]}
    assert len(findings) == len(cases)
    for name, (_data, reason) in cases.items():
        finding = findings[str(roots[name] / "meta.properties")]
        assert finding["severity"] == "error" and reason in finding["message"], finding


# ------------------------------------------------------------------------------------------ in process


class _Blocked(Exception):
    pass


@pytest.fixture
def alarm():
    """Fail (instead of hanging) when an in-process call blocks for more than 5 s."""

    def ring(signum, frame):
        raise _Blocked("blocked")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_open_regular_refuses_every_special_file(tmp_path, alarm):
    makers = _makers(tmp_path)
    for kind, make in makers.items():
        path = tmp_path / f"{kind}.log"
        make(path)
        problem = regular_file_problem(path)
        assert problem is not None and problem.endswith("not a regular file"), (kind, problem)
        for reader in (open_regular, read_regular):
            with pytest.raises(NotRegularFile) as exc:
                reader(path)
            assert isinstance(exc.value, ParseError) and isinstance(exc.value, OSError)
            assert exc.value.path == str(path) and exc.value.offset == 0 and exc.value.strerror == problem
    dangling = tmp_path / "dangling.log"
    dangling.symlink_to(tmp_path / "nowhere")
    assert regular_file_problem(dangling) == "dangling symbolic link"
    with pytest.raises(OSError):
        open_regular(dangling)
    regular = tmp_path / "regular.log"
    regular.write_bytes(b"abc")
    assert regular_file_problem(regular) is None and read_regular(regular, 2) == b"ab"
