"""RecordBatch magic v2: the 61-byte header, records and their zig-zag varint fields (spec §3), in one place
for the code that reads or writes batches.

The declarations are the source of truth: ``BatchHeaderV2`` (:mod:`parsers.batch_header`, with
``HEADER_STRUCT``, a ``struct.Struct`` derived from it) and ``RecordV2`` (:mod:`parsers.record_v2`, with
``RECORD_PLAN``, its fields as decoding steps). The fast paths follow ``RECORD_PLAN``:
``iter_records``/``batch_records`` (streaming, :mod:`parsers.record_decode`), ``record_rows`` (a records
section held whole, for ``dump --deep``, :mod:`parsers.record_rows`), ``parsers.segment.record_columns``
(column by column) and ``parsers.control.first_control_type``; ``tests/parsers/test_record_batch.py``,
``tests/test_dump_fastpath.py`` and ``tests/audit/test_extract_fastpath.py`` prove they agree with the
declarations. Building batches: :mod:`parsers.record_build`.
"""

from __future__ import annotations

from parsers.batch_header import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    COMPRESSION_NAMES,
    CRC_START,
    HEADER_FIELDS,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    INT32_MAX,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    BatchHeaderV2,
    RecordBatch,
    last_sequence,
    parse_header,
)
from parsers.record_build import (
    RecordSpec,
    build_batch,
    encode_record,
    restamp,
)
from parsers.record_decode import (
    DECOMPRESSED_LIMIT,
    MAX_LARGE_RECORD_HEADERS,
    MAX_RECORDS_PER_BATCH,
    RECORD_WINDOW,
    RecordBudgetExceeded,
    RecordError,
    batch_records,
    decode_records,
    iter_records,
    records_payload,
)
from parsers.record_rows import (
    RecordRow,
    record_rows,
)
from parsers.record_v2 import (
    RECORD_PLAN,
    Header,
    Record,
    RecordHeaderV2,
    RecordV2,
    parse_records_with_schema,
)

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_TIMESTAMP_TYPE",
    "ATTR_TRANSACTIONAL",
    "BatchHeaderV2",
    "COMPRESSION_NAMES",
    "CRC_START",
    "DECOMPRESSED_LIMIT",
    "HEADER_FIELDS",
    "HEADER_SIZE_UP_TO_MAGIC",
    "HEADER_STRUCT",
    "Header",
    "INT32_MAX",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "MAX_LARGE_RECORD_HEADERS",
    "MAX_RECORDS_PER_BATCH",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "RECORD_BATCH_OVERHEAD",
    "RECORD_PLAN",
    "RECORD_PLAN",
    "RECORD_WINDOW",
    "Record",
    "RecordBatch",
    "RecordBudgetExceeded",
    "RecordError",
    "RecordHeaderV2",
    "RecordRow",
    "RecordSpec",
    "RecordV2",
    "batch_records",
    "build_batch",
    "decode_records",
    "encode_record",
    "iter_records",
    "last_sequence",
    "parse_header",
    "parse_records_with_schema",
    "record_rows",
    "records_payload",
    "restamp",
]
