"""One entry per fact (``auditor.report.facts``): near-identical findings of one topic (a re-created topic's
topic-id change on every replica) become one fact listing its partitions and brokers; findings that say
different things, are about another topic or capture time, or are linked to a loss stay apart."""

from __future__ import annotations

from auditor.findings import Finding, Severity
from auditor.report.facts import facts, masked

T = "2026-01-10T02:00:00Z"


def topic_id_changed(partition: int, broker: int, *, topic: str = "inventory", time: str = T) -> Finding:
    return Finding(
        code="KA814",
        severity=Severity.WARNING,
        message=f"topic id of {topic}-{partition} on broker {broker} changed from A to B at {time}",
        name="history.topic-id-changed",
        broker=broker,
        topic=topic,
        partition=partition,
        log_dir=f"/data-{broker}",
        time=time,
        evidence={"cluster": "c", "expected": "A", "found": "B"},
    )


def test_a_recreated_topic_is_one_fact_listing_its_partitions():
    found = [topic_id_changed(p, b) for p in (0, 1, 10) for b in (1, 2, 3)]
    [fact] = facts(found)
    assert fact.grouped and len(fact.findings) == 9 and fact.code == "KA814"
    assert fact.message == "topic id of inventory-* on broker * changed from A to B at " + T
    assert [p for p, _ in fact.partitions()] == ["inventory-0", "inventory-1", "inventory-10"]
    assert [f.broker for f in fact.partitions()[2][1]] == [1, 2, 3]
    assert fact.where() == "3 partition(s) of inventory, 9 replica(s) on broker(s) 1, 2, 3"


def test_only_what_differs_is_masked():
    [fact] = facts([topic_id_changed(4, 1), topic_id_changed(4, 2)])
    assert fact.message == f"topic id of inventory-4 on broker * changed from A to B at {T}"
    # inventory-1 is not masked inside inventory-10
    assert masked(topic_id_changed(1, 2)).startswith("topic id of inventory-* on broker *")
    ten = topic_id_changed(10, 2)
    ten.message = "inventory-1 and inventory-10"
    assert masked(ten) == "inventory-1 and inventory-*"


def test_different_facts_stay_apart():
    other_topic = topic_id_changed(0, 1, topic="orders")
    other_time = topic_id_changed(1, 1, time="2026-01-11T02:00:00Z")
    linked = topic_id_changed(2, 1)
    linked.related = [{"fingerprint": "x", "code": "KA710", "primary": True}]
    different = topic_id_changed(3, 1)
    different.message = "topic id of inventory-3 on broker 1 changed from A to C at " + T
    found = [topic_id_changed(0, 1), other_topic, other_time, linked, different]
    entries = facts(found)
    assert [len(e.findings) for e in entries] == [1] * 5
    assert [e.message for e in entries] == [f.message for f in found]  # a single finding keeps its message
