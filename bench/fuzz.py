"""Fuzz every parser entry point with mutated real Kafka files (issue 8).

Usage: python bench/fuzz.py [--count 1000000] [--jobs N] [--seed 0] [--save out/fuzz] [--corpus DIR]
       python bench/fuzz.py --seed S --replay INDEX   (re-run one input in this process, with its traceback)

Seeds are valid files from the project's builders, ``kafka-auditor simulate`` clusters and, when present, the
real-Kafka corpus (``../shared/corpus``; ``--no-corpus`` to leave it out). Input ``i`` goes to target
``i mod #targets`` and is a stack of edits (bit flips, insertions, deletions, truncations, splices of two
real files, length-field extremes, text edits) drawn from ``Random((seed << 32) ^ i)``: the same seeds and
``--seed`` give the same inputs on any machine and with any ``--jobs``.

Each input runs in a worker process under an address-space limit (``RLIMIT_AS``, ``--memory-limit-mb``) with
a per-input watchdog. Outcomes per entry point: ``ParseError`` (expected for bad input), accepted, other
exception (a bug: the input and traceback are saved under ``--save``, one file per exception type and
location), over the time limit (``--time-limit``: 1 s of CPU time; aborted after 5x; a worker blocked or
stuck in native code for 60 s is killed and the input saved), over +200 MB (growth of the worker's peak
RSS while parsing that input: the peak is reset before each input through ``/proc/self/clear_refs`` and
read back as ``VmHWM``, or ``getrusage`` ``ru_maxrss`` without /proc; a ``MemoryError`` under the
address-space limit counts here too). Exit status 1 if any input raised another exception or went over a
limit.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's thread pool would eat the address-space limit

from fuzz_mutate import mutate, mutate_inside  # noqa: E402
from fuzz_seeds import build_seeds, default_corpus, fingerprint  # noqa: E402
from fuzz_targets import TARGETS, TEXT_KINDS, Scratch, Target  # noqa: E402

from parsers.errors import ParseError  # noqa: E402

OUTCOMES = ("parse_error", "accepted", "exception", "over_time", "over_memory")
HEADINGS = ("inputs", "parse errors", "accepted", "other exc.", "over 1 s", "over +200 MB")
CHUNK = 250
"""Inputs per work item sent to a worker."""
_MB = 1024  # VmHWM and ru_maxrss are in KiB on Linux


class InputTimeout(BaseException):
    """Raised in a worker by the per-input alarm (a BaseException: no parser's ``except`` catches it)."""


@dataclass
class Settings:
    """Limits of one run. An input is aborted (``InputTimeout``, raised by ``SIGPROF``) after ``abort_after``
    seconds of CPU time; a worker that does not come back (blocked, or stuck in native code) is killed after
    ``kill_after`` seconds of wall time."""

    time_limit: float = 1.0
    memory_growth_mb: float = 200
    memory_limit_mb: int = 2048
    scratch_root: str = ""
    abort_after: float = 0.0
    kill_after: float = 0.0

    def __post_init__(self) -> None:
        self.abort_after = self.abort_after or max(5 * self.time_limit, 2.0)
        self.kill_after = self.kill_after or max(60.0, 4 * self.abort_after)


@dataclass
class Event:
    """One input that is not a plain parse error or acceptance."""

    index: int
    target: str
    outcome: str
    kind: str
    location: str
    traceback: str
    seconds: float
    grown_mb: float


@dataclass
class Totals:
    """Counts per entry point, and per kind of event (target, outcome, exception type, location) the
    first input (lowest index) and how many inputs had it: memory stays small whatever the run finds."""

    per_target: dict[str, Counter] = field(default_factory=dict)
    events: dict[tuple, list] = field(default_factory=dict)
    slowest: tuple[float, str, int] = (0.0, "", -1)
    largest: tuple[float, str, int] = (0.0, "", -1)

    def merge(self, counts: dict[str, Counter], events: list[Event], slowest, largest) -> None:
        for name, counter in counts.items():
            self.per_target.setdefault(name, Counter()).update(counter)
        for event in events:
            key = (event.target, event.outcome, event.kind, event.location)
            group = self.events.setdefault(key, [event, 0])
            group[1] += 1
            if event.index < group[0].index:
                group[0] = event
        self.slowest = max(self.slowest, slowest)
        self.largest = max(self.largest, largest)


# ------------------------------------------------------------------------------------------- inputs


class Inputs:
    """Input ``i`` as a pure function of (seeds, run seed, i)."""

    def __init__(self, seeds: dict[str, list[bytes]], run_seed: int, targets: tuple[Target, ...]) -> None:
        self.seeds = seeds
        self.run_seed = run_seed
        self.targets = [t for t in targets if any(seeds.get(k) for k in t.kinds)]
        self.kinds = sorted(seeds)

    def make(self, index: int) -> tuple[Target, bytes, random.Random]:
        target = self.targets[index % len(self.targets)]
        rng = random.Random((self.run_seed << 32) ^ index)
        kind = rng.choice([k for k in target.kinds if self.seeds.get(k)])
        seed = rng.choice(self.seeds[kind])
        other_kind = rng.choice(self.kinds) if rng.random() < 0.2 else kind
        other = rng.choice(self.seeds[other_kind])
        if target.inside and rng.random() < 0.3:
            return target, mutate_inside(rng, seed), rng
        data = mutate(
            rng,
            seed,
            other,
            text=kind in TEXT_KINDS or target.text,
            fields=target.fields,
            layout=target.layout,
        )
        if target.fixup is not None and rng.random() < 0.6:
            data = target.fixup(data)
        return target, data, rng


# ------------------------------------------------------------------------------------------- worker


def _location(exc: BaseException) -> str:
    """The innermost frame in the project's code (``parsers/`` or ``auditor/``), else the innermost one."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/parsers/" in f.filename or "/auditor/" in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    return f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno}"


class _Peak:
    """Per-input growth of the peak RSS: the peak is reset before each input (``/proc/self/clear_refs``)
    and read after it (``VmHWM`` of ``/proc/self/status``; ``getrusage`` ``ru_maxrss`` where /proc is
    missing, whose deltas then only count inputs that raise the process's all-time peak)."""

    def __init__(self) -> None:
        self._clear = self._open("/proc/self/clear_refs", os.O_WRONLY)
        self._status = self._open("/proc/self/status", os.O_RDONLY)

    @staticmethod
    def _open(path: str, flags: int) -> int | None:
        try:
            return os.open(path, flags)
        except OSError:
            return None

    def now(self) -> int:
        """Peak RSS in KiB since the last reset."""
        if self._status is not None:
            text = os.pread(self._status, 4096, 0)
            at = text.find(b"VmHWM:")
            if at >= 0:
                return int(text[at + 6 : text.index(b"kB", at)])
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def reset(self) -> None:
        if self._clear is not None:
            try:
                os.write(self._clear, b"5")
            except OSError:
                self._clear = None


def _limit_memory(limit_mb: int) -> None:
    if limit_mb > 0:
        limit = limit_mb << 20
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


_ARMED = [False]
"""True while an input runs: the alarm raises only then (never in the bookkeeping around it)."""


def _on_alarm(signum, frame) -> None:
    if _ARMED[0]:
        _ARMED[0] = False
        raise InputTimeout()


def run_one(inputs: Inputs, index: int, settings: Settings, scratch: Scratch, peak: _Peak):
    """Run input ``index``; returns (target name, outcomes, event or None, CPU seconds, grown MB).

    The time limit applies to the CPU time the input took (a busy shared machine does not make inputs
    slow); an input still running after ``abort_after`` seconds of CPU time is aborted.
    """
    target, data, rng = inputs.make(index)
    peak.reset()
    before = peak.now()
    exc_info: BaseException | None = None
    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, settings.abort_after)
    try:
        _ARMED[0] = True
        try:
            target.run(data, rng, scratch)
        finally:
            _ARMED[0] = False
        outcome = "accepted"
    except ParseError:
        outcome = "parse_error"
    except InputTimeout as exc:
        outcome, exc_info = "over_time", exc
    except MemoryError as exc:
        outcome, exc_info = "over_memory", exc
    except Exception as exc:  # noqa: BLE001 - what the fuzzer is looking for
        outcome, exc_info = "exception", exc
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    seconds = time.process_time() - start
    grown = (peak.now() - before) / _MB
    outcomes = [outcome]
    if outcome != "over_time" and seconds > settings.time_limit:
        outcomes.append("over_time")
    if outcome != "over_memory" and grown > settings.memory_growth_mb:
        outcomes.append("over_memory")
    event = None
    if len(outcomes) > 1 or outcome in ("exception", "over_time", "over_memory"):
        kind = type(exc_info).__name__ if exc_info is not None else "+".join(outcomes[1:])
        text = "".join(traceback.format_exception(exc_info)) if exc_info is not None else ""
        location = _location(exc_info) if exc_info is not None else "-"
        event = Event(
            index,
            target.name,
            outcomes[-1] if outcome in ("accepted", "parse_error") else outcome,
            kind,
            location,
            text,
            seconds,
            grown,
        )
    return target.name, outcomes, event, seconds, grown


def _worker(conn, slot: int, current, started, inputs: Inputs, settings: Settings) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGPROF, _on_alarm)
    _limit_memory(settings.memory_limit_mb)
    scratch = Scratch(os.path.join(settings.scratch_root, f"w{slot}-{os.getpid()}"))
    peak = _Peak()
    try:
        while True:
            work = conn.recv()
            if work is None:
                break
            first, last = work
            counts: dict[str, Counter] = {}
            events: list[Event] = []
            slowest, largest = (0.0, "", -1), (0.0, "", -1)
            for index in range(first, last):
                current[slot] = index
                started[slot] = time.monotonic()
                name, outcomes, event, seconds, grown = run_one(inputs, index, settings, scratch, peak)
                counter = counts.setdefault(name, Counter())
                counter["inputs"] += 1
                counter.update(outcomes)
                if event is not None:
                    events.append(event)
                slowest = max(slowest, (seconds, name, index))
                largest = max(largest, (grown, name, index))
            current[slot] = -1
            conn.send((work, counts, events, slowest, largest))
    finally:
        scratch.cleanup()


# ------------------------------------------------------------------------------------------- parent


class Pool:
    """Workers fed chunks of input indices through pipes; a stuck or dead worker is replaced, its current
    input recorded (over the time limit, or a crash) and the rest of its chunk queued again."""

    def __init__(self, jobs: int, inputs: Inputs, settings: Settings, total: int, totals: Totals) -> None:
        self.ctx = mp.get_context("fork")
        self.inputs = inputs
        self.settings = settings
        self.totals = totals
        self.queue = deque((i, min(i + CHUNK, total)) for i in range(0, total, CHUNK))
        self.current = self.ctx.Array("q", [-1] * jobs, lock=False)
        self.started = self.ctx.Array("d", [0.0] * jobs, lock=False)
        self.slots: list[dict | None] = [None] * jobs
        self.done = 0

    def _spawn(self, slot: int) -> None:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(
            target=_worker,
            args=(child, slot, self.current, self.started, self.inputs, self.settings),
            daemon=True,
        )
        proc.start()
        child.close()
        self.current[slot] = -1
        self.slots[slot] = {"proc": proc, "conn": parent, "work": None}

    def _feed(self, slot: int) -> None:
        state = self.slots[slot]
        if self.queue:
            state["work"] = self.queue.popleft()
            state["conn"].send(state["work"])
        else:
            state["work"] = None

    def _replace(self, slot: int, outcome: str, why: str) -> None:
        """Kill a stuck or dead worker, record its current input and requeue the rest of its chunk."""
        state = self.slots[slot]
        index = self.current[slot]
        first, last = state["work"]
        if state["proc"].is_alive():
            state["proc"].kill()
        state["proc"].join(5)
        state["conn"].close()
        if index < first or index >= last:
            index = first
        target = self.inputs.make(index)[0].name
        counter = Counter({"inputs": 1, outcome: 1})
        event = Event(index, target, outcome, why, "-", why, time.monotonic() - self.started[slot], 0.0)
        self.totals.merge({target: counter}, [event], (0.0, "", -1), (0.0, "", -1))
        self.done += 1
        if first < index:
            self.queue.appendleft((first, index))
        if index + 1 < last:
            self.queue.appendleft((index + 1, last))
        self._spawn(slot)
        self._feed(slot)

    def run(self, progress) -> None:
        for slot in range(len(self.slots)):
            self._spawn(slot)
            self._feed(slot)
        hard = self.settings.kill_after
        while any(s is not None and s["work"] is not None for s in self.slots):
            by_conn = {
                s["conn"]: i for i, s in enumerate(self.slots) if s is not None and s["work"] is not None
            }
            for conn in wait(list(by_conn), timeout=0.5):
                slot = by_conn[conn]
                try:
                    work, counts, events, slowest, largest = conn.recv()
                except (EOFError, OSError):
                    code = self.slots[slot]["proc"].exitcode
                    self.slots[slot]["proc"].join(5)
                    code = self.slots[slot]["proc"].exitcode if code is None else code
                    self._replace(slot, "exception", f"worker died (exit code {code})")
                    continue
                self.totals.merge(counts, events, slowest, largest)
                self.done += work[1] - work[0]
                self._feed(slot)
            now = time.monotonic()
            for slot, state in enumerate(self.slots):
                if (
                    state
                    and state["work"] is not None
                    and self.current[slot] >= 0
                    and now - self.started[slot] > hard
                ):
                    self._replace(slot, "over_time", f"worker stuck for more than {hard:.0f} s (killed)")
            progress(self.done)
        for state in self.slots:
            if state is not None:
                state["conn"].send(None)
                state["proc"].join(10)


# ------------------------------------------------------------------------------------------- reporting


def save_events(
    events: dict[tuple, list], inputs: Inputs, out_dir: Path, replay_args: str
) -> list[tuple[Event, int, Path]]:
    """One saved input per (target, outcome, exception type, location), with its traceback and replay line."""
    saved = []
    by_index = sorted(events.items(), key=lambda item: item[1][0].index)
    for (target, outcome, kind, location), (first, count) in by_index:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{target}-{outcome}-{kind}-{location}")
        data = inputs.make(first.index)[1]
        (out_dir / f"{stem}.bin").write_bytes(data)
        (out_dir / f"{stem}.txt").write_text(
            f"target {target}, {outcome}: {kind} at {location}\n"
            f"{count} input(s), first: index {first.index} ({len(data)} bytes), "
            f"{first.seconds:.3f} CPU s, +{first.grown_mb:.0f} MB\n"
            f"replay: python bench/fuzz.py {replay_args} --replay {first.index}\n\n{first.traceback}"
        )
        saved.append((first, count, out_dir / f"{stem}.bin"))
    return saved


def print_table(totals: Totals, targets: list[Target]) -> Counter:
    grand = Counter()
    width = max(len(t.name) for t in targets)
    print(f"{'entry point':<{width}}  " + "  ".join(f"{h:>12}" for h in HEADINGS))
    for target in targets:
        counter = totals.per_target.get(target.name, Counter())
        grand.update(counter)
        cells = [counter["inputs"]] + [counter[o] for o in OUTCOMES]
        print(f"{target.name:<{width}}  " + "  ".join(f"{c:>12,}" for c in cells))
    cells = [grand["inputs"]] + [grand[o] for o in OUTCOMES]
    print(f"{'total':<{width}}  " + "  ".join(f"{c:>12,}" for c in cells))
    return grand


def replay(inputs: Inputs, index: int, settings: Settings, dump: Path | None) -> int:
    target, data, _ = inputs.make(index)
    print(f"input {index}: target {target.name}, {len(data)} bytes")
    if dump is not None:
        dump.write_bytes(data)
        print(f"written to {dump}")
    scratch = Scratch(os.path.join(settings.scratch_root, f"replay-{os.getpid()}"))
    _, _, rng = inputs.make(index)
    start = time.perf_counter()
    try:
        target.run(data, rng, scratch)
        print(f"accepted in {time.perf_counter() - start:.3f} s")
        return 0
    except ParseError as exc:
        print(f"ParseError in {time.perf_counter() - start:.3f} s: {exc}")
        return 0
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1
    finally:
        scratch.cleanup()
        with contextlib.suppress(OSError):
            os.rmdir(settings.scratch_root)


def _scratch_root() -> str:
    base = (
        "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    )
    return os.path.join(base, f"kafka-auditor-fuzz-{os.getpid()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="inputs in total (default 1,000,000)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="worker processes")
    parser.add_argument("--seed", type=int, default=0, help="run seed: the same seed gives the same inputs")
    parser.add_argument("--save", type=Path, default=Path("out/fuzz"), help="where offending inputs go")
    parser.add_argument("--corpus", type=Path, default=default_corpus(), help="real Kafka files (optional)")
    parser.add_argument("--no-corpus", action="store_true", help="seed only from builders and simulate")
    parser.add_argument("--time-limit", type=float, default=1.0, help="CPU seconds per input (default 1)")
    parser.add_argument("--memory-growth-mb", type=float, default=200, help="peak RSS growth per input")
    parser.add_argument("--memory-limit-mb", type=int, default=2048, help="RLIMIT_AS of each worker")
    parser.add_argument("--target", action="append", help="only these entry points (repeatable)")
    parser.add_argument("--replay", type=int, help="run input INDEX in this process and show its outcome")
    parser.add_argument("--dump-input", type=Path, help="with --replay: write the input's bytes here")
    args = parser.parse_args(argv)

    corpus = None if args.no_corpus else args.corpus
    seeds = build_seeds(corpus)
    targets = TARGETS if not args.target else tuple(t for t in TARGETS if t.name in set(args.target))
    if not targets:
        parser.error(f"no such target; known: {', '.join(t.name for t in TARGETS)}")
    inputs = Inputs(seeds, args.seed, targets)
    settings = Settings(args.time_limit, args.memory_growth_mb, args.memory_limit_mb, _scratch_root())
    if args.replay is not None:
        return replay(inputs, args.replay, settings, args.dump_input)

    print(
        f"fuzz: {args.count:,} inputs over {len(inputs.targets)} entry points, seed {args.seed}, "
        f"{args.jobs} job(s), {sum(map(len, seeds.values()))} seeds of {len(seeds)} kinds "
        f"(fingerprint {fingerprint(seeds)}, corpus {'used' if corpus else 'absent'})",
        flush=True,
    )
    totals = Totals()
    pool = Pool(max(1, args.jobs), inputs, settings, args.count, totals)
    start = time.monotonic()
    last = [start]

    def progress(done: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 15 and sys.stderr.isatty() or now - last[0] >= 60:
            last[0] = now
            print(
                f"  {done:,}/{args.count:,} inputs, {done / (now - start):,.0f}/s",
                file=sys.stderr,
                flush=True,
            )

    try:
        pool.run(progress)
    finally:
        if os.path.isdir(settings.scratch_root):
            for entry in os.listdir(settings.scratch_root):
                Scratch(os.path.join(settings.scratch_root, entry)).cleanup()
            os.rmdir(settings.scratch_root)
    wall = time.monotonic() - start
    grand = print_table(totals, inputs.targets)
    replay_args = f"--seed {args.seed}" + (f" --corpus {corpus}" if corpus else " --no-corpus")
    replay_args += "".join(f" --target {name}" for name in args.target or ())
    replay_args += f" (seeds fingerprint {fingerprint(seeds)})"
    for event, n, path in save_events(totals.events, inputs, args.save, replay_args):
        print(f"  {event.outcome}: {event.target}: {event.kind} at {event.location} ({n} input(s)) -> {path}")
    slow, slow_target, slow_index = totals.slowest
    big, big_target, big_index = totals.largest
    print(
        f"slowest input {slow:.3f} s ({slow_target} #{slow_index}); "
        f"largest peak RSS growth {big:.0f} MB ({big_target} #{big_index})"
    )
    print(f"throughput: {grand['inputs'] / wall:,.0f} inputs/s ({wall:.1f} s wall, {args.jobs} job(s))")
    print(
        f"fuzz: {grand['inputs']:,} inputs, {grand['parse_error']:,} parse errors, "
        f"{grand['accepted']:,} accepted, "
        f"{grand['exception']:,} other exceptions, {grand['over_time']:,} over {args.time_limit:g} s, "
        f"{grand['over_memory']:,} over +{args.memory_growth_mb:g} MB"
    )
    return 1 if grand["exception"] or grand["over_time"] or grand["over_memory"] else 0


if __name__ == "__main__":
    sys.exit(main())
