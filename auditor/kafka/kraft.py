"""The topic names and IDs a KRaft node knows, read from its ``__cluster_metadata-0`` replica (spec §14).

The view is the latest complete KRaft snapshot (``<end offset>-<epoch>.checkpoint``) followed by the log's
records from the snapshot's end offset on; only ``TopicRecord`` and ``RemoveTopicRecord`` are decoded (their
api key is peeked from the record frame first). Corrupt batches are skipped: the view is evidence, and the
metadata log's own integrity is checked by the segment rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from auditor.kafka.epochs import NO_LEADER, NO_LEADER_CHANGE, RECOVERING
from auditor.layout.inventory import PartitionDir
from parsers.errors import ParseError
from parsers.metadata import decode_metadata_record
from parsers.primitives import read_uvarint
from parsers.record_batch import RecordBatch
from parsers.segment import SegmentWalker

TOPIC_RECORD, REMOVE_TOPIC_RECORD = 2, 9
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
"""The fixed topic ID of ``__cluster_metadata`` (its ``partition.metadata``)."""


@dataclass
class TopicView:
    """Topic name -> topic ID as of ``end_offset`` (exclusive) of the metadata log of ``source``."""

    source: str
    end_offset: int = 0
    topics: dict[str, str] = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "endOffset": self.end_offset,
            "complete": self.complete,
            "topics": dict(sorted(self.topics.items())),
        }


def _apply(view: TopicView, walker: SegmentWalker, min_offset: int) -> int:
    """Apply the topic records of one file at offsets >= ``min_offset``; returns the next offset seen."""
    next_offset = min_offset
    ids = {v: k for k, v in view.topics.items()}
    for batch in walker:
        if not isinstance(batch, RecordBatch) or not batch.crc_valid or batch.is_control:
            continue
        next_offset = max(next_offset, batch.next_offset)
        if batch.last_offset < min_offset:
            continue
        # Records are streamed (a batch of millions of records is never a list); like Kafka's metadata
        # loader, a batch applies only once all of its records decoded: just its topic changes are kept.
        changes: list[tuple[int, dict]] = []
        try:
            for rec in walker.records(batch):
                change = _topic_change(view, walker.path, rec, min_offset)
                if change is not None:
                    changes.append(change)
        except ParseError as exc:
            view.notes.append(f"{walker.path}: batch at position {batch.position}: {exc.message}")
            continue
        for api_key, data in changes:
            _apply_change(view, ids, api_key, data)
    return next_offset


def _topic_change(view: TopicView, path: str, rec, min_offset: int) -> tuple[int, dict] | None:
    """(api key, data) of a TopicRecord / RemoveTopicRecord at or after ``min_offset``, else None."""
    if rec.offset < min_offset or not rec.value:
        return None
    try:
        _frame, pos = read_uvarint(rec.value, 0)
        api_key, _ = read_uvarint(rec.value, pos)
        if api_key not in (TOPIC_RECORD, REMOVE_TOPIC_RECORD):
            return None
        return api_key, decode_metadata_record(rec.value).data or {}
    except ParseError as exc:
        view.notes.append(f"{path}: offset {rec.offset}: {exc.message}")
        return None


def _apply_change(view: TopicView, ids: dict, api_key: int, data: dict) -> None:
    if api_key == TOPIC_RECORD and "name" in data:
        old = view.topics.get(data["name"])
        if old is not None:
            ids.pop(old, None)
        view.topics[data["name"]] = data["topicId"]
        ids[data["topicId"]] = data["name"]
    elif api_key == REMOVE_TOPIC_RECORD:
        name = ids.pop(data.get("topicId"), None)
        if name is not None:
            view.topics.pop(name, None)


def topic_view(part: PartitionDir) -> TopicView:
    """Build the topic view of one ``__cluster_metadata-0`` directory (read-only)."""
    view = TopicView(part.path)
    start = 0
    if part.kraft_snapshots:
        snap = part.kraft_snapshots[-1]
        _apply(view, SegmentWalker(snap.path, stop_on_invalid=False), 0)
        start = snap.base_offset or 0
        view.end_offset = start
    segments = part.log_segments
    if segments and segments[0].base_offset > start:
        view.complete = False
        view.notes.append(
            f"the log starts at {segments[0].base_offset}, after the newest snapshot's end offset {start}"
        )
    for seg in segments:
        assert seg.log is not None
        view.end_offset = max(
            view.end_offset, _apply(view, SegmentWalker(seg.log.path, stop_on_invalid=False), start)
        )
    return view


@dataclass
class PartitionState:
    """A partition as the KRaft metadata describes it after replaying its records."""

    topic: str
    partition: int
    topic_id: str | None = None
    leader: int = NO_LEADER
    leader_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    replicas: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    last_known_leader: int = NO_LEADER
    history: list[dict] = field(default_factory=list)
    unclean: list[dict] = field(default_factory=list)


def replay_partitions(records: Iterable[dict]) -> dict[tuple[str, int], PartitionState]:
    """Replay metadata rows (``rows.METADATA`` dicts, in ``seq`` order) of one node's metadata log.

    ``PartitionRecord`` sets everything; ``PartitionChangeRecord`` changes the fields it carries and bumps the
    leader epoch whenever it carries a leader (Kafka's ``PartitionRegistration.merge``). A change that makes
    a leader out of a replica outside the previous ISR, or sets ``leaderRecoveryState`` to RECOVERING (1,
    KIP-704), is recorded as an unclean election. A ``RemoveTopicRecord`` forgets the topic's partitions.
    """
    states: dict[tuple[str, int], PartitionState] = {}
    for rec in records:
        kind = rec["record_type"]
        topic = rec.get("topic")
        if kind == "REMOVE_TOPIC_RECORD":
            for key in [k for k, s in states.items() if s.topic_id == rec.get("topic_id")]:
                del states[key]
            continue
        if kind not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") or topic is None:
            continue
        key = (topic, int(rec["partition"]))
        state = states.get(key)
        event = {"offset": rec.get("offset"), "timestamp": rec.get("timestamp"), "type": kind}
        if kind == "PARTITION_RECORD" or state is None or state.topic_id != rec.get("topic_id"):
            state = PartitionState(topic, key[1], rec.get("topic_id"))
            states[key] = state
            state.leader = int(rec["leader"]) if rec.get("leader") is not None else NO_LEADER
            if state.leader == NO_LEADER_CHANGE:
                state.leader = NO_LEADER
            epoch = rec.get("leader_epoch")
            state.leader_epoch = int(epoch) if epoch is not None and epoch >= 0 else 0
            state.isr = list(rec.get("isr") or [])
            state.replicas = list(rec.get("replicas") or [])
            lrs = rec.get("leader_recovery_state")
            state.leader_recovery_state = int(lrs) if lrs is not None and lrs >= 0 else 0
        else:
            previous_isr = list(state.isr)
            if rec.get("isr") is not None:
                state.isr = list(rec["isr"])
            if rec.get("replicas") is not None:
                state.replicas = list(rec["replicas"])
            lrs = rec.get("leader_recovery_state")
            if lrs is not None and lrs >= 0:
                state.leader_recovery_state = int(lrs)
            leader = rec.get("leader")
            if leader is not None and leader != NO_LEADER_CHANGE:
                state.leader = int(leader)
                state.leader_epoch += 1
                recovering = lrs is not None and lrs == RECOVERING
                outside = state.leader != NO_LEADER and state.leader not in previous_isr
                if recovering or outside:
                    state.unclean.append(
                        {
                            "offset": rec.get("offset"),
                            "timestamp": rec.get("timestamp"),
                            "leader": state.leader,
                            "leader_epoch": state.leader_epoch,
                            "previous_isr": previous_isr,
                            "leader_recovery_state": state.leader_recovery_state,
                        }
                    )
        if state.leader != NO_LEADER:
            state.last_known_leader = state.leader
        event.update(
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=list(state.isr),
            leader_recovery_state=state.leader_recovery_state,
        )
        state.history.append(event)
    return states
