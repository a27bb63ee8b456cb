"""``dump --deep``'s block path equals its record-by-record path, byte for byte.

* ``record_rows`` (a batch's records decoded at once) against the ``RecordV2`` Construct declaration on
  generated batches, and against ``iter_records`` (the streaming fast path) on mutated and random sections:
  the same rows whenever ``iter_records`` succeeds, None whenever it raises;
* ``Dumper.stream`` (``records`` blocks) against ``Dumper(blocks=False)`` (every record through
  ``walker.records``) in text, JSON and JSON Lines, on segments of every codec, control and transactional
  batches, headers with characters to escape, legacy message sets, and hostile input (torn, CRC-corrupt,
  lying counts, broken compressed data, ``--max-bytes`` cuts);
* the batch renderers against the generic JSON encoder;
* the peak RSS of ``dump --deep`` on a segment of the largest blocks.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import auditor.dump.segments as dump_module
from auditor.dump import Dumper, DumpOptions, expand_blocks
from auditor.report.dump_events import RENDERERS, _batch_object, guarded
from parsers.control import encode_end_txn_marker
from parsers.errors import ParseError
from parsers.record_batch import (
    RecordSpec,
    build_batch,
    iter_records,
    parse_header,
    parse_records_with_schema,
    record_rows,
    records_payload,
    restamp,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
T0 = 1_795_000_000_000


def _rows_of(records) -> list[tuple]:
    return [
        (r.offset, r.timestamp, r.key_size, r.value_size, r.sequence, tuple(h.key for h in r.headers))
        for r in records
    ]


def _streamed(batch, section: bytes) -> list[tuple] | None:
    """``iter_records``'s rows (payloads skipped, as ``dump --deep`` reads them), None when it raises."""
    try:
        return _rows_of(iter_records(batch, [section], payloads=False, total=len(section)))
    except ParseError:
        return None


# ------------------------------------------------------------------------------ record_rows

record_strategy = st.builds(
    RecordSpec,
    key=st.one_of(st.none(), st.binary(max_size=40)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    timestamp=st.integers(min_value=0, max_value=2**45),
    headers=st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(record_strategy, min_size=0, max_size=70),
    st.integers(0, 2**40),
    st.sampled_from([-1, 0, 2**31 - 40]),
    st.booleans(),
)
def test_record_rows_agree_with_the_construct_schema(records, base_offset, base_sequence, log_append):
    raw = build_batch(
        records,
        base_offset=base_offset,
        base_sequence=base_sequence,
        producer_id=-1 if base_sequence < 0 else 9,
        timestamp_type_log_append=log_append,
    )
    batch = parse_header(raw)
    payload = records_payload(batch, raw)
    rows = record_rows(batch, payload)
    assert rows == _rows_of(parse_records_with_schema(batch, payload))
    assert rows == _streamed(batch, payload)


def _section(seed: int) -> tuple[object, bytes]:
    rnd = random.Random(seed)
    specs = [
        RecordSpec(
            rnd.choice([None, b"k" * rnd.randrange(0, 70)]),
            rnd.choice([None, bytes(rnd.randrange(0, 200))]),
            T0 + rnd.randrange(0, 10**6),
            [("h\u00e9", b"v")] * rnd.randrange(0, 3),
        )
        for _ in range(rnd.randrange(1, 6))
    ]
    raw = build_batch(specs, base_offset=rnd.randrange(0, 1000))
    batch = parse_header(raw)
    return batch, records_payload(batch, raw)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 50),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
    st.integers(-2, 2),
)
def test_record_rows_is_none_exactly_when_iter_records_raises(seed, edits, cut, count_change):
    """Byte edits, truncations and wrong record counts: the same rows as the streaming decoder, or None
    where it raises (so the caller's fallback reports the error)."""
    batch, section = _section(seed)
    data = bytearray(section)
    for at, value in edits:
        data[at % len(data)] = value
    data = bytes(data[: max(0, len(data) - cut % 8)]) if cut % 3 == 0 else bytes(data)
    batch.records_count += count_change
    assert record_rows(batch, data) == _streamed(batch, data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(-1, 8))
def test_record_rows_on_random_bytes_match_iter_records(data, count):
    batch, _ = _section(0)
    batch.records_count = count
    assert record_rows(batch, data) == _streamed(batch, data)


def test_record_rows_leaves_records_larger_than_the_window_to_the_streaming_path(monkeypatch):
    import parsers.record_rows as fast

    monkeypatch.setattr(fast, "RECORD_WINDOW", 4096)
    raw = build_batch([RecordSpec(b"key", b"z" * 10_000, T0, [("a", b"b")])])
    batch = parse_header(raw)
    assert record_rows(batch, records_payload(batch, raw)) is None


# ------------------------------------------------------------------------------ segments


def _records(n: int, start: int, value_size: int = 30, header_key: str = "trace") -> list[RecordSpec]:
    return [
        RecordSpec(
            b"key-%d" % (start + i) if i % 5 else None,
            b"v" * value_size if i % 7 else None,
            T0 + start + i,
            [(header_key, b"%d" % i)] if i % 2 else [],
        )
        for i in range(n)
    ]


def _write_segment(folder: Path, batches: list[bytes], tail: bytes = b"") -> Path:
    """``batches`` at consecutive offsets (restamped), then ``tail``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    offset = 0
    for raw in batches:
        out += restamp(raw, base_offset=offset)
        offset += struct.unpack_from(">i", raw, 23)[0] + 1  # lastOffsetDelta + 1
    path = folder / "00000000000000000000.log"
    path.write_bytes(bytes(out) + tail)
    return path


def _clean_batches() -> list[bytes]:
    """Every codec, idempotent and transactional batches with markers, LogAppendTime, an empty batch,
    header keys with control, bidi and undecodable characters, a sequence that wraps."""
    key, value = encode_end_txn_marker(True, 3)
    abort_key, abort_value = encode_end_txn_marker(False, 4)
    out = [build_batch(_records(40, 0, 200), compression=codec) for codec in (0, 1, 2, 3, 4)]
    out += [
        build_batch(_records(12, 0), producer_id=5, producer_epoch=1, base_sequence=2**31 - 5),
        build_batch(_records(8, 0), transactional=True, producer_id=6, producer_epoch=0, base_sequence=0),
        build_batch([RecordSpec(key, value, T0)], transactional=True, control=True, producer_id=6),
        build_batch(_records(3, 0), transactional=True, producer_id=6, compression=4),
        build_batch(
            [RecordSpec(abort_key, abort_value, T0)], transactional=True, control=True, producer_id=6
        ),
        build_batch(_records(9, 0), timestamp_type_log_append=True, max_timestamp=T0 + 99),
        build_batch([], last_offset_delta=0),
        build_batch(_records(6, 0, header_key="\x1b[31mred\u202e"), compression=3),
        build_batch(_records(4, 0, header_key="tab\there\u2066")),
    ]
    # a header key that is not UTF-8 (decoded with replacement characters)
    bad_key = bytearray(build_batch([RecordSpec(b"k", b"v", T0, [("zz", b"1")])]))
    at = bad_key.index(b"zz")
    bad_key[at : at + 2] = b"\xff\xfe"
    out.append(_recrc(bytes(bad_key)))
    return out


def _recrc(raw: bytes) -> bytes:
    from parsers.primitives import crc32c

    fixed = bytearray(raw)
    struct.pack_into(">I", fixed, 17, crc32c(bytes(fixed[21:])))
    return bytes(fixed)


def _hostile_batches() -> list[bytes]:
    """Batches whose records do not decode (each with a valid CRC): a count that lies up and down, a
    record length that overruns, broken compressed bytes, trailing bytes after the records."""
    lying_up = bytearray(build_batch(_records(5, 0)))
    struct.pack_into(">i", lying_up, 57, 6)
    lying_down = bytearray(build_batch(_records(5, 0)))
    struct.pack_into(">i", lying_down, 57, 4)
    overrun = bytearray(build_batch(_records(3, 0)))
    overrun[61] = 0x7E  # the first record's length: 63, past its real end
    broken_lz4 = bytearray(build_batch(_records(30, 0), compression=3))
    broken_lz4[80] ^= 0xFF
    cut = bytearray(build_batch(_records(30, 0), compression=4)[:-5])  # the zstd frame cut short
    struct.pack_into(">i", cut, 8, len(cut) - 12)
    trailing = bytearray(build_batch(_records(2, 0)) + b"\x00\x00")
    struct.pack_into(">i", trailing, 8, len(trailing) - 12)
    unknown_codec = bytearray(build_batch(_records(2, 0)))
    struct.pack_into(">h", unknown_codec, 21, 6)
    return [
        _recrc(bytes(b)) for b in (lying_up, lying_down, overrun, broken_lz4, cut, trailing, unknown_codec)
    ]


@pytest.fixture(scope="module")
def segments(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("segments")
    clean = _clean_batches()
    crc_flipped = bytearray(clean[0])
    crc_flipped[70] ^= 0x01  # the CRC no longer matches: shown as invalid, records still decoded
    return {
        "clean": _write_segment(root / "clean-0", clean),
        "hostile": _write_segment(root / "hostile-0", [*clean[:2], *_hostile_batches(), clean[5]]),
        "crc-corrupt": _write_segment(root / "crc-0", [clean[1], bytes(crc_flipped), clean[2]]),
        "torn": _write_segment(root / "torn-0", clean[:3], tail=clean[3][:50]),
        "legacy": FIXTURES / "logdir/legacy-0/00000000000000000000.log",
        "payments": FIXTURES / "logdir/payments-0/00000000000000000000.log",
        "orders": FIXTURES / "logdir/orders-0/00000000000000000000.log",
        "metadata": FIXTURES / "logdir/__cluster_metadata-0/00000000000000000000.log",
        "torn-fixture": FIXTURES / "corrupt/torn-tail/orders-0/00000000000000000000.log",
        "crc-fixture": FIXTURES / "corrupt/crc-mismatch/orders-0/00000000000000000000.log",
    }


def _render(fmt: str, paths: list[Path], options: DumpOptions, blocks: bool) -> tuple[str, list[str]]:
    errors: list[ParseError] = []
    out = io.StringIO()
    dumper = Dumper(options, blocks=blocks)
    RENDERERS[fmt](guarded([str(p) for p in paths], dumper.stream, errors), out)
    return out.getvalue(), [str(e) for e in errors]


def _existing(segments: dict[str, Path]) -> list[Path]:
    return [p for p in segments.values() if p.exists()]


@pytest.mark.parametrize("fmt", ["text", "json", "jsonl"])
@pytest.mark.parametrize("max_bytes", [None, 700, 5000])
def test_block_path_renders_byte_identical_output(segments, fmt, max_bytes):
    options = DumpOptions(deep=True, max_bytes=max_bytes)
    paths = _existing(segments)
    fast = _render(fmt, paths, options, blocks=True)
    assert fast == _render(fmt, paths, options, blocks=False)
    assert fast[0]


@pytest.mark.parametrize("name", ["clean", "hostile", "crc-corrupt", "torn", "legacy", "payments", "orders"])
def test_block_path_gives_the_same_events_and_is_taken(segments, name):
    path = segments[name]
    if not path.exists():
        pytest.skip("fixture absent")
    options = DumpOptions(deep=True)

    def events(blocks: bool) -> list[dict]:
        out = []
        try:
            out.extend(Dumper(options, blocks=blocks).events(path))
        except ParseError as exc:
            out.append({"raised": str(exc)})
        return out

    assert events(True) == events(False)
    stream: list[dict] = []
    with contextlib.suppress(ParseError):
        stream.extend(Dumper(options).stream(path))
    blocks = [e for e in stream if e["kind"] == "records"]
    if name != "legacy":
        assert blocks, "no batch took the block path"
    if name in ("clean", "payments"):  # control batches are decoded record by record
        assert any(e["kind"] == "record" and "controlType" in e for e in stream)
    if name == "hostile":  # each undecodable batch is decoded record by record, up to its error event
        assert sum(e["kind"] == "error" for e in stream) == len(_hostile_batches())


def test_blocks_are_bounded_and_larger_batches_are_streamed(segments, monkeypatch):
    """Batches over the block limits (records, stored or decompressed bytes) go record by record; the
    output does not change."""
    paths = [segments["clean"], segments["hostile"]]
    options = DumpOptions(deep=True)
    reference = _render("jsonl", paths, options, blocks=False)
    for name, value in (
        ("BLOCK_RECORDS", 10),
        ("BLOCK_SECTION_BYTES", 300),
        ("BLOCK_DECOMPRESSED_BYTES", 900),
    ):
        with monkeypatch.context() as patch:
            patch.setattr(dump_module, name, value)
            assert _render("jsonl", paths, options, blocks=True) == reference, name
            kinds = [e["kind"] for e in Dumper(options).stream(segments["clean"])]
            assert "records" in kinds and "record" in kinds, name


def test_print_values_never_uses_blocks(segments):
    options = DumpOptions(print_values=True)
    assert not any(e["kind"] == "records" for e in Dumper(options).stream(segments["clean"]))


def test_expanded_blocks_are_the_record_events(segments):
    stream = list(Dumper(DumpOptions(deep=True)).stream(segments["clean"]))
    assert list(expand_blocks(iter(stream))) == list(
        Dumper(DumpOptions(deep=True), blocks=False).stream(segments["clean"])
    )


def test_batch_objects_equal_the_generic_encoder(segments):
    batches = [
        e
        for path in _existing(segments)
        for e in _events_until_error(path)
        if e["kind"] == "batch" and "baseSequence" in e
    ]
    assert len(batches) > 30
    assert any(e["deleteHorizonMs"] is None for e in batches)
    for e in batches + [{**batches[0], "deleteHorizonMs": T0, "computedCrc": None}]:
        assert "{" + _batch_object(e) == json.dumps(e, separators=(",", ":"))


def _events_until_error(path: Path) -> list[dict]:
    out: list[dict] = []
    with contextlib.suppress(ParseError):
        out.extend(Dumper(DumpOptions(deep=True)).events(path))
    return out


# ------------------------------------------------------------------------------ memory


def test_deep_dump_of_the_largest_blocks_stays_in_bounded_memory(tmp_path):
    """Batches at the block limits (32 Ki records; 1 MiB sections), 24 MB in all: the peak RSS of the
    command (and of the ``tail``/``wc`` reading its output) stays flat."""
    from tests.hostile.conftest import run_bounded

    count = dump_module.BLOCK_RECORDS
    tiny = build_batch([RecordSpec(None, b"", T0 + i) for i in range(count)], compression=4)
    wide = build_batch([RecordSpec(b"k", b"x" * 1000, T0 + i) for i in range(1000)])
    assert len(wide) - 61 <= dump_module.BLOCK_SECTION_BYTES
    path = _write_segment(tmp_path / "big-0", [tiny, wide] * 23)
    assert path.stat().st_size > 23_000_000
    command = f"{sys.executable} -m auditor.cli dump --deep --format {{}} {path} | {{}}"
    for fmt, reader in (("text", "wc -l"), ("jsonl", "tail -n 1")):
        result = run_bounded(["/bin/sh", "-c", command.format(fmt, reader)], timeout=300, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        assert result.peak_rss_mb < 150, result.peak_rss_mb
        if fmt == "text":
            assert int(result.stdout) == 2 + 23 * (count + 1000 + 2)
        else:
            assert json.loads(result.stdout)["records"] == 23 * (count + 1000)


def test_cli_streams_blocks(segments):
    """The command renders ``Dumper.stream``: its output is the per-record rendering."""
    proc = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "dump", "--deep", "--format", "jsonl", str(segments["clean"])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _render("jsonl", [segments["clean"]], DumpOptions(deep=True), blocks=False)[0]
