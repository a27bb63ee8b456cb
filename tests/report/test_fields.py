"""Evidence as readable fields (``auditor.report.fields``): labels in words, times kept as ms since the epoch
shown as ISO-8601 UTC with the stored value beside, durations left as numbers, nested objects and lists as
nested fields, never JSON."""

from __future__ import annotations

import pytest

from auditor.report.fields import Field, field, fields, is_time_key, iso, words


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("leaderHighWatermark", "leader high watermark"),
        ("lagDurationMs", "lag duration (ms)"),
        ("max_timestamp", "max timestamp"),
        ("ISR", "ISR"),
        ("1", "1"),
        ("/var/lib/kafka", "/var/lib/kafka"),
    ],
)
def test_labels_are_words(key, expected):
    assert words(key) == expected


@pytest.mark.parametrize(
    "key",
    ["timestamp", "firstTimestamp", "max_timestamp", "batchTimestamps", "time", "startMs", "captureTimeMs"],
)
def test_time_keys(key):
    assert is_time_key(key)


@pytest.mark.parametrize(
    "key", ["durationMs", "lagDurationMs", "missingAfterMs", "behindMs", "replicaLagTimeMaxMs", "timeoutMs"]
)
def test_durations_are_not_times(key):
    assert not is_time_key(key)
    assert field(key, 86_400_000) == Field(words(key), key, "86400000")


def test_a_time_is_iso_with_the_stored_value_beside():
    assert (
        iso(1_700_000_072_470) == "2023-11-14T22:14:32.470Z"
        and iso(1_767_225_600_000) == "2026-01-01T00:00:00Z"
    )
    f = field("firstTimestamp", 1_700_000_006_630)
    assert (f.label, f.text, f.raw) == (
        "first timestamp",
        "2023-11-14T22:13:26.630Z",
        "1700000006630 ms since the epoch",
    )
    # Kafka's "no timestamp" and an ISO string stay as they are
    assert field("timestamp", -1).text == "-1" and field("timestamp", -1).raw is None
    assert field("time", "2026-01-10T02:00:00Z").text == "2026-01-10T02:00:00Z"
    # a list of times
    listed = field("batchTimestamps", [1_700_000_000_000, -1])
    assert listed.text == "2023-11-14T22:13:20Z, -1" and listed.raw == "1700000000000, -1"


def test_nested_objects_lists_and_pairs():
    [before, added, peers, at, none, flag] = fields(
        {
            "before": {"time": "2026-01-09T02:00:00Z", "captureIds": ["a", "b"]},
            "added": [[3, 2019896], [4, 2020000]],
            "peers": [4, 6],
            "atOffset": {"a": {"crc": 1, "valid": True}},
            "removed": [],
            "clean": False,
        }
    )
    assert [(g.label, g.text) for g in before.fields] == [
        ("time", "2026-01-09T02:00:00Z"),
        ("capture ids", "a, b"),
    ]
    assert added.text == "(3, 2019896), (4, 2020000)" and peers.text == "4, 6"
    [a] = at.fields
    assert [(g.label, g.text) for g in a.fields] == [("crc", "1"), ("valid", "yes")]
    assert none.text == "none" and flag.text == "no"
    # a list of objects: one nested field each
    rows = field("costs", [{"broker": 1, "records": 5}, {"broker": 2, "records": 0}])
    assert [g.label for g in rows.fields] == ["#1", "#2"] and rows.fields[1].fields[1].text == "0"


def test_long_lists_are_cut():
    f = field("offsets", list(range(60)))
    assert f.text.endswith("49 … and 10 more")
