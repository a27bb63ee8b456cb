"""Shared fixtures: the real-Kafka corpus (skips when absent) and one SparkSession per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO.parent / "shared" / "corpus").resolve()


def corpus_path() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS


@pytest.fixture(scope="session")
def corpus() -> Path:
    return corpus_path()


@pytest.fixture(scope="session", autouse=True)
def _jvm_cache(tmp_path_factory):
    """The class-data-sharing archive of the CLI runs of this session in a temporary directory, not in the
    user's cache (``auditor.spark.tuning``; the first audit of the session writes it)."""
    from auditor.spark.tuning import CACHE_ENV

    if CACHE_ENV not in os.environ:
        os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("jvm-cache"))
    yield


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from auditor.spark.session import LOG4J2_CONFIG, get_spark

    # The suite's inputs are tiny: the JVM settings for small inputs (C1 JIT only, serial GC; KA_TEST_JVM
    # overrides them, e.g. KA_TEST_JVM="" for the defaults) cut the suite's Spark time by about a third. The
    # results do not depend on them; the audit CLI chooses its own by input size (auditor.spark.tuning).
    jvm = os.environ.get("KA_TEST_JVM", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    extra = {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} {jvm}"}
    session = get_spark("local[2]", app_name="kafka-auditor-tests", shuffle_partitions=4, extra_conf=extra)
    yield session
    session.stop()
