"""Text checkpoints (spec §11): Kafka's ``CheckpointFile`` rules case by case, Java number/split semantics,
round trips, fuzzing and every checkpoint file of the corpus."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import checkpoints
from parsers.checkpoints import (
    CHECKPOINT_KINDS,
    OFFSET_CHECKPOINT_FILES,
    _java_lines,
    _java_parse_int,
    _java_parse_long,
    _java_split_whitespace,
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    is_legal_topic_name,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
)
from parsers.errors import ParseError

P = "/data/kafka/replication-offset-checkpoint"

# ------------------------------------------------------------------------------------------- Java semantics


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("-0", 0),
        ("+7", 7),
        ("000123", 123),
        ("2147483647", 2147483647),
        ("-2147483648", -2147483648),
        ("2147483648", None),
        ("-2147483649", None),
        ("99999999999999999999", None),
        ("", None),
        ("+", None),
        ("-", None),
        ("+-1", None),
        (" 1", None),
        ("1 ", None),
        ("1_000", None),
        ("0x10", None),
        ("1e3", None),
        ("1.0", None),
        ("\u0663", 3),  # ARABIC-INDIC DIGIT THREE: Character.digit accepts any Nd digit
        ("\uff11\uff12", 12),  # fullwidth digits
        ("\U0001d7cf", None),  # astral digit: a surrogate pair in Java, rejected
        ("\u00b2", None),  # superscript two is not Nd
    ],
)
def test_java_parse_int(text, value):
    assert _java_parse_int(text) == value


def test_java_parse_long_limits():
    assert _java_parse_long("9223372036854775807") == 2**63 - 1
    assert _java_parse_long("-9223372036854775808") == -(2**63)
    assert _java_parse_long("9223372036854775808") is None
    assert _java_parse_long("2147483648") == 2147483648


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        ("a 0 5", ["a", "0", "5"]),
        ("a\t0  5", ["a", "0", "5"]),
        ("a 0 5  \t", ["a", "0", "5"]),  # trailing empty tokens dropped
        (" a 0 5", ["", "a", "0", "5"]),  # leading whitespace: an empty first token
        ("", [""]),
        ("   ", []),
        ("a\x0b0\x0c5", ["a", "0", "5"]),  # \x0b and \f are \s in Java
        ("a\u00a00 5", ["a\u00a00", "5"]),  # NBSP is not
        ("a\x1c0", ["a\x1c0"]),  # nor the separators Python's str.split() uses
    ],
)
def test_java_split(line, tokens):
    assert _java_split_whitespace(line) == tokens


def test_java_lines():
    assert _java_lines(b"") == []
    assert _java_lines(b"a\nb") == [(b"a", 0), (b"b", 2)]
    assert _java_lines(b"a\r\nb\r\n") == [(b"a", 0), (b"b", 3)]
    assert _java_lines(b"a\rb\n\r") == [(b"a", 0), (b"b", 2), (b"", 4)]
    assert _java_lines(b"a\n\n") == [(b"a", 0), (b"", 2)]


# ------------------------------------------------------------------------------------ offset checkpoints

REAL = b"0\n4\n__transaction_state 0 10\nt1 0 750\ncmp 0 120\ntx 0 12\n"


def test_real_file_and_round_trip():
    cp = parse_offset_checkpoint(REAL, P)
    assert (cp.version, cp.count, cp.kind, cp.warnings) == (0, 4, "high_watermark", [])
    assert cp.entries == [("__transaction_state", 0, 10), ("t1", 0, 750), ("cmp", 0, 120), ("tx", 0, 12)]
    assert cp.line_offsets == [4, 29, 38, 48]
    assert format_offset_checkpoint(cp.entries) == REAL
    assert cp.as_dict()[("t1", 0)] == 750


@pytest.mark.parametrize(
    ("data", "entries"),
    [
        (b"", []),  # empty file: no entries
        (b"0", []),  # only the version line
        (b"0\n", []),
        (b"0\n0\n", []),
        (b"0\n0", []),
        (b"0\r\n1\r\nt 0 5\r\n", [("t", 0, 5)]),  # \r\n terminators
        (b"0\r1\rt 0 5", [("t", 0, 5)]),  # \r terminators, no final terminator
        (b"+0\n01\nt\t0   5  \n", [("t", 0, 5)]),  # sign, leading zero, tabs, trailing blanks
        (b"0\n1\nt -1 -5\n", [("t", -1, -5)]),  # Kafka does not reject negative numbers here
        (b"0\n2\nt 0 5\nt 0 6\n", [("t", 0, 5), ("t", 0, 6)]),  # duplicates kept, last wins in as_dict
    ],
)
def test_accepted_by_kafka(data, entries):
    assert parse_offset_checkpoint(data, P).entries == entries


LOC = f"checkpoint file [{P}]"


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"1\n0\n", f"Unrecognised version:1, expected version: 0 in checkpoint file at: {P}", 0),
        (b"-0\n0\n", None, None),  # -0 == 0: accepted
        (b" 0\n0\n", f"Malformed line in {LOC}:  0", 0),
        (b"0 \n0\n", f"Malformed line in {LOC}: 0 ", 0),
        (b"v0\n", f"Malformed line in {LOC}: v0", 0),
        (b"\n0\n", f"Malformed line in {LOC}: ", 0),
        (b"2147483648\n", f"Malformed line in {LOC}: 2147483648", 0),
        (b"\xef\xbb\xbf0\n0\n", f"Malformed line in {LOC}: \ufeff0", 0),  # a BOM is not stripped
        (b"0\nx\n", f"Malformed line in {LOC}: x", 2),
        (b"0\n1 \n", f"Malformed line in {LOC}: 1 ", 2),
        (b"0\n-1\n", "Illegal Capacity: -1", 2),
        (b"0\n1\n t 0 5\n", f"Malformed line in {LOC}:  t 0 5", 4),  # leading space
        (b"0\n1\nt 0 5\n\n", f"Malformed line in {LOC}: ", 10),  # doubled trailing newline
        (b"0\n1\nt 0 5\r\n\r\n", f"Malformed line in {LOC}: ", 11),
        (b"0\n1\nt 0\n", f"Malformed line in {LOC}: t 0", 4),
        (b"0\n1\nt 0 5 6\n", f"Malformed line in {LOC}: t 0 5 6", 4),
        (b"0\n1\nt x 5\n", 'For input string: "x"', 4),
        (b"0\n1\nt 2147483648 5\n", 'For input string: "2147483648"', 4),
        (b"0\n1\nt 0 9223372036854775808\n", 'For input string: "9223372036854775808"', 4),
        (b"0\n2\nt 0 5\n", f"Expected [2] entries in {LOC}, but found only [1]", 2),
        (b"0\n0\nt 0 5\n", f"Expected [0] entries in {LOC}, but found only [1]", 2),  # same text for more
        (b"0\n1\nt 0 5\n\xff\n", f"Malformed input in {LOC} (invalid UTF-8, Input length = 1)", 10),
    ],
)
def test_rejected_by_kafka(data, message, offset):
    if message is None:
        parse_offset_checkpoint(data, P)
        return
    with pytest.raises(ParseError) as exc:
        parse_offset_checkpoint(data, P)
    assert (exc.value.message, exc.value.offset, exc.value.path) == (message, offset, P)


def test_errors_without_path_name_the_buffer():
    with pytest.raises(ParseError) as exc:
        parse_offset_checkpoint(b"3\n")
    assert exc.value.message == "Unrecognised version:3, expected version: 0 in checkpoint file at: <buffer>"


def test_topic_warnings():
    rows = [("ok.topic-1_x", 0, 1), ("bad/topic", 0, 2), ("..", 1, 3), ("ok.topic-1_x", 0, 4)]
    data = format_offset_checkpoint(rows)
    cp = parse_offset_checkpoint(data)
    assert len(cp.warnings) == 3
    assert "'bad/topic' is not a legal topic name" in cp.warnings[0]
    assert "duplicate entry for ok.topic-1_x-0" in cp.warnings[2]
    assert cp.as_dict()[("ok.topic-1_x", 0)] == 4
    assert is_legal_topic_name("a" * 249) and not is_legal_topic_name("a" * 250)
    assert not is_legal_topic_name("") and not is_legal_topic_name(".") and is_legal_topic_name("...")


def test_kinds():
    assert set(CHECKPOINT_KINDS) == OFFSET_CHECKPOINT_FILES | {"leader-epoch-checkpoint"}
    assert parse_offset_checkpoint(b"", "/d/cleaner-offset-checkpoint").kind == "cleaner_offset"
    assert parse_offset_checkpoint(b"", "/d/whatever").kind is None


# ------------------------------------------------------------------------------------------- leader epochs


def test_leader_epoch_real_files():
    cp = parse_leader_epoch_checkpoint(b"0\n3\n0 0\n2 750\n4 985\n")
    assert cp.entries == [(0, 0), (2, 750), (4, 985)]
    assert cp.normalized().entries == cp.entries and cp.normalized().dropped == []
    meta = parse_leader_epoch_checkpoint(b"0\n4\n1 0\n2 208\n3 248\n4 317\n")
    assert format_leader_epoch_checkpoint(meta.entries) == b"0\n4\n1 0\n2 208\n3 248\n4 317\n"


@pytest.mark.parametrize(
    ("entries", "kept", "dropped"),
    [
        ([(1, 750), (2, 750)], [(2, 750)], [(1, 750)]),  # an epoch with no data is replaced by the next one
        ([(0, 0), (2, 750), (1, 800)], [(0, 0), (1, 800)], [(2, 750)]),  # epoch going back: tail truncated
        ([(0, 0), (2, 750), (3, 700)], [(0, 0), (3, 700)], [(2, 750)]),  # start offset going back
        ([(0, 0), (2, 750), (2, 900)], [(0, 0), (2, 750)], [(2, 900)]),  # same epoch, later start: ignored
        ([(0, 0), (2, 750), (2, 600)], [(0, 0), (2, 600)], [(2, 750)]),  # same epoch, earlier start: moved
        ([(5, 10), (4, 20), (3, 5)], [(3, 5)], [(5, 10), (4, 20)]),
    ],
)
def test_leader_epoch_normalized_like_assign(entries, kept, dropped):
    normalized = parse_leader_epoch_checkpoint(format_leader_epoch_checkpoint(entries)).normalized()
    assert normalized.entries == kept
    assert [(e, s) for e, s, _ in normalized.dropped] == dropped


def test_leader_epoch_negative_entry_fails_at_load():
    cp = parse_leader_epoch_checkpoint(b"0\n2\n0 0\n-1 5\n", "/d/t-0/leader-epoch-checkpoint")
    assert cp.entries == [(0, 0), (-1, 5)]  # CheckpointFile itself accepts it
    with pytest.raises(ParseError) as exc:
        cp.normalized()
    assert exc.value.message == (
        "Received invalid partition leader epoch entry EpochEntry(epoch=-1, startOffset=5)"
    )
    assert exc.value.offset == 8 and exc.value.path == "/d/t-0/leader-epoch-checkpoint"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"0\n1\n0 0 0\n", "Malformed line in checkpoint file [<buffer>]: 0 0 0"),
        (b"0\n1\n0\n", "Malformed line in checkpoint file [<buffer>]: 0"),
        (b"0\n1\n2147483648 0\n", 'For input string: "2147483648"'),
        (b"0\n1\n1 x\n", 'For input string: "x"'),
        (b"0\n1\n1 0\n\n", "Malformed line in checkpoint file [<buffer>]: "),
    ],
)
def test_leader_epoch_rejected(data, message):
    with pytest.raises(ParseError) as exc:
        parse_leader_epoch_checkpoint(data)
    assert exc.value.message == message


# ------------------------------------------------------------------------------------ round trips / fuzz

_TOPIC = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True).filter(lambda t: t not in (".", ".."))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TOPIC, st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1)), max_size=20))
def test_offset_round_trip(entries):
    cp = parse_offset_checkpoint(format_offset_checkpoint(entries))
    assert cp.entries == entries and cp.count == len(entries)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), max_size=20))
def test_leader_epoch_round_trip(entries):
    assert parse_leader_epoch_checkpoint(format_leader_epoch_checkpoint(entries)).entries == entries


def _only_parse_error(data: bytes) -> None:
    for parser in (parse_offset_checkpoint, parse_leader_epoch_checkpoint):
        try:
            parser(data, P)
        except ParseError as exc:
            assert exc.offset is not None and 0 <= exc.offset <= len(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_only_parse_error(data):
    _only_parse_error(data)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 -+\t\r\nab\u0663\u00a0", max_size=40))
def test_random_text_only_parse_error(text):
    _only_parse_error(text.encode())
    with contextlib.suppress(ParseError):
        parse_leader_epoch_checkpoint(text.encode()).normalized()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_bit_flips_and_truncations(data):
    for valid in (REAL, b"0\n3\n0 0\n2 750\n4 985\n"):
        flipped = bytearray(valid)
        flipped[data.draw(st.integers(0, len(valid) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        _only_parse_error(bytes(flipped))
        _only_parse_error(valid[: data.draw(st.integers(0, len(valid)))])


# ------------------------------------------------------------------------------------------- corpus


@pytest.mark.corpus
def test_corpus_every_checkpoint_parses(corpus):
    counts = {"offsets": 0, "epochs": 0, "empty": 0}
    for root, _dirs, files in os.walk(corpus):
        if "dumps" in root or "_run" in root:
            continue
        for name in files:
            path = Path(root) / name
            data = path.read_bytes()
            if name in CHECKPOINT_KINDS and not data:  # created empty by Kafka, never written yet
                offsets = name in OFFSET_CHECKPOINT_FILES
                parse = parse_offset_checkpoint if offsets else parse_leader_epoch_checkpoint
                cp = parse(data, str(path))
                assert (cp.version, cp.count, cp.entries) == (None, None, [])
                counts["empty"] += 1
            elif name in OFFSET_CHECKPOINT_FILES:
                cp = parse_offset_checkpoint(data, str(path))
                assert cp.version == 0 and cp.count == len(cp.entries) and not cp.warnings, path
                assert cp.kind == CHECKPOINT_KINDS[name]
                assert format_offset_checkpoint(cp.entries) == data
                assert all(t != "__cluster_metadata" for t, _, _ in cp.entries)
                counts["offsets"] += 1
            elif name == "leader-epoch-checkpoint":
                cp = parse_leader_epoch_checkpoint(data, str(path))
                assert format_leader_epoch_checkpoint(cp.entries) == data
                normalized = cp.normalized()
                assert normalized.entries == cp.entries and not normalized.dropped, path
                counts["epochs"] += 1
    assert counts["offsets"] >= 25 and counts["epochs"] > 150 and counts["empty"] >= 10


# ------------------------------------------------------------------------------------ linear time (issue 8)


@contextlib.contextmanager
def _general_path_only():
    """Parse without the vectorised fast path: every line through the per-line Java-semantics code."""
    saved = checkpoints._OFFSET_FAST, checkpoints._EPOCH_FAST
    checkpoints._OFFSET_FAST = checkpoints._EPOCH_FAST = None
    try:
        yield
    finally:
        checkpoints._OFFSET_FAST, checkpoints._EPOCH_FAST = saved


def _outcome(parse, data: bytes):
    try:
        cp = parse(data, P)
    except ParseError as exc:
        return ("error", exc.message, exc.offset)
    return ("ok", cp.version, cp.count, cp.entries, cp.line_offsets, getattr(cp, "warnings", None))


_LINE_PIECES = st.sampled_from(
    ["t", "a.b-c_d", "7", "0", "00000000001", "123456789", "1234567890", "999999999999999999", "-3", "+4",
     "\u0663", " ", "  ", "\t", "\x0b", "\u00a0", "x\x1cy", ""]
)
_LINES = st.lists(st.lists(_LINE_PIECES, max_size=5).map("".join), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_LINES, st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_fast_path_agrees_with_general_path(lines, terminator, final):
    """Runs of lines in the common shape go through one regex and numpy; the result (entries, line offsets,
    warnings, errors and their offsets) is the same as line by line."""
    for parse in (parse_offset_checkpoint, parse_leader_epoch_checkpoint):
        body = terminator.join(["0", str(len(lines)), *lines]) + (terminator if final else "")
        data = body.encode("utf-8")
        fast = _outcome(parse, data)
        with _general_path_only():
            assert _outcome(parse, data) == fast


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t\n\x0b\f\r\x1ca1\u00a0", max_size=12), st.integers(1, 4))
def test_java_tokens_agree_with_java_split(text, expected):
    tokens = _java_split_whitespace(text)
    assert checkpoints._java_tokens(text, expected) == (tokens if len(tokens) == expected else None)


def _normalized_reference(entries: list[tuple[int, int]]) -> tuple[list, list]:
    """``LeaderEpochFileCache.assign`` line by line, as Kafka does (no fast prefix)."""
    kept: list[tuple[int, int]] = []
    dropped = []
    for epoch, start in entries:
        if kept and epoch == kept[-1][0] and start >= kept[-1][1]:
            dropped.append((epoch, start))
            continue
        while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start):
            dropped.append(kept.pop())
        kept.append((epoch, start))
    return kept, dropped


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2**63 - 1)), max_size=15), st.integers(0, 15))
def test_normalized_fast_prefix_agrees_with_assign(entries, increasing):
    entries = [(i, i * 10) for i in range(increasing)] + sorted(entries)[: len(entries) // 2] + entries
    cp = parse_leader_epoch_checkpoint(format_leader_epoch_checkpoint(entries), P)
    normalized = cp.normalized()
    kept, dropped = _normalized_reference(entries)
    assert normalized.entries == kept
    assert [(e, s) for e, s, _ in normalized.dropped] == dropped


def _offset_lines(size: int) -> bytes:
    entries, total, i = [], 0, 0
    while total < size:
        entries.append((f"orders-eu-west-{i // 100:06d}", i % 100, 1_234_567_890 + i))
        total += 36
        i += 1
    return format_offset_checkpoint(entries)


@pytest.mark.parametrize("kind", ["offsets", "epochs"])
def test_sixteen_mb_checkpoint_parses_in_linear_time(kind):
    """KAFKA-6468 puts ~40 k partitions at ~2 MB; 16 MB (~470 k offset lines, 1.2 M epoch lines) once took
    over a minute (every line rescanned the rest of the file). CPU time, so a loaded machine does not fail
    it."""
    size = 16 << 20
    if kind == "offsets":
        data, parse = _offset_lines(size), parse_offset_checkpoint
    else:
        lines = size // 15
        data = format_leader_epoch_checkpoint((i, 3 * i) for i in range(lines))
        parse = parse_leader_epoch_checkpoint
    start = time.process_time()
    cp = parse(data, P)
    if kind == "epochs":
        assert len(cp.normalized().entries) == lines
    seconds = time.process_time() - start
    assert cp.count == len(cp.entries) > 400_000
    assert seconds < 2.0, seconds


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"0\n1\n" + b"x" * (16 << 20), 4),  # one 16 MB line
        (b"0\n" + b"9" * (16 << 20), 2),  # a 16 MB count
        (b"0" * (16 << 20) + b"1\n", 0),  # a 16 MB version line (leading zeros: version 1)
        (b"0\n1\n" + b"a " * (8 << 20), 4),  # 8 M tokens on one line
        (b"0\n1\nt 0 " + b"0" * (16 << 20) + b"x\n", 4),  # a 16 MB number
    ],
)
def test_giant_lines_fail_fast_with_short_messages(data, offset):
    start = time.process_time()
    with pytest.raises(ParseError) as err:
        parse_offset_checkpoint(data, P)
    assert time.process_time() - start < 2.0
    assert err.value.offset == offset
    assert len(str(err.value)) < 600


def test_giant_version_with_leading_zeros_is_version_zero():
    cp = parse_offset_checkpoint(b"0" * (16 << 20) + b"\n1\nt 0 5\n", P)
    assert (cp.version, cp.entries) == (0, [("t", 0, 5)])
