"""Capture layout (auditor.layout.captures): which files belong to a capture and where its root is, times in
names, the capture manifest."""

from __future__ import annotations

import fnmatch
from datetime import datetime, timezone

import pytest

from auditor.layout.captures import (
    CAPTURE_FILE_GLOB,
    MANIFEST,
    PARTITION_FILES,
    TIME_FORMS,
    TOP_FILES,
    Manifest,
    capture_location,
    is_capture_file,
    parse_manifest,
    parse_time,
    time_from_name,
)
from parsers.errors import ParseError


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("a/b/orders-3/leader-epoch-checkpoint", ("a/b", "orders-3/leader-epoch-checkpoint")),
        ("orders-3/partition.metadata", ("", "orders-3/partition.metadata")),
        ("meta.properties", ("", "meta.properties")),
        (
            "2026-01-05T020000Z/broker-1/data/replication-offset-checkpoint",
            (
                "2026-01-05T020000Z/broker-1/data",
                "replication-offset-checkpoint",
            ),
        ),
        ("d/.kafka_cleanshutdown", ("d", ".kafka_cleanshutdown")),
        (f"d/{MANIFEST}", ("d", MANIFEST)),
        ("d/my-topic.v2-12/leader-epoch-checkpoint", ("d", "my-topic.v2-12/leader-epoch-checkpoint")),
        ("d/__consumer_offsets-7/partition.metadata", ("d", "__consumer_offsets-7/partition.metadata")),
        (
            "d/orders-3.0123456789abcdef0123456789abcdef-future/leader-epoch-checkpoint",
            ("d", "orders-3.0123456789abcdef0123456789abcdef-future/leader-epoch-checkpoint"),
        ),
        # never read: segments, indexes, deleted and stray directories, loose partition files, other names
        ("d/orders-3/00000000000000000000.log", None),
        ("d/orders-3/00000000000000000000.index", None),
        ("d/orders-3.0123456789abcdef0123456789abcdef-delete/leader-epoch-checkpoint", None),
        ("d/orders-3.0123456789abcdef0123456789abcdef-stray/partition.metadata", None),
        ("leader-epoch-checkpoint", None),
        ("d/notapartition/leader-epoch-checkpoint", None),
        ("d/replication-offset-checkpoint.tmp", None),
        ("d/orders-3/replication-offset-checkpoint/x", None),
    ],
)
def test_capture_location(path: str, location: tuple[str, str] | None) -> None:
    assert capture_location(path) == location
    assert is_capture_file(path) is (location is not None)


def test_glob_covers_every_capture_file_name() -> None:
    alternatives = CAPTURE_FILE_GLOB.strip("{}").split(",")
    for name in TOP_FILES | PARTITION_FILES:
        assert any(fnmatch.fnmatchcase(name, pattern) for pattern in alternatives), name
    assert not any(fnmatch.fnmatchcase("00000000000000000000.log", p) for p in alternatives)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-05T02:00:00Z", "2026-01-05T02:00:00"),
        ("2026-01-05T02:00:00.123Z", "2026-01-05T02:00:00.123"),
        ("20260105T020000Z", "2026-01-05T02:00:00"),
        ("2026-01-05T020000Z", "2026-01-05T02:00:00"),
        ("2026-01-05_02-00-00", "2026-01-05T02:00:00"),
        ("2026-01-05T02:00:00+02:00", "2026-01-05T00:00:00"),
        ("2026-01-05T02:00:00-0130", "2026-01-05T03:30:00"),
        ("2026-01-05T02:00Z", "2026-01-05T02:00:00"),
        ("2026-01-05", "2026-01-05T00:00:00"),
        ("1767578400000", "2026-01-05T02:00:00"),
        ("broker-1-20260105T020000Z.tgz", "2026-01-05T02:00:00"),
        ("kafka-1767578400000-capture", "2026-01-05T02:00:00"),
        ("nightly-2026-01-05.tar.gz", "2026-01-05T00:00:00"),
        ("2026-01-04_x_2026-01-05", "2026-01-04T00:00:00"),  # the first one wins
        ("2026-13-05_1767578400000", "2026-01-05T02:00:00"),  # not a date: the epoch ms is next
        # never inside a longer run of digits, never outside 2000..2099, never a bare 8-digit date
        ("x120260105T020000Z", None),
        ("12026-01-05", None),
        ("17675784000001", None),
        ("0946684799999", None),  # 1999-12-31T23:59:59.999Z
        ("1999-12-31", None),
        ("20260105", None),
        ("2026-02-30", None),
        ("2026-01-05T24:00:00Z", None),
        ("broker-1", None),
        ("orders-3", None),
    ],
)
def test_time_from_name(text: str, expected: str | None) -> None:
    assert time_from_name(text) == (None if expected is None else ms(expected))


def test_every_documented_form_is_accepted() -> None:
    for form in TIME_FORMS:
        assert time_from_name(form) is not None, form
        assert parse_time(form) == time_from_name(form)
    assert parse_time("at 2026-01-05") is None


def test_manifest_every_key() -> None:
    text = (
        b'{"captureTime": "2026-01-05T02:00:00Z", "broker": 3, "cluster": "QgxNy_HmRciFoMjvSeDK3w",'
        b' "logDir": "/var/lib/kafka/data", "brokerStartTime": 1767571200000, "collector": "cron"}'
    )
    assert parse_manifest(text, "m") == Manifest(
        capture_time_ms=ms("2026-01-05T02:00:00"),
        broker=3,
        cluster="QgxNy_HmRciFoMjvSeDK3w",
        log_dir="/var/lib/kafka/data",
        broker_start_time_ms=ms("2026-01-05T00:00:00"),
    )
    assert parse_manifest(b"{}", "m") == Manifest()
    assert parse_manifest(b'{"broker": null, "captureTime": 1767578400000}', "m") == Manifest(
        capture_time_ms=1767578400000
    )


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        (b'{"captureTime": 1767578400}', 1, "captureTime must be an ISO-8601 time or epoch milliseconds"),
        (b'{"captureTime": "yesterday"}', 1, "captureTime must be"),
        (b'{\n  "cluster": "c",\n  "broker": "1"}', 22, "broker must be an integer node id, not '1'"),
        (b'{"broker": true}', 1, "broker must be an integer node id"),
        (b'{"broker": 4294967296}', 1, "broker must be an integer node id"),
        (b'{"logDir": ["/a"]}', 1, "logDir must be a string"),
        (b'{"cluster": 7}', 1, "cluster must be a string"),
        (b'{"brokerStartTime": -5}', 1, "brokerStartTime must be"),
        (b'{"captureTime": "2026-01-05T02:00:00Z",\n "broker": }', 51, "capture manifest is not JSON"),
        (b'  ["not", "an object"]', 2, "capture manifest is not a JSON object"),
        (b'{"cluster": "caf\xc3"}', 16, "capture manifest is not UTF-8"),
        (b"", 0, "capture manifest is not JSON"),
    ],
)
def test_manifest_errors_name_file_and_byte(text: bytes, offset: int, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_manifest(text, "broker-1/kafka-auditor-capture.json")
    assert caught.value.path == "broker-1/kafka-auditor-capture.json"
    assert caught.value.offset == offset
    assert caught.value.message.startswith(message)
    assert "\n" not in caught.value.message


def test_manifest_json_error_offset_counts_bytes_not_characters() -> None:
    text = '{"cluster": "é", oops}'.encode()
    with pytest.raises(ParseError) as caught:
        parse_manifest(text, "m")
    assert caught.value.offset == text.index(b"oops")
