"""A read-only attribute that reads the same attribute of an object held by its owner: a partition's topic is
its leader replica's, a fact's code is its first finding's."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Forward(Generic[T]):
    """``topic = Forward[str]("leader.topic")``: ``obj.topic`` is ``obj.leader.topic``; read-only, like a
    property."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._get = attrgetter(path)

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]
        return self._get(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self._name} is read-only: it is {self._path}")
