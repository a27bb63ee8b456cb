"""Cases of ``auditor/rules/replica/transactions.py`` (KA712-KA714): lost transaction markers, hanging
transactions, and a transaction coordinator that forgot a transaction still open in a partition.

A case returns an object with ``finding_rows()`` (``rows.FINDING`` dicts of the rules of its scope), the
way ``tests.rules.test_rules`` runs every audit case without Spark."""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import fire, silent
from tests.rules.replica.builders import lost_run


class LostRunsCase:
    """Lost-run rows (``pass_loss.lost_runs``) of broker 2 against the leader 1, evaluated by the
    ``loss`` rules as ``partition_pass.run`` does."""

    def __init__(self, *runs: dict) -> None:
        self.runs = runs

    def finding_rows(self) -> list[dict]:
        from auditor.spark.partition_rules import loss_findings

        return [f for run in self.runs for f in loss_findings(run)]


def txn_run(
    kind: str, lo: int, hi: int, *, records: int, aborted: int = 0, markers: list[tuple] = ()
) -> dict:
    """A lost run of topic ``t`` partition 0 whose ``markers`` are (offset, COMMIT/ABORT, first offset)."""
    listed = [
        {"offset": o, "marker": m, "producer_id": 7, "producer_epoch": 0, "first_offset": f, "epoch": 0}
        for o, m, f in markers
    ]
    return lost_run(
        kind,
        lo,
        hi,
        hi + 1 if kind == "committed" else lo,
        epochs=[0],
        records=records,
        batches=4,
        aborted_records=aborted,
        open_records=0,
        markers=len(listed),
        commit_markers=sum(1 for m in listed if m["marker"] == "COMMIT"),
        lost_markers=listed,
    )


@fire("KA712")
def committed_and_aborted_transactions_truncated(tmp: Path, mp) -> LostRunsCase:
    """Offsets 10..23: aborted data 10-14, ABORT 15, committed data 16-18, COMMIT 19, plain data 20-23."""
    return LostRunsCase(
        txn_run("committed", 10, 23, records=7, aborted=5, markers=[(15, "ABORT", 10), (19, "COMMIT", 16)])
    )


@fire("KA712")
def a_marker_in_the_uncommitted_tail(tmp: Path, mp) -> LostRunsCase:
    return LostRunsCase(txn_run("uncommitted", 30, 33, records=3, markers=[(33, "COMMIT", 30)]))


@silent("KA712")
def lost_data_without_markers(tmp: Path, mp) -> LostRunsCase:
    """Plain data and aborted data whose marker the leader also holds: no marker in the run."""
    return LostRunsCase(txn_run("committed", 10, 19, records=5, aborted=5))


class OpenTxnCase:
    """Transactions open on the leader (rows of ``hanging.open_transaction_rows``) plus the records of the
    ``__transaction_state`` partitions read (None: none among the inputs), evaluated by
    ``hanging.finding_rows`` as the audit does."""

    def __init__(
        self, *found: dict, coordinator: dict[int, list[dict]] | None = None, partitions=None
    ) -> None:
        self.found = found
        self.coordinator = coordinator
        self.partitions = partitions

    def finding_rows(self) -> list[dict]:
        from auditor.spark.hanging import finding_rows, subjects

        coordinators = None if self.coordinator is None else {"c": self.coordinator}
        counts = {"c": self.partitions} if self.partitions is not None else None
        return finding_rows(subjects(self.found, coordinators, counts))


def open_txn(pid: int = 9, first: int = 8, last: int = 13, markers: list[tuple] = (), **kw) -> dict:
    """Producer ``pid`` (epoch 0) open on leader 1 of ``t-0`` (HW = LEO = 23); ``markers``: (broker, offset,
    control type) of its producer on other replicas."""
    return {
        "cluster": "c",
        "topic": "t",
        "partition": 0,
        "producer_id": pid,
        "producer_epoch": 0,
        "first_offset": first,
        "last_offset": last,
        "records": last - first + 1,
        "batches": 2,
        "leader": 1,
        "leader_source": "kraft",
        "log_dir": "/d/1",
        "hw": 23,
        "leo": 23,
        "log_start": 0,
        "markers": [
            {"broker": b, "base_offset": o, "control_type": ct, "producer_epoch": 0, "markers": 1}
            for b, o, ct in markers
        ],
        **kw,
    }


def txn_state(tid: str, pid: int, state: str, epoch: int = 0, offset: int = 0, **kw) -> dict:
    """A ``rows.TXN_STATE`` row of ``__transaction_state-0`` on broker 1."""
    return {
        "cluster": "c",
        "topic": "__transaction_state",
        "partition": 0,
        "broker": 1,
        "offset": offset,
        "live": True,
        "tombstone": state == "tombstone",
        "transactional_id": tid,
        "txn_producer_id": pid,
        "previous_producer_id": kw.get("previous", -1),
        "next_producer_id": -1,
        "txn_producer_epoch": epoch,
        "timeout_ms": 60000,
        "state": None if state == "tombstone" else state,
        "partitions": kw.get("partitions", []),
        "last_update_timestamp": 1,
        "start_timestamp": 1,
    }


@fire("KA713")
@silent("KA714")
def marker_only_on_a_follower(tmp: Path, mp) -> OpenTxnCase:
    """Broker 2 holds producer 9's COMMIT at 14; no __transaction_state replica: KA714 cannot decide."""
    return OpenTxnCase(open_txn(markers=[(2, 14, 1)]))


@fire("KA713", "KA714")
def hanging_and_coordinator_complete(tmp: Path, mp) -> OpenTxnCase:
    return OpenTxnCase(
        open_txn(markers=[(2, 14, 0), (3, 14, 0)]),
        coordinator={
            0: [
                txn_state("tx", 9, "Ongoing", partitions=[("t", 0)]),
                txn_state("tx", 9, "CompleteAbort", offset=1),
            ]
        },
    )


@silent("KA713")
@fire("KA714")
def coordinator_moved_to_a_new_producer_id(tmp: Path, mp) -> OpenTxnCase:
    return OpenTxnCase(open_txn(), coordinator={0: [txn_state("tx", 21, "Ongoing", previous=9)]})


@fire("KA714")
def coordinator_tombstoned_the_id(tmp: Path, mp) -> OpenTxnCase:
    """The id's latest record is a tombstone and every partition of the topic (1, per metadata) was read."""
    return OpenTxnCase(
        open_txn(),
        coordinator={0: [txn_state("tx", 9, "Ongoing"), txn_state("tx", 9, "tombstone", offset=1)]},
        partitions=1,
    )


@fire("KA714")
def ongoing_without_this_partition(tmp: Path, mp) -> OpenTxnCase:
    return OpenTxnCase(open_txn(), coordinator={0: [txn_state("tx", 9, "Ongoing", partitions=[("t", 1)])]})


@silent("KA713", "KA714")
def ordinary_ongoing_transaction(tmp: Path, mp) -> OpenTxnCase:
    return OpenTxnCase(open_txn(), coordinator={0: [txn_state("tx", 9, "Ongoing", partitions=[("t", 0)])]})


@silent("KA714")
def prepare_commit_with_the_bumped_epoch(tmp: Path, mp) -> OpenTxnCase:
    """Transaction version 2 bumps the epoch at EndTxn: PrepareCommit at epoch 1 still writes the markers."""
    return OpenTxnCase(
        open_txn(), coordinator={0: [txn_state("tx", 9, "PrepareCommit", epoch=1, partitions=[("t", 0)])]}
    )


@silent("KA714")
def producer_in_a_partition_not_read(tmp: Path, mp) -> OpenTxnCase:
    """Only __transaction_state-0 of 3 was read and producer 9 is not in it: the view is incomplete."""
    return OpenTxnCase(open_txn(), coordinator={0: [txn_state("other", 5, "Ongoing")]}, partitions=3)
