"""A deterministic, event-driven model of Kafka replication (spec §17): :class:`Cluster`.

Each concern is a mixin in its own module over the state of :class:`~.base.ClusterBase` (the mixins call
one another through ``self``); the model's types are in :mod:`auditor.simulate.model`. What the model does,
in Kafka's terms: ``docs/simulator.md`` ("The replication model").
"""

from __future__ import annotations

from auditor.simulate.cluster.clock import ClockMixin
from auditor.simulate.cluster.invariants import InvariantsMixin
from auditor.simulate.cluster.leadership import LeadershipMixin
from auditor.simulate.cluster.lifecycle import LifecycleMixin
from auditor.simulate.cluster.log_dirs import LogDirsMixin
from auditor.simulate.cluster.producing import ProducingMixin
from auditor.simulate.cluster.replication import ReplicationMixin
from auditor.simulate.cluster.topics import TopicsMixin

__all__ = ["Cluster"]


class Cluster(
    TopicsMixin,
    LogDirsMixin,
    LeadershipMixin,
    ProducingMixin,
    ReplicationMixin,
    ClockMixin,
    LifecycleMixin,
    InvariantsMixin,
):
    """The whole cluster: brokers, controller and producers, driven by explicit events."""
