"""One KRaft replay policy for scan's topic view and audit's metadata rows: the latest snapshot, then the log
from its end offset (``KafkaRaftClient.updateListenersProgress`` / ``latestSnapshot``); with history, the log
records a snapshot covers still count as evidence (an unclean election, KA620)."""

from __future__ import annotations

from pathlib import Path

from auditor.kafka.kraft import (
    TOPIC_KEYS,
    MetadataReplay,
    latest_snapshot,
    replay_partitions,
    topic_view,
)
from auditor.kafka.topics import METADATA_TOPIC
from auditor.observe.metadata import METADATA_KEYS, extract_metadata
from auditor.scan import prepare_logdir
from parsers.dirfiles import segment_file_name
from parsers.metadata import encode_metadata_record
from parsers.record_batch import RecordSpec, build_batch
from tests.rules.builder import LogDir, topic_id

T = topic_id("t")


def _topic(name: str) -> bytes:
    return encode_metadata_record("TopicRecord", 0, {"name": name, "topicId": topic_id(name)})


def _partition(leader: int, epoch: int, isr: list[int]) -> bytes:
    data = {
        "partitionId": 0,
        "topicId": T,
        "replicas": [1, 2, 3],
        "isr": isr,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderEpoch": epoch,
        "partitionEpoch": epoch,
    }
    return encode_metadata_record("PartitionRecord", 0, data)


def _change(leader: int, isr: list[int]) -> bytes:
    data = {"partitionId": 0, "topicId": T, "leader": leader, "isr": isr}
    return encode_metadata_record("PartitionChangeRecord", 0, data)


def _file(values: list[bytes], first_offset: int = 0) -> bytes:
    out = bytearray()
    for i, value in enumerate(values):
        out += build_batch([RecordSpec(None, value, 1000 + i)], base_offset=first_offset + i)
    return bytes(out)


def _metadata_dir(tmp_path: Path, log: list[bytes], snapshots: dict[tuple[int, int], list[bytes]]) -> Path:
    """A broker log dir whose metadata log holds ``log`` (one record per batch from offset 0) and the KRaft
    snapshots ``(end offset, epoch) -> records``."""
    ld = LogDir(tmp_path / "b1")
    ld.part("t").data(1)
    root = ld.write()
    md = root / f"{METADATA_TOPIC}-0"
    (md / segment_file_name(0, ".log")).write_bytes(_file(log))
    for (end, epoch), records in snapshots.items():
        (md / f"{end:020d}-{epoch:010d}.checkpoint").write_bytes(_file(records))
    return root


# 0: topic t; 1: partition led by 1, ISR [1, 2]; 2: broker 3 (outside the ISR) elected: unclean; 3: ISR grows
LOG = [_topic("t"), _partition(1, 0, [1, 2]), _change(3, [3]), _change(-2, [3, 1])]
SNAPSHOT_AT_3 = [_topic("t"), _partition(3, 1, [3])]


def test_latest_snapshot_is_the_greatest_end_offset_then_epoch():
    snaps = [(10, 1, Path("a")), (30, 1, Path("b")), (30, 2, Path("c")), (20, 5, Path("d"))]
    assert latest_snapshot(snaps) == (30, 2, Path("c"))
    assert latest_snapshot([]) is None


def test_state_is_the_snapshot_then_the_log_after_it(tmp_path):
    root = _metadata_dir(tmp_path, LOG, {(3, 1): SNAPSHOT_AT_3, (1, 1): [_topic("stale")]})
    md = root / f"{METADATA_TOPIC}-0"
    segments = [(0, md / segment_file_name(0, ".log"))]
    snaps = [(3, 1, md / f"{3:020d}-{1:010d}.checkpoint"), (1, 1, md / f"{1:020d}-{1:010d}.checkpoint")]
    replay = MetadataReplay(segments, snaps, METADATA_KEYS)
    offsets = [(e.offset, e.from_snapshot) for e in replay.entries()]
    assert offsets == [(-1, True), (-1, True), (3, False)]  # snapshot at 3, then offset 3 of the log
    assert replay.end_offset == 4 and replay.complete


def test_history_keeps_an_unclean_election_a_snapshot_covers(tmp_path):
    root = _metadata_dir(tmp_path, LOG, {(3, 1): SNAPSHOT_AT_3})
    rows = extract_metadata(str(root), 1, "c").to_pylist()
    state = replay_partitions(rows)[("t", 0)]
    # the snapshot's state, then offset 3
    assert (state.leader, state.leader_epoch, state.isr) == (3, 1, [3, 1])
    assert [u["leader"] for u in state.unclean] == [3]  # from offset 2, below the snapshot's end offset
    assert [h["offset"] for h in state.history] == [1, 2, 3]  # the snapshot's restatement is not an event


def test_without_history_the_covered_election_is_not_replayed(tmp_path):
    root = _metadata_dir(tmp_path, LOG, {(3, 1): SNAPSHOT_AT_3})
    md = root / f"{METADATA_TOPIC}-0"
    snapshot = (3, 1, md / f"{3:020d}-{1:010d}.checkpoint")
    replay = MetadataReplay([(0, md / segment_file_name(0, ".log"))], [snapshot], METADATA_KEYS)
    rows = [_row(e) for e in replay.entries() if e.type_name != "TOPIC_RECORD"]
    state = replay_partitions(rows)[("t", 0)]
    assert (state.leader, state.isr, state.unclean) == (3, [3, 1], [])


def _row(e) -> dict:
    d = e.data
    return {
        "record_type": e.type_name,
        "topic": "t",
        "partition": 0,
        "topic_id": T,
        "offset": e.offset,
        "leader": d.get("leader"),
        "leader_epoch": d.get("leaderEpoch"),
        "isr": d.get("isr"),
        "replicas": d.get("replicas"),
        "leader_recovery_state": d.get("leaderRecoveryState"),
    }


def test_topic_view_uses_the_same_snapshot(tmp_path):
    root = _metadata_dir(
        tmp_path, [*LOG, _topic("later")], {(3, 1): SNAPSHOT_AT_3, (1, 1): [_topic("stale")]}
    )
    view = topic_view(prepare_logdir(str(root)).inventory.metadata_partition)
    assert set(view.topics) == {"t", "later"}  # "stale" is only in the older snapshot
    assert (view.end_offset, view.complete) == (5, True)
    assert TOPIC_KEYS < METADATA_KEYS


def test_a_log_starting_after_the_snapshot_is_incomplete(tmp_path):
    root = _metadata_dir(tmp_path, LOG, {(1, 1): [_topic("t")]})
    md = root / f"{METADATA_TOPIC}-0"
    (md / segment_file_name(0, ".log")).rename(md / segment_file_name(2, ".log"))
    (md / segment_file_name(0, ".index")).rename(md / segment_file_name(2, ".index"))
    (md / segment_file_name(0, ".timeindex")).rename(md / segment_file_name(2, ".timeindex"))
    view = topic_view(prepare_logdir(str(root)).inventory.metadata_partition)
    assert not view.complete
