"""`kafka-auditor dump` agrees with the real kafka-dump-log.sh on every segment of the corpus."""

from __future__ import annotations

import pytest

from auditor.dump import Dumper, DumpOptions
from tests.support.kafka_dumps import dump_files

BATCH_FIELDS = {
    "baseOffset": "baseOffset",
    "lastOffset": "lastOffset",
    "count": "count",
    "baseSequence": "baseSequence",
    "lastSequence": "lastSequence",
    "producerId": "producerId",
    "producerEpoch": "producerEpoch",
    "partitionLeaderEpoch": "partitionLeaderEpoch",
    "position": "position",
    "size": "size",
    "magic": "magic",
    "compresscodec": "compressCodec",
    "crc": "crc",
}


def _ours(corpus, rel: str, deep: bool) -> tuple[list[dict], list[dict], dict]:
    events = list(Dumper(DumpOptions(deep=deep)).events(corpus / rel))
    batches = [e for e in events if e["kind"] == "batch"]
    records = [e for e in events if e["kind"] == "record"]
    stop = next(e for e in events if e["kind"] == "stop")
    return batches, records, stop


def _compare_batches(rel, theirs, ours):
    assert len(ours) == len(theirs), rel
    for t, o in zip(theirs, ours, strict=True):
        for their_key, our_key in BATCH_FIELDS.items():
            assert str(o[our_key]) == t[their_key], (rel, their_key, t, o)
        assert o["isTransactional"] == (t["isTransactional"] == "true")
        assert o["isControl"] == (t["isControl"] == "true")
        assert o["isValid"] == (t["isvalid"] == "true")
        ts_key = "CreateTime" if "CreateTime" in t else "LogAppendTime"
        assert o["timestampType"] == ts_key and str(o["maxTimestamp"]) == t[ts_key]
        horizon = (
            "OptionalLong.empty" if o["deleteHorizonMs"] is None else f"OptionalLong[{o['deleteHorizonMs']}]"
        )
        assert horizon == t["deleteHorizonMs"]


def _compared(corpus, pattern: str, deep: bool, minimum: int):
    """(dump, section, our records, our stop event) for every section of the ``pattern`` dumps, after our
    batches were compared with the dump's; at least ``minimum`` sections."""
    seen = 0
    for dump, section in dump_files(corpus, pattern):
        batches, records, stop = _ours(corpus, section.path, deep=deep)
        _compare_batches(section.path, section.batches, batches)
        yield dump, section, records, stop
        seen += 1
    assert seen >= minimum, pattern


@pytest.mark.corpus
def test_batch_level_fields_match_every_print_data_log_dump(corpus):
    for dump, section, _records, stop in _compared(corpus, "*.print-data-log.txt.gz", False, 101):
        assert stop["reason"] == "end"
        assert not any("invalid bytes at the end" in line for line in section.other), dump


@pytest.mark.corpus
def test_records_match_deep_iteration_dumps_for_every_codec(corpus):
    for _dump, section, records, _stop in _compared(corpus, "*.deep-iteration.txt.gz", True, 101):
        assert len(records) == len(section.records), section.path
        for t, o in zip(section.records, records, strict=True):
            assert str(o["offset"]) == t["offset"], section.path
            ts_key = "CreateTime" if "CreateTime" in t else "LogAppendTime"
            assert str(o["timestamp"]) == t[ts_key]
            assert (str(o["keySize"]), str(o["valueSize"]), str(o["sequence"])) == (
                t["keySize"],
                t["valueSize"],
                t["sequence"],
            )
            assert "[" + ",".join(o["headerKeys"]) + "]" == t["headerKeys"]


@pytest.mark.corpus
def test_kraft_snapshot_files_match_their_dumps(corpus):
    for _dump, section, records, _stop in _compared(corpus, "*.kraft-snapshots.txt.gz", True, 10):
        assert len(records) == len(section.records)
