"""KA0xx: findings the scan engine emits itself (no check function: they are about the scan, not the data)."""

from __future__ import annotations

import os
import sys
import traceback

from auditor.findings import Severity
from auditor.rules.registry import declare

UNREADABLE = declare(
    "KA001",
    "scan.unreadable-file",
    Severity.ERROR,
    "A file or directory of the log dir could not be read",
    """
    What it finds: a file or directory the scan could not open or read (permission denied, I/O error), so
    none of the checks that need it ran.
    Why it matters: the audit is incomplete for that partition or log dir; a read error on a disk being
    audited may itself be the incident (a failing disk makes Kafka take the whole log dir offline through
    the LogDirFailureChannel).
    What to do: copy the log dir with a tool that reports read errors (e.g. ddrescue for a failing disk),
    fix permissions on the copy, and scan the copy. The command exits with status 2.
    References: KIP-112 (log dir failure handling).
    """,
)

CHECK_FAILED = declare(
    "KA002",
    "scan.check-failed",
    Severity.ERROR,
    "A check stopped on input it did not expect",
    """
    What it finds: a check raised an unexpected error on this partition or log dir, so its result is
    missing. The evidence holds the check's code, the error in one line (type and message) and where in
    the auditor it was raised; never a stack trace (set KAFKA_AUDITOR_DEBUG=1 to get one on stderr).
    Why it matters: the input is unusual enough to break an assumption of the auditor; the other checks
    still ran, but this one said nothing.
    What to do: report the evidence (rule code, error) with the file named in the finding; run
    ``kafka-auditor dump`` on that file to see its contents. The command exits with status 2.
    References: none (auditor behaviour).
    """,
)

DUPLICATE_BROKER_ID = declare(
    "KA003",
    "scan.duplicate-broker-id",
    Severity.WARNING,
    "Two scanned log dirs are copies of one log dir or of one broker",
    """
    What it finds: two scanned log dirs of one cluster with the same directory.id in meta.properties
    (copies of one log dir), or with the same node.id (broker.id) and the same live partitions where no
    distinct directory.ids mark them as JBOD dirs of one broker (copies of one broker). The evidence
    names both log dirs and the ids.
    Why it matters: a broker's log dirs each have their own directory.id (written at first start since
    3.7) and a partition lives in one of them only; two dirs sharing them are evidence copies taken at
    different moments, and per-broker totals or comparisons that mix them describe no real broker.
    ``kafka-auditor audit`` refuses such inputs, since merging them reads as false divergence and loss.
    What to do: nothing if the copies are meant (before/after an incident); audit each copy in its own run
    with the other brokers of the same moment.
    References: KIP-858 (directory.id; MetaPropertiesEnsemble.verify: "Duplicate directory ID"), KIP-631,
    KIP-113 (JBOD), spec §12.2.
    """,
)


# ------------------------------------------------------------------------------------- describing errors

DEBUG_ENV = "KAFKA_AUDITOR_DEBUG"
"""Set (to anything) to get full tracebacks on stderr; findings and error lines stay one line."""
MAX_ERROR_CHARS = 300
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_FILE_ATTRIBUTES = ("filename", "path")
_FILE_LOCALS = ("path", "file", "filename", "file_path", "seg_path", "segment_path")


def describe_error(exc: BaseException) -> str:
    """One line for ``exc``: its type and the first line of its message (py4j's "An error occurred while
    calling ..." keeps the Java exception line after it), control characters made visible, at most
    :data:`MAX_ERROR_CHARS` characters. Never a stack trace."""
    from auditor.report.escape import visible

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
