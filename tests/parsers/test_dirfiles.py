"""partition.metadata, meta.properties, quorum-state, .kafka_cleanshutdown, Kafka's names (spec §12, §13)."""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.dirfiles import (
    format_meta_properties,
    format_partition_metadata,
    kraft_snapshot_file_name,
    load_java_properties,
    parse_clean_shutdown,
    parse_kraft_snapshot_file_name,
    parse_kraft_snapshot_name,
    parse_meta_properties,
    parse_partition_dir_name,
    parse_partition_metadata,
    parse_quorum_state,
    parse_segment_file_name,
    segment_file_name,
)
from parsers.errors import ParseError

TOPIC_ID = "CcoSiSw7QniUdf4NFpYbcQ"
PM = "/d/t-0/partition.metadata"

# ------------------------------------------------------------------------------------ partition.metadata


def test_partition_metadata_round_trip():
    data = format_partition_metadata(TOPIC_ID)
    assert data == b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ" and len(data) == 43
    pm = parse_partition_metadata(data, PM)
    assert (pm.version, pm.topic_id, pm.notes) == (0, TOPIC_ID, [])


@pytest.mark.parametrize(
    ("data", "note"),
    [
        (b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ\n", "trailing line terminator"),
        (b"version: 0\r\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ", None),
        (b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ\nextra", "1 line(s) after the topic ID"),
        (b"version: 3\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ", "line 1 is 'version: 3'"),  # any version >= 0
        (b"anything:\t0\nkey:   CcoSiSw7QniUdf4NFpYbcQ", "line 1 is"),  # key names are not checked
        (b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ==", "line 2 is"),  # padded base64 is accepted
    ],
)
def test_partition_metadata_tolerated(data, note):
    pm = parse_partition_metadata(data, PM)
    assert pm.topic_id == TOPIC_ID
    if note:
        assert any(note in n for n in pm.notes), pm.notes


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"", f"Malformed line in checkpoint file [{PM}]: null", 0),
        (b"version: 0", f"Malformed line in checkpoint file [{PM}]: null", 10),
        (b"version:0\ntopic_id: x", f"Malformed line in checkpoint file [{PM}]: version:0", 0),
        (b"version: 0 \ntopic_id: x", f"Malformed line in checkpoint file [{PM}]: version: 0 ", 0),
        (b"version: x\n", f"Malformed line in checkpoint file [{PM}]: version: x", 0),
        (
            b"version: -1\ntopic_id: CcoSiSw7QniUdf4NFpYbcQ",
            f"Unrecognized version of partition metadata file ({PM}): -1",
            0,
        ),
        (b"version: 0\ntopic_id: a: b", f"Malformed line in checkpoint file [{PM}]: topic_id: a: b", 11),
        (
            b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
            f"Invalid topic ID in partition metadata file ({PM})",
            11,
        ),
        (b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbc", "Input string `CcoSiSw7QniUdf4NFpYbc` is not", 11),
        (b"version: 0\ntopic_id: CcoSiSw7QniUdf4NFpYbc!", "Input string `CcoSiSw7QniUdf4NFpYbc!` is not", 11),
        (
            b"version: 0\ntopic_id: " + b"A" * 25,
            "Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long",
            11,
        ),
        (b"version: 0\n\xc3", f"Malformed input in partition metadata file ({PM})", 11),
    ],
)
def test_partition_metadata_rejected(data, message, offset):
    with pytest.raises(ParseError) as exc:
        parse_partition_metadata(data, PM)
    assert exc.value.message.startswith(message) and exc.value.offset == offset


# ------------------------------------------------------------------------------------------- Java Properties


def test_java_properties_syntax():
    text = (
        "# comment\n"
        "  ! another comment \\\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d\t=\t \n"
        "e\n"
        "f=x\\\n"
        "    y\\\r\n"
        "  z\n"
        "g\\ h\\:i=\\u0041\\t\\q\n"
        "   \n"
        "k=v=w\n"
        "l==\n"
        "a=again\r"
        "m=\\\\\n"
        "n=end\\"
    )
    assert load_java_properties(text) == {
        "a": "again",
        "b": "2",
        "c": "3",
        "d": "",
        "e": "",
        "f": "xyz",
        "g h:i": "A\tq",
        "k": "v=w",
        "l": "=",
        "m": "\\",
        "n": "end",
    }


def test_java_properties_bad_unicode_escape():
    with pytest.raises(ParseError) as exc:
        load_java_properties("a=\\u00zz\n")
    assert exc.value.message == "Malformed \\uxxxx encoding."


# ------------------------------------------------------------------------------------------- meta.properties

REAL_META = (
    b"#\n#Sat Nov 21 04:55:32 UTC 2026\nnode.id=1\ndirectory.id=e54YZRl8UUamg6XyB1rOTw\nversion=1\n"
    b"cluster.id=QgxNy_HmRciFoMjvSeDK3w\n"
)


def test_meta_properties_v1_and_exact_format():
    meta = parse_meta_properties(REAL_META, "/d/meta.properties")
    assert (meta.version, meta.node_id, meta.broker_id, meta.problems) == (1, 1, None, [])
    assert (meta.cluster_id, meta.directory_id) == ("QgxNy_HmRciFoMjvSeDK3w", "e54YZRl8UUamg6XyB1rOTw")
    moment = datetime(2026, 11, 21, 4, 55, 32, tzinfo=timezone.utc)
    assert format_meta_properties(1, 1, meta.cluster_id, meta.directory_id, moment) == REAL_META


def test_meta_properties_v0():
    meta = parse_meta_properties(b"broker.id=7\ncluster.id=QgxNy_HmRciFoMjvSeDK3w\n")  # no version: v0
    assert (meta.version, meta.node_id, meta.broker_id, meta.directory_id) == (0, 7, 7, None)
    bare = parse_meta_properties(b"version = 0\n")
    assert (bare.version, bare.node_id, bare.cluster_id) == (0, None, None)
    data = format_meta_properties(
        0, 7, "QgxNy_HmRciFoMjvSeDK3w", date=datetime(2020, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    )
    assert data.startswith(b"#\n#Thu Jan 02 03:04:05 UTC 2020\n") and b"broker.id=7\n" in data
    assert parse_meta_properties(data).node_id == 7


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"version=2\nnode.id=1\ncluster.id=x\n", "Unknown meta.properties version number 2"),
        (b"version=one\n", "Invalid meta.properties version string 'one'"),
        (b"version=1\ncluster.id=x\n", "Failed to find node.id"),
        (b"version=1\nnode.id=one\ncluster.id=x\n", "Unable to read node.id as a base-10 number."),
        (b"version=1\nnode.id= 1\ncluster.id=x\n", None),  # leading blanks belong to the separator
        (b"version=1\nnode.id=1 \ncluster.id=x\n", "Unable to read node.id as a base-10 number."),
        (b"version=0\nbroker.id=x\n", "Unable to read broker.id as a base-10 number."),
        (b"version=1\nnode.id=1\n", "cluster.id was not found."),
        (
            b"version=1\nnode.id=1\ncluster.id=x\ndirectory.id=nope\n",
            "Unable to read directory.id as a Uuid: ",
        ),
        (b"version=1\nnode.id=1\ncluster.id=x\nk=\\u12\n", "Malformed \\uxxxx encoding."),
    ],
)
def test_meta_properties_rejected(data, message):
    if message is None:
        assert parse_meta_properties(data).node_id == 1
        return
    with pytest.raises(ParseError) as exc:
        parse_meta_properties(data, "/d/meta.properties")
    assert exc.value.message.startswith(message) and exc.value.path == "/d/meta.properties"


def test_meta_properties_problems():
    meta = parse_meta_properties(
        b"version= 1 \nnode.id=-3\nbroker.id=4\ncluster.id=not a uuid\n"
        b"directory.id=AAAAAAAAAAAAAAAAAAAAAQ\nzz=\xe9\n"
    )
    text = " | ".join(meta.problems)
    for fragment in (
        "reserved directory ID",
        "broker.id is ignored",
        "negative node id",
        "cluster.id",
        "zz",
        "non-ASCII",
    ):
        assert fragment in text
    assert meta.raw["zz"] == "\u00e9"  # ISO-8859-1
    assert "no directory.id" in parse_meta_properties(b"version=1\nnode.id=1\ncluster.id=x\n").problems[0]


# ------------------------------------------------------------------------------------------- quorum-state

V0 = (
    b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
    b'"currentVoters":[{"voterId":1}],"data_version":0}'
)
V1 = (
    b'{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ",'
    b'"data_version":1}'
)


def test_quorum_state_versions():
    q0 = parse_quorum_state(V0)
    assert (q0.data_version, q0.leader_id, q0.leader_epoch, q0.voted_id, q0.current_voters) == (
        0,
        1,
        1,
        -1,
        [1],
    )
    assert (q0.cluster_id, q0.applied_offset, q0.notes) == ("", 0, [])
    q1 = parse_quorum_state(V1 + b"\nignored")
    assert (q1.data_version, q1.voted_id, q1.voted_directory_id) == (1, 1, "J8aAPcfLQt2bqs1JT_rMgQ")
    assert q1.notes == ["more than one line (Kafka reads only the first)"]
    assert parse_quorum_state(V0.replace(b'[{"voterId":1}]', b"null")).current_voters is None
    assert parse_quorum_state(V0[:-1] + b',"unknownField":[1,2]}').leader_id == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "File ended prematurely."),
        (b"[1]", "Deserialized node [1] is not an object node"),
        (b'{"leaderId":1}', 'Deserialized node {"leaderId":1} does not have data_version field'),
        (V0.replace(b'"data_version":0', b'"data_version":2'), "data_version (2) is not within the min (0)"),
        (V0.replace(b'"data_version":0', b'"data_version":65537'), "QuorumStateData: unable to locate field"),
        (V0.replace(b'"votedId":-1,', b""), "QuorumStateData: unable to locate field 'votedId'"),
        (
            V1.replace(b'"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ",', b""),
            "QuorumStateData: unable to locate",
        ),
        (V0.replace(b'"leaderId":1', b'"leaderId":"1"'), "QuorumStateData expected an int32 for 'leaderId'"),
        (V0.replace(b'"leaderId":1', b'"leaderId":2147483648'), "QuorumStateData expected an int32"),
        (V0.replace(b'"leaderId":1', b'"leaderId":NaN'), "Error while reading the Quorum status"),
        (b"{bad json", "Error while reading the Quorum status"),
        (b"\xff{}", "Malformed input in quorum state file"),
    ],
)
def test_quorum_state_rejected(data, message):
    with pytest.raises(ParseError) as exc:
        parse_quorum_state(data)
    assert exc.value.message.startswith(message)


# ------------------------------------------------------------------------------------------- clean shutdown


@pytest.mark.parametrize(
    ("data", "epoch", "empty"),
    [
        (b"", None, True),
        (b'{"version":0,"brokerEpoch":348}', 348, False),
        (b'{"brokerEpoch":5,"extra":1}', 5, False),
        (b'{"version":0,"brokerEpoch":"7"}', 7, False),
        (b'{"version":0}', None, False),
        (b"version: 0\nbrokerEpoch: 3", None, False),
        (b"\xff\xfe", None, False),
        (b"[]", None, False),
        (b'{"version":"x","brokerEpoch":1}', None, False),
    ],
)
def test_clean_shutdown(data, epoch, empty):
    result = parse_clean_shutdown(data)
    assert (result.broker_epoch, result.empty) == (epoch, empty)
    if epoch is None:
        assert result.notes


# ------------------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("t1-0", ("t1", 0, "live", None)),
        ("my-topic.v2-3", ("my-topic.v2", 3, "live", None)),
        ("__cluster_metadata-0", ("__cluster_metadata", 0, "live", None)),
        ("t-1-2", ("t-1", 2, "live", None)),
        ("t-+2", ("t", 2, "live", None)),  # Integer.parseInt accepts a sign
        ("t--1", ("t-", 1, "live", None)),
        (
            "t1-0.0123456789abcdef0123456789abcdef-delete",
            ("t1", 0, "delete", "0123456789abcdef0123456789abcdef"),
        ),
        ("my.top-ic-12.abcdef-future", ("my.top-ic", 12, "future", "abcdef")),
        ("a.b-7.0123abcd-stray", ("a.b", 7, "stray", "0123abcd")),
    ],
)
def test_partition_dir_names(name, expected):
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "",
        "topic",
        "t-",
        "-0",
        "t-x",
        "t-2147483648",
        "t-0-delete",
        "t-0.-delete",
        "t 1-0.ab-delete",
        "remote-log-index-cache",
        "t-0.ab-future-x",
        ".hidden-0.ab-stray-",
        "a.b-7.x.y-stray",
    ],  # the id is cut at the last '.', leaving partition "7.x"
)
def test_partition_dir_names_rejected(name):
    with pytest.raises(ParseError) as exc:
        parse_partition_dir_name(name)
    assert "is not in the form of topic-partition or topic-partition.uniqueId-delete" in exc.value.message


def test_segment_file_names():
    assert parse_segment_file_name("00000000000000000750.log") == (750, ".log", None)
    assert parse_segment_file_name("00000000000000000750.timeindex.deleted") == (750, ".timeindex", "deleted")
    assert parse_segment_file_name("00000000000000000000.index.cleaned") == (0, ".index", "cleaned")
    assert parse_segment_file_name("00000000000000001000.log.swap") == (1000, ".log", "swap")
    assert parse_segment_file_name("00000000000000000163.txnindex") == (163, ".txnindex", None)
    assert parse_segment_file_name("00000000000000000186.snapshot") == (186, ".snapshot", None)
    assert parse_segment_file_name("750.log") == (750, ".log", None)  # Long.parseLong accepts it
    assert segment_file_name(750, ".log") == "00000000000000000750.log"
    assert segment_file_name(9223372036854775807, "index") == "9223372036854775807.index".rjust(26, "0")
    with pytest.raises(ValueError):
        segment_file_name(-1, ".log")


def test_kraft_snapshot_names():
    assert parse_kraft_snapshot_name("00000000000000000029-0000000001.checkpoint") == (29, 1)
    assert kraft_snapshot_file_name(29, 1) == "00000000000000000029-0000000001.checkpoint"
    assert parse_kraft_snapshot_file_name("00000000000000000029-0000000001.checkpoint.deleted") == (
        29,
        1,
        "deleted",
    )
    assert parse_kraft_snapshot_file_name("00000000000000000029-0000000001-3kT0.checkpoint.part") == (
        29,
        1,
        "partial",
    )


@pytest.mark.parametrize(
    ("parse", "name"),
    [
        *(
            (parse_segment_file_name, bad)
            for bad in (
                "00000000000000000750.log.tmp",
                "x.log",
                "-1.log",
                "00000000000000000750",
                "99999999999999999999.log",
                "00000000000000000029-0000000001.checkpoint",
                "leader-epoch-checkpoint",
                "0750.LOG",
            )
        ),
        *(
            (parse_kraft_snapshot_file_name, bad)
            for bad in (
                "bootstrap.checkpoint",
                "29-1.checkpoint",
                "00000000000000000029-0000000001.checkpoint.part",
                "00000000000000000029-9999999999.checkpoint",
                "00000000000000000029-0000000001.log",
            )
        ),
        (parse_kraft_snapshot_name, "00000000000000000029-0000000001.checkpoint.deleted"),
    ],
)
def test_names_kafka_does_not_parse_are_refused(parse, name):
    with pytest.raises(ParseError):
        parse(name)


# ------------------------------------------------------------------------------------------- fuzzing


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_only_parse_error(data):
    for parser in (parse_partition_metadata, parse_meta_properties, parse_quorum_state):
        with contextlib.suppress(ParseError):
            parser(data, "p")
    parse_clean_shutdown(data)  # tolerant: never raises


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_bit_flips_and_truncations(data):
    for valid, parser in (
        (format_partition_metadata(TOPIC_ID), parse_partition_metadata),
        (REAL_META, parse_meta_properties),
        (V0, parse_quorum_state),
        (V1, parse_quorum_state),
    ):
        flipped = bytearray(valid)
        flipped[data.draw(st.integers(0, len(valid) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        for candidate in (bytes(flipped), valid[: data.draw(st.integers(0, len(valid)))]):
            with contextlib.suppress(ParseError):
                parser(candidate, "p")
            parse_clean_shutdown(candidate)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab-._0129 \t\u00a0\u0663", max_size=30))
def test_random_names_only_parse_error(name):
    for parser in (parse_partition_dir_name, parse_segment_file_name, parse_kraft_snapshot_file_name):
        with contextlib.suppress(ParseError):
            parser(name)


# ------------------------------------------------------------------------------------------- corpus


@pytest.mark.corpus
def test_corpus_metadata_files(corpus):
    seen: dict[str, int] = {}
    for root, _dirs, files in os.walk(corpus):
        if "dumps" in root or "_run" in root:
            continue
        here = Path(root)
        for name in files:
            data = (here / name).read_bytes()
            if name == "partition.metadata":
                pm = parse_partition_metadata(data, str(here / name))
                assert pm.notes == [] and format_partition_metadata(pm.topic_id) == data
                topic, _partition, kind, _ = parse_partition_dir_name(here.name)
                assert kind == "live"
                assert (pm.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ") == (topic == "__cluster_metadata")
            elif name == "meta.properties":
                meta = parse_meta_properties(data, str(here / name))
                assert meta.version == 1 and meta.problems == [] and meta.directory_id
                stamp = data.split(b"\n")[1][1:].decode()
                moment = datetime.strptime(stamp, "%a %b %d %H:%M:%S UTC %Y").replace(tzinfo=timezone.utc)
                assert (
                    format_meta_properties(1, meta.node_id, meta.cluster_id, meta.directory_id, moment)
                    == data
                )
            elif name == "quorum-state":
                qs = parse_quorum_state(data, str(here / name))
                assert qs.notes == [] and qs.leader_epoch >= 1
            elif name == ".kafka_cleanshutdown":
                cs = parse_clean_shutdown(data, str(here / name))
                assert cs.broker_epoch is not None and cs.notes == []
            elif name.endswith(".checkpoint") and name != "bootstrap.checkpoint":
                end_offset, epoch = parse_kraft_snapshot_name(name)
                assert kraft_snapshot_file_name(end_offset, epoch) == name
            elif name[0].isdigit():
                offset, suffix, _ = parse_segment_file_name(name)
                assert segment_file_name(offset, suffix) == name.split(".")[0] + suffix
            else:
                continue
            key = "segment-files" if name[0].isdigit() else name
            seen[key] = seen.get(key, 0) + 1
        if "partition.metadata" in files:
            parse_partition_dir_name(here.name)
    assert seen["partition.metadata"] > 150 and seen["meta.properties"] == 13 and seen["quorum-state"] == 13
    assert seen[".kafka_cleanshutdown"] == 7 and seen["segment-files"] > 1000


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "holds no properties at all"),
        (b"#\n#Sat Nov 21 04:55:32 UTC 2026\n\n  \t\n! bang comment\n", "holds no properties at all"),
        (b"version=0\ncluster.id=QgxNy_HmRciFoMjvSeDK3w\n", "has no broker.id"),
        (b"broker.id=7\ncluster.id=QgxNy_HmRciFoMjvSeDK3w\n", None),
        (REAL_META, None),
    ],
    ids=["empty", "comments-only", "v0-without-broker-id", "v0", "v1"],
)
def test_meta_properties_naming_no_node(data, problem):
    """Kafka's reader accepts an empty or stripped file as version 0 without broker.id (no node at all);
    KafkaRaftServer then refuses the log dir ("Error: node ID not found in <dir>")."""
    meta = parse_meta_properties(data, "/d/meta.properties")
    found = meta.identity_problem()
    assert (found is None) if problem is None else problem in found
    if problem is not None:
        assert meta.node_id is None and meta.version == 0


def test_meta_properties_v0_without_cluster_id_is_a_problem():
    meta = parse_meta_properties(b"broker.id=7\n")
    assert meta.identity_problem() is None
    assert any("no cluster.id" in p for p in meta.problems)
    assert not any("cluster.id" in p for p in parse_meta_properties(REAL_META).problems)
