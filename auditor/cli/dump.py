"""``kafka-auditor dump``: Kafka files decoded like ``kafka-dump-log.sh``, read-only."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

import typer

from auditor.cli.common import fail_all


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


def dump_command(
    files: list[Path] = typer.Argument(
        ...,
        help="Kafka files: .log, KRaft .checkpoint, .index, .timeindex, "
        ".txnindex, .snapshot, checkpoints, partition.metadata, meta.properties, "
        "quorum-state, .kafka_cleanshutdown.",
    ),
    deep: bool = typer.Option(False, "--deep", help="Decode the records inside each batch."),
    print_values: bool = typer.Option(
        False, "--print-values", help="Print keys, values and headers (implies --deep)."
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
    transaction_log_decoder: bool = typer.Option(
        False,
        "--transaction-log-decoder",
        help="Decode __transaction_state records (transaction coordinator state), like "
        "kafka-dump-log.sh --transaction-log-decoder: same as --decoder transaction-log --print-values.",
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
    from auditor.dump_render import RENDERERS, guarded

    if transaction_log_decoder:
        if decoder not in (Decoder.auto, Decoder.transaction_log):
            raise fail_all([f"--transaction-log-decoder conflicts with --decoder {decoder.value}"])
        decoder, print_values = Decoder.transaction_log, True
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
        RENDERERS[fmt.value](guarded([str(f) for f in files], dumper.stream, errors), out)
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if errors:
        raise fail_all([str(err) for err in errors])
