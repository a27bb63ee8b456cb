"""The cross-replica rules of ``kafka-auditor audit`` (KA6xx/KA7xx), one registered function per rule like
the scan rules: ``replicas`` rules run once per partition over
:class:`~auditor.rules.replica.model.PartitionReplicas`, ``lag`` and ``loss`` rules over the rows Spark
counts after them, ``cluster`` rules once per cluster. ``auditor.spark.partition_rules`` derives the inputs
and runs them inside Spark (``mapInArrow``).
"""
