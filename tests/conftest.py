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


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from auditor.spark.session import get_spark

    session = get_spark("local[2]", app_name="kafka-auditor-tests", shuffle_partitions=4)
    yield session
    session.stop()
