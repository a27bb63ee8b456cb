"""Fire/silent cases of the cross-replica rules of ``audit`` (KA6xx/KA7xx), pure Python and fast (no Spark).

A case returns an :class:`Audit`: the small per-partition inputs Spark groups (replica rows, leader-epoch
caches, epoch ranges, pair divergences, KRaft metadata rows) plus what Spark counts after the per-partition
rules (the leader's records behind each lag row, the lost runs). :func:`audit_findings` runs them through
``auditor.spark.partition_rules`` as the audit does: the ``replicas`` rules per partition, the ``lag`` rules
over its lag rows, the ``loss`` rules over the lost runs and the ``cluster`` rules over the summary. The
Spark end-to-end cases (whole log directories) are ``tests/rules/replica_cases.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from auditor.spark.partition_rules import (
    PartitionInput,
    cluster_findings,
    evaluate,
    lag_finding,
    loss_finding,
)

CODES: list[str] = [
    "KA601",
    "KA602",
    "KA603",
    "KA604",
    "KA620",
    "KA621",
    "KA622",
    "KA623",
    "KA630",
    "KA690",
    "KA691",
    "KA701",
    "KA702",
    "KA703",
    "KA704",
    "KA710",
    "KA711",
]
"""The cross-replica rule codes whose fixtures live here (added to ``cases.ALL_CODES``)."""

from tests.rules.cases import fire, silent  # noqa: E402

T0 = 1_700_000_000_000


@dataclass
class Audit:
    """A small audit: partitions, the counts Spark attaches to their lag rows (the leader's records, bytes,
    batches and the first/newest batch timestamps above the follower's LEO), and the lost runs Spark finds
    from the zones (``pass_loss.lost_runs`` rows)."""

    partitions: list[PartitionInput]
    lag_counts: dict = field(default_factory=dict)
    lost_runs: list[dict] = field(default_factory=list)


def audit_findings(audit: Audit) -> list[dict]:
    """Every finding row of ``audit``, in the order the audit builds them."""
    findings: list[dict] = []
    summary: list[dict] = []
    for inp in audit.partitions:
        out = evaluate(inp)
        findings += out.findings
        summary += out.summary
        for lag in out.lags:
            counts = {
                "records": lag["to"] - lag["from"],
                "bytes": 100 * (lag["to"] - lag["from"]),
                "batches": 1,
            }
            counts |= {"first_timestamp": T0, "last_timestamp": T0 + 1000}
            findings.append(lag_finding({**lag, **counts, **audit.lag_counts}))
    findings += [loss_finding(run) for run in audit.lost_runs]
    return findings + cluster_findings(summary)


# ------------------------------------------------------------------------------------------ builders


def replica(broker: int, leo: int, hw: int | None = None, latest_epoch: int | None = 0, **kw) -> dict:
    """A replica row of topic ``t`` partition 0 (``hw`` defaults to the LEO: a caught-up replica)."""
    return {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": broker,
        "log_dir": f"/d/{broker}",
        "leo": leo,
        "hw": leo if hw is None else hw,
        "log_start": 0,
        "latest_epoch": latest_epoch,
        **kw,
    }


def div(a: int, b: int, offset: int, hi: int = 300) -> dict:
    """Replicas ``a < b`` first differ at ``offset`` in their common range ``[0, hi)``."""
    return {
        "a": a,
        "b": b,
        "lo": 0,
        "hi": hi,
        "offset": offset,
        "mode": "batch",
        "detail": {"base_offset": offset},
    }


def epoch_range(epoch: int, first: int, last: int) -> dict:
    return {
        "epoch": epoch,
        "first": first,
        "last": last,
        "records": last - first + 1,
        "bytes": 10,
        "batches": 1,
    }


def partition_record(leader: int, isr: list[int], replicas: list[int], seq: int = 0) -> dict:
    """The ``PartitionRecord`` of ``t-0`` in node 100's metadata log."""
    return _metadata("PARTITION_RECORD", seq, leader=leader, leader_epoch=0, isr=isr, replicas=replicas)


def partition_change(leader: int, isr: list[int] | None, seq: int, recovery_state: int = -1) -> dict:
    """A ``PartitionChangeRecord`` of ``t-0`` (leader -2: unchanged)."""
    return _metadata(
        "PARTITION_CHANGE_RECORD", seq, leader=leader, isr=isr, leader_recovery_state=recovery_state
    )


def _metadata(record_type: str, seq: int, **fields) -> dict:
    return {
        "node": 100,
        "seq": seq,
        "offset": seq,
        "end_offset": 10,
        "timestamp": T0,
        "record_type": record_type,
        "topic": "t",
        "topic_id": "dG9waWMtdC1pZC0wMDAwMA",
        "partition": 0,
        "leader_epoch": -1,
        "replicas": None,
        "leader_recovery_state": 0,
        **fields,
    }


def one(*replicas: dict, **kw) -> Audit:
    """An audit of one partition."""
    return Audit([PartitionInput(replicas=list(replicas), **kw)])


def in_sync() -> list[dict]:
    """Three caught-up replicas of one leader epoch."""
    return [replica(b, 300) for b in (1, 2, 3)]


CACHES = {b: [(0, 0, 0)] for b in (1, 2, 3)}
KRAFT = [partition_record(1, [1, 2, 3], [1, 2, 3])]


# ------------------------------------------------------------------------------------------ KA601-KA604


@fire("KA601")
def committed_divergence(tmp: Path, mp) -> Audit:
    """Broker 3 differs from offset 200, below both high watermarks (300)."""
    return one(*in_sync(), caches=CACHES, divergences=[div(1, 3, 200)])


@fire("KA601")
def uncommitted_divergence(tmp: Path, mp) -> Audit:
    """Broker 2's tail differs above both high watermarks (a warning)."""
    return one(replica(1, 300, 250), replica(2, 300, 250), divergences=[div(1, 2, 280)])


@silent("KA601", "KA602", "KA603", "KA604", "KA690", "KA691", "KA701", "KA702", "KA703", "KA704", "KA711")
def replicas_in_sync(tmp: Path, mp) -> Audit:
    """Identical caught-up replicas with the same cache and epoch ranges."""
    ranges = {b: [epoch_range(0, 0, 299)] for b in (1, 2, 3)}
    return one(*in_sync(), caches=CACHES, ranges=ranges, metadata=KRAFT)


@silent("KA601", "KA602")
def follower_behind(tmp: Path, mp) -> Audit:
    """A follower whose log is a shorter prefix of the leader's: lag, not divergence."""
    return one(replica(1, 300), replica(2, 250), caches=CACHES)


@fire("KA602")
def cache_hides_the_divergence(tmp: Path, mp) -> Audit:
    """Identical caches, but the logs differ at 120: Kafka's truncation (at the LEO, 200) keeps divergent
    data."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 0, 0), (1, 1, 100)]}
    return one(
        replica(1, 200, 200, 1), replica(2, 200, 150, 1), caches=caches, divergences=[div(1, 2, 120, 200)]
    )


@silent("KA602")
def cache_describes_the_divergence(tmp: Path, mp) -> Audit:
    """Leader epoch 2 starts at 120 on the leader while the follower wrote epoch 1 there:
    OffsetsForLeaderEpoch truncates the follower exactly at the divergence (KIP-279)."""
    caches = {1: [(0, 0, 0), (1, 2, 120)], 2: [(0, 0, 0), (1, 1, 120)]}
    leader, follower = replica(1, 200, 150, 2), replica(2, 180, 150, 1)
    return one(leader, follower, caches=caches, divergences=[div(1, 2, 120, 180)])


@fire("KA603")
def epoch_starts_disagree(tmp: Path, mp) -> Audit:
    """Epoch 1 starts at 100 on brokers 1 and 3, at 110 on broker 2."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 0, 0), (1, 1, 110)], 3: [(0, 0, 0), (1, 1, 100)]}
    return one(*[replica(b, 300, latest_epoch=1) for b in (1, 2, 3)], caches=caches)


@silent("KA603")
def epoch_start_moved_to_log_start(tmp: Path, mp) -> Audit:
    """Broker 2's log starts at 150 (retention): Kafka moved its epoch-1 entry up to the log start; an entry
    at the log end offset is benign too."""
    caches = {1: [(0, 0, 0), (1, 1, 100)], 2: [(0, 1, 150), (1, 2, 300)], 3: [(0, 0, 0), (1, 1, 100)]}
    replicas = [replica(1, 300, latest_epoch=1), replica(2, 300, latest_epoch=2, log_start=150)]
    return one(*replicas, replica(3, 300, latest_epoch=1), caches=caches)


@fire("KA604")
def follower_holds_an_epoch_the_leader_never_had(tmp: Path, mp) -> Audit:
    """Broker 2 wrote epoch 1 records at 250..299 as a zombie leader; the leader went from epoch 0 to 2."""
    caches = {1: [(0, 0, 0), (1, 2, 250)], 2: [(0, 0, 0), (1, 1, 250)]}
    ranges = {
        1: [epoch_range(0, 0, 249), epoch_range(2, 250, 299)],
        2: [epoch_range(0, 0, 249), epoch_range(1, 250, 299)],
    }
    return one(replica(1, 300, 250, 2), replica(2, 300, 250, 1), caches=caches, ranges=ranges)


@silent("KA604")
def unknown_epoch_below_the_leader_log_start(tmp: Path, mp) -> Audit:
    """The follower's epoch-1 batches lie below the leader's log start (deleted there by retention), and
    those the leader could not read are unknown, not missing."""
    caches = {1: [(0, 2, 400)], 2: [(0, 0, 0), (1, 1, 100)]}
    leader = replica(1, 600, 600, 2, log_start=400, unreadable_from=500, unreadable_to=550, unreadable="d")
    ranges = {1: [epoch_range(2, 400, 599)], 2: [epoch_range(1, 100, 399), epoch_range(3, 500, 549)]}
    return one(leader, replica(2, 550, 550, 1), caches=caches, ranges=ranges)


# ------------------------------------------------------------------------------------------ KA620-KA623


@fire("KA620")
def leader_elected_outside_the_isr(tmp: Path, mp) -> Audit:
    """The ISR shrank to [1], then broker 2 became leader: an unclean election."""
    metadata = [*KRAFT, partition_change(-2, [1], 1), partition_change(2, [2], 2)]
    return one(*in_sync(), caches=CACHES, metadata=metadata)


@fire("KA620")
def leader_recovering(tmp: Path, mp) -> Audit:
    """Broker 1 re-elected with leaderRecoveryState RECOVERING (KIP-704)."""
    return one(*in_sync(), caches=CACHES, metadata=[*KRAFT, partition_change(1, [1], 1, recovery_state=1)])


@silent("KA620", "KA621", "KA622")
def clean_leader_change(tmp: Path, mp) -> Audit:
    """Leadership moves from 1 to 2, an ISR member: clean."""
    return one(*in_sync(), caches=CACHES, metadata=[*KRAFT, partition_change(2, None, 1)])


@fire("KA621")
def partition_offline(tmp: Path, mp) -> Audit:
    """Every replica shut down: leader -1, broker 2 was the last leader."""
    metadata = [*KRAFT, partition_change(2, None, 1), partition_change(-1, [2], 2)]
    return one(*in_sync(), caches=CACHES, metadata=metadata)


@fire("KA622")
def kraft_leader_not_among_the_inputs(tmp: Path, mp) -> Audit:
    """The metadata names broker 4 as leader; only brokers 1-3 were given."""
    return one(*in_sync(), caches=CACHES, metadata=[partition_record(4, [1, 2, 3, 4], [1, 2, 3, 4])])


@silent("KA622")
def no_kraft_metadata(tmp: Path, mp) -> Audit:
    """No metadata at all: the leader is inferred, which is KA623, not KA622."""
    return one(*in_sync(), caches=CACHES)


@fire("KA623")
def cluster_without_metadata(tmp: Path, mp) -> Audit:
    """Two partitions, neither with KRaft metadata: every leader is inferred."""
    other = [dict(r, partition=1) for r in in_sync()]
    return Audit([PartitionInput(replicas=in_sync()), PartitionInput(replicas=other)])


@silent("KA623")
def cluster_with_metadata(tmp: Path, mp) -> Audit:
    """The KRaft metadata names the leader of the partition; its ``__cluster_metadata`` replicas (leader
    always inferred there) do not count."""
    meta = [dict(replica(b, 10), topic="__cluster_metadata") for b in (100, 101)]
    return Audit([PartitionInput(replicas=in_sync(), metadata=KRAFT), PartitionInput(replicas=meta)])


# ------------------------------------------------------------------------------------------ KA630


@fire("KA630")
def follower_lags(tmp: Path, mp) -> Audit:
    """Broker 2's log is a prefix of the leader's, 50 offsets shorter."""
    return one(replica(1, 300), replica(2, 250), replica(3, 300), caches=CACHES, metadata=KRAFT)


@silent("KA630")
def shorter_follower_that_diverged(tmp: Path, mp) -> Audit:
    """Broker 2 is shorter but differs from 200: not lag (KA601), and a follower with an unknown log end
    offset (unreadable last segment) gets no lag either."""
    follower = replica(3, 200, unreadable_from=200, unreadable_to=None, unreadable="x.log: I/O error")
    return one(replica(1, 300), replica(2, 250), follower, caches=CACHES, divergences=[div(1, 2, 200, 250)])


# ------------------------------------------------------------------------------------------ KA690-KA691


@fire("KA690")
def leader_epoch_checkpoint_unreadable(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, error="leader-epoch-checkpoint: not a regular file"))


@silent("KA690")
def replica_with_an_unreadable_segment(tmp: Path, mp) -> Audit:
    """An unreadable segment is KA691, not KA690."""
    return one(replica(1, 300), replica(2, 300, unreadable_from=100, unreadable_to=200, unreadable="d"))


@fire("KA691")
def last_segment_unreadable(tmp: Path, mp) -> Audit:
    follower = replica(2, 200, 300, unreadable_from=200, unreadable_to=None, unreadable="x.log: I/O error")
    return one(replica(1, 300), follower, caches=CACHES)


@fire("KA691")
def middle_segment_cut_short(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, unreadable_from=100, unreadable_to=200, unreadable="torn"))


@silent("KA691")
def replica_with_an_unreadable_checkpoint(tmp: Path, mp) -> Audit:
    """A replica with an unreadable checkpoint but every segment read (KA690)."""
    return one(replica(1, 300), replica(2, 300, error="partition.metadata: permission denied"))


# ------------------------------------------------------------------------------------------ KA701-KA704


@fire("KA701")
def hw_above_own_leo(tmp: Path, mp) -> Audit:
    """Broker 2 checkpointed HW 300 but its log ends at 250 (lost unflushed tail)."""
    return one(replica(1, 300), replica(2, 250, 300), caches=CACHES)


@silent("KA701", "KA702")
def hw_above_an_unknown_leo(tmp: Path, mp) -> Audit:
    """The HW is above what could be read, but the last segment is unreadable: the LEO is unknown."""
    follower = replica(2, 250, 300, unreadable_from=250, unreadable_to=None, unreadable="d")
    return one(replica(1, 300), follower, replica(3, 300), caches=CACHES)


@fire("KA702", "KA704")
def follower_hw_above_the_leader(tmp: Path, mp) -> Audit:
    """The KRaft leader 1 ends at 250 (HW 250) while broker 2 checkpointed HW 300."""
    return one(replica(1, 250), replica(2, 300), replica(3, 250), caches=CACHES, metadata=KRAFT)


@silent("KA702", "KA704")
def follower_hw_trails_the_leader(tmp: Path, mp) -> Audit:
    """Followers learn the HW from the leader: theirs trails it."""
    return one(replica(1, 300), replica(2, 300, 280), replica(3, 300, 290), caches=CACHES, metadata=KRAFT)


@fire("KA703")
def hw_below_log_start(tmp: Path, mp) -> Audit:
    return one(replica(1, 300), replica(2, 300, 50, log_start=100), caches=CACHES)


@silent("KA703")
def hw_at_log_start(tmp: Path, mp) -> Audit:
    """An empty log whose HW equals its log start offset."""
    return one(replica(1, 300, 300, log_start=300), replica(2, 300, 300, log_start=300))


# ------------------------------------------------------------------------------------------ KA710-KA711


def lost_run(kind: str, lo: int, hi: int, committed_hw: int) -> dict:
    """A ``pass_loss.lost_runs`` row: broker 2's batches ``lo..hi`` the leader 1 lacks."""
    return {
        "kind": kind,
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "broker": 2,
        "leader": 1,
        "log_dir": "/d/2",
        "lo": lo,
        "hi": hi,
        "epochs": [1],
        "records": hi - lo + 1,
        "bytes": 1000,
        "batches": 2,
        "committed_hw": committed_hw,
        "leader_source": "kraft",
    }


def _diverged(*runs: dict) -> Audit:
    """Broker 2 differs from 200 on; Spark found ``runs`` from that zone."""
    audit = one(
        replica(1, 300, 250),
        replica(2, 300, 300),
        caches=CACHES,
        metadata=KRAFT,
        divergences=[div(1, 2, 200)],
    )
    audit.lost_runs = list(runs)
    return audit


@fire("KA710")
def committed_records_lost(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 299, 300))


@silent("KA710")
def only_an_uncommitted_tail(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("uncommitted", 250, 299, 250))


@fire("KA711")
def uncommitted_tail(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 249, 250), lost_run("uncommitted", 250, 299, 250))


@silent("KA711")
def only_committed_records(tmp: Path, mp) -> Audit:
    return _diverged(lost_run("committed", 200, 299, 300))
