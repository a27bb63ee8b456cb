"""Writing a report to stdout or ``--output FILE`` (shared by ``scan`` and ``audit``).

A report file is written to a temporary name beside it and renamed into place (atomic for cron jobs and the
Prometheus textfile collector). It is never written inside a directory being audited:
:func:`check_output_path` refuses that before any work starts.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from auditor.layout.durable import write_and_replace
from auditor.report import render
from auditor.report.model import Report


def enclosing(path: str | os.PathLike, directories: Iterable[str | os.PathLike]) -> str | os.PathLike | None:
    """The first of ``directories`` that is ``path`` or holds it (links resolved), else None: where a file
    written by a command would land inside the evidence."""
    target = os.path.realpath(path)
    for d in directories:
        real = os.path.realpath(d)
        if target == real or target.startswith(real.rstrip(os.sep) + os.sep):
            return d
    return None


def check_output_path(output: Path | None, protected: Iterable[str | os.PathLike]) -> str | None:
    """A usage-error message when ``output`` would land inside one of the ``protected`` directories (the
    evidence) or cannot be written; None when it is fine."""
    if output is None or str(output) == "-":
        return None
    target = os.path.abspath(os.fspath(output))
    inside = enclosing(target, protected)
    if inside is not None:
        return f"--output {output} is inside the scanned directory {inside}; write the report elsewhere"
    parent = os.path.dirname(target) or "."
    if not os.path.isdir(parent):
        return f"--output {output}: directory {parent} does not exist"
    if os.path.isdir(target):
        return f"--output {output} is a directory"
    return None


def emit(
    write: Callable[[TextIO, bool | None], None], output: Path | None, *, color: bool | None = None
) -> None:
    """Call ``write(stream, color)`` on stdout (colour decided by the terminal) or into ``output``, written
    to a temporary file beside it and renamed into place (no colour)."""
    if output is None or str(output) == "-":
        try:
            write(sys.stdout, color)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    buf = io.StringIO()
    write(buf, False if color is None else color)
    write_file(output, buf.getvalue())


def umask() -> int:
    """The process's umask (read without changing it for longer than the call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(output: str | os.PathLike, text: str) -> None:
    """``text`` into ``output`` the way a daemon on the same host can read it: a temporary file beside it with
    the mode a new file gets from the umask (``0666 & ~umask``; node_exporter runs as its own user), written,
    fsynced, renamed into place (atomic: a reader never sees half a file), then the directory fsynced. A
    target that exists and is not a regular file (``/dev/null``, a FIFO, ``/dev/stdout``) is written to
    directly, never replaced."""
    target = os.path.abspath(os.fspath(output))
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    directory = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(prefix=".kafka-auditor-", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~umask())
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    write_and_replace(fd, tmp, target, text)
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename is done
    finally:
        os.close(dir_fd)


def write_report(report: Report, fmt: str, output: Path | None, *, color: bool | None = None) -> None:
    """Render ``report`` in ``fmt`` to stdout or atomically to ``output``."""
    emit(lambda out, c: render(report, fmt, out, color=c), output, color=color)
