"""Rows of the extract as the dataclasses of :mod:`auditor.rules.replica.model`: each field is read under
its own name and converted by its declared type, said once for every class (:func:`from_row`,
:class:`FromRow`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any, TypeVar

from auditor.findings import optional_int

T = TypeVar("T")
Row = Mapping[str, Any]
Reader = Callable[[Row, str], Any]

READERS: dict[str, Reader] = {
    "int": lambda row, k: int(row[k]),
    "int | None": lambda row, k: optional_int(row.get(k)),
    "str": lambda row, k: row[k],
    "str | None": lambda row, k: row.get(k),
    "Any": lambda row, k: row.get(k),
    "bool | None": lambda row, k: None if row.get(k) is None else bool(row[k]),
    "list[int]": lambda row, k: [int(v) for v in row[k]],
    "list[int] | None": lambda row, k: None if row.get(k) is None else [int(v) for v in row[k]],
    "tuple[int, ...]": lambda row, k: tuple(int(v) for v in row.get(k) or ()),
}
"""How a field of each declared type is read from a row: a required field must be there, an optional one
(``| None``) may be absent or null."""


def _reader(f: Field) -> Reader | None:
    if f.type == "int" and f.default is not MISSING:
        return lambda row, k, default=f.default: int(row.get(k) or default)  # a count the row may omit
    return READERS.get(str(f.type))


@cache
def _plan(cls: type) -> tuple[tuple[str, Reader | None], ...]:
    return tuple((f.name, _reader(f)) for f in fields(cls))


def from_row(cls: type[T], row: Row, **given: Any) -> T:
    """A ``cls`` whose fields are read from ``row`` by their declared types (:data:`READERS`; an ``int``
    field with a default takes it when the row has no value), except those ``given`` (a field of another
    type must be)."""
    values = dict(given)
    for name, read in _plan(cls):
        if name in given:
            continue
        if read is None:
            raise TypeError(f"{cls.__name__}.{name}: no reader for its type, it must be given")
        values[name] = read(row, name)
    return cls(**values)


class FromRow:
    """A dataclass built from a row of the extract by :func:`from_row`; a subclass names the fields its row
    does not hold under their own name and type in :meth:`given`."""

    @classmethod
    def from_row(cls: type[T], row: Row) -> T:
        return from_row(cls, row, **cls.given(row))  # type: ignore[attr-defined]

    @classmethod
    def given(cls, row: Row) -> dict[str, Any]:
        """The fields of ``cls`` that are not read from ``row`` by their declared type."""
        return {}
