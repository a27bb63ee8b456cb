"""Per-partition replication rules over small inputs (no Spark): the current leader, high-watermark
violations, leader-epoch history, Kafka's epoch-based truncation vs the real divergence, and from which
offset each follower's data may stop matching the leader's (the zone where Spark then looks for lost
records, batch by batch).

Spark feeds one partition at a time (``applyInPandas``): its replica rows, their leader-epoch caches,
the leader-epoch ranges found in their batches, the first divergent offset of every replica pair (computed
from the batches by ``auditor.spark.compare``) and the KRaft metadata rows about the partition.

A replica is *incomplete* when some of its batches could not be read (``unreadable_from`` ..
``unreadable_to`` of its extract row: an unreadable segment, or a segment that is not the last and stops
early). Nothing is derived from what could not be read: the comparisons skip that span (``compare``), a
replica whose span runs to the end has an unknown log end offset (``leo`` is then only a lower bound) and
the rules that need it are skipped, and KA691 says which file and why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from auditor.kafka.epochs import follower_truncation, loaded_cache
from auditor.kafka.kraft import replay_partitions

METADATA_TOPIC = "__cluster_metadata"

SEVERITY = {
    "KA601": "error",
    "KA602": "error",
    "KA603": "warning",
    "KA604": "warning",
    "KA620": "warning",
    "KA621": "info",
    "KA622": "warning",
    "KA623": "info",
    "KA630": "info",
    "KA690": "warning",
    "KA691": "error",
    "KA701": "error",
    "KA702": "error",
    "KA703": "warning",
    "KA704": "warning",
    "KA710": "critical",
    "KA711": "warning",
}


@dataclass
class PartitionInput:
    replicas: list[dict] = field(default_factory=list)
    caches: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)  # broker -> (ordinal, e, s)
    ranges: dict[int, list[dict]] = field(default_factory=dict)  # broker -> epoch ranges from batches
    divergences: list[dict] = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)


@dataclass
class PartitionOutput:
    findings: list[dict] = field(default_factory=list)
    zones: list[dict] = field(default_factory=list)
    lags: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)


def _finding(code: str, replica: dict, message: str, severity: str | None = None, **extra) -> dict:
    evidence = extra.pop("evidence", {})
    out = {
        "cluster": replica.get("cluster"),
        "code": code,
        "severity": severity or SEVERITY[code],
        "topic": replica.get("topic"),
        "partition": replica.get("partition"),
        "broker": replica.get("broker"),
        "peer": None,
        "log_dir": replica.get("log_dir"),
        "offset_start": None,
        "offset_end": None,
        "epoch": None,
        "records": None,
        "bytes": None,
        "message": message,
        "evidence": json.dumps(evidence, sort_keys=True, default=str),
    }
    out.update(extra)
    return out


def _int(value) -> int | None:
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
    except TypeError:
        pass
    return int(value)


REPLICA_LAG_TIME_MAX_MS = 30_000
"""Kafka's default ``replica.lag.time.max.ms`` (30 s since Kafka 2.5, KIP-537): a follower that has not
caught up with the leader's log end offset for that long leaves the ISR. KA630 is a warning beyond it."""


def leo_known(r: dict) -> bool:
    """The replica's log end offset is known: it has no unreadable span running to the end of its log."""
    return r.get("unreadable_from") is None or r.get("unreadable_to") is not None


def hole(r: dict) -> tuple[int, int | None] | None:
    """The replica's unreadable span ``[from, to)`` (``to`` None: to the end of its log), or None."""
    lo = r.get("unreadable_from")
    return None if lo is None else (lo, r.get("unreadable_to"))


def overlaps_hole(r: dict, first: int, last: int) -> bool:
    """Offsets ``first..last`` (inclusive) touch the replica's unreadable span."""
    span = hole(r)
    return span is not None and last >= span[0] and (span[1] is None or first < span[1])


def kraft_view(metadata: list[dict], topic: str, partition: int) -> dict | None:
    """Replay the partition's records from the most complete metadata log among the nodes that have it."""
    if not metadata:
        return None
    best = max(metadata, key=lambda r: (_int(r.get("end_offset")) or 0, -(_int(r.get("node")) or 0)))
    node = best.get("node")
    chosen = sorted((r for r in metadata if r.get("node") == node), key=lambda r: _int(r["seq"]))
    state = replay_partitions(chosen).get((topic, partition))
    if state is None:
        return None
    return {
        "leader": state.leader,
        "last_known_leader": state.last_known_leader,
        "leader_epoch": state.leader_epoch,
        "isr": state.isr,
        "replicas": state.replicas,
        "leader_recovery_state": state.leader_recovery_state,
        "unclean": state.unclean,
        "history": state.history,
        "source_node": _int(node),
        "topic_id": state.topic_id,
    }


def choose_leader(replicas: list[dict], kraft: dict | None) -> tuple[dict, str]:
    """The reference replica: the KRaft leader (or last known leader when it is -1) if present among the
    inputs, else the replica with the highest latest epoch, then the highest log end offset."""
    by_broker = {r["broker"]: r for r in replicas}
    if kraft is not None:
        choice = kraft["leader"] if kraft["leader"] >= 0 else kraft["last_known_leader"]
        if choice in by_broker:
            return by_broker[choice], "kraft" if kraft["leader"] >= 0 else "kraft-last-known"

    def hint(r: dict) -> tuple:
        epoch = r["latest_epoch"] if r.get("latest_epoch") is not None else -1
        return (epoch, r["leo"], -r["broker"])

    leader = max(replicas, key=hint)
    return leader, "inferred" if kraft is None else "inferred-kraft-leader-absent"


def evaluate(inp: PartitionInput) -> PartitionOutput:
    """Every per-partition rule for one partition."""
    out = PartitionOutput()
    replicas = sorted(inp.replicas, key=lambda r: r["broker"])
    if not replicas:
        return out
    for r in replicas:
        for key in (
            "hw",
            "recovery_point",
            "cleaner_offset",
            "latest_epoch",
            "max_batch_epoch",
            "log_start_checkpoint",
            "unreadable_from",
            "unreadable_to",
        ):
            r[key] = _int(r.get(key))
        r["leo"] = int(r["leo"])
        r["log_start"] = int(r["log_start"])
    first = replicas[0]
    topic, partition = first["topic"], int(first["partition"])
    is_meta = topic == METADATA_TOPIC
    pair_div = {(d["a"], d["b"]): d for d in inp.divergences}

    def div_between(x: int, y: int) -> dict | None:
        return pair_div.get((min(x, y), max(x, y)))

    # divergence findings (every pair, including __cluster_metadata)
    by_broker = {r["broker"]: r for r in replicas}
    for (a, b), d in sorted(pair_div.items()):
        ra, rb = by_broker.get(a), by_broker.get(b)
        if ra is None or rb is None:
            continue
        top = max(ra["hw"] if ra["hw"] is not None else -1, rb["hw"] if rb["hw"] is not None else -1)
        committed = d["offset"] < top
        detail = json.loads(d["detail"]) if isinstance(d.get("detail"), str) else d.get("detail")
        out.findings.append(
            _finding(
                "KA601",
                ra,
                f"replicas on brokers {a} and {b} diverge at offset {d['offset']} (common range "
                f"[{d['lo']}, {d['hi']})); "
                + (
                    "below a checkpointed high watermark: committed data differs"
                    if committed
                    else "above both high watermarks: uncommitted data differs"
                ),
                severity="error" if committed else "warning",
                peer=b,
                offset_start=d["offset"],
                evidence={
                    "mode": d.get("mode"),
                    "hw": {a: ra["hw"], b: rb["hw"]},
                    "leo": {a: ra["leo"], b: rb["leo"]},
                    "at_offset": detail,
                },
            )
        )
    for r in replicas:
        if r.get("error"):
            out.findings.append(_finding("KA690", r, f"replica could not be read completely: {r['error']}"))
        if hole(r) is not None:
            out.findings.append(_incomplete_finding(r))

    kraft = None if is_meta else kraft_view(inp.metadata, topic, partition)
    leader, source = choose_leader(replicas, kraft)
    lb = leader["broker"]
    caches = {b: [(e, s) for _o, e, s in sorted(c)] for b, c in inp.caches.items()}
    truncations: dict[int, dict] = {}

    if not is_meta:
        _kraft_findings(out, replicas, leader, source, kraft)
        _hw_findings(out, replicas, leader, source)
        truncations = _truncation_findings(out, replicas, leader, caches, div_between)
        _epoch_findings(out, replicas, leader, caches, inp.ranges)
        _zones(out, replicas, leader, source, div_between)
        _lags(out, replicas, leader, source, kraft, caches, div_between)
    if out.zones or inp.divergences:
        # the epoch timeline of a diverged partition: leader-epoch ranges of every replica's batches
        for broker, ranges in sorted(inp.ranges.items()):
            for rg in sorted(ranges, key=lambda g: g["first"]):
                out.timeline.append(
                    {
                        "cluster": first["cluster"],
                        "topic": topic,
                        "partition": partition,
                        "broker": broker,
                        **{k: rg[k] for k in ("epoch", "first", "last", "records", "bytes", "batches")},
                    }
                )
    for r in replicas:
        d = div_between(r["broker"], lb) if r["broker"] != lb else None
        out.summary.append(
            {
                "cluster": r["cluster"],
                "topic": topic,
                "partition": partition,
                "broker": r["broker"],
                "log_dir": r["log_dir"],
                "is_leader": r["broker"] == lb,
                "leader": lb,
                "leader_source": source if not is_meta else "inferred",
                "leo": r["leo"],
                "hw": r["hw"],
                "log_start": r["log_start"],
                "recovery_point": r["recovery_point"],
                "cleaner_offset": r["cleaner_offset"],
                "latest_epoch": r["latest_epoch"],
                "max_batch_epoch": r["max_batch_epoch"],
                "clean_shutdown": bool(r.get("clean_shutdown")),
                "compacted": bool(r.get("compacted")),
                "tail_state": r.get("tail_state"),
                "tail_bytes": _int(r.get("tail_bytes")),
                "leo_known": leo_known(r),
                "unreadable_from": r.get("unreadable_from"),
                "unreadable_to": r.get("unreadable_to"),
                "unreadable": r.get("unreadable"),
                "divergence": d["offset"] if d else None,
                "truncation_offset": truncations.get(r["broker"], {}).get("offset"),
                "epochs": json.dumps(caches.get(r["broker"], [])),
                "kraft_leader": kraft["leader"] if kraft else None,
                "kraft_leader_epoch": kraft["leader_epoch"] if kraft else None,
                "kraft_isr": json.dumps(kraft["isr"]) if kraft else None,
                "kraft_leader_recovery_state": kraft["leader_recovery_state"] if kraft else None,
            }
        )
    return out


def _kraft_findings(
    out: PartitionOutput, replicas: list[dict], leader: dict, source: str, kraft: dict | None
) -> None:
    if kraft is None:
        return
    log_dirs = {r["broker"]: r["log_dir"] for r in replicas}
    for u in kraft["unclean"]:
        recovering = " with leaderRecoveryState=1 (RECOVERING)" if u["leader_recovery_state"] == 1 else ""
        isr = ",".join(str(x) for x in u["previous_isr"])
        out.findings.append(
            _finding(
                "KA620",
                leader,
                f"unclean leader election in the KRaft metadata (metadata offset {u['offset']}): broker "
                f"{u['leader']} became leader in epoch {u['leader_epoch']}{recovering} (ISR before the "
                f"change: [{isr}]); data above its log end offset on other replicas is truncated",
                broker=u["leader"],
                log_dir=log_dirs.get(u["leader"]),
                epoch=u["leader_epoch"],
                evidence={**u, "metadata_offset": u["offset"]},
            )
        )
    if source == "kraft-last-known":
        out.findings.append(
            _finding(
                "KA621",
                leader,
                "no leader in the KRaft metadata (offline partition, leader epoch "
                f"{kraft['leader_epoch']}); the "
                f"last known leader {leader['broker']} is the reference",
                epoch=kraft["leader_epoch"],
                evidence={"isr": kraft["isr"]},
            )
        )
    elif source == "inferred-kraft-leader-absent":
        choice = kraft["leader"] if kraft["leader"] >= 0 else kraft["last_known_leader"]
        out.findings.append(
            _finding(
                "KA622",
                leader,
                f"the KRaft leader {choice} is not among the inputs; broker {leader['broker']} "
                "(highest latest "
                "epoch, then log end offset) is the reference",
                peer=choice,
            )
        )


def _hw_findings(out: PartitionOutput, replicas: list[dict], leader: dict, source: str) -> None:
    lb = leader["broker"]
    for r in replicas:
        hw = r["hw"]
        if hw is None:
            continue
        if hw > r["leo"] and leo_known(r):
            out.findings.append(
                _finding(
                    "KA701",
                    r,
                    f"checkpointed high watermark {hw} is above this replica's log end offset {r['leo']}: "
                    f"{hw - r['leo']} offsets once reported committed are not in its log",
                    offset_start=r["leo"],
                    offset_end=hw - 1,
                    evidence={"hw": hw, "leo": r["leo"], "log_start": r["log_start"]},
                )
            )
        above_leader = r["broker"] != lb and hw > leader["leo"] and leo_known(leader)
        if above_leader:
            out.findings.append(
                _finding(
                    "KA702",
                    r,
                    f"high watermark {hw} of broker {r['broker']} is above the log end offset "
                    f"{leader['leo']} of the "
                    f"current leader {lb} ({source}): committed data is missing from the leader",
                    peer=lb,
                    offset_start=leader["leo"],
                    offset_end=hw - 1,
                    evidence={
                        "hw": hw,
                        "leo": r["leo"],
                        "leader_leo": leader["leo"],
                        "leader_hw": leader["hw"],
                        "leader_source": source,
                    },
                )
            )
        if hw < r["log_start"]:
            out.findings.append(
                _finding(
                    "KA703",
                    r,
                    f"checkpointed high watermark {hw} is below the log start offset {r['log_start']}",
                    offset_start=hw,
                    offset_end=r["log_start"] - 1,
                    evidence={"hw": hw, "log_start": r["log_start"]},
                )
            )
        if r["broker"] != lb and leader["hw"] is not None and hw > leader["hw"]:
            out.findings.append(
                _finding(
                    "KA704",
                    r,
                    f"follower high watermark {hw} is above the high watermark {leader['hw']} of the current "
                    f"leader {lb}",
                    peer=lb,
                    offset_start=leader["hw"],
                    offset_end=hw - 1,
                    evidence={"hw": hw, "leader_hw": leader["hw"]},
                )
            )


def clamped_hw(r: dict) -> int:
    """The high watermark Kafka loads: ``min(max(checkpoint, logStartOffset), LEO)`` (missing: 0)."""
    return min(max(r["hw"] if r["hw"] is not None else 0, r["log_start"]), r["leo"])


def _truncation_findings(out, replicas, leader, caches, div_between) -> dict[int, dict]:
    lb = leader["broker"]
    l_cache = loaded_cache(caches.get(lb, []), leader["log_start"], leader["leo"])
    result = {}
    for r in replicas:
        if r["broker"] == lb:
            continue
        if not (leo_known(r) and leo_known(leader)):
            continue  # OffsetsForLeaderEpoch needs both log end offsets
        f_cache = loaded_cache(caches.get(r["broker"], []), r["log_start"], r["leo"])
        t = follower_truncation(l_cache, leader["leo"], f_cache, r["leo"], clamped_hw(r))
        result[r["broker"]] = {"offset": t.offset, "fallback": t.fallback, "steps": t.steps}
        d = div_between(r["broker"], lb)
        if d is None or t.offset == d["offset"]:
            continue
        unsafe = t.offset > d["offset"]
        out.findings.append(
            _finding(
                "KA602",
                r,
                f"Kafka's epoch-based truncation (OffsetsForLeaderEpoch against leader {lb}) would "
                "truncate broker "
                f"{r['broker']} to offset {t.offset}, but the replicas first differ at offset {d['offset']}: "
                + (
                    "divergent data below the truncation point would survive (KIP-101/KIP-279 failure class)"
                    if unsafe
                    else "it would truncate and refetch identical data"
                ),
                severity="error" if unsafe else "info",
                peer=lb,
                offset_start=min(t.offset, d["offset"]),
                offset_end=max(t.offset, d["offset"]),
                evidence={
                    "truncation_offset": t.offset,
                    "divergence": d["offset"],
                    "fallback": t.fallback,
                    "steps": t.steps,
                    "leader_cache": l_cache,
                    "follower_cache": f_cache,
                },
            )
        )
    return result


def _epoch_findings(out, replicas, leader, caches, ranges) -> None:
    lb = leader["broker"]
    # replicas that disagree on an epoch's start offset (entries at or beyond the LEO are benign)
    starts: dict[int, list[tuple[int, int, int]]] = {}
    for r in replicas:
        for e, s in caches.get(r["broker"], []):
            if s < r["leo"]:
                starts.setdefault(e, []).append((r["broker"], s, r["log_start"]))
    for epoch, entries in sorted(starts.items()):
        low = min(s for _b, s, _ls in entries)
        odd = [b for b, s, ls in entries if s != low and not (s == ls and ls > low)]
        if odd:
            text = ", ".join(f"broker {b} at {s}" for b, s, _ls in sorted(entries))
            out.findings.append(
                _finding(
                    "KA603",
                    leader,
                    f"replicas disagree on where leader epoch {epoch} starts: {text}",
                    broker=odd[0],
                    log_dir=None,
                    offset_start=low,
                    offset_end=max(s for _b, s, _ls in entries),
                    epoch=epoch,
                    evidence={"starts": {b: s for b, s, _ls in entries}},
                )
            )
    # epochs with data on a replica that the current leader never had
    known = {e for e, _s in caches.get(lb, [])} | {rg["epoch"] for rg in ranges.get(lb, [])}
    for r in replicas:
        if r["broker"] == lb:
            continue
        for rg in sorted(ranges.get(r["broker"], []), key=lambda g: g["epoch"]):
            if rg["epoch"] < 0 or rg["epoch"] in known or rg["last"] < leader["log_start"]:
                continue
            if overlaps_hole(leader, rg["first"], rg["last"]):
                continue  # the leader's batches there could not be read
            out.findings.append(
                _finding(
                    "KA604",
                    r,
                    f"broker {r['broker']} holds {rg['records']} records "
                    f"(offsets {rg['first']}..{rg['last']}) written in leader epoch {rg['epoch']}, "
                    f"an epoch the current leader {lb} never had: they "
                    "will be truncated when it follows the leader",
                    peer=lb,
                    offset_start=rg["first"],
                    offset_end=rg["last"],
                    epoch=rg["epoch"],
                    records=rg["records"],
                    bytes=rg["bytes"],
                    evidence={"batches": rg["batches"], "leader_epochs": sorted(known)},
                )
            )


def _zones(out, replicas, leader, source, div_between) -> None:
    """Where each follower's data may stop matching the leader's: its first divergent offset, or the
    leader's LEO when the follower is merely longer. Spark compares the batches from there on."""
    lb = leader["broker"]
    for r in replicas:
        if r["broker"] == lb:
            continue
        d = div_between(r["broker"], lb)
        if d is not None:
            start = d["offset"]
        elif r["leo"] > leader["leo"]:
            start = max(leader["leo"], r["log_start"])
        else:
            continue
        span = hole(leader)
        out.zones.append(
            {
                "broker": r["broker"],
                "leader": lb,
                "leader_source": source,
                "from": start,
                "leader_unreadable_from": span[0] if span else None,
                "leader_unreadable_to": span[1] if span else None,
            }
        )


def _incomplete_finding(r: dict) -> dict:
    lo, hi = hole(r)
    if hi is None:
        where = (
            f"offsets from {lo} to the end of its log could not be read, so its log end offset is unknown "
            f"(at least {r['leo']})"
        )
    else:
        where = f"offsets {lo}..{hi - 1} could not be read"
    return _finding(
        "KA691",
        r,
        f"replica incomplete from offset {lo}: {where} ({r.get('unreadable')}); it is not compared there and "
        "no divergence, high-watermark or loss finding is derived from that span",
        offset_start=lo,
        offset_end=hi - 1 if hi is not None else None,
        evidence={"unreadable": r.get("unreadable"), "from": lo, "to": hi, "leo_known": hi is not None},
    )


def _epoch_at(cache: list[tuple[int, int]], offset: int) -> int | None:
    """The leader epoch whose range in a leader-epoch cache contains ``offset``."""
    epoch = None
    for e, s in cache:
        if s <= offset:
            epoch = e
    return epoch


def _lags(out, replicas, leader, source, kraft, caches, div_between) -> None:
    """Followers whose log is a prefix of the leader's (no divergence) and end below the leader's log end
    offset: lag rows for Spark to count the leader's records and bytes from the follower's LEO on."""
    lb = leader["broker"]
    if not leo_known(leader):
        return
    isr = kraft["isr"] if kraft is not None else None
    for r in replicas:
        if r["broker"] == lb or not leo_known(r) or r["leo"] >= leader["leo"]:
            continue
        if div_between(r["broker"], lb) is not None:
            continue  # divergent: KA601, not lag
        out.lags.append(
            {
                "cluster": r["cluster"],
                "topic": r["topic"],
                "partition": int(r["partition"]),
                "broker": r["broker"],
                "log_dir": r["log_dir"],
                "leader": lb,
                "leader_source": source,
                "from": r["leo"],
                "to": leader["leo"],
                "epoch": _epoch_at(caches.get(lb, []), r["leo"]),
                "in_isr": None if isr is None else r["broker"] in isr,
                "isr": json.dumps(isr) if isr is not None else None,
            }
        )


def lag_finding(row: dict) -> dict:
    """The KA630 finding (``rows.FINDING`` layout) of a lag row counted by ``auditor.spark.compare``: warning
    when the KRaft metadata has the follower out of the ISR, or when the leader's newest batch is more than
    ``replica.lag.time.max.ms`` (default) newer than the first batch the follower lacks; info otherwise."""
    behind_ms = None
    if row.get("first_timestamp") is not None and row.get("last_timestamp") is not None:
        behind_ms = max(0, int(row["last_timestamp"]) - int(row["first_timestamp"]))
    out_of_isr = row.get("in_isr") is False
    slow = behind_ms is not None and behind_ms > REPLICA_LAG_TIME_MAX_MS
    severity = "warning" if out_of_isr or slow else "info"
    why = []
    if row.get("in_isr") is not None:
        why.append(("out of" if out_of_isr else "in") + " the ISR in the KRaft metadata")
    if behind_ms is not None:
        why.append(f"the leader's newest batch is {behind_ms / 1000:.1f} s newer than the first one it lacks")
    records = int(row.get("records") or 0)
    nbytes = int(row.get("bytes") or 0)
    epoch = row.get("epoch")
    return {
        "cluster": row["cluster"],
        "code": "KA630",
        "severity": severity,
        "topic": row["topic"],
        "partition": row["partition"],
        "broker": row["broker"],
        "peer": row["leader"],
        "log_dir": row.get("log_dir"),
        "offset_start": row["from"],
        "offset_end": row["to"] - 1,
        "epoch": epoch,
        "records": records,
        "bytes": nbytes,
        "message": f"follower {row['broker']} is {records} records ({nbytes} bytes, offsets "
        f"{row['from']}..{row['to'] - 1}"
        + (f", from leader epoch {epoch}" if epoch is not None else "")
        + f") behind the current leader {row['leader']} ({row['leader_source']}); its log is a prefix of the "
        "leader's, so nothing is lost: it catches up by fetching" + (f" ({'; '.join(why)})" if why else ""),
        "evidence": json.dumps(
            {
                "follower_leo": row["from"],
                "leader_leo": row["to"],
                "batches": int(row.get("batches") or 0),
                "in_isr": row.get("in_isr"),
                "isr": json.loads(row["isr"]) if row.get("isr") else None,
                "behind_ms": behind_ms,
                "replica_lag_time_max_ms": REPLICA_LAG_TIME_MAX_MS,
                "leader_source": row["leader_source"],
            },
            sort_keys=True,
        ),
    }


def evaluate_rows(rows_: Iterable[dict]) -> PartitionOutput:
    """:func:`evaluate` over tagged rows ``{"kind": ..., **payload}`` of one partition."""
    inp = PartitionInput()
    for row in rows_:
        kind = row["kind"]
        if kind == "replica":
            inp.replicas.append(row)
        elif kind == "epoch":
            inp.caches.setdefault(row["broker"], []).append(
                (row["ordinal"], row["epoch"], row["start_offset"])
            )
        elif kind == "range":
            inp.ranges.setdefault(row["broker"], []).append(row)
        elif kind == "div":
            inp.divergences.append(row)
        elif kind == "metadata":
            inp.metadata.append(row)
    return evaluate(inp)
