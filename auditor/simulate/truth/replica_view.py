"""Replicas as their files show them (batches, checkpoints, the log end offset after recovery), and the
reference replica of a partition the ground truth compares the others with."""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.log import SimBatch
from auditor.simulate.model import TP, Replica
from auditor.simulate.truth.oracles import normalised_cache
from parsers.record_batch import parse_header


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


class ReplicaView:
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


def reference_replica(cluster: Cluster, tp: TP, views: dict[int, ReplicaView]) -> tuple[int, str]:
    """The replica the others are compared with, and how it was chosen: ``metadata`` (the controller's
    leader, under KRaft) or ``inferred`` (highest last epoch in leader-epoch-checkpoint, then highest log end
    offset, then lowest broker id)."""
    ps = cluster.partitions[tp]
    if cluster.options.kraft and ps.leader >= 0:
        return ps.leader, "metadata"
    best = sorted(views.values(), key=lambda v: (-v.file_latest_epoch, -v.leo, v.broker))
    return best[0].broker, "inferred"


def record_entries(batch: SimBatch, lo: int = 0, hi: int | None = None) -> list[tuple[int, SimBatch, int]]:
    """(offset, batch, index in the batch) of each record of ``batch`` at an offset in [lo, hi)."""
    out = []
    for k in range(len(batch.records)):
        off = batch.base_offset + k
        if off >= lo and (hi is None or off < hi):
            out.append((off, batch, k))
    return out


def internal_view(cluster: Cluster, topic: str, partition: int) -> tuple[int, dict[int, ReplicaView]] | None:
    """(reference broker, replica views) of a partition of an internal topic, None if it does not exist."""
    tp = (topic, partition)
    if tp not in cluster.partitions:
        return None
    views = {b: ReplicaView(cluster, b, tp) for b in cluster.partitions[tp].replicas}
    return reference_replica(cluster, tp, views)[0], views
