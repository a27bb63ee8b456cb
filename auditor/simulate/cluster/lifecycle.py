"""Broker lifecycle: fencing, crashes (kill -9 or power loss), controlled shutdown, restart with log
recovery and stray logs, and bit flips on disk."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.model import (
    INITIAL_TASK_DELAY_MS,
    STRAY_DIR_SUFFIX,
    TP,
    UNASSIGNED_DIR,
    Broker,
    SimulationError,
    random_dir_unique_id,
    suffixed_dir_name,
    tp_fields,
)


class LifecycleMixin(ClusterBase):
    """Brokers stopping, starting and being fenced, and faults on their disks."""

    def fence(self, b: int) -> None:
        """The controller fences a broker (session expired): out of every ISR it is not the last member
        of, leaderships moved (or leader -1)."""
        if b in self.fenced:
            return
        self.fenced.add(b)
        self._metadata(("BrokerRegistrationChangeRecord", 0, {"brokerId": b, "fenced": 1}))
        self._event("fence", broker=b)
        for tp, ps in self.partitions.items():
            if b not in ps.replicas:
                continue
            new_isr = [r for r in ps.isr if r != b] if b in ps.isr and len(ps.isr) > 1 else list(ps.isr)
            if ps.leader == b:
                cands = [r for r in ps.replicas if r in new_isr and self._eligible(r)]
                if cands:
                    self._change(tp, isr=new_isr, leader=cands[0], reason=f"broker {b} fenced")
                else:
                    self._change(tp, isr=new_isr, leader=-1, reason=f"broker {b} fenced")
                    self._elect(tp, f"broker {b} fenced")
            elif new_isr != ps.isr:
                self._change(tp, isr=new_isr, reason=f"broker {b} fenced")

    def unfence(self, b: int) -> None:
        if b not in self.fenced:
            return
        self.fenced.discard(b)
        self._unfence_record(self.brokers[b])
        self._event("unfence", broker=b)
        for tp, ps in self.partitions.items():
            if b in ps.replicas and ps.leader < 0:
                self._elect(tp, f"broker {b} unfenced")

    def crash(
        self,
        b: int,
        *,
        lose_unflushed: bool = False,
        torn_bytes: int | None = None,
        keep_index: bool = False,
        tear_last: dict[TP, int] | None = None,
        fence: bool = True,
        fence_after_ms: int = 0,
    ) -> list[dict]:
        """kill -9 (``lose_unflushed=False``: the page cache survives) or a machine crash
        (``lose_unflushed=True``: data above each log's flushed point is gone, optionally with a torn
        first lost batch and, with ``keep_index``, index entries that outlived their data).
        ``tear_last`` maps partitions to a byte count: the last batch of that replica only partly
        reached the disk (the crash hit during its append)."""
        br = self.brokers[b]
        if not br.alive:
            raise SimulationError(f"broker {b} is already down")
        br.alive = False
        br.crash_kind = "power-loss" if lose_unflushed else "kill-9"
        br.down_intervals.append([self.now, None])
        torn_faults = []
        for tp, rep in br.replicas.items():
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
            rep.is_leader = False
            rep.remote = {}
            if tear_last and tp in tear_last:
                torn = rep.log.tear_last_batch(tear_last[tp])
                if torn:
                    torn_faults.append({"broker": b, **tp_fields(tp), **torn})
            if lose_unflushed:
                lost_from = rep.log.recovery_point
                had = rep.log.leo
                torn = rep.log.lose_unflushed(torn_bytes, keep_index)
                if had > lost_from:
                    self.data_loss_crashes += 1
                    self._event(
                        "lost-unflushed",
                        broker=b,
                        **tp_fields(tp),
                        from_offset=lost_from,
                        to_offset=had,
                    )
                if torn:
                    torn_faults.append({"broker": b, **tp_fields(tp), **torn})
        self._event(
            "crash", broker=b, lose_unflushed=lose_unflushed, torn_bytes=torn_bytes, keep_index=keep_index
        )
        for t in torn_faults:
            self.faults.append({"kind": "torn-tail", **t})
        if fence:
            if fence_after_ms:
                self.pending_fences.append((self.now + fence_after_ms, b))
            else:
                self.fence(b)
        self._check()
        return torn_faults

    def shutdown(self, b: int) -> None:
        """Controlled shutdown: leadership moved away, out of the ISRs, logs flushed and closed,
        checkpoints written, ``.kafka_cleanshutdown`` created, then fenced."""
        br = self.brokers[b]
        if not br.alive:
            raise SimulationError(f"broker {b} is already down")
        self._metadata(("BrokerRegistrationChangeRecord", 1, {"brokerId": b, "inControlledShutdown": 1}))
        self._event("controlled-shutdown", broker=b)
        self._stopping.add(b)
        for tp, ps in self.partitions.items():
            if b not in ps.replicas:
                continue
            new_isr = [r for r in ps.isr if r != b] if b in ps.isr and len(ps.isr) > 1 else list(ps.isr)
            if ps.leader == b:
                cands = [r for r in ps.replicas if r in new_isr and r != b and self._eligible(r)]
                self._change(tp, isr=new_isr, leader=cands[0] if cands else -1, reason=f"broker {b} shutdown")
            elif new_isr != ps.isr:
                self._change(tp, isr=new_isr, reason=f"broker {b} shutdown")
        for rep in br.replicas.values():
            self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
            rep.is_leader = False
            rep.log.close()
            rep.sync_epoch_file()
        for fut in br.futures.values():
            fut.log.close()
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
        self.checkpoint_hw(br)
        self.checkpoint_recovery(br)
        br.ckpt_cleaner = br.ckpt_cleaner or {}
        br.clean_marker = True
        br.alive = False
        br.crash_kind = None
        br.down_intervals.append([self.now, None])
        self._stopping.discard(b)
        if b not in self.fenced:
            self.fenced.add(b)
            self._metadata(("BrokerRegistrationChangeRecord", 0, {"brokerId": b, "fenced": 1}))
        self._check()

    def restart(self, b: int) -> dict:
        """Start a stopped broker: load (and after a crash, recover) its logs, register, unfence, and
        become leader or follower of each of its partitions."""
        br = self.brokers[b]
        if br.alive:
            raise SimulationError(f"broker {b} is already running")
        clean = br.clean_marker
        br.clean_marker = False
        reports = {}
        for tp, rep in br.replicas.items():
            rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(tp, 0)
            rep_report = rep.log.recover(rp, clean, self.now, rep.disk_epoch_cache)
            rep.sync_epoch_file()
            ckpt = 0 if br.ckpt_hw is None else br.ckpt_hw.get(tp, 0)
            rep.hw = min(max(ckpt, rep.log.log_start_offset), rep.log.leo)
            rep.is_leader = False
            rep.leader_epoch = -1
            rep.needs_truncation = False
            rep.fetch_failed = False
            if rep_report.truncated_at is not None:
                self.data_loss_crashes += 1
                reports[f"{tp[0]}-{tp[1]}"] = {
                    "truncated_at": rep_report.truncated_at,
                    "reason": rep_report.reason,
                    "deleted_segments": rep_report.deleted_segments,
                }
        for fut in br.futures.values():  # future logs are loaded (and recovered) like the current ones
            fut.log.recover(fut.ckpt_recovery or 0, clean, self.now, fut.disk_epoch_cache)
            fut.disk_epoch_cache = list(fut.log.epoch_cache)
        self._load_retired(br, clean)
        br.alive = True
        br.crash_kind = None
        br.started_ms = self.now
        if br.down_intervals and br.down_intervals[-1][1] is None:
            br.down_intervals[-1][1] = self.now
        br.next_hw_ckpt_ms = self.now + self.rng.randrange(self.options.hw_checkpoint_interval_ms)
        br.next_flush_ckpt_ms = self.now + INITIAL_TASK_DELAY_MS
        self._event("restart", broker=b, clean=clean, recovery=reports)
        self._register(br)
        was_fenced = b in self.fenced
        # partitions whose leadership did not change while we were away: learn the current state
        for tp, rep in br.replicas.items():
            ps = self.partitions[tp]
            if ps.leader == b and not was_fenced:
                self._become_leader(rep, ps.leader_epoch)
            elif ps.leader >= 0:
                self._become_follower(rep, ps.leader_epoch)
        if was_fenced:
            self.unfence(b)
        else:
            self._unfence_record(br)
        unassigned = [tp for tp in br.replicas if UNASSIGNED_DIR in self.partitions[tp].directories]
        self._assign_dirs(unassigned, [b])
        self._check()
        return reports

    def _load_retired(self, br: Broker, clean: bool) -> None:
        """At start-up (KRaft 3.7+, ``LogManager.loadLog`` with ``isStrayKraftReplica``) a log whose
        topic ID the metadata does not know, or whose partition is not assigned to this broker, is loaded and
        renamed ``<topic>-<partition>.<uuid>-stray``; it is never served, checkpointed or closed again.
        ``-delete`` logs are loaded and deleted file.delete.delay.ms later."""
        for r in br.retired:
            if r.state == "deleted":
                r.since_ms = self.now
                continue
            if r.state != "old-incarnation":
                continue
            rep = r.replica
            rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(rep.tp, 0)
            rep.log.recover(rp, clean, self.now, rep.disk_epoch_cache)
            rep.sync_epoch_file()
            spec = self.topics.get(rep.tp[0])
            current = spec is not None and spec.topic_id == r.topic_id
            if current and br.id in self.partitions[rep.tp].replicas:
                continue
            old_name = r.dir_name
            r.state = "stray"
            r.dir_name = suffixed_dir_name(rep.tp, random_dir_unique_id(self.rng), STRAY_DIR_SUFFIX)
            r.since_ms = self.now
            self._event(
                "stray-log",
                broker=br.id,
                topic=rep.tp[0],
                partition=rep.tp[1],
                topic_id=r.topic_id,
                from_dir=old_name,
                to_dir=r.dir_name,
            )

    def corrupt(self, b: int, tp: TP, *, above_recovery_point: bool = True) -> dict:
        """Flip one bit inside a batch's records (breaking its CRC-32C) in a broker's log on disk.

        The batch is chosen above the broker's checkpointed recovery point, where Kafka's recovery would
        find it after an unclean shutdown.
        """
        br = self.brokers[b]
        rep = br.replicas[tp]
        rp = 0 if br.ckpt_recovery is None else br.ckpt_recovery.get(tp, 0)
        lo = rp if above_recovery_point else 0
        entries = [
            (seg, i, bt)
            for seg, i, bt in rep.log.iter_entries()
            if bt.base_offset >= lo and bt.size > 61 and i not in seg.damaged
        ]
        if not entries:
            raise SimulationError(f"no batch above offset {lo} to corrupt on broker {b} {tp}")
        seg, i, bt = entries[self.rng.randrange(len(entries))]
        rel = self.rng.randrange(61, bt.size)
        bit = self.rng.randrange(8)
        raw = bytearray(bt.data)
        raw[rel] ^= 1 << bit
        seg.damaged[i] = bytes(raw)
        fault = {
            "kind": "crc-flip",
            "broker": b,
            **tp_fields(tp),
            "segment_base_offset": seg.base_offset,
            "position": seg.positions[i] + rel,
            "bit": bit,
            "batch_position": seg.positions[i],
            "batch_base_offset": bt.base_offset,
            "batch_last_offset": bt.last_offset,
        }
        self.faults.append(fault)
        self._event("corrupt", **{k: v for k, v in fault.items() if k != "kind"})
        return fault
