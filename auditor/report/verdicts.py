"""The answer first: one verdict per partition that needs attention, with numbered next steps, from an
audit's findings and consequences (the report's ``elections``, ``transactions`` and ``groups`` sections).

A verdict says, in Kafka's words, whether the replicas are consistent, lagging or diverged; the committed
records lost (how many, their offsets, the brokers that still hold them, bytes); what was not checked and
why; the current leader, Kafka's choice and the candidate that loses the least committed data, each with
its cost; and the next steps as commands filled in with the partition's topic, partition, brokers and
offsets. Every other partition is counted in one line. JSON: the report's ``verdicts`` array; text and
HTML: the first thing printed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.findings import Finding, Severity

DIVERGED = ("KA601", "KA710", "KA711")
"""Codes of a divergence between replicas (the loss codes include it)."""
LAGGING = ("KA630",)
MISSING = "KA611"
NOT_CHECKED = ("KA611", "KA691", "KA609")
BOOTSTRAP = "HOST:PORT"
"""The bootstrap servers of the commands (the audit reads files, it does not know them)."""


SAME_FACT = {"KA710": ("KA601", "KA702", "KA704", "KA711", "KA712"), "KA711": ("KA601", "KA712")}
"""A loss finding is the primary of the findings about the same offsets of the same replica: the divergence
that causes it and the high watermarks that promised the records."""


def link_same_facts(findings: list[Finding]) -> None:
    """Link (``related``: ``{"fingerprint", "code", "primary"}``) the findings of one fact: every finding of
    :data:`SAME_FACT` about the same replica (cluster, topic, partition, broker) whose offsets overlap a
    primary's. Fingerprints are unchanged (a link names no broker); each finding keeps its code, severity
    and exit-code weight."""
    by_replica: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.topic is not None and f.offset_start is not None:
            by_replica.setdefault((_key(f), f.broker), []).append(f)
    for group in by_replica.values():
        for primary in (f for f in group if f.code in SAME_FACT):
            lo, hi = (
                primary.offset_start,
                primary.offset_end if primary.offset_end is not None else primary.offset_start,
            )
            for other in group:
                if other is primary or other.code not in SAME_FACT[primary.code]:
                    continue
                o_lo = other.offset_start
                o_hi = other.offset_end if other.offset_end is not None else o_lo
                if o_lo <= hi and lo <= o_hi:
                    _link(primary, {"fingerprint": other.fingerprint(), "code": other.code})
                    _link(
                        other, {"fingerprint": primary.fingerprint(), "code": primary.code, "primary": True}
                    )


def _link(f: Finding, link: dict[str, Any]) -> None:
    """Add ``link`` to ``f.related`` once (a report built again from the same findings adds nothing)."""
    if link not in f.related:
        f.related.append(link)


def _key(f: Finding) -> tuple[str, str, int]:
    return (
        f.evidence.get("cluster") or "",
        f.topic or "",
        int(f.partition if f.partition is not None else -1),
    )


def _ranges(findings: Iterable[Finding]) -> list[list[int]]:
    return sorted([f.offset_start, f.offset_end] for f in findings if f.offset_start is not None)


def _span(ranges: list[list[int]]) -> str:
    return ", ".join(f"{lo}..{hi}" if hi not in (None, lo) else str(lo) for lo, hi in ranges)


def _candidate(c: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "broker": c["broker"],
        "committedRecordsLost": c.get("committedRecordsLost", 0),
        "recordsLost": c.get("recordsLost", 0),
        "bytesLost": c.get("bytesLost", 0),
    }


def _leaders(election: Mapping[str, Any] | None, partitions: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The current leader, Kafka's choice (what its election rules rank first) and the candidate that loses
    the least committed data, each with what electing it costs."""
    current = next((r["broker"] for r in partitions if r.get("role") == "leader"), None)
    if election is None:
        return {
            "current": None if current is None else {"broker": current},
            "kafkaChoice": None,
            "leastLoss": None,
        }
    candidates = election.get("candidates") or []
    by_broker = {c["broker"]: c for c in candidates}
    return {
        "current": _candidate(by_broker.get(current))
        or ({"broker": current} if current is not None else None),
        "kafkaChoice": _candidate(by_broker.get(election.get("recommended"))),
        "leastLoss": _candidate(by_broker.get(election.get("leastLoss"))),
    }


def _audit_command(inputs: list[str], directory: str) -> str:
    return shlex.join(["kafka-auditor", "audit", *inputs, "--export-lost", directory])


def _reproduce_command(jsonl: str) -> str:
    return shlex.join(["kafka-auditor", "reproduce", jsonl, "--bootstrap-server", BOOTSTRAP])


def next_steps(
    verdict: dict[str, Any], findings: list[Finding], inputs: list[str], exported: str | None = None
) -> list[str]:
    """The numbered next steps of one verdict, as commands where Kafka's tools (or ``kafka-auditor``) do the
    step; ``exported``: the ``lost-records.jsonl`` the audit wrote (``--export-lost``), else None."""
    topic, partition = verdict["topic"], verdict["partition"]
    steps: list[str] = []
    lost = verdict["committedLost"]
    if lost["records"]:
        holders = ", ".join(str(b) for b in lost["brokers"])
        steps.append(
            f"Do not restart broker(s) {holders} and do not let them fetch {topic}-{partition} from the "
            "leader before the records are exported: on start its follower truncates to the leader's log and "
            f"deletes the {lost['records']} committed records (offsets {_span(lost['offsets'])})."
        )
        if exported is None:
            directory = f"./lost-{topic}-{partition}"
            steps.append(f"Export them: {_audit_command(inputs, directory)}")
            exported = f"{directory}/lost-records.jsonl"
        steps.append(
            f"Produce them again to {topic} partition {partition} with their key, value, headers and "
            "timestamp (an idempotent producer): run this dry run, then again with --execute, then once "
            f"more to read them back: {_reproduce_command(exported)}"
        )
    leaders = verdict["leaders"]
    current, least = leaders.get("current"), leaders.get("leastLoss")
    if (
        least is not None
        and current is not None
        and least["broker"] != current.get("broker")
        and least["committedRecordsLost"] < current.get("committedRecordsLost", 0)
    ):
        entry = {"topic": topic, "partition": partition, "replicas": [least["broker"]]}
        reorder = _json_string({"version": 1, "partitions": [entry]}).replace("]}]}", ",...]}]}")
        steps.append(
            f"Broker {least['broker']} loses {least['committedRecordsLost']} committed records if elected, "
            f"the current leader {current['broker']} {current.get('committedRecordsLost', 0)}: to make "
            f"broker {least['broker']} lead, put it first in the replica list and run a preferred election: "
            f"kafka-reassign-partitions.sh --bootstrap-server {BOOTSTRAP} --reassignment-json-file "
            f"reorder.json --execute (reorder.json: {reorder}); kafka-leader-election.sh --bootstrap-server "
            f"{BOOTSTRAP} --election-type PREFERRED --topic {topic} --partition {partition}"
        )
    for f in findings:
        if f.code == "KA713" and f.evidence.get("abort"):
            steps.append(f"Abort the hanging transaction from offset {f.offset_start}: {f.evidence['abort']}")
    groups: dict[str, Finding] = {}
    for f in findings:
        if f.code in ("KA720", "KA721") and f.evidence.get("group"):
            groups.setdefault(f.evidence["group"], f)
    for group, f in sorted(groups.items()):
        to = f.evidence.get("lostFrom", f.evidence.get("rereadEarliest"))
        if to is None:
            continue
        steps.append(
            f"Consumer group '{group}' read records that are gone: once they are produced again, move it "
            f"back: kafka-consumer-groups.sh --bootstrap-server {BOOTSTRAP} --group {shlex.quote(group)} "
            f"--topic {topic}:{partition} --reset-offsets --to-offset {to} --execute"
        )
    missing = sorted({b for f in findings if f.code == MISSING for b in f.evidence.get("missing", [])})
    if missing:
        who = ", ".join(str(b) for b in missing)
        steps.append(
            f"Audit the replicas of broker(s) {who} too: kafka-auditor audit {shlex.join(inputs)} "
            f"<the log dirs of broker(s) {who}>"
        )
    if verdict["state"] == "lagging" and not steps:
        steps.append(
            "Nothing is lost: the follower's log is a prefix of the leader's. Check that it fetches again "
            f"(kafka-topics.sh --bootstrap-server {BOOTSTRAP} --describe --topic {topic}: ISR)."
        )
    return steps


def _json_string(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def partition_verdict(
    key: tuple[str, str, int],
    findings: list[Finding],
    partitions: list[Mapping[str, Any]],
    election: Mapping[str, Any] | None,
    inputs: list[str],
    exported: str | None = None,
) -> dict[str, Any]:
    """The verdict of one partition from its findings (warning and above), replica rows and election;
    ``exported``: the ``lost-records.jsonl`` of ``--export-lost``, named by the next steps."""
    cluster, topic, partition = key
    codes = {f.code for f in findings}
    compared = len(partitions)
    if codes & set(DIVERGED):
        state = "diverged"
    elif MISSING in codes and compared < 2:
        state = "not checked"
    elif codes & set(LAGGING):
        state = "lagging"
    else:
        state = "consistent"
    losses = [f for f in findings if f.code == "KA710"]
    not_checked = []
    for f in findings:
        if f.code in NOT_CHECKED:
            not_checked.append(f.message)
    verdict = {
        "cluster": cluster,
        "topic": topic,
        "partition": partition,
        "state": state,
        "severity": max(f.severity for f in findings).label,
        "committedLost": {
            "records": sum(int(f.evidence.get("records") or f.records or 0) for f in losses),
            "offsets": _ranges(losses),
            "brokers": sorted({f.broker for f in losses if f.broker is not None}),
            "bytes": sum(int(f.evidence.get("bytes") or f.bytes or 0) for f in losses),
        },
        "notChecked": not_checked,
        "replicasCompared": compared,
        "leaders": _leaders(election, list(partitions)),
        "findings": sorted(f.fingerprint() for f in findings),
    }
    verdict["nextSteps"] = next_steps(verdict, findings, inputs, exported)
    return verdict


def audit_verdicts(
    findings: Iterable[Finding],
    partitions: Iterable[Mapping[str, Any]],
    elections: Iterable[Mapping[str, Any]],
    inputs: list[str],
    exported: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The verdicts of an audit (partitions with a finding at warning or above, most severe first) and how
    many other partitions were compared and found consistent; ``exported``: the ``lost-records.jsonl``
    ``--export-lost`` wrote (the next steps produce its records again), else None."""
    by_partition: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.topic is not None and f.partition is not None and f.severity >= Severity.WARNING:
            by_partition.setdefault(_key(f), []).append(f)
    rows: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in partitions:
        rows.setdefault((r.get("cluster") or "", r["topic"], int(r["partition"])), []).append(r)
    election_of = {(e.get("cluster") or "", e["topic"], int(e["partition"])): e for e in elections}
    verdicts = [
        partition_verdict(key, fs, rows.get(key, []), election_of.get(key), inputs, exported)
        for key, fs in by_partition.items()
    ]
    verdicts.sort(
        key=lambda v: (-int(Severity.parse(v["severity"])), v["cluster"], v["topic"], v["partition"])
    )
    consistent = len(set(rows) - set(by_partition))
    return verdicts, consistent


# ------------------------------------------------------------------------------------------------ text

_ROLES = (
    ("current leader", "current"),
    ("Kafka's choice", "kafkaChoice"),
    ("least committed loss", "leastLoss"),
)


def _leader_bits(leaders: Mapping[str, Any]) -> list[str]:
    """``current leader broker 2 = Kafka's choice (electing it loses 250 committed records)``: the roles of
    each named broker, with its cost."""
    by_broker: dict[int, list[str]] = {}
    cost: dict[int, Any] = {}
    for label, name in _ROLES:
        c = leaders.get(name)
        if c is not None and c.get("broker") is not None:
            by_broker.setdefault(c["broker"], []).append(label)
            cost[c["broker"]] = c.get("committedRecordsLost")
    out = []
    for broker, labels in by_broker.items():
        text = f"{labels[0]} broker {broker}" + "".join(f" = {label}" for label in labels[1:])
        if cost[broker] is not None:
            text += f" (electing it loses {cost[broker]} committed records)"
        out.append(text)
    return out


@dataclass(frozen=True)
class VerdictBlock:
    """One verdict as people read it: its ``head`` line, the lines under it, its numbered next steps and
    its severity (None: a line that is no verdict, as the count of the others)."""

    head: str
    details: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    severity: str | None = None

    def lines(self) -> list[str]:
        return [
            self.head,
            *(f"  {d}" for d in self.details),
            *(f"  {i}. {s}" for i, s in enumerate(self.steps, 1)),
        ]


def verdict_blocks(
    verdicts: list[Mapping[str, Any]], consistent: int, *, others: str | None = None
) -> list[VerdictBlock]:
    """One block per verdict (a partition; for ``report`` a partition, topic, broker or the captures: its
    ``subject``, with its ``facts``), then the count of the others (``others``: that line as given)."""
    out: list[VerdictBlock] = []
    for v in verdicts:
        where = v.get("subject") or f"{v['topic']}-{v['partition']}"
        lost = v.get("committedLost") or {"records": 0}
        head = f"{where}: {v['state'].upper()} ({v['severity']})"
        if lost["records"]:
            holders = ", ".join(str(b) for b in lost["brokers"])
            head += (
                f": {lost['records']} committed records lost (offsets {_span(lost['offsets'])}, "
                f"{lost['bytes']} bytes), still held by broker(s) {holders}"
            )
        details = list(v.get("facts") or [])
        bits = _leader_bits(v.get("leaders") or {})
        if bits:
            details.append("; ".join(bits))
        details += [f"not checked: {why}" for why in v.get("notChecked") or []]
        out.append(VerdictBlock(head, tuple(details), tuple(v["nextSteps"]), v["severity"]))
    if others is not None:
        out.append(VerdictBlock(others))
    elif consistent or not verdicts:
        other = "other " if verdicts else ""
        out.append(VerdictBlock(f"{consistent} {other}partition(s): consistent, nothing at warning or above"))
    return out


def verdict_lines(
    verdicts: list[Mapping[str, Any]], consistent: int, *, others: str | None = None
) -> list[str]:
    """The verdicts as plain lines (they wrap at any width; numbers are never cut): each block of
    :func:`verdict_blocks`, its details indented, its next steps numbered."""
    return [line for block in verdict_blocks(verdicts, consistent, others=others) for line in block.lines()]


# ------------------------------------------------------------------------------------ report (history)

HISTORY_STATES: dict[str, str] = {
    "KA804": "diverged",
    "KA801": "truncated below the high watermark",
    "KA805": "leader-epoch cache rewritten",
    "KA809": "cluster.id changed",
    "KA810": "directory.id changed",
    "KA814": "re-created",
    "KA802": "log start offset went back",
    "KA803": "recovery point went back",
    "KA806": "lagging",
    "KA807": "gone from a broker",
    "KA811": "missing",
    "KA812": "capture malformed",
    "KA813": "capture refused",
    "KA808": "back on a broker",
}
"""The state a history verdict names: that of the first code in this order among its findings."""


def _subject(f: Finding) -> tuple:
    """What a history finding is about: a partition, a topic (a topic id changes for every partition of a
    re-created topic), a broker, or the captures themselves."""
    cluster = str(f.evidence.get("cluster") or "")
    if f.topic is not None and f.partition is not None and f.code != "KA814":
        return ("partition", cluster, f.topic, int(f.partition))
    if f.topic is not None:
        return ("topic", cluster, f.topic)
    if f.broker is not None:
        return ("broker", cluster, int(f.broker))
    return ("captures", cluster)


def _label(subject: tuple, clusters: int) -> str:
    kind, cluster = subject[0], subject[1]
    text = {
        "partition": lambda: f"{subject[2]}-{subject[3]}",
        "topic": lambda: f"topic {subject[2]}",
        "broker": lambda: f"broker {subject[2]}",
        "captures": lambda: "captures",
    }[kind]()
    return text + (f" (cluster {cluster})" if clusters > 1 and cluster else "")


def _capture_time(value: Any) -> str | None:
    if isinstance(value, Mapping):
        value = value.get("time")
    return value if isinstance(value, str) else None


def between(f: Finding) -> str:
    """``between the captures of A and B`` (the evidence's ``before`` and ``after``), or ``by the capture
    of T`` (the finding's capture time)."""
    a = _capture_time(f.evidence.get("before"))
    b = _capture_time(f.evidence.get("after"))
    if a and b:
        return f"between the captures of {a} and {b}"
    return f"by the capture of {f.time}" if f.time else "in the captures"


def _offsets(f: Finding) -> str:
    if f.offset_start is None:
        return ""
    end = f.offset_end if f.offset_end not in (None, f.offset_start) else None
    return f"{f.offset_start}..{end}" if end is not None else str(f.offset_start)


def history_fact(f: Finding) -> str:
    """One line of a history verdict: what ``f`` says, short and in Kafka's words (its message for the
    codes without a short form)."""
    b = f"broker {f.broker}"
    when = between(f)
    span = _offsets(f)
    short = {
        "KA801": lambda: (
            f"the high watermark on {b} went backwards {when}: committed offsets {span} truncated"
        ),
        "KA804": lambda: (
            f"leader epochs forked at offset {f.offset_start}: {b}'s committed records from there are not "
            "the ones the newer epoch's leader kept"
        ),
        "KA805": lambda: f"the leader-epoch cache on {b} was rewritten below its high watermark {when}",
        "KA802": lambda: f"the log start offset on {b} went backwards {when} (offsets {span})",
        "KA803": lambda: f"the recovery point on {b} went backwards with no restart {when} (offsets {span})",
        "KA806": lambda: (
            f"the high watermark on {b} stayed "
            f"{(f.offset_end or 0) - (f.offset_start or 0) + 1} records behind the highest replica's "
            f"({f.time})"
        ),
        "KA807": lambda: f"gone from {b} {when}",
        "KA808": lambda: f"back on {b} {when}",
    }
    if f.code in short and f.broker is not None and (span or f.code in ("KA805", "KA807", "KA808")):
        return short[f.code]()
    return f.message


def history_steps(
    subject: tuple, findings: list[Finding], replicas: Mapping[tuple[str, str, int], list[int]]
) -> list[str]:
    """The next steps of one history verdict, as commands where Kafka's tools do the step."""
    codes = {f.code for f in findings}
    steps: list[str] = []
    first = findings[0]
    if subject[0] == "partition":
        _, cluster, topic, partition = subject
        where = f"{topic}-{partition}"
        brokers = replicas.get((cluster, topic, partition)) or sorted(
            {f.broker for f in findings if f.broker is not None}
        )
        who = ", ".join(map(str, brokers))
        if codes & {"KA801", "KA804", "KA805"}:
            fork = next((f for f in findings if f.code in ("KA801", "KA805")), first)
            steps.append(
                f"Copy the log dirs of the replicas of {where} (broker(s) {who}) before they truncate or "
                "retention deletes the segments, and audit the copies: kafka-auditor audit <the copied log "
                f"dirs> --export-lost {shlex.quote('./lost-' + where)}"
            )
            steps.append(
                f"Find the leader election {between(fork)} (KRaft PartitionChangeRecord with "
                "leaderRecoveryState RECOVERING) and whether unclean elections are allowed: "
                f"kafka-configs.sh --bootstrap-server {BOOTSTRAP} --describe --all --entity-type topics "
                f"--entity-name {shlex.quote(topic)} (unclean.leader.election.enable)"
            )
        if "KA806" in codes:
            lag = next(f for f in findings if f.code == "KA806")
            steps.append(
                f"Check that broker {lag.broker} fetches {where}: kafka-topics.sh --bootstrap-server "
                f"{BOOTSTRAP} --describe --topic {shlex.quote(topic)} (ISR), and its replica fetcher's MaxLag"
            )
        if "KA802" in codes:
            steps.append(
                f"Check whether the log dir of {where} was restored from a backup {between(first)}, and "
                "repeat the DeleteRecords requests made before (kafka-delete-records.sh)"
            )
        if "KA803" in codes and not codes & {"KA801", "KA804", "KA805"}:
            steps.append(
                f'Look for "Truncating partition {where}" in the broker\'s log {between(first)}, and for '
                "a changed log dir"
            )
        if "KA807" in codes:
            gone = next(f for f in findings if f.code == "KA807")
            steps.append(
                f"Check the reassignments and topic deletions {between(gone)} (kafka-reassign-partitions.sh, "
                f"the KRaft metadata) and broker {gone.broker}'s log dirs for -stray or -delete directories"
            )
    elif subject[0] == "topic" and "KA814" in codes:
        topic = subject[2]
        steps.append(
            f"Find who deleted and re-created topic {topic} {between(first)} (the KRaft metadata's "
            "RemoveTopicRecord and TopicRecord, the admin audit log); the records of the old topic are gone"
        )
        steps.append(
            f"Reset the consumer groups of {topic} to the new topic's offsets: kafka-consumer-groups.sh "
            f"--bootstrap-server {BOOTSTRAP} --group GROUP --topic {shlex.quote(topic)} --reset-offsets "
            "--to-earliest --execute"
        )
    elif subject[0] == "broker":
        broker = subject[2]
        if "KA809" in codes:
            steps.append(
                f"Find who formatted the log dirs of broker {broker} (kafka-storage.sh format) and check it "
                "belongs to the cluster it is now in: every replica it held before is lost on it"
            )
        if "KA810" in codes:
            steps.append(
                f"Check broker {broker}'s disk history (a replaced or reformatted volume) and that its "
                f"partitions were re-replicated: kafka-topics.sh --bootstrap-server {BOOTSTRAP} --describe "
                "--under-replicated-partitions"
            )
        if "KA811" in codes:
            steps.append(
                f"Check that broker {broker} runs and that its capture job ran and was ingested; if it was "
                "decommissioned, that its partitions were reassigned"
            )
        if codes & {"KA812", "KA813"}:
            steps.append(f"Look at the file named on broker {broker} and collect its capture again")
    elif codes & {"KA812", "KA813"}:
        steps.append("Check how the refused archive was made and who can write where archives are collected")
    return steps


def history_verdicts(
    findings: Iterable[Finding], replicas: Mapping[tuple[str, str, int], list[int]] | None = None
) -> list[dict[str, Any]]:
    """The verdicts of ``report``: one per partition, re-created topic, broker or set of captures with a
    finding at warning or above (near-identical findings as one fact), most severe first. ``replicas``: the
    brokers of each partition (its chart's), named by the next steps."""
    from auditor.report.facts import facts

    by_subject: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.severity >= Severity.WARNING:
            by_subject.setdefault(_subject(f), []).append(f)
    clusters = len({s[1] for s in by_subject})
    order = list(HISTORY_STATES)
    out = []
    for subject, fs in by_subject.items():
        fs.sort(key=lambda f: (-int(f.severity), order.index(f.code) if f.code in order else len(order)))
        state_code = min((f.code for f in fs), key=lambda c: order.index(c) if c in order else len(order))
        lines = [
            f"{fact.message} ({fact.where()})" if fact.grouped else history_fact(fact.first)
            for fact in facts(fs)
        ]
        out.append(
            {
                "subject": _label(subject, clusters),
                "kind": subject[0],
                "key": subject,
                "state": HISTORY_STATES.get(state_code, fs[0].name or state_code),
                "severity": max(f.severity for f in fs).label,
                "facts": lines,
                "partitions": sorted({(f.topic, f.partition) for f in fs if f.partition is not None}),
                "brokers": sorted({f.broker for f in fs if f.broker is not None}),
                "findings": sorted(f.fingerprint() for f in fs),
                "nextSteps": history_steps(subject, fs, replicas or {}),
            }
        )
    out.sort(key=lambda v: (-int(Severity.parse(v["severity"])), v["kind"] != "partition", str(v["key"])))
    return out


def history_verdict_blocks(
    findings: list[Finding],
    stats: Mapping[str, Any],
    replicas: Mapping[tuple[str, str, int], list[int]] | None = None,
) -> list[VerdictBlock]:
    """The verdict of ``report``: what was checked, one block per verdict, then how many partitions and
    brokers have nothing at warning or above (or nothing new, when findings were already reported or
    suppressed by the baseline)."""
    verdicts = history_verdicts(findings, replicas)
    partitions = {p for v in verdicts for p in v["partitions"]}
    brokers = {b for v in verdicts if v["kind"] == "broker" for b in v["brokers"]}
    head = f"Checked {stats.get('partitions', '?')} partition(s) on {stats.get('brokers', '?')} broker(s)"
    if stats.get("captures") is not None:
        head += f" over {stats['captures']} capture(s)"
    if stats.get("newestCapture"):
        head += f", the newest at {stats['newestCapture']}"
    if stats.get("since"):
        head += f"; findings captured since {stats['since']}"
    other_p = max(0, int(stats.get("partitions") or 0) - len(partitions))
    other_b = max(0, int(stats.get("brokers") or 0) - len(brokers))
    other = "other " if verdicts else ""
    left_out = int(stats.get("alreadyReported") or 0) + int(stats.get("suppressed") or 0)
    count = f"{other_p} {other}partition(s) and {other_b} {other}broker(s): "
    if left_out:
        why = []
        if stats.get("alreadyReported"):
            why.append(f"{stats['alreadyReported']} finding(s) already reported (--all shows them)")
        if stats.get("suppressed"):
            why.append(f"{stats['suppressed']} finding(s) suppressed by --baseline")
        count += f"nothing new at warning or above; {', '.join(why)}"
    else:
        count += "consistent, nothing at warning or above"
    return [VerdictBlock(head), *verdict_blocks(verdicts, 0, others=count)]


def history_verdict_lines(
    findings: list[Finding],
    stats: Mapping[str, Any],
    replicas: Mapping[tuple[str, str, int], list[int]] | None = None,
) -> list[str]:
    """:func:`history_verdict_blocks` as plain lines."""
    return [line for b in history_verdict_blocks(findings, stats, replicas) for line in b.lines()]
