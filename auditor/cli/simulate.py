"""``kafka-auditor simulate``: write multi-broker Kafka log directories with known ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from auditor.cli.messages import fail


def _list(value: bool) -> None:
    if not value:
        return
    from auditor.simulate import CAPTURE_SCENARIOS, SCENARIOS

    described = {name: s.description for name, s in SCENARIOS.items()} | CAPTURE_SCENARIOS
    width = max(len(name) for name in described)
    for name, description in described.items():
        typer.echo(f"{name:<{width}}  {description}")
    raise typer.Exit()


def simulate_command(
    scenario: str | None = typer.Argument(None, help="Scenario name (see --list)."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Output directory (must not exist or be empty)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed writes the same bytes."),
    brokers: int | None = typer.Option(None, "--brokers", help="Number of brokers [default: 3; history: 6]."),
    topics: int | None = typer.Option(None, "--topics", help="Number of topics [default: 1; history: 4]."),
    partitions: int | None = typer.Option(
        None, "--partitions", help="Partitions per topic [default: 1; history: 8]."
    ),
    days: int = typer.Option(30, "--days", help="history: nights of checkpoint captures."),
    capture_format: str = typer.Option(
        "both", "--format", help="history: write the captures as folders, archives (.tgz) or both."
    ),
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
    from auditor.simulate import CAPTURE_SCENARIOS, SCENARIOS, SimOptions, run_scenario

    if scenario is None:
        raise fail("missing SCENARIO (see `kafka-auditor simulate --list`)")
    if scenario not in SCENARIOS and scenario not in CAPTURE_SCENARIOS:
        raise fail(f"unknown scenario {scenario!r}; known: {', '.join([*SCENARIOS, *CAPTURE_SCENARIOS])}")
    if out is None:
        raise fail("--out DIR is required")
    if scenario == "history":
        _history(out, seed, _or(brokers, 6), _or(topics, 4), _or(partitions, 8), days, capture_format)
        return
    options = SimOptions(
        seed=seed,
        brokers=_or(brokers, 3),
        topics=_or(topics, 1),
        partitions=_or(partitions, 1),
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


def _or(value: int | None, default: int) -> int:
    """An option's value, or the scenario's default when it was not given."""
    return default if value is None else value


def _history(out: Path, seed: int, brokers: int, topics: int, partitions: int, days: int, fmt: str) -> None:
    """``simulate history``: nightly checkpoint captures and their ground truth."""
    from auditor.simulate.history import HistoryOptions, run_history

    options = HistoryOptions(
        seed=seed, brokers=brokers, topics=topics, partitions=partitions, days=days, format=fmt
    )
    try:
        truth = run_history(out, options)
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {out} (history, seed {seed}); ground truth: {out / 'ground-truth.json'}")
    typer.echo(json.dumps(truth["summary"], indent=2))
