"""Opening the files of a log directory for reading, safely: regular files only, never blocking.

A FIFO, socket or device named like a segment, index, snapshot or checkpoint (directly or through a
symlink) must never be opened: ``open(O_RDONLY)`` on a FIFO without a writer blocks forever, a tape device
rewinds on open. :func:`open_regular` stats the target first and refuses anything but a regular file, then
opens with ``O_NONBLOCK`` (so a file swapped for a FIFO between the two calls still cannot block) and checks
the opened descriptor again with ``fstat``.

Every reader of on-disk bytes in this project opens through this module.
"""

from __future__ import annotations

import os
import stat

from parsers.errors import ParseError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotRegularFile(ParseError, OSError):
    """The path is not a regular file (FIFO, socket, device, directory, dangling link).

    Both the project's parse error (file and byte offset 0) and an :class:`OSError` whose ``strerror`` is the
    reason, so that every reader's existing "cannot read this file" path reports it without a new branch.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = 0) -> None:
        super().__init__(message, path=path, offset=offset)
        self.strerror = message
        self.filename = path


def file_kind(mode: int) -> str:
    """A human name for a file type: ``"a regular file"``, ``"a FIFO (named pipe)"``, ``"a socket"`` ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def special_kind(mode: int) -> str | None:
    """The file type of ``mode`` when it is a special file (FIFO, socket, character or block device), else
    None (regular files, directories, symbolic links)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return None
    return file_kind(mode)


def regular_file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` (symlinks followed) cannot be read as a regular file, or None when it can."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "dangling symbolic link" if os.path.islink(path) else "no such file"
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISREG(st.st_mode):
        return None
    via = " (through a symbolic link)" if os.path.islink(path) else ""
    return f"is {file_kind(st.st_mode)}{via}, not a regular file"


def open_regular(path: str | os.PathLike) -> int:
    """A read-only descriptor of the regular file ``path``; :class:`NotRegularFile` for anything else.

    Never blocks on a FIFO and never opens a device. OS errors other than the file type (permissions,
    missing file) propagate as :class:`OSError`.
    """
    problem = regular_file_problem(path)
    if problem is not None and problem != "no such file":
        raise NotRegularFile(problem, path=os.fspath(path), offset=0)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(
                f"is {file_kind(st.st_mode)}, not a regular file",
                path=os.fspath(path),
                offset=0,
            )
        # back to blocking reads for the regular file (O_NONBLOCK has no effect on them, but be explicit)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(path: str | os.PathLike, buffering: int = -1):
    """:func:`open_regular` as a binary file object (``with open_regular_file(p) as fh: ...``)."""
    return os.fdopen(open_regular(path), "rb", buffering=buffering)


def read_regular(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """At most ``limit`` bytes (all when None) of the regular file ``path``."""
    with open_regular_file(path) as fh:
        return fh.read() if limit is None else fh.read(limit)


__all__ = [
    "NotRegularFile",
    "file_kind",
    "open_regular",
    "open_regular_file",
    "read_regular",
    "regular_file_problem",
    "special_kind",
]
