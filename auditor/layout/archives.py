"""Reading the members of a capture archive (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``) in memory, never
extracting anything to disk, with bounded work and memory whatever the archive holds.

:func:`read_archive` takes the archive's bytes and yields a :class:`Member` for every regular file the
caller wants, and a :class:`Refusal` for every entry it will not read:

* names that are absolute (``/x``, ``\\x``, ``C:/x``), hold a ``..`` component or a NUL character;
* symbolic and hard links, character and block devices, FIFOs, GNU sparse files, other special entries;
* encrypted zip entries; a wanted member larger than :attr:`ArchiveLimits.max_member_bytes` (declared size,
  and for zip also the bytes actually inflated, read in chunks and stopped at the cap);
* when the bytes decompressed from the archive would pass :attr:`ArchiveLimits.max_total_bytes`, or its
  entries :attr:`ArchiveLimits.max_members`: one refusal naming the entry where reading stopped, then nothing
  more;
* a corrupt or truncated archive: ``Refusal("", "corrupt archive: ...")``, then nothing more (a zip entry
  whose data is corrupt is refused alone: the other entries of a zip are independent of it).

Directories are skipped silently; entries the caller does not want are skipped unread (a tar stream still
inflates them to reach the next header, which counts towards the expansion cap). Tar archives are read as a
stream (``tarfile`` mode ``r|``) over an inflating reader of this module: gzip, bzip2 and xz are decompressed
here in bounded steps (``max_length``), so a bomb is stopped at the cap before its bytes exist; the size of
tar extension headers (pax, GNU long names) is checked before ``tarfile`` reads them. Zip archives are read
with ``zipfile`` over the bytes (random access: unwanted entries are never inflated).
"""

from __future__ import annotations

import bz2
import calendar
import io
import lzma
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
"""Names read as archives (case-insensitive)."""

MiB = 1 << 20
GiB = 1 << 30

_T = TypeVar("_T")


def is_archive(name: str) -> bool:
    """Whether ``name`` ends with one of :data:`ARCHIVE_SUFFIXES` (case-insensitive)."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class ArchiveLimits:
    """Bounds on the work one archive may cause.

    * ``max_members`` (1,000,000): entries of any kind. A capture of 20,000 partitions has ~40,000 small
      files; a nightly archive of a 25-broker fleet stays well below a million, while each entry costs a
      header parse.
    * ``max_member_bytes`` (64 MiB): a wanted member is read whole into memory (about twice its size at the
      peak). The largest real checkpoint files are a few MB (an offset checkpoint of 100,000 partitions is
      ~4 MB); 64 MiB leaves room for any real fleet and bounds one executor's memory.
    * ``max_total_bytes`` (2 GiB): bytes decompressed from one archive, wanted members or not (the expansion
      cap). A month of one broker's small files is far below it; a bomb stops here, after a few seconds of
      gzip inflating (bzip2 and xz inflate more slowly), instead of filling the memory of a Spark executor.
    """

    max_members: int = 1_000_000
    max_member_bytes: int = 64 * MiB
    max_total_bytes: int = 2 * GiB


@dataclass(frozen=True)
class Member:
    """A regular file read from an archive: ``name`` is its normalised relative POSIX path (no leading ``./``,
    no empty or ``.`` components), ``mtime_ms`` its modification time (UTC epoch ms)."""

    name: str
    mtime_ms: int
    data: bytes


@dataclass(frozen=True)
class Refusal:
    """An archive entry that was not read: ``name`` as stored in the archive ("" for the archive itself) and
    why (one line)."""

    name: str
    reason: str


class _Stop(Exception):
    """Reading the archive ends with this refusal."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.refusal = Refusal(name, reason)


class _Corrupt(Exception):
    """The compressed stream is damaged or truncated."""


_DRIVE = re.compile(r"[A-Za-z]:[/\\]")
_CHUNK = MiB


def _too_many(limits: ArchiveLimits) -> str:
    return f"more than {limits.max_members} entries (max_members): reading stopped here"


def _expands(limits: ArchiveLimits) -> str:
    return f"archive expands beyond {limits.max_total_bytes} bytes (max_total_bytes): reading stopped here"


def _one_line(text: object, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit] + "..."


def _attempt(
    step: Callable[..., _T], *args: Any, name: str = "", what: str = "corrupt archive", where: str = ""
) -> _T | Refusal:
    """``step(*args)``, or the refusal it ends in: a :class:`_Stop`'s own, else ``Refusal(name, "<what>:
    <the error><where>")`` (``where``: e.g. `` (in x.log)``)."""
    try:
        return step(*args)
    except _Stop as stop:
        return stop.refusal
    except Exception as exc:
        return Refusal(name, f"{what}: {_one_line(exc)}{where}")


def _unsafe_name(name: str) -> str | None:
    """Why an entry name is refused (absolute, ``..``, NUL), or None."""
    if "\x00" in name:
        return "name contains a NUL character"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "absolute name"
    if ".." in re.split(r"[/\\]", name):
        return "name has a '..' component"
    return None


def _normalised(name: str) -> str:
    """The relative POSIX path of a safe name, empty and ``.`` components dropped: ``./a//b/`` is ``a/b``."""
    return "/".join(part for part in name.split("/") if part not in ("", "."))


def read_archive(
    name: str,
    data: bytes,
    wanted: Callable[[str], bool],
    limits: ArchiveLimits = ArchiveLimits(),
) -> Iterator[Member | Refusal]:
    """The wanted members of the archive ``name`` (its bytes ``data``) and refusals (module docstring), in
    archive order. Never raises for bad input: a damaged archive ends with one refusal. ``wanted`` is called
    with the normalised name of each regular file."""
    if name.lower().endswith(".zip") or data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        yield from _read_zip(data, wanted, limits)
    else:
        yield from _read_tar(data, wanted, limits)


# ------------------------------------------------------------------------------------------------- tar


class _Inflating(io.RawIOBase):
    """The tar stream inside ``data``: raw, or gzip/bzip2/xz (several concatenated streams allowed) inflated
    in steps of at most the size asked for. Producing more than ``limits.max_total_bytes`` (plus ``slack``
    for ``tarfile``'s read-ahead) raises :class:`_Stop` naming ``last_entry()``."""

    def __init__(self, data: bytes, limits: ArchiveLimits, slack: int, last_entry: Callable[[], str]) -> None:
        super().__init__()
        self._src = memoryview(data)
        self._pos = 0
        self._limits = limits
        self._cap = limits.max_total_bytes + slack
        self._last_entry = last_entry
        self.total = 0
        self._codec = self._detect(data)
        self._dec = self._new_decompressor() if self._codec else None
        self._done = False

    @staticmethod
    def _detect(data: bytes) -> str | None:
        if data[:2] == b"\x1f\x8b":
            return "gzip"
        if data[:3] == b"BZh":
            return "bzip2"
        if data[:6] == b"\xfd7zXZ\x00":
            return "xz"
        return None

    def _new_decompressor(self):
        if self._codec == "gzip":
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        if self._codec == "bzip2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)

    def readable(self) -> bool:
        return True

    def _count(self, chunk: bytes) -> bytes:
        self.total += len(chunk)
        if self.total > self._cap:
            raise _Stop(self._last_entry(), _expands(self._limits))
        return chunk

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._cap + 1 - self.total  # never more than the cap allows
        if self._dec is None:
            chunk = bytes(self._src[self._pos : self._pos + min(size, self._cap + 1 - self.total)])
            self._pos += len(chunk)
            return self._count(chunk)
        parts: list[bytes] = []
        wanted = size
        while wanted > 0 and not self._done:
            out = self._count(self._inflate(wanted))
            parts.append(out)
            wanted -= len(out)
        return b"".join(parts)

    def _inflate(self, size: int) -> bytes:
        """Up to ``size`` inflated bytes (possibly none while input is consumed)."""
        dec = self._dec
        if dec.eof:
            rest = bytes(dec.unused_data) + bytes(self._src[self._pos :])
            if not rest.strip(b"\x00"):  # padding after the last stream
                self._done = True
                return b""
            self._src, self._pos = memoryview(rest), 0
            dec = self._dec = self._new_decompressor()
        if isinstance(dec, bz2.BZ2Decompressor | lzma.LZMADecompressor):
            feed = self._next_input() if dec.needs_input else b""
        else:
            feed = dec.unconsumed_tail or self._next_input()
        out = dec.decompress(feed, size)
        if not out and not feed and not dec.eof:
            raise _Corrupt(f"truncated {self._codec} stream")
        return out

    def _next_input(self) -> bytes:
        chunk = bytes(self._src[self._pos : self._pos + 65536])
        self._pos += len(chunk)
        return chunk


_LINK_TYPES = {tarfile.SYMTYPE: "symbolic link", tarfile.LNKTYPE: "hard link"}
_DEVICE_TYPES = {
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "FIFO",
}


def _guarded_tarinfo(limits: ArchiveLimits, ending: list[str]) -> type[tarfile.TarInfo]:
    """A TarInfo class for one archive: extension headers (pax, GNU long names) larger than
    ``max_member_bytes`` and GNU sparse members stop the reading before ``tarfile`` reads them; how the
    header sequence ended is recorded in ``ending`` (an end-of-archive block or not)."""

    class GuardedTarInfo(tarfile.TarInfo):
        @classmethod
        def frombuf(cls, buf, encoding, errors):
            try:
                return super().frombuf(buf, encoding, errors)
            except tarfile.EOFHeaderError:
                ending.append("end-of-archive block")
                raise
            except tarfile.EmptyHeaderError:
                ending.append("no end-of-archive blocks (truncated)")
                raise
            except tarfile.TruncatedHeaderError:
                ending.append("truncated header")
                raise
            except tarfile.InvalidHeaderError as exc:
                ending.append(f"invalid header ({exc})")
                raise

        def _proc_gnulong(self, tarfile_):
            self._check_extension(tarfile_)
            return super()._proc_gnulong(tarfile_)

        def _proc_pax(self, tarfile_):
            self._check_extension(tarfile_)
            return super()._proc_pax(tarfile_)

        def _proc_sparse(self, tarfile_):
            raise _Stop(self.name, "GNU sparse member (not a capture file): reading stopped here")

        def _proc_gnusparse_10(self, next_, pax_headers, tarfile_):
            raise _Stop(next_.name, "GNU sparse member (not a capture file): reading stopped here")

        def _check_extension(self, tarfile_) -> None:
            if self.size > limits.max_member_bytes:
                raise _Stop(
                    self.name,
                    f"extension header of {self.size} bytes exceeds {limits.max_member_bytes} "
                    "(max_member_bytes): reading stopped here",
                )

    return GuardedTarInfo


def _read_tar(
    data: bytes, wanted: Callable[[str], bool], limits: ArchiveLimits
) -> Iterator[Member | Refusal]:
    last = [""]
    ending: list[str] = []

    def opened() -> tarfile.TarFile:  # opened here to report a failure as a refusal; closed by the ``with``
        stream = _Inflating(data, limits, 4 * tarfile.RECORDSIZE, lambda: last[0])
        return tarfile.open(fileobj=stream, mode="r|", tarinfo=_guarded_tarinfo(limits, ending))

    archive = _attempt(opened)
    if isinstance(archive, Refusal):
        yield archive
        return
    with archive:
        yield from _tar_entries(archive, wanted, limits, last, ending)


def _picked(
    name: str,
    refusal: Refusal | None,
    wanted: Callable[[str], bool],
    size: int,
    limits: ArchiveLimits,
    too_large: str,
) -> Generator[Refusal, None, str | None]:
    """Returns the normalised path of an entry to read, else None, after yielding its refusal if it is
    refused (none for an entry skipped silently: a directory, or one ``wanted`` does not take).
    ``too_large``: the refusal of an entry over ``max_member_bytes`` (formatted with ``size``, ``limit``)."""
    if refusal is not None:
        if refusal.reason:
            yield refusal
        return None
    path = _normalised(name)
    if not wanted(path):
        return None
    if size > limits.max_member_bytes:
        yield Refusal(name, too_large.format(size=size, limit=limits.max_member_bytes))
        return None
    return path


_TAR_TOO_LARGE = "{size} bytes exceed {limit} (max_member_bytes)"
_ZIP_TOO_LARGE = "declared size {size} bytes exceeds {limit} (max_member_bytes)"


def _tar_entries(
    archive: tarfile.TarFile,
    wanted: Callable[[str], bool],
    limits: ArchiveLimits,
    last: list[str],
    ending: list[str],
) -> Iterator[Member | Refusal]:
    """The entries of an open tar stream (``last[0]``: the latest entry's name, for the refusals of the
    inflating reader; ``ending``: how the header sequence ended, see :func:`_guarded_tarinfo`)."""
    count = 0
    while True:
        info = _attempt(_next_entry, archive, where=f" (after {last[0] or 'the start'})")
        if isinstance(info, Refusal):
            yield info
            return
        if info is None:
            if ending and ending[-1] != "end-of-archive block":
                yield Refusal("", f"corrupt archive: {ending[-1]} after {last[0] or 'the start'}")
            return
        count += 1
        last[0] = info.name
        if count > limits.max_members:
            yield Refusal(info.name, _too_many(limits))
            return
        has_data = info.isreg() or info.type not in tarfile.SUPPORTED_TYPES
        if has_data and info.offset_data + info.size > limits.max_total_bytes:
            yield Refusal(info.name, _expands(limits))
            return
        path = yield from _picked(info.name, _tar_refusal(info), wanted, info.size, limits, _TAR_TOO_LARGE)
        if path is None:
            continue
        content = _attempt(_read_tar_member, archive, info, where=f" (in {info.name})")
        if isinstance(content, Refusal):
            yield content
            return
        yield Member(path, int(info.mtime * 1000), content)


def _next_entry(archive: tarfile.TarFile) -> tarfile.TarInfo | None:
    info = archive.next()
    archive.members.clear()  # a stream is read once: keep no TarInfo per entry
    return info


def _tar_refusal(info: tarfile.TarInfo) -> Refusal | None:
    """A refusal for an entry that is not read (reason "" for a directory: skipped silently), or None."""
    unsafe = _unsafe_name(info.name)
    if unsafe is not None:
        return Refusal(info.name, unsafe)
    if info.type in _LINK_TYPES:
        return Refusal(info.name, f"{_LINK_TYPES[info.type]} to {_one_line(repr(info.linkname), 200)}")
    if info.type in _DEVICE_TYPES:
        return Refusal(info.name, _DEVICE_TYPES[info.type])
    if info.isdir():
        return Refusal(info.name, "")
    if info.sparse is not None:
        return Refusal(info.name, "GNU sparse member (not a capture file)")
    if not info.isreg():
        return Refusal(info.name, f"unsupported entry type {info.type!r}")
    if not _normalised(info.name):
        return Refusal(info.name, "empty name")
    return None


def _read_tar_member(archive: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(info)
    if handle is None:  # not a regular file: excluded before
        return b""
    parts: list[bytes] = []
    while chunk := handle.read(_CHUNK):
        parts.append(chunk)
    content = b"".join(parts)
    if len(content) != info.size:
        raise _Corrupt(f"member has {len(content)} of its {info.size} bytes")
    return content


# ------------------------------------------------------------------------------------------------- zip


def _zip_mtime_ms(info: zipfile.ZipInfo) -> int:
    """The entry's UTC modification time: the extended-timestamp extra field (0x5455) when present, else the
    DOS date and time (local time of the archiver, taken as UTC)."""
    extra = info.extra
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + size]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return struct.unpack_from("<i", body, 1)[0] * 1000
        pos += 4 + size
    try:
        return calendar.timegm((*info.date_time, 0, 0, 0)) * 1000
    except (ValueError, OverflowError):
        return 0


def _zip_refusal(info: zipfile.ZipInfo) -> Refusal | None:
    """A refusal for an entry that is not read (reason "" for a directory), or None."""
    unsafe = _unsafe_name(info.orig_filename)
    if unsafe is not None:
        return Refusal(info.orig_filename, unsafe)
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode:  # Unix attributes
        if stat.S_ISLNK(mode):
            return Refusal(info.filename, "symbolic link")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            return Refusal(info.filename, "device, FIFO or socket")
    if info.is_dir():
        return Refusal(info.filename, "")
    if info.flag_bits & 0x1:
        return Refusal(info.filename, "encrypted entry")
    if not _normalised(info.filename):
        return Refusal(info.filename, "empty name")
    return None


def _read_zip(
    data: bytes, wanted: Callable[[str], bool], limits: ArchiveLimits
) -> Iterator[Member | Refusal]:
    archive = _attempt(zipfile.ZipFile, io.BytesIO(data))  # closed by the ``with`` below
    if isinstance(archive, Refusal):
        yield archive
        return
    with archive:
        yield from _zip_entries(archive, wanted, limits)


def _zip_entries(
    archive: zipfile.ZipFile, wanted: Callable[[str], bool], limits: ArchiveLimits
) -> Iterator[Member | Refusal]:
    infos = archive.infolist()
    total = 0
    for count, info in enumerate(infos, start=1):
        if count > limits.max_members:
            yield Refusal(info.filename, _too_many(limits))
            return
        path = yield from _picked(
            info.filename, _zip_refusal(info), wanted, info.file_size, limits, _ZIP_TOO_LARGE
        )
        if path is None:
            continue
        if total + info.file_size > limits.max_total_bytes:
            yield Refusal(info.filename, _expands(limits))
            return
        content = _attempt(_read_zip_member, archive, info, limits, name=info.filename, what="corrupt entry")
        if isinstance(content, Refusal):
            yield content
            continue
        total += len(content)
        yield Member(path, _zip_mtime_ms(info), content)


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: ArchiveLimits) -> bytes:
    """The entry's bytes, inflated in chunks and stopped at the member cap whatever its declared size."""
    parts: list[bytes] = []
    size = 0
    with archive.open(info) as handle:
        while chunk := handle.read(min(_CHUNK, limits.max_member_bytes + 1)):
            size += len(chunk)
            if size > limits.max_member_bytes:
                raise _Stop(
                    info.filename,
                    f"inflates beyond {limits.max_member_bytes} bytes (max_member_bytes; declared "
                    f"{info.file_size})",
                )
            parts.append(chunk)
    return b"".join(parts)
