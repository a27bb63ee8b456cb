"""The input of the history checks (scopes ``history``, ``fleet``, ``ingest``): the warehouse's tables as
pandas DataFrames, plus the report's settings, and the views the checks share (vectorised).

Every frame has the columns of its table in :data:`auditor.observe.history_rows.TABLES` (``cluster`` and
``captureDate`` as plain strings, ``captureTime`` as ``datetime64[ms, UTC]``). For scope ``history`` the
per-partition frames hold whole partitions (every broker's rows of a topic partition, every capture) of one
chunk and ``captures``/``brokers`` hold every capture of the warehouse; for ``fleet`` and ``ingest`` the
per-partition frames are empty. Frames rebuilt on Spark (``auditor.spark.history``) leave ``captureId`` and
``captureDate`` of the per-partition frames null (the checks name captures through ``captures``) and add a
``tp`` column, the partition key hashed by Spark; without it the views hash (cluster, topic, partition).

The views (:func:`broker_captures`, :func:`replica_series`, :func:`topic_ids`, :func:`formatted_dirs`,
:func:`presence`, :func:`caches`) are computed once per chunk and shared by the checks; they sort and join
on integer keys (:data:`SERIES`, :data:`BROKER`) and carry the names only for the findings.
:func:`run_rules` runs the checks of one scope and turns their violations into findings dated by their
evidence's capture time.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from auditor.findings import Finding, Location
from auditor.text import iso_time as iso


class _OnFirstUse:
    """A module imported on first attribute access: every command loads the rule registry, and registering
    the history rules must not cost pandas' import (time, and memory in every scan worker)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


pd: Any = _OnFirstUse("pandas")
"""pandas, for the history rules (``from auditor.rules.history.model import pd``)."""


def empty_frame(table: str) -> pd.DataFrame:
    """An empty frame with ``table``'s columns and dtypes."""
    from auditor.observe.history_rows import TABLES  # pyarrow: only when a history rule runs

    return TABLES[table].empty_table().to_pandas()


@dataclass(frozen=True)
class HistorySettings:
    """The report's thresholds (CLI options of ``report``)."""

    lag_records: int = 10_000
    """KA806: the high-watermark spread across a partition's replicas that counts as lag."""
    lag_duration_ms: int = 24 * 3600 * 1000
    """KA806: how long (between the first and last capture above the threshold) lag must last."""
    missing_after_ms: int = 12 * 3600 * 1000
    """KA811: a broker whose latest capture is older than its cluster's latest by more than this is
    missing."""
    capture_skew_ms: int = 3600 * 1000
    """KA806: the most two captures of one round (one night's captures of a cluster's brokers) may differ
    by: replicas' high watermarks are compared only within a round, captured within this of each
    other."""


@dataclass
class History:
    """One chunk of the warehouse (see the module docstring)."""

    captures: pd.DataFrame = field(default_factory=lambda: empty_frame("captures"))
    brokers: pd.DataFrame = field(default_factory=lambda: empty_frame("brokers"))
    problems: pd.DataFrame = field(default_factory=lambda: empty_frame("problems"))
    high_watermarks: pd.DataFrame = field(default_factory=lambda: empty_frame("high_watermarks"))
    recovery_points: pd.DataFrame = field(default_factory=lambda: empty_frame("recovery_points"))
    log_start_offsets: pd.DataFrame = field(default_factory=lambda: empty_frame("log_start_offsets"))
    cleaner_offsets: pd.DataFrame = field(default_factory=lambda: empty_frame("cleaner_offsets"))
    leader_epochs: pd.DataFrame = field(default_factory=lambda: empty_frame("leader_epochs"))
    partitions: pd.DataFrame = field(default_factory=lambda: empty_frame("partitions"))
    settings: HistorySettings = field(default_factory=HistorySettings)
    pairs: pd.DataFrame | None = None
    """What changed between consecutive captures of each broker, summed over every partition
    (:func:`auditor.rules.history.ordering.pair_changes`): set by the Spark driver from the chunks' sums;
    None computes it from this History's own per-partition frames (then they hold every partition)."""
    _views: dict = field(default_factory=dict, repr=False, compare=False)
    """Derived frames shared by the checks of one chunk (filled on first use; the frames are not changed
    after construction)."""


# ------------------------------------------------------------------------------------------ shared views

TP = ["cluster", "topic", "partition"]
"""A topic partition across the warehouse (the columns every view carries for the findings)."""
SERIES = ["tp", "broker"]
"""The key of one replica's series of checkpoint values (one broker; its log dirs together): ``tp`` is an
int64 hash of (cluster, topic, partition) (a per-partition frame's own ``tp`` column when it has one, as
the Spark union does), so that the views sort and join on integers."""
PER_DIR_TABLES = frozenset({"recovery_points", "log_start_offsets"})
"""The offset-checkpoint tables whose values belong to one log (one log dir of a broker), not to the
partition: a partition moved between log dirs of a broker (JBOD; the promoted ``-future`` log) has its own
recovery point and log start offset there. Their series are kept per log dir; the high watermark's (the
partition's) runs across the broker's log dirs."""
BROKER = ["c", "broker"]
"""The key of a broker across the warehouse: ``c`` is the cluster's index in the sorted clusters."""


def tp_key(frame: pd.DataFrame) -> pd.Series:
    """The ``tp`` key of a per-partition frame's rows (its ``tp`` column, else a hash of cluster, topic,
    partition)."""
    if "tp" in frame.columns:
        return frame["tp"].astype("int64")
    if frame.empty:
        return pd.Series([], dtype="int64", index=frame.index)
    hashed = pd.util.hash_pandas_object(frame[TP].astype({"partition": "int64"}), index=False)
    return hashed.astype("uint64").astype("int64")


def cluster_codes(h: History, values: pd.Series) -> pd.Series:
    """The ``c`` code of cluster names (-1 for a cluster no capture has)."""
    clusters = h._views.get("clusters")
    if clusters is None:
        clusters = sorted(set(h.captures["cluster"].dropna().astype(str)))
        h._views["clusters"] = clusters
    codes = pd.Categorical(values.astype(object), categories=clusters).codes
    return pd.Series(codes.astype("int64"), index=values.index)


def keyed(h: History, frame: pd.DataFrame, **columns: pd.Series) -> pd.DataFrame:
    """The rows of a per-partition frame with an identified broker as ``tp, c, cluster, topic, partition,
    broker, t, logDir`` plus ``columns`` (computed from the same filtered frame by the caller's lambdas)."""
    f = frame[frame["broker"].notna()]
    out = pd.DataFrame(
        {
            "tp": tp_key(f),
            "c": cluster_codes(h, f["cluster"]),
            "cluster": f["cluster"].astype(object),
            "topic": f["topic"].astype(object),
            "partition": f["partition"].astype("int64"),
            "broker": f["broker"].astype("int64"),
            "t": ms(f["captureTime"]),
            "logDir": f["logDir"].astype(object).fillna(""),
        }
    )
    for name, values in columns.items():
        out[name] = values(f) if callable(values) else values
    return out


def _same_as_previous(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """True where a row has the same ``keys`` as the row before it."""
    same = np.zeros(len(frame), dtype=bool)
    if len(frame) > 1:
        values = frame[keys].to_numpy()
        same[1:] = (values[1:] == values[:-1]).all(axis=1)
    return same


def ms(values: pd.Series) -> pd.Series:
    """Timestamps (``datetime64[ms, UTC]``) as epoch milliseconds (int64)."""
    if values.empty:
        return pd.Series([], dtype="int64", index=values.index)
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.astype("int64")
    return values.dt.as_unit("ms").astype("int64")


def broker_captures(h: History) -> pd.DataFrame:
    """One row per capture of a broker: ``cluster, broker, t`` (capture time, ms) with ``clean`` (any log
    dir captured after a clean shutdown), ``started`` (the broker start time, ms, or -1), ``logDirs``,
    ``captureIds``, ``timeSources`` (where the times came from, ``captures.timeSource``; sorted lists) and
    the broker's previous and next capture times ``prevT``/``nextT`` (-1 when none). The captures of a
    broker's log dirs taken together share one capture time (one manifest, one archive name); captures without
    an identified broker are left out."""
    cached = h._views.get("broker_captures")
    if cached is not None:
        return cached
    c = h.captures[h.captures["broker"].notna()]
    frame = pd.DataFrame(
        {
            "c": cluster_codes(h, c["cluster"]),
            "cluster": c["cluster"].astype(str),
            "broker": c["broker"].astype("int64"),
            "t": ms(c["captureTime"]),
            "clean": c["cleanShutdown"].fillna(False).astype(bool),
            "started": ms(c["brokerStartTime"].dropna()).reindex(c.index).fillna(-1).astype("int64"),
            "logDir": c["logDir"].fillna("").astype(str),
            "captureId": c["captureId"].astype(str),
            "timeSource": c["timeSource"].fillna("").astype(str),
        }
    )
    out = (
        frame.groupby(["c", "cluster", "broker", "t"], sort=True)
        .agg(
            clean=("clean", "any"),
            started=("started", "max"),
            logDirs=("logDir", lambda s: sorted(set(s))),
            captureIds=("captureId", lambda s: sorted(set(s))),
            timeSources=("timeSource", lambda s: sorted(set(s) - {""})),
        )
        .reset_index()
    )
    grouped = out.groupby(BROKER, sort=False)["t"]
    out["prevT"] = grouped.shift(1).fillna(-1).astype("int64")
    out["nextT"] = grouped.shift(-1).fillna(-1).astype("int64")
    h._views["broker_captures"] = out
    return out


def capture_ref(h: History, cluster: str, broker: int, t: int) -> dict:
    """The evidence naming one capture of a broker: its time (ISO-8601), where that time came from
    (``timeSources``), captureIds and log dirs."""
    bc = broker_captures(h)
    row = bc[(bc["cluster"] == cluster) & (bc["broker"] == broker) & (bc["t"] == t)]
    out: dict = {"time": iso(t)}
    if not row.empty:
        out["timeSources"] = list(row["timeSources"].iloc[0])
        out["captureIds"] = list(row["captureIds"].iloc[0])
        out["logDirs"] = list(row["logDirs"].iloc[0])
    return out


def formatted_dirs(h: History) -> pd.DataFrame:
    """``c, broker, logDir, t``: the captures of a broker log dir whose meta.properties directory.id differs
    from the one of the log dir's previous capture (KA810's event: the log dir was formatted again or
    another disk took its place; the replicas in it after that are new ones, fetched from scratch)."""
    cached = h._views.get("formatted_dirs")
    if cached is not None:
        return cached
    b = h.brokers[h.brokers["broker"].notna() & h.brokers["directoryId"].notna()]
    frame = pd.DataFrame(
        {
            "c": cluster_codes(h, b["cluster"]),
            "broker": b["broker"].astype("int64"),
            "logDir": b["logDir"].astype(object).fillna(""),
            "t": ms(b["captureTime"]),
            "directoryId": b["directoryId"].astype(str),
        }
    )
    frame = frame.sort_values(["c", "broker", "logDir", "t"], kind="stable")
    frame = frame.drop_duplicates(["c", "broker", "logDir", "t"]).reset_index(drop=True)
    same = _same_as_previous(frame, ["c", "broker", "logDir"])
    ids = frame["directoryId"].to_numpy()
    changed = same.copy()
    if len(frame) > 1:
        changed[1:] &= ids[1:] != ids[:-1]
    out = frame.loc[changed, ["c", "broker", "logDir", "t"]].reset_index(drop=True)
    h._views["formatted_dirs"] = out
    return out


def _formatted_at(h: History, rows: pd.DataFrame, log_dir: str = "logDir") -> np.ndarray:
    """For rows keyed ``c, broker, t`` and a log dir column: True where that log dir's directory.id changed
    at ``t`` (see :func:`formatted_dirs`)."""
    marks = formatted_dirs(h)
    if marks.empty or rows.empty:
        return np.zeros(len(rows), dtype=bool)
    marks = marks.rename(columns={"logDir": log_dir}).assign(_formatted=True)
    merged = rows[["c", "broker", log_dir, "t"]].merge(marks, on=["c", "broker", log_dir, "t"], how="left")
    return merged["_formatted"].notna().to_numpy()


def _new_replica(h: History, frame: pd.DataFrame) -> np.ndarray:
    """For series rows sorted by key and time, each with the log dir of the row before it as ``prevDir``:
    True where the replica is a new one at ``t`` (the topic id changed, or the log dir it is in or was in
    had its directory.id changed: formatted again, the replica fetched from scratch)."""
    return new_log(h, frame).to_numpy() | _formatted_at(h, frame) | _formatted_at(h, frame, "prevDir")


def replica_series(h: History, table: str) -> pd.DataFrame:
    """One replica's values of an offset-checkpoint table over time: one row per ``cluster, topic,
    partition, broker, t`` (the largest value when a partition shows in two log dirs of one capture, e.g. a
    ``-future`` log being moved; one row per log dir as well for :data:`PER_DIR_TABLES`) with ``offset``,
    ``logDir``, ``line`` and, when the broker's previous capture also holds the partition in that table (in
    the same log dir for :data:`PER_DIR_TABLES`), ``prevT``/``prevOffset`` (else -1). Comparisons across a
    broker capture that lacks the partition, across a change of the partition's topic id (a new log: the
    topic was deleted and recreated), or across a change of the directory.id of the log dir the replica is
    or was in (a new replica: the log dir was formatted again) are not made (``prevT`` -1)."""
    cached = h._views.get(f"series:{table}")
    if cached is not None:
        return cached
    frame = keyed(
        h,
        getattr(h, table),
        offset=lambda f: f["offset"].astype("int64"),
        line=lambda f: f["line"].fillna(-1).astype("int64"),
    )
    key = [*SERIES, "logDir"] if table in PER_DIR_TABLES else SERIES
    frame = frame.sort_values([*key, "t", "offset"], kind="stable")
    frame = frame.drop_duplicates([*key, "t"], keep="last")
    bc = broker_captures(h)[[*BROKER, "t", "prevT"]].rename(columns={"prevT": "brokerPrevT"})
    frame = frame.merge(bc, on=[*BROKER, "t"], how="left")
    frame["brokerPrevT"] = frame["brokerPrevT"].fillna(-1).astype("int64")
    same = _same_as_previous(frame, key)
    prev_t = frame["t"].shift(1).fillna(-1).astype("int64")
    prev_off = frame["offset"].shift(1).fillna(-1).astype("int64")
    frame["prevDir"] = frame["logDir"].shift(1).fillna("")
    ok = same & (prev_t == frame["brokerPrevT"]).to_numpy() & (frame["brokerPrevT"] >= 0).to_numpy()
    ok &= ~_new_replica(h, frame)
    frame["prevT"] = prev_t.where(ok, -1)
    frame["prevOffset"] = prev_off.where(ok, -1)
    out = frame.drop(columns=["brokerPrevT", "prevDir"]).reset_index(drop=True)
    h._views[f"series:{table}"] = out
    return out


def topic_ids(h: History) -> pd.DataFrame:
    """``cluster, topic, partition, broker, t, topicId`` (partition.metadata, where present and valid), one
    row per broker capture, with the topic id the broker's previous row held (``prevTopicId``, None at its
    first) and that row's time ``prevT``."""
    cached = h._views.get("topic_ids")
    if cached is not None:
        return cached
    p = h.partitions[h.partitions["topicId"].notna()]
    frame = keyed(h, p, topicId=lambda f: f["topicId"].astype(str))
    frame = frame.sort_values([*SERIES, "t", "topicId"], kind="stable").drop_duplicates([*SERIES, "t"])
    frame = frame.reset_index(drop=True)
    same = pd.Series(_same_as_previous(frame, SERIES), index=frame.index)
    frame["prevTopicId"] = frame["topicId"].shift(1).where(same)
    frame["prevT"] = frame["t"].shift(1).where(same).fillna(-1).astype("int64")
    h._views["topic_ids"] = frame
    return frame


def new_log(h: History, rows: pd.DataFrame) -> pd.Series:
    """For rows keyed ``cluster, topic, partition, broker, t``: True where the partition's topic id on that
    broker changed at ``t`` (the topic was deleted and recreated: a new log, nothing to compare with)."""
    ids = topic_ids(h)
    changed = ids[ids["prevTopicId"].notna() & (ids["prevTopicId"] != ids["topicId"])]
    if changed.empty or rows.empty:
        return pd.Series(False, index=rows.index)
    marks = changed[[*SERIES, "t"]].assign(_new=True)
    merged = rows[[*SERIES, "t"]].merge(marks, on=[*SERIES, "t"], how="left")
    return pd.Series(merged["_new"].notna().to_numpy(), index=rows.index)


def incarnations(h: History, rows: pd.DataFrame) -> pd.Series:
    """For rows keyed ``tp, broker, t``: the incarnation of the topic each belongs to, its topic id
    (partition.metadata of that capture; where the capture has none, the replica's previous topic id, else
    its next one, else the partition's one topic id; "" when unknown: a Kafka without topic ids). Checks
    that compare captures of a partition compare the captures of one incarnation only: a recreated topic's
    offsets start again at 0."""
    if rows.empty:
        return pd.Series([], dtype=object, index=rows.index)
    ids = topic_ids(h)[[*SERIES, "t", "topicId"]]
    merged = rows[[*SERIES, "t"]].merge(ids, on=[*SERIES, "t"], how="left")
    merged.index = rows.index
    if merged["topicId"].isna().any() and not ids.empty:
        order = merged.sort_values([*SERIES, "t"], kind="stable")
        filled = order.groupby(SERIES, sort=False)["topicId"].transform(lambda s: s.ffill().bfill())
        merged["topicId"] = filled.reindex(merged.index)
        single = ids.groupby("tp")["topicId"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else None)
        missing = merged["topicId"].isna()
        merged.loc[missing, "topicId"] = merged.loc[missing, "tp"].map(single)
    return merged["topicId"].fillna("").astype(object)


def presence(h: History) -> pd.DataFrame:
    """``cluster, topic, partition, broker, t, logDir``: the partition is on the broker at that capture (a
    partition directory in a capture of the broker, or an entry of its replication-offset-checkpoint; the
    first log dir when two hold it)."""
    cached = h._views.get("presence")
    if cached is not None:
        return cached
    parts = [keyed(h, f) for f in (h.partitions, h.high_watermarks)]
    out = pd.concat(parts, ignore_index=True).sort_values([*SERIES, "t", "logDir"], kind="stable")
    out = out.drop_duplicates([*SERIES, "t"]).reset_index(drop=True)
    h._views["presence"] = out
    return out


def run_rules(h: History, scope: str, codes: Iterable[str] | None = None) -> list[Finding]:
    """Every registered check of ``scope`` (``history``, ``fleet`` or ``ingest``; those of ``codes`` when
    given) over ``h``, as findings: the rule's code, name and severity, the location the violation names,
    and ``time`` from the violation's evidence ``time`` (the capture in which the evidence became
    visible)."""
    from auditor.rules import runner

    out = runner.findings(runner.run(runner.rules_of(scope, codes), h), Location())
    for finding in out:
        time = finding.evidence.get("time")
        finding.time = str(time) if time is not None else None
    return out


_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)


def _mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A 64-bit hash of two int64 columns (wrapping arithmetic; order-free sums of it sign a set)."""
    with np.errstate(over="ignore"):
        x = a.astype(np.uint64) * _M1 + b.astype(np.uint64) * _M2 + _M3
        x ^= x >> np.uint64(29)
        x *= _M2
        x ^= x >> np.uint64(32)
    return x


@dataclass
class Caches:
    """The leader-epoch-checkpoint of every replica at every capture of a chunk.

    ``states``: one row per ``cluster, topic, partition, broker, t`` with ``logDir``, ``low`` (the first
    entry's start offset: offsets below it are unknown), ``firstEpoch``, ``n`` (entries), ``sig`` (a hash of
    the entries), ``lineage`` (a hash of the first entry's epoch and the other entries: equal for caches that
    differ only by ``truncateFromStart``), ``hw`` (the high watermark of that capture, -1 when the
    replication-offset-checkpoint lacks the partition), ``begin`` (row of its first entry in ``epochs`` /
    ``starts``), ``prevRow`` (the row of the broker's previous capture of the partition when it is the
    broker's previous capture, the topic id did not change and neither log dir's directory.id changed,
    else -1), ``incarnation`` (the topic id, :func:`incarnations`).
    """

    states: pd.DataFrame
    epochs: np.ndarray
    starts: np.ndarray

    def entries(self, row: int) -> list[tuple[int, int]]:
        """The entries (epoch, start offset) of the cache of state row ``row``, in file order."""
        begin = int(self.states["begin"].iat[row])
        n = int(self.states["n"].iat[row])
        return [
            (int(e), int(s))
            for e, s in zip(self.epochs[begin : begin + n], self.starts[begin : begin + n], strict=True)
        ]


def caches(h: History) -> Caches:
    """The chunk's leader-epoch caches (see :class:`Caches`), vectorised."""
    cached = h._views.get("caches")
    if cached is not None:
        return cached
    df = keyed(
        h,
        h.leader_epochs,
        position=lambda f: f["position"].astype("int64"),
        epoch=lambda f: f["epoch"].astype("int64"),
        start=lambda f: f["startOffset"].astype("int64"),
    )
    df["dir"] = pd.Categorical(df["logDir"]).codes.astype("int64") if len(df) else df["broker"]
    # one log dir per broker capture (the first, when a partition shows in two: a -future log)
    df = df.sort_values([*SERIES, "t", "dir", "position"], kind="stable").reset_index(drop=True)
    key = [*SERIES, "t"]
    if df.empty:
        new = np.zeros(0, dtype=bool)
    else:
        new = np.ones(len(df), dtype=bool)
        new[1:] = (df[key].iloc[1:].to_numpy() != df[key].iloc[:-1].to_numpy()).any(axis=1)
    new_dir = new.copy()
    if len(df):
        new_dir[1:] |= df["dir"].to_numpy()[1:] != df["dir"].to_numpy()[:-1]
    # entries of a second log dir of the same capture are dropped
    group_of_dir = np.cumsum(new_dir) - 1
    first_dir_group = np.cumsum(new) - 1
    keep_dir = pd.Series(group_of_dir).groupby(first_dir_group).transform("min").to_numpy() == group_of_dir
    df = df[keep_dir].reset_index(drop=True)
    new = new[keep_dir]
    epochs = df["epoch"].to_numpy(dtype=np.int64)
    starts = df["start"].to_numpy(dtype=np.int64)
    begin = np.flatnonzero(new)
    counts = np.diff(np.append(begin, len(df)))
    full = _mix(epochs, starts)
    lineage = np.where(new, _mix(epochs, np.full(len(df), -1, dtype=np.int64)), full)
    states = df.loc[begin, [*key, *TP, "c", "logDir"]].reset_index(drop=True)
    states["low"] = starts[begin] if len(begin) else np.zeros(0, dtype=np.int64)
    states["firstEpoch"] = epochs[begin] if len(begin) else np.zeros(0, dtype=np.int64)
    states["n"] = counts
    states["sig"] = np.add.reduceat(full, begin) if len(begin) else np.zeros(0, dtype=np.uint64)
    states["lineage"] = np.add.reduceat(lineage, begin) if len(begin) else np.zeros(0, dtype=np.uint64)
    states["begin"] = begin
    hw = replica_series(h, "high_watermarks")[[*SERIES, "t", "offset"]].rename(columns={"offset": "hw"})
    states = states.merge(hw, on=[*SERIES, "t"], how="left")
    states["hw"] = states["hw"].fillna(-1).astype("int64")
    bc = broker_captures(h)[[*BROKER, "t", "prevT"]].rename(columns={"prevT": "brokerPrevT"})
    states = states.merge(bc, on=[*BROKER, "t"], how="left")
    states["brokerPrevT"] = states["brokerPrevT"].fillna(-1).astype("int64")
    same = _same_as_previous(states, SERIES)
    prev_t = np.append(-1, states["t"].to_numpy()[:-1]) if len(states) else np.zeros(0, dtype=np.int64)
    ok = same & (prev_t == states["brokerPrevT"].to_numpy()) & (states["brokerPrevT"].to_numpy() >= 0)
    states["prevDir"] = states["logDir"].shift(1).fillna("")
    ok &= ~_new_replica(h, states)
    states["prevRow"] = np.where(ok, np.arange(len(states)) - 1, -1)
    states["incarnation"] = incarnations(h, states)
    states = states.drop(columns=["brokerPrevT", "prevDir"])
    out = Caches(states, epochs, starts)
    h._views["caches"] = out
    return out
