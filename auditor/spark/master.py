"""The ``--master`` URL of ``audit``: checked before Spark starts, so that a typo or an unreachable cluster
is a one-line usage error (exit 2) within seconds, never a minute of retries and a Java stack.

Accepted forms are those Spark 3.5's ``SparkContext.createTaskScheduler`` and ``SparkSubmit`` accept
(``SparkMasterRegex`` in ``SparkContext.scala``; ``Utils.extractHostPortFromSparkUrl``):

* ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local[*,F]`` (N > 0 threads, F task failures);
* ``local-cluster[N,C,M]`` (N workers of C cores and M MiB, Spark's own test mode);
* ``spark://host:port[,host:port...]`` (standalone, several masters with ZooKeeper recovery): every
  ``host:port`` needs a port and nothing else (no path, query, fragment or user);
* ``yarn`` (the cluster comes from ``HADOOP_CONF_DIR``/``YARN_CONF_DIR``, which SparkSubmit requires);
* ``k8s://https://host[:port]``, ``k8s://http://host[:port]`` or ``k8s://host[:port]`` (https implied);
* ``mesos://host:port`` or ``mesos://zk://...`` (deprecated in Spark 3.2, removed in 4.0).

A standalone master that refuses connections makes Spark's ``StandaloneAppClient`` retry its registration
3 times 20 s apart before failing with a long Java stack; :func:`probe` tries a TCP connection to every
endpoint first (a few seconds at most) and names the one that failed.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field

PROBE_SECONDS = 3.0
"""Connect timeout of :func:`probe` per endpoint (all endpoints are tried in parallel)."""

_LOCAL_N = re.compile(r"local\[([0-9]+|\*)\]")
_LOCAL_N_FAILURES = re.compile(r"local\[([0-9]+|\*)\s*,\s*([0-9]+)\]")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*([0-9]+)\s*,\s*([0-9]+)\s*,\s*([0-9]+)\s*]")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s/:@?#\[\]]+)(?::(?P<port>[0-9]+))?")


class MasterError(ValueError):
    """A ``--master`` URL Spark would reject, or a cluster that cannot be reached; the message is one line."""


@dataclass(frozen=True)
class Master:
    """A parsed master URL: its ``kind`` (local, local-cluster, spark, yarn, k8s, mesos), the ``host:port``
    endpoints the driver must reach (none for local modes and YARN) and, for ``local`` masters, the task
    ``threads`` (``local``: 1; ``local[*]``: :func:`available_cpus`)."""

    url: str
    kind: str
    endpoints: tuple[tuple[str, int], ...] = field(default=())
    threads: int | None = None

    @property
    def is_local(self) -> bool:
        return self.kind == "local"


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which container CPU limits set): what the JVM's
    ``availableProcessors``, and so Spark's ``local[*]``, count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def parse_master(url: str) -> Master:
    """The :class:`Master` of ``url``, or :class:`MasterError` saying why Spark would refuse it."""
    text = url.strip()
    if text != url or not text:
        raise MasterError(f"--master {url!r}: empty or surrounded by blanks")
    if text == "local":
        return Master(text, "local", threads=1)
    for pattern in (_LOCAL_N, _LOCAL_N_FAILURES):
        m = pattern.fullmatch(text)
        if m:
            if m.group(1) != "*" and int(m.group(1)) <= 0:
                raise MasterError(f"--master {url}: asked to run locally with {m.group(1)} threads")
            threads = available_cpus() if m.group(1) == "*" else int(m.group(1))
            return Master(text, "local", threads=threads)
    if _LOCAL_CLUSTER.fullmatch(text):
        return Master(text, "local-cluster")
    if text == "yarn":
        return Master(text, "yarn")
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise MasterError(
            f"--master {url}: not a Spark master URL (local, local[N], local[*], spark://host:port, yarn, "
            "k8s://https://host:port)"
        )
    if scheme == "spark":
        return Master(text, "spark", tuple(_endpoint(url, part, None) for part in rest.split(",")))
    if scheme == "mesos":
        if rest.startswith("zk://"):  # masters found through ZooKeeper: nothing to probe directly
            return Master(text, "mesos")
        return Master(text, "mesos", (_endpoint(url, rest, None),))
    if scheme == "k8s":
        inner, sep, address = rest.partition("://")
        if not sep:
            inner, address = "https", rest
        if inner not in ("https", "http"):
            raise MasterError(f"--master {url}: the Kubernetes API server URL must be http(s)://host[:port]")
        return Master(text, "k8s", (_endpoint(url, address.rstrip("/"), 443 if inner == "https" else 80),))
    raise MasterError(
        f"--master {url}: unknown scheme {scheme!r} (spark://, k8s://, mesos://, or local/yarn)"
    )


def _endpoint(url: str, text: str, default_port: int | None) -> tuple[str, int]:
    """``host:port`` of one master address (``Utils.extractHostPortFromSparkUrl``: a host, a port, nothing
    more; IPv6 hosts in brackets)."""
    m = _HOST_PORT.fullmatch(text)
    if not m:
        raise MasterError(f"--master {url}: {text!r} is not host:port")
    host, port = m.group("host"), m.group("port")
    if port is None:
        if default_port is None:
            raise MasterError(f"--master {url}: {text!r} has no port (e.g. {host}:7077)")
        return host.strip("[]"), default_port
    number = int(port)
    if not 0 < number < 65536:
        raise MasterError(f"--master {url}: port {port} is out of range")
    return host.strip("[]"), number


def probe(master: Master, timeout: float = PROBE_SECONDS) -> None:
    """Raise :class:`MasterError` unless at least one endpoint of ``master`` accepts a TCP connection.

    Every endpoint is tried at once in a daemon thread (a slow DNS lookup cannot hold the caller longer
    than ``timeout`` plus a second); the error names each endpoint and why it failed.
    """
    if not master.endpoints:
        return
    errors: dict[tuple[str, int], str] = {}
    reached = threading.Event()

    def attempt(host: str, port: int) -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                reached.set()
        except socket.gaierror as exc:
            errors[(host, port)] = f"unknown host ({exc.strerror or exc})"
        except TimeoutError:
            errors[(host, port)] = f"no answer within {timeout:g} s"
        except OSError as exc:
            errors[(host, port)] = exc.strerror or str(exc)

    threads = [
        threading.Thread(target=attempt, args=endpoint, daemon=True, name=f"probe-{endpoint[0]}")
        for endpoint in master.endpoints
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout + 1.0
    while time.monotonic() < deadline and any(t.is_alive() for t in threads):
        if reached.wait(0.02):
            return
    if reached.is_set():
        return
    reasons = "; ".join(
        f"{_show(host, port)}: {errors.get((host, port), f'no answer within {timeout:g} s')}"
        for host, port in master.endpoints
    )
    raise MasterError(f"--master {master.url}: cannot reach the cluster ({reasons})")


def _show(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["Master", "MasterError", "PROBE_SECONDS", "parse_master", "probe"]
