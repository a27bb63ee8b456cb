"""``ground-truth.json``: what really happened in a simulation and what an auditor must find on disk.

Schema (``"version": 2``; version 2 added the keys marked ``[v2]``), one object per run::

    version, generator, scenario, description, truncation_mode, options{...}, cluster_id,
    controller {id, dir} | null, brokers [{id, dir, state, crash_kind, clean_shutdown, fenced}],
    topics [{name, topic_id, partitions, producer, unclean_leader_election, min_insync_replicas,
             compression}],
    partitions [{
      topic, partition, dir, replicas,
      final {leader, leader_epoch, isr, leader_recovery_state},
      reference {broker, source}        # "metadata": the controller's leader; "inferred": highest last
                                        # epoch in leader-epoch-checkpoint, then highest LEO, then lowest id
      leader_history [{epoch, leader, start_offset, time_ms, isr, unclean, reason}],
      replica_state {"<broker>": {
          online,
          disk {log_start_offset, log_end_offset, recovered_log_end_offset, high_watermark_checkpoint,
                recovery_point_checkpoint, log_start_offset_checkpoint, leader_epoch_checkpoint,
                segments, batches, latest_epoch},
          memory {log_end_offset, high_watermark, recovery_point, leader_epoch_cache, is_leader} | null}},
      writes [{first_offset, last_offset, records, acks, status, error, leader, epoch, control, committed}],
      committed_lost [{offset, key, value, epoch, acks, acknowledged, still_on}],
      acknowledged_lost [... same fields, also not-yet-committed acks=1 writes ...],
      divergence [{replicas: [a, b], first_divergent_offset}],
      epoch_truncation [{follower, leader, truncation_offset}],
      expected_findings {hw_violations [{broker, kind, high_watermark, compared_to}],
                         truncation_loss [{offset, key, value, epoch, holders}],
                         truncation_loss_excluded [{offset, state, holders}],          [v2]
                         lost_markers [{broker, offset, marker, producer_id, producer_epoch,
                                        coordinator_epoch, epoch, committed}],          [v2]
                         divergent_uncommitted [{broker, first_offset, last_offset}]},
      hanging_transactions [{producer_id, producer_epoch, first_offset, last_offset, records,     [v2]
                             last_stable_offset, high_watermark, log_end_offset, leader,
                             markers_elsewhere [{broker, offset, marker}],
                             coordinator {transactional_id, partition, broker, state, producer_id,
                                          producer_epoch, offset} | null,
                             expected_codes}]}],
    groups [{group, offsets_partition, coordinator,                                              [v2]
             commits [{topic, partition, offset, leader_epoch, metadata, commit_timestamp, status,
                       record_offset, holders, on_coordinator}],
             partitions [{topic, partition, committed_offset, committed_leader_epoch,
                          consequences [{kind, code, ...}]}]}],
    transactions [{transactional_id, producer_id, producer_epoch, state, partition,             [v2]
                   transaction_partitions, time_ms, status}],
    expected_codes [code, ...],                                                                  [v2]
    faults [{kind, file, position, broker, topic, partition, ...}],
    events [{time_ms, event, ...}],
    log_dirs [{broker, dir, directory_id, metadata_log_dir}],                             [identity]
    topic_deletions [{topic, topic_id, partitions, replicas {"<partition>": [broker, ...]}, time_ms,
                      remove_topic_offset, remove_topic_timestamp, deleted_on, kept_on, current_topic_id,
                      offset_tombstones [{group, topic, partition, offsets_partition, status,
                                          record_offset, holders}]}],
    incarnations [{broker, log_dir, directory_id, dir, topic, partition, topic_id, current_topic_id,
                   log_start_offset, log_end_offset, records, bytes, high_watermark_checkpoint,
                   recovery_point_checkpoint, leader_epoch_checkpoint, deleted_ms, remove_topic_offset,
                   remove_topic_timestamp, dir_kind, expected_codes, scan_code}],
    deleted_replicas [... the same fields as incarnations, dir_kind "delete" ...],
    moves [{broker, topic, partition, topic_id, dir, source_log_dir, source_directory_id, target_log_dir,
            target_directory_id, log_end_offset, future_log_start_offset, future_log_end_offset,
            future_records, future_high_watermark_checkpoint, caught_up, assigned_directory_id,
            expected_codes, scan_code}],
    directory_mismatches [{broker, topic, partition, topic_id, log_dir, directory_id,
                           assigned_directory_id, assigned_log_dir, future_in_assigned_dir,
                           expected_codes}]

``faults`` kinds (``file`` relative to the output directory, ``position`` a byte position in it):
``torn-tail`` (+ length), ``crc-flip`` (+ bit, batch_position, batch_base_offset, batch_last_offset),
``index-entry-beyond-log`` (+ offset, log_position, log_size), ``time-index-entry-beyond-log``,
``hw-checkpoint-beyond-log`` / ``recovery-point-beyond-log`` (position of the partition's line; + value,
log_end_offset), ``epoch-entry-beyond-log`` (position of the line), ``snapshot-beyond-log``.
``--scale`` runs use the same schema with ``"compact": true`` and a ``stats`` object: ``writes`` is null and
``committed_lost``/``acknowledged_lost``/``truncation_loss`` hold offset ranges
``{first_offset, last_offset, records, ...}`` instead of one entry per record.

Definitions, all computed from the files as written:
* ``log_end_offset``: next offset after the last complete batch of the log (CRC not checked; a torn
  partial batch does not count); ``recovered_log_end_offset``: what Kafka's recovery would leave
  (truncation at the first invalid batch at/above the checkpointed recovery point, or at a torn tail;
  no recovery after a clean shutdown).
* Two replicas diverge at the first batch where their batch sequences differ (base or last offset,
  stored CRC, partitionLeaderEpoch; a batch present on one and missing on the other inside both logs);
  ``null`` when one log is a prefix of the other.
* ``truncation_loss``: records held by some replica but absent from, or different on, the reference
  replica, whose offset is below the highest HW checkpointed by a replica holding that same batch (so
  they were once committed); ``divergent_uncommitted``: the other differing batches, as offset ranges.
* ``committed_lost``/``acknowledged_lost`` are the simulation's own truth (records the leader once
  committed, or acknowledged, that the reference replica no longer has), whether or not the files can
  still show it; ``still_on`` lists the brokers whose files hold the identical batch.
* Keys and values are text (the simulator writes ASCII only).

Transactions and consumer groups (version 2):

* ``truncation_loss`` is transaction-aware: records of batches a replica holds and the reference lacks count
  only when a read_committed consumer could read them (plain data, or data whose transaction ends with a
  COMMIT marker of its producer later in that replica's log); data of aborted or open transactions goes to
  ``truncation_loss_excluded`` (``state`` aborted/open) and COMMIT/ABORT markers to ``lost_markers``
  (``committed``: below the once-committed HW). ``committed_lost`` likewise leaves out the records of
  transactions that were aborted or never ended.
* ``hanging_transactions``: transactions open on the reference replica's loaded log (data without a marker of
  its producer after it), with the last stable offset (first offset of the oldest open transaction below the
  high watermark, else the high watermark) and the high watermark (checkpoint clamped to the log);
  ``markers_elsewhere``: the first marker of that producer after the transaction's first offset on each other
  replica holding the same first batch; ``coordinator``: the latest ``__transaction_state`` record of the
  producer's transactional id on the reference replica of its coordinating partition; ``expected_codes``:
  KA713 when a marker exists elsewhere, KA714 when the coordinator's state is not Ongoing for that producer
  id and epoch.
* ``groups``: the ``protocol`` of each group's consumer (classic, or consumer for KIP-848), the commits it
  sent (``holders``: the replicas of its ``__consumer_offsets`` partition
  holding the commit record at ``record_offset``; ``status`` of the coordinator's append) and, per consumed
  partition, the offset the coordinator loads from the reference replica with its ``consequences``:
  ``in-lost-range`` (KA721; ``consumed_gone`` records the group consumed that the data partition's reference
  no longer has, from ``first_gone_offset`` to ``last_gone_offset``, and ``skipped`` records the reference
  now holds between the first of them and the committed offset, capped at its log end offset),
  ``above-leo`` (KA720; the committed offset above the reference's ``log_end_offset``), ``commit-lost``
  (KA723; a later commit held only by ``brokers`` that are not the reference: the group falls back to
  ``committed_offset`` and reads ``re_read`` offsets again) or ``ok``.
* ``expected_codes``: the consequence codes (KA710-KA723) the files must produce: KA710 for any
  ``truncation_loss``, KA712 for any ``lost_markers``, the hanging transactions' and the groups' codes;
  and the identity codes (KA605-KA610) of the entries below.

Replicas by Kafka's identity (keys marked ``[identity]``, :mod:`auditor.simulate.identity`):

* ``topics``/``partitions`` describe the current incarnation of each topic only: a partition's replicas, its
  divergence, losses and HW violations compare the replicas of the current topic ID and nothing else. A
  deleted topic's replicas still on disk are ``incarnations`` (their broker was down at the deletion: the
  directory keeps its name and its checkpoint entries, ``dir_kind`` live; or it was renamed ``-stray`` when
  the broker started again and lost its checkpoint entries) or ``deleted_replicas`` (``-delete``
  directories: their broker stopped within file.delete.delay.ms of the deletion). Every entry gives its
  ``expected_codes`` (audit) and ``scan_code``.
* ``groups`` ignore the commits a group made before the offset tombstones the coordinator wrote when the
  topic was deleted (when the reference replica of the offsets partition holds them).
* ``moves``: each ``-future`` directory (an interrupted AlterReplicaLogDirs); ``directory_mismatches``:
  live replicas whose KRaft ``directories`` entry names another of their broker's log dirs.
"""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.config import SimOptions
from auditor.simulate.identity import identity_codes, identity_truth
from auditor.simulate.log import SimBatch, end_offset_for
from auditor.simulate.model import LeaderChange, Replica
from auditor.simulate.writer import broker_dir_name, partition_dir_name
from parsers.dirfiles import segment_file_name
from parsers.record_batch import parse_header

GROUND_TRUTH_VERSION = 2
TP = tuple[str, int]


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


def disk_batches(rep: Replica) -> list[tuple[int, int, int, int, int | None]]:
    """(base offset, last offset, stored crc, partitionLeaderEpoch, batch id) of every complete batch in
    the files; the batch id is None when the on-disk bytes differ from the batch as written."""
    out = []
    for seg in rep.log.segments:
        for i, b in enumerate(seg.batches):
            if i in seg.damaged:
                h = parse_header(seg.damaged[i])
                out.append((h.base_offset, h.last_offset, h.crc, h.partition_leader_epoch, None))
            else:
                out.append((b.base_offset, b.last_offset, _crc(b), b.epoch, b.batch_id))
    return out


def _crc(b: SimBatch) -> int:
    return int.from_bytes(b.data[17:21], "big")


def first_divergence(a: list[tuple], b: list[tuple]) -> int | None:
    """First offset where two batch sequences disagree inside both logs (None: one is a prefix)."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][:4] == b[j][:4]:
            i += 1
            j += 1
            continue
        if a[i][1] < b[j][0]:  # a's batch ends before b's starts: b is missing it
            return a[i][0]
        if b[j][1] < a[i][0]:
            return b[j][0]
        return min(a[i][0], b[j][0])
    return None


def normalised_cache(cache: list[tuple[int, int]], leo: int) -> list[tuple[int, int]]:
    """The leader-epoch cache Kafka would load: monotonic repair, then entries at or beyond LEO dropped."""
    out: list[tuple[int, int]] = []
    for e, s in cache:
        while out and (out[-1][0] >= e or out[-1][1] >= s):
            out.pop()
        out.append((e, s))
    return [(e, s) for e, s in out if s < leo]


def epoch_truncation_offset(
    l_cache: list[tuple[int, int]], l_leo: int, f_cache: list[tuple[int, int]], f_leo: int, f_hw: int
) -> int:
    """The follower's truncation point by OffsetsForLeaderEpoch against a leader (spec §17.6); the oracle
    for ``auditor.kafka.epochs.follower_truncation``, written independently of it (see
    :func:`auditor.simulate.log.end_offset_for`)."""
    cache, leo = list(f_cache), f_leo
    requested = cache[-1][0] if cache else -1
    for _ in range(1000):
        if requested < 0:
            return min(f_hw, leo)
        e_l, o_l = end_offset_for(l_cache, l_leo, requested)
        if o_l < 0:
            return min(f_hw, leo)
        if e_l < 0:
            return min(o_l, leo)
        e_f, o_f = end_offset_for(cache, leo, e_l)
        if e_f < 0:
            return min(o_l, leo)
        if e_f != e_l:
            leo = min(o_f, leo)
            cache = [(e, s) for e, s in cache if s < leo]
            requested = e_f
            continue
        return min(o_l, o_f, leo)
    raise RuntimeError("OffsetsForLeaderEpoch did not converge")


class _ReplicaView:
    """A replica as the files show it."""

    def __init__(self, cluster: Cluster, broker: int, tp: TP) -> None:
        br = cluster.brokers[broker]
        rep = br.replicas[tp]
        self.broker = broker
        self.rep = rep
        self.batches = disk_batches(rep)
        self.by_base = {t[0]: t for t in self.batches}
        self.leo_on_disk = self.batches[-1][1] + 1 if self.batches else rep.log.segments[-1].base_offset
        self.log_start = rep.log.log_start_offset
        self.hw_ckpt = None if br.ckpt_hw is None else br.ckpt_hw.get(tp)
        self.rp_ckpt = None if br.ckpt_recovery is None else br.ckpt_recovery.get(tp)
        self.ls_ckpt = None if br.ckpt_log_start is None else br.ckpt_log_start.get(tp)
        self.epoch_file = list(rep.disk_epoch_cache)
        self.file_latest_epoch = self.epoch_file[-1][0] if self.epoch_file else -1
        self.recovered_leo = self._recovered_leo(br.clean_marker)
        # the log end offset Kafka loads (after recovery): every high-watermark and epoch relation uses it
        # (LogLoader.load -> recoverLog; UnifiedLog.updateHighWatermark clamps to it)
        self.leo = self.recovered_leo
        self.cache = normalised_cache(self.epoch_file, self.leo)
        self._objects: dict[int, SimBatch] | None = None

    def _recovered_leo(self, clean: bool) -> int:
        """Where Kafka's recovery would end the log: no recovery after a clean shutdown; otherwise every
        segment from the one holding the checkpointed recovery point is re-read up to the first invalid
        batch or torn tail."""
        if clean:
            return self.leo_on_disk
        rp = self.rp_ckpt or 0
        segs = self.rep.log.segments
        start = max(i for i, seg in enumerate(segs) if i == 0 or seg.base_offset <= rp)
        for seg in segs[start:]:
            for i, b in enumerate(seg.batches):
                if not seg.batch_valid(i):
                    return b.base_offset
            if seg.tail:
                return seg.next_offset
        return self.leo_on_disk

    def txn_states(self) -> dict[int, str]:
        """Base offset -> what each batch of this log is, transaction-wise, read from this log alone:
        ``plain``, ``committed``/``aborted`` (by the next COMMIT/ABORT marker of its producer after it),
        ``open`` (no such marker), ``marker``, ``control`` (KRaft control batches)."""
        out: dict[int, str] = {}
        next_marker: dict[int, str] = {}
        for t in reversed(self.batches):
            b = self.batch(t[0])
            if b is None:
                continue
            if b.control in ("COMMIT", "ABORT"):
                out[t[0]] = "marker"
                next_marker[b.producer_id] = b.control
            elif b.control is not None:
                out[t[0]] = "control"
            elif b.transactional:
                m = next_marker.get(b.producer_id)
                out[t[0]] = "open" if m is None else ("committed" if m == "COMMIT" else "aborted")
            else:
                out[t[0]] = "plain"
        return out

    def batch(self, base_offset: int) -> SimBatch | None:
        """The batch as written (records included) starting at ``base_offset``."""
        if self._objects is None:
            self._objects = {b.base_offset: b for b in self.rep.log.all_batches()}
        return self._objects.get(base_offset)


def _reference(cluster: Cluster, tp: TP, views: dict[int, _ReplicaView]) -> tuple[int, str]:
    ps = cluster.partitions[tp]
    if cluster.options.kraft and ps.leader >= 0:
        return ps.leader, "metadata"
    best = sorted(views.values(), key=lambda v: (-v.file_latest_epoch, -v.leo, v.broker))
    return best[0].broker, "inferred"


def _record_entries(batch: SimBatch, lo: int = 0, hi: int | None = None) -> list[tuple[int, SimBatch, int]]:
    out = []
    for k in range(len(batch.records)):
        off = batch.base_offset + k
        if off >= lo and (hi is None or off < hi):
            out.append((off, batch, k))
    return out


def partition_truth(cluster: Cluster, tp: TP) -> dict:
    ps = cluster.partitions[tp]
    views = {b: _ReplicaView(cluster, b, tp) for b in ps.replicas}
    ref_id, ref_source = _reference(cluster, tp, views)
    ref = views[ref_id]

    # ------------------------------------------------------------ simulation truth: writes and losses
    ref_ids = {t[4] for t in ref.batches if t[4] is not None}
    holders_of: dict[int, list[int]] = {}
    for v in views.values():
        for t in v.batches:
            if t[4] is not None:
                holders_of.setdefault(t[4], []).append(v.broker)
    writes, committed_lost, acked_lost = [], [], []
    for w in cluster.writes:
        if w.tp != tp:
            continue
        b = w.batch
        committed = b is not None and cluster.committed_ms(b) is not None
        writes.append(
            {
                "first_offset": b.base_offset if b else None,
                "last_offset": b.last_offset if b else None,
                "records": len(b.records) if b else 0,
                "acks": w.acks,
                "status": w.status,
                "error": w.error,
                "leader": w.leader,
                "epoch": w.epoch,
                "control": b.control if b else None,
                "committed": committed,
            }
        )
        if b is None or b.control is not None or b.batch_id in ref_ids:
            continue
        if b.transactional and cluster.txn_outcome.get(b.batch_id) != "committed":
            continue  # aborted, or never ended: no read_committed consumer ever saw it
        for off, bt, k in _record_entries(b):
            rec = bt.records[k]
            item = {
                "offset": off,
                "key": _text(rec.key),
                "value": _text(rec.value),
                "epoch": bt.epoch,
                "acks": w.acks,
                "acknowledged": w.acknowledged,
                "still_on": sorted(holders_of.get(bt.batch_id, [])),
            }
            if committed:
                committed_lost.append(item)
            if w.acknowledged:
                acked_lost.append(item)

    # -------------------------------------------------------------------- on-disk expectations
    ids = sorted(views)
    divergence = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            divergence.append(
                {
                    "replicas": [a, b],
                    "first_divergent_offset": first_divergence(views[a].batches, views[b].batches),
                }
            )
    epoch_trunc = []
    for b in ids:
        if b == ref_id:
            continue
        v = views[b]
        hw = min(max(v.hw_ckpt or 0, v.log_start), v.leo)
        epoch_trunc.append(
            {
                "follower": b,
                "leader": ref_id,
                "truncation_offset": epoch_truncation_offset(ref.cache, ref.leo, v.cache, v.leo, hw),
            }
        )

    hw_violations = []
    for b in ids:
        v = views[b]
        if v.hw_ckpt is None:
            continue
        if v.hw_ckpt > v.leo:
            hw_violations.append(
                {"broker": b, "kind": "hw_above_leo", "high_watermark": v.hw_ckpt, "compared_to": v.leo}
            )
        if v.hw_ckpt < v.log_start:
            hw_violations.append(
                {
                    "broker": b,
                    "kind": "hw_below_log_start",
                    "high_watermark": v.hw_ckpt,
                    "compared_to": v.log_start,
                }
            )
        if b != ref_id:
            if v.hw_ckpt > ref.leo:
                hw_violations.append(
                    {
                        "broker": b,
                        "kind": "hw_above_leader_leo",
                        "high_watermark": v.hw_ckpt,
                        "compared_to": ref.leo,
                    }
                )
            if ref.hw_ckpt is not None and v.hw_ckpt > ref.hw_ckpt:
                hw_violations.append(
                    {
                        "broker": b,
                        "kind": "follower_hw_above_leader_hw",
                        "high_watermark": v.hw_ckpt,
                        "compared_to": ref.hw_ckpt,
                    }
                )

    # A record held by a replica but absent from / different on the reference was committed if some
    # replica holding that same batch checkpointed an HW above its offset (a follower's HW never covers
    # data it did not copy from the then-leader, so the batch was below that leader's HW).
    committed_hw: dict[tuple, int] = {}
    for v in views.values():
        for t in v.batches:
            committed_hw[t[:4]] = max(committed_hw.get(t[:4], 0), v.hw_ckpt or 0)
    loss: dict[int, dict] = {}
    lost_markers: dict[tuple[int, int], dict] = {}
    excluded: dict[int, dict] = {}
    uncommitted = []
    for b in ids:
        if b == ref_id:
            continue
        v = views[b]
        states = v.txn_states()
        run: list[int] | None = None
        for t in v.batches:
            differs = ref.by_base.get(t[0], (None,))[:4] != t[:4]
            hw = committed_hw[t[:4]]
            batch = v.batch(t[0]) if differs else None
            state = states.get(t[0], "plain")
            if differs and batch is not None and state == "marker":
                lost_markers[(b, t[0])] = {
                    "broker": b,
                    "offset": t[0],
                    "marker": batch.control,
                    "producer_id": batch.producer_id,
                    "producer_epoch": batch.producer_epoch,
                    "coordinator_epoch": batch.coordinator_epoch,
                    "epoch": batch.epoch,
                    "committed": t[0] < hw,
                }
            elif differs and t[0] < hw and batch is not None and state in ("aborted", "open"):
                for off, _bt, _k in _record_entries(batch, hi=hw):
                    item = excluded.setdefault(off, {"offset": off, "state": state, "holders": []})
                    if b not in item["holders"]:
                        item["holders"].append(b)
            elif differs and t[0] < hw and batch is not None and state != "control":
                for off, bt, k in _record_entries(batch, hi=hw):
                    rec = bt.records[k]
                    item = loss.setdefault(
                        off,
                        {
                            "offset": off,
                            "key": _text(rec.key),
                            "value": _text(rec.value),
                            "epoch": bt.epoch,
                            "holders": [],
                        },
                    )
                    if b not in item["holders"]:
                        item["holders"].append(b)
            if differs and t[1] >= hw:
                lo = max(t[0], hw)
                run = [run[0], t[1]] if run else [lo, t[1]]
            elif run:
                uncommitted.append({"broker": b, "first_offset": run[0], "last_offset": run[1]})
                run = None
        if run:
            uncommitted.append({"broker": b, "first_offset": run[0], "last_offset": run[1]})

    state = {}
    for b in ids:
        v = views[b]
        br = cluster.brokers[b]
        rep = v.rep
        state[str(b)] = {
            "online": br.alive,
            "disk": {
                "log_start_offset": v.log_start,
                "log_end_offset": v.leo_on_disk,
                "recovered_log_end_offset": v.recovered_leo,
                "high_watermark_checkpoint": v.hw_ckpt,
                "recovery_point_checkpoint": v.rp_ckpt,
                "log_start_offset_checkpoint": v.ls_ckpt,
                "leader_epoch_checkpoint": [list(e) for e in v.epoch_file],
                "segments": [s.base_offset for s in rep.log.segments],
                "batches": len(v.batches),
                "latest_epoch": v.cache[-1][0] if v.cache else None,
            },
            "memory": None
            if not br.alive
            else {
                "log_end_offset": rep.log.leo,
                "high_watermark": rep.hw,
                "recovery_point": rep.log.recovery_point,
                "leader_epoch_cache": [list(e) for e in rep.log.epoch_cache],
                "is_leader": rep.is_leader,
            },
        }
    return {
        **partition_head(cluster, tp),
        "reference": {"broker": ref_id, "source": ref_source},
        "leader_history": [history_entry(h, h.start_offset) for h in cluster.leader_history[tp]],
        "replica_state": state,
        "writes": writes,
        "committed_lost": committed_lost,
        "acknowledged_lost": acked_lost,
        "divergence": divergence,
        "epoch_truncation": epoch_trunc,
        "expected_findings": {
            "hw_violations": hw_violations,
            "truncation_loss": [loss[k] for k in sorted(loss)],
            "truncation_loss_excluded": [excluded[k] for k in sorted(excluded)],
            "lost_markers": [lost_markers[k] for k in sorted(lost_markers)],
            "divergent_uncommitted": uncommitted,
        },
        "hanging_transactions": hanging_transactions(cluster, ref, views),
    }


# --------------------------------------------------------------- transactions and consumer groups (v2)


def _internal_view(
    cluster: Cluster, topic: str, partition: int
) -> tuple[int, dict[int, _ReplicaView]] | None:
    """(reference broker, replica views) of a partition of an internal topic, None if it does not exist."""
    tp = (topic, partition)
    if tp not in cluster.partitions:
        return None
    views = {b: _ReplicaView(cluster, b, tp) for b in cluster.partitions[tp].replicas}
    return _reference(cluster, tp, views)[0], views


def _producer_of(cluster: Cluster, pid: int) -> dict | None:
    for prod in [*cluster._producers.values(), *cluster.retired_producers]:
        if prod["pid"] == pid:
            return prod
    return None


def coordinator_view(cluster: Cluster, pid: int) -> dict | None:
    """What the transaction coordinator would load for producer ``pid``'s transactional id: its latest
    ``__transaction_state`` record on the reference replica of the coordinating partition (None: the
    cluster has no transaction coordinator)."""
    from auditor.simulate.coordinators import STATE_NAMES, TRANSACTION_STATE_TOPIC

    co = cluster.coordinators
    prod = _producer_of(cluster, pid)
    if co is None or not co.transactions.partitions or prod is None:
        return None
    tid = prod["transactional_id"]
    part = co.transactions.partition_for(tid)
    ref_id, views = _internal_view(cluster, TRANSACTION_STATE_TOPIC, part)
    ref = views[ref_id]
    out = {"transactional_id": tid, "partition": part, "broker": ref_id, "state": None}
    for t in ref.batches:
        if t[0] >= ref.leo:
            break
        for rec in cluster.coordinator_records.get(t[4], []) if t[4] is not None else []:
            if rec.kind == "transaction" and rec.key["transactionalId"] == tid and rec.value is not None:
                out.update(
                    state=STATE_NAMES[rec.value["transactionStatus"]],
                    producer_id=rec.value["producerId"],
                    producer_epoch=rec.value["producerEpoch"],
                    offset=t[0],
                )
    return out


def hanging_transactions(cluster: Cluster, ref: _ReplicaView, views: dict[int, _ReplicaView]) -> list[dict]:
    """Transactions open on the reference replica's loaded log: producer id and epoch, first and last
    offset, the last stable offset and high watermark it leaves, the markers of that producer other
    replicas hold after it (lost with the leader change: ``KA713``) and the coordinator's view
    (``KA714`` when it no longer tracks the transaction as ongoing)."""
    open_txns: dict[int, dict] = {}
    for t in ref.batches:
        if t[0] >= ref.leo:
            break
        b = ref.batch(t[0])
        if b is None:
            continue
        if b.control in ("COMMIT", "ABORT"):
            open_txns.pop(b.producer_id, None)
        elif b.control is None and b.transactional:
            cur = open_txns.setdefault(
                b.producer_id,
                {
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "first_offset": b.base_offset,
                    "records": 0,
                },
            )
            cur["last_offset"] = b.last_offset
            cur["records"] += b.count
    hw = min(max(ref.hw_ckpt or 0, ref.log_start), ref.leo)
    lso = min((x["first_offset"] for x in open_txns.values() if x["first_offset"] < hw), default=hw)
    out = []
    for txn in sorted(open_txns.values(), key=lambda x: x["first_offset"]):
        markers = []
        first = ref.by_base[txn["first_offset"]]
        for b, v in sorted(views.items()):
            if b == ref.broker or v.by_base.get(first[0], (None,))[:4] != first[:4]:
                continue
            for t in v.batches:
                bt = v.batch(t[0]) if t[0] > txn["first_offset"] else None
                if (
                    bt is not None
                    and bt.control in ("COMMIT", "ABORT")
                    and bt.producer_id == txn["producer_id"]
                ):
                    markers.append({"broker": b, "offset": t[0], "marker": bt.control})
                    break
        coord = coordinator_view(cluster, txn["producer_id"])
        forgot = coord is not None and not (
            coord["state"] == "Ongoing"
            and (coord.get("producer_id"), coord.get("producer_epoch"))
            == (txn["producer_id"], txn["producer_epoch"])
        )
        codes = (["KA713"] if markers else []) + (["KA714"] if forgot else [])
        out.append(
            {
                **txn,
                "last_stable_offset": lso,
                "high_watermark": hw,
                "log_end_offset": ref.leo,
                "leader": ref.broker,
                "markers_elsewhere": markers,
                "coordinator": coord,
                "expected_codes": codes,
            }
        )
    return out


def groups_truth(cluster: Cluster) -> list[dict]:
    """Per consumer group: its ``__consumer_offsets`` partition and every commit (which replicas of that
    partition hold it), then per consumed partition the commit the coordinator loads from the reference
    replica and its consequences: ``in-lost-range`` (KA721: ``consumed_gone`` records the group read no
    longer exist, ``skipped`` different records now at those offsets will not be read), ``above-leo``
    (KA720), ``commit-lost`` (KA723: a later commit only on a replica that truncates, ``re_read`` offsets
    read again) or ``ok``."""
    from auditor.simulate.coordinators import OFFSETS_TOPIC

    co = cluster.coordinators
    if co is None or not co.groups.commits:
        return []
    offsets_views: dict[int, tuple[int, dict[int, _ReplicaView]]] = {}
    data_refs: dict[TP, _ReplicaView] = {}
    by_group: dict[str, list] = {}
    for cm in co.groups.commits:
        by_group.setdefault(cm.group, []).append(cm)
    commit_index = {id(cm): i for i, cm in enumerate(co.groups.commits)}
    out = []
    for group, commits in by_group.items():
        part = commits[0].offsets_partition
        if part not in offsets_views:
            offsets_views[part] = _internal_view(cluster, OFFSETS_TOPIC, part)
        ref_id, views = offsets_views[part]
        items = []
        for cm in commits:
            holders, record_offset = [], None
            for b, v in sorted(views.items()):
                for t in v.batches:
                    if t[4] is not None and t[4] == cm.batch_id and t[0] < v.leo:
                        holders.append(b)
                        record_offset = t[0]
            items.append((cm, holders, record_offset))
        tps = list(dict.fromkeys(cm.tp for cm in commits))
        per_tp = []
        for tp in tps:
            mine = [x for x in items if x[0].tp == tp]
            forgotten = _tombstoned_before(cluster, group, tp, views[ref_id])
            mine = [x for x in mine if commit_index[id(x[0])] >= forgotten]
            on_ref = [x for x in mine if ref_id in x[1]]
            effective = on_ref[-1][0] if on_ref else None
            consequences = []
            last_index = mine.index(on_ref[-1]) if on_ref else -1
            for cm, holders, rec_off in mine[last_index + 1 :]:
                if holders:
                    consequences.append(
                        {
                            "kind": "commit-lost",
                            "code": "KA723",
                            "brokers": holders,
                            "record_offset": rec_off,
                            "lost_offset": cm.offset,
                            "committed_offset": effective.offset if effective else None,
                            "re_read": cm.offset - effective.offset if effective else None,
                        }
                    )
            if effective is not None and tp in cluster.partitions:
                if tp not in data_refs:
                    views_d = {b: _ReplicaView(cluster, b, tp) for b in cluster.partitions[tp].replicas}
                    data_refs[tp] = views_d[_reference(cluster, tp, views_d)[0]]
                dref = data_refs[tp]
                ids = {t[4] for t in dref.batches if t[4] is not None and t[0] < dref.leo}
                consumed = [r for x in mine[: last_index + 1] for r in x[0].consumed]
                gone = sorted(off for off, bid, _k in consumed if off < effective.offset and bid not in ids)
                o = effective.offset
                if gone:
                    skipped = 0
                    for t in dref.batches:
                        bt = dref.batch(t[0])
                        if bt is not None and bt.control is None and t[0] < dref.leo:
                            skipped += len(_record_entries(bt, gone[0], min(o, dref.leo)))
                    consequences.append(
                        {
                            "kind": "in-lost-range",
                            "code": "KA721",
                            "committed_offset": o,
                            "first_gone_offset": gone[0],
                            "last_gone_offset": gone[-1],
                            "consumed_gone": len(gone),
                            "skipped": skipped,
                        }
                    )
                if o > dref.leo:
                    consequences.append(
                        {
                            "kind": "above-leo",
                            "code": "KA720",
                            "committed_offset": o,
                            "log_end_offset": dref.leo,
                            "log_start_offset": dref.log_start,
                            "consumed_gone": len(gone),
                        }
                    )
            if not consequences:
                consequences.append({"kind": "ok", "code": None})
            per_tp.append(
                {
                    "topic": tp[0],
                    "partition": tp[1],
                    "committed_offset": effective.offset if effective else None,
                    "committed_leader_epoch": effective.leader_epoch if effective else None,
                    "consequences": consequences,
                }
            )
        out.append(
            {
                "group": group,
                "protocol": co.groups.protocol_of(group),
                "offsets_partition": part,
                "coordinator": ref_id,
                "commits": [
                    {
                        "topic": cm.tp[0],
                        "partition": cm.tp[1],
                        "offset": cm.offset,
                        "leader_epoch": cm.leader_epoch,
                        "metadata": cm.metadata,
                        "commit_timestamp": cm.commit_ms,
                        "status": cm.status,
                        "record_offset": rec_off,
                        "holders": holders,
                        "on_coordinator": ref_id in holders,
                    }
                    for cm, holders, rec_off in items
                ],
                "partitions": per_tp,
            }
        )
    return out


def _tombstoned_before(cluster: Cluster, group: str, tp: TP, ref: _ReplicaView) -> int:
    """How many of the coordinator's commits (in order) came before the last offset tombstone of ``group``
    for ``tp`` that the reference replica of the offsets partition holds (a topic deletion): the group's
    commits before it are gone. 0 when there is none."""
    held = {t[4] for t in ref.batches if t[4] is not None and t[0] < ref.leo}
    out = 0
    for d in cluster.topic_deletions:
        for t in d.tombstones:
            batch = t["write"].batch
            if (t["group"], t["tp"]) == (group, tp) and batch is not None and batch.batch_id in held:
                out = max(out, t["commits"])
    return out


def expected_codes(partitions: list[dict], groups: list[dict]) -> list[str]:
    """The consequence codes (KA710-KA723) this run's files must produce."""
    codes: set[str] = set()
    for p in partitions:
        ef = p["expected_findings"]
        if ef["truncation_loss"]:
            codes.add("KA710")
        if ef["lost_markers"]:
            codes.add("KA712")
        for h in p["hanging_transactions"]:
            codes.update(h["expected_codes"])
    for g in groups:
        for tp in g["partitions"]:
            codes.update(c["code"] for c in tp["consequences"] if c["code"])
    return sorted(codes)


def controller_entry(opts: SimOptions) -> dict | None:
    """The KRaft controller's id and directory (None without KRaft)."""
    return {"id": opts.controller_id, "dir": f"controller-{opts.controller_id}"} if opts.kraft else None


def topic_entries(cluster: Cluster, compression: int | None = None) -> list[dict]:
    """The ``topics`` of the ground truth; ``compression`` overrides every topic's codec (the ``--scale``
    path writes uncompressed batches)."""
    return [
        {
            "name": t.name,
            "topic_id": t.topic_id,
            "partitions": t.partitions,
            "producer": t.kind,
            "unclean_leader_election": t.unclean,
            "min_insync_replicas": t.min_insync,
            "compression": t.compression if compression is None else compression,
        }
        for t in cluster.topics.values()
    ]


def partition_head(cluster: Cluster, tp: TP) -> dict:
    """The first keys of a partition's ground truth: its name, directory, replicas and final KRaft state."""
    ps = cluster.partitions[tp]
    return {
        "topic": tp[0],
        "partition": tp[1],
        "dir": partition_dir_name(*tp),
        "replicas": list(ps.replicas),
        "final": {
            "leader": ps.leader,
            "leader_epoch": ps.leader_epoch,
            "isr": list(ps.isr),
            "leader_recovery_state": ps.leader_recovery_state,
        },
    }


def history_entry(change: LeaderChange, start_offset: int | None) -> dict:
    """One ``leader_history`` item: a leader change with the first offset its epoch wrote."""
    return {
        "epoch": change.epoch,
        "leader": change.leader,
        "start_offset": start_offset,
        "time_ms": change.time_ms,
        "isr": change.isr,
        "unclean": change.unclean,
        "reason": change.reason,
    }


def collect_faults(cluster: Cluster) -> list[dict]:
    """Every anomaly present in the final files, with its file (relative to the output dir) and byte
    position: torn tails, CRC flips, index entries beyond the log, checkpoints beyond the log end."""
    faults: list[dict] = []
    flips = {
        (f["broker"], f["topic"], f["partition"], f["batch_position"], f["segment_base_offset"]): f
        for f in cluster.faults
        if f["kind"] == "crc-flip"
    }
    for b, br in sorted(cluster.brokers.items()):
        root = broker_dir_name(b)
        for tp, rep in sorted(br.replicas.items()):
            pdir = f"{root}/{partition_dir_name(*tp)}"
            where = {"broker": b, "topic": tp[0], "partition": tp[1]}
            leo = rep.log.leo
            for seg in rep.log.segments:
                log_name = f"{pdir}/{segment_file_name(seg.base_offset, '.log')}"
                for i in sorted(seg.damaged):
                    f = flips.get((b, tp[0], tp[1], seg.positions[i], seg.base_offset), {})
                    faults.append(
                        {
                            "kind": "crc-flip",
                            "file": log_name,
                            "position": f.get("position"),
                            "bit": f.get("bit"),
                            "batch_position": seg.positions[i],
                            "batch_base_offset": seg.batches[i].base_offset,
                            "batch_last_offset": seg.batches[i].last_offset,
                            **where,
                        }
                    )
                if seg.tail:
                    faults.append(
                        {
                            "kind": "torn-tail",
                            "file": log_name,
                            "position": seg.size,
                            "length": len(seg.tail),
                            **where,
                        }
                    )
                for k, (off, pos) in enumerate(seg.index):
                    if pos >= seg.size or off >= seg.next_offset:
                        faults.append(
                            {
                                "kind": "index-entry-beyond-log",
                                "file": f"{pdir}/{segment_file_name(seg.base_offset, '.index')}",
                                "position": 8 * k,
                                "offset": off,
                                "log_position": pos,
                                "log_size": seg.size,
                                **where,
                            }
                        )
                for k, (ts, off) in enumerate(seg.time_index):
                    if off >= seg.next_offset:
                        faults.append(
                            {
                                "kind": "time-index-entry-beyond-log",
                                "file": f"{pdir}/{segment_file_name(seg.base_offset, '.timeindex')}",
                                "position": 12 * k,
                                "offset": off,
                                "timestamp": ts,
                                **where,
                            }
                        )
            for name, values, kind in (
                ("replication-offset-checkpoint", br.ckpt_hw, "hw-checkpoint-beyond-log"),
                ("recovery-point-offset-checkpoint", br.ckpt_recovery, "recovery-point-beyond-log"),
            ):
                if values and values.get(tp, 0) > leo:
                    faults.append(
                        {
                            "kind": kind,
                            "file": f"{root}/{name}",
                            "position": _ckpt_line_pos(values, tp),
                            "value": values[tp],
                            "log_end_offset": leo,
                            **where,
                        }
                    )
            line_pos = len(f"0\n{len(rep.disk_epoch_cache)}\n")
            for e, s in rep.disk_epoch_cache:
                pos, line_pos = line_pos, line_pos + len(f"{e} {s}\n")
                if s > leo:
                    faults.append(
                        {
                            "kind": "epoch-entry-beyond-log",
                            "file": f"{pdir}/leader-epoch-checkpoint",
                            "epoch": e,
                            "start_offset": s,
                            "log_end_offset": leo,
                            "position": pos,
                            **where,
                        }
                    )
            for off in sorted(rep.log.snapshots):
                if off > leo:
                    faults.append(
                        {
                            "kind": "snapshot-beyond-log",
                            "file": f"{pdir}/{segment_file_name(off, '.snapshot')}",
                            "position": 0,
                            "snapshot_offset": off,
                            "log_end_offset": leo,
                            **where,
                        }
                    )
    return faults


def _ckpt_line_pos(values: dict[TP, int], tp: TP) -> int:
    """Byte position of ``tp``'s line in an offset checkpoint written by ``writer._offset_checkpoint``."""
    pos = len(f"0\n{len(values)}\n")
    for key, off in sorted(values.items()):
        if key == tp:
            return pos
        pos += len(f"{key[0]} {key[1]} {off}\n")
    return pos


def ground_truth(cluster: Cluster, *, scenario: str, description: str, options: dict) -> dict:
    opts = cluster.options
    brokers = []
    for b, br in sorted(cluster.brokers.items()):
        state = "running" if br.alive else ("shutdown" if br.clean_marker else "crashed")
        brokers.append(
            {
                "id": b,
                "dir": broker_dir_name(b),
                "state": state,
                "crash_kind": br.crash_kind if state == "crashed" else None,
                "clean_shutdown": br.clean_marker,
                "fenced": b in cluster.fenced,
            }
        )
    partitions = [partition_truth(cluster, tp) for tp in cluster.partitions]
    groups = groups_truth(cluster)
    identity = identity_truth(cluster)
    return {
        "version": GROUND_TRUTH_VERSION,
        "generator": "kafka-auditor simulate",
        "scenario": scenario,
        "description": description,
        "truncation_mode": cluster.truncation,
        "options": options,
        "cluster_id": cluster.cluster_id,
        "controller": controller_entry(opts),
        "brokers": brokers,
        "topics": topic_entries(cluster),
        "partitions": partitions,
        "groups": groups,
        "transactions": transactions_truth(cluster),
        "expected_codes": sorted({*expected_codes(partitions, groups), *identity_codes(identity)}),
        "faults": collect_faults(cluster),
        "events": cluster.events,
        **identity,
    }


def transactions_truth(cluster: Cluster) -> list[dict]:
    """What the transaction coordinator wrote: one entry per ``__transaction_state`` record (transactional
    id, producer id and epoch, state, coordinating partition, the transaction's partitions, and the
    status of the append: acked, pending, failed or rejected)."""
    co = cluster.coordinators
    if co is None:
        return []
    return [
        {**{k: v for k, v in e.items() if k != "write"}, "status": e["write"].status}
        for e in co.transactions.log
    ]
