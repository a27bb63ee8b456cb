"""Where an extract's segments are on this host: ``--segments-root [BROKER:]FROM=TO``.

An extract records each replica's log dir as the path it had where ``extract`` ran (``/var/lib/kafka/data``
on every broker, often). Read elsewhere (the log dirs copied to ``/mnt/b1``, ``/mnt/b2``…), a mapping
says where each one is now: a recorded log dir equal to ``FROM``, or below it, is read at ``TO`` plus the
rest of its path; ``BROKER:`` limits a mapping to one broker's log dirs (the recorded paths of several
brokers are alike). The first mapping that matches wins; a log dir no mapping matches stays where it was.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_SPEC = re.compile(r"^(?:(?P<broker>\d+):)?(?P<src>[^=]+)=(?P<dst>.+)$")


@dataclass(frozen=True)
class SegmentRoot:
    """One mapping: the recorded log dirs at or below ``src`` (of ``broker`` alone, if set) are at ``dst``."""

    src: str
    dst: str
    broker: int | None = None

    def locate(self, log_dir: str, broker: int | None) -> str | None:
        """Where ``log_dir`` of ``broker`` is now, or None when this mapping does not apply to it."""
        if self.broker is not None and broker != self.broker:
            return None
        path = os.path.normpath(log_dir)
        if path == self.src:
            return self.dst
        prefix = self.src.rstrip("/") + "/"
        if path.startswith(prefix):
            return os.path.join(self.dst, path[len(prefix) :])
        return None


def parse_segment_root(spec: str) -> SegmentRoot:
    """``[BROKER:]FROM=TO`` as a :class:`SegmentRoot`; ValueError with the expected form otherwise."""
    match = _SPEC.match(spec.strip())
    if not match or not match["src"].strip() or not match["dst"].strip():
        raise ValueError(
            f"--segments-root {spec!r}: expected [BROKER:]FROM=TO, e.g. 1:/var/lib/kafka=/mnt/b1"
        )
    broker = int(match["broker"]) if match["broker"] is not None else None
    src = os.path.normpath(match["src"].strip())
    dst = os.path.abspath(match["dst"].strip())
    return SegmentRoot(src=src, dst=dst, broker=broker)


@dataclass(frozen=True)
class SegmentRoots:
    """The ``--segments-root`` mappings in the order given (picklable: the executors apply it)."""

    roots: tuple[SegmentRoot, ...] = ()

    @classmethod
    def parse(cls, specs: list[str] | None) -> SegmentRoots:
        """The mappings of the ``specs`` (ValueError naming the first malformed one)."""
        return cls(tuple(parse_segment_root(s) for s in specs or ()))

    def locate(self, log_dir: str, broker: int | None = None) -> str:
        """Where the recorded ``log_dir`` of ``broker`` is read on this host."""
        for root in self.roots:
            found = root.locate(log_dir, broker)
            if found is not None:
                return found
        return log_dir
