"""KA8xx: the checks of ``kafka-auditor report`` over the checkpoint history of an ingest warehouse.

``model`` holds their input (:class:`~auditor.rules.history.model.History`); ``offsets`` the checks of the
offset checkpoints over time (high watermark, log start offset, recovery point, lag, partitions appearing and
vanishing), ``epochs`` those of the leader-epoch caches (forks, rewritten caches), ``fleet`` those of the
brokers and of ingest itself (cluster.id/directory.id changes, brokers missing, malformed files, refused
archive entries), ``ordering`` the capture times that cannot put a broker's captures in order (and the
regressions only that order made).
"""
