"""KRaft metadata replay, one policy for every command (spec §14): ``scan``'s topic view
(:func:`topic_view`) and ``audit``'s metadata rows (``auditor.observe.metadata.extract_metadata``) both read a
node's ``__cluster_metadata-0`` through :class:`MetadataReplay`.

Replay order is Kafka's: the latest complete snapshot, then the log from the snapshot's end offset.
``KafkaRaftClient.updateListenersProgress`` hands a listener that starts at offset 0 (or below the log start)
``latestSnapshot()`` (``KafkaMetadataLog.latestSnapshotId``: the greatest ``(endOffset, epoch)`` among the
complete ``.checkpoint`` files) and then the log records from its end offset on. Without a snapshot the log is
replayed from its start, and a log that does not start at 0 then misses history (``complete`` false).

The log replayed is the one Kafka loads: the metadata log is always recovered from offset 0
(``auditor.kafka.recovery``), so nothing after its first invalid batch or torn tail is read. A batch applies
only once all of its records decoded (``MetadataLoader`` hands batches whole); control batches hold no
metadata records. Only the record types asked for are decoded (their api key is peeked from the frame).

History: with ``history=True`` the log records below the snapshot's end offset that are still on disk come
first, marked as log records (``from_snapshot`` false). The snapshot's ``PartitionRecord``s then restate each
partition, and :func:`replay_partitions` keeps the evidence gathered before (its ``history`` and ``unclean``
lists) when a restatement keeps the topic ID, so an unclean election recorded in the log (KA620) stays visible
when a later snapshot covers it, while the state itself is the snapshot's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from auditor.kafka.batches import ValidPrefix, valid_batches
from auditor.kafka.epochs import NO_LEADER, NO_LEADER_CHANGE, RECOVERING
from auditor.kafka.recovery import LogRecovery, SegmentSummary
from auditor.layout.inventory import PartitionDir
from parsers.errors import ParseError
from parsers.metadata import decode_metadata_record
from parsers.primitives import read_uvarint
from parsers.record_batch import ATTR_CONTROL, RecordBatch
from parsers.segment import SegmentWalker

TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD = 2, 3, 4, 5, 9
REGISTER_BROKER_RECORD, UNREGISTER_BROKER_RECORD, FENCE_BROKER_RECORD, UNFENCE_BROKER_RECORD = 0, 1, 7, 8
BROKER_REGISTRATION_CHANGE_RECORD = 17
BROKER_KEYS = frozenset(
    {
        REGISTER_BROKER_RECORD,
        UNREGISTER_BROKER_RECORD,
        FENCE_BROKER_RECORD,
        UNFENCE_BROKER_RECORD,
        BROKER_REGISTRATION_CHANGE_RECORD,
    }
)
"""Broker registrations, fencing and unfencing, controlled shutdown."""
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
"""``ConfigRecord.resourceType`` of topic and broker configs (``ConfigResource.Type``); a broker config whose
resource name is empty is the cluster-wide default."""
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"
TIMELINE_CONFIGS = (MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION)
"""The configs the timeline follows (topic level, then dynamic broker level, then the cluster default)."""
CONFIG_DEFAULTS = {MIN_INSYNC_REPLICAS: "1", UNCLEAN_LEADER_ELECTION: "false"}
"""Kafka's defaults when no config record sets them (a static ``server.properties`` value is not visible in
the metadata log)."""
TOPIC_KEYS = frozenset({TOPIC_RECORD, REMOVE_TOPIC_RECORD})
"""What the topic view needs: topic names and IDs."""
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
"""The fixed topic ID of ``__cluster_metadata`` (its ``partition.metadata``)."""


def latest_snapshot(snapshots: Iterable[tuple[int, int, Path]]) -> tuple[int, int, Path] | None:
    """The snapshot Kafka loads: the greatest ``(endOffset, epoch)`` of the complete ``.checkpoint`` files."""
    return max(snapshots, key=lambda s: (s[0], s[1]), default=None)


@dataclass(frozen=True)
class MetadataEntry:
    """One decoded metadata record: its log offset (-1 in a snapshot), its batch's max timestamp."""

    offset: int
    timestamp: int
    from_snapshot: bool
    type_name: str
    data: dict


@dataclass
class MetadataReplay:
    """Replay of one node's metadata log: ``segments`` (base offset, ``.log`` path) in order and the complete
    snapshots (end offset, epoch, path); ``unindexed`` and ``txn_index_corrupt``: the segments without their
    offset index and those whose ``.txnindex`` fails its sanity check (recovered at load,
    :class:`LogRecovery`). :meth:`entries` streams the records; afterwards ``end_offset`` is the log end
    offset Kafka loads and ``notes`` lists what could not be applied."""

    segments: list[tuple[int, Path]]
    snapshots: list[tuple[int, int, Path]]
    keys: frozenset[int]
    unindexed: frozenset[int] = frozenset()
    txn_index_corrupt: frozenset[int] = frozenset()
    snapshot: tuple[int, int, Path] | None = field(init=False)
    end_offset: int = 0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.snapshot = latest_snapshot(self.snapshots)

    @property
    def start(self) -> int:
        """First log offset replayed after the snapshot."""
        return self.snapshot[0] if self.snapshot is not None else 0

    @property
    def complete(self) -> bool:
        """The log reaches back to the snapshot's end offset (or to 0 without a snapshot)."""
        return not self.segments or self.segments[0][0] <= self.start

    def entries(self, history: bool = False) -> Iterator[MetadataEntry]:
        """Records in replay order (``history``: first the log records below the snapshot's end offset)."""
        if history and self.snapshot is not None:
            yield from self._log(0, self.start)
        if self.snapshot is not None:
            yield from self._file(Path(self.snapshot[2]), None, 0, None)
        self.end_offset = self.start
        yield from self._log(self.start, None)

    def _log(self, start: int, end: int | None) -> Iterator[MetadataEntry]:
        bases = [b for b, _ in self.segments]
        corrupt = self.txn_index_corrupt
        recovery = LogRecovery(bases, False, 0, True, unindexed=self.unindexed, txn_index_corrupt=corrupt)
        for base, path in self.segments:
            if end is not None and base >= end:
                break  # past the history wanted
            summary = yield from self._file(path, base, start, end)
            recovery.add(summary)
            if recovery.truncation is not None:
                break  # recoverLog deletes the later segments (a cut at load keeps them)
        if end is None:
            self.end_offset = max(self.end_offset, recovery.leo)

    def _file(self, path: Path, base: int | None, start: int, end: int | None) -> Iterator[MetadataEntry]:
        """Entries of the valid batches of one file at offsets in ``[start, end)``; a log segment (``base``
        given) is read up to its first invalid entry and its :class:`SegmentSummary` is returned."""
        walker = SegmentWalker(path, stop_on_invalid=False)
        prefix = ValidPrefix()
        stop: int | None = None
        try:
            for block in walker.header_blocks():
                valid = valid_batches(block.headers, block.computed_crc)
                seen_bad = prefix.first_invalid is not None
                first_bad = prefix.feed(block.positions, block.headers, valid)
                live = np.flatnonzero(valid)
                if base is not None and (seen_bad or first_bad is not None):
                    live = live[live < first_bad] if first_bad is not None else live[:0]
                for i in live:
                    yield from self._batch(walker, block, int(i), base is None, start, end)
            stop = walker.stop.position if walker.stop is not None else None
        except ParseError as exc:
            # an entry the walker cannot decode ends the file's valid prefix there (as in scan and extract)
            self.notes.append(f"{path}: {exc.message}")
            stop = prefix.end
        except OSError as exc:
            self.notes.append(f"{path}: {exc.strerror or exc}")
            return SegmentSummary(path.name, base or 0, 0, 0, None, None)
        return SegmentSummary(
            path.name,
            base or 0,
            walker.file_size,
            prefix.valid_end(stop),
            prefix.recovered_next_offset,
            prefix.next_offset_raw,
        )

    def _batch(self, walker: SegmentWalker, block, i: int, snapshot: bool, start: int, end: int | None):
        """The wanted records of the data batch at row ``i`` of ``block``, all or none (a record that does not
        decode drops its batch: a batch is applied whole)."""
        h = block.headers[i]
        last = int(h["base_offset"]) + int(h["last_offset_delta"])
        outside = last < start or (end is not None and int(h["base_offset"]) >= end)
        if int(h["attributes"]) & ATTR_CONTROL or (not snapshot and outside):
            return
        batch = RecordBatch.from_tuple(h.item(), position=int(block.positions[i]))
        out: list[MetadataEntry] = []
        try:
            for rec in walker.records(batch):  # streamed: only the wanted records are kept
                if not snapshot and (rec.offset < start or (end is not None and rec.offset >= end)):
                    continue
                if not rec.value or _api_key(rec.value) not in self.keys:
                    continue
                decoded = decode_metadata_record(rec.value)
                if decoded.data is not None:
                    offset = -1 if snapshot else rec.offset
                    timestamp = int(h["max_timestamp"])
                    out.append(MetadataEntry(offset, timestamp, snapshot, decoded.type_name, decoded.data))
        except ParseError as exc:
            self.notes.append(f"{walker.path}: batch at position {batch.position}: {exc.message}")
            return
        yield from out


def _api_key(value: bytes) -> int | None:
    """The api key of a framed metadata record (after the frame version; both unsigned varints), or None."""
    try:
        _frame, pos = read_uvarint(value, 0)
        return read_uvarint(value, pos)[0]
    except ParseError:
        return None


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


def replay_of(
    part: PartitionDir, keys: frozenset[int], txn_index_corrupt: frozenset[int] = frozenset()
) -> MetadataReplay:
    """The :class:`MetadataReplay` of an inventoried ``__cluster_metadata-0`` directory
    (``txn_index_corrupt``: its segments whose ``.txnindex`` fails its sanity check, read by the caller)."""
    segments = [(s.base_offset, Path(s.log.path)) for s in part.log_segments if s.log is not None]
    snapshots = [(f.base_offset or 0, f.epoch or 0, Path(f.path)) for f in part.kraft_snapshots]
    return MetadataReplay(segments, snapshots, keys, part.unindexed, txn_index_corrupt)


def topic_view(part: PartitionDir, txn_index_corrupt: frozenset[int] = frozenset()) -> TopicView:
    """Build the topic view of one ``__cluster_metadata-0`` directory (read-only; ``txn_index_corrupt``:
    :func:`replay_of`)."""
    view = TopicView(part.path)
    replay = replay_of(part, TOPIC_KEYS, txn_index_corrupt)
    ids: dict[str, str] = {}
    for entry in replay.entries():
        data = entry.data
        if entry.type_name == "TOPIC_RECORD" and "name" in data:
            old = view.topics.get(data["name"])
            if old is not None:
                ids.pop(old, None)
            view.topics[data["name"]] = data["topicId"]
            ids[data["topicId"]] = data["name"]
        elif entry.type_name == "REMOVE_TOPIC_RECORD":
            name = ids.pop(data.get("topicId"), None)
            if name is not None:
                view.topics.pop(name, None)
    view.end_offset = replay.end_offset
    view.notes = replay.notes
    if not replay.complete:
        view.complete = False
        first = replay.segments[0][0]
        view.notes.append(f"the log starts at {first}, after the newest snapshot's end offset {replay.start}")
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
    partition_epoch: int = 0
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    unclean: list[dict] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # epochs lo..hi the history skips

    def covers(self, epoch: int) -> bool:
        """The replayed history shows whether ``epoch`` was assigned: it lies between the first and the latest
        epoch the history shows and outside its gaps (a snapshot restating the partition at a later epoch
        than the log records before it reached)."""
        first = self.first_known_epoch
        if first is None or not first <= epoch <= self.leader_epoch:
            return False
        return not any(lo <= epoch <= hi for lo, hi in self.gaps)

    @property
    def first_known_epoch(self) -> int | None:
        """The lowest leader epoch the replayed history shows (a history that starts at a snapshot knows
        nothing of the epochs below it)."""
        epochs = [h["leader_epoch"] for h in self.history if h.get("leader_epoch") is not None]
        return min(epochs) if epochs else None

    def epochs_assigned(self) -> dict[int, dict]:
        """Leader epoch -> the history event that assigned it (its first event in that epoch)."""
        out: dict[int, dict] = {}
        for h in self.history:
            out.setdefault(h["leader_epoch"], h)
        return out


def _ints(value) -> list[int]:
    return [int(x) for x in value] if value is not None else []


def replay_partitions(records: Iterable[dict]) -> dict[tuple[str, int], PartitionState]:
    """Replay metadata rows (``rows.METADATA`` dicts, in ``seq`` order) of one node's metadata log.

    ``PartitionRecord`` sets everything; ``PartitionChangeRecord`` changes the fields it carries (ISR,
    replicas, ELR, last-known ELR, directories, leaderRecoveryState), bumps the leader epoch whenever it
    carries a leader (even the same one) and always bumps the partition epoch (Kafka's
    ``PartitionRegistration.merge``). A change that makes a leader out of a replica outside the previous ISR
    and the previous ELR (KIP-966's eligible leader replicas are clean candidates), or sets
    ``leaderRecoveryState`` to RECOVERING (1, KIP-704), is recorded as an unclean election. A
    ``RemoveTopicRecord`` forgets the topic's partitions. A ``PartitionRecord`` restating a partition with
    the same topic ID (a snapshot after the log records it covers, :class:`MetadataReplay` with history)
    replaces the state but keeps its ``history``/``unclean`` (the restatement itself is not an event unless
    its leader or partition epoch differs from the replayed one; the leader epochs it skips are ``gaps``).
    A ``PartitionChangeRecord`` of a partition without a replayed ``PartitionRecord`` (a history whose log on
    disk starts after the partition was created) is skipped.

    Every event of ``history`` holds the metadata ``offset`` (-1 in a snapshot), batch ``timestamp``, record
    ``type``, and the state after it: leader, leader and partition epochs, ISR, ELR, last-known ELR,
    replicas, leaderRecoveryState, plus ``previous_isr`` and ``unclean`` for a leader change.
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
        if kind == "PARTITION_CHANGE_RECORD" and (state is None or state.topic_id != rec.get("topic_id")):
            continue  # the history lacks the partition's PartitionRecord (the log on disk starts later)
        event = {
            "offset": rec.get("offset"),
            "timestamp": rec.get("timestamp"),
            "type": kind,
            "seq": rec.get("seq"),
        }
        restated = False
        previous_isr = list(state.isr) if state is not None else []
        previous_elr = list(state.elr) if state is not None else []
        leader_changed = unclean = False
        if kind == "PARTITION_RECORD" or state is None or state.topic_id != rec.get("topic_id"):
            previous = state if state is not None and state.topic_id == rec.get("topic_id") else None
            state = PartitionState(topic, key[1], rec.get("topic_id"))
            if previous is not None:
                restated = True
                state.history, state.unclean = previous.history, previous.unclean
                state.last_known_leader = previous.last_known_leader
                state.gaps = previous.gaps
            states[key] = state
            state.leader = int(rec["leader"]) if rec.get("leader") is not None else NO_LEADER
            if state.leader == NO_LEADER_CHANGE:
                state.leader = NO_LEADER
            epoch = rec.get("leader_epoch")
            state.leader_epoch = int(epoch) if epoch is not None and epoch >= 0 else 0
            pe = rec.get("partition_epoch")
            state.partition_epoch = int(pe) if pe is not None and pe >= 0 else 0
            state.isr = _ints(rec.get("isr"))
            state.replicas = _ints(rec.get("replicas"))
            state.elr = _ints(rec.get("elr"))
            state.last_known_elr = _ints(rec.get("last_known_elr"))
            state.directories = list(rec.get("directories") or [])
            lrs = rec.get("leader_recovery_state")
            state.leader_recovery_state = int(lrs) if lrs is not None and lrs >= 0 else 0
            if previous is not None and state.leader_epoch > previous.leader_epoch + 1:
                state.gaps.append((previous.leader_epoch + 1, state.leader_epoch - 1))
            if previous is not None and (
                (state.leader_epoch, state.partition_epoch)
                != (previous.leader_epoch, previous.partition_epoch)
            ):
                restated = False  # the snapshot is ahead of the log records before it: an event
        else:
            state.partition_epoch += 1
            if rec.get("isr") is not None:
                state.isr = _ints(rec["isr"])
            if rec.get("replicas") is not None:
                state.replicas = _ints(rec["replicas"])
            if rec.get("elr") is not None:
                state.elr = _ints(rec["elr"])
            if rec.get("last_known_elr") is not None:
                state.last_known_elr = _ints(rec["last_known_elr"])
            if rec.get("directories") is not None:
                state.directories = list(rec["directories"])
            lrs = rec.get("leader_recovery_state")
            if lrs is not None and lrs >= 0:
                state.leader_recovery_state = int(lrs)
            leader = rec.get("leader")
            if leader is not None and leader != NO_LEADER_CHANGE:
                leader_changed = True
                state.leader = int(leader)
                state.leader_epoch += 1
                recovering = lrs is not None and lrs == RECOVERING
                # KIP-966: a leader from the eligible leader replicas is a clean election
                outside = state.leader != NO_LEADER and state.leader not in previous_isr + previous_elr
                unclean = recovering or outside
                if unclean:
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
        if restated:
            continue
        event.update(
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            partition_epoch=state.partition_epoch,
            isr=list(state.isr),
            elr=list(state.elr),
            last_known_elr=list(state.last_known_elr),
            replicas=list(state.replicas),
            leader_recovery_state=state.leader_recovery_state,
            from_snapshot=bool(rec.get("from_snapshot")),
        )
        if leader_changed:
            event.update(previous_isr=previous_isr, unclean=unclean)
        state.history.append(event)
    return states


# ------------------------------------------------------------------------------ brokers and configs


@dataclass
class BrokerState:
    """A broker registration as the metadata describes it."""

    broker: int
    epoch: int = -1
    fenced: bool = True
    in_controlled_shutdown: bool = False
    registered: bool = True


FENCING_CHANGE = {1: True, -1: False}
"""``BrokerRegistrationChangeRecord.fenced`` (``BrokerRegistrationFencingChange``): 1 fence, -1 unfence,
0 none."""


def replay_brokers(records: Iterable[dict]) -> tuple[dict[int, BrokerState], list[dict]]:
    """Broker registrations after the broker records of metadata rows (in ``seq`` order), and the events:
    each with offset, timestamp, type, broker, broker epoch and the registration after it (fenced, in
    controlled shutdown, registered). ``RegisterBrokerRecord`` registers (fenced unless it says otherwise,
    and it is restated by a snapshot), ``UnregisterBrokerRecord`` removes, ``FenceBrokerRecord`` /
    ``UnfenceBrokerRecord`` fence and unfence, ``BrokerRegistrationChangeRecord`` changes fencing (1 fence,
    -1 unfence) and controlled shutdown (1 entering it)."""
    brokers: dict[int, BrokerState] = {}
    events: list[dict] = []
    for rec in records:
        kind = rec["record_type"]
        bid = rec.get("broker_id")
        if bid is None or kind not in _BROKER_TYPES:
            continue
        b = brokers.get(int(bid))
        before = None if b is None else (b.epoch, b.fenced, b.in_controlled_shutdown, b.registered)
        if kind == "REGISTER_BROKER_RECORD":
            b = brokers[int(bid)] = BrokerState(int(bid), int(rec.get("broker_epoch") or -1))
            b.fenced = bool(rec.get("fenced")) if rec.get("fenced") is not None else True
            b.in_controlled_shutdown = bool(rec.get("in_controlled_shutdown"))
        else:
            b = brokers.setdefault(int(bid), BrokerState(int(bid)))
            if rec.get("broker_epoch") is not None:
                b.epoch = int(rec["broker_epoch"])
            if kind == "UNREGISTER_BROKER_RECORD":
                b.registered = False
            elif kind == "FENCE_BROKER_RECORD":
                b.fenced = True
            elif kind == "UNFENCE_BROKER_RECORD":
                b.fenced = False
            else:
                if rec.get("fenced") is not None:
                    b.fenced = bool(rec["fenced"])
                if rec.get("in_controlled_shutdown") is not None:
                    b.in_controlled_shutdown = bool(rec["in_controlled_shutdown"])
        after = (b.epoch, b.fenced, b.in_controlled_shutdown, b.registered)
        if rec.get("from_snapshot") and before == after:
            continue  # a snapshot restating what the log already said
        events.append(
            {
                "offset": rec.get("offset"),
                "timestamp": rec.get("timestamp"),
                "type": kind,
                "broker": b.broker,
                "broker_epoch": b.epoch,
                "fenced": b.fenced,
                "in_controlled_shutdown": b.in_controlled_shutdown,
                "registered": b.registered,
            }
        )
    return brokers, events


_BROKER_TYPES = frozenset(
    {
        "REGISTER_BROKER_RECORD",
        "UNREGISTER_BROKER_RECORD",
        "FENCE_BROKER_RECORD",
        "UNFENCE_BROKER_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
    }
)


def config_events(records: Iterable[dict], names: Iterable[str] = TIMELINE_CONFIGS) -> list[dict]:
    """The changes of the configs ``names`` in metadata rows (in ``seq`` order): offset, timestamp, seq,
    ``resource_type`` (2 topic, 4 broker), ``resource`` (topic name, broker id, or "" for the cluster
    default), name and value (None: deleted, the default applies again). A snapshot restating a value
    already in force is not a change."""
    wanted = set(names)
    current: dict[tuple, str | None] = {}
    out = []
    for rec in records:
        if rec["record_type"] != "CONFIG_RECORD" or rec.get("config_name") not in wanted:
            continue
        rtype = rec.get("config_resource_type")
        resource = rec.get("topic") if rtype == TOPIC_RESOURCE else rec.get("config_resource")
        key = (rtype, resource, rec["config_name"])
        value = rec.get("config_value")
        if rec.get("from_snapshot") and key in current and current[key] == value:
            continue
        current[key] = value
        out.append(
            {
                "offset": rec.get("offset"),
                "timestamp": rec.get("timestamp"),
                "seq": rec.get("seq"),
                "resource_type": rtype,
                "resource": resource,
                "name": rec["config_name"],
                "value": value,
            }
        )
    return out


def config_value(events: Iterable[dict], topic: str, name: str, broker: int | None = None, until=None) -> str:
    """The value of config ``name`` for ``topic`` (led by ``broker``) after the config events whose metadata
    ``seq`` is below ``until`` (None: all): the topic's own value, else the broker's dynamic value, else the
    cluster-wide default, else Kafka's default (:data:`CONFIG_DEFAULTS`)."""
    levels: dict[int, str | None] = {}
    for ev in events:
        if until is not None and ev.get("seq") is not None and ev["seq"] >= until:
            break
        if ev["name"] != name:
            continue
        if ev["resource_type"] == TOPIC_RESOURCE and ev["resource"] == topic:
            levels[0] = ev["value"]
        elif ev["resource_type"] == BROKER_RESOURCE and broker is not None and ev["resource"] == str(broker):
            levels[1] = ev["value"]
        elif ev["resource_type"] == BROKER_RESOURCE and ev["resource"] in ("", None):
            levels[2] = ev["value"]
    for level in (0, 1, 2):
        if levels.get(level) is not None:
            return levels[level]
    return CONFIG_DEFAULTS.get(name, "")
