"""The one exception every parser raises for bad input."""

from __future__ import annotations


class ParseError(Exception):
    """Input that does not decode as the Kafka format it claims to be.

    ``offset`` is the byte position in ``path`` where decoding stopped; parsers working on an
    in-memory buffer raise with buffer-relative offsets and callers re-anchor them with
    :meth:`at`.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset

    def at(self, path: str | None = None, base: int = 0) -> ParseError:
        """Return a copy naming ``path`` with the offset shifted by ``base`` (a buffer's file position)."""
        offset = None if self.offset is None else self.offset + base
        return ParseError(self.message, path=path or self.path, offset=offset)

    def __str__(self) -> str:
        where = self.path or "<buffer>"
        if self.offset is not None:
            return f"{where}: byte {self.offset}: {self.message}"
        return f"{where}: {self.message}"
