"""The topic names and IDs a KRaft node knows, read from its ``__cluster_metadata-0`` replica (spec §14).

The view is the latest complete KRaft snapshot (``<end offset>-<epoch>.checkpoint``) followed by the log's
records from the snapshot's end offset on; only ``TopicRecord`` and ``RemoveTopicRecord`` are decoded (their
api key is peeked from the record frame first). Corrupt batches are skipped: the view is evidence, and the
metadata log's own integrity is checked by the segment rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
