"""What ``kafka-auditor dump`` is asked to show (its options)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DumpOptions:
    deep: bool = False
    print_values: bool = False
    encoding: str = "auto"  # auto (utf8 when valid UTF-8, else base64) | base64
    max_bytes: int | None = None
    decoder: str = "auto"  # auto | metadata | offsets | transaction-log | none

    def __post_init__(self) -> None:
        self.deep = self.deep or self.print_values
