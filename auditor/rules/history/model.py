"""The input of the history checks (scopes ``history``, ``fleet``, ``ingest``): the warehouse's tables as pandas
DataFrames, plus the report's settings.

Every frame has the columns of its table in :data:`auditor.observe.history_rows.TABLES` (``cluster`` and
``captureDate`` as plain strings, ``captureTime`` as ``datetime64[ms, UTC]``). For scope ``history`` the
per-partition frames hold whole partitions (every broker's rows of a topic partition, every capture) of one
chunk and ``captures``/``brokers`` hold every capture of the warehouse; for ``fleet`` and ``ingest`` the
per-partition frames are empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from auditor.observe.history_rows import TABLES


def empty_frame(table: str) -> pd.DataFrame:
    """An empty frame with ``table``'s columns and dtypes."""
    return TABLES[table].empty_table().to_pandas()


@dataclass(frozen=True)
class HistorySettings:
    """The report's thresholds (CLI options of ``report``)."""

    lag_records: int = 10_000
    """KA806: the high-watermark spread across a partition's replicas that counts as lag."""
    lag_duration_ms: int = 24 * 3600 * 1000
    """KA806: how long (between the first and last capture above the threshold) lag must last."""
    missing_after_ms: int = 12 * 3600 * 1000
    """KA811: a broker whose latest capture is older than the cluster's latest by more than this is missing."""


@dataclass
class History:
    """One chunk of the warehouse (see the module docstring)."""

    captures: pd.DataFrame = field(default_factory=lambda: empty_frame("captures"))
    brokers: pd.DataFrame = field(default_factory=lambda: empty_frame("brokers"))
    problems: pd.DataFrame = field(default_factory=lambda: empty_frame("problems"))
    high_watermarks: pd.DataFrame = field(default_factory=lambda: empty_frame("high_watermarks"))
    recovery_points: pd.DataFrame = field(default_factory=lambda: empty_frame("recovery_points"))
    log_start_offsets: pd.DataFrame = field(default_factory=lambda: empty_frame("log_start_offsets"))
    cleaner_offsets: pd.DataFrame = field(default_factory=lambda: empty_frame("cleaner_offsets"))
    leader_epochs: pd.DataFrame = field(default_factory=lambda: empty_frame("leader_epochs"))
    partitions: pd.DataFrame = field(default_factory=lambda: empty_frame("partitions"))
    settings: HistorySettings = field(default_factory=HistorySettings)
