"""Kafka's semantics, stated once and used by every command: which batch is valid, what log recovery keeps,
how the high watermark relates to the log, the leader-epoch cache and OffsetsForLeaderEpoch, KRaft metadata
replay, and the internal compacted topics. No file is read here except through ``parsers``; no policy
(severity, wording) lives here: that is ``auditor.rules``."""
