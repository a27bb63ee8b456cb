"""Kafka's generated-message encoding (spec §14.3), driven by declarative schema tables.

A schema is written like Kafka's own ``*.json`` message definitions::

    TopicRecord = Message("TopicRecord", valid="0", flexible="0+", api_key=2, fields=[
        Field("Name", "string"),
        Field("TopicId", "uuid"),
    ])

and :func:`decode_message` / :func:`encode_message` interpret it. In *flexible* versions strings, bytes and
arrays carry ``uvarint(length + 1)`` (``0`` = null) and every struct ends with a tagged-field section
(``uvarint count``, then ``uvarint tag``, ``uvarint size``, value); in other versions strings carry an int16
length, bytes and arrays an int32 length (``-1`` = null) and there are no tags.

Decoded values are plain dicts keyed by Kafka's JSON field names (the schema name with its first letter
lower-cased, as ``kafka-dump-log`` prints them), in declaration order:

* uuid → Kafka's base64url text (22 characters); bytes → **standard base64 with padding**, which is what
  Kafka's JSON converters print (Jackson ``BinaryNode``); bool → ``True``/``False``; float64 → ``float``;
* like Kafka's JSON converters, a tagged field is present in the dict only when it differs from its default;
  for a tagged struct that is its default-constructed struct (:func:`tag_default`), so a null one is present
  (``None``) and written, as Kafka's generated code does;
* tags this schema does not know are kept (Kafka skips them) under ``"_unknownTaggedFields"`` as
  ``[{"tag": N, "data": "<hex>"}]`` and written back by :func:`encode_message`;
* strings are decoded as UTF-8 with U+FFFD replacement, as Java's ``new String(bytes, UTF_8)`` does.

Decoding checks what Kafka's generated readers check (non-nullable nulls, string lengths above 0x7fff,
collections larger than the remaining bytes, tags not valid for the version) and, in addition, that a known
tagged field's value fills exactly its declared size. Errors are :class:`ParseError` with the byte offset.
Encoding problems (values of the wrong type or range, unknown keys) raise :class:`ValueError`.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from parsers.errors import ParseError
from parsers.primitives import ZERO_UUID, encode_uvarint, read_uvarint, uuid_from_str, uuid_to_str

__all__ = [
    "UNKNOWN_TAGS",
    "Field",
    "Message",
    "Versions",
    "decode_message",
    "decode_exact",
    "encode_message",
    "default_value",
    "tag_default",
]

UNKNOWN_TAGS = "_unknownTaggedFields"
"""Key under which tags unknown to the schema are reported (never printed by Kafka's JSON converters)."""

_MAX_STRING = 0x7FFF
_NO_DEFAULT: Any = object()

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_PRIMITIVES = frozenset([*_FIXED, "bool", "uuid", "string", "bytes"])
_VARIABLE = frozenset(["string", "bytes"])


# ---------------------------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Versions:
    """A version range as Kafka writes it: ``"0+"``, ``"1-3"``, ``"2"`` or ``"none"``."""

    low: int
    high: int | None  # None = open-ended

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        text = (text or "none").strip()
        if text == "none":
            return cls(0, -1)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return version >= self.low and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f"{self.low}+"
        if self.high < self.low:
            return "none"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True)
class Field:
    """One field of a message or struct, as in Kafka's JSON schema.

    ``type`` is a primitive (``int8 int16 uint16 int32 uint32 int64 float64 bool uuid string bytes``), an
    array ``[]T`` of a primitive or of a struct, or a struct name; struct types list their ``fields``.
    ``tag`` makes the field tagged in ``tagged`` versions (default: all its ``versions``).
    ``default`` is the value Kafka assumes when the field is absent (``None`` = null); without one the
    type's zero value is used. ``ignorable`` fields may hold a value in versions that lack them when encoding.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str | None = None
    tag: int | None = None
    tagged: str | None = None
    default: Any = _NO_DEFAULT
    ignorable: bool = False
    fields: Sequence[Field] = ()
    json_name: str = field(init=False, repr=False, compare=False)
    is_array: bool = field(init=False, repr=False, compare=False)
    element: str = field(init=False, repr=False, compare=False)
    """The element type of an array, or the type itself; ``"struct"`` for struct types."""
    _versions: Versions = field(init=False, repr=False, compare=False)
    _tagged: Versions = field(init=False, repr=False, compare=False)
    _nullable: Versions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "fields", tuple(self.fields))
        is_array = self.type.startswith("[]")
        base = self.type[2:] if is_array else self.type
        if base not in _PRIMITIVES and not self.fields:
            raise ValueError(f"field {self.name}: struct type {base} needs fields")
        setattr_(self, "is_array", is_array)
        setattr_(self, "element", base if base in _PRIMITIVES else "struct")
        setattr_(self, "json_name", self.name[:1].lower() + self.name[1:])
        setattr_(self, "_versions", Versions.parse(self.versions))
        tagged = self.tagged if self.tagged is not None or self.tag is None else self.versions
        setattr_(self, "tagged", tagged)
        setattr_(self, "_tagged", Versions.parse(tagged))
        setattr_(self, "_nullable", Versions.parse(self.nullable))

    def present_in(self, version: int) -> bool:
        return version in self._versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self._tagged

    def nullable_in(self, version: int) -> bool:
        return version in self._nullable


@dataclass(frozen=True)
class Message:
    """A top-level message: its valid and flexible version ranges and its fields."""

    name: str
    valid: str
    flexible: str
    fields: Sequence[Field] = ()
    api_key: int | None = None
    _valid: Versions = field(init=False, repr=False, compare=False)
    _flexible: Versions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_valid", Versions.parse(self.valid))
        object.__setattr__(self, "_flexible", Versions.parse(self.flexible))
        _check_tags(self.name, self.fields, self._flexible)

    def supports(self, version: int) -> bool:
        return version in self._valid

    def is_flexible(self, version: int) -> bool:
        return version in self._flexible

    @property
    def newest(self) -> int:
        """The highest valid version (``-1`` if none is bounded)."""
        return self._valid.high if self._valid.high is not None else -1


def _check_tags(owner: str, fields: Iterable[Field], flexible: Versions) -> None:
    """Tags are unique within a struct and used only in flexible versions (Kafka's generator checks both)."""
    seen: set[int] = set()
    for f in fields:
        if f.tag is not None:
            if f.tag in seen:
                raise ValueError(f"{owner}: duplicate tag {f.tag}")
            seen.add(f.tag)
            tagged = f._tagged
            if tagged.high is None or tagged.high >= tagged.low:  # not "none"
                inside = tagged.low >= flexible.low and (
                    flexible.high is None or (tagged.high is not None and tagged.high <= flexible.high))
                if not inside:
                    raise ValueError(f"{owner}.{f.name}: tagged versions {tagged} are not a subset of the "
                                     f"flexible versions {flexible}")
        if f.fields:
            _check_tags(f"{owner}.{f.name}", f.fields, flexible)


# -------------------------------------------------------------------------------------------- defaults


def default_value(f: Field, version: int) -> Any:
    """The value Kafka gives ``f`` when it is absent (untagged and not in this version, or tag omitted)."""
    if f.default is not _NO_DEFAULT:
        return list(f.default) if isinstance(f.default, list) else f.default
    if f.is_array:
        return []
    kind = f.element
    if kind in _FIXED:
        return 0.0 if kind == "float64" else 0
    if kind == "bool":
        return False
    if kind == "uuid":
        return ZERO_UUID
    if kind in _VARIABLE:
        return ""
    return _default_struct(f.fields, version)


def tag_default(f: Field, version: int) -> Any:
    """The value at which Kafka leaves a tagged field out (of the bytes and of its JSON): its default, but
    for a struct the default-constructed struct whatever its declared default (the generated ``write``
    compares with ``new Struct()``: a null struct, e.g. ConsumerGroupMemberMetadataValue's
    ClassicMemberMetadata, is written as tag, size 1, null)."""
    if f.element == "struct" and not f.is_array:
        return _default_struct(f.fields, version)
    return default_value(f, version)


def _default_struct(fields: Sequence[Field], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if f.present_in(version) and not f.tagged_in(version):
            out[f.json_name] = default_value(f, version)
    return out


# --------------------------------------------------------------------------------------------- decoding


class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int, end: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise ParseError(f"{what}: needs {n} byte(s), only {self.end - self.pos} remain", offset=self.pos)
        start = self.pos
        self.pos += n
        return self.buf[start : self.pos]

    def fixed(self, kind: str, what: str) -> Any:
        s = _FIXED[kind]
        if s.size > self.end - self.pos:
            raise ParseError(f"{what}: needs {s.size} byte(s) for {kind}, only {self.end - self.pos} remain",
                             offset=self.pos)
        value = s.unpack_from(self.buf, self.pos)[0]
        self.pos += s.size
        return value

    def uvarint(self, what: str) -> int:
        try:
            value, pos = read_uvarint(self.buf, self.pos)
        except ParseError as exc:
            raise ParseError(f"{what}: {exc.message}", offset=exc.offset) from None
        if pos > self.end:
            raise ParseError(f"{what}: varint runs past the end of its field", offset=self.pos)
        self.pos = pos
        return value


def decode_message(message: Message, version: int, buf: bytes | bytearray | memoryview, pos: int = 0,
                   end: int | None = None) -> tuple[dict[str, Any], int]:
    """Decode ``message`` at ``version`` from ``buf[pos:end]``; return (dict, position after it).

    Offsets in errors are positions in ``buf``.
    """
    if not isinstance(buf, bytes):
        buf = bytes(buf)
    end = len(buf) if end is None else min(end, len(buf))
    if not message.supports(version):
        raise ParseError(f"Can't read version {version} of {message.name}", offset=pos)
    reader = _Reader(buf, pos, end)
    data = _read_struct(reader, message.fields, version, message.is_flexible(version), message.name)
    return data, reader.pos


def decode_exact(message: Message, version: int, buf: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode ``buf`` as exactly one ``message``; trailing bytes are an error."""
    data, pos = decode_message(message, version, buf)
    if pos != len(buf):
        raise ParseError(f"Found {len(buf) - pos} byte(s) of garbage after {message.name}", offset=pos)
    return data


def _read_struct(r: _Reader, fields: Sequence[Field], version: int, flexible: bool, where: str) -> dict:
    values: dict[str, Any] = {}
    for f in fields:
        if f.present_in(version) and not f.tagged_in(version):
            values[f.json_name] = _read_field(r, f, version, flexible, f"{where}.{f.name}")
    unknown: list[dict[str, Any]] = []
    if flexible:
        count = r.uvarint(f"{where}: tagged field count")
        by_tag = {f.tag: f for f in fields if f.tag is not None and f.present_in(version)}
        for _ in range(count):
            tag = r.uvarint(f"{where}: tag")
            size = r.uvarint(f"{where}: size of tag {tag}")
            if size > r.remaining():
                raise ParseError(f"{where}: tag {tag} claims {size} byte(s), only {r.remaining()} remain",
                                 offset=r.pos)
            f = by_tag.get(tag)
            if f is None:
                unknown.append({"tag": tag, "data": r.take(size, f"{where}: tag {tag}").hex()})
                continue
            if not f.tagged_in(version):
                raise ParseError(f"{where}: Tag {tag} is not valid for version {version}", offset=r.pos)
            sub = _Reader(r.buf, r.pos, r.pos + size)
            value = _read_field(sub, f, version, True, f"{where}.{f.name}", tagged=True)
            if sub.pos != sub.end:
                raise ParseError(f"{where}.{f.name}: tagged value uses {sub.pos - r.pos} of its "
                                 f"{size} byte(s)", offset=sub.pos)
            r.pos = sub.end
            values[f.json_name] = value
    # Declaration order, like Kafka's JSON; tagged fields only when not at their tag_default.
    out: dict[str, Any] = {}
    for f in fields:
        name = f.json_name
        if not f.tagged_in(version):
            if name in values:
                out[name] = values[name]
            continue
        if not f.present_in(version):
            continue
        value = values.get(name, default_value(f, version))
        if value != tag_default(f, version):
            out[name] = value
    if unknown:
        out[UNKNOWN_TAGS] = unknown
    return out


def _read_field(r: _Reader, f: Field, version: int, flexible: bool, where: str, tagged: bool = False) -> Any:
    nullable = f.nullable_in(version)
    if f.is_array:
        n = _read_length(r, "array", flexible, where)
        if n < 0:
            if not nullable:
                raise ParseError(f"non-nullable field {where} was serialized as null", offset=r.pos)
            return None
        if n > r.remaining():
            raise ParseError(f"{where}: Tried to allocate a collection of size {n}, but there are only "
                             f"{r.remaining()} bytes remaining.", offset=r.pos)
        kind = f.element
        if kind == "struct":
            return [_read_struct(r, f.fields, version, flexible, f"{where}[{i}]") for i in range(n)]
        return [_read_value(r, kind, False, flexible, f"{where}[{i}]") for i in range(n)]
    if f.element == "struct":
        if nullable:
            # Kafka: a tagged nullable struct starts with uvarint (0 = null), an untagged one with int8 (<0).
            is_null = r.uvarint(where) <= 0 if tagged else r.fixed("int8", where) < 0
            if is_null:
                return None
        return _read_struct(r, f.fields, version, flexible, where)
    return _read_value(r, f.element, nullable, flexible, where)


def _read_length(r: _Reader, kind: str, flexible: bool, where: str) -> int:
    if flexible:
        return r.uvarint(f"{where}: length") - 1
    return r.fixed("int16" if kind == "string" else "int32", f"{where}: length")


def _read_value(r: _Reader, kind: str, nullable: bool, flexible: bool, where: str) -> Any:
    if kind in _FIXED:
        return r.fixed(kind, where)
    if kind == "bool":
        return r.take(1, where)[0] != 0
    if kind == "uuid":
        return uuid_to_str(r.take(16, where))
    n = _read_length(r, kind, flexible, where)
    if n < 0:
        if not nullable:
            raise ParseError(f"non-nullable field {where} was serialized as null", offset=r.pos)
        return None
    if kind == "string":
        if n > _MAX_STRING:
            raise ParseError(f"string field {where} had invalid length {n}", offset=r.pos)
        return r.take(n, where).decode("utf-8", errors="replace")
    return base64.b64encode(r.take(n, where)).decode("ascii")


# --------------------------------------------------------------------------------------------- encoding


def encode_message(message: Message, version: int, data: Mapping[str, Any]) -> bytes:
    """Encode ``data`` (a dict shaped like :func:`decode_message`'s output) as ``message`` at ``version``.

    Missing keys take their defaults; tagged fields equal to their default are omitted, as Kafka does.
    """
    if not message.supports(version):
        raise ValueError(f"Can't write version {version} of {message.name}")
    out = bytearray()
    _write_struct(out, message.fields, version, message.is_flexible(version), data, message.name)
    return bytes(out)


def _write_struct(out: bytearray, fields: Sequence[Field], version: int, flexible: bool,
                  data: Mapping[str, Any], where: str) -> None:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a dict, got {type(data).__name__}")
    known = {f.json_name: f for f in fields}
    for key in data:
        if key != UNKNOWN_TAGS and key not in known:
            raise ValueError(f"{where}: unknown field {key!r}")
    tags: list[tuple[int, bytes]] = []
    for f in fields:
        name = f.json_name
        if not f.present_in(version):
            if name in data and not f.ignorable and data[name] != default_value(f, version):
                raise ValueError(f"{where}.{f.name} is not in version {version} and is not ignorable")
            continue
        value = data.get(name, default_value(f, version))
        if f.tagged_in(version):
            if value != tag_default(f, version):
                buf = bytearray()
                _write_field(buf, f, version, True, value, f"{where}.{f.name}", tagged=True)
                tags.append((f.tag, bytes(buf)))  # type: ignore[arg-type]
        else:
            _write_field(out, f, version, flexible, value, f"{where}.{f.name}")
    unknown = data.get(UNKNOWN_TAGS) or []
    if not flexible:
        if tags or unknown:
            raise ValueError(f"{where}: tagged fields need a flexible version, {version} is not")
        return
    for item in unknown:
        try:
            tags.append((int(item["tag"]), bytes.fromhex(item["data"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: bad {UNKNOWN_TAGS} entry {item!r}") from exc
    tags.sort(key=lambda t: t[0])
    out += encode_uvarint(len(tags))
    for tag, body in tags:
        out += encode_uvarint(tag)
        out += encode_uvarint(len(body))
        out += body


def _write_field(out: bytearray, f: Field, version: int, flexible: bool, value: Any, where: str,
                 tagged: bool = False) -> None:
    nullable = f.nullable_in(version)
    if value is None and (f.is_array or f.element != "struct"):
        if not nullable:
            raise ValueError(f"{where} is not nullable in version {version}")
        _write_length(out, "array" if f.is_array else f.element, flexible, -1)
        return
    if f.is_array:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
        items = list(value)
        _write_length(out, "array", flexible, len(items))
        for i, item in enumerate(items):
            if f.element == "struct":
                _write_struct(out, f.fields, version, flexible, item, f"{where}[{i}]")
            else:
                _write_value(out, f.element, False, flexible, item, f"{where}[{i}]")
        return
    if f.element == "struct":
        if nullable:
            if value is None:
                out += encode_uvarint(0) if tagged else b"\xff"
                return
            out += encode_uvarint(1) if tagged else b"\x01"
        elif value is None:
            raise ValueError(f"{where} is not nullable in version {version}")
        _write_struct(out, f.fields, version, flexible, value, where)
        return
    _write_value(out, f.element, nullable, flexible, value, where)


def _write_length(out: bytearray, kind: str, flexible: bool, n: int) -> None:
    if flexible:
        out += encode_uvarint(n + 1)
    else:
        out += _FIXED["int16" if kind == "string" else "int32"].pack(n)


def _write_value(out: bytearray, kind: str, nullable: bool, flexible: bool, value: Any, where: str) -> None:
    if value is None:
        if not nullable:
            raise ValueError(f"{where} is not nullable")
        _write_length(out, kind, flexible, -1)
        return
    try:
        if kind in _FIXED:
            if kind == "float64":
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise TypeError(f"not a number: {value!r}")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"not an integer: {value!r}")
            out += _FIXED[kind].pack(value)
        elif kind == "bool":
            if not isinstance(value, bool):
                raise TypeError(f"not a bool: {value!r}")
            out.append(1 if value else 0)
        elif kind == "uuid":
            out += uuid_from_str(value)
        elif kind == "string":
            raw = value.encode("utf-8")
            if len(raw) > _MAX_STRING:
                raise ValueError(f"string of {len(raw)} bytes is longer than {_MAX_STRING}")
            _write_length(out, kind, flexible, len(raw))
            out += raw
        else:  # bytes: base64 text (as decoded) or raw bytes
            raw = bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else \
                base64.b64decode(value, validate=True)
            _write_length(out, kind, flexible, len(raw))
            out += raw
    except (TypeError, ValueError, AttributeError, struct.error, binascii.Error, ParseError) as exc:
        raise ValueError(f"{where}: cannot encode {value!r} as {kind}: {exc}") from None
