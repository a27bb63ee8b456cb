"""KA815: capture times that cannot put a broker's captures in order, and the regressions only that order
made.

The backwards checks (:data:`ORDER_DEPENDENT`) compare two consecutive captures of a broker in the order of
their capture times. :func:`capture_order` says, per such pair, why that order is in doubt
(:func:`auditor.kafka.history.order_doubts`: a time from file mtimes, two captures less than a minute apart,
or content that is wholly older than the order says) from the captures table and :func:`pair_changes`, what
changed between the two captures summed over every partition. On Spark each chunk of partitions computes its
share of :func:`pair_changes` and the driver sums them into :attr:`History.pairs`; :func:`without_misordered`
then drops the findings of the pairs whose values went back only in the doubted order, and KA815 says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from auditor.findings import Finding, Severity
from auditor.kafka.history import MIN_CAPTURE_INTERVAL_MS, cache_rewrite, order_doubts, restart_evidence
from auditor.rules.history.model import (
    BROKER,
    History,
    broker_captures,
    caches,
    capture_ref,
    formatted_dirs,
    iso,
    pd,
    replica_series,
    run_rules,
)
from auditor.rules.registry import HISTORY_SCOPES, Violation, rule

ORDER_DEPENDENT = frozenset({"KA801", "KA802", "KA803", "KA805"})
"""Checks whose findings say a value went back from one capture of a broker to the next: a wrong order of
the two captures makes them up."""
PAIR = ["cluster", "broker", "prevT", "t"]
"""A pair of consecutive captures of a broker (the earlier one's time ``prevT``)."""
CHANGES = [*PAIR, "back", "forward", "reverseRewrites"]
"""The columns of :func:`pair_changes`."""
LISTED = 100
"""At most this many captures and pairs are listed in a KA815 finding's evidence (all are counted)."""
REASON_TEXT = {
    "mtime": "a time from file modification times",
    "interval": f"less than {MIN_CAPTURE_INTERVAL_MS // 1000} s apart",
    "content": "content older than the order says",
}


def pair_changes(h: History) -> pd.DataFrame:
    """Per pair of consecutive captures of a broker (:data:`PAIR`): ``back``/``forward``, the partitions
    whose high watermark or log start offset is lower/higher at the later capture (the same incarnation and
    log: the comparisons of :func:`~auditor.rules.history.model.replica_series`), and ``reverseRewrites``,
    the partitions whose leader-epoch-checkpoint read from the later capture to the earlier one rewrites
    committed history. Sums over partitions: the chunks' frames add up to the warehouse's."""
    frames = []
    for table in ("high_watermarks", "log_start_offsets"):
        s = replica_series(h, table)
        s = s[s["prevT"] >= 0]
        frames.append(
            pd.DataFrame(
                {
                    "cluster": s["cluster"].astype(str),
                    "broker": s["broker"].astype("int64"),
                    "prevT": s["prevT"].astype("int64"),
                    "t": s["t"].astype("int64"),
                    "tp": s["tp"].astype("int64"),
                    "back": (s["offset"] < s["prevOffset"]).to_numpy(),
                    "forward": (s["offset"] > s["prevOffset"]).to_numpy(),
                    "reverseRewrites": False,
                }
            )
        )
    frames.append(_reverse_rewrites(h))
    rows = pd.concat(frames, ignore_index=True)
    if rows.empty:
        return pd.DataFrame({c: pd.Series([], dtype=object if c == "cluster" else "int64") for c in CHANGES})
    per_partition = rows.groupby([*PAIR, "tp"], sort=False)[["back", "forward", "reverseRewrites"]].any()
    out = per_partition.groupby(level=PAIR, sort=True).sum().astype("int64").reset_index()
    return out[CHANGES]


def _reverse_rewrites(h: History) -> pd.DataFrame:
    """The partitions (``tp``) of each pair whose cache, read from the later capture to the earlier one, puts
    an offset below the later capture's high watermark in another epoch (:func:`cache_rewrite`)."""
    c = caches(h)
    st = c.states
    found: list[tuple] = []
    if not st.empty:
        prev = st["prevRow"].to_numpy()
        has_prev = prev >= 0
        safe = np.where(has_prev, prev, 0)
        sig, lineage, low = st["sig"].to_numpy(), st["lineage"].to_numpy(), st["low"].to_numpy()
        # the other order moves the first entry up when the later capture's is lower: truncateFromStart
        moved = (lineage == lineage[safe]) & (low < low[safe])
        for row in np.flatnonzero(has_prev & (sig != sig[safe]) & ~moved):
            p = int(prev[row])
            hw = int(st["hw"].iat[row])
            if cache_rewrite(c.entries(int(row)), c.entries(p), hw if hw >= 0 else None) is None:
                continue
            r = st.iloc[int(row)]
            key = (str(r["cluster"]), int(r["broker"]), int(st["t"].iat[p]), int(r["t"]))
            found.append((*key, int(r["tp"])))
    frame = pd.DataFrame(found, columns=[*PAIR, "tp"]).astype(
        {"broker": "int64", "prevT": "int64", "t": "int64", "tp": "int64"}
    )
    return frame.assign(back=False, forward=False, reverseRewrites=True)


def sum_changes(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The sum of chunks' :func:`pair_changes` frames."""
    parts = [f for f in frames if not f.empty]
    if not parts:
        return pair_changes(History())
    total = pd.concat(parts, ignore_index=True).groupby(PAIR, sort=True)[CHANGES[4:]].sum()
    return total.astype("int64").reset_index()[CHANGES]


def capture_order(h: History) -> pd.DataFrame:
    """One row per pair of consecutive captures of a broker: :data:`PAIR`, ``c``, the time sources of both
    (``prevSources``, ``sources``), :func:`pair_changes`'s counts, ``restart`` (the restart between them,
    or None), ``reasons`` (why their order is in doubt, :func:`~auditor.kafka.history.order_doubts`; empty
    when it is not) and ``explained`` (what went back is explained by the other order)."""
    cached = h._views.get("capture_order")
    if cached is not None:
        return cached
    from auditor.observe.history_rows import UNRELIABLE_TIME_SOURCES

    bc = broker_captures(h)
    cols = ["c", "cluster", "broker", "t", "prevT", "clean", "started", "timeSources"]
    pairs = bc.loc[bc["prevT"] >= 0, cols].rename(columns={"timeSources": "sources"})
    earlier = bc[[*BROKER, "t", "clean", "started", "timeSources"]].rename(
        columns={"t": "prevT", "clean": "prevClean", "started": "prevStarted", "timeSources": "prevSources"}
    )
    pairs = pairs.merge(earlier, on=[*BROKER, "prevT"], how="left")
    changes = h.pairs if h.pairs is not None else pair_changes(h)
    pairs = pairs.merge(changes.astype({"cluster": str}), on=PAIR, how="left")
    for col in CHANGES[4:]:
        pairs[col] = pairs[col].fillna(0).astype("int64")
    formatted = formatted_dirs(h)[[*BROKER, "t"]].drop_duplicates().assign(formatted=True)
    pairs = pairs.merge(formatted, on=[*BROKER, "t"], how="left")
    pairs["formatted"] = pairs["formatted"].notna()
    restarts, reasons, explained = [], [], []
    for r in pairs.itertuples(index=False):
        restart = restart_evidence(
            bool(r.prevClean),
            bool(r.clean),
            int(r.prevStarted) if r.prevStarted >= 0 else None,
            int(r.started) if r.started >= 0 else None,
            bool(r.formatted),
        )
        why, ok = order_doubts(
            unreliable_source=bool(UNRELIABLE_TIME_SOURCES & {*r.prevSources, *r.sources}),
            interval_ms=int(r.t - r.prevT),
            back=int(r.back),
            forward=int(r.forward),
            reverse_rewrites=int(r.reverseRewrites),
            restart=restart,
        )
        restarts.append(restart)
        reasons.append(why)
        explained.append(ok)
    out = pairs.drop(columns=["formatted"]).assign(restart=restarts, reasons=reasons, explained=explained)
    out = out.sort_values(PAIR, kind="stable").reset_index(drop=True)
    h._views["capture_order"] = out
    return out


def misordered(h: History) -> set[tuple[str, int, str, str]]:
    """(cluster, broker, earlier time, later time; ISO-8601) of the pairs whose values went back only in the
    doubted order of their times."""
    order = capture_order(h)
    hit = order[order["explained"].astype(bool)]
    return {(str(r.cluster), int(r.broker), iso(r.prevT), iso(r.t)) for r in hit.itertuples(index=False)}


def without_misordered(h: History, findings: list[Finding]) -> list[Finding]:
    """``findings`` less those of :data:`ORDER_DEPENDENT` between two captures of :func:`misordered`."""
    pairs = misordered(h)
    if not pairs:
        return findings

    def made_up(f: Finding) -> bool:
        if f.code not in ORDER_DEPENDENT:
            return False
        before, after = f.evidence.get("before"), f.evidence.get("after")
        if not isinstance(before, dict) or not isinstance(after, dict) or f.broker is None:
            return False
        key = (str(f.evidence.get("cluster")), int(f.broker), before.get("time"), after.get("time"))
        return key in pairs

    return [f for f in findings if not made_up(f)]


def finish_findings(h: History, findings: list[Finding]) -> list[Finding]:
    """The findings of every chunk and scope made one report's: a recreated topic's KA814 findings of
    several chunks merged (:func:`~auditor.rules.history.offsets.merge_recreated`), the regressions only a
    doubted order of captures made left out (:func:`without_misordered`)."""
    from auditor.rules.history.offsets import merge_recreated

    return without_misordered(h, merge_recreated(findings))


def history_findings(h: History, codes: Iterable[str] | None = None) -> list[Finding]:
    """Every selected check of the three history scopes over ``h`` (which holds every partition), finished
    as on Spark (:func:`finish_findings`): what ``report`` finds, in one process."""
    wanted = None if codes is None else list(codes)
    return finish_findings(h, [f for scope in HISTORY_SCOPES for f in run_rules(h, scope, wanted)])


def _mask(values: Iterable[bool]) -> np.ndarray:
    """A boolean row mask (an empty one selects no rows, not no columns)."""
    return np.fromiter(values, dtype=bool)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@rule(
    "KA815",
    "history.capture-time-unreliable",
    Severity.WARNING,
    "Capture times that cannot put a broker's captures in order",
    scope="fleet",
)
def capture_time_unreliable(h: History) -> Iterator[Violation]:
    """
    What it finds: per cluster, the captures whose time came from file modification times or the ingest
    (captures.timeSource mtime or ingest: no manifest, no time in a folder or archive name, not an archive
    member's recorded time), and the pairs of consecutive captures of a broker whose order is in doubt:
    a time from mtimes, less than 60 s apart, or trustworthy times whose content is wholly older than the
    order says (at least 2 partitions whose high watermark or log start offset went back, none forward,
    leader-epoch caches consistent in the other order, no restart in between). Between the pairs whose
    values all went back and whose other order is consistent, the backwards checks (KA801, KA802, KA803,
    KA805) report nothing: the evidence lists those pairs and how many partitions went back.
    Why it matters: the backwards checks read the captures of a broker in the order of their times. A copy
    that did not keep the files' times (cp without -a, a download) dates a capture at the copy: two nights
    copied in the wrong order, milliseconds apart, make every high watermark go back, and the report would
    claim truncated committed records that never were. The high watermark, log start offset and log end
    offset go back only through truncation, which is rare and hits single partitions: a whole broker's
    offsets going back with no restart and no new leader epoch is a wrong order, not Kafka.
    What to do: give captures trustworthy times: a time in the archive or folder name (the collection
    command's date), the kafka-auditor-capture.json manifest, or copies that keep the times (cp -a, rsync
    -a, tar); ingest the corrected captures into a new warehouse. Until then read the regressions between
    the listed captures as unordered.
    References: ``ReplicaManager.checkpointHighWatermarks`` (replica.high.watermark.checkpoint.interval.ms,
    5 s), ``LogManager.checkpointLogRecoveryOffsets`` and ``LogManager.checkpointLogStartOffsets``
    (log.flush.offset.checkpoint.interval.ms and log.flush.start.offset.checkpoint.interval.ms, 60 s).
    """
    from auditor.observe.history_rows import UNRELIABLE_TIME_SOURCES

    bc = broker_captures(h)
    if bc.empty:
        return
    weak = bc.loc[_mask(bool(UNRELIABLE_TIME_SOURCES & set(s)) for s in bc["timeSources"])]
    order = capture_order(h)
    doubted = order.loc[_mask(bool(r) for r in order["reasons"])]
    for cluster in sorted(set(weak["cluster"]) | set(doubted["cluster"])):
        w = weak[weak["cluster"] == cluster]
        d = doubted[doubted["cluster"] == cluster]
        brokers = sorted({int(b) for b in w["broker"]} | {int(b) for b in d["broker"]})
        explained = d[d["explained"].astype(bool)]
        parts = []
        if len(w):
            parts.append(f"{_plural(len(w), 'capture')} take their time from file modification times")
        close = d.loc[_mask("interval" in r for r in d["reasons"])]
        if len(close):
            gap = int((close["t"] - close["prevT"]).min())
            parts.append(
                f"{_plural(len(close), 'pair')} of captures less than {MIN_CAPTURE_INTERVAL_MS // 1000} s "
                f"apart (the closest {gap} ms)"
            )
        content = d.loc[_mask("content" in r for r in d["reasons"])]
        if len(content):
            parts.append(
                f"{_plural(len(content), 'pair')} whose content is older than the order of their times"
            )
        mixed = d[(d["back"] > 0) & (d["forward"] > 0)]
        if len(mixed):
            parts.append(
                f"between {_plural(len(mixed), 'pair')} values went both back and forward: something went "
                "back whichever order is right, reported in the order of the times"
            )
        back = int(explained["back"].sum())
        verdict = (
            f"; {_plural(back, 'partition')} went back only in that order, between "
            f"{_plural(len(explained), 'pair')} of captures: not reported as regressions"
            if len(explained)
            else ""
        )
        newest = int(max([*w["t"].tolist(), *d["t"].tolist()]))
        yield Violation(
            f"capture times of cluster {cluster} cannot be trusted to order the captures of "
            f"broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}: {'; '.join(parts)}"
            f"{verdict}",
            broker=brokers[0] if len(brokers) == 1 else None,
            log_dir=None,
            evidence={
                "cluster": cluster,
                "time": iso(newest),
                "open": True,
                "minIntervalMs": MIN_CAPTURE_INTERVAL_MS,
                "brokers": brokers,
                "unreliableCaptures": len(w),
                "captures": [
                    {"broker": int(r.broker), **capture_ref(h, cluster, int(r.broker), int(r.t))}
                    for r in w.head(LISTED).itertuples(index=False)
                ],
                "doubtedPairs": len(d),
                "pairs": [
                    {
                        "broker": int(r.broker),
                        "before": capture_ref(h, cluster, int(r.broker), int(r.prevT)),
                        "after": capture_ref(h, cluster, int(r.broker), int(r.t)),
                        "intervalMs": int(r.t - r.prevT),
                        "reasons": list(r.reasons),
                        "wentBack": int(r.back),
                        "wentForward": int(r.forward),
                        "notCompared": bool(r.explained),
                    }
                    for r in d.head(LISTED).itertuples(index=False)
                ],
            },
        )
