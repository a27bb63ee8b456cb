"""``auditor.text``: the one encoding of bytes in JSON (both ways) and the one ISO form of a point in time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.text import decode_bytes, encode_bytes, iso_ms, iso_time


@given(st.binary(max_size=64), st.booleans())
def test_decode_bytes_inverts_encode_bytes(data, force):
    assert decode_bytes(*encode_bytes(data, force)) == data


@pytest.mark.parametrize(
    ("text", "encoding", "words"),
    [
        ("\ud800", "utf8", "lone surrogate"),
        ("not base64!", "base64", "not valid base64"),
        ("x", "hex", "hex"),
    ],
)
def test_decode_bytes_says_what_is_wrong(text, encoding, words):
    with pytest.raises(ValueError, match=words):
        decode_bytes(text, encoding)


@given(st.integers(0, 253_402_300_799_999))
def test_iso_time_is_exact_and_shows_milliseconds_only_when_there_are_some(ms):
    text = iso_time(ms)
    assert text.endswith("Z") and ("." in text) == bool(ms % 1000)
    if ms < 4_102_444_800_000:  # before 2100 iso_ms, which goes through a float, is exact to the millisecond
        assert iso_ms(ms, "milliseconds") == (text if ms % 1000 else text[:-1] + ".000Z")
