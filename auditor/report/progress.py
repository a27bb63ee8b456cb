"""The progress display of long commands (``scan``, ``audit``, ``ingest``, ``report``): one line per stage on
stderr, with what is done of what is known (log dirs, MiB, Spark tasks) and the elapsed seconds.

One small API for every command and engine::

    with Stages(enabled=None) as stages:
        with stages.stage("starting Spark (JVM)"):
            ...
        with stages.stage("scanning", total=size, unit="bytes") as stage:
            stage.update(done, label="orders-0")

Shown only when stderr is a terminal (not piped, not ``TERM=dumb``) unless forced (``--progress``); never
written to stdout, so a report on stdout stays clean. Whether shown or not, every stage is timed
(:attr:`Stages.timings`) and logged on the ``auditor.progress`` logger (``-v`` prints it). An engine that
must not import this package (``auditor.spark``) takes any object with a :meth:`Stages.stage` method.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

log = logging.getLogger("auditor.progress")

POLL_SECONDS = 0.25
"""How often a stage's poller (:attr:`Stages.poll`, e.g. Spark's task counts) is asked."""

Poll = Callable[[], "tuple[int, int] | None"]
"""A poller: (done, total) of the work running now (None: nothing known)."""


def terminal(stream: IO[str]) -> bool:
    """True when ``stream`` is an interactive terminal that can redraw a line (a TTY, ``TERM`` not dumb)."""
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    return bool(is_tty) and os.environ.get("TERM", "") not in ("dumb", "unknown")


def binary_unit(n: float) -> tuple[str, int]:
    """The binary unit (B, KiB, MiB, GiB, TiB, as every report of the tool counts bytes) for ``n`` bytes."""
    size = 1
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < size * 1024:
            return unit, size
        size *= 1024
    return "TiB", size


def human_bytes(n: float) -> str:
    """``n`` bytes in a binary unit: ``731 B``, ``3.1 KiB``, ``243.5 MiB``."""
    unit, size = binary_unit(n)
    return f"{n:.0f} B" if unit == "B" else f"{n / size:.1f} {unit}"


def amount(done: float, total: float | None, unit: str) -> str:
    """What is done of what is known: ``12.0/243.5 MiB`` (bytes in the unit of the total), ``3/4 inputs``,
    ``17/24 Spark tasks``."""
    if unit == "bytes":
        if not total:
            return human_bytes(done)
        name, size = binary_unit(total)
        if name == "B":
            return f"{done:.0f}/{total:.0f} B"
        return f"{done / size:.1f}/{total / size:.1f} {name}"
    suffix = f" {unit}" if unit else ""
    if total:
        return f"{int(done)}/{int(total)}{suffix}"
    return f"{int(done)}{suffix}" if done else ""


class Stage:
    """One running stage: :meth:`update`/:meth:`advance` what is done (drawn when the display is on)."""

    def __init__(self, owner: Stages, name: str, total: float | None, unit: str, task: Any) -> None:
        self.owner = owner
        self.name = name
        self.total = total
        self.unit = unit
        self.done: float = 0
        self.label = ""
        self.task = task
        self.started = time.perf_counter()
        self.polled = False

    def update(self, done: float, total: float | None = None, label: str | None = None) -> None:
        """Set what is done (and the total when it changed; ``label``: the item just finished)."""
        self.done = done
        if total is not None:
            self.total = total
        if label is not None:
            self.label = label
        self.owner._draw(self)

    def advance(self, n: float = 1, label: str | None = None) -> None:
        """``n`` more done."""
        self.update(self.done + n, label=label)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


class _Null:
    """What :meth:`Stages.stage` gives when nothing is drawn (updates cost nothing)."""

    def update(self, done: float, total: float | None = None, label: str | None = None) -> None:
        pass

    def advance(self, n: float = 1, label: str | None = None) -> None:
        pass


class Stages:
    """The stages of one command on stderr (see the module docstring). ``enabled``: True forces the display
    (also when piped), False silences it, None shows it on a terminal only. ``poller``: makes, for each stage
    opened with ``poll=True`` while the display is on, a poller asked every :data:`POLL_SECONDS` (``audit``:
    the Spark tasks of the stage, :func:`auditor.spark.startup.spark_tasks`)."""

    def __init__(self, enabled: bool | None = None, *, file: IO[str] | None = None) -> None:
        self.file = file if file is not None else sys.stderr
        self.enabled = terminal(self.file) if enabled is None else enabled
        self.forced = bool(enabled) and not terminal(self.file)
        self.timings: list[tuple[str, float]] = []
        self.poller: Callable[[], Poll] | None = None
        self.failed: str | None = None  # the first stage that raised (named in the command's error line)
        self._progress: Any = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------------------------------- display

    def __enter__(self) -> Stages:
        if self.enabled and self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
            from rich.text import Text

            console = Console(
                file=self.file,
                force_terminal=True if self.forced else None,
                markup=False,
                highlight=False,
                emoji=False,
            )

            class Mark(SpinnerColumn):
                """A spinner while the stage runs, then ✓ (done) or ✗ (failed)."""

                def render(self, task: Any) -> Any:
                    if task.finished:
                        return Text(task.fields.get("mark", "✓"))
                    return super().render(task)

            self._progress = Progress(
                Mark(),
                TextColumn("{task.description}", markup=False),
                BarColumn(bar_width=24),
                TextColumn("{task.fields[amount]}", markup=False),
                TextColumn("{task.fields[seconds]}", markup=False, justify="right"),
                TextColumn("{task.fields[label]}", markup=False, style="dim"),
                console=console,
                transient=False,
                # the report goes to stdout: never capture it into the display on stderr
                redirect_stdout=False,
                redirect_stderr=True,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing (the finished stages stay on screen); before anything else is printed there."""
        with self._lock:
            progress, self._progress = self._progress, None
        if progress is not None:
            progress.stop()

    def _draw(self, stage: Stage, finished: str | None = None) -> None:
        progress = self._progress
        if progress is None or stage.task is None:
            return
        from auditor.text import visible

        fields = {
            "amount": amount(stage.done, stage.total, stage.unit),
            "seconds": f"{stage.seconds:.1f} s",
            # a partition directory's name is evidence: no control characters reach the terminal
            "label": visible(stage.label)[-40:] if finished is None else "",
        }
        total = stage.total if stage.total else None
        if finished is not None:
            progress.update(
                stage.task,
                description=f"{stage.name}{finished}",
                mark="✗" if finished else "✓",
                total=total or 1,
                completed=total or 1,
                **fields,
            )
            progress.stop_task(stage.task)
            return
        progress.update(stage.task, total=total, completed=stage.done if total else 0, **fields)

    # ----------------------------------------------------------------------------------------- stages

    @contextmanager
    def stage(
        self, name: str, total: float | None = None, unit: str = "", *, poll: bool = False
    ) -> Iterator[Stage | _Null]:
        """Run one stage: drawn while it runs, then ``✓ name  seconds`` (``failed`` on an exception);
        timed and logged in every case. ``poll``: let :attr:`poller` fill in what is done (Spark tasks)."""
        log.info("%s ...", name)
        task = None
        if self._progress is not None:
            task = self._progress.add_task(name, total=total, amount="", seconds="", label="")
        stage = Stage(self, name, total, unit, task)
        stop = threading.Event()
        ticker = None
        if task is not None:
            counts = None
            if poll and self.poller is not None:
                try:
                    counts = self.poller()
                except Exception:  # noqa: BLE001 - a display must never break the command
                    counts = None
            ticker = threading.Thread(
                target=self._tick, args=(stage, counts, stop), daemon=True, name="stages"
            )
            ticker.start()
        ok = False
        try:
            yield stage if task is not None else _Null()
            ok = True
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
            seconds = stage.seconds
            if ok and poll and stage.total:
                stage.done = stage.total  # every Spark task of the stage has run
            self.timings.append((name, seconds))
            if not ok and self.failed is None:
                self.failed = name
            log.info("%s: %s in %.2f s", name, "done" if ok else "failed", seconds)
            self._draw(stage, finished="" if ok else " (failed)")

    def _tick(self, stage: Stage, poll: Poll | None, stop: threading.Event) -> None:
        """Redraw the elapsed seconds (and ask ``poll``) until the stage ends."""
        while not stop.wait(POLL_SECONDS):
            if poll is not None:
                try:
                    counts = poll()
                except Exception:  # noqa: BLE001 - a display must never break the command
                    counts = None
                if counts is not None:
                    stage.done, stage.total = counts
            self._draw(stage)


class NoStages:
    """Stages that are neither drawn nor timed (a library call without a display)."""

    timings: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str, total: float | None = None, unit: str = "", *, poll: bool = False):
        yield _Null()


class _Stderr(logging.StreamHandler):
    """A handler writing to the current ``sys.stderr`` (the progress display may stand in for it)."""

    @property  # type: ignore[override]
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass


def configure_logging(verbose: int, stream: IO[str] | None = None) -> None:
    """``-v``: the ``auditor`` loggers' INFO lines on stderr (``-vv``: DEBUG); nothing without it."""
    logger = logging.getLogger("auditor")
    for handler in list(logger.handlers):
        if getattr(handler, "_kafka_auditor", False):
            logger.removeHandler(handler)
    if verbose <= 0:
        logger.setLevel(logging.WARNING)
        return
    handler: logging.StreamHandler = _Stderr() if stream is None else logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("kafka-auditor: %(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._kafka_auditor = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    logger.propagate = False
