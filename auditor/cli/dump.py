"""``kafka-auditor dump``: Kafka files decoded like ``kafka-dump-log.sh``, read-only."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from auditor.cli.messages import fail_all


class DumpFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class Encoding(str, Enum):
    auto = "auto"
    base64 = "base64"


class Decoder(str, Enum):
    auto = "auto"
    metadata = "metadata"
    offsets = "offsets"
    transaction_log = "transaction-log"
    none = "none"


def _flag(*names: str, help: str) -> Any:
    """An option that is off unless given."""
    return typer.Option(False, *names, help=help)


def dump_command(
    files: list[Path] | None = typer.Argument(
        None,
        help="Kafka files: .log, KRaft .checkpoint, .index, .timeindex, "
        ".txnindex, .snapshot, checkpoints, partition.metadata, meta.properties, "
        "quorum-state, .kafka_cleanshutdown; or a partition directory (all its files, segment by segment).",
    ),
    listed: str | None = typer.Option(
        None, "--files", help="Comma-separated files, as kafka-dump-log.sh takes them (added to FILES)."
    ),
    deep: bool = _flag("--deep", "--deep-iteration", help="Decode the records inside each batch."),
    print_values: bool = _flag(
        "--print-values", "--print-data-log", help="Print keys, values and headers (implies --deep)."
    ),
    encoding: Encoding = typer.Option(
        Encoding.auto,
        "--encoding",
        help="Keys, values, header values: auto is UTF-8 text when valid UTF-8, else base64 "
        "(flagged utf8/base64 in JSON, prefixed base64: in text); base64 always base64.",
    ),
    decoder: Decoder = typer.Option(
        Decoder.auto,
        "--decoder",
        help="Payload decoder: auto picks metadata for __cluster_metadata and KRaft "
        "snapshots, offsets for __consumer_offsets, transaction-log for __transaction_state.",
    ),
    transaction_log_decoder: bool = _flag(
        "--transaction-log-decoder",
        help="Decode __transaction_state records (transaction coordinator state), like "
        "kafka-dump-log.sh --transaction-log-decoder: same as --decoder transaction-log --print-values.",
    ),
    offsets_decoder: bool = _flag(
        "--offsets-decoder",
        help="kafka-dump-log.sh's name for --decoder offsets --print-values (__consumer_offsets).",
    ),
    metadata_decoder: bool = _flag(
        "--cluster-metadata-decoder",
        help="kafka-dump-log.sh's name for --decoder metadata --print-values (__cluster_metadata).",
    ),
    index_sanity_check: bool = _flag(
        "--index-sanity-check",
        help="Check the files (indexes: Kafka's sanity checks) without printing their entries: one line "
        "per file, as kafka-dump-log.sh --index-sanity-check.",
    ),
    fmt: DumpFormat = typer.Option(DumpFormat.text, "--format", "-f", help="Output format."),
    max_bytes: int | None = typer.Option(
        None,
        "--max-bytes",
        min=0,
        help="Read at most this many bytes of each file; a file cut short ends with a marker line "
        "(text) or a stop event with reason max-bytes (JSON). A cut is no error: only what it leaves "
        "whole is judged.",
    ),
) -> None:
    """Decode Kafka files, like kafka-dump-log.sh, read-only.

    Exit code 0 when every file decodes and validates, 2 when one does not (the valid prefix is
    printed first, then a marker saying where decoding stopped and why).
    """
    from auditor.dump import Dumper, DumpOptions
    from auditor.report.dump_events import RENDERERS, guarded

    for flag, name, wanted in (
        (transaction_log_decoder, "--transaction-log-decoder", Decoder.transaction_log),
        (offsets_decoder, "--offsets-decoder", Decoder.offsets),
        (metadata_decoder, "--cluster-metadata-decoder", Decoder.metadata),
    ):
        if flag:
            if decoder not in (Decoder.auto, wanted):
                raise fail_all([f"{name} conflicts with --decoder {decoder.value}"])
            decoder, print_values = wanted, True
    paths = expand_paths([*(files or []), *(Path(p) for p in (listed or "").split(",") if p.strip())])
    if not paths:
        raise fail_all(["missing FILES (or --files); see `kafka-auditor dump --help`"])
    options = DumpOptions(
        deep=deep or print_values,
        print_values=print_values,
        encoding=encoding.value,
        max_bytes=max_bytes,
        decoder=decoder.value,
    )
    dumper = Dumper(options)
    errors: list = []
    out = sys.stdout
    try:
        if index_sanity_check:
            _sanity_check([str(f) for f in paths], dumper, errors, out)
        else:
            RENDERERS[fmt.value](guarded([str(f) for f in paths], dumper.stream, errors), out)
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if errors:
        raise fail_all([str(err) for err in errors])


SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
"""The files of one segment, in the order a partition directory is dumped (Kafka's own order of them)."""


def expand_paths(paths: list[Path]) -> list[Path]:
    """``paths`` with every directory replaced by its files: segment by segment in base-offset order (the
    ``.log``, then its indexes, then the producer snapshot), then the partition's other files by name
    (``leader-epoch-checkpoint``, ``partition.metadata``); sub-directories and dot-files left out."""
    out: list[Path] = []
    for path in paths:
        if not path.is_dir():
            out.append(path)
            continue
        segments: list[tuple[int, int, Path]] = []
        others: list[Path] = []
        for child in sorted(path.iterdir()):
            if not child.is_file() or child.name.startswith("."):
                continue
            stem, dot, suffix = child.name.partition(".")
            if stem.isdigit() and f".{suffix}" in SEGMENT_SUFFIXES:
                segments.append((int(stem), SEGMENT_SUFFIXES.index(f".{suffix}"), child))
            elif not stem.isdigit():
                others.append(child)
        out += [p for _base, _rank, p in sorted(segments)] + others
    return out


def _sanity_check(paths: list[str], dumper, errors: list, out) -> None:
    """Every file decoded and checked, nothing printed but one line per file."""
    from auditor.report.dump_events import guarded

    failed: dict[str, str] = {}
    for event in guarded(paths, dumper.stream, errors):
        if event.get("kind") == "failed":
            failed.setdefault(str(event["path"]), event["message"])
    for path in paths:
        why = failed.get(path)
        out.write(f"{path}: passed the sanity check\n" if why is None else f"{path}: {why}\n")
