"""Starting Spark for a command and telling its failures in one line: the session on a parsed ``--master``
(``auditor.spark.master``), a standalone master that never registers the application, a job that fails
(the step, the likely cause and the setting to raise), and a poller of the tasks of the running stages.
Every failure is a :class:`SparkStartError` whose text is the line to print; nothing here imports pyspark
at module import time."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
EXIT_ERROR = 2
"""The exit status of a command whose master never registered it (``auditor.report.model.EXIT_ERROR``)."""


class SparkStartError(Exception):
    """Spark could not start or run the job; ``str()`` is the one line to print."""


REGISTRATION_ENV = "KAFKA_AUDITOR_MASTER_TIMEOUT"
REGISTRATION_SECONDS = 30.0
"""How long, once the driver's JVM is up, a standalone (``spark://``) or Mesos master may take to accept the
application before the command (``audit``, ``ingest``, ``report``) gives up with exit 2
(``KAFKA_AUDITOR_MASTER_TIMEOUT`` overrides). Spark's own client retries its registration 3 times 20 s apart
(``StandaloneAppClient``), then fails with a Java stack; registering with a live master takes well under a
second."""


def registration_seconds() -> float:
    text = os.environ.get(REGISTRATION_ENV)
    if not text:
        return REGISTRATION_SECONDS
    try:
        value = float(text)
    except ValueError:
        raise SparkStartError(f"{REGISTRATION_ENV}={text!r} is not a number of seconds") from None
    if not value > 0:
        raise SparkStartError(f"{REGISTRATION_ENV}={text!r} must be positive")
    return value


def is_spark_error(exc: BaseException) -> bool:
    """An error raised by py4j or pyspark (a Java exception, the gateway exiting): reported in one line."""
    return any(
        (type(e).__module__ or "").split(".")[0] in ("py4j", "pyspark") for e in (exc, exc.__cause__) if e
    )


def run_job(
    master, job: Callable[[Any], T], stages: Any = None, verbose: int = 0, input_bytes: int | None = None
) -> T:
    """``job(spark)`` on a session of ``master`` (a parsed ``--master``): a master that does not answer, no
    Java, or a Spark/Py4J error of the job is a :class:`SparkStartError` (never a Java stack); any other
    error of the job is the caller's. ``stages``: the command's progress display (Spark's start-up is a
    stage, the job's stages show Spark's task counts, :func:`spark_tasks`); ``verbose``: ``-v`` (Spark's
    log level, :data:`SPARK_LOG_LEVELS`); ``input_bytes``: the size of the input, which chooses the JVM's
    settings (``auditor.spark.tuning``)."""
    from auditor.spark.master import MasterError, probe

    try:
        probe(master)
    except MasterError as exc:
        raise SparkStartError(str(exc)) from None
    if stages is None:
        spark = start_spark(master, verbose, input_bytes)
    else:
        with stages.stage(f"starting Spark ({master.url})"):
            spark = start_spark(master, verbose, input_bytes)
        if stages.enabled:
            stages.poller = lambda: spark_tasks(spark)
    from auditor.errors import keep_interrupt_handler

    keep_interrupt_handler()  # Ctrl-C: "interrupted", exit 130 (not pyspark's job cancelling)
    try:
        return job(spark)
    except Exception as exc:
        from auditor.errors import interrupted

        if interrupted():  # Ctrl-C while Python waited on the JVM: py4j reports it as its own error
            raise KeyboardInterrupt from None
        if not is_spark_error(exc) and not isinstance(exc, ConnectionError):
            raise
        raise SparkStartError(spark_failure(exc, getattr(stages, "failed", None), master.url)) from None


JVM_GONE = ("Answer from Java side is empty", "Connection refused", "SparkContext was shut down")
"""What py4j and Spark say once the JVM died (an OutOfMemoryError kills it: SparkUncaughtExceptionHandler)."""


def spark_failure(exc: BaseException, stage: str | None, master: str) -> str:
    """One line for a Spark job that failed: the step it failed in, and the likely cause with what to do
    (the JVM out of memory or gone: the setting to raise), else the Java exception's first line."""
    from auditor.errors import describe_error
    from auditor.spark.session import DRIVER_MEMORY_ENV, driver_memory

    where = f" while {stage}" if stage else ""
    text = " ".join(str(e) for e in (exc, exc.__cause__) if e)
    gone = isinstance(exc, ConnectionError) or any(mark in text for mark in JVM_GONE)
    if "OutOfMemoryError" in text or "Java heap space" in text or gone:
        what = "exited (most often: out of memory)" if gone else "ran out of memory (OutOfMemoryError)"
        if master.startswith("local"):
            fix = f"raise {DRIVER_MEMORY_ENV} (now {driver_memory()}, the heap of the local Spark JVM)"
        else:
            fix = "give the executors more memory (spark.executor.memory of the cluster)"
        return f"the Spark job failed{where}: the Spark JVM {what}; {fix}"
    return f"the Spark job failed{where}: {describe_error(exc)}"


SPARK_LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")
"""Spark's log4j level without ``-v``, with ``-v``, ``-vv`` and ``-vvv``."""


def start_spark(master, verbose: int = 0, input_bytes: int | None = None):
    """A SparkSession on ``master``, or exit 2 with one line: no Java, a Py4J/Java error (never its stack),
    or a standalone/Mesos master that accepted the connection but did not register the application within
    :func:`registration_seconds` (the process then exits at once: the JVM is still waiting). Spark logs at
    :data:`SPARK_LOG_LEVELS` ``[verbose]``; its console progress bar stays off."""
    from auditor.errors import describe_error
    from auditor.spark.session import JavaNotFound, get_spark

    started = threading.Event()
    if master.kind in ("spark", "mesos"):
        limit = registration_seconds()
        threading.Thread(
            target=_watch_registration, args=(master.url, limit, started), name="registration", daemon=True
        ).start()
    try:
        level = SPARK_LOG_LEVELS[max(0, min(verbose, len(SPARK_LOG_LEVELS) - 1))]
        return get_spark(master.url, log_level=level, input_bytes=input_bytes)
    except JavaNotFound as exc:
        raise SparkStartError(str(exc)) from None
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise SparkStartError(f"cannot start Spark on --master {master.url}: {describe_error(exc)}") from None
    finally:
        started.set()


def _watch_registration(url: str, limit: float, started: threading.Event) -> None:
    """Exit 2 (at once: the JVM is still waiting on the master) when no session has started ``limit`` seconds
    after the driver's JVM came up (pyspark's ``SparkContext._gateway``; JVM start-up is not counted, it
    takes long on a loaded machine)."""
    while not started.wait(0.2):
        context = sys.modules.get("pyspark.context")
        if context is not None and getattr(context.SparkContext, "_gateway", None) is not None:
            break
    else:
        return
    if started.wait(limit):
        return
    sys.stderr.write(
        f"kafka-auditor: error: --master {url}: the master accepted the connection but no Spark session "
        f"started within {limit:g} s; check that it is a Spark master and its log (or raise "
        f"{REGISTRATION_ENV})\n"
    )
    sys.stderr.flush()
    os._exit(EXIT_ERROR)


def spark_tasks(spark: Any) -> Callable[[], tuple[int, int] | None]:
    """A poller of the Spark tasks of the stages started since it was made: (tasks finished, tasks known)
    summed over every Spark stage seen so far (a stage's count is kept after it ends: the figures grow)."""
    tracker = spark.sparkContext.statusTracker()
    seen: dict[int, tuple[int, int]] = {}
    before = set(tracker.getActiveStageIds())

    def poll() -> tuple[int, int] | None:
        for stage_id in tracker.getActiveStageIds():
            if stage_id in before:
                continue
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                seen[stage_id] = (info.numCompletedTasks, info.numTasks)
        if not seen:
            return None
        # a stage no longer active has run all its tasks
        active = set(tracker.getActiveStageIds())
        done = sum(total if sid not in active else d for sid, (d, total) in seen.items())
        return done, sum(total for _d, total in seen.values())

    return poll
