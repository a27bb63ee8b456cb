"""Replication: follower fetches, the leader's view of its followers, ISR expansion and the high
watermark (``Partition.maybeIncrementLeaderHW``) completing acks=all requests."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.model import (
    LEADER_RECOVERY_RECOVERED,
    LEADER_RECOVERY_RECOVERING,
    REPLICA_FETCH_MAX_BYTES,
    TP,
    RemoteState,
    Replica,
)


class ReplicationMixin(ClusterBase):
    """Followers fetching from their leaders and the leaders' high watermarks."""

    def _maybe_increment_hw(self, leader: Replica) -> None:
        """``Partition.maybeIncrementLeaderHW``: HW := min LEO over the ISR when that is higher."""
        ps = self.partitions[leader.tp]
        new_hw = leader.log.leo
        for r in ps.isr:
            if r == leader.broker:
                continue
            rs = leader.remote.get(r)
            if rs is None or rs.leo is None:
                return
            new_hw = min(new_hw, rs.leo)
        if new_hw > leader.hw:
            old = leader.hw
            leader.hw = new_hw
            for b in leader.log.read(old, 1 << 62) if old < leader.log.leo else []:
                if b.base_offset >= new_hw:
                    break
                self._committed.setdefault(b.batch_id, self.now)
            self._complete_pending(leader)

    def _complete_pending(self, leader: Replica) -> None:
        ps = self.partitions[leader.tp]
        spec = self.topics[leader.tp[0]]
        still = []
        for w in leader.pending:
            if w.batch is not None and leader.hw >= w.batch.next_offset:
                w.done_ms = self.now
                if len(ps.isr) >= spec.min_insync:
                    w.status = "acked"
                else:
                    w.status, w.error = "failed", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
            else:
                still.append(w)
        leader.pending = still

    def fetch(self, follower: int, tp: TP, *, deliver: bool = True) -> None:
        """One follower fetch: the leader records the fetch offset, may raise the HW and answers with
        data and its HW; with ``deliver=False`` the response is lost (the follower never sees it)."""
        br = self.brokers[follower]
        if not br.alive or tp not in br.replicas:
            return
        f = br.replicas[tp]
        ps = self.partitions[tp]
        if ps.leader == follower or f.is_leader or f.fetch_failed:
            return
        leader = self.leader_replica(tp)
        if leader is None or leader.leader_epoch != f.leader_epoch:
            return
        if f.needs_truncation:
            self._truncate_follower_by_epoch(f, leader)
            f.needs_truncation = False
        fetch_offset = f.log.leo
        if fetch_offset > leader.log.leo:
            # OFFSET_OUT_OF_RANGE: the leader's log ends below ours; truncate to the leader's end offset
            self._truncate(f, leader.log.leo, "out-of-range")
            return
        self._on_follower_fetch(leader, follower, fetch_offset)
        batches = (
            leader.log.read(fetch_offset, REPLICA_FETCH_MAX_BYTES) if fetch_offset < leader.log.leo else []
        )
        leader_hw = leader.hw
        if not deliver:
            return
        if batches and batches[0].base_offset < fetch_offset:
            # the follower's log ends inside the leader's batch (its own batches had other boundaries):
            # appending it throws UnexpectedAppendOffsetException (``UnifiedLog.append``: first offset
            # below the log end offset) and the fetcher marks the partition failed
            f.fetch_failed = True
            self._event("fetch-failed", broker=follower, topic=tp[0], partition=tp[1],
                        fetch_offset=fetch_offset, batch_base_offset=batches[0].base_offset)  # fmt: skip
            return
        if batches:
            f.log.append(batches, self.now)
            f.sync_epoch_file()
        f.hw = min(leader_hw, f.log.leo)

    def _on_follower_fetch(self, leader: Replica, fid: int, fetch_offset: int) -> None:
        rs = leader.remote.setdefault(fid, RemoteState())
        leader_leo = leader.log.leo
        if fetch_offset >= leader_leo:
            rs.last_caught_up_ms = self.now
        elif fetch_offset >= rs.last_fetch_leader_leo:
            rs.last_caught_up_ms = max(rs.last_caught_up_ms, rs.last_fetch_ms)
        rs.last_fetch_leader_leo = leader_leo
        rs.last_fetch_ms = self.now
        rs.leo = fetch_offset
        self._maybe_expand_isr(leader, fid)
        self._maybe_increment_hw(leader)

    def _maybe_expand_isr(self, leader: Replica, fid: int) -> None:
        ps = self.partitions[leader.tp]
        if fid in ps.isr or not self._eligible(fid):
            return
        rs = leader.remote[fid]
        epoch_start = next((s for e, s in leader.log.epoch_cache if e == leader.leader_epoch), 0)
        if rs.leo is not None and rs.leo >= leader.hw and rs.leo >= epoch_start:
            lrs = (
                LEADER_RECOVERY_RECOVERED if ps.leader_recovery_state == LEADER_RECOVERY_RECOVERING else None
            )
            self._change(leader.tp, isr=ps.isr + [fid], lrs=lrs, reason="isr-expand")

    def fetch_round(
        self, *, skip: set[int] | frozenset[int] = frozenset(), tps: list[TP] | None = None
    ) -> None:
        """Every live follower (except ``skip``) fetches once from its leader, in broker order."""
        for tp in tps if tps is not None else self.partitions:
            for r in self.partitions[tp].replicas:
                if r not in skip and r not in self.stalled:
                    self.fetch(r, tp)
        self._check()

    def replicate(self, rounds: int = 3, *, skip: set[int] | frozenset[int] = frozenset()) -> None:
        for _ in range(rounds):
            self.fetch_round(skip=skip)
