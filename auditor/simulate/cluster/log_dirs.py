"""Log dirs of brokers with several (JBOD): the controller's ``directories`` assignment (KIP-858) and
moving a replica to another log dir (AlterReplicaLogDirs, KIP-113)."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.log import ReplicaLog
from auditor.simulate.model import (
    FUTURE_DIR_SUFFIX,
    REPLICA_FETCH_MAX_BYTES,
    TP,
    UNASSIGNED_DIR,
    Broker,
    FutureReplica,
    SimulationError,
    random_dir_unique_id,
    suffixed_dir_name,
    tp_fields,
)


class LogDirsMixin(ClusterBase):
    """Which log dir holds each replica, as the broker chooses it and the controller records it, and
    ``-future`` copies of replicas being moved."""

    def _default_dir(self, b: int) -> str:
        """``ClusterControlManager.defaultDir``: the broker's only log dir, else UNASSIGNED."""
        dirs = self.brokers[b].dir_ids
        return dirs[0] if len(dirs) == 1 else UNASSIGNED_DIR

    @staticmethod
    def _next_log_dir(br: Broker) -> int:
        """``LogManager.nextLogDirs``: the log dir holding the fewest logs (current and future)."""
        counts = [0] * len(br.dir_ids)
        for rep in br.replicas.values():
            counts[rep.log_dir] += 1
        for fut in br.futures.values():
            counts[fut.log_dir] += 1
        return counts.index(min(counts))

    def _directory_change(self, tp: TP, b: int, dir_id: str) -> tuple[str, int, dict] | None:
        """The controller's PartitionChangeRecord for AssignReplicasToDirs (``PartitionChangeBuilder
        .setDirectory``): the partition's directories with ``b``'s replaced; the partition epoch goes up."""
        ps = self.partitions[tp]
        dirs = list(ps.directories)
        dirs[ps.replicas.index(b)] = dir_id
        if dirs == ps.directories:
            return None
        ps.directories = dirs
        ps.partition_epoch += 1
        data = {"partitionId": tp[1], "topicId": self.topics[tp[0]].topic_id, "directories": list(dirs)}
        return "PartitionChangeRecord", 2, data

    def _assign_dirs(self, tps: list[TP], brokers: list[int] | None = None) -> None:
        """Every running broker (of ``brokers``) with several log dirs tells the controller where it created
        its replicas of ``tps`` (one AssignReplicasToDirs request, one metadata batch per broker)."""
        for b, br in sorted(self.brokers.items()):
            if len(br.dir_ids) < 2 or not br.alive or (brokers is not None and b not in brokers):
                continue
            records = []
            for tp in tps:
                rep = br.replicas.get(tp)
                if rep is not None:
                    rec = self._directory_change(tp, b, br.dir_ids[rep.log_dir])
                    if rec is not None:
                        records.append(rec)
            if records:
                self._metadata(*records)
                self._event("assign-replicas-to-dirs", broker=b, partitions=len(records))

    def start_log_dir_move(self, b: int, tp: TP, log_dir: int | None = None) -> FutureReplica:
        """AlterReplicaLogDirs: broker ``b`` creates ``<topic>-<partition>.<uuid>-future`` (with the
        topic's partition.metadata) in ``log_dir`` (default: its first other log dir) for its
        ReplicaAlterLogDirsThread to copy the current log into; the controller's assignment still names the
        current log dir."""
        br = self.brokers[b]
        rep = br.replicas[tp]
        others = [k for k in range(len(br.dir_ids)) if k != rep.log_dir]
        target = log_dir if log_dir is not None else (others[0] if others else rep.log_dir)
        if not br.alive or target == rep.log_dir or tp in br.futures or not 0 <= target < len(br.dir_ids):
            raise SimulationError(f"broker {b} cannot move {tp} to log dir {target}")
        name = suffixed_dir_name(tp, random_dir_unique_id(self.rng), FUTURE_DIR_SUFFIX)
        fut = FutureReplica(tp, ReplicaLog(self.log_config, self.now), target, name, self.now)
        br.futures[tp] = fut
        self._event(
            "alter-replica-log-dirs",
            broker=b,
            **tp_fields(tp),
            from_dir=br.dir_ids[rep.log_dir],
            to_dir=br.dir_ids[target],
            future_dir=name,
        )
        return fut

    def copy_to_future(self, b: int, tp: TP, upto: int | None = None) -> int:
        """The ReplicaAlterLogDirsThread fetches from the current log (at most replica.fetch.max.bytes of one
        segment per fetch) and appends to the future log, whole batches below ``upto`` (default: the current
        log end offset); the future high watermark is min(current HW, future LEO). Returns the future LEO."""
        br = self.brokers[b]
        rep, fut = br.replicas[tp], br.futures[tp]
        target = rep.log.leo if upto is None else min(upto, rep.log.leo)
        while fut.log.leo < target:
            batches = rep.log.read(fut.log.leo, REPLICA_FETCH_MAX_BYTES)
            if batches:  # a read never crosses a segment end (LocalLog.read)
                seg_end = rep.log.segments[rep.log._segment_for(batches[0].base_offset)].next_offset
                batches = [x for x in batches if x.base_offset < seg_end and x.next_offset <= target]
            if not batches:
                break
            fut.log.append(batches, self.now)
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
            fut.hw = min(rep.hw, fut.log.leo)
        self._event("future-log-copy", broker=b, **tp_fields(tp), log_end_offset=fut.log.leo)
        return fut.log.leo

    def accept_future_dir(self, b: int, tp: TP) -> None:
        """The future log caught up: the broker asks the controller to assign the replica to the future log's
        dir (AssignReplicasToDirs before the promotion) and the controller records it."""
        br = self.brokers[b]
        rep, fut = br.replicas[tp], br.futures[tp]
        if fut.log.leo != rep.log.leo:
            raise SimulationError(f"the future log of {tp} on broker {b} has not caught up")
        rec = self._directory_change(tp, b, br.dir_ids[fut.log_dir])
        if rec is not None:
            self._metadata(rec)
        self._event("assign-replicas-to-dirs", broker=b, partitions=1, future=True)
