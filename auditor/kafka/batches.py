"""Which batch Kafka's log recovery keeps, over the columnar headers of ``parsers.segment`` (spec §2, §17.3).

``LogSegment.recover`` reads a segment with ``FileLogInputStream.nextBatch`` and calls ``batch.ensureValid()``
on every entry; the first entry that fails ends the segment's valid prefix. ``nextBatch`` routes an entry by
its magic byte (``magic < 2``: ``LegacyFileChannelRecordBatch``, else ``DefaultFileChannelRecordBatch``), and
``ensureValid`` checks:

* v2 (``DefaultRecordBatch.ensureValid``): size >= ``RECORD_BATCH_OVERHEAD`` (61) and the stored CRC-32C
  equals the one computed over the bytes from the attributes to the end of the batch;
* v0/v1 (``AbstractLegacyRecordBatch.ensureValid`` -> ``LegacyRecord.ensureValid``): size >= 14 and the
  stored CRC-32 equals the one computed from the magic byte on.

The size checks and the torn tail end the walk in ``SegmentWalker`` itself (an entry that fails them is never
a header row); what reaches the rows is judged here. The walker reports an entry with a magic above 2 with a
computed CRC that never matches (it cannot parse what an unknown format means), so such an entry is invalid
here although ``DefaultRecordBatch.ensureValid`` does not look at the magic byte (the v2 CRC does not cover
it): the auditor treats an unknown magic as damage, which is what it is on any broker that wrote the log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parsers.record_batch import LOG_OVERHEAD, MAGIC_V2

"""Magic values Kafka's readers know (``RecordBatch.MAGIC_VALUE_V0`` .. ``MAGIC_VALUE_V2``)."""


def valid_batches(headers: np.ndarray, computed_crc: np.ndarray) -> np.ndarray:
    """Per header row (``parsers.segment.HEADER_DTYPE``): true when recovery's ``ensureValid`` accepts the
    entry: its stored CRC equals ``computed_crc`` and its magic is one Kafka knows."""
    magic = headers["magic"]
    known = (magic >= 0) & (magic <= MAGIC_V2)
    return known & (computed_crc.astype(np.int64) == headers["crc"].astype(np.int64))


def next_offsets(headers: np.ndarray) -> np.ndarray:
    """``lastOffset + 1`` of every row (``baseOffset + lastOffsetDelta + 1``): the log end offset a batch
    leaves (``LogSegment.readNextOffset``)."""
    return headers["base_offset"].astype(np.int64) + headers["last_offset_delta"].astype(np.int64) + 1


@dataclass
class ValidPrefix:
    """What recovery's reader keeps of one segment, fed block by block in file order (bounded memory).

    ``first_invalid``: position of the first entry ``ensureValid`` rejects (None: none);
    ``recovered_next_offset``: next offset after the last batch before it (None: no batch before it);
    ``next_offset_raw``: next offset after the last complete entry, valid or not (what a broker that skips
    recovery reads); ``end``: end of the last entry fed.
    """

    first_invalid: int | None = None
    recovered_next_offset: int | None = None
    next_offset_raw: int | None = None
    end: int = 0

    def feed(self, positions: np.ndarray, headers: np.ndarray, valid: np.ndarray) -> int | None:
        """Account for one block; returns the row index of the segment's first invalid entry when it is in
        this block, else None."""
        if not len(positions):
            return None
        nexts = next_offsets(headers)
        self.next_offset_raw = int(nexts[-1])
        self.end = int(positions[-1]) + int(headers["batch_length"][-1]) + LOG_OVERHEAD
        if self.first_invalid is not None:
            return None
        bad = np.flatnonzero(~valid)
        if not len(bad):
            self.recovered_next_offset = int(nexts[-1])
            return None
        i = int(bad[0])
        self.first_invalid = int(positions[i])
        if i > 0:
            self.recovered_next_offset = int(nexts[i - 1])
        return i

    def valid_end(self, stop_position: int | None) -> int:
        """Byte position where recovery stops reading: the first invalid entry, else where the walk stopped
        (a torn tail or corrupt entry the walker ended on; the file size when every byte was read)."""
        if self.first_invalid is not None:
            return self.first_invalid
        return stop_position if stop_position is not None else self.end
