"""KA809-KA813: the brokers of the warehouse (cluster.id and directory.id of their log dirs, brokers no longer
captured) and what ``ingest`` could not read (malformed files, refused archive entries).

Scope ``fleet`` runs once per report over ``captures`` and ``brokers``; scope ``ingest`` over ``problems``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from auditor.findings import Severity
from auditor.rules.history.model import History, broker_captures, capture_ref, iso, ms, pd
from auditor.rules.registry import Violation, rule

META = "meta.properties"


def _meta(h: History) -> pd.DataFrame:
    """One row per meta.properties: ``cluster, broker, logDir, t, clusterId, directoryId`` sorted by log dir
    and time (the cluster column is the warehouse's; clusterId the file's)."""
    b = h.brokers[h.brokers["broker"].notna()]
    frame = pd.DataFrame(
        {
            "cluster": b["cluster"].astype(str),
            "broker": b["broker"].astype("int64"),
            "logDir": b["logDir"].fillna("").astype(str),
            "t": ms(b["captureTime"]),
            "clusterId": b["clusterId"],
            "directoryId": b["directoryId"],
        }
    )
    frame = frame.drop_duplicates(["cluster", "broker", "logDir", "t"])
    return frame.sort_values(["broker", "logDir", "t", "cluster"], kind="stable").reset_index(drop=True)


def _previous(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``frame`` (sorted by ``keys`` then time) with the previous row of the same ``keys`` as ``prev*``
    columns (``prevT`` -1 at the first)."""
    same = (frame[keys].shift(1) == frame[keys]).all(axis=1) if len(frame) > 1 else frame["t"] < 0
    out = frame.copy()
    for col in ("t", "cluster", "clusterId", "directoryId"):
        out["prev" + col[0].upper() + col[1:]] = frame[col].shift(1).where(same)
    out["prevT"] = out["prevT"].fillna(-1).astype("int64")
    return out


def _meta_changed(
    h: History, r: Any, message: str, key: str, prev_cluster: str, log_dir: str | None, **evidence: Any
) -> Violation:
    """A meta.properties ``key`` of broker ``r.broker`` that changed between its captures of ``r.prevT``
    (in ``prev_cluster``) and ``r.t``; ``r`` holds the key's value as ``key`` and ``prev<Key>``."""
    before = getattr(r, "prev" + key[0].upper() + key[1:])
    after = getattr(r, key)
    return Violation(
        message,
        broker=int(r.broker),
        log_dir=log_dir,
        file=META,
        expected=before,
        found=after,
        evidence={
            "cluster": r.cluster,
            "time": iso(r.t),
            "before": {**capture_ref(h, prev_cluster, r.broker, r.prevT), key: before},
            "after": {**capture_ref(h, r.cluster, r.broker, r.t), key: after},
            **evidence,
        },
    )


@rule(
    "KA809",
    "history.cluster-id-changed",
    Severity.CRITICAL,
    "A broker log dir's cluster.id changed between captures",
    scope="fleet",
)
def cluster_id_changed(h: History) -> Iterator[Violation]:
    """
    What it finds: a broker log dir (same node id, same log dir path) whose meta.properties cluster.id
    differs from the one of its previous capture, where the old cluster.id is never seen again in that log
    dir and the new one had not been seen before (two clusters whose brokers share ids and paths, captured
    side by side, alternate and are not reported). One finding per broker and change, naming every log
    dir that changed.
    Why it matters: a cluster.id is written once, when the log dir is formatted (kafka-storage format, or a
    ZooKeeper broker's first start); Kafka refuses to start a broker whose log dirs disagree with it
    ("Invalid cluster.id"). A new one means the log dir was reformatted, wiped or swapped with another
    cluster's: everything it held is gone, and a broker that joined the wrong cluster may serve another
    cluster's data.
    What to do: find who formatted the log dir and why; check that the broker belongs to the cluster it is
    now in; treat every partition it held before as lost on that broker.
    References: KIP-500, KIP-631 (kafka-storage format), ``MetaProperties``,
    ``MetaPropertiesEnsemble.verify``.
    """
    m = _meta(h)
    m = m[m["clusterId"].notna()]
    if m.empty:
        return
    span = m.groupby(["broker", "logDir", "clusterId"])["t"].agg(["min", "max"]).reset_index()
    m = _previous(m, ["broker", "logDir"])
    changed = m[m["prevClusterId"].notna() & (m["prevClusterId"] != m["clusterId"])]
    if changed.empty:
        return
    changed = changed.merge(
        span.rename(columns={"clusterId": "prevClusterId", "min": "oldFirst", "max": "oldLast"}),
        on=["broker", "logDir", "prevClusterId"],
    ).merge(span.rename(columns={"min": "newFirst", "max": "newLast"}), on=["broker", "logDir", "clusterId"])
    changed = changed[(changed["oldLast"] == changed["prevT"]) & (changed["newFirst"] == changed["t"])]
    # one finding per broker and change: the log dirs of a JBOD broker change together
    keys = ["cluster", "broker", "t", "prevT", "prevCluster", "prevClusterId", "clusterId"]
    per_broker = changed.groupby(keys, sort=True)["logDir"].agg(lambda s: sorted(set(s))).reset_index()
    for r in per_broker.itertuples(index=False):
        dirs = list(r.logDir)
        yield _meta_changed(
            h,
            r,
            f"cluster.id of broker {r.broker} (log dir{'s' if len(dirs) > 1 else ''} {', '.join(dirs)}) "
            f"changed from {r.prevClusterId} to {r.clusterId} between the captures of {iso(r.prevT)} and "
            f"{iso(r.t)}: the log dirs were formatted again or replaced",
            "clusterId",
            r.prevCluster,
            log_dir=dirs[0] if len(dirs) == 1 else None,
            logDirs=dirs,
        )


@rule(
    "KA810",
    "history.directory-id-changed",
    Severity.ERROR,
    "A broker log dir's directory.id changed between captures",
    scope="fleet",
)
def directory_id_changed(h: History) -> Iterator[Violation]:
    """
    What it finds: a broker log dir (same cluster, node id and log dir path) whose meta.properties
    directory.id differs from the one of its previous capture, with the same cluster.id (a new cluster.id
    as well is KA809's).
    Why it matters: the directory.id (KIP-858, Kafka 3.7+) names one log dir for the controller, which
    tracks which replicas live in which directory. A new id at the same path means the directory was
    formatted again or a new disk was mounted there: the replicas it held are gone from this broker, and
    the controller treats the directory as a new one.
    The replicas in it afterwards are new ones: the history checks (KA801-KA803, KA805) compare nothing
    of theirs across the change, and it counts as a restart of the broker.
    What to do: check the broker's disk history (replaced or remounted volume, a reformat), confirm the
    partitions it held were re-replicated, and that the old directory is not mounted elsewhere.
    References: KIP-858, ``MetaProperties``, ``MetaPropertiesEnsemble.verify``.
    """
    m = _meta(h)
    m = m[m["directoryId"].notna()].sort_values(["cluster", "broker", "logDir", "t"], kind="stable")
    if m.empty:
        return
    m = _previous(m.reset_index(drop=True), ["cluster", "broker", "logDir"])
    changed = m[
        m["prevDirectoryId"].notna()
        & (m["prevDirectoryId"] != m["directoryId"])
        & ~(m["prevClusterId"].notna() & m["clusterId"].notna() & (m["prevClusterId"] != m["clusterId"]))
    ]
    for r in changed.itertuples(index=False):
        yield _meta_changed(
            h,
            r,
            f"directory.id of broker {r.broker} log dir {r.logDir} changed from {r.prevDirectoryId} to "
            f"{r.directoryId} between the captures of {iso(r.prevT)} and {iso(r.t)}: the log dir was "
            "formatted again or another disk took its place",
            "directoryId",
            r.cluster,
            log_dir=r.logDir,
        )


@rule(
    "KA811",
    "history.broker-missing",
    Severity.ERROR,
    "A broker is missing from its cluster's latest captures",
    scope="fleet",
)
def broker_missing(h: History) -> Iterator[Violation]:
    """
    What it finds: a broker whose latest capture is older than its cluster's latest capture by more than
    --missing-after (settings.missing_after_ms), dated at the first capture of the cluster past that
    delay; an open condition (evidence open: true) for as long as it is missing. A broker that shows up in
    another cluster afterwards (same node id and log dir, first seen
    there after it left this one) moved: that is KA809's.
    Why it matters: every broker's small files are collected each night; one that stops appearing is down,
    decommissioned, or its collection broke, and every check of this report is blind to it: a broker that
    is down leaves its partitions under-replicated.
    What to do: check that the broker is running and that its collection job ran and was ingested; if it was
    decommissioned on purpose, its partitions must have been reassigned (KA807 on it, KA808 elsewhere).
    References: ``MetaProperties`` (the broker's node.id and cluster.id; collection hygiene).
    """
    bc = broker_captures(h)
    if bc.empty:
        return
    latest = bc.groupby(["cluster", "broker"])["t"].max().reset_index(name="last")
    newest = bc.groupby("cluster")["t"].max()
    late = latest[newest.reindex(latest["cluster"]).to_numpy() - latest["last"] > h.settings.missing_after_ms]
    if late.empty:
        return
    meta = _meta(h)
    for r in late.itertuples(index=False):
        dirs = bc[(bc["cluster"] == r.cluster) & (bc["broker"] == r.broker) & (bc["t"] == r.last)]
        log_dirs = set(dirs["logDirs"].iloc[0]) if not dirs.empty else set()
        elsewhere = meta[
            (meta["cluster"] != r.cluster) & (meta["broker"] == r.broker) & meta["logDir"].isin(log_dirs)
        ]
        if (elsewhere.groupby("cluster")["t"].min() > r.last).any():
            continue  # first seen in another cluster after it left this one: moved (KA809)
        deadline = r.last + h.settings.missing_after_ms
        times = bc[(bc["cluster"] == r.cluster) & (bc["t"] > deadline)]["t"]
        when = int(times.min())
        newest_t = int(newest[r.cluster])
        yield Violation(
            f"broker {r.broker} of cluster {r.cluster} was last captured at {iso(r.last)}, "
            f"{(newest_t - r.last) / 3_600_000:.1f} h before the cluster's latest capture ({iso(newest_t)})",
            broker=int(r.broker),
            log_dir=None,
            expected=f"captured within {h.settings.missing_after_ms} ms of {iso(newest_t)}",
            found=iso(r.last),
            evidence={
                "cluster": r.cluster,
                "time": iso(when),
                "lastCapture": capture_ref(h, r.cluster, r.broker, r.last),
                "clusterLatest": iso(newest_t),
                "missingAfterMs": h.settings.missing_after_ms,
                "open": True,  # true at the cluster's newest capture: the broker is still missing
            },
        )


# ------------------------------------------------------------------------------------------ ingest

MALFORMED_KINDS = ("malformed", "unreadable", "unidentified")
"""Problem kinds of KA812: a file of a capture Kafka could not load, or a capture without a broker id."""
REFUSED_KINDS = ("refused", "corrupt")
"""Problem kinds of KA813: an archive entry ingest would not read, or an archive it could not read."""


def _problems(h: History, kinds: tuple[str, ...]) -> Iterator[tuple]:
    p = h.problems[h.problems["kind"].isin(kinds)]
    for r in p.itertuples(index=False):
        yield r, int(ms(pd.Series([r.captureTime])).iloc[0]) if not pd.isna(r.captureTime) else None


def _problem_evidence(r, t: int | None) -> dict:
    out = {
        "cluster": r.cluster,
        "kind": r.kind,
        "source": r.source,
        "captureId": r.captureId,
        "line": None if pd.isna(r.line) else int(r.line),
    }
    if t is not None:
        out["time"] = iso(t)
    return out


def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


@rule(
    "KA812",
    "history.malformed-file",
    Severity.ERROR,
    "A checkpoint, meta.properties, partition.metadata or manifest file of a capture was malformed",
    scope="ingest",
)
def malformed_file(h: History) -> Iterator[Violation]:
    """
    What it finds: a file of an ingested capture that Kafka's reader would refuse (a malformed offset or
    leader-epoch checkpoint, meta.properties, partition.metadata) or a malformed capture manifest, as
    ingest recorded it with the file, line and byte offset; also a capture ingest could not identify (no
    broker id in meta.properties or the manifest), whose entries were left out. Open (evidence open: true)
    when the file is in the broker's newest capture.
    Why it matters: Kafka takes a log dir offline when one of its checkpoints cannot be read
    (KafkaStorageException), and resets a malformed recovery-point or log-start checkpoint at startup
    (KAFKA-1758): the broker that wrote the file will lose the log dir or recover it from scratch on its
    next start. The entries of the file are missing from the history, so the other checks are blind to it.
    What to do: look at the file on the broker (the named line), check the disk and the writer (a crash
    mid-write leaves name.tmp and the old complete file), and fix the collection if the file was cut in
    transit.
    References: KAFKA-1758, KAFKA-16541, ``CheckpointFile.read``, ``CheckpointFileWithFailureHandler``,
    ``PartitionMetadataFile``, ``MetaProperties``.
    """
    latest = broker_captures(h).groupby(["cluster", "broker"])["t"].max().to_dict()
    for r, t in _problems(h, MALFORMED_KINDS):
        line = _int(r.line)
        broker = _int(r.broker)
        evidence = _problem_evidence(r, t)
        # open while the file is malformed in the broker's newest capture
        evidence["open"] = broker is not None and t is not None and latest.get((r.cluster, broker)) == t
        where = f"{r.file}" + (f" line {line}" if line is not None else "")
        yield Violation(
            f"{r.kind} at ingest: {where}: {r.message}",
            broker=broker,
            log_dir=r.logDir,
            file=r.file,
            position=_int(r.offset),
            evidence=evidence,
        )


@rule(
    "KA813",
    "history.refused-entry",
    Severity.ERROR,
    "An archive entry was refused at ingest, or an archive could not be read",
    scope="ingest",
)
def refused_entry(h: History) -> Iterator[Violation]:
    """
    What it finds: an archive entry ingest refused to read (an absolute name, a .. component, a symbolic or
    hard link, a device, a member or archive expanding beyond the stated cap) or an archive it could not
    read at all (corrupt or truncated), with the archive and the entry.
    Why it matters: a nightly collection is a tar of plain files: links, absolute names and .. escapes are
    how a crafted archive writes outside the place it is unpacked, and a bomb exhausts memory; none of
    them come from the collection command. The capture's files behind a refused entry are missing from the
    history.
    What to do: check how the archive was made (the collection command of the README, nothing else) and
    who could write to where archives are collected; recollect the broker's files.
    References: CVE-2007-4559 (tarfile path traversal: archive hygiene); the files a capture holds are read as
    ``OffsetCheckpointFile`` and ``LeaderEpochCheckpointFile`` read them.
    """
    for r, t in _problems(h, REFUSED_KINDS):
        yield Violation(
            f"{r.kind} at ingest: {r.file}: {r.message}",
            broker=_int(r.broker),
            log_dir=r.logDir,
            file=r.file,
            position=_int(r.offset),
            evidence=_problem_evidence(r, t),
        )
