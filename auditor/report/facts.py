"""One entry per fact for people: near-identical findings (the same code, severity, cluster, topic and
capture time, and the same message once each one's own partition, broker and log dir are masked) become
one :class:`Fact` listing the partitions and brokers it covers, as a re-created topic's topic-id change on
every replica of every partition. Text and HTML list facts; every other format keeps each finding.

A finding linked to another (``related``: the findings of one loss) is never grouped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.findings import Finding, Severity
from auditor.rules.forward import Forward

MASK = "*"
"""What stands for the partition number and the broker id in a fact's message."""


@dataclass(frozen=True)
class Fact:
    """Findings of one fact, in the order given; ``message`` is the first one's when alone, else the
    masked message (``inventory-*``, ``broker *``)."""

    findings: tuple[Finding, ...]
    message: str

    @property
    def first(self) -> Finding:
        return self.findings[0]

    severity = Forward[Severity]("first.severity")
    code = Forward[str]("first.code")

    @property
    def grouped(self) -> bool:
        return len(self.findings) > 1

    def partitions(self) -> list[tuple[str, list[Finding]]]:
        """The partitions the fact covers (``topic-partition``, or the topic), each with its findings (one
        per broker), in partition then broker order."""
        out: dict[str, list[Finding]] = {}
        order = sorted(
            self.findings,
            key=lambda f: (
                f.partition if f.partition is not None else -1,
                f.broker if f.broker is not None else -1,
            ),
        )
        for f in order:
            out.setdefault(f.partition_key or "", []).append(f)
        return list(out.items())

    def brokers(self) -> list[int]:
        return sorted({f.broker for f in self.findings if f.broker is not None})

    def where(self) -> str:
        """``8 partitions of inventory, 24 replicas on brokers 1, 2, 3`` (a grouped fact)."""
        parts = self.partitions()
        topic = self.first.topic
        text = f"{len(parts)} partition(s) of {topic}" if topic is not None else f"{len(parts)} location(s)"
        brokers = self.brokers()
        if brokers:
            text += f", {len(self.findings)} replica(s) on broker(s) {', '.join(map(str, brokers))}"
        return text


def masked(f: Finding, *, partition: bool = True, broker: bool = True, log_dir: bool = True) -> str:
    """``f``'s message with its own partition (``topic-N``), broker (``broker N``) and log dir masked (each
    unless told not to)."""
    text = f.message
    if log_dir and f.log_dir:
        text = text.replace(f.log_dir, MASK)
    if partition and f.topic is not None and f.partition is not None:
        own = f"{f.topic}-{MASK}"
        text = re.sub(re.escape(f"{f.topic}-{f.partition}") + r"(?!\d)", lambda _: own, text)
    if broker and f.broker is not None:
        text = re.sub(rf"\bbroker {f.broker}\b", lambda _: f"broker {MASK}", text)
    return text


def _message(members: list[Finding]) -> str:
    """The message of a fact: the first finding's, masked where the members differ."""
    first = members[0]
    if len(members) == 1:
        return first.message

    def varies(name: str) -> bool:
        return len({getattr(f, name) for f in members}) > 1

    return masked(first, partition=varies("partition"), broker=varies("broker"), log_dir=varies("log_dir"))


def _cluster(f: Finding) -> str:
    value = f.evidence.get("cluster") if isinstance(f.evidence, dict) else None
    return "" if value is None else str(value)


def fact_key(f: Finding) -> tuple | None:
    """What near-identical findings share; None for a finding never grouped (linked to others, or about
    no topic)."""
    if f.related or f.topic is None:
        return None
    return (f.code, int(f.severity), _cluster(f), f.topic, f.time or "", masked(f))


def facts(findings: Iterable[Finding]) -> list[Fact]:
    """``findings`` as facts, each at the place of its first finding (the order given is kept)."""
    groups: dict[object, list[Finding]] = {}
    for i, f in enumerate(findings):
        key = fact_key(f)
        groups.setdefault(("one", i) if key is None else key, []).append(f)
    return [Fact(tuple(members), _message(members)) for members in groups.values()]


__all__ = ["Fact", "fact_key", "facts", "masked"]
