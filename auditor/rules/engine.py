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
    KIP-113 (JBOD).
    """,
)
