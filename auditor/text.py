"""Text safe to print: control, bidi and invisible characters from the data written as visible escapes
(used by every renderer and by the one-line error messages)."""

from __future__ import annotations

import datetime as _dt
import functools
import re
from typing import Any

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

UNSAFE = re.compile(
    "["
    "\\x00-\\x1f\\x7f-\\x9f"  # C0 controls (ESC, NUL, newline...), DEL, C1 controls (CSI 0x9b...)
    "\\u061c\\u200b-\\u200f"  # Arabic letter mark; zero-width space/joiners, LRM, RLM
    "\\u2028-\\u202e"  # line/paragraph separators; bidi embeddings and overrides (LRE..RLO)
    "\\u2060-\\u2069"  # word joiner, invisible operators; bidi isolates (LRI, RLI, FSI, PDI)
    "\\ufeff\\ufff9-\\ufffb\\ufffe\\uffff"  # BOM/ZWNBSP, interlinear annotations, non-characters
    "\\ud800-\\udfff"  # lone surrogates (undecodable bytes of a file name, PEP 383)
    "]"
)
"""Characters never written raw to text, HTML or XML output."""


def _replacement(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape: show the original byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, bidi, invisible-format and surrogate character written as a visible
    escape (``\\x1b``, ``\\u202e``, ``\\n``; an undecodable file-name byte as ``\\xff``). The result is
    printable on a terminal and valid in XML 1.0 and HTML (after the usual ``&<>"`` escaping)."""
    if not UNSAFE.search(text):
        return text
    return UNSAFE.sub(_replacement, text)


def visible_data(value: Any) -> Any:
    """``value`` with :func:`visible` applied to every string in it (dict keys too, lists and tuples);
    other values unchanged. Returns the same object when nothing needed escaping."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        out: dict = {}
        changed = False
        for k, v in value.items():
            k2 = visible(k) if isinstance(k, str) else k
            v2 = visible_data(v) if isinstance(v, _CONTAINERS) else v
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [visible_data(v) if isinstance(v, _CONTAINERS) else v for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


_CONTAINERS = (str, dict, list, tuple)

BYTE_ENCODINGS = ("utf8", "base64")
"""The one encoding of bytes in every JSON output, named in the field beside the value (``keyEncoding``)."""


def encode_bytes(data: bytes | bytearray | memoryview, force_base64: bool = False) -> tuple[str, str]:
    """``(text, encoding)`` for raw bytes (a key, a value, a header value): the UTF-8 text and ``"utf8"``
    when ``data`` is valid UTF-8, else standard base64 with padding (RFC 4648 §4) and ``"base64"``."""
    if not force_base64:
        try:
            return str(data, "utf-8"), "utf8"
        except UnicodeDecodeError:
            pass
    import base64

    return base64.b64encode(data).decode("ascii"), "base64"


def decode_bytes(text: str, encoding: str) -> bytes:
    """The bytes :func:`encode_bytes` wrote as ``(text, encoding)``; a ValueError saying what is wrong
    (words to follow the field's name) when ``encoding`` is not one of :data:`BYTE_ENCODINGS` or ``text``
    is not what it names."""
    if encoding == "utf8":
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("holds a lone surrogate, which utf8 text cannot") from None
    if encoding == "base64":
        import base64
        import binascii

        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("is not valid base64") from None
    raise ValueError(f"names the encoding {encoding!r}, not one of {', '.join(BYTE_ENCODINGS)}")


_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
"""A snake_case name (``committed_hw``, ``hash_a``): the only keys :func:`camel` rewrites."""


@functools.lru_cache(maxsize=4096)
def camel(name: str) -> str:
    """The camelCase form of a snake_case name (``committed_hw`` -> ``committedHw``, ``ua_from`` ->
    ``uaFrom``), the one spelling of every key the JSON, JSONL and Parquet outputs hold. Any other key is
    returned as is: camelCase already, a broker id (``"1"``), anything with capitals or a leading ``_``."""
    if not _SNAKE.fullmatch(name):
        return name
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def iso_ms(ms: int | None, timespec: str = "seconds") -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC (``2026-01-01T02:00:00Z``; ``timespec="milliseconds"``
    keeps them); None, a negative value (Kafka's "none") or one out of range stays None."""
    import datetime as _dt

    if ms is None or ms < 0:
        return None
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def iso_time(ms: int) -> str:
    """Milliseconds since the epoch as ISO 8601 UTC with a ``Z``, to the second, with the milliseconds only
    when there are some (``2026-01-01T02:00:00Z``, ``2026-01-01T02:00:00.250Z``: the form of
    ``Finding.time``); exact (integer arithmetic, no float)."""
    moment = _EPOCH + _dt.timedelta(milliseconds=int(ms))
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    millis = int(ms) % 1000
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"
