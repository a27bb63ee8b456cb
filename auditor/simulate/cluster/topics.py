"""Creating and deleting topics (TopicRecord, PartitionRecord, RemoveTopicRecord) and the internal topics
of the group and transaction coordinators."""

from __future__ import annotations

from auditor.simulate.cluster.base import ClusterBase
from auditor.simulate.log import SimRecord
from auditor.simulate.model import (
    DELETE_DIR_SUFFIX,
    TP,
    LeaderChange,
    PartitionState,
    Replica,
    RetiredReplica,
    SimulationError,
    TopicDeletion,
    TopicSpec,
    random_dir_unique_id,
    random_uuid,
    suffixed_dir_name,
    tp_fields,
)


class TopicsMixin(ClusterBase):
    """Topics: creation (with Kafka's round-robin replica assignment), deletion (``-delete`` directories,
    old incarnations on brokers that are down, offset tombstones) and the coordinators' topics."""

    def add_topic(
        self,
        name: str,
        partitions: int,
        *,
        kind: str = "plain",
        unclean: bool = False,
        min_insync: int | None = None,
        replicas: dict[int, list[int]] | None = None,
        compression: int | None = None,
        topic_index: int = 0,
        configs: dict[str, str] | None = None,
    ) -> TopicSpec:
        """Create a topic; replicas default to Kafka's round-robin assignment; ``configs`` are more topic
        configs for its ConfigRecords (``cleanup.policy`` of the internal topics)."""
        ids = sorted(self.brokers)
        rf = self.options.rf
        if replicas is None:
            replicas = {}
            for p in range(partitions):
                start = (topic_index + p) % len(ids)
                replicas[p] = [ids[(start + i) % len(ids)] for i in range(rf)]
        spec = TopicSpec(
            name,
            partitions,
            replicas,
            random_uuid(self.rng),
            kind,
            unclean,
            self.options.min_insync_replicas if min_insync is None else min_insync,
            self.options.compression_id if compression is None else compression,
        )
        self.topics[name] = spec
        records: list[tuple[str, int, dict]] = [("TopicRecord", 0, {"name": name, "topicId": spec.topic_id})]
        configs = {
            "min.insync.replicas": str(spec.min_insync),
            "segment.bytes": str(self.options.segment_bytes),
            **(configs or {}),
        }
        if unclean:
            configs["unclean.leader.election.enable"] = "true"
        for key, value in sorted(configs.items()):
            records.append(
                ("ConfigRecord", 0, {"resourceType": 2, "resourceName": name, "name": key, "value": value})
            )
        for p in range(partitions):
            tp = (name, p)
            reps = replicas[p]
            live = [r for r in reps if r not in self.fenced and self.brokers[r].alive]
            leader = live[0] if live else -1
            dirs = [self._default_dir(r) for r in reps]
            ps = PartitionState(list(reps), list(reps), leader, directories=list(dirs))
            self.partitions[tp] = ps
            self._seq[tp] = 0
            records.append(
                (
                    "PartitionRecord",
                    2,
                    {
                        "partitionId": p,
                        "topicId": spec.topic_id,
                        "replicas": list(reps),
                        "isr": list(reps),
                        "removingReplicas": [],
                        "addingReplicas": [],
                        "leader": leader,
                        "leaderEpoch": 0,
                        "partitionEpoch": 0,
                        "directories": dirs,
                    },
                )
            )
            for r in reps:
                br = self.brokers[r]
                if any(x.replica.tp == tp and x.state == "old-incarnation" for x in br.retired):
                    raise SimulationError(
                        f"broker {r} still holds an old incarnation of {tp} (not modelled: restart it first)"
                    )
                rep = Replica(r, tp, self.log_config, self.now)
                rep.log_dir = self._next_log_dir(br)
                br.replicas[tp] = rep
            self.leader_history[tp] = [
                LeaderChange(0, leader, 0 if leader >= 0 else None, self.now, list(reps), False, "created")
            ]
            for r in reps:
                if self.brokers[r].alive:
                    if r == leader:
                        self._become_leader(self.brokers[r].replicas[tp], 0)
                    else:
                        self._become_follower(self.brokers[r].replicas[tp], 0)
        self._metadata(*records)
        self._event("create-topic", topic=name, partitions=partitions, producer=kind, unclean=unclean)
        self._assign_dirs([(name, p) for p in range(partitions)])
        return spec

    def delete_topic(self, name: str) -> TopicDeletion:
        """DeleteTopics in KRaft: one ``RemoveTopicRecord``. Each running broker stops its replicas,
        renames their directories ``<topic>-<partition>.<uuid>-delete`` (removed file.delete.delay.ms later)
        and rewrites the recovery-point and log-start-offset checkpoints (the model rewrites those of all its
        log dirs, Kafka only those of the dirs concerned); a broker that is down keeps its replicas untouched
        (an old incarnation). The group coordinators write offset
        tombstones for the deleted partitions (``OffsetMetadataManager.onPartitionsDeleted``)."""
        spec = self.topics.pop(name)
        tps = [(name, p) for p in range(spec.partitions)]
        self._metadata(("RemoveTopicRecord", 0, {"topicId": spec.topic_id}))
        deletion = TopicDeletion(
            spec,
            {tp[1]: self.partitions.pop(tp) for tp in tps},
            {tp[1]: self.leader_history.pop(tp) for tp in tps},
            [w for w in self.writes if w.tp[0] == name],
            self.now,
            len(self.metadata) - 1,
        )
        index = len(self.topic_deletions)
        self.topic_deletions.append(deletion)
        self.writes = [w for w in self.writes if w.tp[0] != name]
        deleted_on, kept_on = deletion.deleted_on, deletion.kept_on
        for b, br in sorted(self.brokers.items()):
            mine = [tp for tp in tps if tp in br.replicas]
            if any(tp in br.futures for tp in mine):
                raise SimulationError(
                    f"deleting {name} while broker {b} moves one of its replicas (not modelled)"
                )
            for tp in mine:
                rep = br.replicas.pop(tp)
                self._fail_pending(rep, "NOT_LEADER_OR_FOLLOWER")
                rep.is_leader = False
                rep.remote = {}
                if br.alive:
                    dir_name = suffixed_dir_name(tp, random_dir_unique_id(self.rng), DELETE_DIR_SUFFIX)
                    retired = RetiredReplica(rep, spec.topic_id, "deleted", dir_name, self.now, index)
                else:
                    retired = RetiredReplica(
                        rep, spec.topic_id, "old-incarnation", f"{tp[0]}-{tp[1]}", self.now, index
                    )
                br.retired.append(retired)
            if mine and br.alive:
                self.checkpoint_recovery(br)
                deleted_on.append(b)
            elif mine:
                kept_on.append(b)
        for tp in tps:
            self.unclean_elections.discard(tp)
        old = self._producers.pop(name, None)
        if old is not None:
            self.retired_producers.append(old)
        self._event(
            "delete-topic", topic=name, topic_id=spec.topic_id, deleted_on=deleted_on, kept_on=kept_on
        )
        self._tombstone_offsets(deletion, set(tps))
        return deletion

    def _tombstone_offsets(self, deletion: TopicDeletion, tps: set[TP]) -> None:
        """Each group coordinator shard appends one batch of offset tombstones (OffsetCommit key, null value)
        for the offsets its groups committed on ``tps``; the consumers' positions are forgotten."""
        co = self.coordinators
        if co is None:
            return
        from auditor.simulate.coordinators import OFFSET_COMMIT_KEY_TYPE, OFFSETS_TOPIC, CoordinatorRecord
        from parsers.consumer_offsets import encode_offsets_key

        groups = co.groups
        by_shard: dict[int, dict[tuple[str, TP], None]] = {}
        for cm in groups.commits:
            if cm.tp in tps and cm.status == "acked":
                by_shard.setdefault(cm.offsets_partition, {})[(cm.group, cm.tp)] = None
        for part in sorted(by_shard):
            keys = sorted(by_shard[part])
            payload = [{"group": g, **tp_fields(tp)} for g, tp in keys]
            records = [
                SimRecord(encode_offsets_key(OFFSET_COMMIT_KEY_TYPE, k), None, self.wall_ms) for k in payload
            ]
            write = self.produce(OFFSETS_TOPIC, part, len(records), acks="all", records=records)
            if write.batch is not None:
                self.coordinator_records[write.batch.batch_id] = [
                    CoordinatorRecord("offset-commit", k, None) for k in payload
                ]
            for g, tp in keys:
                deletion.tombstones.append(
                    {
                        "group": g,
                        "tp": tp,
                        "offsets_partition": part,
                        "write": write,
                        "commits": len(groups.commits),
                    }
                )
            self._event("offset-tombstones", offsets_partition=part, count=len(keys), status=write.status)
        for key in [k for k in groups.position if k[1] in tps]:
            del groups.position[key]

    def add_coordinators(
        self,
        *,
        offsets_partitions: int = 3,
        txn_partitions: int = 3,
        replicas: list[int] | None = None,
        min_insync: int = 1,
        unclean: bool = False,
    ):
        """Create ``__consumer_offsets`` and ``__transaction_state`` (compacted, every partition on
        ``replicas``, default the first rf brokers) and start their group and transaction coordinators."""
        from auditor.simulate.coordinators import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, Coordinators

        reps = list(replicas or sorted(self.brokers)[: self.options.rf])
        for name, n in ((OFFSETS_TOPIC, offsets_partitions), (TRANSACTION_STATE_TOPIC, txn_partitions)):
            self.add_topic(
                name,
                n,
                kind="internal",
                unclean=unclean,
                min_insync=min(min_insync, len(reps)),
                replicas={p: list(reps) for p in range(n)},
                compression=0,
                configs={"cleanup.policy": "compact"},
            )
        self.coordinators = Coordinators(self, offsets_partitions, txn_partitions)
        return self.coordinators
