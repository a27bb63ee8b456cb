"""``dump --format jsonl|json`` against the published schema ``auditor/schemas/dump-events.schema.json``,
the one byte encoding (``utf8`` or ``base64``, flagged per field), camelCase keys, escaped text output and
the ``--max-bytes`` marker, on every kind of file the fixtures hold plus the ones built here."""

from __future__ import annotations

import base64
import json
import re
import shutil
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from auditor.text import UNSAFE
from parsers import codecs
from parsers.consumer_offsets import encode_offsets_key
from parsers.control import encode_control_record
from parsers.record_batch import RecordSpec, build_batch
from parsers.transaction_state import encode_txn_key
from tests.cli.test_dump import ONGOING, run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
T0 = 1_700_000_000_000
ESC, RLO, NUL = "\x1b", "\u202e", "\x00"

HOSTILE_KEY = f"k{NUL}{ESC}[31m{RLO}txt".encode()  # valid UTF-8: utf8, shown escaped in text
BINARY_VALUE = b"\xff\xfe\x00\x01"  # not UTF-8: base64
HEADERS = [(f"h{ESC}{RLO}", b"\x00v"), ("bin", b"\xff"), ("null", None)]


def schema() -> dict:
    text = resources.files("auditor").joinpath("schemas/dump-events.schema.json").read_text("utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    doc = schema()
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Files the committed fixtures lack: hostile and binary bytes in keys, values and headers (every
    codec, LogAppendTime), __transaction_state, undecodable and unknown-version payloads of every decoder, a
    bootstrap snapshot and a .deleted segment."""
    root = tmp_path_factory.mktemp("dump-schema")
    hostile = b"".join(
        build_batch(
            [
                RecordSpec(HOSTILE_KEY, BINARY_VALUE, T0, HEADERS),
                RecordSpec(None, None, T0 + 1),
                RecordSpec(b"\xc3\x28", "v\u202e\x07".encode(), T0 + 2, [("u", "é".encode())]),
            ],
            base_offset=3 * i,
            compression=codec,
            timestamp_type_log_append=codec == codecs.ZSTD,
        )
        for i, codec in enumerate((0, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD))
    )
    unknown_control = (
        encode_control_record("COMMIT", {"version": 0, "coordinatorEpoch": 1})[0][:2] + b"\x00\x63"
    )
    txn = b"".join(
        [
            build_batch([RecordSpec(encode_txn_key("tx\x00-1"), ONGOING, T0)], base_offset=0),
            build_batch([RecordSpec(encode_txn_key("tx-2"), None, T0 + 1)], base_offset=1),
            build_batch([RecordSpec(b"\x00\x09\xff\xfe", b"\x00\x00", T0 + 2)], base_offset=2),  # unknown key
            build_batch([RecordSpec(encode_txn_key("t"), ONGOING[:9], T0 + 3)], base_offset=3),  # decodeError
            build_batch([RecordSpec(unknown_control, b"\x00", T0 + 4)], base_offset=4, control=True),
        ]
    )
    metadata = b"".join(
        [
            build_batch([RecordSpec(None, b"\x01\x63\x00\xff\xfe", T0)], base_offset=0),  # UNKNOWN_99: raw
            build_batch([RecordSpec(None, b"\x00\x00\x00", T0 + 1)], base_offset=1),  # frame 0: decodeError
        ]
    )
    offsets = b"".join(
        [
            build_batch([RecordSpec(b"\x00\x63\xff", b"\x00\x01\xfe", T0)], base_offset=0),  # unknown type
            build_batch(
                [
                    RecordSpec(
                        encode_offsets_key(1, {"group": "g", "topic": "t", "partition": 0}), None, T0 + 1
                    )
                ],
                base_offset=1,
            ),  # tombstone
        ]
    )
    snapshot = FIXTURES / "logdir/__cluster_metadata-0/00000000000000000004-0000000001.checkpoint"
    files = {
        "hostile": _write(root / "hostile-0" / "00000000000000000000.log", hostile),
        "txn": _write(root / "__transaction_state-0" / "00000000000000000000.log", txn),
        "metadata": _write(root / "__cluster_metadata-0" / "00000000000000000000.log", metadata),
        "offsets": _write(root / "__consumer_offsets-3" / "00000000000000000000.log", offsets),
        "bootstrap": _write(root / "bootstrap.checkpoint", snapshot.read_bytes()),
        "deleted": _write(
            root / "orders-0" / "00000000000000000016.log.deleted",
            (FIXTURES / "logdir/orders-0/00000000000000000016.log").read_bytes(),
        ),
    }
    shutil.copy(FIXTURES / "logdir/meta.properties", root / "meta.properties")
    return files


def every_file(built: dict[str, Path]) -> list[str]:
    fixtures = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".py")
    return [*map(str, fixtures), *map(str, built.values())]


OPTION_SETS = [
    ["--deep"],  # records without keys and values
    ["--print-values"],
    ["--print-values", "--max-bytes", "100"],  # every file cut short
]


def jsonl(*args: str) -> tuple[list[dict], int]:
    res = run("dump", "--format", "jsonl", *args)
    assert "Traceback" not in res.stderr, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()], res.returncode


def variant(validator, event: dict) -> str:
    """Which alternative of the schema the event is (``summary/2``): the schema names exactly one."""
    defs = validator.schema["$defs"]
    kind = event["kind"]
    alternatives = defs[kind].get("oneOf", [defs[kind]])
    matches = [
        i
        for i, alt in enumerate(alternatives)
        if validator.evolve(schema=_with_defs(alt, defs)).is_valid(event)
    ]
    assert len(matches) == 1, (event, matches)
    return f"{kind}/{matches[0]}"


def _with_defs(sub: dict, defs: dict) -> dict:
    return {**sub, "$defs": defs}


def keys_of(value, path: str = "") -> list[tuple[str, str]]:
    """(key, where) of every object key in ``value``."""
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((key, path))
            out.extend(keys_of(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for item in value:
            out.extend(keys_of(item, path))
    return out


CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def test_every_jsonl_event_of_every_file_kind_validates(validator, built):
    files = every_file(built)
    seen: set[str] = set()
    for options in OPTION_SETS:
        events, code = jsonl(*options, *files)
        assert code == 2  # the corrupt fixtures
        assert sum(e["kind"] == "file" for e in events) == len(files)
        for event in events:
            errors = sorted(validator.iter_errors(event), key=lambda e: e.path)
            assert not errors, (event, [e.message for e in errors][:3])
            seen.add(variant(validator, event))
            for key, where in keys_of(event):
                assert CAMEL.match(key), (key, where, event)
    # every kind, and every alternative the schema describes, was written by dump at least once
    defs = validator.schema["$defs"]
    expected = {
        f"{kind}/{i}"
        for kind in validator.schema["properties"]["kind"]["enum"]
        for i in range(len(defs[kind].get("oneOf", [defs[kind]])))
    }
    assert seen == expected


def test_json_document_validates(validator, built):
    files = every_file(built)
    res = run("dump", "--format", "json", "--print-values", *files)
    assert res.returncode == 2
    doc = json.loads(res.stdout)
    document = validator.evolve(schema={"$ref": "#/$defs/document", "$defs": validator.schema["$defs"]})
    errors = list(document.iter_errors(doc))
    assert not errors, [e.message for e in errors][:3]
    assert doc["version"] == 2 and len(doc["files"]) == len(files)
    assert sum(f["error"] is not None for f in doc["files"]) == 5  # fixtures/corrupt


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "summary", "log_starting_offset": 0},  # snake_case
        {"kind": "summary", "logStartingOffset": "0"},
        {"kind": "high_watermark", "version": 0},  # the old checkpoint kind
        {"kind": "stop", "reason": "max-bytes", "position": 0, "trailingBytes": 0, "message": None},
        {
            "kind": "record",
            "offset": 0,
            "timestampType": "CreateTime",
            "timestamp": 1,
            "keySize": 1,
            "valueSize": 1,
            "sequence": -1,
            "headerKeys": [],
            "key": "6b",
            "keyEncoding": "hex",
        },
        {
            "kind": "record",
            "offset": 0,
            "timestampType": "CreateTime",
            "timestamp": 1,
            "keySize": 1,
            "valueSize": 1,
            "sequence": -1,
            "headerKeys": [],
            "key": "k!",
            "keyEncoding": "base64",
        },
        {
            "kind": "record",
            "offset": 0,
            "timestampType": "CreateTime",
            "timestamp": 1,
            "keySize": 1,
            "valueSize": 1,
            "sequence": -1,
            "headerKeys": ["h"],
            "headers": [{"key": "h", "value": "AA=="}],
        },
        {
            "kind": "record",
            "offset": 0,
            "timestampType": "CreateTime",
            "timestamp": 1,
            "keySize": 1,
            "valueSize": 1,
            "sequence": -1,
            "headerKeys": [],
            "key": {"type": "9", "data": None, "raw": "ff"},
        },
    ],
)
def test_schema_rejects_what_dump_must_not_write(validator, bad):
    assert not validator.is_valid({"file": "x.log", **bad})


def _decode(text: str | None, encoding: str | None) -> bytes | None:
    if text is None:
        assert encoding is None
        return None
    return text.encode("utf-8") if encoding == "utf8" else base64.b64decode(text, validate=True)


@pytest.mark.parametrize("force", [False, True])
def test_bytes_round_trip_through_the_encoding_flags(built, force):
    options = ["--encoding", "base64"] if force else []
    events, code = jsonl("--print-values", *options, str(built["hostile"]))
    assert code == 0
    records = [e for e in events if e["kind"] == "record"]
    assert len(records) == 15  # 5 batches, one per codec
    for i, rec in enumerate(records):
        want = [
            (HOSTILE_KEY, BINARY_VALUE, HEADERS),
            (None, None, []),
            (b"\xc3\x28", "v\u202e\x07".encode(), [("u", "é".encode())]),
        ][i % 3]
        assert _decode(rec["key"], rec["keyEncoding"]) == want[0]
        assert _decode(rec["payload"], rec["payloadEncoding"]) == want[1]
        headers = rec.get("headers", [])
        assert [(h["key"], _decode(h["value"], h["valueEncoding"])) for h in headers] == want[2]
        encodings = {rec["keyEncoding"], rec["payloadEncoding"], *(h["valueEncoding"] for h in headers)} - {
            None
        }
        if force:
            assert encodings <= {"base64"}
        elif i % 3 == 0:
            assert (rec["keyEncoding"], rec["payloadEncoding"]) == ("utf8", "base64")
            assert [h["valueEncoding"] for h in headers] == ["utf8", "base64", None]
        assert rec["timestampType"] == ("LogAppendTime" if i >= 12 else "CreateTime")


def test_decoders_raw_bytes_use_the_same_encoding(built):
    events, _ = jsonl("--print-values", str(built["metadata"]), str(built["offsets"]), str(built["txn"]))
    records = [e for e in events if e["kind"] == "record"]
    unknown_metadata = records[0]["payload"]
    assert unknown_metadata["type"] == "UNKNOWN_99" and unknown_metadata["rawEncoding"] == "base64"
    assert base64.b64decode(unknown_metadata["raw"]) == b"\xff\xfe"
    assert "decodeError" in records[1] and records[1]["payloadEncoding"] == "utf8"
    offsets_key, offsets_value = records[2]["key"], records[2]["payload"]
    assert (offsets_key["raw"], offsets_key["rawEncoding"]) == ("/w==", "base64")
    assert (offsets_value["raw"], offsets_value["rawEncoding"]) == ("/g==", "base64")
    assert records[3]["payload"] == "<DELETE>"
    txn_unknown = records[6]
    assert (
        txn_unknown["key"]["rawEncoding"] == "base64"
        and base64.b64decode(txn_unknown["key"]["raw"]) == b"\xff\xfe"
    )
    assert (txn_unknown["payload"], txn_unknown["payloadEncoding"]) == ("\x00\x00", "utf8")
    assert not any("hex" in json.dumps(e) for e in events if e["kind"] == "record")


def test_text_escapes_control_and_bidi_characters(built):
    for args in (["--print-values"], ["--print-values", "--decoder", "none"], ["--transaction-log-decoder"]):
        res = run("dump", *args, str(built["hostile"]), str(built["txn"]))
        assert res.returncode == 0, res.stderr
        for line in res.stdout.splitlines():
            assert not UNSAFE.search(line), line
    res = run("dump", "--print-values", str(built["hostile"]))
    first = next(line for line in res.stdout.splitlines() if line.startswith("| offset: 0 "))
    assert (
        "key: k\\x00\\x1b[31m\\u202etxt payload: base64:" + base64.b64encode(BINARY_VALUE).decode() in first
    )
    assert '"key":"h\\u001b\\u202e","value":"\\u0000v","valueEncoding":"utf8"' in first
    assert '{"key":"bin","value":"/w==","valueEncoding":"base64"}' in first
    third = next(line for line in res.stdout.splitlines() if line.startswith("| offset: 2 "))
    assert "key: base64:wyg= payload: v\\u202e\\x07" in third
    # the raw key bytes of __transaction_state (NUL-prefixed lengths) without a decoder
    res = run("dump", "--print-values", "--decoder", "none", str(built["txn"]))
    assert "key: \\x00\\x00\\x00\\x05tx\\x00-1 " in res.stdout and NUL not in res.stdout


def test_max_bytes_marker_in_text_and_stop_event_in_jsonl(tmp_path):
    segment = FIXTURES / "logdir/orders-0/00000000000000000000.log"  # batches end at 289, 450, 645, 833
    index = FIXTURES / "logdir/orders-0/00000000000000000000.timeindex"  # 2 entries of 12 bytes
    checkpoint = FIXTURES / "logdir/replication-offset-checkpoint"
    res = run("dump", "--max-bytes", "500", str(segment))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "... stopped after 450 bytes (--max-bytes); rest of file not shown: 383 bytes"
    assert sum(line.startswith("baseOffset:") for line in lines) == 2
    res = run("dump", "--max-bytes", "450", str(segment))  # a limit on a batch boundary
    assert res.stdout.splitlines()[-1].endswith("rest of file not shown: 383 bytes")
    res = run("dump", "--max-bytes", "20", str(index))  # whole entries only: one entry, not a corrupt index
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-2:] == [
        "timestamp: 1795000000007 offset: 7",
        "... stopped after 12 bytes (--max-bytes); rest of file not shown: 12 bytes",
    ]
    events, code = jsonl("--max-bytes", "20", str(segment), str(index), str(checkpoint))
    assert code == 0  # a checkpoint cut inside a line is cut, not corrupt
    ends = [
        (e["file"], e["kind"], e.get("position"), e.get("fileSize"))
        for e in events
        if e["kind"] in ("stop", "failed")
    ]
    assert ends == [
        (str(segment), "stop", 0, 833),
        (str(index), "stop", 12, 24),
        (str(checkpoint), "stop", 20, checkpoint.stat().st_size),
    ]
    assert all(e["reason"] == "max-bytes" for e in events if e["kind"] == "stop")
    res = run("dump", "--max-bytes", "10", str(checkpoint))
    lines = res.stdout.splitlines()
    assert res.returncode == 0 and lines[-1].startswith("... stopped after 10 bytes (--max-bytes)")
    assert not res.stderr
    res = run("dump", "--max-bytes", str(segment.stat().st_size), str(segment))  # the whole file: no marker
    assert "stopped after" not in res.stdout
