"""KA0xx: findings the scan engine emits itself (no check function: they are about the scan, not the data)."""

from __future__ import annotations

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
    missing. The evidence holds the check's code and the error.
    Why it matters: the input is unusual enough to break an assumption of the auditor; the other checks
    still ran, but this one said nothing.
    What to do: report the evidence (rule code, error) with the file named in the finding; run
    ``kafka-auditor dump`` on that file to see its contents. The command exits with status 2.
    References: none (auditor behaviour).
    """,
)
