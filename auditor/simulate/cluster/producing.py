"""Producing: produce requests with acks=0, 1 or all, idempotent and transactional producers, transaction
markers, and traffic runs."""

from __future__ import annotations

from auditor.simulate.batches import encode_data_batch, encode_marker_batch
from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.log import SimBatch, SimRecord
from auditor.simulate.model import ACKS, TP, Replica, SimulationError, Write


class ProducingMixin(ClusterBase):
    """Producers and their requests to the partition leaders."""

    def _producer(self, topic: str) -> dict:
        prod = self._producers.get(topic)
        if prod is None:
            prod = {
                "pid": self._next_pid,
                "epoch": 0,
                "seq": {},
                "open": {},
                "coordinator_epoch": 0,
                "topic": topic,
                "transactional_id": f"{topic}-producer-{self._next_pid}",
                "txn_batches": [],
                "txn_started_ms": None,
            }
            self._next_pid += 1
            self._producers[topic] = prod
        return prod

    def new_producer(self, topic: str) -> dict:
        """The producer application of ``topic`` dies and a new one (new producer id and transactional id)
        takes over; a transaction the old one left open stays open."""
        old = self._producers.pop(topic, None)
        if old is not None:
            self.retired_producers.append(old)
            self._event("producer-replaced", topic=topic, producer_id=old["pid"], open=sorted(old["open"]))
        return self._producer(topic)

    def make_records(self, tp: TP, count: int, label: str) -> list[SimRecord]:
        out = []
        ts = self.wall_ms
        for _ in range(count):
            seq = self._seq[tp]
            self._seq[tp] = seq + 1
            head = f"{label}-{tp[1]}-{seq:07d}".encode()
            pad = max(0, self.options.value_bytes - len(head) - 1)
            out.append(SimRecord(str(seq).encode(), head + b"|" + b"x" * pad, ts))
        return out

    def produce(
        self,
        topic: str,
        partition: int,
        count: int,
        *,
        acks: str = "all",
        label: str = "r",
        transactional: bool | None = None,
        records: list[SimRecord] | None = None,
    ) -> Write:
        """One produce request of ``count`` records (one batch) to the current leader; ``records`` gives
        the records themselves (a coordinator's writes) instead of generated ones."""
        if acks not in ACKS:
            raise SimulationError(f"bad acks {acks!r}")
        tp = (topic, partition)
        spec = self.topics[topic]
        ps = self.partitions[tp]
        leader = self.leader_replica(tp)
        write = Write(tp, None, acks, "pending", ps.leader, ps.leader_epoch, self.now)
        self.writes.append(write)
        if leader is None:
            write.status, write.error, write.done_ms = "failed", "NOT_LEADER_OR_FOLLOWER", self.now
            return write
        if acks == "all" and len(ps.isr) < spec.min_insync:
            write.status, write.error, write.done_ms = "rejected", "NOT_ENOUGH_REPLICAS", self.now
            return write
        records = self.make_records(tp, count, label) if records is None else records
        count = len(records)
        kind = spec.kind
        txn = kind == "transactional" if transactional is None else transactional
        pid = pepoch = base_seq = -1
        if kind in ("idempotent", "transactional"):
            prod = self._producer(topic)
            pid, pepoch = prod["pid"], prod["epoch"]
            base_seq = prod["seq"].get(partition, 0)
            entry = leader.log.producers.get(pid)
            if entry is None or entry.epoch < pepoch:
                in_order = base_seq == 0
            else:
                in_order = entry.epoch == pepoch and entry.last_sequence == base_seq - 1
            if not in_order:
                # OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID after lost batches: the producer bumps
                # its epoch and restarts its sequences at 0 (KIP-360), then resends
                prod["epoch"] += 1
                prod["seq"] = {}
                pid, pepoch, base_seq = prod["pid"], prod["epoch"], 0
                self._event(
                    "producer-epoch-bump",
                    topic=topic,
                    partition=partition,
                    producer_id=pid,
                    producer_epoch=pepoch,
                )
            prod["seq"][partition] = base_seq + count
            if txn:
                if partition not in prod["open"] and self.coordinators is not None:
                    self.coordinators.transactions.add_partition(prod, tp)
                prod["open"].setdefault(partition, True)
        base = leader.log.leo
        data = encode_data_batch(
            records,
            base_offset=base,
            epoch=leader.leader_epoch,
            compression=spec.compression,
            producer_id=pid,
            producer_epoch=pepoch,
            base_sequence=base_seq,
            transactional=txn,
        )
        batch = SimBatch(
            self._batch_id(),
            base,
            base + count - 1,
            leader.leader_epoch,
            records,
            data,
            max(r.timestamp for r in records),
            pid,
            pepoch,
            base_seq,
            txn,
            None,
            -1,
            acks,
            leader.broker,
            self.now,
        )
        write.batch = batch
        if txn:
            self._producer(topic)["txn_batches"].append(batch.batch_id)
        self._leader_append(leader, batch)
        if acks == "0":
            write.status = "unacked"
        elif acks == "1":
            write.status, write.done_ms = "acked", self.now
        else:
            leader.pending.append(write)
        self._maybe_increment_hw(leader)
        return write

    def end_transaction(self, topic: str, commit: bool) -> list[Write]:
        """The transaction coordinator writes COMMIT/ABORT markers to every partition of the open txn."""
        prod = self._producer(topic)
        out = []
        if prod["open"] and self.coordinators is not None:
            self.coordinators.transactions.prepare(prod, commit)
        for partition in sorted(prod["open"]):
            tp = (topic, partition)
            ps = self.partitions[tp]
            leader = self.leader_replica(tp)
            write = Write(tp, None, "all", "pending", ps.leader, ps.leader_epoch, self.now)
            self.writes.append(write)
            out.append(write)
            if leader is None:
                write.status, write.error, write.done_ms = "failed", "NOT_LEADER_OR_FOLLOWER", self.now
                continue
            base = leader.log.leo
            data, rec = encode_marker_batch(
                commit=commit,
                coordinator_epoch=prod["coordinator_epoch"],
                base_offset=base,
                epoch=leader.leader_epoch,
                producer_id=prod["pid"],
                producer_epoch=prod["epoch"],
                timestamp=self.wall_ms,
            )
            batch = SimBatch(
                self._batch_id(),
                base,
                base,
                leader.leader_epoch,
                [rec],
                data,
                self.wall_ms,
                prod["pid"],
                prod["epoch"],
                -1,
                True,
                "COMMIT" if commit else "ABORT",
                prod["coordinator_epoch"],
                "all",
                leader.broker,
                self.now,
            )
            write.batch = batch
            self.txn_outcome[batch.batch_id] = "marker"
            self._leader_append(leader, batch)
            leader.pending.append(write)
            self._maybe_increment_hw(leader)
        if prod["open"] and self.coordinators is not None:
            self.coordinators.transactions.complete(prod, commit)
        for batch_id in prod["txn_batches"]:
            self.txn_outcome[batch_id] = "committed" if commit else "aborted"
        prod["open"] = {}
        prod["txn_batches"] = []
        return out

    def _leader_append(self, leader: Replica, batch: SimBatch) -> None:
        leader.log.append([batch], self.now)
        leader.sync_epoch_file()

    def _fail_pending(self, rep: Replica, error: str) -> None:
        for w in rep.pending:
            w.status, w.error, w.done_ms = "failed", error, self.now
        rep.pending = []

    def committed_ms(self, batch: SimBatch) -> int | None:
        return self._committed.get(batch.batch_id)

    def run_traffic(
        self,
        tps: list[TP],
        records: int,
        *,
        acks: str = "all",
        label: str = "r",
        skip: set[int] | frozenset[int] = frozenset(),
        replicate: bool = True,
    ) -> list[Write]:
        """Produce ``records`` records spread over ``tps`` in batches of 1..batch_records records;
        after each batch every follower fetches once (unless ``replicate`` is off or it is in
        ``skip``) and the clock advances by the produce interval. Transactional topics commit (or
        every ``abort_every``-th time abort) after ``txn_batches`` batches per partition."""
        out: list[Write] = []
        if not tps or records <= 0:
            return out
        share = [records // len(tps) + (1 if i < records % len(tps) else 0) for i in range(len(tps))]
        in_txn = {tp: 0 for tp in tps}
        txn_count: dict[str, int] = {}
        while any(share):
            for i, tp in enumerate(tps):
                if not share[i]:
                    continue
                n = min(share[i], self.rng.randint(1, self.options.batch_records))
                share[i] -= n
                out.append(self.produce(tp[0], tp[1], n, acks=acks, label=label))
                if self.topics[tp[0]].kind == "transactional":
                    in_txn[tp] += 1
                    if in_txn[tp] >= self.options.txn_batches or not share[i]:
                        txn_count[tp[0]] = txn_count.get(tp[0], 0) + 1
                        commit = txn_count[tp[0]] % self.options.abort_every != 0
                        out += self.end_transaction(tp[0], commit)
                        in_txn[tp] = 0
            if replicate:
                self.fetch_round(skip=skip, tps=tps)
            self.tick(self.options.produce_interval_ms)
        return out
