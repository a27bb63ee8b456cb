"""Cross-replica comparisons on Spark: two scans of the batch rows, then one pass per partition.

Inputs are the flat tables of :mod:`auditor.spark.extract`; every partition replica is keyed by
``tp = xxhash64(cluster, topic, partition)`` and its broker id. The batch rows (the only big table: every
complete batch of the log Kafka loads, ``live``; CRC failures are ``scan``'s job) are read twice:

1. digests (:func:`chunk_digests`): per (tp, broker, offset chunk of 4096, leader epoch) an XOR of batch
   signatures ``xxhash64(base offset, last offset, stored CRC, partitionLeaderEpoch)`` and the sums of their
   32-bit halves, counts and offset ranges
   (map-side partial aggregation: a few rows per chunk leave each task);
2. candidate chunks: the (tp, chunk) where the replicas of a partition are not unanimous (a replica whose
   log reaches the chunk lacks it, or the digests differ), collected (one row per chunk that differs); the
   second scan keeps their batch rows (``held``) and every transactional or control batch (the state of a
   batch is decided by a marker that may lie in a chunk where the replicas agree; the open transactions are
   the leader's whole story), through a broadcast join and a predicate Parquet can push down. A chunk that
   only lies past the log end of the replicas lacking it, held alike by the others and the KRaft leader (a
   lagging follower's gap, :meth:`Compared.lag_only`), is left to its digest rows: the pass reads the
   lag's counts and an election's cost from them, so a follower millions of batches behind costs the pass
   no more memory than one in sync.

Then every row of a partition (replicas, leader-epoch caches, digests, those batch rows, compacted records)
meets in one task, ordered by partition (``repartition`` + ``sortWithinPartitions``; a partition's batch rows
by broker and offset, then its record rows by offset, both streamed), and one function walks
them (:func:`auditor.spark.partition_pass.run`: divergence, the per-partition rules, lag, loss runs with
transaction states, the election's costs), a partition at a time, in ``mapInArrow``. Small inputs run the same
function in the driver over every batch row (no digest: the pass gives the same results on more rows). The
KRaft metadata rows each partition needs come from the driver (collected once for the report anyway), in a
broadcast variable. The small kinds of the pass's output come back to the driver in the action that runs it;
the lost batches ``--export-lost`` decodes stay in Spark (the export runs the plan again).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from auditor.observe import rows
from auditor.spark import partition_pass, pass_divergence, pass_rows
from auditor.spark.arrow import tuples_frame
from auditor.spark.pass_held import HeldRows
from auditor.spark.tuning import broadcast
from parsers.batch_header import ATTR_CONTROL, ATTR_TRANSACTIONAL

CHUNK_BITS = 12
"""Offsets per digest chunk: 4096."""

SMALL_KINDS = tuple(k for k in rows.PASS_OUTPUTS if k != "lost")
"""The pass's outputs the driver collects (every one but the lost batches, as many as the input's)."""


def with_tp(df: DataFrame) -> DataFrame:
    """``df`` with ``tp``, the 64-bit key of a partition: ``xxhash64(cluster, topic, partition)``, worked
    out here unless its rows carry it (the batch and record rows of an extract:
    ``auditor.observe.partition_key``, the same key), whose scans then read no string."""
    if "tp" in df.columns:
        return df
    return df.withColumn("tp", F.xxhash64("cluster", "topic", "partition"))


def candidate_chunks(digest: DataFrame, compared: Compared) -> DataFrame:
    """``(tp, chunk)`` where the replicas compared (``compared``: :class:`Compared`) of a partition may not
    be unanimous: the chunk digests differ (``differ``), or one of them does not hold the chunk, with the
    partition's key, the replicas holding it (``present``, a bit each), the lowest first and highest last
    offset of its batches (``first``, ``last``) and whether one of them needs its row in the pass
    (``rows_needed``), for :meth:`Compared.lacking` to keep the chunks a replica lacks although its log
    reaches them and :meth:`Compared.lag_only` to leave a lagging follower's gap to its digests. One
    shuffle: the digests are partitioned by ``(tp, chunk)``, which the aggregations and the broadcast join
    keep."""
    differ = (
        (F.col("x_min") != F.col("x_max"))
        | (F.col("h_min") != F.col("h_max"))
        | (F.col("l_min") != F.col("l_max"))
        | (F.col("n_min") != F.col("n_max"))
    )

    def extent() -> tuple[Column, ...]:
        return (
            F.min("first").alias("first"),
            F.max("last").alias("last"),
            F.max("rows_needed").alias("rows_needed"),
        )

    return (
        digest.repartition("tp", "chunk")
        .groupBy("tp", "chunk", "broker")
        .agg(
            F.expr("bit_xor(x)").alias("x"),
            F.sum("h").alias("h"),
            F.sum("l").alias("l"),
            F.sum("n").alias("n"),
            *extent(),
        )
        .join(broadcast(compared.frame(digest.sparkSession)), ["tp", "broker"])
        .groupBy("tp", "chunk")
        .agg(
            F.expr("bit_or(bit)").alias("present"),
            F.min("x").alias("x_min"),
            F.max("x").alias("x_max"),
            F.min("h").alias("h_min"),
            F.max("h").alias("h_max"),
            F.min("l").alias("l_min"),
            F.max("l").alias("l_max"),
            F.min("n").alias("n_min"),
            F.max("n").alias("n_max"),
            *extent(),
            *(F.first(k).alias(k) for k in ("cluster", "topic", "partition", "every")),
        )
        .where((F.col("present") != F.col("every")) | differ)
        .select(
            "tp", "chunk", "cluster", "topic", "partition", "present", "first", "last", "rows_needed",
            differ.alias("differ"),
        )
    )


PUSHDOWN_PARTITIONS = 500
"""Up to this many partitions with candidate chunks, the second scan filters on their offset spans so that
Parquet skips the row groups (and the cache its batches) that cannot hold them."""


def batch_columns(batch: DataFrame, chunk_bits: int) -> DataFrame:
    """What the comparisons need of the batch rows: partition key, chunk, signature, sizes, location, and the
    producer and transaction fields of the batch (its transaction state: ``pass_loss.walk_batches``; the
    export). Only the batches of the log Kafka loads (``live``: not cut by recovery,
    ``auditor.kafka.recovery``) take part, as the replica's ``leo`` is the recovered log end offset."""
    derived = {
        "leader_epoch": F.col("partition_leader_epoch"),
        "sig": F.xxhash64("base_offset", "last_offset", "crc", "partition_leader_epoch"),
        "held": F.lit(True),
    }
    columns = [derived.get(name, F.col(name)).alias(name) for name in pass_rows.BATCH_FIELDS]
    chunk = F.shiftright("base_offset", chunk_bits).alias("chunk")
    return with_tp(batch.where(F.col("live"))).select("tp", *columns, chunk, "live")


def _prune(batch: DataFrame, chunks: list, chunk_bits: int) -> DataFrame:
    """The batch rows the pass reads, by a predicate Parquet can push down: the transactional and control
    batches, and the offset span of the candidate chunks of each partition that has some (``chunks``: those
    :func:`scan_batches` collects; the join on the chunks stays the exact filter)."""
    by_key: dict[tuple, list[int]] = {}
    for c in chunks:
        key = (c["cluster"], c["topic"], c["partition"])
        lo, hi = by_key.get(key, (c["chunk"], c["chunk"]))
        by_key[key] = [min(lo, c["chunk"]), max(hi, c["chunk"])]
    spans = [
        {"cluster": k[0], "topic": k[1], "partition": k[2], "lo": lo, "hi": hi}
        for k, (lo, hi) in by_key.items()
    ]
    txn = F.col("is_transactional") | F.col("is_control")
    if not spans:
        return batch.where(txn)
    if len(spans) > PUSHDOWN_PARTITIONS:
        return batch
    return batch.where((_superset(spans, chunk_bits) & _spans(spans, chunk_bits)) | txn)


def _superset(spans: list, chunk_bits: int) -> Column:
    """A cheap superset of :func:`_spans`, tested first on every row: the integer columns (partition, then
    one offset range) before the strings, each an ``IN`` list (most rows fail at the first test)."""
    lo = min(s["lo"] for s in spans) << chunk_bits
    hi = (max(s["hi"] for s in spans) + 1) << chunk_bits

    def among(name: str) -> Column:
        return F.col(name).isin(sorted({s[name] for s in spans}))

    in_range = (F.col("base_offset") >= lo) & (F.col("base_offset") < hi)
    return among("partition") & in_range & among("topic") & among("cluster")


def _spans(spans: list, chunk_bits: int) -> Column:
    """The offset span of the candidate chunks of each partition (a term per partition, ORed)."""
    cond = None
    for s in spans:
        term = (
            (F.col("cluster") == s["cluster"])
            & (F.col("topic") == s["topic"])
            & (F.col("partition") == s["partition"])
            & (F.col("base_offset") >= s["lo"] << chunk_bits)
            & (F.col("base_offset") < (s["hi"] + 1) << chunk_bits)
        )
        cond = term if cond is None else cond | term
    return cond


def _materialize(df: DataFrame) -> DataFrame:
    """Compute a small intermediate now and cut its lineage: later plans start from its rows, which keeps
    Spark's planning time small (the full plan of an audit is large) and guarantees it is computed once."""
    return df.localCheckpoint(eager=True)


@dataclass
class AuditFrames:
    """What one audit's comparisons computed: ``rows``, the outputs of the pass by kind
    (``rows.PASS_OUTPUTS``), in the driver (all of them when the pass ran there, a small input; else all but
    the lost batches, which ``lost_plan`` computes again in Spark). ``findings`` are the audit's findings (the
    pass's, folded per cluster) as ``rows.FINDING`` rows; later steps add theirs."""

    spark: Any
    rows: dict[str, list[dict]]
    lost_plan: DataFrame | None = None
    findings: list[dict] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def frame(self, kind: str) -> DataFrame:
        """The output ``kind`` as a DataFrame (``rows.PASS_OUTPUTS[kind]`` columns)."""
        schema = rows.PASS_OUTPUTS[kind]
        if self.lost_plan is not None and kind == "lost":  # the pass again, yielding the lost batches only
            return self.lost_plan.where(F.col(kind).isNotNull()).select(f"{kind}.*")
        from auditor.spark.arrow import frame_of

        data = self.findings if kind == "finding" else self.rows.get(kind, [])
        return frame_of(self.spark, [pa.RecordBatch.from_pylist(data, schema=schema)], schema)

    def saveable(self) -> dict[str, DataFrame]:
        """The tables ``--save`` writes, by directory name (each with cluster, topic and partition)."""
        names = {
            "findings": "finding",
            "replicas": "summary",
            "divergence": "divergence",
            "lost": "loss",
            "epochs": "epochs",
            "pairs": "pair",
            "lags": "lag",
            "timeline": "timeline",
        }
        return {name: self.frame(kind) for name, kind in names.items()}


def _tagged(kinds: dict[str, DataFrame]) -> DataFrame:
    """One DataFrame of ``tp`` and one struct column per kind (every row holds one of them)."""
    union = None
    for kind, df in kinds.items():
        tagged = df.select("tp", F.struct(*[F.col(f"`{c}`") for c in df.columns if c != "tp"]).alias(kind))
        union = tagged if union is None else union.unionByName(tagged, allowMissingColumns=True)
    return union


def tagged_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, str, Any]]:
    """``(tp, kind, row)`` of every row of tagged record batches (:func:`_tagged`), column by column: a batch
    row as a :class:`pass_rows.BatchRow`, any other row as a dict."""
    for b in batches:
        n = b.num_rows
        if not n:
            continue
        kinds: list[str | None] = [None] * n
        items: list[Any] = [None] * n
        names = b.schema.names
        for kind in pass_rows.INPUT_KINDS:
            if kind not in names:
                continue
            col = b.column(kind)
            valid = col.is_valid()
            where = pc.indices_nonzero(valid).to_pylist()
            if not where:
                continue
            sub = col.filter(valid)
            if kind == "batch":
                fields = [sub.field(name).to_pylist() for name in pass_rows.BATCH_FIELDS]
                values = zip(*fields, strict=True)
                rows_ = [pass_rows.BatchRow.of(v) for v in values]
            else:
                rows_ = sub.to_pylist()
            for i, row in zip(where, rows_, strict=True):
                kinds[i], items[i] = kind, row
        yield from zip(b.column("tp").to_pylist(), kinds, items, strict=True)


STREAMED = ("batch", "record")
"""The kinds of a partition's rows that stream by, in this order, after its other rows (:func:`_ordered`)."""


def _grouped(rows_: Iterable[tuple[int, str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Tagged rows (:func:`tagged_rows`, ordered as :func:`_ordered` sorts them) grouped by partition: every
    kind as a list but those of :data:`STREAMED`, each an iterator over the partition's rows of that kind as
    they stream by (never held). Read them in :data:`STREAMED` order: an iterator skips the rows of the
    kinds before it left unread, and what the consumer leaves of the partition is skipped."""
    it = iter(rows_)
    head = next(it, None)
    while head is not None:
        tp, group = head[0], {}
        while head is not None and head[0] == tp and head[1] not in STREAMED:
            group.setdefault(head[1], []).append(head[2])
            head = next(it, None)

        def stream(kind: str, tp: int = tp) -> Iterator[Any]:
            nonlocal head
            rank = STREAMED.index(kind)
            while head is not None and head[0] == tp:
                if head[1] not in STREAMED:
                    raise ValueError(f"partition {tp}: a {head[1]} row after its streamed rows")
                other = STREAMED.index(head[1])
                if other > rank:
                    return
                item = head[2]
                head = next(it, None)
                if other == rank:
                    yield item

        streams = {kind: stream(kind) for kind in STREAMED}
        group.update(streams)
        yield tp, group
        for rest in streams.values():  # what the consumer left of the partition, unread
            for _ in rest:
                pass


def _log_order(b: pass_rows.BatchRow) -> tuple:
    """A batch row's place in the pass's order: broker, base offset, then where it lies in its log (a log that
    repeats a base offset: the later one last, as Spark's sort by :func:`_ordered` puts it, nulls first)."""
    segment, position = b.segment, b.position
    return (b.broker, b.base_offset, -1 if segment is None else segment, -1 if position is None else position)


def _ordered(union: DataFrame) -> DataFrame:
    """The tagged rows of a task ordered by partition, a partition's batch rows after its other rows and by
    (broker, base offset, segment, position: the log's order where it repeats a base offset), its record rows
    last and by offset: what :func:`_grouped` streams."""
    order = {"batch": ("broker", "base_offset", "segment", "position"), "record": ("offset",)}
    present = [kind for kind in STREAMED if kind in union.columns]
    keys: list = ["tp", *(F.col(kind).isNotNull() for kind in reversed(present))]
    keys += [F.col(kind)[name] for kind in present for name in order[kind]]
    return union.sortWithinPartitions(*keys)


def run_partitions(
    groups: Iterator[tuple[int, dict[str, list]]], index: dict, export: bool = False
) -> Iterator[tuple[int, dict[str, list[dict]]]]:
    """:func:`partition_pass.run` over each partition's rows."""
    for tp, group in groups:
        replicas = group.get("replica")
        if not replicas:
            continue
        r = replicas[0]
        metadata = pass_rows.metadata_for(index, r["cluster"], r["topic"], r["partition"])
        lag_chunks = index.get("lag_chunks", {}).get(tp, ())
        yield tp, partition_pass.run(group, metadata, export, lag_chunks)


def _output_batch(results: list[dict[str, list[dict]]]) -> pa.RecordBatch:
    """The outputs of some partitions as one record batch of ``rows.PASS_OUTPUT``."""
    columns = []
    for kind, schema in rows.PASS_OUTPUTS.items():
        values: list = []
        for out in results:
            for other, items in out.items():
                values += items if other == kind else [None] * len(items)
        columns.append(pa.array(values, type=pa.struct(list(schema))))
    return pa.RecordBatch.from_arrays(columns, schema=rows.PASS_OUTPUT)


OUTPUT_ROWS = 4096
"""The pass's output is handed to Spark in record batches of about this many rows."""


def _pass_task(index_var, kinds: tuple[str, ...]):
    """The ``mapInArrow`` function: the tagged input rows of a task, ordered by partition, walked partition by
    partition (one partition's rows in memory at a time); the outputs of ``kinds`` only."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending, size = [], 0
        for _tp, out in run_partitions(_grouped(tagged_rows(batches)), index_var.value, "lost" in kinds):
            out = {k: v for k, v in out.items() if k in kinds}
            pending.append(out)
            size += sum(len(v) for v in out.values())
            if size >= OUTPUT_ROWS:
                yield _output_batch(pending)
                pending, size = [], 0
        if pending:
            yield _output_batch(pending)

    return task


def audit(
    tables,
    metadata: list[dict],
    replica_keys: list[dict],
    chunk_bits: int = CHUNK_BITS,
    driver: bool = False,
) -> AuditFrames:
    """Every comparison of one audit: the digest scan and the candidate chunks (not for a small input,
    ``driver``), then the pass over each partition's rows, on the executors or, ``driver``, in the driver.
    ``metadata``: every KRaft metadata row of the input (``rows.METADATA``); ``replica_keys``: the replicas
    compared (cluster, topic, partition and ``tp``; collected with the audit's other small inputs)."""
    K = chunk_bits
    spark = tables.replica.sparkSession
    index = pass_rows.metadata_index(metadata)
    replicas = with_tp(tables.replica)
    epochs = with_tp(tables.epoch).select("tp", "broker", "epoch", "start_offset", "ordinal")
    # a record row without its offset or hash (only a damaged extract has one) compares with nothing
    records = (
        with_tp(tables.record)
        .select("tp", "broker", "offset", "record_hash")
        .where(F.col("offset").isNotNull() & F.col("record_hash").isNotNull())
    )
    stats: dict[str, Any] = {}
    if driver:
        from auditor.spark.arrow import arrow_batches

        union = _tagged(
            {
                "replica": replicas,
                "epoch": epochs,
                "batch": _pass_columns(batch_columns(tables.batch, K)),
                "record": records,
            }
        )
        gathered: dict[int, dict[str, list]] = {}
        for tp, kind, item in tagged_rows(arrow_batches(union)):
            gathered.setdefault(tp, {}).setdefault(kind, []).append(item)
        got: dict[str, list[dict]] = {k: [] for k in rows.PASS_OUTPUTS}
        for group in gathered.values():
            group.get("batch", []).sort(key=_log_order)
            group.get("record", []).sort(key=lambda r: r["offset"])
        for _tp, out in run_partitions(iter(sorted(gathered.items())), index, export=True):
            for kind, items in out.items():
                got[kind] += items
        lost_plan = None
    else:
        compared = Compared.of(replica_keys).with_leaders(index)
        digest, chunks, candidates, skipped = scan_batches(tables.batch, compared, K)
        stats["candidate_chunks"], stats["lag_chunks"] = len(chunks), sum(map(len, skipped.values()))
        union = _tagged(
            {
                "replica": replicas,
                "epoch": epochs,
                "digest": digest.drop("x", "h", "l"),
                "batch": _pass_columns(candidates),
                "record": records,
            }
        )
        n = max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
        index_var = spark.sparkContext.broadcast({**index, "lag_chunks": skipped})
        # not materialised: the small outputs are collected in the action that runs the pass, the lost
        # batches only read again by --export-lost (which runs the plan once more)
        grouped = _ordered(union.repartition(n, "tp"))
        out_df = grouped.mapInArrow(_pass_task(index_var, SMALL_KINDS), rows.spark_schema(rows.PASS_OUTPUT))
        lost_plan = grouped.mapInArrow(_pass_task(index_var, ("lost",)), rows.spark_schema(rows.PASS_OUTPUT))
        got = {k: [] for k in rows.PASS_OUTPUTS}
        from auditor.spark.arrow import rows_of

        for row in rows_of(out_df.select(*SMALL_KINDS)):
            kind = next(k for k in SMALL_KINDS if row[k] is not None)
            got[kind].append(row[kind])
    kept, cluster = partition_pass.cluster_rows(got["finding"], got["summary"])
    frames = AuditFrames(spark, got, lost_plan, kept + cluster, stats)
    return frames


def _pass_columns(batches: DataFrame) -> DataFrame:
    """The batch columns the pass reads (``pass_rows.BATCH_FIELDS``) and the key ``tp``."""
    return batches.select("tp", *pass_rows.BATCH_FIELDS)


REPLICA_START_COLUMNS = ("log_start", "leo", "first_offset")
"""Where a replica's log starts: the least of these (a null is left out)."""

LAG_COLUMNS = ("leo", "hw", "log_start", "unreadable_from", "unreadable_to")
"""What :meth:`Compared.lag_only` reads of each replica besides where its log starts."""

MASKED_REPLICAS = 63
"""Up to this many brokers hold a partition's replicas compared, each has its bit in :class:`Compared`'s
masks; above (a hostile input), every chunk of the partition is a candidate."""


COMPARED_SCHEMA = pa.schema(
    [
        ("tp", pa.int64()),
        ("broker", pa.int32()),
        ("bit", pa.int64()),
        ("cluster", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("every", pa.int64()),
    ]
)
"""The replicas compared, one row each (:meth:`Compared.frame`)."""

CANDIDATE_SCHEMA = pa.schema([("tp", pa.int64()), ("chunk", pa.int64()), ("candidate", pa.bool_())])
"""The candidate chunks the second scan keeps (:func:`scan_batches`)."""


def replica_start(row: dict) -> int:
    """The first offset a replica's log reaches (:data:`REPLICA_START_COLUMNS`; 0 when none is known)."""
    known = [row.get(k) for k in REPLICA_START_COLUMNS if row.get(k) is not None]
    return min(known) if known else 0


@dataclass
class Compared:
    """The replicas compared, by partition (``tp``), from the driver's replica rows: the partition's key and,
    per broker (in bit order), where its log starts (:func:`replica_start`; the least when a broker holds
    the partition twice) and what :meth:`lag_only` reads of it (:data:`LAG_COLUMNS`); the partition's KRaft
    leader (:meth:`leader`)."""

    keys: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    starts: dict[int, dict[int, int]] = field(default_factory=dict)
    replicas: dict[int, dict[int, dict]] = field(default_factory=dict)
    twice: set[int] = field(default_factory=set)
    leaders: dict[int, int | None] = field(default_factory=dict)
    index: dict | None = None

    @classmethod
    def of(cls, replica_keys: Iterable[dict]) -> Compared:
        out = cls()
        for r in replica_keys:
            tp, broker = r["tp"], r["broker"]
            out.keys[tp] = (r["cluster"], r["topic"], r["partition"])
            starts = out.starts.setdefault(tp, {})
            start = replica_start(r)
            if broker in starts:
                out.twice.add(tp)
            starts[broker] = min(starts.get(broker, start), start)
            out.replicas.setdefault(tp, {})[broker] = {k: r.get(k) for k in LAG_COLUMNS}
        return out

    def with_leaders(self, index: dict) -> Compared:
        """Take each partition's leader from the KRaft metadata rows ``index`` holds
        (``pass_rows.metadata_index``; :meth:`leader`)."""
        self.index = index
        return self

    def leader(self, tp: int) -> int | None:
        """The partition's leader as the pass takes it (``model.choose_leader``): its KRaft leader
        (``model.kraft_view`` of its metadata rows) when that is a broker among the replicas compared; else
        None (the pass infers one from the leader epochs, which the driver does not see). Worked out once, for
        the partitions that have a chunk :meth:`lag_only` may leave out."""
        if tp not in self.leaders:
            from auditor.kafka.topics import METADATA_TOPIC
            from auditor.rules.replica.model import kraft_view

            cluster, topic, partition = self.keys[tp]
            state = None
            if self.index is not None and topic != METADATA_TOPIC:
                rows_ = pass_rows.metadata_for(self.index, cluster, topic, partition)
                state = kraft_view(rows_, topic, partition)
            ok = state is not None and state.leader >= 0 and state.leader in self.starts[tp]
            self.leaders[tp] = state.leader if ok else None
        return self.leaders[tp]

    def frame(self, spark) -> DataFrame:
        """``(tp, broker, bit, cluster, topic, partition, every)``: each replica's bit and its partition's key
        with ``every``, the mask of every broker holding the partition (above :data:`MASKED_REPLICAS`, every
        bit 0 and ``every`` -1: never matched); a small DataFrame made in the driver."""
        out = []
        for tp, starts in sorted(self.starts.items()):
            masked = len(starts) <= MASKED_REPLICAS
            every = (1 << len(starts)) - 1 if masked else -1
            out += [(tp, b, 1 << i if masked else 0, *self.keys[tp], every) for i, b in enumerate(starts)]
        return tuples_frame(spark, out, COMPARED_SCHEMA)

    def _reach(self, tp: int, last: int) -> int:
        """The mask of the brokers whose log reaches ``last`` (starts at or below it)."""
        return sum(1 << i for i, start in enumerate(self.starts.get(tp, {}).values()) if start <= last)

    def lacking(self, tp: int, present: int, last: int) -> bool:
        """A broker whose log reaches ``last`` (starts at or below it) is not among ``present`` (a chunk's
        mask, :func:`candidate_chunks`). A replica whose log starts after a chunk (its log start offset, log
        end offset and first batch all past the last offset of every batch of the chunk: retention or
        DeleteRecords removed it there first) does not lack it: no comparison of the pass reads such a chunk
        (a pair's common range, a follower's zone, an election's loss and a lag all take the batches whose
        last offset reaches the log start or log end offset of a replica involved)."""
        if len(self.starts.get(tp, {})) > MASKED_REPLICAS:
            return True
        return bool(self._reach(tp, last) & ~present)

    def lag_only(self, c) -> bool:
        """Chunk ``c`` (a :func:`candidate_chunks` row whose holders agree) only lies past the log end of the
        replicas that lack it: a lagging follower's gap, which the pass reads from the chunk's digest rows
        (the lag's counts; an election's cost when a replica lacking it is the candidate) instead of its
        batch rows. So when every reader of the pass takes the chunk whole and alike on every holder:

        * the partition's KRaft leader (the pass's leader, :meth:`with_leaders`) holds it: no follower's zone
          reaches it (a follower holding it holds the leader's batches, a follower lacking it has none);
        * every replica lacking it has a known log end offset at or below the chunk's first offset (no hole
          inside a log, no unreadable span running to the end of one);
        * no transactional or control batch (its state and markers need the row) nor one of more records
          than offsets (the pass counts a batch's records up to its offsets: the digest sums them);
        * it lies wholly below or wholly at and above the highest high watermark of its holders (the
          committed part of a loss is counted per batch at that offset), and outside every unreadable span;
        * no broker holds the partition twice, and the partition's brokers fit the masks."""
        tp, present, first, last = c["tp"], c["present"], c["first"], c["last"]
        brokers = list(self.starts.get(tp, {}))
        if c["rows_needed"] or tp in self.twice or len(brokers) > MASKED_REPLICAS:
            return False
        leader = self.leader(tp)
        if leader is None:
            return False
        if not present >> brokers.index(leader) & 1:
            return False
        reach, chw = self._reach(tp, last), 0
        for i, broker in enumerate(brokers):
            r = self.replicas[tp][broker]
            if pass_divergence.inside(first, last, r["unreadable_from"], r["unreadable_to"]):
                return False
            if present >> i & 1:
                if (r["log_start"] or 0) > first:
                    return False  # its zone may start inside the chunk, at its log start offset
                chw = max(chw, r["hw"] or 0)
            elif reach >> i & 1:
                ends = r["unreadable_from"] is None or r["unreadable_to"] is not None
                if r["leo"] is None or not ends or r["leo"] > first:
                    return False
        return first >= chw or last < chw

    def first_after_log_ends(self, chunks: Iterable) -> set[tuple[int, int]]:
        """Of ``chunks`` (:meth:`lag_only` ones), the first at or after the log end offset of each replica
        lacking one of them, by ``(tp, chunk)``: kept as batch rows, so that a lag's first batch (whose max
        timestamp the lag reports) is always a row the pass holds."""
        first: dict[tuple[int, int], tuple[int, int]] = {}
        for c in chunks:
            tp = c["tp"]
            reach = self._reach(tp, c["last"])
            for i, broker in enumerate(self.starts[tp]):
                if reach >> i & 1 and not c["present"] >> i & 1:
                    key = (tp, broker)
                    first[key] = min(first.get(key, (c["first"], c["chunk"])), (c["first"], c["chunk"]))
        return {(tp, chunk) for (tp, _broker), (_first, chunk) in first.items()}


def chunk_digests(batches: DataFrame) -> DataFrame:
    """The digest rows of :func:`batch_columns` rows (a plan): per (tp, broker, chunk, leader epoch) the XOR
    of the batch signatures and the sums of their high and low halves (a log repeating a batch cancels it
    out of the XOR, not of the sums; no overflow under 2^31 rows a chunk), the count, the offset range,
    records, bytes, max timestamps and whether a batch needs its row in the pass (``rows_needed``)."""
    # a batch whose digest cannot stand for it in the pass: transactional or control (its state, its
    # marker), or holding more records than offsets (the pass counts those batches by their offsets)
    # (the attribute bits the extract's is_transactional and is_control come from: one column read, not two;
    # a null, only in a damaged extract, counts as needing the rows, where the pass fails as the driver's)
    flags = F.col("attributes").bitwiseAND(ATTR_TRANSACTIONAL | ATTR_CONTROL) != 0
    overfull = F.col("records_count") > F.col("last_offset") - F.col("base_offset") + 1
    rows_needed = F.coalesce(flags | overfull | F.col("size").isNull(), F.lit(True))
    return batches.groupBy("tp", "broker", "chunk", "leader_epoch").agg(
        F.expr("bit_xor(sig)").alias("x"),
        F.sum(F.shiftrightunsigned("sig", 32)).alias("h"),
        F.sum(F.col("sig").bitwiseAND(0xFFFFFFFF)).alias("l"),
        F.count(F.lit(1)).alias("n"),
        F.min("base_offset").alias("first"),
        F.max("last_offset").alias("last"),
        F.sum("records_count").alias("records"),
        F.sum("size").alias("bytes"),
        F.min("max_timestamp").alias("first_timestamp"),
        F.max("max_timestamp").alias("last_timestamp"),
        F.max(rows_needed).alias("rows_needed"),
    )


def scan_batches(
    batch: DataFrame, compared: Compared, chunk_bits: int
) -> tuple[DataFrame, list, DataFrame, dict[int, set[int]]]:
    """The two scans of the batch rows: the chunk digests (materialised), the candidate chunks (collected:
    those of :func:`candidate_chunks` whose digests differ or that a replica compared lacks although its log
    reaches them, :meth:`Compared.lacking`), the batch rows the pass reads (a plan: the rows of the candidate
    chunks, ``held``, and every other transactional or control batch) and, by partition, the chunks left to
    their digest rows (:meth:`Compared.lag_only`: a lagging follower's gap, never held, whatever its size)."""
    batches = batch_columns(batch, chunk_bits)
    digest = _materialize(chunk_digests(batches))
    chunks, lag = [], []
    for c in candidate_chunks(digest, compared).collect():
        if not c["differ"] and not compared.lacking(c["tp"], c["present"], c["last"]):
            continue
        (lag if not c["differ"] and compared.lag_only(c) else chunks).append(c)
    first_after = compared.first_after_log_ends(lag)
    chunks += [c for c in lag if (c["tp"], c["chunk"]) in first_after]
    skipped: dict[int, set[int]] = {}
    for c in lag:
        if (c["tp"], c["chunk"]) not in first_after:
            skipped.setdefault(c["tp"], set()).add(c["chunk"])
    keys = tuples_frame(batches.sparkSession, [(c["tp"], c["chunk"], True) for c in chunks], CANDIDATE_SCHEMA)
    held = F.col("candidate").isNotNull()
    candidates = (
        batch_columns(_prune(batch, chunks, chunk_bits), chunk_bits)
        .join(broadcast(keys), ["tp", "chunk"], "left")
        .where(held | F.col("is_transactional") | F.col("is_control"))
        .withColumn("held", held)
        .drop("candidate")
    )
    return digest, chunks, candidates, skipped


def divergence_frame(tables, chunk_bits: int = CHUNK_BITS) -> DataFrame:
    """The first divergence of every batch-mode replica pair (``rows.DIVERGENCE``), alone: the two scans and
    the pass's divergence step (``pass_divergence.first_divergences``) per partition; what the benchmarks
    time against other engines."""
    replicas = with_tp(tables.replica)
    keys = replicas.select("tp", "cluster", "topic", "partition", "broker", *REPLICA_START_COLUMNS)
    compared = Compared.of(r.asDict() for r in keys.collect())
    _digest, _chunks, candidates, _skipped = scan_batches(tables.batch, compared, chunk_bits)
    union = _tagged({"replica": replicas, "batch": candidates})
    schema = rows.DIVERGENCE

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        found = []
        for _tp, group in _grouped(tagged_rows(batches)):
            if group.get("replica"):
                held = HeldRows()  # the held rows come in (broker, offset) order; spilled past its bound
                try:
                    for b in group["batch"]:
                        if b.held:
                            held.append(b)
                    found += pass_divergence.first_divergences(
                        pass_divergence.replica_pairs(group["replica"]), held, ()
                    )
                finally:
                    held.close()
        yield pa.RecordBatch.from_pylist(found, schema=schema)

    n = max(1, int(tables.replica.sparkSession.conf.get("spark.sql.shuffle.partitions")))
    return _ordered(union.repartition(n, "tp")).mapInArrow(task, rows.spark_schema(schema))
