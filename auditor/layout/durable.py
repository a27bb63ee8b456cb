"""Replacing a file atomically and durably: shared by the warehouse and by report files."""

from __future__ import annotations

import os


def write_and_replace(fd: int, tmp: str | os.PathLike, target: str | os.PathLike, text: str) -> None:
    """``text`` into the temporary file ``tmp`` open as ``fd`` (which this closes), fsynced, then renamed
    over ``target``; ``tmp`` is removed if any of it fails. Fsyncing the directory is the caller's."""
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
