"""KA801-KA803, KA806-KA808, KA814: the offset checkpoints and the partition directories of a broker over
time (high watermark, log start offset, recovery point, replica lag, partitions appearing and vanishing,
topic ids).

Every check is vectorised over a chunk of whole partitions (``auditor.rules.history.model``): the series
are compared in pandas, and only the flagged rows become :class:`Violation` objects.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from auditor.findings import Finding, Severity
from auditor.kafka.history import restart_evidence
from auditor.rules.history.model import (
    BROKER,
    SERIES,
    TP,
    History,
    broker_captures,
    capture_ref,
    formatted_dirs,
    incarnations,
    iso,
    pd,
    presence,
    replica_series,
    topic_ids,
)
from auditor.rules.registry import Violation, rule

HW_FILE = "replication-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
RP_FILE = "recovery-point-offset-checkpoint"


def _backwards(h: History, table: str) -> pd.DataFrame:
    s = replica_series(h, table)
    return s[(s["prevT"] >= 0) & (s["offset"] < s["prevOffset"])]


def _pair(h: History, r, name: str) -> dict:
    """The evidence of a value that changed between two captures of one broker."""
    before = {**capture_ref(h, r.cluster, r.broker, r.prevT), name: int(r.prevOffset)}
    after = {**capture_ref(h, r.cluster, r.broker, r.t), name: int(r.offset)}
    return {"cluster": r.cluster, "time": iso(r.t), "before": before, "after": after, "line": int(r.line)}


def _went_back(h: History, r, message: str, file: str, name: str) -> Violation:
    """The violation of a checkpointed offset (``name`` in the evidence) that went back from ``prevOffset``
    to ``offset`` between two captures of one broker: the offsets in between, both captures."""
    return Violation(
        message,
        topic=r.topic,
        partition=r.partition,
        broker=r.broker,
        log_dir=r.logDir,
        file=file,
        offset_start=int(r.offset),
        offset_end=int(r.prevOffset) - 1,
        expected=f">= {r.prevOffset}",
        found=int(r.offset),
        evidence=_pair(h, r, name),
    )


@rule(
    "KA801",
    "history.hw-backwards",
    Severity.ERROR,
    "A partition's high watermark on a broker went backwards between two captures",
    scope="history",
)
def hw_backwards(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition whose high watermark in a broker's replication-offset-checkpoint is lower than
    at the broker's previous capture (two consecutive captures of the broker, both holding the partition, the
    same topic id; the high watermark is the partition's, so a move between log dirs of the broker is
    compared, unless the directory.id of either log dir changed: a log dir formatted again holds a new
    replica fetched from scratch, KA810's). Offsets between the two values had been committed: the replica
    truncated below its high watermark.
    Why it matters: the high watermark only moves forward while a replica keeps its log: records below it
    were replicated to the whole ISR and acknowledged to acks=all producers. A lower value later means the
    replica truncated committed records, which Kafka does only when it follows a leader whose log diverged
    from its own: an unclean leader election, or a leader that lost data it had acknowledged. The segments
    alone no longer show it once the replicas agree again; the history does.
    What to do: find the leader election between the two capture times (controller log, KRaft metadata
    PartitionChangeRecord with leaderRecoveryState RECOVERING), check unclean.leader.election.enable, and
    compare the lost offset range with what producers and consumers recorded; run `audit` on copies of the
    replicas taken before they truncate.
    References: KIP-101, KIP-279 (epoch-based truncation), KIP-966,
    ``ReplicaManager.checkpointHighWatermarks``.
    """
    for r in _backwards(h, "high_watermarks").itertuples(index=False):
        yield _went_back(
            h,
            r,
            f"high watermark of {r.topic}-{r.partition} on broker {r.broker} went back from {r.prevOffset} "
            f"to {r.offset} between the captures of {iso(r.prevT)} and {iso(r.t)}: committed offsets "
            f"{r.offset}..{r.prevOffset - 1} were truncated (truncation below the high watermark)",
            HW_FILE,
            "highWatermark",
        )


@rule(
    "KA802",
    "history.log-start-backwards",
    Severity.WARNING,
    "A partition's log start offset on a broker went backwards between two captures",
    scope="history",
)
def log_start_backwards(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition whose log start offset in a log dir's log-start-offset-checkpoint is lower
    than at the broker's previous capture (consecutive captures, both listing the partition in that log
    dir's file, same topic id, the same directory.id of the log dir: a partition moved to another log dir,
    or a log dir formatted again, holds another log). The file lists only partitions whose log start offset
    is above their first segment's base offset, so a partition absent from it at either capture is not
    compared.
    Why it matters: the log start offset only moves forward (retention, DeleteRecords, a follower following
    the leader's log start): records below it are gone. A lower value means the log was replaced by an older
    copy (a restored disk or backup), the checkpoint was reset, or a follower re-fetched from a leader with
    an older log start: consumers may read records again that were deleted, and DeleteRecords did not hold.
    What to do: check whether the log dir was restored from a backup or moved between the captures, and
    whether DeleteRecords requests (compliance deletions) must be repeated.
    References: KIP-107 (DeleteRecords), KAFKA-16146, ``LogManager.checkpointLogStartOffsets``.
    """
    for r in _backwards(h, "log_start_offsets").itertuples(index=False):
        yield _went_back(
            h,
            r,
            f"log start offset of {r.topic}-{r.partition} on broker {r.broker} went back from "
            f"{r.prevOffset} to {r.offset} between the captures of {iso(r.prevT)} and {iso(r.t)}",
            LOG_START_FILE,
            "logStartOffset",
        )


@rule(
    "KA803",
    "history.recovery-point-backwards",
    Severity.WARNING,
    "A partition's recovery point on a broker went backwards with no restart in between",
    scope="history",
)
def recovery_point_backwards(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition whose recovery point in a log dir's recovery-point-offset-checkpoint is lower
    than at the broker's previous capture of that log dir, with no evidence of a restart between the two
    captures (neither capture taken after a clean shutdown, .kafka_cleanshutdown; the same broker start
    time when the manifest records it; no log dir of the broker with a new directory.id). A recovery point
    belongs to one log: a partition moved to another log dir of the broker (JBOD; the promoted -future log
    may have a lower one) is not compared, nor a replica in a log dir formatted again (KA810's: a new
    replica fetched from scratch). With a restart in between it stays silent: at startup Kafka recovers
    logs and may truncate them (a follower truncating to its leader's epoch end offset lowers the recovery
    point with the log end offset), and an unreadable checkpoint is reset to 0 at load (KAFKA-1758), so a
    lower value is expected.
    Why it matters: the recovery point only moves forward in a running broker (flushes), except when the log
    is truncated: data below it is known to be on disk. A running broker whose recovery point went back
    truncated its log under flushed data (follower truncation below what it had), or the checkpoint file was
    replaced: after a crash, recovery starts lower than it should, or the file lies.
    What to do: look for log truncation messages of the partition on that broker between the two capture
    times ("Truncating partition"), and for a changed log dir; compare with KA801/KA805 for the same
    partition.
    References: KAFKA-1758, KIP-101, ``LogManager.checkpointLogRecoveryOffsets``,
    ``CleanShutdownFileHandler``, ``LogManager.loadLogs``.
    """
    s = _backwards(h, "recovery_points")
    if s.empty:
        return
    bc = broker_captures(h)[[*BROKER, "t", "clean", "started"]]
    s = s.merge(bc, on=[*BROKER, "t"], how="left")
    formatted = formatted_dirs(h)[[*BROKER, "t"]].drop_duplicates().assign(formatted=True)
    s = s.merge(formatted, on=[*BROKER, "t"], how="left")
    s["formatted"] = s["formatted"].notna()
    s = s.merge(
        bc.rename(columns={"t": "prevT", "clean": "prevClean", "started": "prevStarted"}),
        on=[*BROKER, "prevT"],
        how="left",
    )
    for r in s.itertuples(index=False):
        started = None if pd.isna(r.started) or r.started < 0 else int(r.started)
        prev_started = None if pd.isna(r.prevStarted) or r.prevStarted < 0 else int(r.prevStarted)
        if restart_evidence(bool(r.prevClean), bool(r.clean), prev_started, started, bool(r.formatted)):
            continue
        yield _went_back(
            h,
            r,
            f"recovery point of {r.topic}-{r.partition} on broker {r.broker} went back from {r.prevOffset} "
            f"to {r.offset} between the captures of {iso(r.prevT)} and {iso(r.t)}, with no restart in "
            "between: the log was truncated under flushed data or the checkpoint was replaced",
            RP_FILE,
            "recoveryPoint",
        )


# ------------------------------------------------------------------------------------------ lag


def capture_rounds(h: History) -> pd.DataFrame:
    """``c, broker, t, round, last``: every broker capture with the round of captures it belongs to (an int,
    increasing with time) and ``last`` (True for the broker's latest capture of that round).

    The rounds of a cluster split its capture times in order: a round opens at a capture time and holds
    every later one at most ``settings.capture_skew_ms`` after it (a night's collection of every broker);
    the next capture time opens the next round. Values of one round are comparable: captured at most that
    far apart."""
    cached = h._views.get("capture_rounds")
    if cached is not None:
        return cached
    bc = broker_captures(h)[[*BROKER, "t"]]
    times = bc[["c", "t"]].drop_duplicates().sort_values(["c", "t"], kind="stable")
    skew = h.settings.capture_skew_ms
    rounds = np.empty(len(times), dtype=np.int64)
    current, opened, cluster = -1, 0, None
    for i, (c, t) in enumerate(zip(times["c"].tolist(), times["t"].tolist(), strict=True)):
        if c != cluster or t - opened > skew:
            current, opened, cluster = current + 1, t, c
        rounds[i] = current
    out = bc.merge(times.assign(round=rounds), on=["c", "t"], how="left")
    out = out.sort_values([*BROKER, "round", "t"], kind="stable").reset_index(drop=True)
    out["last"] = ~out.duplicated([*BROKER, "round"], keep="last")
    h._views["capture_rounds"] = out
    return out


def lag_spread(h: History) -> pd.DataFrame:
    """The high-watermark spread of every partition at each round of captures (:func:`capture_rounds`):
    one row per ``cluster, topic, partition``, incarnation of the topic (``incarnation``, its topic id:
    replicas of two incarnations are not compared) and round, dated ``t`` (the latest capture of the round
    that holds the partition), with ``low``/``high`` (the lowest and highest HW across replicas), ``lagging``
    (the broker with the lowest, the lowest id on a tie), ``replicas`` (how many had a value), all int64.

    A replica's value in a round is its HW at its broker's latest capture of the round; a broker whose
    latest capture of the round lacks the partition has none (the replica moved away), nor has a broker
    not captured in that round (values of another round were captured too far apart to compare: brokers
    captured at other times of day are not lag, and a broker no longer captured is KA811's)."""
    columns = ["tp", "incarnation", *TP, "t", "low", "high", "lagging", "replicas"]
    s = replica_series(h, "high_watermarks")[[*SERIES, *TP, "c", "t", "offset"]]
    if s.empty:
        return pd.DataFrame(columns=columns)
    rounds = capture_rounds(h)
    s = s.merge(rounds[rounds["last"]].drop(columns=["last"]), on=[*BROKER, "t"], how="inner")
    if s.empty:
        return pd.DataFrame(columns=columns)
    s = s.astype({"offset": "int64", "broker": "int64", "t": "int64"})
    s["incarnation"] = incarnations(h, s)  # a replica still holding a recreated topic's old log is not lag
    s = s.sort_values(["tp", "incarnation", "round", "offset", "broker"], kind="stable")
    g = s.groupby(["tp", "incarnation", "round"], sort=True)
    out = pd.DataFrame(
        {
            "t": g["t"].max(),
            "low": g["offset"].first(),
            "high": g["offset"].last(),
            "lagging": g["broker"].first(),
            "replicas": g["broker"].size(),
        }
    ).reset_index()
    names = s[["tp", *TP]].drop_duplicates("tp")
    return out.merge(names, on="tp", how="left")[columns]


@rule(
    "KA806",
    "history.replica-lag",
    Severity.WARNING,
    "The high watermarks of a partition's replicas stayed far apart for a long time",
    scope="history",
)
def replica_lag(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition whose high-watermark spread across its replicas (their values of one round
    of captures, captured at most settings.capture_skew_ms apart: values captured hours apart differ by
    the records written in between) stayed above --lag-records (settings.lag_records) at every round of
    a run lasting at least --lag-duration (settings.lag_duration_ms, first to last round of the run). One
    finding per run, at the capture where the run reached the duration, naming the lowest replica; open
    (evidence open: true) while the run lasts up to the partition's newest round.
    Why it matters: a follower's high watermark trails the leader's by one fetch round trip; a spread of many
    records sustained over captures means a follower that does not keep up (slow disk, throttled
    replication, a stuck fetcher) and is likely out of the ISR: the partition runs with fewer in-sync copies
    than configured, and a leader failure then forces an unclean election or unavailability.
    What to do: check the lagging broker's replica fetcher metrics (MaxLag, isr-shrinks), its disk and
    network, replication throttles (leader/follower.replication.throttled.rate), and under-replicated
    partitions; raise the threshold if the topic's producers are bursty and the lag is expected.
    References: KIP-73 (replication quotas), KIP-966, ``ReplicaManager.checkpointHighWatermarks``,
    ``Partition.maybeShrinkIsr``.
    """
    spread = lag_spread(h)
    if spread.empty:
        return
    st = h.settings
    spread = spread.sort_values(["tp", "incarnation", "t"], kind="stable").reset_index(drop=True)
    above = ((spread["high"] - spread["low"]) > st.lag_records) & (spread["replicas"] >= 2)
    key_change = (spread["tp"].shift(1) != spread["tp"]) | (
        spread["incarnation"].shift(1) != spread["incarnation"]
    )
    run = (key_change | (above != above.shift(1))).cumsum()
    start = spread["t"].groupby(run).transform("first")
    qualifies = above & (spread["t"] - start >= st.lag_duration_ms)
    # a run still going at the partition's newest round is an open condition
    last_of_key = key_change.shift(-1, fill_value=True).astype(bool)
    still = set(run[last_of_key & above].tolist())
    hits = spread[qualifies].assign(run=run[qualifies], start=start[qualifies]).drop_duplicates("run")
    for r in hits.itertuples(index=False):
        lag, low, high = int(r.high - r.low), int(r.low), int(r.high)
        yield Violation(
            f"high watermarks of {r.topic}-{r.partition} {lag} records apart (over {st.lag_records}) at "
            f"every capture since {iso(r.start)}, {(r.t - r.start) / 3_600_000:.1f} h by {iso(r.t)}: broker "
            f"{int(r.lagging)} lags at {low}, the highest replica is at {high}",
            topic=r.topic,
            partition=int(r.partition),
            broker=int(r.lagging),
            log_dir=None,
            file=HW_FILE,
            offset_start=int(r.low),
            offset_end=int(r.high) - 1,
            expected=f"<= {st.lag_records}",
            found=lag,
            records=lag,
            evidence={
                "cluster": r.cluster,
                "time": iso(r.t),
                "since": iso(r.start),
                "durationMs": int(r.t - r.start),
                "lagRecords": st.lag_records,
                "lagDurationMs": st.lag_duration_ms,
                "lowest": int(r.low),
                "highest": int(r.high),
                "replicas": int(r.replicas),
                "open": bool(r.run in still),
            },
        )


# ------------------------------------------------------------------------------------------ presence


def _presence_change(h: History, other: str) -> pd.DataFrame:
    """Presence rows whose broker's capture ``other`` (``nextT``: its next one, ``prevT``: its previous one)
    lacks the partition while it holds the log dir the partition was in."""
    p = presence(h)
    p = p.merge(broker_captures(h)[[*BROKER, "t", other]], on=[*BROKER, "t"], how="inner")
    seen = p[[*SERIES, "t"]].assign(_seen=True)
    rows = p.merge(seen.rename(columns={"t": other}), on=[*SERIES, other], how="left")
    return _captured_dir(h, rows[(rows[other] >= 0) & rows["_seen"].isna()], other)


def _captured_dir(h: History, rows: pd.DataFrame, other: str) -> pd.DataFrame:
    """``rows`` whose log dir was captured at the broker's capture ``other`` (a log dir missing from a
    capture says nothing about its partitions)."""
    if rows.empty:
        return rows
    dirs = broker_captures(h)[[*BROKER, "t", "logDirs"]].rename(columns={"t": other, "logDirs": "otherDirs"})
    rows = rows.merge(dirs, on=[*BROKER, other], how="left")
    keep = [
        isinstance(dirs_, list) and log_dir in dirs_
        for log_dir, dirs_ in zip(rows["logDir"], rows["otherDirs"], strict=True)
    ]
    return rows[np.asarray(keep, dtype=bool)]


@rule(
    "KA807",
    "history.partition-vanished",
    Severity.WARNING,
    "A partition present at a broker's capture is absent from its next capture",
    scope="history",
)
def partition_vanished(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition that a broker held at one capture (a partition directory in the capture, or an
    entry of the log dir's replication-offset-checkpoint) and that is absent from the broker's next capture,
    although that capture holds the log dir the partition was in (a log dir missing from a capture says
    nothing about its partitions).
    Why it matters: a replica leaves a broker when it is reassigned away, when its topic is deleted, or when
    Kafka renames it aside (a stray log in KRaft, a log dir that failed): unless a reassignment or a deletion
    was planned, the partition lost a replica, and in the stray case the data sits in a -stray directory.
    What to do: check the reassignments and topic deletions between the two capture times
    (kafka-reassign-partitions, the KRaft metadata), look for -stray or -delete directories in the log dir,
    and for a failed log dir in the broker's log.
    References: KIP-858 (log dir failures, JBOD), KIP-455 (reassignment),
    ``LocalLog.parseTopicPartitionName``, ``LogManager.loadLogs``.
    """
    yield from _presence_violations(h, "nextT")


@rule(
    "KA808",
    "history.partition-appeared",
    Severity.INFO,
    "A partition absent from a broker's capture is present at its next capture",
    scope="history",
)
def partition_appeared(h: History) -> Iterator[Violation]:
    """
    What it finds: a partition that a broker did not hold at one capture and holds at its next one (not at
    the broker's first capture, where everything is new; not when the earlier capture lacks the log dir the
    partition is in).
    Why it matters: a replica arrives on a broker when a partition is created or reassigned onto it, or when
    a log dir comes back; it starts empty and fetches the leader's log, so until it is in the ISR the
    partition has one copy fewer than it seems. Worth knowing next to lag and vanished partitions.
    What to do: nothing if a topic was created or a reassignment was planned; otherwise check who moved it
    (kafka-reassign-partitions, the KRaft metadata) and whether the replica caught up.
    References: KIP-455 (reassignment), ``LocalLog.parseTopicPartitionName``, ``LogManager.loadLogs``.
    """
    yield from _presence_violations(h, "prevT")


def _presence_violations(h: History, other: str) -> Iterator[Violation]:
    """KA807 (``other`` ``nextT``: gone from the broker's next capture) or KA808 (``prevT``: absent from its
    previous one) for each replica row of :func:`_presence_change`; the finding's time is the later
    capture's."""
    for r in _presence_change(h, other).itertuples(index=False):
        tp, on = f"{r.topic}-{r.partition}", f"broker {r.broker} (log dir {r.logDir}) at {iso(r.t)}"
        if other == "nextT":
            before, after = r.t, r.nextT
            message = f"{tp} was on {on} and is gone from its capture of {iso(after)}"
        else:
            before, after = r.prevT, r.t
            message = f"{tp} appeared on {on}; its capture of {iso(before)} did not hold it"
        yield Violation(
            message,
            topic=r.topic,
            partition=int(r.partition),
            broker=int(r.broker),
            log_dir=r.logDir,
            evidence={
                "cluster": r.cluster,
                "time": iso(after),
                "before": capture_ref(h, r.cluster, r.broker, before),
                "after": capture_ref(h, r.cluster, r.broker, after),
            },
        )


@rule(
    "KA814",
    "history.topic-id-changed",
    Severity.WARNING,
    "A topic was deleted and recreated: its partitions' topic id changed between captures",
    scope="history",
)
def topic_id_changed(h: History) -> Iterator[Violation]:
    """
    What it finds: a topic whose partition.metadata topic id on its brokers differs from the one they held
    at their previous capture of the partition. One finding per topic and change of id (the old and the new
    incarnation), listing every partition and broker that shows it, dated at the first capture that does.
    Why it matters: a topic id names one incarnation of a topic (KIP-516): a new id under the same name
    means the topic was deleted and created again, and everything the old topic held is gone (its offsets
    restart at 0, consumers' committed offsets point into another log). The history checks compare each
    incarnation apart: nothing of the old one (high watermarks, log start offsets, recovery points,
    leader-epoch caches, lag) is compared with the new one.
    What to do: find who deleted and recreated the topic between the two captures (the KRaft metadata's
    RemoveTopicRecord and TopicRecord, admin audit logs), reset the consumer groups of the topic, and check
    that producers did not write into the old topic until its deletion.
    References: KIP-516 (topic ids), ``PartitionMetadataFile``.
    """
    ids = topic_ids(h)
    changed = ids[ids["prevTopicId"].notna() & (ids["prevTopicId"] != ids["topicId"])]
    if changed.empty:
        return
    changed = changed.sort_values(["t", "partition", "broker"], kind="stable")
    for (cluster, topic, old, new), rows in changed.groupby(
        ["cluster", "topic", "prevTopicId", "topicId"], sort=True
    ):
        first = rows.iloc[0]
        replicas = [
            {
                "broker": int(r.broker),
                "partition": int(r.partition),
                "logDir": r.logDir,
                "before": capture_ref(h, r.cluster, int(r.broker), int(r.prevT)),
                "after": capture_ref(h, r.cluster, int(r.broker), int(r.t)),
            }
            for r in rows.itertuples(index=False)
        ]
        ids_ = (str(cluster), str(topic), str(old), str(new))
        yield recreated(*ids_, iso(first["prevT"]), iso(first["t"]), replicas)


RECREATED_LISTED = 100
"""At most this many replicas are listed in a KA814 finding's evidence (every partition and broker is)."""


def recreated(
    cluster: str,
    topic: str,
    old: str,
    new: str,
    before: str,
    after: str,
    replicas: list[dict],
    partitions: list[int] | None = None,
    brokers: list[int] | None = None,
    count: int | None = None,
) -> Violation:
    """KA814's violation for a topic whose id changed from ``old`` to ``new``, first seen between the
    captures of ``before`` and ``after`` (ISO-8601), on ``replicas`` ({broker, partition, logDir, before,
    after}; ``partitions``, ``brokers`` and ``count`` when the replicas are not all listed)."""
    partitions = sorted(set(partitions or ()) | {int(r["partition"]) for r in replicas})
    brokers = sorted(set(brokers or ()) | {int(r["broker"]) for r in replicas})
    listed = sorted(replicas, key=lambda r: (r["partition"], r["broker"]))[:RECREATED_LISTED]
    many = len(partitions) > 1
    return Violation(
        f"topic {topic} was deleted and recreated: its topic id changed from {old} to {new} between the "
        f"captures of {before} and {after} on {len(partitions)} partition{'s' if many else ''} "
        f"({', '.join(map(str, partitions))}) of broker{'s' if len(brokers) > 1 else ''} "
        f"{', '.join(map(str, brokers))}: the new incarnation starts again at offset 0",
        topic=topic,
        broker=brokers[0] if len(brokers) == 1 else None,
        log_dir=None,
        expected=old,
        found=new,
        evidence={
            "cluster": cluster,
            "time": after,
            "before": {"topicId": old, "time": before},
            "after": {"topicId": new, "time": after},
            "partitions": partitions,
            "brokers": brokers,
            "replicas": listed,
            "replicaCount": count if count is not None else len(replicas),
        },
    )


def merge_recreated(findings: list[Finding]) -> list[Finding]:
    """``findings`` with the KA814 findings of one topic and change of id merged into one (each chunk of
    partitions on Spark finds the change in its own partitions), dated at the earliest."""
    from auditor.findings import Location
    from auditor.rules.registry import REGISTRY

    groups: dict[tuple, list[Finding]] = {}
    out: list[Finding] = []
    for f in findings:
        if f.code != "KA814":
            out.append(f)
            continue
        key = (f.evidence.get("cluster"), f.topic, f.evidence.get("expected"), f.evidence.get("found"))
        groups.setdefault(key, []).append(f)
    for (cluster, topic, old, new), group in groups.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        first = min(group, key=lambda f: (f.evidence["after"]["time"], f.evidence["before"]["time"]))
        replicas = [r for f in group for r in f.evidence.get("replicas", [])]
        v = recreated(
            cluster,
            topic,
            old,
            new,
            first.evidence["before"]["time"],
            first.evidence["after"]["time"],
            replicas,
            partitions=[p for f in group for p in f.evidence.get("partitions", [])],
            brokers=[b for f in group for b in f.evidence.get("brokers", [])],
            count=sum(int(f.evidence.get("replicaCount", 0)) for f in group),
        )
        merged = REGISTRY["KA814"].finding(v, Location())
        merged.time = first.time
        out.append(merged)
    return out
