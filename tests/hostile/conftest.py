"""Hostile inputs: each test builds its input inside the test (sparse files for the large ones) and bounds
the command's time and peak memory, measured on a subprocess (``ru_maxrss`` from ``wait4``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Bounded:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float


def run_bounded(
    args: list[str],
    *,
    timeout: float = 60,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
) -> Bounded:
    """Run ``python -m auditor.cli ARGS`` (or ``args`` verbatim when ``args[0]`` is an absolute path) in a
    fresh process; return its exit code, output, wall time and peak RSS in MB (of that process alone)."""
    cmd = args if args and os.path.isabs(args[0]) else [sys.executable, "-m", "auditor.cli", *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb", "NO_COLOR": "1", **(env or {})}
    start = time.monotonic()
    # A child spawned straight from this (large) pytest process inherits its RSS high-water mark: subprocess
    # uses vfork, so ru_maxrss would be max(pytest's peak, the command's). _LAUNCHER, a small process, forks
    # the command and reports the command's own ru_maxrss on a pipe; the process group is killed on timeout.
    rss_read, rss_write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(rss_write), *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=full_env,
        pass_fds=(rss_write,),
        start_new_session=True,
    )
    os.close(rss_write)
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(name: str, stream) -> None:
        for block in iter(lambda: stream.read(65536), b""):
            chunks[name].append(block)

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for t in readers:
        t.start()
    status, usage = 0, None
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            os.close(rss_read)
            proc.returncode = -9
            pytest.fail(f"{cmd} did not finish within {timeout} s")
        time.sleep(0.01)
    seconds = time.monotonic() - start
    with os.fdopen(rss_read, "rb") as fh:
        code, maxrss = (int(v) for v in fh.read().split())
    proc.returncode = code
    for t in readers:
        t.join(5)
    out = b"".join(chunks["out"]).decode("utf-8", "replace")
    err = b"".join(chunks["err"]).decode("utf-8", "replace")
    return Bounded(proc.returncode, out, err, seconds, maxrss / 1024)


_LAUNCHER = """
import os, sys
fd, cmd = int(sys.argv[1]), sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(cmd[0], cmd)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
os.write(fd, b"%d %d" % (code, usage.ru_maxrss))
"""


@pytest.fixture
def bounded():
    return run_bounded
