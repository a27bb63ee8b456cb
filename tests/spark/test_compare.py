"""The second scan's pushed-down predicate (``compare._prune``) keeps every batch row of the candidate chunks
and every transactional batch: restricted by it or not, the rows the pass reads of the session's scenarios
are the same."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from auditor.spark import compare
from auditor.spark.extract import load

CHUNK_BITS = 3
"""Small chunks, as the session's audit uses: many partitions have candidate chunks, each a narrow span."""


def findings(result) -> list:
    """An audit's findings, comparable across runs: code, place, offset and evidence, sorted."""
    import json

    return sorted(
        (f.code, f.topic or "", f.partition or 0, f.broker or 0, f.offset_start or 0,
         json.dumps(f.evidence, sort_keys=True, default=str))
        for f in result.findings
    )  # fmt: skip


def _candidate_rows(batch, chunks) -> list:
    keys = chunks.select("tp", "chunk", F.lit(True).alias("candidate"))
    rows = (
        compare.batch_columns(batch, CHUNK_BITS)
        .join(F.broadcast(keys), ["tp", "chunk"], "left")
        .where(F.col("candidate").isNotNull() | F.col("is_transactional"))
    )
    return sorted(rows.select("tp", "broker", "base_offset", "sig").collect())


def test_pruned_scan_keeps_every_candidate_row(spark, sim_audit):
    tables = load(spark, sim_audit.inputs)
    replicas = compare.with_tp(tables.replica)
    digest = compare.chunk_digests(compare.batch_columns(tables.batch, CHUNK_BITS))
    keys = replicas.select("tp", "cluster", "topic", "partition", "broker", *compare.REPLICA_START_COLUMNS)
    compared = compare.Compared.of(r.asDict() for r in keys.collect())
    chunks = compare.candidate_chunks(digest, compared).cache()
    partitions = chunks.select("tp").distinct().count()
    assert 1 < partitions <= compare.PUSHDOWN_PARTITIONS  # the predicate is built, over several partitions
    pruned = compare._prune(tables.batch, chunks.collect(), CHUNK_BITS)
    assert pruned.count() < tables.batch.count()
    whole = _candidate_rows(tables.batch, chunks)
    assert whole and _candidate_rows(pruned, chunks) == whole
    chunks.unpersist()


def test_record_rows_without_offset_are_left_out_alike_on_both_paths(spark, tmp_path, monkeypatch):
    """A damaged extract's record row without its offset or hash (the extraction never writes one) compares
    with nothing on both paths: the same findings in the driver (small input) and on the executors, where the
    row once crashed the one and was dropped unseen by the other."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from auditor.observe.extract import extract_log_dir
    from auditor.observe.extract_files import kind_path
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import Inputs, discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from tests.support.handmade import write_cluster

    root = write_cluster(tmp_path / "c")
    inputs = Inputs()
    for broker_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        out = tmp_path / "x" / broker_dir.name
        extract_log_dir(broker_dir, out)
        path = kind_path(out, "record")
        table = pq.read_table(path)
        if table.num_rows:
            offsets = table.column("offset").to_pylist()
            hashes = table.column("record_hash").to_pylist()
            offsets[0], hashes[-1] = None, None
            table = table.set_column(table.schema.get_field_index("offset"), "offset", pa.array(offsets))
            hashes_at = table.schema.get_field_index("record_hash")
            table = table.set_column(hashes_at, "record_hash", pa.array(hashes, pa.int64()))
            pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)
        inputs.sources += discover([out]).sources

    def codes(result):
        return sorted((f.code, f.topic, f.partition, f.broker, f.offset_start) for f in result.findings)

    small = run_audit(spark, inputs)
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    large = run_audit(spark, inputs)
    assert small.stats["smallInput"] is True and large.stats["smallInput"] is False
    assert codes(small) == codes(large) and any(c[0] == "KA601" for c in codes(small))


def test_an_extract_without_the_partition_key_audits_alike(spark, tmp_path, monkeypatch):
    """Batch and record files written before they carried ``tp`` (``rows.DERIVED``) get the same key in
    Spark: the loaded rows' keys, and the findings on the executors and in the driver, are those of the
    files with it, and a cluster label (which replaces ``cluster``) keys both alike."""
    import shutil

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from auditor.observe.extract import extract_log_dir
    from auditor.observe.extract_files import kind_path, read_extract
    from auditor.spark.audit import run_audit
    from auditor.spark.extract import load
    from auditor.spark.inputs import discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from tests.support.handmade import write_cluster

    root = write_cluster(tmp_path / "c")
    keyed, bare = tmp_path / "keyed", tmp_path / "bare"
    for broker_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        extract_log_dir(broker_dir, keyed / broker_dir.name)
        shutil.copytree(keyed / broker_dir.name, bare / broker_dir.name)
        for kind in ("batch", "record"):
            path = kind_path(bare / broker_dir.name, kind)
            table = pq.read_table(path)
            pq.write_table(table.drop(["tp"]).replace_schema_metadata(table.schema.metadata), path)
        assert read_extract(bare / broker_dir.name) == read_extract(keyed / broker_dir.name)

    def keys(path, label=None):
        tables = load(spark, discover(sorted(path.iterdir()), label=label))
        batch = tables.batch.select("tp", F.xxhash64("cluster", "topic", "partition").alias("want"))
        rows_ = batch.collect()
        assert rows_ and all(r["tp"] == r["want"] for r in rows_)
        return sorted(r["tp"] for r in rows_)

    assert keys(keyed) == keys(bare) != keys(keyed, "relabelled") == keys(bare, "relabelled")

    def codes(path, label=None):
        result = run_audit(spark, discover(sorted(path.iterdir()), label=label))
        return sorted(
            (f.code, f.evidence.get("cluster"), f.topic, f.partition, f.broker, f.offset_start)
            for f in result.findings
        )

    small = codes(keyed)
    assert small == codes(bare) and any(c[0] == "KA601" for c in small)
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    assert codes(keyed) == codes(bare) == small
    assert codes(keyed, "relabelled") == codes(bare, "relabelled") != small


def test_chunks_before_a_replicas_log_start_are_no_candidates(spark, tmp_path, monkeypatch):
    """Retention removed the first segments of brokers 2 and 3 before broker 1's: the chunks below a
    replica's log start that the others hold alike are no candidate chunks (none of the pass's comparisons
    reads them), and the findings are those of every batch row (the driver's pass over the whole logs) and
    of the executors when every replica is taken to reach every chunk; a segment missing inside broker 1's
    log still makes its chunks candidates."""

    from auditor.simulate import SimOptions, run_scenario
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from parsers.checkpoints import format_offset_checkpoint

    root = tmp_path / "ule"
    run_scenario("unclean-election", root, SimOptions(seed=7, segment_bytes=4096))
    starts = {}
    for broker, deleted in (("broker-2", 2), ("broker-3", 1)):
        part = root / broker / "t0-0"
        logs = sorted(part.glob("*.log"))
        assert len(logs) > deleted + 2
        for log in logs[:deleted]:
            for f in part.glob(log.stem + ".*"):
                f.unlink()
        starts[broker] = int(logs[deleted].stem)
        (root / broker / "log-start-offset-checkpoint").write_bytes(
            format_offset_checkpoint([("t0", 0, starts[broker])])
        )
    assert min(starts.values()) >= 40  # five chunks of 8 offsets at least below broker 3's start
    middle = sorted((root / "broker-1" / "t0-0").glob("*.log"))[4]  # a gap inside broker 1's log: it reaches
    for f in middle.parent.glob(middle.stem + ".*"):  # those chunks and lacks them (a divergence)
        f.unlink()

    chunks: list[int] = []
    scan = compare.scan_batches

    def counted(*args, **kwargs):
        digest, found, candidates, skipped = scan(*args, **kwargs)
        chunks.append(len(found))
        return digest, found, candidates, skipped

    inputs = discover([root])
    every_row = findings(run_audit(spark, inputs, chunk_bits=3))
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    monkeypatch.setattr(compare, "scan_batches", counted)
    pruned = findings(run_audit(spark, inputs, chunk_bits=3))
    monkeypatch.setattr(compare, "replica_start", lambda row: 0)  # every replica reaches every chunk
    unpruned = findings(run_audit(spark, inputs, chunk_bits=3))
    assert pruned == every_row == unpruned
    assert any(f[0] == "KA710" for f in pruned)
    assert chunks[0] + 5 <= chunks[1], chunks  # at least the chunks below broker 3's start left out


def _broker(root, node: int, batches: list[tuple[int, int]], *, hw: int, epochs, log_start=None):
    """A broker's log dir holding partition ``t-0``: one segment of ``batches`` (first, last offset), or an
    empty one at ``log_start``."""
    from parsers.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
    from parsers.dirfiles import format_meta_properties
    from parsers.record_batch import RecordSpec, build_batch

    d = root / f"broker-{node}" / "t-0"
    d.mkdir(parents=True)
    (d.parent / "meta.properties").write_bytes(format_meta_properties(1, node, "aGFuZG1hZGUtY2x1c3Rlcg"))
    data = b"".join(
        build_batch([RecordSpec(b"k", b"v%d" % o, 1_700_000_000_000 + o, offset_delta=o - lo)
                     for o in range(lo, hi + 1)], base_offset=lo)
        for lo, hi in batches
    )  # fmt: skip
    base = batches[0][0] if batches else log_start
    (d / f"{base:020d}.log").write_bytes(data)
    (d / f"{base:020d}.index").write_bytes(b"")
    (d / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint(epochs))
    for name, value in (("replication", hw), ("recovery-point", hw), ("log-start", log_start)):
        entries = [] if value is None else [("t", 0, value)]
        (d.parent / f"{name}-offset-checkpoint").write_bytes(format_offset_checkpoint(entries))
    (d.parent / "cleaner-offset-checkpoint").write_bytes(format_offset_checkpoint([]))
    (d.parent / ".kafka_cleanshutdown").write_bytes(b"")


@pytest.mark.parametrize("case", ["loss", "lag"])
def test_a_batch_reaching_past_a_replicas_log_start_keeps_its_chunk(spark, tmp_path, monkeypatch, case):
    """A batch whose base offset lies in a chunk before a replica's log start but whose last offset reaches
    it is read by the pass (broker 2's batch 5..12 against broker 1's empty log at 10, 8-offset chunks): as
    truncation loss when broker 1 leads (its leader epoch is the latest), as lag when broker 2 does. Its chunk
    stays a candidate: the executors find what the driver finds over every batch row."""

    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.tuning import SMALL_INPUT_ENV

    later = [(0, 0), (1, 10)]
    _broker(tmp_path, 1, [], hw=10, epochs=later if case == "loss" else [(0, 0)], log_start=10)
    _broker(tmp_path, 2, [(0, 4), (5, 12)], hw=13, epochs=[(0, 0)] if case == "loss" else later)

    inputs = discover([tmp_path])
    every_row = findings(run_audit(spark, inputs, chunk_bits=3))
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    assert findings(run_audit(spark, inputs, chunk_bits=3)) == every_row
    assert any(f[0] == ("KA710" if case == "loss" else "KA630") for f in every_row)


def _lag_and_divergence(opts):
    """Broker 3 stops after phase A and stays down (a lagging follower, in the ISR no more); phase B goes to
    brokers 1 and 2 alike; broker 2 is killed, phase C (acks=1) reaches broker 1 only; broker 1 is killed and
    broker 2 is elected uncleanly and takes phase D at the same offsets, longer than C, its last high
    watermark checkpoint behind it. Broker 2 leads in KRaft; 1 and 2 diverge at C; broker 3's gap (B, and D
    past broker 1's log end) is held alike by the replicas holding it."""
    from auditor.simulate.scenarios import _fault_cluster, _records, _settle

    c, tps = _fault_cluster(opts, "lag-and-divergence", unclean=True, min_insync=1)
    c.run_traffic(tps, _records(c, tps, 0.1), acks="all", label="A")
    _settle(c)
    c.crash(3)
    c.run_traffic(tps, _records(c, tps, 0.4), acks="all", label="B")
    _settle(c)
    c.crash(2)
    c.run_traffic(tps, _records(c, tps, 0.1), acks="1", label="C")
    c.tick(opts.hw_checkpoint_interval_ms)
    c.crash(1)
    c.tick(60000)
    c.restart(2)
    c.run_traffic(tps, _records(c, tps, 0.2), acks="1", label="D")
    c.tick(opts.hw_checkpoint_interval_ms)
    c.run_traffic(tps, _records(c, tps, 0.2), acks="1", label="E")
    return c


def test_a_lagging_followers_gap_is_read_from_its_digests(spark, tmp_path, monkeypatch):
    """The chunks only a lagging follower lacks (past its log end, held alike by the KRaft leader and the
    others) reach the pass as digest rows, not batch rows: the lag's counts and every election's cost where
    that follower is the candidate (what the others lose, committed below their high watermark or not) are
    those of the driver's pass over every batch row, as is everything else the audit reports."""

    from auditor.simulate import SimOptions
    from auditor.simulate.writer import write_cluster
    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from tests.spark.test_tuning import canonical

    root = tmp_path / "lag"
    write_cluster(_lag_and_divergence(SimOptions(seed=3, records=2000)), root)
    inputs = discover([root])
    every_row = run_audit(spark, inputs, chunk_bits=3)
    assert every_row.stats["smallInput"] is True
    scan, lag_chunks = compare.scan_batches, []

    def counted(*args, **kwargs):
        out = scan(*args, **kwargs)
        lag_chunks.append(sum(map(len, out[3].values())))
        return out

    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    monkeypatch.setattr(compare, "scan_batches", counted)
    executors = run_audit(spark, inputs, chunk_bits=3)
    ours, theirs = canonical(every_row), canonical(executors)
    for key in ours:
        assert ours[key] == theirs[key], key
    assert lag_chunks[0] > 50, lag_chunks
    (election,) = [e for e in executors.elections if e["topic"] == "t0"]
    costs = {(c["broker"], k["broker"]): k for c in election["candidates"] for k in c["costs"]}
    lost = costs[(3, 2)]
    assert lost["batches"] > 50 and 0 < lost["committed"] < lost["records"], lost  # B committed, D/E not
    lags = [f for f in executors.findings if f.code == "KA630" and f.broker == 3]
    assert lags, sorted({f.code for f in executors.findings})


def _lag_case(change: str):
    """Brokers 1 (KRaft leader), 2 and 3 of one partition; broker 3's log ends at 100; the chunk of offsets
    120..127 that brokers 1 and 2 hold alike, their high watermarks 200 and 150; ``change`` breaks one
    condition of :meth:`compare.Compared.lag_only`."""
    replicas = {
        1: {"leo": 300, "hw": 200, "log_start": 0},
        2: {"leo": 300, "hw": 150, "log_start": 0},
        3: {"leo": 100, "hw": 100, "log_start": 0},
    }
    chunk = {"tp": 7, "chunk": 15, "present": 0b011, "first": 120, "last": 127, "rows_needed": False}
    leader = 1
    if change == "leader lacks it":
        leader = 3
    elif change == "no KRaft leader":
        leader = None
    elif change == "a hole: the lacking log ends past it":
        replicas[3]["leo"] = 121
    elif change == "the lacking log end unknown":
        replicas[3]["leo"] = None
    elif change == "unreadable to the end of the lacking log":
        replicas[3]["unreadable_from"] = 90
    elif change == "an unreadable span over it":
        replicas[2]["unreadable_from"], replicas[2]["unreadable_to"] = 125, 130
    elif change == "a transactional batch":
        chunk["rows_needed"] = True
    elif change == "straddles the high watermark":
        replicas[1]["hw"], replicas[2]["hw"] = 110, 124  # the highest of the holders' counts
    elif change == "wholly above the high watermark":
        replicas[1]["hw"] = replicas[2]["hw"] = 120
    elif change == "a holder's log starts inside it":
        replicas[2]["log_start"] = 124  # DeleteRecords: its zone under a candidate may start there
    elif change == "wholly below a lacking log's high watermark":
        replicas[3]["hw"] = 124  # a replica lacking it has no say in what is committed of it
    rows = [
        {"tp": 7, "cluster": "c", "topic": "t", "partition": 0, "broker": b, "first_offset": None, **r}
        for b, r in replicas.items()
    ]
    if change == "a broker holding it twice":
        rows.append(dict(rows[1]))
    compared = compare.Compared.of(rows)
    compared.leaders[7] = leader
    return compared, chunk


LAG_ONLY = {
    "lagging follower's gap": True,
    "wholly above the high watermark": True,
    "wholly below a lacking log's high watermark": True,
    "leader lacks it": False,
    "no KRaft leader": False,
    "a hole: the lacking log ends past it": False,
    "the lacking log end unknown": False,
    "unreadable to the end of the lacking log": False,
    "an unreadable span over it": False,
    "a transactional batch": False,
    "straddles the high watermark": False,
    "a holder's log starts inside it": False,
    "a broker holding it twice": False,
}


@pytest.mark.parametrize("change", list(LAG_ONLY))
def test_a_chunk_is_left_to_its_digests_only_as_a_lagging_followers_gap(change):
    compared, chunk = _lag_case(change)
    assert compared.lacking(chunk["tp"], chunk["present"], chunk["last"])
    assert compared.lag_only(chunk) is LAG_ONLY[change]


def test_the_first_chunk_past_each_lacking_log_end_stays_batch_rows():
    """Of the chunks left to their digests, the first at or after the log end of each replica lacking them
    is kept as batch rows: the lag's first batch (its max timestamp) is a row the pass holds."""
    compared, chunk = _lag_case("lagging follower's gap")
    chunks = [dict(chunk, chunk=k, first=8 * k, last=8 * k + 7) for k in (15, 13, 14)]
    assert all(compared.lag_only(c) for c in chunks)
    assert compared.first_after_log_ends(chunks) == {(7, 13)}
    chunks.append(dict(chunk, chunk=20, present=0b101, first=160, last=167))  # broker 2 lacks it too
    assert compared.first_after_log_ends(chunks) == {(7, 13), (7, 20)}


def test_replicas_repeating_different_batches_are_compared(spark, tmp_path, monkeypatch):
    """Each log repeats a batch, a different one (broker 1 holds its batch 3 twice; broker 2, another batch 3
    twice): the chunk's signatures cancel out in pairs in an XOR and the counts are equal, yet the replicas
    differ. The digest also sums the signatures' 32-bit halves, so the chunk is a candidate and the executors
    find the divergence at offset 3 (KA601) that the driver's pass over every batch row finds."""

    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import discover
    from auditor.spark.tuning import SMALL_INPUT_ENV
    from parsers.record_batch import RecordSpec, build_batch

    def batch(offset: int, value: bytes) -> bytes:
        return build_batch([RecordSpec(b"k", value, 1_700_000_000_000 + offset)], base_offset=offset)

    for node, value in ((1, b"a"), (2, b"b")):
        _broker(tmp_path, node, [(0, 2)], hw=3, epochs=[(0, 0)])
        log = tmp_path / f"broker-{node}" / "t-0" / f"{0:020d}.log"
        log.write_bytes(log.read_bytes() + batch(3, value) * 2)

    inputs = discover([tmp_path])
    every_row = findings(run_audit(spark, inputs, chunk_bits=3))
    monkeypatch.setenv(SMALL_INPUT_ENV, "0")
    assert findings(run_audit(spark, inputs, chunk_bits=3)) == every_row
    assert any(f[0] == "KA601" and f[4] == 3 for f in every_row), every_row
