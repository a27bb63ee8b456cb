"""Producing the lost records of ``audit --export-lost`` again to a live cluster (``reproduce``).

:mod:`~auditor.reproduce.records` reads ``lost-records.jsonl`` (one line error naming the file and line) and
gives each record its fingerprint; :mod:`~auditor.reproduce.plan` groups the records per topic-partition and
decides which to produce; :mod:`~auditor.reproduce.cluster` talks to the cluster through confluent-kafka
(librdkafka: metadata, topic configs, reading a partition, the idempotent producer);
:mod:`~auditor.reproduce.flow` runs the checks then the production; :mod:`~auditor.reproduce.render` writes
what was found and done as text. confluent-kafka is the ``reproduce`` extra, imported only by ``cluster``.
"""
