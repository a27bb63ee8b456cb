"""Parse into rows: what the files of a log directory hold, as the observations ``scan``'s rules judge
(``segments``, ``indexes``, ``files``, ``context``) and as the Arrow rows the cross-replica audit compares
(``extract``, ``rows``). Kafka's semantics come from ``auditor.kafka``; no policy here."""
