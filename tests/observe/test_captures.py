"""One capture parsed into the warehouse's rows (auditor.observe.captures): round trips through Kafka's own
file formats, capture identity and its precedence, malformed files as problems, the fast offset-checkpoint
path against the reference parser, capture digests, refusal rows, and the speed of parse_capture."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.layout.archives import Refusal
from auditor.observe.captures import (
    CaptureFile,
    _fast_offset_columns,
    capture_digest,
    capture_id,
    offset_checkpoint_columns,
    parse_capture,
    refusal_rows,
)
from auditor.observe.history_rows import TABLES
from parsers.checkpoints import (
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    parse_offset_checkpoint,
)
from parsers.dirfiles import format_meta_properties, format_partition_metadata
from parsers.errors import ParseError

CLUSTER = "QgxNy_HmRciFoMjvSeDK3w"
DIRECTORY_ID = "e54YZRl8UUamg6XyB1rOTw"
TOPIC_ID = "AbCdEfGhIjKlMnOpQrStUw"
NIGHT = "2026-01-05T020000Z"
NIGHT_MS = 1_767_578_400_000  # 2026-01-05T02:00:00Z
INGESTED = 1_767_600_000_000
MTIME = 1_767_000_000_000

HW = [("orders", 0, 1500), ("orders", 1, 1499), ("__consumer_offsets", 7, 42), ("gone", 0, 9)]
RECOVERY = [("orders", 0, 1400), ("orders", 1, 1499)]
LOG_START = [("orders", 1, 100)]
CLEANER = [("__consumer_offsets", 7, 40)]
EPOCHS = {"orders-0": [(0, 0), (2, 750), (4, 985)], "orders-1": [(0, 0), (4, 990)]}
FUTURE = "orders-0.0123456789abcdef0123456789abcdef-future"


def meta(node: int | None = 1, version: int = 1, cluster: str | None = CLUSTER) -> bytes:
    return format_meta_properties(
        version, node, cluster, DIRECTORY_ID, date=datetime(2026, 1, 5, tzinfo=timezone.utc)
    )


def standard_capture(**replace: bytes | None) -> dict[str, bytes]:
    """A broker's capture: meta.properties, the four offset checkpoints, two partition directories and a
    future replica's directory, a clean-shutdown marker; ``replace`` changes (None: removes) files."""
    files = {
        "meta.properties": meta(),
        "replication-offset-checkpoint": format_offset_checkpoint(HW),
        "recovery-point-offset-checkpoint": format_offset_checkpoint(RECOVERY),
        "log-start-offset-checkpoint": format_offset_checkpoint(LOG_START),
        "cleaner-offset-checkpoint": format_offset_checkpoint(CLEANER),
        ".kafka_cleanshutdown": b'{"version":0,"brokerEpoch":348}',
        f"{FUTURE}/leader-epoch-checkpoint": format_leader_epoch_checkpoint([(4, 985)]),
    }
    for directory, entries in EPOCHS.items():
        files[f"{directory}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(entries)
        files[f"{directory}/partition.metadata"] = format_partition_metadata(TOPIC_ID)
    for name, data in replace.items():
        if data is None:
            files.pop(name, None)
        else:
            files[name] = data
    return files


def as_files(files: dict[str, bytes], mtime: int = MTIME) -> list[CaptureFile]:
    return [CaptureFile(name, mtime + i, data) for i, (name, data) in enumerate(files.items())]


def parse(
    files: dict[str, bytes] | list[CaptureFile],
    source: str = f"/srv/captures/{NIGHT}",
    root: str = "broker-1/data",
    **kw,
) -> dict[str, pa.Table]:
    listed = as_files(files) if isinstance(files, dict) else files
    return parse_capture(source, root, listed, ingest_id="run-1", ingested_at_ms=INGESTED, **kw)


def rows(table: pa.Table, *columns: str) -> list[tuple]:
    return [tuple(row[c] for c in columns) for row in table.to_pylist()]


def capture(tables: dict[str, pa.Table]) -> dict:
    (row,) = tables["captures"].to_pylist()
    return row


def ms_of(value: datetime) -> int:
    return int(value.timestamp() * 1000)


# ----------------------------------------------------------------------------------------- round trip


def test_round_trip_of_every_file() -> None:
    files = standard_capture()
    tables = parse(files)
    assert set(tables) == set(TABLES)
    for name, table in tables.items():
        assert table.schema == TABLES[name], name
    assert rows(tables["high_watermarks"], "topic", "partition", "offset", "line") == [
        (t, p, o, i + 3) for i, (t, p, o) in enumerate(HW)
    ]
    assert rows(tables["recovery_points"], "topic", "partition", "offset") == RECOVERY
    assert rows(tables["log_start_offsets"], "topic", "partition", "offset") == LOG_START
    assert rows(tables["cleaner_offsets"], "topic", "partition", "offset") == CLEANER
    epochs = sorted(
        rows(tables["leader_epochs"], "topic", "partition", "epoch", "startOffset", "position", "line")
    )
    expected = [("orders", 0, 4, 985, 0, 3)]  # the future replica's file
    for directory, entries in EPOCHS.items():
        partition = int(directory.rsplit("-", 1)[1])
        expected += [("orders", partition, e, s, i, i + 3) for i, (e, s) in enumerate(entries)]
    assert epochs == sorted(expected)
    assert sorted(rows(tables["partitions"], "topic", "partition", "directory", "topicId")) == [
        ("orders", 0, "orders-0", TOPIC_ID),
        ("orders", 0, FUTURE, None),
        ("orders", 1, "orders-1", TOPIC_ID),
    ]
    assert rows(tables["brokers"], "version", "nodeId", "clusterId", "directoryId") == [
        (1, 1, CLUSTER, DIRECTORY_ID)
    ]
    assert tables["problems"].num_rows == 0
    row = capture(tables)
    assert {k: v for k, v in row.items() if k not in ("captureTime", "ingestedAt")} == {
        "captureId": capture_digest(
            as_files(files), ms_of(row["captureTime"])
        ),  # the time is in the source's name
        "cluster": CLUSTER,
        "broker": 1,
        "logDir": "broker-1/data",
        "captureDate": "2026-01-05",
        "source": f"/srv/captures/{NIGHT}",
        "root": "broker-1/data",
        "timeSource": "name",
        "files": len(files),
        "bytes": sum(map(len, files.values())),
        "partitionDirs": 3,
        "problems": 0,
        "cleanShutdown": True,
        "brokerStartTime": None,
        "ingestId": "run-1",
    }
    assert ms_of(row["captureTime"]) == NIGHT_MS and ms_of(row["ingestedAt"]) == INGESTED
    for name, table in tables.items():  # every row carries the capture's identity
        for column in ("captureId", "cluster", "broker", "logDir", "captureTime", "captureDate"):
            assert table.column(column).unique().to_pylist() == [row[column]] if table.num_rows else True, (
                name
            )


def test_offset_entries_without_a_partition_directory_and_duplicates_are_kept() -> None:
    hw = [("gone", 0, 9), ("orders", 0, 5), ("orders", 0, 7)]  # Kafka keeps the last of a duplicate
    tables = parse(standard_capture(**{"replication-offset-checkpoint": format_offset_checkpoint(hw)}))
    assert rows(tables["high_watermarks"], "topic", "partition", "offset", "line") == [
        ("gone", 0, 9, 3),
        ("orders", 0, 5, 4),
        ("orders", 0, 7, 5),
    ]


def test_files_outside_the_capture_are_ignored_and_the_later_copy_wins() -> None:
    files = as_files(standard_capture())
    files += [
        CaptureFile("orders-0/00000000000000000000.log", MTIME, b"segment"),
        CaptureFile(
            "orders-0.0123456789abcdef0123456789abcdef-delete/leader-epoch-checkpoint", MTIME, b"junk"
        ),
        CaptureFile("nested/orders-0/leader-epoch-checkpoint", MTIME, b"junk"),
        CaptureFile("cleaner-offset-checkpoint", MTIME, format_offset_checkpoint([("x", 0, 1)])),
    ]
    tables = parse(files)
    assert rows(tables["cleaner_offsets"], "topic", "partition", "offset") == [("x", 0, 1)]
    assert capture(tables)["files"] == len(standard_capture())
    assert capture(tables)["partitionDirs"] == 3
    assert tables["problems"].num_rows == 0


# ----------------------------------------------------------------------------------------- identity


def manifest(**keys) -> bytes:
    return json.dumps(keys).encode()


@pytest.mark.parametrize(
    ("source", "root", "extra", "expected", "how"),
    [
        (
            "/d/2026-01-01",
            "2026-01-02/broker-1/2026-01-03T04:05:06Z",
            {"captureTime": NIGHT_MS},
            NIGHT_MS,
            "manifest",
        ),
        ("/d/2026-01-01", "2026-01-02/broker-1/2026-01-05T02:00:00Z", {}, NIGHT_MS, "name"),
        ("/d/2026-01-01", f"{NIGHT}/broker-1/data", {}, NIGHT_MS, "name"),
        ("/d/broker-1-20260105T020000Z.tgz", "var/lib/kafka/data", {}, NIGHT_MS, "name"),
        ("/d/1767578400000/", "", {}, NIGHT_MS, "name"),
        ("/d/nightly", "broker-1/data", {}, MTIME + len(standard_capture()) - 1, "mtime"),  # the newest file
    ],
)
def test_capture_time_precedence(source: str, root: str, extra: dict, expected: int, how: str) -> None:
    files = standard_capture()
    if extra:
        files["kafka-auditor-capture.json"] = manifest(**extra)
    row = capture(parse(files, source, root))
    assert (ms_of(row["captureTime"]), row["timeSource"]) == (expected, how)
    assert row["captureDate"] == datetime.fromtimestamp(expected / 1000, timezone.utc).strftime("%Y-%m-%d")


def test_an_archive_member_time_is_told_from_a_copied_file_time() -> None:
    """Without a manifest or a time in a name, the newest mtime is the capture time: an archive's members
    keep the time the files had on the broker (``archive``), a directory's files may have the time of a
    copy (``mtime``); the captureId is the same either way (existing warehouses keep their ids)."""
    files = as_files(standard_capture())
    newest = MTIME + len(files) - 1
    from_archive = capture(parse(files, "/d/nightly.tgz", "var/lib/kafka/data", archive=True))
    from_folder = capture(parse(files, "/d/nightly", "var/lib/kafka/data"))
    assert (ms_of(from_archive["captureTime"]), from_archive["timeSource"]) == (newest, "archive")
    assert (ms_of(from_folder["captureTime"]), from_folder["timeSource"]) == (newest, "mtime")
    assert from_archive["captureId"] == from_folder["captureId"]
    again = capture_id("/d/nightly.tgz", "var/lib/kafka/data", files, archive=True)
    assert again == from_archive["captureId"]


def test_broker_cluster_and_log_dir_precedence() -> None:
    both = standard_capture(
        **{"kafka-auditor-capture.json": manifest(broker=9, cluster="label", logDir="/kafka/d1")}
    )
    row = capture(parse(both))
    assert (row["broker"], row["cluster"], row["logDir"]) == (1, CLUSTER, "/kafka/d1")
    assert capture(parse(both, cluster="prod"))["cluster"] == "prod"
    zk_no_ids = standard_capture(
        **{
            "meta.properties": meta(None, version=0, cluster=None),
            "kafka-auditor-capture.json": manifest(broker=9),
        }
    )
    row = capture(parse(zk_no_ids))
    assert (row["broker"], row["cluster"], row["logDir"]) == (9, "unknown", "broker-1/data")
    no_meta = standard_capture(
        **{"meta.properties": None, "kafka-auditor-capture.json": manifest(broker=4, cluster="c")}
    )
    assert (capture(parse(no_meta))["broker"], capture(parse(no_meta))["cluster"]) == (4, "c")
    assert capture(parse(standard_capture(), root=f"{NIGHT}/2026-01-05"))["logDir"] == "."
    assert capture(parse(standard_capture(), root=f"{NIGHT}/broker-2/data"))["logDir"] == "broker-2/data"


@pytest.mark.parametrize(
    ("meta_file", "why", "problems"),
    [
        (None, "no meta.properties", 1),
        (meta(None, version=0), "meta.properties names no node", 1),
        (b"version=1\ncluster.id=x\n", "meta.properties is malformed", 2),
    ],
)
def test_unidentified_capture_keeps_only_captures_and_problems(meta_file, why: str, problems: int) -> None:
    tables = parse(standard_capture(**{"meta.properties": meta_file}))
    row = capture(tables)
    assert row["broker"] is None and row["problems"] == problems
    assert rows(tables["problems"], "kind", "file")[-1] == ("unidentified", "broker-1/data/meta.properties")
    assert tables["problems"].column("message")[-1].as_py().startswith(why + " and no capture manifest")
    assert {name for name, table in tables.items() if table.num_rows} == {"captures", "problems"}
    assert all(table.schema == TABLES[name] for name, table in tables.items())


def test_manifest_broker_start_time() -> None:
    files = standard_capture(
        **{"kafka-auditor-capture.json": manifest(brokerStartTime="2026-01-04T23:00:00Z")}
    )
    assert ms_of(capture(parse(files))["brokerStartTime"]) == NIGHT_MS - 3 * 3600 * 1000


# ----------------------------------------------------------------------------------------- malformed


def problem_rows(tables: dict[str, pa.Table]) -> list[tuple]:
    return rows(tables["problems"], "kind", "file", "line", "offset", "message")


def test_malformed_offset_checkpoint_is_a_problem_at_its_line() -> None:
    body = b"0\n3\norders 0 5\norders 1 6\norders two 7\n"
    tables = parse(standard_capture(**{"replication-offset-checkpoint": body}))
    assert problem_rows(tables) == [
        (
            "malformed",
            "broker-1/data/replication-offset-checkpoint",
            5,
            body.index(b"orders two"),
            'For input string: "two"',
        )
    ]
    assert tables["high_watermarks"].num_rows == 0  # Kafka would not load the file
    assert tables["recovery_points"].num_rows == len(RECOVERY)  # the others still count
    assert capture(tables)["problems"] == 1


@pytest.mark.parametrize(
    ("name", "data", "line", "start"),
    [
        ("recovery-point-offset-checkpoint", b"0\n3\na 0 1\n", 2, "Expected [3] entries"),
        ("log-start-offset-checkpoint", b"1\n0\n", 1, "Unrecognised version:1"),
        ("cleaner-offset-checkpoint", b"0\r\n1\r\na 0 1\r\n\r\n", 4, "Malformed line"),
        ("replication-offset-checkpoint", b"0\n2\na 0 1\nb\xff 0 2\n", 4, "Malformed input"),
        (
            "orders-0/leader-epoch-checkpoint",
            b"0\n3\n0 0\n-1 5\n2 9\n",
            4,
            "Received invalid partition leader",
        ),
        ("orders-1/leader-epoch-checkpoint", b"0\n1\n0 0 0\n", 3, "Malformed line"),
        (
            "orders-0/partition.metadata",
            b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
            2,
            "Invalid topic ID",
        ),
    ],
)
def test_malformed_files_give_line_and_message(name: str, data: bytes, line: int, start: str) -> None:
    tables = parse(standard_capture(**{name: data}))
    ((kind, file, got_line, offset, message),) = problem_rows(tables)
    assert (kind, file, got_line) == ("malformed", f"broker-1/data/{name}", line)
    assert message.startswith(start) and "\n" not in message
    assert 0 <= offset <= len(data)
    if name.endswith("leader-epoch-checkpoint"):  # none of the bad file's entries, the others' all
        partition = int(name.split("/")[0].rsplit("-", 1)[1])
        kept = rows(tables["leader_epochs"], "partition", "epoch", "startOffset")
        assert (partition, 2, 9) not in kept and (partition, 0, 0) not in kept
        assert len(kept) == 1 + sum(len(e) for d, e in EPOCHS.items() if not name.startswith(d + "/"))
    if name.endswith("partition.metadata"):
        assert ("orders-0", None) in rows(tables["partitions"], "directory", "topicId")


def test_malformed_meta_properties_and_manifest() -> None:
    files = standard_capture(
        **{
            "meta.properties": b"version=7\n",
            "kafka-auditor-capture.json": b'{"broker": 5, "captureTime": 17}',
        }
    )
    tables = parse(files)
    assert [(k, f, ln) for k, f, ln, _, _ in problem_rows(tables)] == [
        ("malformed", "broker-1/data/kafka-auditor-capture.json", 1),
        ("malformed", "broker-1/data/meta.properties", None),
        ("unidentified", "broker-1/data/meta.properties", None),
    ]
    assert "Unknown meta.properties version number 7" in tables["problems"].column("message")[1].as_py()
    assert capture(tables)["timeSource"] == "name"  # the bad manifest's time is not used
    assert tables["brokers"].num_rows == 0


def test_capture_at_the_source_top() -> None:
    row = capture(
        parse(standard_capture(**{"replication-offset-checkpoint": b"x"}), source=f"/d/{NIGHT}", root="")
    )
    assert (row["root"], row["logDir"]) == ("", ".")
    assert rows(
        parse(standard_capture(**{"replication-offset-checkpoint": b"x"}), root="")["problems"], "file"
    ) == [("replication-offset-checkpoint",)]


def test_names_that_are_not_utf8_do_not_break_the_tables() -> None:
    """Tar names are decoded with surrogateescape, JSON may hold a lone surrogate: rows keep them escaped."""
    files = standard_capture(
        **{
            "caf\udce9-0/partition.metadata": format_partition_metadata(TOPIC_ID),
            "kafka-auditor-capture.json": b'{"logDir": "/data/\\ud800"}',
            "cleaner-offset-checkpoint": b"0\n1\nx\xff 0 1\n",
        }
    )
    tables = parse(files, source="/d/\udcff", root=f"{NIGHT}/b\udce9")
    assert ("caf\\udce9", 0, "caf\\udce9-0") in rows(tables["partitions"], "topic", "partition", "directory")
    row = capture(tables)
    assert (row["logDir"], row["source"], row["root"]) == ("/data/\\ud800", "/d/\\udcff", f"{NIGHT}/b\\udce9")
    assert rows(tables["problems"], "file") == [(f"{NIGHT}/b\\udce9/cleaner-offset-checkpoint",)]
    table = refusal_rows(
        "/d/x.tgz",
        [Refusal("a\udce9", "symbolic link to 'b\udce9'")],
        ingest_id="r",
        ingested_at_ms=0,
        capture_time_ms=NIGHT_MS,
    )
    assert rows(table, "file", "message") == [("x.tgz!a\\udce9", "symbolic link to 'b\\udce9'")]


@pytest.mark.parametrize("mtime", [0, -5, 10**16])
def test_implausible_mtimes_give_the_ingest_time(mtime: int) -> None:
    row = capture(parse(as_files(standard_capture(), mtime=mtime), source="/d/nightly", root="broker-1"))
    assert (ms_of(row["captureTime"]), row["timeSource"]) == (INGESTED, "ingest")


# ------------------------------------------------------------------------------- fast path == reference


def reference(data: bytes) -> tuple[list[tuple[str, int, int]], None] | tuple[None, tuple[str, int | None]]:
    try:
        return parse_offset_checkpoint(data, "f").entries, None
    except ParseError as exc:
        return None, (exc.message, exc.offset)


def columns_result(
    data: bytes,
) -> tuple[list[tuple[str, int, int]], None] | tuple[None, tuple[str, int | None]]:
    try:
        cols = offset_checkpoint_columns(data, "f", min_fast_entries=1)
    except ParseError as exc:
        return None, (exc.message, exc.offset)
    return list(
        zip(cols.topic.to_pylist(), cols.partition.to_pylist(), cols.offset.to_pylist(), strict=True)
    ), None


def test_large_checkpoints_take_the_fast_path_and_agree() -> None:
    rng = random.Random(5)
    entries = [(f"topic-{i % 37}", i // 37, rng.randrange(2**63)) for i in range(5000)]
    data = format_offset_checkpoint(entries)
    fast = _fast_offset_columns(data, 1)
    assert fast is not None and fast.partition.type == pa.int32() and fast.offset.type == pa.int64()
    assert columns_result(data) == (entries, None)
    crlf = data.replace(b"\n", b"\r\n")  # another shape: the reference parser, same entries
    assert _fast_offset_columns(crlf, 1) is None
    assert columns_result(crlf) == (entries, None)


ODD_NUMBERS = [
    "+5",
    "-0",
    "-7",
    "007",
    "0x1F",
    "0X10",
    "1e3",
    "",
    "\u0663",
    "9" * 20,
    "0" * 25 + "9",
    "2147483648",
]
TOPICS = st.one_of(
    st.sampled_from(["orders", "__consumer_offsets", "a.b_c-d", '"quoted"', "x,y", "#hash"]),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12),
)
MUTATIONS = [
    "none",
    "odd partition",
    "odd offset",
    "separator",
    "line ending",
    "header",
    "count",
    "leading space",
    "trailing space",
    "empty line",
    "no final newline",
    "non-ASCII topic",
    "extra token",
    "missing token",
]


@st.composite
def checkpoint_texts(draw) -> bytes:
    """A checkpoint in Kafka's shape (at least the fast path's minimum of lines) with at most one mutation
    that may take it out of the fast shape or make it malformed."""
    lines = [
        [draw(TOPICS), str(draw(st.integers(0, 2**31 - 1))), str(draw(st.integers(0, 2**63 - 1)))]
        for _ in range(draw(st.integers(1, 6)))
    ]
    header, count, end, final = "0", len(lines), "\n", True
    mutation = draw(st.sampled_from(MUTATIONS))
    at = draw(st.integers(0, len(lines) - 1))
    if mutation == "odd partition":
        lines[at][1] = draw(st.sampled_from(ODD_NUMBERS))
    elif mutation == "odd offset":
        lines[at][2] = draw(st.sampled_from(ODD_NUMBERS + [str(-(2**63)), str(2**63)]))
    elif mutation == "non-ASCII topic":
        lines[at][0] = draw(st.sampled_from(["\u00e9t\u00e9", "a\u00a0b", "\u0663"]))
    elif mutation == "extra token":
        lines[at].append(draw(st.sampled_from(["1", "", "x"])))
    elif mutation == "missing token":
        lines[at].pop(draw(st.integers(0, 2)))
    texts = [" ".join(tokens) for tokens in lines]
    if mutation == "separator":
        texts[at] = draw(st.sampled_from(["  ", "\t", "\x0b", "\f", " \t"])).join(lines[at])
    elif mutation == "leading space":
        texts[at] = draw(st.sampled_from([" ", "\t"])) + texts[at]
    elif mutation == "trailing space":
        texts[at] += draw(st.sampled_from([" ", "\t", "  "]))
    elif mutation == "empty line":
        texts.insert(at, "")
    elif mutation == "line ending":
        end = draw(st.sampled_from(["\r\n", "\r"]))
    elif mutation == "header":
        header = draw(st.sampled_from(["1", "+0", "00", "-0", " 0"]))
    elif mutation == "count":
        count += draw(st.sampled_from([-1, 1]))
    elif mutation == "no final newline":
        final = False
    text = end.join([header, str(count), *texts]) + (end if final else "")
    return text.encode("utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(checkpoint_texts())
def test_fast_path_equals_the_reference_parser(data: bytes) -> None:
    assert columns_result(data) == reference(data)


def test_generated_checkpoints_exercise_both_paths() -> None:
    """The generator above reaches the fast path, the reference path, and errors (else it proves little)."""
    seen = {"fast": 0, "reference": 0, "error": 0}

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)  # the same 200 every run
    @given(checkpoint_texts())
    def count(data: bytes) -> None:
        entries, error = reference(data)
        if error is not None:
            seen["error"] += 1
        elif _fast_offset_columns(data, 1) is not None:
            seen["fast"] += 1
        else:
            seen["reference"] += 1

    count()
    assert min(seen.values()) >= 10, seen


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(-(2**63), 2**63 - 1),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_fast_path_on_what_kafka_writes(entries: list[tuple[str, int, int]]) -> None:
    data = format_offset_checkpoint(entries)
    assert columns_result(data) == (entries, None) == reference(data)
    if all(p >= 0 and o >= 0 for _, p, o in entries):
        assert _fast_offset_columns(data, 1) is not None  # the fast path really ran


# -------------------------------------------------------------------------------------------- ids


def test_capture_digest_ignores_order_mtime_and_source_but_not_content() -> None:
    files = as_files(standard_capture())
    same = [CaptureFile(f.name, f.mtime_ms + 86_400_000, f.data) for f in reversed(files)]
    assert capture_digest(files) == capture_digest(same)
    elsewhere = parse(same, source=f"/elsewhere/{NIGHT}", root="x")
    assert capture(parse(files))["captureId"] == capture(elsewhere)["captureId"]
    changed = files[:-1] + [CaptureFile(files[-1].name, 0, files[-1].data + b"\n")]
    renamed = files[:-1] + [CaptureFile("orders-9/partition.metadata", 0, files[-1].data)]
    assert len({capture_digest(files), capture_digest(changed), capture_digest(renamed)}) == 3
    # length prefixes: moving bytes between a name and its data changes the id
    assert capture_digest([CaptureFile("ab", 0, b"c")]) != capture_digest([CaptureFile("a", 0, b"bc")])


def test_refusal_rows() -> None:
    found = [
        Refusal("/etc/passwd", "absolute name"),
        Refusal("data/link", "symbolic link to '/etc/shadow'"),
        Refusal("", "corrupt archive: truncated gzip stream"),
    ]
    table = refusal_rows(
        "/srv/captures/broker-1-20260105T020000Z.tgz",
        found,
        ingest_id="run-1",
        ingested_at_ms=INGESTED,
        capture_time_ms=NIGHT_MS,
    )
    assert table.schema == TABLES["problems"]
    assert rows(table, "kind", "file", "message", "cluster", "broker", "captureDate") == [
        (
            "refused",
            "broker-1-20260105T020000Z.tgz!/etc/passwd",
            "absolute name",
            "unknown",
            None,
            "2026-01-05",
        ),
        (
            "refused",
            "broker-1-20260105T020000Z.tgz!data/link",
            found[1].reason,
            "unknown",
            None,
            "2026-01-05",
        ),
        ("corrupt", "broker-1-20260105T020000Z.tgz!", found[2].reason, "unknown", None, "2026-01-05"),
    ]
    ids = table.column("captureId").to_pylist()
    assert len(set(ids)) == 3
    again = refusal_rows(
        "/other/place/broker-1-20260105T020000Z.tgz",
        found,
        ingest_id="run-2",
        ingested_at_ms=INGESTED + 1,
        capture_time_ms=NIGHT_MS,
        cluster="prod",
    )
    assert again.column("captureId").to_pylist() == ids
    inner = refusal_rows(
        "/srv", found[:1], ingest_id="r", ingested_at_ms=0, capture_time_ms=NIGHT_MS, archive="n1/b.tgz"
    )
    assert inner.column("file").to_pylist() == ["n1/b.tgz!/etc/passwd"]


# ------------------------------------------------------------------------------------------- speed


def _best_of(runs: int, call) -> float:
    """The least CPU time of ``runs`` calls (CPU time: other work on a busy machine does not count)."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def test_speed() -> None:
    """parse_capture's entries/s (20,000 partitions, full offset checkpoints) and files/s (2,000 partition
    directories); the module docstring states the figures. The bounds leave room for a busy machine."""
    rng = random.Random(1)
    entries = [(f"topic-{i % 200:03d}", i // 200, rng.randrange(10**12)) for i in range(20_000)]
    checkpoint = format_offset_checkpoint(entries)
    big = {"meta.properties": meta()}
    for name in (
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ):
        big[name] = checkpoint
    big_files = as_files(big)
    parse(big_files)  # warm up
    seconds = _best_of(5, lambda: parse(big_files))
    entries_per_second = 4 * len(entries) / seconds
    dirs = {
        "meta.properties": meta(),
        "replication-offset-checkpoint": format_offset_checkpoint(entries[:2000]),
    }
    for t, p, _ in entries[:2000]:
        dirs[f"{t}-{p}/leader-epoch-checkpoint"] = format_leader_epoch_checkpoint(
            [(0, 0), (2, 750), (4, 985)]
        )
        dirs[f"{t}-{p}/partition.metadata"] = format_partition_metadata(TOPIC_ID)
    dir_files = as_files(dirs)
    seconds = _best_of(3, lambda: parse(dir_files))
    files_per_second = len(dir_files) / seconds
    print(f"parse_capture: {entries_per_second / 1e6:.2f} M entries/s, {files_per_second:,.0f} files/s")
    assert entries_per_second > 1_500_000
    assert files_per_second > 10_000


def test_capture_time_from_a_name_makes_identical_nights_two_captures() -> None:
    """An idle broker's files do not change from one night to the next: the time in the folder name keeps
    the two captures apart, while the same capture ingested twice keeps one id."""
    from auditor.observe.captures import capture_id

    files = [CaptureFile("meta.properties", 0, b"version=1\nnode.id=1\ncluster.id=c\n")]
    night1 = capture_id("src", "2026-01-05T020000Z/broker-1", files)
    night2 = capture_id("src", "2026-01-06T020000Z/broker-1", files)
    assert night1 != night2
    assert night1 == capture_id("elsewhere", "2026-01-05T020000Z/broker-1", files)
    tables = parse_capture("src", "2026-01-05T020000Z/broker-1", files, ingest_id="i", ingested_at_ms=0)
    assert tables["captures"].column("captureId").to_pylist() == [night1]


def test_a_file_met_twice_counts_once_in_the_id() -> None:
    """A listing that shows a file twice (a hidden entry read again by the executor) is the same capture."""
    files = as_files(standard_capture())
    assert capture_digest(files + files[:1]) == capture_digest(files)
