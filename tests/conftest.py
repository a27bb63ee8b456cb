"""Shared fixtures: the real-Kafka corpus (skips when absent), one SparkSession per test session, one CLI
audit of a simulated unclean election whose outputs the tests of the audit's outputs and formats share, the
one Spark audit of every simulator scenario (``sim_audit``) and of the corpus (``corpus_audit``), and small
scenario outputs generated once (``scenario_out``)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO.parent / "shared" / "corpus").resolve()


def corpus_path() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS


TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist, in the controller: hand each worker the terminal size variables of this process."""
    node.workerinput["terminal_size"] = {name: os.environ.get(name) for name in TERMINAL_SIZE}


def pytest_configure(config) -> None:
    """In a pytest-xdist worker, which starts with COLUMNS and LINES set (80 x 24 without a terminal), the
    controller's values (unset there, in CI): the text outputs wrap at the same width as in one process."""
    told = getattr(config, "workerinput", {}).get("terminal_size")
    for name, value in (told or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


SLOWEST_FIRST = (
    "e2e/test_scale.py",
    "e2e/test_real_broker_identity.py",
    "e2e/test_real_broker_groups.py",
    "e2e/test_real_broker_reproduce.py",
    "rules/test_rules.py",
    "cli/test_report_options.py",
    "report/test_html_browser.py",
    "e2e/test_spark_cluster.py",
    "spark/test_tuning.py",
    "spark/test_session.py",
    "e2e/test_scenarios.py",
    "e2e/test_identity_audit.py",
    "hostile/test_parsers_bounds.py",
    "spark/test_compare.py",
    "e2e/test_nightly.py",
)
"""The test files of the longest wall time (two minutes to 20 s each, measured with ``--durations``), which
the pytest-xdist workers start with: the scale audit (a JVM on both cores) first, beside the real brokers
(which mostly wait), the other audits in their own JVMs after it rather than beside it (run together,
each took three times as long); then the files of a few seconds fill both workers to the end, instead of
one worker running the slowest file alone at the end (xdist's own order, by number of tests)."""


def pytest_collection_modifyitems(config, items) -> None:
    """In a pytest-xdist worker: the files of :data:`SLOWEST_FIRST` first, in its order, then the others in
    the order collected (every worker sorts alike, so the collections stay identical)."""
    if not hasattr(config, "workerinput"):
        return
    rank = {REPO / "tests" / name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))


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


TEST_CODE_CACHE = "-XX:ReservedCodeCacheSize=512m"


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from auditor.spark.session import LOG4J2_CONFIG, get_spark
    from auditor.spark.tuning import SMALL_INPUT_JVM

    # The suite's inputs are tiny: the JVM settings for small inputs (C1 JIT only, serial GC; KA_TEST_JVM
    # overrides them, e.g. KA_TEST_JVM="" for the defaults) cut the suite's Spark time by about a third. The
    # results do not depend on them; the audit CLI chooses its own by input size (auditor.spark.tuning).
    # One JVM runs the whole suite's thousands of Spark plans: its JIT code cache is sized for that (the
    # default of a C1-only JVM filled up once, "Out of space in CodeCache for adapters", and the JVM died).
    jvm = os.environ.get("KA_TEST_JVM", " ".join(SMALL_INPUT_JVM)) + " " + TEST_CODE_CACHE
    extra = {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} {jvm}"}
    session = get_spark("local[2]", app_name="kafka-auditor-tests", shuffle_partitions=4, extra_conf=extra)
    yield session
    session.stop()


@dataclass
class UncleanAudit:
    """One real ``kafka-auditor audit`` (in-process, on the session SparkSession) of ``simulate
    unclean-election --seed 7`` (4 log dirs: divergence, committed loss, a lagging follower), with every
    output option: ``--format json --output OUT/report.json --save OUT/saved --export-lost OUT/lost``."""

    root: Path
    out: Path
    result: Any  # the CliRunner result of that audit
    before: dict[str, tuple[int, int]]  # size and mtime of every file under ``root`` before it
    stages: list[str]  # the stages its ``run_audit`` told, in order
    audited: Any  # what its ``run_audit`` returned

    def again(self, *args: str, env: dict[str, str] | None = None):
        """``audit ROOT *args`` through the CLI once more (discovery, checks, Spark session, report, output),
        its ``run_audit`` answering with the real run's result as an audit without ``--save`` and
        ``--export-lost`` returns it: every output format of the same Spark job without running it again."""
        from typer.testing import CliRunner

        import auditor.spark.audit as audit
        from auditor.cli import app

        exported = (self.audited.exported or {}).get("problems", [])
        plain = replace(
            self.audited, exported=None, problems=[p for p in self.audited.problems if p not in exported]
        )
        calls = []

        def remembered(spark, inputs, **kwargs):
            options = {k: v for k, v in kwargs.items() if k != "stages" and v not in (None, False)}
            assert not options, f"not the remembered audit: {options}"  # --save, --export-lost, --verify-crc
            assert sorted(s.path for s in inputs.sources) == sorted(
                str(d) for d in self.root.iterdir() if d.is_dir()
            )
            calls.append(inputs)
            return plain

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(audit, "run_audit", remembered)
            done = CliRunner().invoke(app, ["audit", str(self.root), *args], env=env)
        assert len(calls) == 1 or done.exit_code == 2, done.output
        return done


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="session")
def unclean_audit(spark, tmp_path_factory) -> UncleanAudit:
    """The audit of :class:`UncleanAudit`, once for the whole test session: the tests of its JSON report,
    ``--save`` tables, lost records and stages read it, and those of the other formats render the same
    result through the CLI (:meth:`UncleanAudit.again`)."""
    from typer.testing import CliRunner

    import auditor.spark.audit as audit
    from auditor.cli import app
    from auditor.simulate import SimOptions, run_scenario

    root = tmp_path_factory.mktemp("unclean-audit") / "ule"
    run_scenario("unclean-election", root, SimOptions(seed=7))  # = `simulate unclean-election --seed 7`
    out = tmp_path_factory.mktemp("unclean-audit-out")
    before = tree_state(root)
    real, runs = audit.run_audit, []

    def recorded(spark, inputs, **kwargs):
        told = kwargs["stages"].timings
        first = len(told)
        result = real(spark, inputs, **kwargs)
        runs.append((result, [name for name, _ in told[first:]]))
        return result

    options = ["--format", "json", "--output", str(out / "report.json")]
    options += ["--save", str(out / "saved"), "--export-lost", str(out / "lost")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(audit, "run_audit", recorded)
        result = CliRunner().invoke(app, ["audit", str(root), *options])
    assert len(runs) == 1, result.output
    [(audited, stages)] = runs
    return UncleanAudit(root, out, result, before, stages, audited)


@pytest.fixture(scope="session")
def sim_root(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    """Every simulator scenario (plus random seeds) of :data:`tests.support.sim_audit.SIM_RUNS`, written
    once: the root and each run's ground truth by cluster label."""
    from auditor.simulate import SimOptions, run_scenario
    from tests.support.sim_audit import SIM_RUNS, label

    root = tmp_path_factory.mktemp("scenarios")
    truths = {}
    for name, seed in SIM_RUNS:
        truths[label(name, seed)] = run_scenario(name, root / label(name, seed), SimOptions(seed=seed))
    return root, truths


@pytest.fixture(scope="session")
def sim_audit(spark, sim_root, tmp_path_factory):
    """Every simulator scenario, two of them again from `extract` directories, the hand-made cases
    (``tests.support.handmade``) and the consequence tests' clusters (``tests.support.consequences``),
    audited ONCE in a single Spark run with one cluster label per input; each test reads its own cluster's
    slice of the results (:func:`tests.support.sim_audit.of_cluster`)."""
    from auditor.observe.extract import extract_log_dir
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import Inputs, discover
    from tests.support.consequences import add_inputs, from_result
    from tests.support.handmade import write_cluster
    from tests.support.sim_audit import PARQUET_TWINS, SimAudit

    root, truths = sim_root
    inputs = Inputs()
    for lab in truths:
        inputs.sources += discover([root / lab], label=lab).sources
    extracts = tmp_path_factory.mktemp("extracts")
    for lab in PARQUET_TWINS:
        for broker_dir in sorted((root / lab).iterdir()):
            if broker_dir.is_dir():
                out = extracts / f"{lab}-{broker_dir.name}"
                extract_log_dir(broker_dir, out)
                inputs.sources += discover([out], label=f"{lab}@parquet").sources
    inputs.sources += discover([write_cluster(tmp_path_factory.mktemp("handmade"))], label="handmade").sources
    consequence_truths = add_inputs(inputs, tmp_path_factory.mktemp("consequences"))
    export = tmp_path_factory.mktemp("export")
    result = run_audit(spark, inputs, export_lost=export, chunk_bits=3)
    exported = {}
    with open(export / "lost-records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            exported[(d["cluster"], d["topic"], d["partition"], d["offset"])] = d
    consequences = from_result(result, consequence_truths, export)
    return SimAudit(root, truths, result, exported, consequences, inputs)


@pytest.fixture(scope="session")
def consequences_audit(sim_audit):
    """The consequence tests' clusters (``tests.support.consequences``) in the one ``sim_audit`` run."""
    return sim_audit.consequences


@pytest.fixture(scope="session")
def corpus_audit(spark, corpus):
    """The corpus' cluster states of :data:`tests.support.sim_audit.CORPUS_STATES`, audited in one run."""
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import Inputs, discover
    from tests.support.sim_audit import CORPUS_STATES

    inputs = Inputs()
    for lab, rel in CORPUS_STATES.items():
        inputs.sources += discover([corpus / rel], label=lab).sources
    return run_audit(spark, inputs)


SMALL_SCENARIO = {"records": 400}


@pytest.fixture(scope="session")
def scenario_out(tmp_path_factory):
    """``scenario_out(name, **options)`` -> (output dir, ground truth) of a small scenario with its invariants
    checked, cached per argument set."""
    from auditor.simulate import SimOptions, run_scenario

    cache: dict = {}

    def make(name: str, **kw) -> tuple[Path, dict]:
        key = (name, tuple(sorted(kw.items())))
        if key not in cache:
            out = tmp_path_factory.mktemp(name.replace("-", "_")) / "out"
            opts = SimOptions(**{**SMALL_SCENARIO, "check_invariants": True, **kw})
            truth = run_scenario(name, out, opts)
            assert json.loads((out / "ground-truth.json").read_text()) == truth
            cache[key] = (out, truth)
        return cache[key]

    return make
