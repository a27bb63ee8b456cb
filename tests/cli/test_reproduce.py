"""``kafka-auditor reproduce`` refusing what it cannot do, without a broker: each refusal is one line naming
the file (and line), exit 2, nothing on stdout, no traceback; Ctrl-C while it waits on a cluster exits 130."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.reproduce.rows import parquet_row, write_jsonl

EXE = str(Path(sys.executable).with_name("kafka-auditor"))
NOWHERE = "127.0.0.1:1"  # nothing listens on port 1: refused at once


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "reproduce", *args], capture_output=True, text=True, timeout=timeout)


def one_error(res: subprocess.CompletedProcess[str]) -> str:
    """The only stderr line of a refused run (exit 2, nothing on stdout, no traceback), without its prefix."""
    assert res.returncode == 2, res.stderr
    assert res.stdout == "" and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.splitlines()
    return line


@pytest.fixture
def lost(tmp_path) -> Path:
    return write_jsonl(tmp_path / "lost-records.jsonl", [parquet_row(offset=o) for o in (1, 2, 3)])


def test_without_confluent_kafka_it_names_the_extra(tmp_path, lost):
    runner = tmp_path / "without_confluent_kafka.py"
    runner.write_text(
        "import sys\n"
        "class Absent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'confluent_kafka':\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "sys.argv = ['kafka-auditor', *sys.argv[1:]]\n"
        "from auditor.cli import main\n"
        "main()\n"
    )
    res = subprocess.run(
        [sys.executable, str(runner), "reproduce", str(lost), "-b", NOWHERE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert one_error(res) == (
        "kafka-auditor: error: `reproduce` needs confluent-kafka: pip install 'kafka-auditor[reproduce]'"
    )


def _not_json(path: Path) -> int:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    return 2


def _not_the_schema(path: Path) -> int:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2].replace('"partition": 0', '"partition": "zero"'))
    return 3


@pytest.mark.parametrize("damage", [_not_json, _not_the_schema])
def test_a_bad_line_is_named(lost, damage):
    number = damage(lost)
    line = one_error(run(str(lost), "-b", NOWHERE))
    assert line.startswith(f"kafka-auditor: error: {lost} line {number}: "), line


def test_a_missing_file_or_an_export_directory_without_it(tmp_path):
    assert one_error(run(str(tmp_path / "gone.jsonl"), "-b", NOWHERE)) == (
        f"kafka-auditor: error: {tmp_path / 'gone.jsonl'}: no such file"
    )
    assert one_error(run(str(tmp_path), "-b", NOWHERE)).startswith(
        f"kafka-auditor: error: {tmp_path}: no lost-records.jsonl in this directory"
    )


def test_an_unreachable_cluster(lost):
    started = time.monotonic()
    line = one_error(run(str(lost), "-b", NOWHERE, "--timeout", "1"))
    assert line.startswith(
        f"kafka-auditor: error: {lost}: cannot reach --bootstrap-server {NOWHERE} within 1 s"
    )
    assert "Connection refused" in line and time.monotonic() - started < 60


@pytest.mark.parametrize(
    "setting,message",
    [
        ("nonsense", "--config 'nonsense': give KEY=VALUE (a librdkafka setting)"),
        ("acks=1", "--config acks: set by the command itself, it cannot be changed"),
        ("enable.idempotence=false", "--config enable.idempotence: set by the command itself"),
        ("no.such.setting=1", "cannot make a Kafka client: No such configuration property"),
    ],
)
def test_client_settings(lost, setting, message):
    line = one_error(run(str(lost), "-b", NOWHERE, "-X", setting))
    assert line.startswith(f"kafka-auditor: error: {message}"), line


def test_usage_errors_are_one_line(lost):
    line = one_error(run(str(lost)))
    assert line.startswith("kafka-auditor reproduce: error: Missing option '--bootstrap-server'"), line
    line = one_error(run("-b", NOWHERE))
    assert line.startswith("kafka-auditor: error: missing LOST_RECORDS"), line


def test_ctrl_c_while_waiting_on_the_cluster(lost):
    """A server that accepts connections and never answers: the command waits for the cluster's metadata;
    Ctrl-C then ends it at once with ``interrupted`` and exit 130."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    port = server.getsockname()[1]
    proc = subprocess.Popen(
        [EXE, "reproduce", str(lost), "-b", f"127.0.0.1:{port}", "--timeout", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert accepted.wait(60), "the command never connected"
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole foreground group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.close()
        for conn in held:
            conn.close()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "kafka-auditor: interrupted", err
    assert "Traceback" not in err and out == ""
