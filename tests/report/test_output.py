"""Report files are written the way a daemon on the same host reads them: the umask's mode, never replacing a
device or FIFO given as --output."""

from __future__ import annotations

import os
import stat

from auditor.report.output import write_file


def test_a_report_file_gets_the_umasks_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_file(tmp_path / "r.prom", "x 1\n")
        os.umask(0o027)
        write_file(tmp_path / "s.prom", "x 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.prom").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "s.prom").stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kafka-auditor-")]


def test_a_fifo_output_is_written_to_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the reader
        with open(fifo, encoding="utf-8") as fh:
            os._exit(0 if fh.read() == "hello\n" else 1)
    write_file(fifo, "hello\n")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert stat.S_ISFIFO(fifo.stat().st_mode)
