"""Leadership: partition changes (PartitionChangeRecord), elections, replicas becoming leader or
follower, and follower truncation to the high watermark or by leader epoch (KIP-101/KIP-279)."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.model import (
    LEADER_RECOVERY_RECOVERING,
    TP,
    LeaderChange,
    RemoteState,
    Replica,
    SimulationError,
    tp_fields,
)


class LeadershipMixin(ClusterBase):
    """The controller's partition changes and elections, and how the brokers act on them."""

    def _become_leader(self, rep: Replica, epoch: int) -> None:
        ps = self.partitions[rep.tp]
        rep.is_leader = True
        rep.leader_epoch = epoch
        rep.needs_truncation = False
        if rep.log.assign_epoch(epoch, rep.log.leo):
            rep.sync_epoch_file()
        rep.remote = {}
        for r in ps.replicas:
            if r != rep.broker:
                rep.remote[r] = RemoteState(None, self.now if r in ps.isr else 0, -1, 0)
        rep.term_hw_floor = rep.hw
        self._maybe_increment_hw(rep)

    def _become_follower(self, rep: Replica, epoch: int) -> None:
        was_leader = rep.is_leader
        rep.is_leader = False
        rep.leader_epoch = epoch
        rep.remote = {}
        rep.fetch_failed = False
        if was_leader:
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
        if self.truncation == "hw":
            # before KIP-101 a new follower truncated to its own high watermark right away
            self._truncate(rep, rep.hw, "hw")
            rep.needs_truncation = False
        else:
            rep.needs_truncation = True

    def _truncate(self, rep: Replica, target: int, why: str) -> None:
        before = rep.log.leo
        if target < before:
            rep.log.truncate_to(target, self.now)
            rep.sync_epoch_file()
            self._event(
                "truncate",
                broker=rep.broker,
                topic=rep.tp[0],
                partition=rep.tp[1],
                from_offset=before,
                to_offset=rep.log.leo,
                mode=why,
            )
        rep.hw = min(rep.hw, rep.log.leo)

    def _truncate_follower_by_epoch(self, f: Replica, leader: Replica) -> None:
        """The follower side of OffsetsForLeaderEpoch, iterated as in KIP-279 (spec §17.6)."""
        requested = f.log.latest_epoch()
        for _ in range(1000):
            if requested < 0:
                self._truncate(f, f.hw, "epoch-undefined")
                return
            e_l, o_l = leader.log.end_offset_for(requested)
            if o_l < 0:
                self._truncate(f, f.hw, "epoch-unknown")
                return
            if e_l < 0:
                self._truncate(f, min(o_l, f.leo), "epoch")
                return
            e_f, o_f = f.log.end_offset_for(e_l)
            if e_f < 0:
                self._truncate(f, min(o_l, f.leo), "epoch")
                return
            if e_f != e_l:
                self._truncate(f, min(o_f, f.leo), "epoch")
                requested = e_f
                continue
            self._truncate(f, min(o_l, o_f, f.leo), "epoch")
            return
        raise SimulationError("OffsetsForLeaderEpoch loop did not terminate")

    def _apply(self, tp: TP, old_leader: int, old_epoch: int) -> None:
        """Brokers act on a partition change they learnt from the metadata log."""
        ps = self.partitions[tp]
        for r in ps.replicas:
            br = self.brokers[r]
            if not br.alive or r in self._stopping:
                continue
            rep = br.replicas[tp]
            if ps.leader_epoch != old_epoch or ps.leader != old_leader:
                if r == ps.leader:
                    self._become_leader(rep, ps.leader_epoch)
                else:
                    self._become_follower(rep, ps.leader_epoch)
        leader = self.leader_replica(tp)
        if leader is not None:
            self._maybe_increment_hw(leader)

    def _change(
        self,
        tp: TP,
        *,
        isr: list[int] | None = None,
        leader: int | None = None,
        lrs: int | None = None,
        reason: str = "",
        unclean: bool = False,
    ) -> None:
        """Apply and record one PartitionChangeRecord (leader epoch bumps on a leader change)."""
        ps = self.partitions[tp]
        old_leader, old_epoch = ps.leader, ps.leader_epoch
        data: dict = {"partitionId": tp[1], "topicId": self.topics[tp[0]].topic_id}
        changed = False
        if isr is not None and isr != ps.isr:
            ps.isr = list(isr)
            data["isr"] = list(isr)
            changed = True
        if leader is not None and leader != ps.leader:
            ps.leader = leader
            ps.leader_epoch += 1
            data["leader"] = leader
            changed = True
        if lrs is not None and lrs != ps.leader_recovery_state:
            ps.leader_recovery_state = lrs
            data["leaderRecoveryState"] = lrs
            changed = True
        if not changed:
            return
        ps.partition_epoch += 1
        self._metadata(("PartitionChangeRecord", 2, data))
        if ps.leader_epoch != old_epoch:
            start = None
            if ps.leader >= 0 and self.brokers[ps.leader].alive:
                start = self.brokers[ps.leader].replicas[tp].log.leo
            self.leader_history[tp].append(
                LeaderChange(ps.leader_epoch, ps.leader, start, self.now, list(ps.isr), unclean, reason)
            )
            if unclean:
                self.unclean_elections.add(tp)
        self._event(
            "partition-change",
            **tp_fields(tp),
            leader=ps.leader,
            leader_epoch=ps.leader_epoch,
            isr=list(ps.isr),
            reason=reason,
            unclean=unclean,
        )
        self._apply(tp, old_leader, old_epoch)

    def _eligible(self, b: int) -> bool:
        return b not in self.fenced and b not in self._stopping and self.brokers[b].alive

    def _elect(self, tp: TP, reason: str) -> None:
        """Controller election: first live ISR member in replica order, else unclean if allowed."""
        ps = self.partitions[tp]
        if ps.leader >= 0 and self._eligible(ps.leader):
            return
        candidates = [r for r in ps.replicas if r in ps.isr and self._eligible(r)]
        if candidates:
            self._change(tp, leader=candidates[0], reason=reason)
            return
        if self.topics[tp[0]].unclean:
            live = [r for r in ps.replicas if self._eligible(r)]
            if live:
                self._change(
                    tp,
                    leader=live[0],
                    isr=[live[0]],
                    lrs=LEADER_RECOVERY_RECOVERING,
                    reason="unclean-election",
                    unclean=True,
                )
                return
        if ps.leader != -1:
            self._change(tp, leader=-1, reason=reason)
