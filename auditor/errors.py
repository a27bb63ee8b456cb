"""Unexpected errors described in one line (never a stack trace in a finding or on stderr), and where they
came from."""

from __future__ import annotations

import os
import sys
import traceback

from auditor.text import visible

DEBUG_ENV = "KAFKA_AUDITOR_DEBUG"
"""Set (to anything) to get full tracebacks on stderr; findings and error lines stay one line."""
MAX_ERROR_CHARS = 300
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FILE_ATTRIBUTES = ("filename", "path")
_FILE_LOCALS = ("path", "file", "filename", "file_path", "seg_path", "segment_path")


def describe_error(exc: BaseException) -> str:
    """One line for ``exc``: its type and the first line of its message (py4j's "An error occurred while
    calling ..." keeps the Java exception line after it), control characters made visible, at most
    :data:`MAX_ERROR_CHARS` characters. Never a stack trace."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if text.startswith("An error occurred while calling") and len(lines) > 1:
        text += " " + lines[1].lstrip(": ")
    line = visible(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def raised_at(exc: BaseException) -> str | None:
    """Where ``exc`` was raised, as one ``path:line in function`` (relative to the project for its own
    files): enough to report a bug, without the stack."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    path = os.path.abspath(code.co_filename)
    shown = os.path.relpath(path, _ROOT) if path.startswith(_ROOT + os.sep) else os.path.basename(path)
    return f"{shown}:{tb.tb_lineno} in {code.co_name}"


def error_file(exc: BaseException) -> str | None:
    """The input file ``exc`` is about, when known: a ``filename``/``path`` attribute of it or of an error
    it was raised from (``OSError``, the parsers' ``ParseError``), else a ``path``-like local variable of
    the innermost frame that has one (the file being read when an unexpected error happened)."""
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        for attr in _FILE_ATTRIBUTES:
            value = getattr(err, attr, None)
            if isinstance(value, (str, os.PathLike)) and os.fspath(value):
                return os.fspath(value)
        err = err.__cause__ or err.__context__
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for name in _FILE_LOCALS:
            value = frame.f_locals.get(name)
            if isinstance(value, (str, os.PathLike)) and os.fspath(value):
                return os.fspath(value)
    return None


def error_evidence(exc: BaseException) -> dict[str, str | None]:
    """KA002 evidence for ``exc``: ``error`` (:func:`describe_error`) and ``raisedAt`` (:func:`raised_at`).
    With :data:`DEBUG_ENV` set the full traceback also goes to stderr; it never goes into a finding."""
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return {"error": describe_error(exc), "raisedAt": raised_at(exc)}


_interrupted = [False]


def on_interrupt(signum: int, frame: object) -> None:
    """The CLI's SIGINT handler: say ``interrupted`` once on stderr, remember it (an error raised while
    Python waits on the Spark JVM is then the interruption, not a failure of the job), then interrupt as
    Python does (the command exits 130; files are written whole or not at all; the Spark JVM, a child that
    ignores SIGINT, ends when this process does)."""
    if not _interrupted[0]:
        _interrupted[0] = True
        sys.stderr.write("kafka-auditor: interrupted\n")
        sys.stderr.flush()
    raise KeyboardInterrupt


def keep_interrupt_handler() -> None:
    """Put :func:`on_interrupt` back once another handler took SIGINT over (pyspark's cancels the Spark jobs
    through py4j, a call that collides with the one Python is waiting on and logs errors; the process is
    ending anyway)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_interrupt)


def interrupted() -> bool:
    """Whether SIGINT arrived since the process started (:func:`on_interrupt`)."""
    return _interrupted[0]


def not_installed(module: str) -> bool:
    """True when ``module`` cannot be found (an optional extra that is not installed)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True
