"""Rows of ``lost-records.jsonl`` for the tests, written the way ``audit --export-lost`` writes them: a
``lost-records.parquet`` row (raw bytes) turned into JSON by the export's own
:func:`auditor.spark.audit.lost_record_json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from auditor.spark.audit import lost_record_json, lost_records_schema


def parquet_row(**fields: Any) -> dict[str, Any]:
    """A ``lost-records.parquet`` row (keys, values and header values as bytes), ``fields`` over defaults."""
    row: dict[str, Any] = {
        "cluster": "c1",
        "topic": "orders",
        "partition": 0,
        "offset": 100,
        "timestamp": 1_700_000_000_000,
        "timestampType": "CreateTime",
        "key": b"k",
        "value": b"v",
        "headers": [],
        "leaderEpoch": 3,
        "batchBaseOffset": 100,
        "committedHighWatermark": 200,
        "producerId": -1,
        "producerEpoch": -1,
        "baseSequence": -1,
        "isTransactional": False,
        "broker": 1,
        "error": None,
        "holders": [1],
    }
    row.update(fields)
    return {name: row[name] for name in lost_records_schema().names}


def jsonl_row(**fields: Any) -> dict[str, Any]:
    """The ``lost-records.jsonl`` row of :func:`parquet_row`."""
    return lost_record_json(parquet_row(**fields))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` (parquet rows) as a ``lost-records.jsonl`` at ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(lost_record_json(row)) + "\n")
    return path
