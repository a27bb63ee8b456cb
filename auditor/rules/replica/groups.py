"""KA720-KA723: consumer group offsets against the partitions' logs after an incident."""

from __future__ import annotations
