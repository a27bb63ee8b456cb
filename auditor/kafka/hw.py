"""How a replica's checkpointed high watermark relates to its log (spec §17.1).

Kafka reads ``replication-offset-checkpoint`` when it creates the partition's log (``Partition.createLog``:
``log.updateHighWatermark(offsetCheckpoints.fetch(...).getOrElse(0))``) after ``LogLoader.load`` has run
recovery, and ``UnifiedLog.updateHighWatermark`` clamps the value into ``[logStartOffset, logEndOffset]`` of
that *recovered* log. The relations below therefore take the recovered log end offset
(:func:`auditor.kafka.recovery.recover`): a HW above it marks committed offsets this replica no longer has.
"""

from __future__ import annotations


def clamp_high_watermark(hw: int | None, log_start: int, leo: int) -> int:
    """The high watermark Kafka loads: ``min(max(hw, logStartOffset), logEndOffset)``, a missing checkpoint
    entry counting as 0 (``UnifiedLog.updateHighWatermark`` called from ``Partition.createLog``)."""
    return min(max(hw if hw is not None else 0, log_start), leo)


def hw_above_leo(hw: int | None, leo: int) -> bool:
    """The checkpointed HW is above the log end offset: offsets ``[leo, hw)`` once committed are missing."""
    return hw is not None and hw > leo


def hw_below_log_start(hw: int | None, log_start: int) -> bool:
    """The checkpointed HW is below the log start offset (Kafka never moves the log start past the HW:
    ``UnifiedLog.maybeIncrementLogStartOffset`` "... since it is larger than the high watermark")."""
    return hw is not None and hw < log_start
