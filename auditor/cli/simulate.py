"""``kafka-auditor simulate``: write multi-broker Kafka log directories with known ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from auditor.cli.common import fail


def _list(value: bool) -> None:
    if not value:
        return
    from auditor.simulate import SCENARIOS

    width = max(len(name) for name in SCENARIOS)
    for name, scenario in SCENARIOS.items():
        typer.echo(f"{name:<{width}}  {scenario.description}")
    raise typer.Exit()


def simulate_command(
    scenario: str | None = typer.Argument(None, help="Scenario name (see --list)."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Output directory (must not exist or be empty)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed writes the same bytes."),
    brokers: int = typer.Option(3, "--brokers", help="Number of brokers."),
    topics: int = typer.Option(1, "--topics", help="Number of topics."),
    partitions: int = typer.Option(1, "--partitions", help="Partitions per topic."),
    records: int = typer.Option(
        1000,
        "--records",
        help="Records produced per partition (with --scale: one-record batches per partition).",
    ),
    segment_bytes: int | None = typer.Option(
        None, "--segment-bytes", help="segment.bytes of every topic [default: 16384, or 1 MiB with --scale]."
    ),
    compression: str = typer.Option("none", "--compression", help="none, gzip, snappy, lz4 or zstd."),
    truncation: str | None = typer.Option(
        None, "--truncation", help="Force follower truncation: hw (pre-0.11) or epoch (KIP-101/KIP-279)."
    ),
    scale: bool = typer.Option(
        False, "--scale", help="Benchmark mode: many partitions of many batches, fast."
    ),
    list_: bool = typer.Option(False, "--list", callback=_list, is_eager=True, help="List the scenarios."),
) -> None:
    """Simulate Kafka replication (leader epochs, HW/LEO, ISR, truncation, crashes) and write real Kafka 4.0
    log directories for each broker plus ground-truth.json. SCENARIO is one of the names shown by --list.
    """
    from auditor.simulate import SCENARIOS, SimOptions, run_scenario

    if scenario is None:
        raise fail("missing SCENARIO (see `kafka-auditor simulate --list`)")
    if scenario not in SCENARIOS:
        raise fail(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    if out is None:
        raise fail("--out DIR is required")
    options = SimOptions(
        seed=seed,
        brokers=brokers,
        topics=topics,
        partitions=partitions,
        records=records,
        segment_bytes=segment_bytes or (1 << 20 if scale else 16384),
        compression=compression,
        truncation=truncation,
        scale=scale,
    )
    try:
        truth = run_scenario(scenario, out, options)
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    summary = truth.get("summary") if isinstance(truth, dict) else None
    typer.echo(f"wrote {out} ({scenario}, seed {seed}); ground truth: {out / 'ground-truth.json'}")
    if summary:
        typer.echo(json.dumps(summary, indent=2))
