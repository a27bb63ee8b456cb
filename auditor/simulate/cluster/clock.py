"""Time: the clock and the periodic tasks that fall due as it advances (high watermark and recovery-point
checkpoints, ISR shrinks, time-based flushes, request timeouts, delayed fencing, ``-delete`` removal)."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.model import REPLICA_FETCH_WAIT_MAX_MS, REQUEST_TIMEOUT_MS, Broker, RemoteState


class ClockMixin(ClusterBase):
    """Advancing the clock and the brokers' scheduled tasks."""

    def tick(self, ms: int) -> None:
        """Advance the clock, running periodic tasks (HW/recovery-point checkpoints, ISR expiry,
        time-based flushes, request timeouts, delayed fencing) at the times they fall due.

        Followers keep fetching while time passes (a fetch waits at most replica.fetch.wait.max.ms), so
        a tick of at least that long lets every live follower that is not in :attr:`stalled` catch up;
        stalled followers fall out of the ISR after replica.lag.time.max.ms.
        """
        target = self.now + ms
        while True:
            due = [target]
            for br in self.brokers.values():
                if br.alive:
                    due += [br.next_hw_ckpt_ms, br.next_flush_ckpt_ms]
            due += [t for t, _ in self.pending_fences]
            t = min(due)
            if t > target:
                t = target
            self.now = max(self.now, t)
            for when, b in list(self.pending_fences):
                if when <= self.now:
                    self.pending_fences.remove((when, b))
                    self.fence(b)
            for br in self.brokers.values():
                if not br.alive:
                    continue
                if br.next_hw_ckpt_ms <= self.now:
                    self.checkpoint_hw(br)
                    br.next_hw_ckpt_ms += self.options.hw_checkpoint_interval_ms
                if br.next_flush_ckpt_ms <= self.now:
                    self.checkpoint_recovery(br)
                    br.next_flush_ckpt_ms += self.options.recovery_checkpoint_interval_ms
            if self.now >= target:
                break
        if ms >= REPLICA_FETCH_WAIT_MAX_MS:
            self._idle_fetch()
        self._periodic()
        self._check()

    def _idle_fetch(self, max_rounds: int = 1000) -> None:
        """Fetch rounds of the non-stalled followers until nothing changes (they caught up)."""
        for _ in range(max_rounds):
            before = [(rep.log.leo, rep.hw) for br in self.brokers.values() for rep in br.replicas.values()]
            self.fetch_round(skip=self.stalled)
            after = [(rep.log.leo, rep.hw) for br in self.brokers.values() for rep in br.replicas.values()]
            if before == after:
                return

    def _periodic(self) -> None:
        lag = self.options.replica_lag_time_max_ms
        for tp, ps in self.partitions.items():
            leader = self.leader_replica(tp)
            if leader is None:
                continue
            leader.log.maybe_time_flush(self.now)
            out = [
                r
                for r in ps.isr
                if r != leader.broker
                and self.now - leader.remote.get(r, RemoteState()).last_caught_up_ms > lag
            ]
            if out:
                self._change(tp, isr=[r for r in ps.isr if r not in out], reason="isr-shrink")
                self._maybe_increment_hw(leader)
            for w in list(leader.pending):
                if self.now - w.sent_ms > REQUEST_TIMEOUT_MS:
                    w.status, w.error, w.done_ms = "failed", "REQUEST_TIMED_OUT", self.now
                    leader.pending.remove(w)
        for br in self.brokers.values():
            if br.alive:
                for rep in br.replicas.values():
                    if not rep.is_leader:
                        rep.log.maybe_time_flush(self.now)
            if br.alive and br.retired:  # LogManager.deleteLogs: -delete dirs go file.delete.delay.ms later
                delay = self.options.file_delete_delay_ms
                br.retired = [r for r in br.retired if r.state != "deleted" or self.now - r.since_ms < delay]

    def checkpoint_hw(self, br: Broker) -> None:
        """replication-offset-checkpoint: the HW of every partition in the log dir (future logs in theirs)."""
        br.ckpt_hw = {tp: rep.hw for tp, rep in br.replicas.items()}
        for fut in br.futures.values():
            fut.ckpt_hw = fut.hw

    def checkpoint_recovery(self, br: Broker) -> None:
        """recovery-point-offset-checkpoint and log-start-offset-checkpoint (flush checkpoint task)."""
        br.ckpt_recovery = {tp: rep.log.recovery_point for tp, rep in br.replicas.items()}
        br.ckpt_log_start = {
            tp: rep.log.log_start_offset
            for tp, rep in br.replicas.items()
            if rep.log.log_start_offset > rep.log.segments[0].base_offset
        }
        for fut in br.futures.values():
            fut.ckpt_recovery = fut.log.recovery_point
            start = fut.log.log_start_offset
            fut.ckpt_log_start = start if start > fut.log.segments[0].base_offset else None
