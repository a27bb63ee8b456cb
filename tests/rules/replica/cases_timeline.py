"""Cases of ``auditor/rules/replica/timeline.py`` (KA624-KA626): the KRaft metadata timeline of a
partition against its batches: appends while under min.insync.replicas, epochs the metadata never
assigned, and epoch starts that disagree with the epoch's leader."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from auditor.spark.partition_rules import PartitionInput, evaluate
from tests.rules.harness import fire, silent
from tests.rules.replica import builders

T0 = 1_700_000_000_000


TOPIC_ID = "dG9waWMtdC1pZC0wMDAwMA"


@dataclass
class Partition:
    """One partition of an audit: replica rows, caches ``broker -> [(epoch, start)]``, batch epoch ranges
    ``broker -> [(epoch, first, last, first_ts, last_ts)]`` and the metadata rows of node 100."""

    replicas: list[dict]
    caches: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    ranges: dict[int, list[tuple]] = field(default_factory=dict)
    metadata: list[dict] = field(default_factory=list)

    def finding_rows(self) -> list[dict]:
        inp = PartitionInput(
            replicas=self.replicas,
            caches={b: [(i, e, s) for i, (e, s) in enumerate(c)] for b, c in self.caches.items()},
            ranges={b: [_range(*g) for g in rs] for b, rs in self.ranges.items()},
            metadata=self.metadata,
        )
        return evaluate(inp).findings


def _range(
    epoch: int, first: int, last: int, first_ts: int | None = None, last_ts: int | None = None
) -> dict:
    return {
        "epoch": epoch,
        "first": first,
        "last": last,
        "records": last - first + 1,
        "bytes": 70 * (last - first + 1),
        "batches": 1,
        "first_timestamp": first_ts,
        "last_timestamp": last_ts,
    }


def replica(broker: int, leo: int, latest_epoch: int, log_start: int = 0) -> dict:
    """A caught-up replica row (``builders.replica``) whose latest epoch comes third."""
    return builders.replica(broker, leo, latest_epoch=latest_epoch, log_start=log_start)


def meta(seq: int, record_type: str, ts_step: int = 1000, **fields) -> dict:
    """A metadata row of node 100 at offset ``seq`` + 10, batch timestamp ``T0 + seq * ts_step``."""
    row = {
        "node": 100,
        "seq": seq,
        "offset": seq + 10,
        "from_snapshot": False,
        "end_offset": 100,
        "timestamp": T0 + seq * ts_step,
        "record_type": record_type,
        "topic": "t",
        "topic_id": TOPIC_ID,
        "partition": 0,
        "leader": -2,
        "leader_epoch": -1,
        "partition_epoch": -1,
        "isr": None,
        "replicas": None,
        "leader_recovery_state": -1,
    }
    if record_type == "CONFIG_RECORD":
        row.update(partition=None, topic_id=None, config_resource_type=2, config_resource="t")
    return {**row, **fields}


def created(seq: int = 1, leader: int = 1, isr=(1, 2, 3), epoch: int = 0, snapshot: bool = False) -> dict:
    return meta(
        seq,
        "PARTITION_RECORD",
        leader=leader,
        leader_epoch=epoch,
        partition_epoch=0,
        isr=list(isr),
        replicas=[1, 2, 3],
        leader_recovery_state=0,
        from_snapshot=snapshot,
        offset=-1 if snapshot else seq + 10,
    )


def change(seq: int, leader: int = -2, isr=None, recovery: int = -1) -> dict:
    return meta(
        seq,
        "PARTITION_CHANGE_RECORD",
        leader=leader,
        isr=None if isr is None else list(isr),
        leader_recovery_state=recovery,
    )


def min_isr(seq: int, value: str | None) -> dict:
    return meta(seq, "CONFIG_RECORD", config_name="min.insync.replicas", config_value=value)


ALL = (1, 2, 3)


@fire("KA624")
def appended_in_an_epoch_that_began_under_replicated(tmp: Path, mp) -> Partition:
    """min.insync.replicas=2; broker 3 became leader (epoch 1) with ISR [3] and appended offsets 100..149."""
    md = [min_isr(0, "2"), created(1), change(2, leader=3, isr=[3])]
    ranges = {3: [(0, 0, 99), (1, 100, 149)], 1: [(0, 0, 99)]}
    caches = {3: [(0, 0), (1, 100)], 1: [(0, 0)]}
    return Partition([replica(1, 100, 0), replica(3, 150, 1)], caches, ranges, md)


@fire("KA624")
def isr_shrank_mid_epoch_and_the_leader_kept_appending(tmp: Path, mp) -> Partition:
    """The ISR shrank to [1] at T0+2s within epoch 0; batches with timestamps up to T0+5s follow it."""
    md = [min_isr(0, "2"), created(1), change(2, isr=[1])]
    ranges = {1: [(0, 0, 199, T0, T0 + 5000)], 2: [(0, 0, 99, T0, T0 + 1500)]}
    return Partition([replica(1, 200, 0), replica(2, 100, 0)], {1: [(0, 0)], 2: [(0, 0)]}, ranges, md)


@fire("KA624")
def cluster_default_min_insync(tmp: Path, mp) -> Partition:
    """No topic override: the cluster-wide broker config min.insync.replicas=3 applies."""
    default = meta(0, "CONFIG_RECORD", config_name="min.insync.replicas", config_value="3")
    default.update(topic=None, partition=None, topic_id=None, config_resource_type=4, config_resource="")
    md = [default, created(1, isr=(1, 2))]
    return Partition(
        [replica(1, 50, 0), replica(2, 50, 0)], {1: [(0, 0)], 2: [(0, 0)]}, {1: [(0, 0, 49)]}, md
    )


@silent("KA624")
def isr_small_but_nothing_appended(tmp: Path, mp) -> Partition:
    """Broker 3 leads epoch 1 with ISR [3] below min.insync.replicas=2 but appended nothing in it."""
    md = [min_isr(0, "2"), created(1), change(2, leader=3, isr=[3])]
    ranges = {3: [(0, 0, 99)], 1: [(0, 0, 99)]}
    return Partition(
        [replica(1, 100, 0), replica(3, 100, 1)], {3: [(0, 0), (1, 100)], 1: [(0, 0)]}, ranges, md
    )


@silent("KA624")
def isr_shrank_after_the_last_batch(tmp: Path, mp) -> Partition:
    """The ISR shrank at T0+2s, after the last batch (T0+1.5s): nothing appended while under-replicated."""
    md = [min_isr(0, "2"), created(1), change(2, isr=[1])]
    ranges = {1: [(0, 0, 99, T0, T0 + 1500)]}
    return Partition([replica(1, 100, 0), replica(2, 100, 0)], {1: [(0, 0)], 2: [(0, 0)]}, ranges, md)


@silent("KA624")
def min_insync_default_is_one(tmp: Path, mp) -> Partition:
    """No config record: min.insync.replicas is 1, an ISR of one is enough."""
    md = [created(1), change(2, leader=3, isr=[3])]
    ranges = {3: [(0, 0, 99), (1, 100, 149)]}
    return Partition([replica(3, 150, 1)], {3: [(0, 0), (1, 100)]}, ranges, md)


@silent("KA624")
def override_removed_before_the_epoch(tmp: Path, mp) -> Partition:
    """min.insync.replicas=2 is deleted (back to 1) before broker 3 leads alone."""
    md = [min_isr(0, "2"), created(1), min_isr(2, None), change(3, leader=3, isr=[3])]
    ranges = {3: [(0, 0, 99), (1, 100, 149)]}
    return Partition([replica(3, 150, 1)], {3: [(0, 0), (1, 100)]}, ranges, md)


@silent("KA624")
def epoch_known_only_from_a_snapshot(tmp: Path, mp) -> Partition:
    """A snapshot states epoch 3 with ISR [1] (min.insync.replicas=2), but not when the ISR shrank within
    the epoch, and the batches carry no timestamps to line them up: nothing is claimed."""
    md = [min_isr(0, "2"), created(1, isr=(1,), epoch=3, snapshot=True)]
    return Partition([replica(1, 200, 3)], {1: [(3, 0)]}, {1: [(3, 0, 199)]}, md)


@fire("KA625")
def batches_of_an_epoch_the_metadata_never_assigned(tmp: Path, mp) -> Partition:
    """The metadata assigned epochs 0 and 1 and recorded an ISR change at T0+10s; broker 2 holds batches of
    epoch 3 written at T0+3s..T0+4s, before that change: the controller never assigned epoch 3."""
    md = [created(1), change(2, leader=2, isr=ALL), change(10, isr=[1, 2])]
    caches = {1: [(0, 0), (1, 50)], 2: [(0, 0), (1, 50), (3, 120)]}
    ranges = {
        2: [(0, 0, 49, T0, T0 + 900), (1, 50, 119, T0 + 2000, T0 + 2900), (3, 120, 199, T0 + 3000, T0 + 4000)]
    }
    return Partition([replica(1, 120, 1), replica(2, 200, 3)], caches, ranges, md)


@silent("KA625")
def epochs_all_assigned(tmp: Path, mp) -> Partition:
    md = [created(1), change(2, leader=2, isr=ALL), change(3, leader=1, isr=ALL)]
    caches = {1: [(0, 0), (1, 90), (2, 100)], 2: [(0, 0), (1, 90), (2, 100)]}
    return Partition([replica(1, 200, 2), replica(2, 200, 2)], caches, {1: [(2, 100, 199, T0, T0)]}, md)


@silent("KA625")
def epoch_below_a_snapshot_is_unknown(tmp: Path, mp) -> Partition:
    """The history starts at a snapshot stating epoch 5: the caches' epochs 0..4 are before it, unknown."""
    md = [created(1, epoch=5, snapshot=True)]
    caches = {1: [(0, 0), (3, 40), (5, 100)]}
    return Partition([replica(1, 200, 5)], caches, {1: [(3, 40, 99, T0, T0), (5, 100, 199)]}, md)


@silent("KA625")
def epochs_a_snapshot_skips_are_unknown(tmp: Path, mp) -> Partition:
    """The log on disk shows epoch 0, then a snapshot restates the partition at epoch 4: 1..3 are unknown."""
    md = [created(1), {**created(5, epoch=4, snapshot=True), "seq": 5}]
    caches = {1: [(0, 0), (2, 40), (4, 100)]}
    return Partition([replica(1, 200, 4)], caches, {1: [(2, 40, 99, T0, T0)]}, md)


@silent("KA625")
def epoch_above_the_metadata_copy(tmp: Path, mp) -> Partition:
    """The replica is in epoch 3, written after the last change the metadata copy holds (it ends early)."""
    md = [created(1), change(2, leader=2, isr=ALL)]
    caches = {2: [(0, 0), (1, 50), (3, 120)]}
    return Partition([replica(2, 200, 3)], caches, {2: [(3, 120, 199, T0 + 5000, T0 + 6000)]}, md)


@fire("KA626")
def follower_cache_starts_an_epoch_elsewhere(tmp: Path, mp) -> Partition:
    """Epoch 1's leader (broker 2) started it at 100; broker 1's cache says 120."""
    md = [created(1), change(2, leader=2, isr=ALL)]
    caches = {1: [(0, 0), (1, 120)], 2: [(0, 0), (1, 100)], 3: [(0, 0), (1, 100)]}
    return Partition([replica(b, 200, 1) for b in ALL], caches, {}, md)


@silent("KA626")
def caches_agree_with_the_epoch_leader(tmp: Path, mp) -> Partition:
    md = [created(1), change(2, leader=2, isr=ALL)]
    caches = {b: [(0, 0), (1, 100)] for b in ALL}
    return Partition([replica(b, 200, 1) for b in ALL], caches, {}, md)


@silent("KA626")
def start_moved_up_to_the_log_start(tmp: Path, mp) -> Partition:
    """Broker 1's log starts at 150, inside epoch 1: its cache starts epoch 1 there (Kafka's truncation)."""
    md = [created(1), change(2, leader=2, isr=ALL)]
    caches = {1: [(1, 150)], 2: [(0, 0), (1, 100)]}
    return Partition([replica(1, 200, 1, log_start=150), replica(2, 200, 1)], caches, {}, md)


@silent("KA626")
def epoch_leader_not_among_the_inputs(tmp: Path, mp) -> Partition:
    """Epoch 1 was led by broker 3, whose copy is not given: nothing to compare with."""
    md = [created(1), change(2, leader=3, isr=ALL)]
    caches = {1: [(0, 0), (1, 120)], 2: [(0, 0), (1, 100)]}
    return Partition([replica(1, 200, 1), replica(2, 200, 1)], caches, {}, md)
