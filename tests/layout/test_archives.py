"""Reading capture archives in memory (auditor.layout.archives): members, every kind of refusal, corrupt and
truncated archives, and bombs bounded in memory and time (measured on a subprocess)."""

from __future__ import annotations

import io
import stat
import struct
import sys
import tarfile
import textwrap
import zipfile
import zlib

import pytest

from auditor.layout.archives import ArchiveLimits, Member, Refusal, is_archive, read_archive
from tests.hostile.conftest import run_bounded

T0 = 1_767_578_400  # 2026-01-05T02:00:00Z
MiB = 1 << 20


def _everything(name: str) -> bool:
    return True


def tar_bytes(entries: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w:gz", **kw) -> bytes:
    """A tar archive of (name, data) regular files and ready-made TarInfo entries (no data)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, **kw) as archive:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                archive.addfile(entry)
            else:
                name, data = entry
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(data), T0
                archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mtime = kind, linkname, T0
    return info


def zip_bytes(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buf.getvalue()


def read_all(name: str, data: bytes, wanted=_everything, **limits) -> list[Member | Refusal]:
    return list(read_archive(name, data, wanted, ArchiveLimits(**limits)))


def refusals(items: list[Member | Refusal]) -> dict[str, str]:
    return {item.name: item.reason for item in items if isinstance(item, Refusal)}


def members(items: list[Member | Refusal]) -> dict[str, bytes]:
    return {item.name: item.data for item in items if isinstance(item, Member)}


def test_is_archive() -> None:
    assert all(map(is_archive, ["a.tar", "b.TAR.GZ", "x/c.tgz", "d.zip"]))
    assert not any(map(is_archive, ["a.gz", "meta.properties", "tar", "a.tar.bz2"]))


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_members_are_read_and_named_relative(mode: str) -> None:
    data = tar_bytes(
        [
            special("./var/lib/kafka/data", tarfile.DIRTYPE),
            ("./var/lib/kafka/data/meta.properties", b"node.id=1\n"),
            ("var//lib/kafka/data/./orders-3/leader-epoch-checkpoint", b"0\n0\n"),
            ("var/lib/kafka/data/orders-3/00000000000000000000.log", b"x" * 5000),
        ],
        mode,
    )
    items = read_all("b.tar", data, lambda n: not n.endswith(".log"))
    assert items == [
        Member("var/lib/kafka/data/meta.properties", T0 * 1000, b"node.id=1\n"),
        Member("var/lib/kafka/data/orders-3/leader-epoch-checkpoint", T0 * 1000, b"0\n0\n"),
    ]


def test_concatenated_gzip_streams() -> None:
    first = tar_bytes([("a/meta.properties", b"1")], "w")
    stream = zlib.compressobj(wbits=31)
    half = stream.compress(first[:2048]) + stream.flush()
    rest = zlib.compressobj(wbits=31)
    data = half + rest.compress(first[2048:]) + rest.flush()
    assert members(read_all("x.tgz", data)) == {"a/meta.properties": b"1"}


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (("/etc/meta.properties", b"x"), "absolute name"),
        (("a/../../meta.properties", b"x"), "name has a '..' component"),
        (("..", b"x"), "name has a '..' component"),
        (special("data/link", tarfile.SYMTYPE, "/etc/shadow"), "symbolic link to '/etc/shadow'"),
        (
            special("data/hard", tarfile.LNKTYPE, "data/meta.properties"),
            "hard link to 'data/meta.properties'",
        ),
        (special("data/tty", tarfile.CHRTYPE), "character device"),
        (special("data/disk", tarfile.BLKTYPE), "block device"),
        (special("data/pipe", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_tar_refusals_name_the_entry_and_reading_goes_on(entry, reason: str) -> None:
    data = tar_bytes([entry, ("data/meta.properties", b"ok")])
    items = read_all("broker-1.tgz", data)
    name = entry.name if isinstance(entry, tarfile.TarInfo) else entry[0]
    assert items == [Refusal(name, reason), Member("data/meta.properties", T0 * 1000, b"ok")]


def test_tar_name_with_nul_is_refused() -> None:
    info = tarfile.TarInfo("data/x")
    info.pax_headers = {"path": "data/meta.properties\x00.evil"}
    data = tar_bytes([info], "w", format=tarfile.PAX_FORMAT)
    assert refusals(read_all("a.tar", data)) == {
        "data/meta.properties\x00.evil": "name contains a NUL character"
    }


def test_oversize_member_refused_unread_and_unwanted_ones_skipped() -> None:
    data = tar_bytes([("big/meta.properties", b"x" * 1000), ("big.log", b"y" * 5000), ("ok", b"z")])
    items = read_all("a.tgz", data, lambda n: n != "big.log", max_member_bytes=999)
    assert items == [
        Refusal("big/meta.properties", "1000 bytes exceed 999 (max_member_bytes)"),
        Member("ok", T0 * 1000, b"z"),
    ]


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_tar_bomb_stops_at_the_expansion_cap_naming_the_entry(mode: str) -> None:
    """Unwanted members count too: the cap is on what is inflated, not on what is kept."""
    entries = [(f"seg-{i}.log", bytes(MiB)) for i in range(8)] + [("late/meta.properties", b"x")]
    data = tar_bytes(entries, mode)
    if mode != "w":
        assert len(data) < 64 * 1024
    items = read_all("bomb.tar", data, lambda n: n.endswith("meta.properties"), max_total_bytes=3 * MiB)
    assert items == [
        Refusal(
            "seg-2.log", f"archive expands beyond {3 * MiB} bytes (max_total_bytes): reading stopped here"
        )
    ]


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
def test_extension_header_larger_than_the_member_cap_is_not_read(fmt: int) -> None:
    """A pax header or a GNU long name is read whole by tarfile: its size is checked first."""
    info = tarfile.TarInfo("data/" + "n" * 5000)
    data = tar_bytes([info, ("after", b"1")], "w:gz", format=fmt)
    (refusal,) = read_all("a.tgz", data, max_member_bytes=4096)
    assert isinstance(refusal, Refusal) and refusal.reason.startswith("extension header of ")
    assert refusal.reason.endswith("(max_member_bytes): reading stopped here")
    assert members(read_all("a.tgz", data)) == {info.name: b"", "after": b"1"}  # within the default cap


def test_member_count_cap() -> None:
    data = tar_bytes([(f"d/f{i}", b"") for i in range(5)])
    items = read_all("a.tar", data, max_members=3)
    assert [i.name for i in items] == ["d/f0", "d/f1", "d/f2", "d/f3"]
    assert items[-1] == Refusal("d/f3", "more than 3 entries (max_members): reading stopped here")


def test_sparse_member_refused() -> None:
    info = tarfile.TarInfo("data/sparse")
    info.type = tarfile.GNUTYPE_SPARSE
    info.size = 0
    data = tar_bytes([info, ("after", b"1")], "w", format=tarfile.GNU_FORMAT)
    items = read_all("a.tar", data)
    assert items[0].name == "data/sparse" and "GNU sparse member" in items[0].reason


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda d: d[: len(d) // 2], "corrupt archive: truncated gzip stream"),
        (lambda d: b"not an archive at all" * 30, "corrupt archive: "),
        (lambda d: b"", "corrupt archive: empty file"),
        (lambda d: d[:10] + bytes(b ^ 0xFF for b in d[10:40]) + d[40:], "corrupt archive: "),
    ],
)
def test_corrupt_gzip_archives_end_with_one_refusal(cut, message: str) -> None:
    data = tar_bytes([("a/meta.properties", b"x" * 3000), ("a/b", b"y" * 3000)])
    items = read_all("a.tgz", cut(data))
    assert isinstance(items[-1], Refusal) and items[-1].name == ""
    assert items[-1].reason.startswith(message)
    assert "\n" not in items[-1].reason
    assert all(isinstance(i, Member) for i in items[:-1])


def test_truncated_plain_tar_reports_where() -> None:
    data = tar_bytes([("a", b"1" * 700), ("b", b"2")], "w")
    inside_a = read_all("a.tar", data[:1024])
    assert inside_a == [Refusal("", "corrupt archive: unexpected end of data (in a)")]
    no_end_blocks = read_all("a.tar", data[:1536])
    assert no_end_blocks[0].name == "a"
    assert no_end_blocks[-1] == Refusal("", "corrupt archive: no end-of-archive blocks (truncated) after a")
    damaged = bytearray(data)
    damaged[1536 + 100] ^= 0xFF  # b's header checksum no longer matches
    assert read_all("a.tar", bytes(damaged))[-1] == Refusal(
        "", "corrupt archive: invalid header (bad checksum) after a"
    )


# ---------------------------------------------------------------------------------------------------- zip


def test_zip_members_and_refusals() -> None:
    link = zipfile.ZipInfo("data/link")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    fifo = zipfile.ZipInfo("data/pipe")
    fifo.create_system = 3
    fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
    data = zip_bytes(
        [
            ("data/", b""),
            ("data/meta.properties", b"node.id=1\n"),
            ("../evil", b"x"),
            ("/abs", b"x"),
            ("C:/windows", b"x"),
            (link, b"/etc/shadow"),
            (fifo, b""),
            ("data/seg.log", b"l" * 100),
        ]
    )
    items = read_all("a.zip", data, lambda n: not n.endswith(".log"))
    assert members(items) == {"data/meta.properties": b"node.id=1\n"}
    assert refusals(items) == {
        "../evil": "name has a '..' component",
        "/abs": "absolute name",
        "C:/windows": "absolute name",
        "data/link": "symbolic link",
        "data/pipe": "device, FIFO or socket",
    }


def test_zip_mtime_from_the_extended_timestamp() -> None:
    info = zipfile.ZipInfo("meta.properties", date_time=(2026, 1, 5, 3, 0, 0))  # archiver's local time
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, T0)
    plain = zipfile.ZipInfo("other", date_time=(2026, 1, 5, 2, 0, 0))
    items = read_all("a.zip", zip_bytes([(info, b"1"), (plain, b"2")]))
    assert [(m.name, m.mtime_ms) for m in items] == [("meta.properties", T0 * 1000), ("other", T0 * 1000)]


def patch_zip(data: bytes, name: bytes, *, new_name: bytes | None = None, flags: int = 0) -> bytes:
    """Rewrite an entry's name (same length) and OR ``flags`` into its general-purpose flags, in its local
    and central headers."""
    out = bytearray(data)
    for signature, flag_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        at = out.find(signature)
        while at >= 0:
            if out[at + name_at : at + name_at + len(name)] == name:
                out[at + flag_at] |= flags
                if new_name is not None:
                    out[at + name_at : at + name_at + len(name)] = new_name
            at = out.find(signature, at + 4)
    return bytes(out)


def test_zip_name_with_nul_and_encrypted_entry() -> None:
    data = zip_bytes([("nulXname", b"1"), ("secret", b"2"), ("ok", b"3")])
    data = patch_zip(patch_zip(data, b"nulXname", new_name=b"nul\x00name"), b"secret", flags=1)
    items = read_all("a.zip", data)
    assert refusals(items) == {"nul\x00name": "name contains a NUL character", "secret": "encrypted entry"}
    assert members(items) == {"ok": b"3"}


def test_zip_bomb_refused_by_declared_size_and_by_total() -> None:
    data = zip_bytes([("bomb", bytes(8 * MiB)), ("ok", b"1")])
    assert len(data) < 64 * 1024
    assert read_all("a.zip", data, max_member_bytes=MiB) == [
        Refusal("bomb", f"declared size {8 * MiB} bytes exceeds {MiB} (max_member_bytes)"),
        Member("ok", read_all("a.zip", data)[1].mtime_ms, b"1"),
    ]
    many = zip_bytes([(f"m{i}", bytes(MiB)) for i in range(6)])
    items = read_all("a.zip", many, max_total_bytes=int(2.5 * MiB))
    assert [i.name for i in items] == ["m0", "m1", "m2"]
    assert items[-1] == Refusal(
        "m2", f"archive expands beyond {int(2.5 * MiB)} bytes (max_total_bytes): reading stopped here"
    )


def test_zip_with_lying_sizes_never_yields_more_than_declared() -> None:
    """A declared size below the cap does not let the real bytes through: inflating stops at the declared
    size, and the entry then fails its CRC."""
    data = bytearray(zip_bytes([("bomb", bytes(4 * MiB))]))
    real, small = struct.pack("<I", 4 * MiB), struct.pack("<I", 1000)
    for at in [i for i in range(len(data) - 3) if data[i : i + 4] == real]:
        data[at : at + 4] = small  # the declared uncompressed size, in the local and central headers
    assert read_all("a.zip", bytes(data), max_member_bytes=2000) == [
        Refusal("bomb", "corrupt entry: Bad CRC-32 for file 'bomb'")
    ]


def test_corrupt_zip() -> None:
    data = zip_bytes([("a", b"x" * 1000), ("b", b"y" * 1000)])
    assert read_all("a.zip", data[: len(data) // 2]) == [
        Refusal("", "corrupt archive: File is not a zip file")
    ]
    damaged = bytearray(data)
    damaged[32] ^= 0xFF  # inside a's compressed data (its name "a" ends at byte 31)
    items = read_all("a.zip", bytes(damaged))
    assert items[0].name == "a" and items[0].reason.startswith("corrupt entry: ")
    assert items[1] == Member("b", items[1].mtime_ms, b"y" * 1000)


# ----------------------------------------------------------------------------------------- hostile bombs

_CHILD = textwrap.dedent(
    """
    import resource, sys
    from auditor.layout.archives import ArchiveLimits, Member, read_archive
    path = sys.argv[1]
    limits = ArchiveLimits(max_member_bytes=16 << 20, max_total_bytes=64 << 20)
    data = open(path, "rb").read()
    kept = 0
    last = None
    for item in read_archive(path, data, lambda name: True, limits):
        if isinstance(item, Member):
            kept += len(item.data)
        else:
            last = item
    print(kept, last.name, last.reason, sep="|")
    """
)


def _tar_bomb(path) -> None:
    member = bytes(8 * MiB)
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        for i in range(80):  # 640 MiB of zeros: 10x the cap
            info = tarfile.TarInfo(f"data/part-{i}")
            info.size = len(member)
            archive.addfile(info, io.BytesIO(member))


def _zip_bomb(path) -> None:
    member = bytes(8 * MiB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for i in range(80):
            archive.writestr(f"data/part-{i}", member)


@pytest.mark.parametrize(("suffix", "build"), [(".tgz", _tar_bomb), (".zip", _zip_bomb)])
def test_bomb_of_ten_times_the_cap_is_bounded_in_memory_and_time(tmp_path, suffix: str, build) -> None:
    path = tmp_path / f"bomb{suffix}"
    build(path)
    assert path.stat().st_size < 8 * MiB
    result = run_bounded([sys.executable, "-c", _CHILD, str(path)], timeout=60)
    assert result.returncode == 0, result.stderr
    kept, name, reason = result.stdout.strip().split("|")
    assert int(kept) <= 64 * MiB
    assert name.startswith("data/part-") and "max_total_bytes" in reason
    assert result.peak_rss_mb < 300, result.peak_rss_mb
    assert result.seconds < 30
