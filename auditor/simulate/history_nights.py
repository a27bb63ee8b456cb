"""The ``history`` scenario's nights: restarts and events in the morning, traffic, elections and log start
offsets during the day, the evening's clean shutdown, the one-night overrides and the capture of every
broker's log dirs."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from auditor.layout.captures import MANIFEST
from auditor.simulate.history_events import Events
from auditor.simulate.history_model import LogDir, Partition
from auditor.simulate.history_run import (
    BURST,
    ELECTION_PROBABILITY,
    HOUR_MS,
    LAG_RATE,
    SOLO_RECORDS,
    capture_ms,
)
from auditor.simulate.history_state import move_log_start
from auditor.simulate.history_write import BrokerCapture, LogDirCapture
from auditor.text import iso_time as iso
from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from parsers.dirfiles import format_meta_properties, format_partition_metadata


class Sim(Events):
    """A run: :meth:`run` simulates every night and captures it."""

    # ------------------------------------------------------------------------------------ the days

    def run(self) -> None:
        for day in range(self.opts.days):
            self._morning(day)
            self._traffic(day)
            for p in self.model.partitions.values():
                self.model.settle(p)
            self._evening(day)
            self._overrides(day)
            self._capture(day)
        self._end_findings()

    def _morning(self, day: int) -> None:
        m, at = self.model, capture_ms(day) - 20 * HOUR_MS
        if day == self.day_of["restart-recovery-point"] and self.shutdown_broker is not None:
            m.start(self.shutdown_broker, at)
        for b in self.restarts.get(day, []):
            m.stop(b, clean=True)
            m.start(b, at + self.rng.randint(60_000, 600_000))
        if day == self.day_of["unclean-election"]:
            self._unclean_crash(day, at)
        if day == self.day_of["log-dir-reformatted"]:
            self._reformat(day, at)
        if day == self.day_of["partition-reassigned"]:
            self._reassign(day)
        if day == self.day_of["topic-recreated"]:
            self._recreate(day)
        if day == self.lag_start + 1:
            self._lag_begin(day)
        if day == self.lag_start + 4:
            assert self.lag_partition is not None and self.lag_follower is not None
            self.lag_partition.replicas[self.lag_follower].stuck = False
        if day == self.day_of["brief-lag"]:
            self._brief_begin(day)
        if day == self.day_of["brief-lag"] + 1:
            assert self.brief_partition is not None and self.brief_follower is not None
            self.brief_partition.replicas[self.brief_follower].stuck = False
        if day == self.day_of["unclean-election"] - 1:
            self._unclean_prepare(day)

    def _traffic(self, day: int) -> None:
        m, rng = self.model, self.rng
        for _tp, p in sorted(m.partitions.items()):
            n = rng.randint(*p.rate)
            if p is self.lag_partition and self.lag_start < day <= self.lag_start + 3:
                n = LAG_RATE
            if p is self.brief_partition and day == self.day_of["brief-lag"]:
                n += BURST
            if p is self.unclean_partition and day == self.day_of["unclean-election"]:
                n = rng.randint(300, 600)  # the new leader's first records: fewer than the old leader had
            first = max(1, n // 2)
            m.produce(p, first)
            if p is self.unclean_partition and day == self.day_of["unclean-election"] - 1:
                m.settle(p)
                for b in self.unclean_followers:
                    p.replicas[b].stuck = True  # fenced: the ISR shrinks to the leader
                m.produce(p, SOLO_RECORDS)
                continue
            if rng.random() < ELECTION_PROBABILITY and self._elections_allowed(p, day):
                others = [b for b in m.in_sync(p) if b != p.leader]
                if others:
                    m.elect(p, rng.choice(others))
            m.produce(p, n - first)
        for p in m.partitions.values():
            move_log_start(p)

    def _elections_allowed(self, p: Partition, day: int) -> bool:
        return not (self.reserved.get(p.tp, set()) & {day - 1, day, day + 1})

    def _evening(self, day: int) -> None:
        if day == self.day_of["restart-recovery-point"] - 1:
            m, tomorrow = self.model, day + 1
            hosting = {
                b
                for _, p in sorted(m.partitions.items())
                if p.topic != self.recreated_topic and tomorrow not in self.fragile.get(p.tp, set())
                for b, r in p.replicas.items()
                if not m.frozen(r)
            }
            candidates = [b for b in self.role_candidates if b != self.unclean_broker]
            eligible = [b for b in candidates if b in hosting]
            self.shutdown_broker = self.rng.choice(eligible or candidates)
            self.model.stop(self.shutdown_broker, clean=True)  # stopped for maintenance during the capture
            self._event(
                "clean-shutdown-captured",
                day,
                [],
                f"broker {self.shutdown_broker} is stopped cleanly during the night's capture: its "
                "log dirs hold .kafka_cleanshutdown and recovery points at the log end",
                broker=self.shutdown_broker,
            )

    # ------------------------------------------------------------------------------------ captures

    def _captured(self, b: int, day: int) -> bool:
        return not (b == self.missing_broker and day >= self.opts.days - 3)

    def _capture(self, day: int) -> None:
        m, now = self.model, capture_ms(day)
        state: dict = {}
        for b, br in sorted(m.brokers.items()):
            if not self._captured(b, day):
                continue
            cluster = (
                self.new_cluster_id
                if (b == self.renamed_broker and day == self.opts.days - 1)
                else br.cluster_id
            )
            log_dirs = []
            for i, ld in enumerate(br.log_dirs):
                files = self._capture_files(b, i, ld, cluster, now, day, state)
                log_dirs.append(LogDirCapture(ld.name, ld.path, files))
            symlinks = [self.symlink[(day, b)]] if (day, b) in self.symlink else []
            capture = BrokerCapture(b, now, log_dirs, symlinks)
            if self.sink is not None:
                self.sink(capture)
            else:
                self.captures.append(capture)
            self.last_capture_of[b] = day
        for p in m.partitions.values():
            p.hw_by_day.append(p.replicas[p.leader].hw)
            del p.hw_by_day[0]
        self.states[day] = state
        self.broker_days[day] = {
            b: (br.start_ms, br.clean_marker) for b, br in m.brokers.items() if self._captured(b, day)
        }
        if day == self.opts.days - 1:
            self._expect_event(
                "KA809",
                "cluster-id-changed",
                day,
                self.renamed_broker,
                f"broker {self.renamed_broker}'s meta.properties names cluster "
                f"{self.new_cluster_id} instead of {self.cluster_id} on the last night",
                note=f"cluster.id {self.cluster_id} -> {self.new_cluster_id}",
                details={"before": self.cluster_id, "after": self.new_cluster_id},
                cluster=self.new_cluster_id,
            )

    def _capture_files(
        self, b: int, i: int, ld: LogDir, cluster: str, now: int, day: int, state: dict
    ) -> dict:
        br = self.model.brokers[b]
        parts = self._replicas_in(b, i)
        files: dict[str, bytes] = {
            "meta.properties": format_meta_properties(
                1, b, cluster, ld.directory_id, datetime.fromtimestamp(ld.formatted_ms / 1000, timezone.utc)
            )
        }
        hw, rp, log_start = [], [], []
        for p in parts:
            r = p.replicas[b]
            hw.append((p.topic, p.partition, r.hw))
            rp.append((p.topic, p.partition, r.rp))
            if p.delete_records and r.log_start > 0:
                log_start.append((p.topic, p.partition, r.log_start))
            pdir = f"{p.topic}-{p.partition}"
            files[f"{pdir}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(r.epochs)
            files[f"{pdir}/partition.metadata"] = format_partition_metadata(p.topic_id)
            state[(b, p.topic, p.partition)] = (r.leo, r.hw, r.rp, r.log_start, list(r.epochs))
            self.last[(b, p.topic, p.partition)] = (r.hw, r.rp, r.log_start)
        files["replication-offset-checkpoint"] = format_offset_checkpoint(hw)
        files["recovery-point-offset-checkpoint"] = format_offset_checkpoint(rp)
        files["log-start-offset-checkpoint"] = format_offset_checkpoint(log_start)
        files["cleaner-offset-checkpoint"] = format_offset_checkpoint([])
        if self.torn.get((day, b)) == ld.name:
            files["recovery-point-offset-checkpoint"] = _torn(files["recovery-point-offset-checkpoint"])
        if br.clean_marker:
            files[".kafka_cleanshutdown"] = json.dumps(
                {"version": 0, "brokerEpoch": br.broker_epoch}, separators=(",", ":")
            ).encode()
        if br.manifest:
            manifest = {
                "captureTime": iso(now),
                "broker": b,
                "cluster": cluster,
                "logDir": ld.path,
                "brokerStartTime": iso(br.start_ms),
            }
            files[MANIFEST] = (json.dumps(manifest, indent=1) + "\n").encode()
        return files

    def _end_findings(self) -> None:
        d = self.opts.days
        m_last = capture_ms(d - 4)
        visible = next(
            day for day in range(d - 3, d) if capture_ms(day) - m_last > self.opts.missing_after_ms
        )
        self._expect_event(
            "KA811",
            "broker-missing",
            visible,
            self.missing_broker,
            f"broker {self.missing_broker}'s dumps stop after the night of {iso(m_last)} (its collector "
            "broke; the broker keeps running)",
            note=f"last capture {iso(m_last)}",
        )


def _torn(data: bytes) -> bytes:
    """A checkpoint whose last line ends after its first token (a torn write): Kafka's reader fails with
    ``Malformed line in checkpoint file``."""
    lines = data.split(b"\n")
    # data ends with "\n": lines[-1] == b""; lines[-2] is the last entry
    last = lines[-2]
    return b"\n".join(lines[:-2]) + b"\n" + last.split(b" ")[0]
