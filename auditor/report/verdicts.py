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


def verdict_lines(verdicts: list[Mapping[str, Any]], consistent: int) -> list[str]:
    """The verdicts as plain lines (they wrap at any width; numbers are never cut): one block per partition,
    then the count of the others."""
    out: list[str] = []
    for v in verdicts:
        where = f"{v['topic']}-{v['partition']}"
        lost = v["committedLost"]
        head = f"{where}: {v['state'].upper()} ({v['severity']})"
        if lost["records"]:
            holders = ", ".join(str(b) for b in lost["brokers"])
            head += (
                f": {lost['records']} committed records lost (offsets {_span(lost['offsets'])}, "
                f"{lost['bytes']} bytes), still held by broker(s) {holders}"
            )
        out.append(head)
        bits = _leader_bits(v["leaders"])
        if bits:
            out.append("  " + "; ".join(bits))
        for why in v["notChecked"]:
            out.append(f"  not checked: {why}")
        for i, step in enumerate(v["nextSteps"], 1):
            out.append(f"  {i}. {step}")
    if consistent or not verdicts:
        other = "other " if verdicts else ""
        out.append(f"{consistent} {other}partition(s): consistent, nothing at warning or above")
    return out
