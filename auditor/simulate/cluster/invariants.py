"""Kafka's replication invariants, checked after fetch rounds, ticks, crashes, shutdowns and restarts when
``SimOptions.check_invariants`` is set."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.model import InvariantViolation


class InvariantsMixin(ClusterBase):
    """The invariants of the model's state (a violation is a bug in the model)."""

    def _check(self) -> None:
        if self.options.check_invariants:
            self.check_invariants()

    def check_invariants(self) -> None:
        """Kafka's replication invariants (issue 3 item 7); raises :class:`InvariantViolation`."""

        def fail(msg: str) -> None:
            raise InvariantViolation(f"t={self.now}ms: {msg}")

        for br in self.brokers.values():
            if not br.alive:
                continue
            for tp, rep in br.replicas.items():
                leo = rep.log.leo
                if not 0 <= rep.hw <= leo:
                    fail(f"broker {br.id} {tp}: HW {rep.hw} not within [0, LEO {leo}]")
                cache = rep.log.epoch_cache
                for (e1, s1), (e2, s2) in zip(cache, cache[1:], strict=False):
                    if not (e2 > e1 and s2 > s1):
                        fail(f"broker {br.id} {tp}: epoch cache not increasing: {cache}")
                if cache and cache[-1][1] > leo:
                    fail(f"broker {br.id} {tp}: epoch cache entry {cache[-1]} beyond LEO {leo}")
                prev_epoch, expect = -1, rep.log.segments[0].base_offset
                for b in rep.log.all_batches():
                    if b.base_offset != expect:
                        fail(
                            f"broker {br.id} {tp}: gap/overlap at offset {expect} (batch at {b.base_offset})"
                        )
                    if b.epoch < prev_epoch:
                        fail(f"broker {br.id} {tp}: partitionLeaderEpoch decreases at offset {b.base_offset}")
                    prev_epoch, expect = b.epoch, b.next_offset
        for tp, ps in self.partitions.items():
            leader = self.leader_replica(tp)
            if leader is None:
                continue
            if leader.hw < leader.term_hw_floor:
                fail(f"{tp}: leader HW lowered from {leader.term_hw_floor} to {leader.hw}")
            leos = [leader.log.leo]
            known = True
            for r in ps.isr:
                if r == leader.broker:
                    continue
                rs = leader.remote.get(r)
                if rs is None or rs.leo is None:
                    known = False
                    break
                leos.append(rs.leo)
            if leader.hw > leader.log.leo:
                fail(f"{tp}: leader HW {leader.hw} above its LEO {leader.log.leo}")
            if known:
                floor = min(leos)
                if leader.hw < floor:
                    fail(f"{tp}: leader HW {leader.hw} below min LEO over ISR {floor}")
                # an ISR member's LEO can only fall below the HW through HW truncation (mode a) or a
                # follower that lost unflushed data and came back without being fenced
                strict = self.truncation == "epoch" and self.data_loss_crashes == 0
                if strict and leader.hw != floor:
                    fail(f"{tp}: leader HW {leader.hw} != min LEO over ISR {floor}")
            leader.term_hw_floor = leader.hw
        for tp, hist in self.leader_history.items():
            for a, b in zip(hist, hist[1:], strict=False):
                if b.epoch <= a.epoch:
                    fail(f"{tp}: leader epochs not increasing: {a.epoch} -> {b.epoch}")
