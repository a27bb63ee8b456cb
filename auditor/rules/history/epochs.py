"""KA804-KA805: the leader-epoch caches of a partition's replicas over time (forks between replicas, caches
rewritten between two captures of one broker).

The caches of a chunk are read once, vectorised (:func:`auditor.rules.history.model.caches`): a cache is
signed by a hash of its entries, and by a hash that ignores the first entry's start offset (Kafka moves it up
to the log start offset, ``truncateFromStart``). Only the caches those hashes cannot clear are compared entry
by entry (:mod:`auditor.kafka.history`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from auditor.findings import Severity
from auditor.kafka.history import cache_rewrite, first_disagreement
from auditor.rules.history.model import Caches, History, caches, capture_ref, iso, pd
from auditor.rules.registry import Violation, rule

EPOCH_FILE = "leader-epoch-checkpoint"


def _cache_file(topic: str, partition: int) -> str:
    return f"{topic}-{partition}/{EPOCH_FILE}"


def forks(h: History) -> list[dict]:
    """Every fork of the chunk: one dict per (diverged replica, its epoch, the other replica's epoch) with
    the earliest pair of captures that shows it and the first offset they disagree on (see KA804)."""
    c = caches(h)
    st = c.states
    if st.empty:
        return []
    known = st[(st["hw"] > st["low"]).to_numpy() & suspects(c)]
    # one incarnation of the topic at a time: a recreated topic's caches start again at offset 0
    brokers = known.groupby(["tp", "incarnation"], sort=False)["broker"].transform("nunique")
    suspects_ = known[brokers > 1]
    found: dict[tuple, dict] = {}
    for _tp, part in suspects_.groupby(["tp", "incarnation"], sort=False):
        key = (str(part["cluster"].iat[0]), str(part["topic"].iat[0]), int(part["partition"].iat[0]))
        # one state per (broker, lineage): the widest range of offsets its captures covered
        summary = part.groupby(["broker", "lineage"], sort=True).agg(
            low=("low", "min"), hw=("hw", "max"), row=("low", "idxmin")
        )
        states = [
            (int(b), lin, int(s.low), int(s.hw), c.entries(int(s.row))) for (b, lin), s in summary.iterrows()
        ]
        for i, (ba, la, _lowa, hwa, ea) in enumerate(states):
            for bb, lb, _lowb, hwb, eb in states[i + 1 :]:
                if ba == bb:
                    continue
                a = [(ea[0][0], int(summary.loc[(ba, la), "low"])), *ea[1:]]
                b = [(eb[0][0], int(summary.loc[(bb, lb), "low"])), *eb[1:]]
                hit = first_disagreement(a, b, min(hwa, hwb))
                if hit is None:
                    continue
                offset, epoch_a, epoch_b = hit
                when = _earliest(part, ba, la, offset), _earliest(part, bb, lb, offset)
                if when[0] is None or when[1] is None:
                    continue
                # the replica whose epoch at the offset is older holds what the newer epoch's leader replaced
                if epoch_a < epoch_b:
                    div, peer = (ba, epoch_a, when[0], hwa), (bb, epoch_b, when[1], hwb)
                else:
                    div, peer = (bb, epoch_b, when[1], hwb), (ba, epoch_a, when[0], hwa)
                time = max(div[2][0], peer[2][0])
                # one fork per diverged replica and pair of epochs, dated at the earliest pair of captures
                # that shows it (later captures, truncated from the start, show it at higher offsets)
                fkey = (*key, div[0], div[1], peer[1])
                old = found.get(fkey)
                peers = sorted({peer[0], *(old["peers"] if old else [])})
                if old is not None and (old["t"], old["offset"]) <= (time, offset):
                    old["peers"] = peers
                    continue
                found[fkey] = {
                    "cluster": key[0],
                    "topic": key[1],
                    "partition": int(key[2]),
                    "broker": div[0],
                    "offset": offset,
                    "epoch": div[1],
                    "t": time,
                    "peer": peer[0],
                    "peerEpoch": peer[1],
                    "peers": peers,
                    "capture": div[2],
                    "peerCapture": peer[2],
                    "cache": a if div[0] == ba else b,
                    "peerCache": b if div[0] == ba else a,
                }
    return sorted(
        found.values(), key=lambda f: (f["cluster"], f["topic"], f["partition"], f["broker"], f["t"])
    )


def suspects(c: Caches) -> np.ndarray:
    """Per state row: False when its partition's caches (of one incarnation of the topic) are provably one
    lineage, so that no two of them can fork (vectorised; True rows are compared entry by entry).

    ``G``, the union of every cache's entries after the first, must give each epoch one start offset and
    each start offset one epoch; every cache must hold each entry of ``G`` starting inside its known range
    (above its first entry, below its high watermark); its first entry's epoch must be ``G``'s epoch at its
    start offset, and caches whose first entry lies below every entry of ``G`` must agree on that epoch.
    Then every cache's epoch of an offset it knows below its high watermark is ``G``'s, the same for all.
    """
    st = c.states
    if st.empty:
        return np.zeros(0, dtype=bool)
    pid = st.groupby(["tp", "incarnation"], sort=False).ngroup().to_numpy()
    counts = st["n"].to_numpy()
    begin = st["begin"].to_numpy()
    owner = np.repeat(np.arange(len(st)), counts)
    later = (np.arange(len(owner)) - np.repeat(begin, counts)) > 0
    hw, low = st["hw"].to_numpy(), st["low"].to_numpy()
    g = pd.DataFrame({"pid": pid[owner][later], "e": c.epochs[later], "s": c.starts[later]}).drop_duplicates()
    bad = set(g.loc[g.duplicated(["pid", "e"], keep=False), "pid"]) | set(
        g.loc[g.duplicated(["pid", "s"], keep=False), "pid"]
    )
    held = np.bincount(owner[later & (c.starts < hw[owner])], minlength=len(st))
    g = g.sort_values(["pid", "s"], kind="stable")
    g["rank"] = g.groupby("pid").cumcount() + 1
    g = g.sort_values("s", kind="stable")
    left = pd.DataFrame({"pid": pid, "low": low, "top": hw - 1, "row": np.arange(len(st))})
    at_low = pd.merge_asof(
        left.sort_values("low", kind="stable"), g, left_on="low", right_on="s", by="pid", direction="backward"
    ).sort_values("row")
    at_top = pd.merge_asof(
        left.sort_values("top", kind="stable"), g, left_on="top", right_on="s", by="pid", direction="backward"
    ).sort_values("row")
    rank_low = at_low["rank"].fillna(0).to_numpy()
    inside = np.maximum(at_top["rank"].fillna(0).to_numpy() - rank_low, 0)
    known = hw > low
    first = st["firstEpoch"].to_numpy()
    g_epoch = at_low["e"].to_numpy()
    wrong_first = ~np.isnan(g_epoch) & (g_epoch != first)
    flagged = known & ((inside != held) | wrong_first)
    below_all = pd.Series(first[known & np.isnan(g_epoch)]).groupby(pid[known & np.isnan(g_epoch)]).nunique()
    bad |= set(below_all[below_all > 1].index) | set(pid[flagged])
    return np.isin(pid, list(bad))


def _earliest(part, broker: int, lineage, offset: int) -> tuple[int, int, str] | None:
    """(time, high watermark, log dir) of the earliest capture of ``broker`` with cache lineage ``lineage``
    that knew ``offset`` and had it committed (its first entry at or below it, its HW above it)."""
    rows = part[
        (part["broker"] == broker)
        & (part["lineage"] == lineage)
        & (part["low"] <= offset)
        & (part["hw"] > offset)
    ]
    if rows.empty:
        return None
    first = rows.loc[rows["t"].idxmin()]
    return int(first["t"]), int(first["hw"]), str(first["logDir"])


@rule(
    "KA804",
    "history.epoch-fork",
    Severity.ERROR,
    "Two replicas disagree on the leader epoch of an offset both had committed",
    scope="history",
)
def epoch_fork(h: History) -> Iterator[Violation]:
    """
    What it finds: two replicas of a partition (any of their captures of one incarnation of the topic, one
    topic id: a recreated topic starts again at offset 0) whose leader-epoch-checkpoints assign
    different leader epochs to an offset below both captures' high watermarks; this includes two replicas
    that disagree on the start offset of one epoch. Offsets below a cache's first entry are unknown (after
    truncateFromStart the first entry starts at the log start offset, not where its epoch began) and are
    not compared. One finding per diverged replica and pair of epochs: the replica whose epoch there is the
    older one (its records at that offset were written by a leader whose log lost), at the earliest pair
    of captures that shows it and the first offset they disagree on, the other replicas as peers.
    Why it matters: a leader epoch names one leader's log; an offset is committed when it is below the high
    watermark. Two replicas holding the same committed offset under different epochs hold different
    records there: the partition's history forked. Kafka's epoch-based truncation (KIP-101, KIP-279)
    resolves a fork by truncating the replica on the losing side, silently dropping records it had
    acknowledged; after that the segments agree again and only the history shows the loss. An unclean
    leader election is the usual cause.
    What to do: find the election that started the newer epoch (KRaft PartitionChangeRecord,
    leaderRecoveryState RECOVERING; unclean.leader.election.enable), treat the offsets from the one named
    up to the older replica's high watermark as lost, and reconcile them from the producers or from a copy
    of the diverged replica taken before it rejoined (`audit`).
    References: KIP-101, KIP-279, KIP-966, ``LeaderEpochCheckpointFile``, ``LeaderEpochFileCache``,
    ``LeaderEpochFileCache.endOffsetFor``, ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    for f in forks(h):
        t_div, hw_div, dir_div = f["capture"]
        t_peer, hw_peer, _dir_peer = f["peerCapture"]
        before = {**capture_ref(h, f["cluster"], f["broker"], t_div), "broker": f["broker"]}
        peer = {**capture_ref(h, f["cluster"], f["peer"], t_peer), "broker": f["peer"]}
        yield Violation(
            f"leader epochs of {f['topic']}-{f['partition']} forked at offset {f['offset']}: broker "
            f"{f['broker']} has it in epoch {f['epoch']} (capture of {iso(t_div)}, high watermark {hw_div}), "
            f"broker {f['peer']} in epoch {f['peerEpoch']} (capture of {iso(t_peer)}, high watermark "
            f"{hw_peer}); broker {f['broker']}'s committed records from offset {f['offset']} are not the "
            "ones the newer epoch's leader kept",
            topic=f["topic"],
            partition=f["partition"],
            broker=f["broker"],
            log_dir=dir_div,
            file=_cache_file(f["topic"], f["partition"]),
            offset_start=f["offset"],
            offset_end=min(hw_div, hw_peer) - 1,
            epoch=f["epoch"],
            peer=f["peer"],
            expected=f["peerEpoch"],
            found=f["epoch"],
            evidence={
                "cluster": f["cluster"],
                "time": iso(f["t"]),
                "capture": {**before, "highWatermark": hw_div, "leaderEpochs": f["cache"]},
                "peerCapture": {**peer, "highWatermark": hw_peer, "leaderEpochs": f["peerCache"]},
                "peers": f["peers"],
            },
            related=[{"broker": p, "topic": f["topic"], "partition": f["partition"]} for p in f["peers"]],
        )


@rule(
    "KA805",
    "history.epoch-cache-rewritten",
    Severity.WARNING,
    "A broker's leader-epoch cache of a partition was rewritten between two captures",
    scope="history",
)
def epoch_cache_rewritten(h: History) -> Iterator[Violation]:
    """
    What it finds: between two consecutive captures of one broker (same topic id), a leader-epoch-checkpoint
    that now puts an offset below the earlier capture's high watermark (and known to both: at or above both
    first entries) in another leader epoch: entries starting below that high watermark removed or their
    start offset changed other than by Kafka's truncateFromStart (front entries dropped, the first entry
    moved up to the new log start offset), or a new epoch starting below it (the log was truncated under
    data it had committed, e.g. an old leader rejoining after an unclean election: (0,0) with high
    watermark 1500, then (0,0)(2,1000)(3,1500)). Kafka's own truncateFromEnd of an uncommitted tail
    (entries at or above the high watermark) and new epochs appended at or above it stay silent. Without a
    high watermark at the earlier capture nothing was known committed.
    Why it matters: entries of the cache below the high watermark describe committed history; Kafka only
    ever drops them from the front as retention deletes the log. A rewrite means the replica truncated
    committed records and took another leader's version of them (KIP-101/KIP-279 truncation after a
    divergence): what it held there is gone from this replica.
    What to do: read it with KA801 and KA804 for the same partition: find the election that created the
    new epoch, and treat the offsets from the one named up to the earlier high watermark as replaced.
    References: KIP-101, KIP-279, KAFKA-15046, ``LeaderEpochCheckpointFile``, ``LeaderEpochFileCache``.
    """
    c = caches(h)
    st = c.states
    if st.empty:
        return
    prev = st["prevRow"].to_numpy()
    has_prev = prev >= 0
    safe_prev = np.where(has_prev, prev, 0)
    sig, lineage, low = st["sig"].to_numpy(), st["lineage"].to_numpy(), st["low"].to_numpy()
    changed = has_prev & (sig != sig[safe_prev])
    moved_up = (lineage == lineage[safe_prev]) & (low > low[safe_prev])
    for row in np.flatnonzero(changed & ~moved_up):
        p = int(prev[row])
        before, after = c.entries(p), c.entries(int(row))
        hw = int(st["hw"].iat[p])
        rewrite = cache_rewrite(before, after, hw if hw >= 0 else None)
        if rewrite is None:
            continue
        r = st.iloc[int(row)]
        cluster, topic, partition, broker = r["cluster"], r["topic"], int(r["partition"]), int(r["broker"])
        t, prev_t = int(r["t"]), int(st["t"].iat[p])
        offset = int(rewrite["offset"])
        yield Violation(
            f"leader-epoch cache of {topic}-{partition} on broker {broker} rewritten below the high "
            f"watermark {hw} of its capture of {iso(prev_t)}: offset {offset} was in epoch "
            f"{rewrite['before']}, at its capture of {iso(t)} it is in epoch {rewrite['after']} "
            f"({before} -> {after})",
            topic=topic,
            partition=partition,
            broker=broker,
            log_dir=str(r["logDir"]),
            file=_cache_file(topic, partition),
            offset_start=offset,
            offset_end=hw - 1,
            epoch=int(rewrite["after"]),
            expected=int(rewrite["before"]),
            found=int(rewrite["after"]),
            evidence={
                "cluster": cluster,
                "time": iso(t),
                "before": {
                    **capture_ref(h, cluster, broker, prev_t),
                    "leaderEpochs": before,
                    "highWatermark": hw,
                },
                "after": {**capture_ref(h, cluster, broker, t), "leaderEpochs": after},
                "removed": rewrite["removed"],
                "added": rewrite["added"],
            },
        )
