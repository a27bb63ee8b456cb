"""A finding's evidence (or any JSON-ready value) as readable fields for people: a label in words, the value
as text, nested objects as nested fields; never JSON.

Times kept as ms since the epoch (Kafka's record timestamps ``timestamp``, ``maxTimestamp``,
``firstTimestamp``...; points in time named ``...TimeMs``, ``...AtMs``, ``startMs``, ``endMs``) are shown
as ISO-8601 UTC with the stored value kept beside (:attr:`Field.raw`, the HTML page's ``title``). Durations
(``durationMs``, ``missingAfterMs``, ``lagDurationMs``...) stay numbers. Kafka's ``-1`` (no timestamp) and
any value outside years 1970-9999 stay as stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.text import iso_time as iso

MAX_EPOCH_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: a larger number in a time field is shown as stored."""
POINT_IN_TIME = re.compile(r"(^time$|^(start|end)Ms$|(Time|At|Start|End)Ms$|_(time|at)_ms$)")
"""Keys ending in ``Ms`` that name a point in time (the other ``...Ms`` keys are durations)."""
MAX_ITEMS = 50
"""A list shows at most this many items (the JSON report holds every one)."""


@dataclass(frozen=True)
class Field:
    """One field: ``label`` in words, ``key`` as stored, ``text`` the value as read, ``raw`` the value as
    stored when ``text`` differs (a time), ``fields`` the members of a nested object."""

    label: str
    key: str
    text: str = ""
    raw: str | None = None
    fields: tuple[Field, ...] = ()


def words(key: str) -> str:
    """``leaderHighWatermark`` -> ``leader high watermark``, ``lag_duration_ms`` -> ``lag duration (ms)``;
    a key that is not an identifier (a broker id, a path) as it is."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return key
    parts = [p for p in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", key) if p]
    out = [p if p.isupper() and len(p) > 1 else p.lower() for p in parts]
    if len(out) > 1 and out[-1] == "ms":
        out[-1] = "(ms)"
    return " ".join(out)


def is_time_key(key: str) -> bool:
    """Whether ``key`` names a point in time kept as ms since the epoch."""
    return key.lower().endswith(("timestamp", "timestamps")) or bool(POINT_IN_TIME.search(key))


def _epoch_ms(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_EPOCH_MS


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _item(value: Any, timed: bool) -> str:
    """One list item: a time, a pair or tuple as ``(a, b)``, else the scalar."""
    if timed and _epoch_ms(value):
        return iso(value)
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (dict, list, tuple)) for v in value):
        return "(" + ", ".join(_scalar(v) for v in value) + ")"
    return _scalar(value)


def field(key: Any, value: Any) -> Field:
    """The field of ``key``: ``value`` as text, or as nested fields (an object, a list of objects)."""
    key = str(key)
    label = words(key)
    timed = is_time_key(key)
    if isinstance(value, Mapping):
        return Field(label, key, "" if value else "none", fields=tuple(field(k, v) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        if not value:
            return Field(label, key, "none")
        shown = list(value[:MAX_ITEMS])
        more = f" … and {len(value) - MAX_ITEMS} more" if len(value) > MAX_ITEMS else ""
        if any(isinstance(v, Mapping) or _nested_list(v) for v in shown):
            members = tuple(field(f"#{i + 1}", v) for i, v in enumerate(shown))
            return Field(label, key, more.strip(" …"), fields=members)
        text = ", ".join(_item(v, timed) for v in shown) + more
        raw = ", ".join(_scalar(v) for v in shown) if timed and any(_epoch_ms(v) for v in shown) else None
        return Field(label, key, text, raw=raw)
    if timed and _epoch_ms(value):
        return Field(label, key, iso(value), raw=f"{value} ms since the epoch")
    return Field(label, key, _scalar(value))


def _nested_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, (Mapping, list, tuple)) for v in value)


def fields(values: Mapping[str, Any]) -> list[Field]:
    """Every key of ``values`` as a :class:`Field`, in order."""
    return [field(k, v) for k, v in values.items()]


__all__ = ["Field", "field", "fields", "is_time_key", "iso", "words"]
