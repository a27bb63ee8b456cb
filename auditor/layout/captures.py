"""Checkpoint captures: which files of a tree or archive belong to a capture, where each capture's root is,
the capture time a folder or archive name carries, and the optional capture manifest.

A *capture* is one broker log dir's small files at one capture time, laid out as in the log dir: at its root
:data:`TOP_FILES` (``meta.properties``, the four offset checkpoints, ``.kafka_cleanshutdown`` and the
manifest), and in each partition directory (``<topic>-<partition>``, or a ``-future`` directory of a replica
being moved between log dirs) :data:`PARTITION_FILES` (``leader-epoch-checkpoint``, ``partition.metadata``).
Nothing else is ever read: segments, indexes, snapshots, ``-delete`` and ``-stray`` directories are skipped
by name.

The capture manifest, ``kafka-auditor-capture.json`` at a capture's root, is optional. It is one JSON object;
every key is optional, unknown keys are ignored, ``null`` counts as absent::

    {
      "captureTime": "2026-01-05T02:00:00Z",      capture time: ISO-8601 (no offset = UTC) or epoch ms
      "broker": 1,                                 node id, when meta.properties cannot say
      "cluster": "QgxNy_HmRciFoMjvSeDK3w",         cluster label, when meta.properties has no cluster.id
      "logDir": "/var/lib/kafka/data",             the log dir the files were copied from
      "brokerStartTime": 1736035200000             when the broker process started (ISO-8601 or epoch ms)
    }

Times must lie in 2000..2100 (an epoch in seconds instead of milliseconds is an error, not 1970). The
collection command can write it with ``date``, e.g.
``printf '{"captureTime":"%s","logDir":"%s"}' "$(date -u +%FT%TZ)" /var/lib/kafka/data``.
"""

from __future__ import annotations

import json
import re
import reprlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from parsers.checkpoints import OFFSET_CHECKPOINT_FILES
from parsers.dirfiles import parse_partition_dir_name
from parsers.errors import ParseError

MANIFEST = "kafka-auditor-capture.json"
"""The optional capture manifest at a capture's root (module docstring)."""
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

TOP_FILES = frozenset({META_PROPERTIES, CLEAN_SHUTDOWN, MANIFEST, *OFFSET_CHECKPOINT_FILES})
"""Files of a capture's root."""
PARTITION_FILES = frozenset({LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA})
"""Files of a capture's partition directories."""
PARTITION_DIR_KINDS = frozenset({"live", "future"})
"""Kinds of partition directory (``parse_partition_dir_name``) whose files belong to a capture."""

CAPTURE_FILE_GLOB = (
    "{meta.properties,*-checkpoint,partition.metadata,.kafka_cleanshutdown,kafka-auditor-capture.json}"
)
"""A Hadoop glob of the base names of capture files: a superset (``*-checkpoint``) that
:func:`is_capture_file` narrows down."""

EARLIEST_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
LATEST_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z


def capture_location(path: str) -> tuple[str, str] | None:
    """(capture root, name relative to the root) of a capture file, from its POSIX path relative to the
    source; None for any other file. ``"a/b/orders-3/leader-epoch-checkpoint"`` -> ``("a/b",
    "orders-3/leader-epoch-checkpoint")``; ``"meta.properties"`` -> ``("", "meta.properties")``."""
    head, _, base = path.rpartition("/")
    if base in TOP_FILES:
        return head, base
    if base not in PARTITION_FILES or not head:
        return None
    root, _, directory = head.rpartition("/")
    try:
        kind = parse_partition_dir_name(directory)[2]
    except ParseError:
        return None
    if kind not in PARTITION_DIR_KINDS:
        return None
    return root, f"{directory}/{base}"


def is_capture_file(path: str) -> bool:
    """Whether ``path`` (POSIX, relative to the source) is a capture file (:func:`capture_location`)."""
    base = path.rpartition("/")[2]
    if base in TOP_FILES:
        return True
    return base in PARTITION_FILES and capture_location(path) is not None


# ------------------------------------------------------------------------------------------------ times


def _time_pattern(prefix: str) -> str:
    """``HH[:-]MM[[:-]SS[.fraction]]`` with one separator throughout, its groups named ``<prefix>hour`` ..."""
    return (
        rf"(?P<{prefix}hour>\d{{2}})(?P<{prefix}sep>[:-]?)(?P<{prefix}minute>\d{{2}})"
        rf"(?:(?P={prefix}sep)(?P<{prefix}second>\d{{2}})(?:[.,](?P<{prefix}fraction>\d{{1,9}}))?)?"
    )


_ISO_TIME = re.compile(
    r"(?<!\d)(?:"
    rf"(?P<year>\d{{4}})-(?P<month>\d{{2}})-(?P<day>\d{{2}})(?:[Tt_ ]{_time_pattern('')})?"
    rf"|(?P<cyear>\d{{4}})(?P<cmonth>\d{{2}})(?P<cday>\d{{2}})[Tt]{_time_pattern('c')}"
    r")(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<zh>\d{2}):?(?P<zm>\d{2}))?(?!\d)"
)
_EPOCH_MS = re.compile(r"(?<!\d)\d{13}(?!\d)")

TIME_FORMS = (
    "2026-01-05T02:00:00Z",
    "2026-01-05T02:00:00.123Z",
    "20260105T020000Z",
    "2026-01-05T020000Z",
    "2026-01-05_02-00-00",
    "2026-01-05T02:00:00+02:00",
    "2026-01-05T02:00Z",
    "2026-01-05",
    "1767578400000",
)
"""Examples of every form :func:`time_from_name` accepts."""


def _iso_match_ms(match: re.Match[str]) -> int | None:
    """The epoch ms of a match of :data:`_ISO_TIME`, or None when it is not a real date and time."""
    group = match.groupdict()
    prefix = "" if group["year"] is not None else "c"
    try:
        moment = datetime(
            int(group[prefix + "year"]),
            int(group[prefix + "month"]),
            int(group[prefix + "day"]),
            int(group[prefix + "hour"] or 0),
            int(group[prefix + "minute"] or 0),
            int(group[prefix + "second"] or 0),
            tzinfo=timezone.utc,
        )
    except ValueError:
        return None
    fraction = group[prefix + "fraction"]
    millis = int((fraction + "00")[:3]) if fraction else 0
    if group["sign"]:
        offset = timedelta(hours=int(group["zh"]), minutes=int(group["zm"]))
        if offset >= timedelta(hours=24) or int(group["zm"]) >= 60:
            return None
        moment -= offset if group["sign"] == "+" else -offset
    ms = int(moment.timestamp()) * 1000 + millis
    return ms if EARLIEST_MS <= ms < LATEST_MS else None


def time_from_name(text: str) -> int | None:
    """The capture time (UTC epoch ms) written in a folder or archive name, or None.

    Accepted (first one in the text wins; never inside a longer run of digits; years 2000..2099):

    * epoch milliseconds: 13 digits (``broker-1-1767578400000.tgz``);
    * ISO-8601 date and time, the date as ``YYYY-MM-DD`` or, with a ``T`` before the time, ``YYYYMMDD``; the
      time as ``HH:MM[:SS]``, ``HHMM[SS]`` or ``HH-MM[-SS]`` after ``T``, ``_`` or a space, with an optional
      fraction of a second (``.123``) and an optional zone ``Z`` or ``+HH:MM``/``-HHMM`` (none means UTC):
      ``2026-01-05T02:00:00Z``, ``2026-01-05T02:00:00.123Z``, ``20260105T020000Z``, ``2026-01-05T020000Z``,
      ``2026-01-05_02-00-00``, ``2026-01-05T02:00:00+02:00``;
    * a date alone, ``YYYY-MM-DD``: midnight UTC (``2026-01-05``).
    """
    candidates: list[tuple[int, int]] = []
    for match in _ISO_TIME.finditer(text):
        ms = _iso_match_ms(match)
        if ms is not None:
            candidates.append((match.start(), ms))
            break
    for match in _EPOCH_MS.finditer(text):
        ms = int(match.group())
        if EARLIEST_MS <= ms < LATEST_MS:
            candidates.append((match.start(), ms))
            break
    return min(candidates)[1] if candidates else None


def parse_time(text: str) -> int | None:
    """A whole text that is one of :func:`time_from_name`'s forms (epoch ms or ISO-8601), or None."""
    text = text.strip()
    match = _ISO_TIME.fullmatch(text)
    if match is not None:
        return _iso_match_ms(match)
    if _EPOCH_MS.fullmatch(text):
        ms = int(text)
        return ms if EARLIEST_MS <= ms < LATEST_MS else None
    return None


# --------------------------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class Manifest:
    """The capture manifest (module docstring); every field None when absent."""

    capture_time_ms: int | None = None
    broker: int | None = None
    cluster: str | None = None
    log_dir: str | None = None
    broker_start_time_ms: int | None = None


def _key_offset(raw: bytes, key: str) -> int:
    """Byte offset of the last ``"key":`` in the manifest (JSON keeps the last of duplicate keys), else 0."""
    matches = list(re.finditer(rb'"' + re.escape(key.encode()) + rb'"\s*:', raw))
    return matches[-1].start() if matches else 0


def _manifest_time(value: object, key: str, raw: bytes, path: str) -> int | None:
    if value is None:
        return None
    ms: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        ms = value if EARLIEST_MS <= value < LATEST_MS else None
    elif isinstance(value, str):
        ms = parse_time(value)
    if ms is None:
        raise ParseError(
            f"{key} must be an ISO-8601 time or epoch milliseconds in 2000..2100, not {_short(value)}",
            path=path,
            offset=_key_offset(raw, key),
        )
    return ms


def _short(value: object) -> str:
    """A bounded repr of a JSON value, for messages."""
    return reprlib.repr(value)


def parse_manifest(data: bytes, path: str) -> Manifest:
    """Read a capture manifest (module docstring). ParseError naming ``path`` and the byte offset for bad
    UTF-8, bad JSON, a value that is not an object, or a key of the wrong type."""
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError("capture manifest is not UTF-8", path=path, offset=exc.start) from None
    try:
        node = json.loads(text)
    except json.JSONDecodeError as exc:
        offset = len(text[: exc.pos].encode("utf-8"))
        raise ParseError(f"capture manifest is not JSON: {exc.msg}", path=path, offset=offset) from None
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"capture manifest is not JSON: {exc}", path=path, offset=0) from None
    if not isinstance(node, dict):
        start = len(raw) - len(raw.lstrip())
        raise ParseError("capture manifest is not a JSON object", path=path, offset=start)

    def string(key: str) -> str | None:
        value = node.get(key)
        if value is not None and not isinstance(value, str):
            raise ParseError(
                f"{key} must be a string, not {_short(value)}", path=path, offset=_key_offset(raw, key)
            )
        return value

    broker = node.get("broker")
    if broker is not None and (
        isinstance(broker, bool) or not isinstance(broker, int) or not -(2**31) <= broker < 2**31
    ):
        raise ParseError(
            f"broker must be an integer node id, not {_short(broker)}",
            path=path,
            offset=_key_offset(raw, "broker"),
        )
    return Manifest(
        capture_time_ms=_manifest_time(node.get("captureTime"), "captureTime", raw, path),
        broker=broker,
        cluster=string("cluster"),
        log_dir=string("logDir"),
        broker_start_time_ms=_manifest_time(node.get("brokerStartTime"), "brokerStartTime", raw, path),
    )
