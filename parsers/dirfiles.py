"""Per-directory metadata files and Kafka's directory/file naming (spec §12, §13).

* ``partition.metadata`` (§12.1), ``meta.properties`` (§12.2), ``.kafka_cleanshutdown`` (§12.3),
  ``__cluster_metadata-0/quorum-state`` (§12.4): readers that follow Kafka's own readers and fail (ParseError)
  where Kafka fails, plus writers producing Kafka's exact bytes.
* Names (§13): partition directories (``LocalLog.parseTopicPartitionName``), segment files, KRaft snapshots.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from parsers.checkpoints import _decode_utf8, _java_lines, _java_parse_int, _java_parse_long, _java_split
from parsers.errors import ParseError
from parsers.primitives import ZERO_UUID, uuid_to_str

_JAVA_NON_SPACE = "[^ \t\n\x0b\f\r]"  # java.util.regex \S

# ------------------------------------------------------------------------------------------- UUIDs (Java)

_CANONICAL_UUID = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


def _java_uuid(text: str) -> str:
    """Kafka's ``Uuid.fromString`` (a strict ``Base64.getUrlDecoder``) returning the canonical text form.

    Exactly 22 base64url characters, optionally followed by ``==``, decode to 16 bytes; anything else throws
    ``IllegalArgumentException`` in Kafka: ParseError (without a path/offset; callers anchor it).
    """
    if len(text) > 24:
        raise ParseError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    if not _CANONICAL_UUID.fullmatch(text):
        raise ParseError(f"Input string `{text}` is not the base64url encoding of a 16-byte UUID")
    return uuid_to_str(base64.urlsafe_b64decode(text[:22] + "=="))


def _is_reserved_directory_id(canonical: str) -> bool:
    """Directory IDs never fall in the first 100 UUIDs (msb == 0 and lsb < 100), §1.4."""
    raw = base64.urlsafe_b64decode(canonical + "==")
    return raw[:8] == bytes(8) and int.from_bytes(raw[8:], "big") < 100


# ------------------------------------------------------------------------------------ partition.metadata

_COLON_WHITESPACE = re.compile(":[ \t\n\x0b\f\r]+")
PARTITION_METADATA_VERSION = 0


@dataclass
class PartitionMetadata:
    """``partition.metadata``: ``version`` and the topic ID (canonical base64url text).

    ``notes`` records what Kafka tolerates but never writes (a trailing newline, extra lines, other key names,
    a non-canonical UUID spelling, a version other than 0).
    """

    version: int
    topic_id: str
    notes: list[str] = field(default_factory=list)


def parse_partition_metadata(data: bytes | memoryview, path: str | None = None) -> PartitionMetadata:
    """Kafka's ``PartitionMetadataReadBuffer.read``: each of the first two lines split on ``:\\s+`` must
    give 2 tokens; the version (``Integer.parseInt``) must be >= 0; the topic ID must be a UUID and not the
    zero UUID. Lines after the second are ignored."""
    location = path if path is not None else "<buffer>"
    raw = _decode_utf8(data, path, f"partition metadata file ({location})")
    lines = [(line.decode("utf-8"), offset) for line, offset in _java_lines(raw, limit=3)]

    def malformed(line: str | None, offset: int) -> ParseError:  # a missing line prints as Java's null
        text = "null" if line is None else line
        return ParseError(f"Malformed line in checkpoint file [{location}]: {text}", path=path, offset=offset)

    if not lines:
        raise malformed(None, 0)
    notes: list[str] = []
    line, offset = lines[0]
    tokens = _java_split(_COLON_WHITESPACE, line)
    if len(tokens) != 2:
        raise malformed(line, offset)
    version = _java_parse_int(tokens[1])
    if version is None:
        raise malformed(line, offset)
    if version < PARTITION_METADATA_VERSION:
        raise ParseError(
            f"Unrecognized version of partition metadata file ({location}): {version}",
            path=path,
            offset=offset,
        )
    if tokens[0] != "version" or version != PARTITION_METADATA_VERSION or tokens[1] != str(version):
        notes.append(f"line 1 is {line!r}, Kafka writes 'version: 0'")
    if len(lines) < 2:
        raise malformed(None, len(raw))
    line, offset = lines[1]
    tokens = _java_split(_COLON_WHITESPACE, line)
    if len(tokens) != 2:
        raise malformed(line, offset)
    try:
        topic_id = _java_uuid(tokens[1])
    except ParseError as exc:
        raise ParseError(exc.message, path=path, offset=offset) from None
    if topic_id == ZERO_UUID:
        raise ParseError(
            f"Invalid topic ID in partition metadata file ({location})", path=path, offset=offset
        )
    if tokens[0] != "topic_id" or tokens[1] != topic_id or not line.startswith("topic_id: "):
        notes.append(f"line 2 is {line!r}, Kafka writes 'topic_id: {topic_id}'")
    if raw != format_partition_metadata(topic_id):
        if len(lines) > 2:
            breaks = raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")  # readLine's terminators
            total = breaks + (0 if raw.endswith((b"\n", b"\r")) else 1)
            notes.append(f"{total - 2} line(s) after the topic ID (ignored by Kafka)")
        elif raw.endswith((b"\n", b"\r")):
            notes.append("trailing line terminator (Kafka writes none)")
    return PartitionMetadata(version, topic_id, notes)


def format_partition_metadata(topic_id: str) -> bytes:
    """Kafka's exact bytes: ``version: 0\\ntopic_id: <uuid>`` with no trailing newline (43 bytes)."""
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {topic_id}".encode()


# ------------------------------------------------------------------------------------------- Java Properties

_PROPS_WHITESPACE = " \t\f"
_JAVA_TRIM = "".join(chr(i) for i in range(0x21))  # String.trim removes every char <= ' '


_PHYSICAL_LINE = re.compile(r"\r\n|\r|\n")


def _properties_logical_lines(text: str) -> list[str]:
    """``Properties.LineReader``: skip blank lines and ``#``/``!`` comments, join backslash continuations
    (the continued line's leading whitespace dropped). Linear: one split, no per-character Python loop."""
    lines: list[str] = []
    parts: list[str] | None = None
    for physical in _PHYSICAL_LINE.split(text):
        segment = physical.lstrip(_PROPS_WHITESPACE)
        if parts is None and (not segment or segment[0] in "#!"):
            continue  # blank line or comment (a comment is never continued)
        backslashes = len(segment) - len(segment.rstrip("\\"))
        if backslashes % 2:
            parts = [] if parts is None else parts
            parts.append(segment[:-1])
            continue
        lines.append("".join([*(parts or []), segment]))
        parts = None
    if parts is not None:
        lines.append("".join(parts))
    return lines


_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(u)|(.)|\Z)", re.S)


def _unescape_one(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return chr(int(match.group(1), 16))
    if match.group(2) is not None:
        raise ParseError("Malformed \\uxxxx encoding.")
    if match.group(3) is not None:
        return _ESCAPES.get(match.group(3), match.group(3))
    return "\\"  # a lone backslash at the very end stays


def _properties_unescape(text: str) -> str:
    """``Properties.loadConvert``; a bad ``\\uXXXX`` throws IllegalArgumentException in Java: ParseError."""
    return _ESCAPE.sub(_unescape_one, text) if "\\" in text else text


_KEY = re.compile(r"(?:[^\\=: \t\f]|\\.|\\\Z)*", re.S)
"""A key: up to the first separator (``=``, ``:`` or whitespace) not escaped by a backslash."""
_AFTER_SEPARATOR = re.compile(r"[ \t\f]*")
_AFTER_WHITESPACE = re.compile(r"[ \t\f]*(?:[=:][ \t\f]*)?")


def load_java_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` on already-decoded text (last duplicate key wins)."""
    props: dict[str, str] = {}
    for line in _properties_logical_lines(text):
        key_end = _KEY.match(line).end()
        if key_end < len(line):
            after = _AFTER_SEPARATOR if line[key_end] in "=:" else _AFTER_WHITESPACE
            value_start = after.match(line, key_end + 1).end()
        else:
            value_start = key_end
        props[_properties_unescape(line[:key_end])] = _properties_unescape(line[value_start:])
    return props


def _properties_escape(text: str, escape_space: bool) -> str:
    """``Properties.saveConvert`` as used by ``store(Writer)`` (no ``\\uXXXX`` escaping)."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == " ":
            out.append("\\ " if i == 0 or escape_space else " ")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _java_string_hash(text: str) -> int:
    h = 0
    utf16 = text.encode("utf-16-be")
    for i in range(0, len(utf16), 2):
        h = (31 * h + int.from_bytes(utf16[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def _java_properties_order(keys: list[str]) -> list[str]:
    """Iteration order of a ``Properties`` (a ``ConcurrentHashMap`` of 16 bins) holding ``keys`` inserted in
    order, i.e. the order ``Properties.store`` writes them in. Exact for up to 11 keys."""
    bins = 16
    while len(keys) >= bins * 3 // 4:
        bins *= 2

    def slot(key: str) -> int:
        h = _java_string_hash(key)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (bins - 1)

    return sorted(keys, key=lambda k: (slot(k), keys.index(k)))


_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _java_date(moment: datetime) -> str:
    """``java.util.Date.toString`` in UTC: ``Sat Nov 21 04:55:32 UTC 2026``."""
    moment = moment.astimezone(timezone.utc)
    return (
        f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
        f"{moment:%H:%M:%S} UTC {moment.year}"
    )


# ------------------------------------------------------------------------------------------- meta.properties

META_PROPERTIES_VERSIONS = (0, 1)


@dataclass
class MetaProperties:
    """``meta.properties`` (§12.2) as Kafka 4.0's ``MetaProperties.Builder(Properties)`` reads it.

    ``node_id`` is the node ID Kafka derives (``node.id`` for v1, ``broker.id`` for v0); ``broker_id`` is the
    v0 ``broker.id`` value. ``problems`` lists what Kafka accepts here but an auditor should look at (reserved
    or missing directory ID, odd cluster ID, ignored or unknown keys, non-ASCII bytes);
    :meth:`identity_problem` says when the file names no node at all.
    """

    version: int
    node_id: int | None
    broker_id: int | None
    cluster_id: str | None
    directory_id: str | None
    raw: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def identity_problem(self) -> str | None:
        """Why this file names no node although Kafka's reader accepts it, or None when it names one.

        ``MetaProperties.Builder`` reads a file without ``version`` as version 0 and accepts version 0 without
        ``broker.id``, so an empty file, or one holding only comments and blank lines, parses. A KRaft node
        then refuses the log dir (``KafkaRaftServer.initializeLogDirs``: "Error: node ID not found in <dir>"),
        and nothing attributes the log dir to a broker (spec §12.2).
        """
        if not self.raw:
            return "holds no properties at all (no version, node.id, broker.id or cluster.id)"
        if self.node_id is None:
            return "has no broker.id (version 0) and so names no node"
        return None


_KNOWN_META_KEYS = {"version", "broker.id", "node.id", "cluster.id", "directory.id"}


def parse_meta_properties(data: bytes | memoryview, path: str | None = None) -> MetaProperties:
    """Read ``meta.properties`` (``Properties.load``: ISO-8859-1, ``\\uXXXX`` escapes).

    ParseError (Kafka's RuntimeException text) for: an unknown or unparsable ``version``, a missing or
    non-integer ``node.id`` (v1), a non-integer ``broker.id`` (v0), an unparsable ``directory.id``, a missing
    ``cluster.id`` (v1), and a malformed ``\\uXXXX`` escape.
    """
    raw_bytes = bytes(data)

    def fail(message: str) -> ParseError:
        return ParseError(message, path=path)

    try:
        props = load_java_properties(raw_bytes.decode("latin-1"))
    except ParseError as exc:
        raise fail(exc.message) from None
    version_text = props.get("version", "0")
    version = _java_parse_int(version_text.strip(_JAVA_TRIM))
    if version is None:
        raise fail(f"Invalid meta.properties version string '{version_text}'")
    if version not in META_PROPERTIES_VERSIONS:
        raise fail(f"Unknown meta.properties version number {version}")

    def required_int(key: str) -> int:
        if key not in props:
            raise fail(f"Failed to find {key}")
        value = _java_parse_int(props[key])
        if value is None:
            raise fail(f"Unable to read {key} as a base-10 number.")
        return value

    problems: list[str] = []
    broker_id = required_int("broker.id") if version == 0 and "broker.id" in props else None
    node_id = broker_id if version == 0 else required_int("node.id")
    cluster_id = props.get("cluster.id")
    directory_id = None
    if "directory.id" in props:
        try:
            directory_id = _java_uuid(props["directory.id"])
        except ParseError as exc:
            raise fail(f"Unable to read directory.id as a Uuid: {exc.message}") from None
        if _is_reserved_directory_id(directory_id):
            problems.append(f"directory.id {directory_id} is a reserved directory ID (first 100 UUIDs)")
    if version != 0 and cluster_id is None:
        raise fail("cluster.id was not found.")

    if version == 0 and cluster_id is None:
        problems.append("no cluster.id (a KRaft node refuses the log dir: 'Error: cluster ID not found')")
    if version == 1 and directory_id is None:
        problems.append("no directory.id (a 3.7+ broker writes one at startup)")
    if version == 0 and "node.id" in props:
        problems.append("node.id is ignored in a version 0 file")
    if version == 1 and "broker.id" in props:
        problems.append("broker.id is ignored in a version 1 file")
    if node_id is not None and node_id < 0:
        problems.append(f"negative node id {node_id}")
    if cluster_id is not None:
        try:
            canonical = _java_uuid(cluster_id)
        except ParseError:
            canonical = None
        if canonical != cluster_id:
            problems.append(f"cluster.id {cluster_id!r} is not a 22-character base64url UUID")
    unknown = sorted(set(props) - _KNOWN_META_KEYS)
    if unknown:
        problems.append(f"unknown keys: {', '.join(unknown)}")
    if any(b >= 0x80 for b in raw_bytes):
        problems.append("non-ASCII bytes (Kafka writes UTF-8 but reads ISO-8859-1)")
    return MetaProperties(version, node_id, broker_id, cluster_id, directory_id, props, problems)


def format_meta_properties(
    version: int = 1,
    node_id: int | None = None,
    cluster_id: str | None = None,
    directory_id: str | None = None,
    date: datetime | None = None,
) -> bytes:
    """Kafka's bytes for ``meta.properties`` (``MetaProperties.toProperties`` + ``Properties.store``):
    ``#\\n#<Date.toString()>\\n`` then ``key=value`` lines in Java's hash order. In v0 the node ID is written
    as ``broker.id``; ``date`` defaults to now (UTC)."""
    if version not in META_PROPERTIES_VERSIONS:
        raise ValueError(f"unknown meta.properties version {version}")
    if version != 0 and (node_id is None or cluster_id is None):
        raise ValueError("a version 1 meta.properties needs node.id and cluster.id")
    props: dict[str, str] = {"version": str(version)}
    if cluster_id is not None:
        props["cluster.id"] = cluster_id
    if node_id is not None:
        props["broker.id" if version == 0 else "node.id"] = str(node_id)
    if directory_id is not None:
        props["directory.id"] = directory_id
    lines = ["#", "#" + _java_date(date or datetime.now(timezone.utc))]
    for key in _java_properties_order(list(props)):
        lines.append(_properties_escape(key, True) + "=" + _properties_escape(props[key], False))
    return "".join(line + "\n" for line in lines).encode("utf-8")


# ------------------------------------------------------------------------------------------- quorum-state

QUORUM_STATE_VERSIONS = (0, 1)
_QUORUM_FIELDS: dict[int, dict[str, str]] = {
    0: {
        "clusterId": "string",
        "leaderId": "int32",
        "leaderEpoch": "int32",
        "votedId": "int32",
        "appliedOffset": "int64",
        "currentVoters": "voters",
    },
    1: {"leaderId": "int32", "leaderEpoch": "int32", "votedId": "int32", "votedDirectoryId": "uuid"},
}


@dataclass
class QuorumState:
    """``__cluster_metadata-0/quorum-state``: the KRaft election state (``QuorumStateData`` as JSON)."""

    data_version: int
    leader_id: int
    leader_epoch: int
    voted_id: int
    cluster_id: str | None = None
    voted_directory_id: str | None = None
    applied_offset: int | None = None
    current_voters: list[int] | None = None
    raw: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _jackson_short(node: object) -> int:
    """``JsonNode.shortValue()``: numbers narrowed like Java casts, anything else 0."""
    if isinstance(node, bool) or not isinstance(node, int | float):
        return 0
    if isinstance(node, float):
        if math.isnan(node):
            return 0
        node = int(max(min(node, 2**31 - 1), -(2**31)))
    return (node + 2**15) % 2**16 - 2**15


def _reject_constant(name: str) -> None:
    raise ValueError(f"Non-standard token '{name}'")


def parse_quorum_state(data: bytes | memoryview, path: str | None = None) -> QuorumState:
    """Kafka's ``FileQuorumStateStore``: the first line is a JSON object with ``data_version`` in 0..1 and
    every field of that version (v0: clusterId, leaderId, leaderEpoch, votedId, appliedOffset,
    currentVoters; v1: leaderId, leaderEpoch, votedId, votedDirectoryId). Unknown fields are ignored, as
    Kafka does."""
    raw = _decode_utf8(data, path, "quorum state file")
    lines = _java_lines(raw)
    if not lines:
        raise ParseError("File ended prematurely.", path=path, offset=0)
    line = lines[0][0].decode("utf-8")
    notes: list[str] = []
    try:
        node, end = json.JSONDecoder(parse_constant=_reject_constant).raw_decode(line.lstrip(" \t"))
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"Error while reading the Quorum status from the file: {exc}", path=path) from None
    if not isinstance(node, dict):
        raise ParseError(f"Deserialized node {line} is not an object node", path=path, offset=0)
    if line.lstrip(" \t")[end:].strip(" \t"):
        notes.append("content after the JSON object on the first line (ignored by Kafka)")
    if len(lines) > 1:
        notes.append("more than one line (Kafka reads only the first)")
    if "data_version" not in node:
        raise ParseError(f"Deserialized node {line} does not have data_version field", path=path, offset=0)
    version = _jackson_short(node["data_version"])
    if version not in QUORUM_STATE_VERSIONS:
        raise ParseError(
            f"data_version ({version}) is not within the min (0) and max (1) supported version",
            path=path,
            offset=0,
        )
    values: dict[str, object] = {}
    for name, kind in _QUORUM_FIELDS[version].items():
        if name not in node:
            raise ParseError(
                f"QuorumStateData: unable to locate field '{name}', which is mandatory in version {version}",
                path=path,
                offset=0,
            )
        values[name] = _quorum_value(name, kind, node[name], path)
    return QuorumState(
        data_version=version,
        leader_id=values["leaderId"],
        leader_epoch=values["leaderEpoch"],
        voted_id=values["votedId"],
        cluster_id=values.get("clusterId"),
        voted_directory_id=values.get("votedDirectoryId"),
        applied_offset=values.get("appliedOffset"),
        current_voters=values.get("currentVoters"),
        raw=node,
        notes=notes,
    )


def _quorum_value(name: str, kind: str, value: object, path: str | None) -> object:
    def bad(expected: str) -> ParseError:
        return ParseError(f"QuorumStateData expected {expected} for '{name}', but got {value!r}", path=path)

    if kind in ("int32", "int64"):
        bits = 32 if kind == "int32" else 64
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
        ):
            raise bad(f"an {kind}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if kind == "uuid":
        if not isinstance(value, str):
            raise bad("a UUID string")
        try:
            return _java_uuid(value)
        except ParseError as exc:
            raise ParseError(exc.message, path=path) from None
    # currentVoters: null or [{"voterId": int32}, ...]
    if value is None:
        return None
    if not isinstance(value, list):
        raise bad("an array")
    voters = []
    for voter in value:
        if not isinstance(voter, dict) or "voterId" not in voter:
            raise bad("objects with a voterId")
        voters.append(_quorum_value("voterId", "int32", voter["voterId"], path))
    return voters


# ------------------------------------------------------------------------------------ .kafka_cleanshutdown


@dataclass
class CleanShutdown:
    """``.kafka_cleanshutdown`` (§12.3). Its presence alone means "no recovery needed"; since 3.7 it also
    holds the broker epoch. ``empty`` is the pre-3.7 marker; ``broker_epoch`` is None when Kafka would read
    none."""

    empty: bool
    version: int | None = None
    broker_epoch: int | None = None
    notes: list[str] = field(default_factory=list)


def parse_clean_shutdown(data: bytes | memoryview, path: str | None = None) -> CleanShutdown:
    """Kafka 4.0's ``CleanShutdownFileHandler.read``: the whole file as JSON
    ``{"version":0,"brokerEpoch":N}``; any failure is tolerated (no broker epoch), so this never raises."""
    raw = bytes(data)
    if not raw:
        return CleanShutdown(empty=True, notes=["empty file (pre-3.7 clean shutdown marker)"])
    text = raw.decode("utf-8", errors="replace")
    try:
        node = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return CleanShutdown(empty=False, notes=[f"unreadable content, no broker epoch: {exc}"])
    if not isinstance(node, dict):
        return CleanShutdown(empty=False, notes=["content is not a JSON object, no broker epoch"])
    result = CleanShutdown(empty=False)
    version = node.get("version", 0)
    if isinstance(version, int) and not isinstance(version, bool) and -(2**31) <= version < 2**31:
        result.version = version
        if version != 0:
            result.notes.append(f"unexpected version {version} (Kafka writes 0 and does not check it)")
    else:
        result.notes.append(f"unreadable version {version!r}, no broker epoch")
        return result
    epoch = node.get("brokerEpoch")
    if isinstance(epoch, str):
        parsed = _java_parse_long(epoch)
        if parsed is not None:
            result.notes.append("brokerEpoch is a JSON string (Jackson coerces it)")
        epoch = parsed
    if isinstance(epoch, int) and not isinstance(epoch, bool) and -(2**63) <= epoch < 2**63:
        result.broker_epoch = epoch
    else:
        result.notes.append(f"missing or unreadable brokerEpoch {node.get('brokerEpoch')!r}")
    return result


# ------------------------------------------------------------------------------------------- names (§13)

PARTITION_DIR_KINDS = {"-delete": "delete", "-future": "future", "-stray": "stray"}
_SUFFIXED_DIR = {
    suffix: re.compile(f"({_JAVA_NON_SPACE}+)-({_JAVA_NON_SPACE}+)\\.({_JAVA_NON_SPACE}+){suffix}")
    for suffix in PARTITION_DIR_KINDS
}
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
SEGMENT_STATES = {".deleted": "deleted", ".cleaned": "cleaned", ".swap": "swap"}
_SEGMENT_NAME = re.compile(
    r"([0-9]+)(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?"
)
_KRAFT_SNAPSHOT = re.compile(
    r"([0-9]{20})-([0-9]{10})(?:(\.checkpoint)|-[^./]+(\.checkpoint\.part)|(\.checkpoint\.deleted))"
)


def parse_partition_dir_name(name: str) -> tuple[str, int, str, str | None]:
    """``LocalLog.parseTopicPartitionName``: (topic, partition, kind, unique id).

    ``kind`` is ``live``, ``future``, ``delete`` or ``stray``; suffixed names must match
    ``^(\\S+)-(\\S+)\\.(\\S+)-<suffix>$`` and lose ``.<id>-<suffix>``; the topic is what precedes the
    last ``-`` (``my-topic.v2-3`` is topic ``my-topic.v2``, partition 3).
    """

    def invalid() -> ParseError:
        return ParseError(
            f"Found directory {name}, '{name}' is not in the form of topic-partition or "
            "topic-partition.uniqueId-delete (if marked for deletion).\n"
            "Kafka's log directories (and children) should only contain Kafka topic data.",
            path=name,
        )

    if not name or "-" not in name:
        raise invalid()
    kind, unique_id, base = "live", None, name
    for suffix, suffix_kind in PARTITION_DIR_KINDS.items():
        if name.endswith(suffix):
            if not _SUFFIXED_DIR[suffix].fullmatch(name):
                raise invalid()
            dot = name.rindex(".")
            kind, unique_id, base = suffix_kind, name[dot + 1 : -len(suffix)], name[:dot]
            break
    dash = base.rfind("-")
    topic, partition_text = base[:dash], base[dash + 1 :]
    partition = _java_parse_int(partition_text)
    if dash < 0 or not topic or partition is None:
        raise invalid()
    return topic, partition, kind, unique_id


def parse_segment_file_name(name: str) -> tuple[int, str, str | None]:
    """(base offset, suffix, state) of a segment file name such as ``00000000000000000750.timeindex.deleted``.

    ``suffix`` is one of ``.log .index .timeindex .txnindex .snapshot``; ``state`` is None, ``deleted``,
    ``cleaned`` or ``swap``. Kafka parses the offset with ``Long.parseLong`` of the text before the first
    ``.``; it writes 20 digits (compare with :func:`segment_file_name` to spot other spellings).
    """
    match = _SEGMENT_NAME.fullmatch(name)
    offset = _java_parse_long(match.group(1)) if match else None
    if match is None or offset is None:
        raise ParseError(f"{name!r} is not a segment file name (<offset><suffix>[.deleted|.cleaned|.swap])")
    state = SEGMENT_STATES[match.group(3)] if match.group(3) else None
    return offset, match.group(2), state


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``<base offset, 20 digits><suffix>``, e.g. ``segment_file_name(750, ".log")``."""
    if base_offset < 0:
        raise ValueError("offsets in file names are never negative")
    return f"{base_offset:020d}{suffix if suffix.startswith('.') else '.' + suffix}"


def parse_kraft_snapshot_file_name(name: str) -> tuple[int, int, str | None]:
    """(end offset, epoch, state) of ``N-EEEEEEEEEE.checkpoint`` (state None), ``N-E-<id>.checkpoint.part``
    (``partial``) or ``N-E.checkpoint.deleted`` (``deleted``), with 20-digit offset and 10-digit epoch."""
    match = _KRAFT_SNAPSHOT.fullmatch(name)
    end_offset = _java_parse_long(match.group(1)) if match else None
    epoch = _java_parse_int(match.group(2)) if match else None
    if match is None or end_offset is None or epoch is None:
        raise ParseError(f"{name!r} is not a KRaft snapshot file name (<20 digits>-<10 digits>.checkpoint)")
    state = "partial" if match.group(4) else "deleted" if match.group(5) else None
    return end_offset, epoch, state


def parse_kraft_snapshot_name(name: str) -> tuple[int, int]:
    """(end offset, epoch) of a KRaft snapshot ``<20-digit end offset>-<10-digit epoch>.checkpoint``."""
    end_offset, epoch, state = parse_kraft_snapshot_file_name(name)
    if state is not None:
        raise ParseError(f"{name!r} is not a complete KRaft snapshot (.checkpoint)")
    return end_offset, epoch


def kraft_snapshot_file_name(end_offset: int, epoch: int) -> str:
    """``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``."""
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"
