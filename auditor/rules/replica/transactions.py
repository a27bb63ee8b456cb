"""KA712-KA714: transactions a truncation breaks (lost markers, hanging transactions)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from auditor.findings import Severity, camel_keys
from auditor.kafka.coordinator import IN_FLIGHT, ONGOING, TxnMetadata
from auditor.rules.registry import Violation, rule
from auditor.rules.replica.model import LostRun

# ------------------------------------------------------------------ KA712: lost markers


@rule(
    "KA712",
    "transaction.lost-marker",
    Severity.WARNING,
    "A COMMIT/ABORT transaction marker held by a follower is lost when it truncates",
    scope="loss",
)
def lost_marker(run: LostRun) -> Iterator[Violation]:
    """
    What it finds: COMMIT and ABORT markers (end-transaction control batches) in a follower's lost run
    (``--save``'s ``lost`` table: batches the current leader lacks or holds differently): for each, the
    producer id and epoch, the first offset of the transaction's data in the follower's log, the marker
    offset and its partition leader epoch. One finding per run, every marker counted, the first 100 listed.
    Why it matters: the marker is what ends a transaction for consumers; when the follower truncates it is
    gone. If the leader still holds the transaction's data, the transaction hangs there (KA713): the last
    stable offset stops at its first offset and read_committed consumers stop with it. If the data is lost
    too, a lost COMMIT means committed records are gone (counted by KA710) and a lost ABORT only
    uncommitted ones. Markers are never counted as lost records.
    What to do: check KA713/KA714 for the transactions these markers ended; abort a hanging one with
    ``kafka-transactions.sh abort``; re-produce lost committed data from ``--export-lost``.
    References: KIP-98, KIP-101, KIP-664, ``EndTransactionMarker``,
    ``AbstractFetcherThread.truncateToEpochEndOffsets``.
    """
    if not run.markers:
        return
    shown = run.lost_markers[:5]
    listed = ", ".join(
        f"{m.marker} at {m.offset} (producer id {m.producer_id} epoch {m.producer_epoch}, data from "
        f"{m.first_offset})"
        for m in shown
    )
    more = f" and {run.markers - len(shown)} more" if run.markers > len(shown) else ""
    epochs = sorted({m.epoch for m in run.lost_markers})
    yield run.about(
        f"{run.markers} transaction markers ({run.commit_markers} COMMIT, {run.abort_markers} ABORT) on "
        f"broker {run.broker} in offsets {run.span[0]}..{run.span[1]} are absent from or different on the "
        f"current leader {run.leader} ({run.leader_source}) and are lost when broker {run.broker} truncates: "
        f"{listed}{more}",
        run.lost_markers[0].offset if run.lost_markers else run.span[0],
        run.lost_markers[-1].offset if run.lost_markers else run.span[1],
        epochs[0] if len(epochs) == 1 else None,
        records=run.markers,
        evidence={
            "kind": run.kind,
            "run": list(run.span),
            "markers": run.markers,
            "commitMarkers": run.commit_markers,
            "abortMarkers": run.abort_markers,
            "listed": [
                {
                    "offset": m.offset,
                    "marker": m.marker,
                    "producerId": m.producer_id,
                    "producerEpoch": m.producer_epoch,
                    "firstOffset": m.first_offset,
                    "epoch": m.epoch,
                }
                for m in run.lost_markers
            ],
            "leaderSource": run.leader_source,
            "committedHighWatermark": run.committed_hw,
        },
    )


# ------------------------------------------------------------------ KA713/KA714: hanging transactions


@dataclass(frozen=True)
class MarkerElsewhere:
    """A COMMIT/ABORT marker of the transaction's producer on another replica, after the transaction's first
    offset: the marker the leader lacks (lost to truncation)."""

    broker: int
    offset: int
    marker: str  # COMMIT / ABORT
    producer_epoch: int
    markers: int = 1  # how many markers of that producer the broker holds after the first offset


_NOT_SHOWN = ("timeout_ms", "start_timestamp", "offset")
"""The fields of the coordinator's metadata a finding's evidence leaves out (the offset follows the
``__transaction_state`` partition)."""

_SHOWN = tuple(f.name for f in fields(TxnMetadata) if f.name not in _NOT_SHOWN)
"""The fields of the coordinator's metadata a finding's evidence shows, in their order."""


@dataclass(frozen=True)
class CoordinatorView:
    """What the transaction coordinator (``__transaction_state``) says about a producer id.

    ``status``: ``unavailable`` (no ``__transaction_state`` replica among the inputs), ``incomplete`` (the
    producer id is in none of the partitions read, and some partitions of the topic are missing),
    ``unknown`` (no transactional id has that producer id: tombstoned or expired), or ``found``:
    ``metadata`` is the latest state of the transactional id that answers for it, read from
    ``__transaction_state`` partition ``partition``. ``producer_id`` is the producer id asked about (for the
    statuses but ``found``)."""

    status: str
    detail: str | None = None
    producer_id: int | None = None
    metadata: TxnMetadata | None = None
    partition: int | None = None

    def describe(self) -> str:
        """One phrase for a finding's message."""
        if self.status == "unavailable":
            return "coordinator view unavailable (no __transaction_state replica among the inputs)"
        if self.status == "incomplete":
            return f"coordinator view incomplete: {self.detail}"
        if self.status == "unknown" or self.metadata is None:
            return (
                f"the coordinator tracks no transactional id with producer id {self.producer_id} "
                f"({self.detail})"
            )
        m = self.metadata
        where = f"__transaction_state-{self.partition} on broker {m.broker}, offset {m.offset}"
        return (
            f"the coordinator ({where}) has transactional id {m.transactional_id!r} in state {m.state} "
            f"with producer id {m.producer_id} epoch {m.producer_epoch}"
        )

    def as_dict(self) -> dict[str, Any]:
        """The view for evidence: status, detail, and the producer id asked about or the coordinator's
        metadata (its partition and offset in ``__transaction_state`` last); unset values left out."""
        values: dict[str, Any] = {"status": self.status, "detail": self.detail}
        if self.metadata is None:
            values["producer_id"] = self.producer_id
        else:
            values |= {name: getattr(self.metadata, name) for name in _SHOWN}
            values |= {"partition": self.partition, "offset": self.metadata.offset}
        return {k: v for k, v in values.items() if v is not None and v != ()}


@dataclass(frozen=True)
class OpenTransaction:
    """A transaction open on the current leader of a partition (``auditor.kafka.transactions`` over the
    leader's live batches), with the leader's high watermark, log end offset and last stable offset, the
    markers of its producer on the other replicas and the coordinator's view of its producer id."""

    cluster: str
    topic: str
    partition: int
    leader: int
    log_dir: str | None
    leader_source: str
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int  # last data offset
    records: int
    batches: int
    hw: int  # the leader's high watermark as Kafka loads it
    leo: int
    lso: int  # the partition's last stable offset on the leader
    markers: tuple[MarkerElsewhere, ...] = ()
    coordinator: CoordinatorView = field(default_factory=lambda: CoordinatorView("unavailable"))

    @property
    def hangs(self) -> bool:
        """Its marker exists on another replica but not on the leader."""
        return bool(self.markers)

    @property
    def forgotten(self) -> str | None:
        """Why the coordinator will never end this transaction (None: it still does, or the view is
        unavailable or incomplete)."""
        if self.coordinator.status == "unknown":
            return f"no transactional id of the coordinator has producer id {self.producer_id}"
        c = self.coordinator.metadata
        if c is None:
            return None
        if c.producer_id != self.producer_id:
            return (
                f"its transactional id {c.transactional_id!r} is now producer id {c.producer_id} "
                f"(state {c.state}; {self.producer_id} is its previous or next producer id)"
            )
        if c.state not in IN_FLIGHT:
            return f"its latest state is {c.state} (epoch {c.producer_epoch})"
        if c.state == ONGOING and c.producer_epoch != self.producer_epoch:
            return f"it is Ongoing with another producer epoch ({c.producer_epoch})"
        if c.producer_epoch not in (self.producer_epoch, self.producer_epoch + 1):
            return f"it is {c.state} with producer epoch {c.producer_epoch}"
        if c.partitions and (self.topic, self.partition) not in c.partitions:
            return f"its {c.state} transaction does not include {self.topic}-{self.partition}"
        return None

    def abort_command(self) -> str:
        """The KIP-664 command that aborts it."""
        return (
            f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {self.topic} "
            f"--partition {self.partition} --start-offset {self.first_offset}"
        )

    def find_command(self) -> str:
        return (
            f"kafka-transactions.sh --bootstrap-server HOST:PORT find-hanging --topic {self.topic} "
            f"--partition {self.partition}"
        )

    def frozen(self) -> str:
        """What consumers see while it stays open (a sentence)."""
        lag = self.hw - self.lso
        if self.first_offset >= self.hw:
            return (
                f"It starts at or above the high watermark {self.hw}: once the high watermark passes "
                f"{self.first_offset}, the last stable offset stays there (read_committed consumers stop at "
                f"{self.first_offset}, read_uncommitted consumers read the open records)"
            )
        return (
            f"The last stable offset is frozen at {self.lso} while the high watermark is {self.hw}: "
            f"read_committed consumers stop at {self.lso} ({lag} offsets, {self.records} records of this "
            f"transaction, never delivered until the transaction is aborted), read_uncommitted consumers "
            f"read the open records"
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "producerId": self.producer_id,
            "producerEpoch": self.producer_epoch,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "batches": self.batches,
            "highWatermark": self.hw,
            "logEndOffset": self.leo,
            "lastStableOffset": self.lso,
            "leaderSource": self.leader_source,
            "markersElsewhere": [camel_keys(asdict(m)) for m in self.markers],
            "coordinator": camel_keys(self.coordinator.as_dict()),
            "coordinatorView": self.coordinator.describe(),
            "abort": self.abort_command(),
            "findHanging": self.find_command(),
        }

    def violation(self, message: str) -> Violation:
        return Violation(
            message,
            broker=self.leader,
            log_dir=self.log_dir,
            peer=self.markers[0].broker if self.markers else None,
            offset_start=self.first_offset,
            offset_end=self.last_offset,
            records=self.records,
            evidence=self.evidence(),
        )

    def describe(self) -> str:
        return (
            f"transaction of producer id {self.producer_id} epoch {self.producer_epoch} on the current "
            f"leader (broker {self.leader}) from offset {self.first_offset} to {self.last_offset} "
            f"({self.records} records in {self.batches} batches)"
        )


@rule(
    "KA713",
    "transaction.hanging",
    Severity.ERROR,
    "A transaction is open on the leader while its COMMIT/ABORT marker exists only on another replica",
    scope="txn",
)
def hanging_transaction(txn: OpenTransaction) -> Iterator[Violation]:
    """
    What it finds: a transaction whose data records are on the current leader with no COMMIT or ABORT
    marker of its producer after them, while another replica holds that producer's marker after the
    transaction's first offset: the marker was lost when the leader changed (unclean election, truncation).
    Why it matters: the leader's last stable offset (LSO) cannot pass the first offset of an open
    transaction, so read_committed consumers stop there while the high watermark moves on; the records
    after it are never delivered to them until the transaction is aborted. read_uncommitted consumers read
    the open records (and, if the lost marker was an ABORT, records that were aborted). The transaction
    coordinator believes the transaction is complete and will not write the marker again.
    What to do: confirm with ``kafka-transactions.sh find-hanging --topic T --partition P`` and end it with
    ``kafka-transactions.sh abort --topic T --partition P --start-offset F`` (the exact command is in the
    evidence). If the lost marker was a COMMIT, aborting turns records the producer was told were committed
    into aborted ones: copy them out first (``dump``) and produce them again.
    References: KIP-98, KIP-664, KAFKA-12671, KAFKA-20716.
    """
    if not txn.hangs:
        return
    first = txn.markers[0]
    others = "".join(
        f", broker {m.broker} its {m.marker} marker at offset {m.offset}" for m in txn.markers[1:]
    )
    yield txn.violation(
        f"hanging {txn.describe()}: broker {first.broker} held its {first.marker} marker at offset "
        f"{first.offset}{others}, the leader has none (lost to truncation). {txn.frozen()}; "
        f"{txn.coordinator.describe()}. Abort it: {txn.abort_command()}"
    )


@rule(
    "KA714",
    "transaction.coordinator-forgot",
    Severity.ERROR,
    "A transaction is open on the leader but the coordinator no longer tracks it",
    scope="txn",
)
def coordinator_forgot(txn: OpenTransaction) -> Iterator[Violation]:
    """
    What it finds: a transaction open on the current leader whose producer id the transaction coordinator
    (the latest record of ``__transaction_state`` for its transactional id) no longer tracks as ongoing
    for that producer id and epoch: the state is CompleteCommit, CompleteAbort, Empty or Dead, the
    transactional id moved to a newer producer id or epoch, it does not list the partition, or it was
    tombstoned. Checked only when ``__transaction_state`` replicas are among the inputs.
    Why it matters: only the coordinator writes COMMIT/ABORT markers; one that considers the transaction
    finished never writes this partition's marker, so the transaction stays open forever and the last
    stable offset stays at its first offset (read_committed consumers stop there).
    What to do: abort it with ``kafka-transactions.sh abort --topic T --partition P --start-offset F``
    (KIP-664; the exact command is in the evidence) after checking with ``find-hanging``.
    References: KIP-98, KIP-664, KAFKA-12671.
    """
    why = txn.forgotten
    if why is None:
        return
    yield txn.violation(
        f"{txn.describe()} is not tracked as ongoing by the transaction coordinator, which will never write "
        f"its marker: {why}; {txn.coordinator.describe()}. {txn.frozen()}. "
        f"Abort it: {txn.abort_command()}"
    )
