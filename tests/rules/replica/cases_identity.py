"""Cases of ``auditor/rules/replica/identity.py`` (KA605-KA611): replica directories against the KRaft
metadata: an old incarnation, a replica not in the replica set, future and delete directories, no
metadata, a replica in another log dir than assigned, missing replicas."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.rules.harness import fire, silent

OLD_ID, NEW_ID = "b2xkLXRvcGljLWlkLTAwMA", "bmV3LXRvcGljLWlkLTAwMA"


DIR = {1: "ZGlyLW9mLWJyb2tlci0xLWE", 2: "ZGlyLW9mLWJyb2tlci0yLWE", 3: "ZGlyLW9mLWJyb2tlci0zLWE"}


OTHER_DIR = "ZGlyLW9mLWJyb2tlci0xLWI"


def replica(broker: int, topic_id: str | None = NEW_ID, *, kind: str = "live", log_dir: str | None = None,
            leo: int = 100, directory_id: str | None = None) -> dict:  # fmt: skip
    """A ``rows.REPLICA`` row of orders-0 on ``broker`` (only the columns the identity step reads)."""
    suffix = "" if kind == "live" else f".{topic_id}-{kind}"
    return {
        "cluster": "c",
        "log_dir": log_dir or f"/data/b{broker}",
        "topic": "orders",
        "partition": 0,
        "broker": broker,
        "topic_id": topic_id,
        "dir_name": f"orders-0{suffix}",
        "dir_kind": kind,
        "directory_id": directory_id or DIR[broker],
        "hw": leo,
        "log_start": 0,
        "leo": leo,
        "record_count": leo,
        "bytes": leo * 100,
    }


def metadata(*, recreated: bool = True, replicas: tuple[int, ...] = (1, 2), directories=None) -> list[dict]:
    """Node 100's metadata rows: orders created as OLD_ID on [1, 2, 3], then (``recreated``) deleted and
    created again as NEW_ID on ``replicas``; else NEW_ID from the start on ``replicas``."""
    rows: list[dict] = []

    def add(record_type: str, **kw) -> None:
        rows.append(
            {"cluster": "c", "node": 100, "seq": len(rows), "offset": len(rows), "end_offset": 50,
             "timestamp": 1_795_000_000_000 + len(rows), "record_type": record_type, "topic": "orders",
             "leader": -2, "leader_epoch": -1, "partition_epoch": -1, "leader_recovery_state": -1, **kw}
        )  # fmt: skip

    def create(topic_id: str, on: tuple[int, ...]) -> None:
        add("TOPIC_RECORD", topic_id=topic_id)
        add("PARTITION_RECORD", topic_id=topic_id, partition=0, leader=on[0], leader_epoch=0,
            partition_epoch=0, isr=list(on), replicas=list(on), leader_recovery_state=0,
            directories=directories)  # fmt: skip

    if recreated:
        create(OLD_ID, (1, 2, 3))
        add("REMOVE_TOPIC_RECORD", topic_id=OLD_ID)
    create(NEW_ID, replicas)
    return rows


@dataclass
class Identity:
    replicas: list[dict]
    metadata: list[dict] = field(default_factory=list)

    def finding_rows(self) -> list[dict]:
        from auditor.spark.identity import identity_findings

        return identity_findings(self.replicas, self.metadata).findings


@silent("KA605", "KA606", "KA607", "KA608", "KA609", "KA610", "KA611")
def current_replicas(tmp, mp) -> Identity:
    """Both replicas of the re-created topic hold its current topic ID and are in its replica set."""
    return Identity([replica(1), replica(2)], metadata())


@fire("KA605")
def old_incarnation_left_behind(tmp, mp) -> Identity:
    """Broker 3 was down while orders was deleted and re-created without it: it holds the old topic ID."""
    return Identity([replica(1), replica(2), replica(3, OLD_ID, leo=500)], metadata())


@fire("KA605")
def topic_deleted(tmp, mp) -> Identity:
    """The topic was deleted and not re-created; a broker that was down still holds it."""
    rows = metadata()[:3]  # created as OLD_ID, then removed
    return Identity([replica(3, OLD_ID)], rows)


@fire("KA605", "KA609")
def other_topic_id_without_metadata(tmp, mp) -> Identity:
    """No KRaft metadata: brokers 1 and 2 hold NEW_ID, broker 3 OLD_ID: broker 3 is set apart."""
    return Identity([replica(1), replica(2), replica(3, OLD_ID)])


@silent("KA605")
def without_metadata_one_topic_id(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2)])


@fire("KA606")
def reassigned_away(tmp, mp) -> Identity:
    """The current topic ID on broker 3, which is no longer in the replica set [1, 2]."""
    return Identity([replica(1), replica(2), replica(3)], metadata(recreated=False))


@fire("KA606")
def stray_directory(tmp, mp) -> Identity:
    """A -stray directory Kafka already set apart."""
    return Identity([replica(1), replica(2), replica(2, kind="stray", log_dir="/data/b2")], metadata())


@silent("KA606")
def in_the_replica_set(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2), replica(3)], metadata(recreated=False, replicas=(1, 2, 3)))


@fire("KA607")
def future_directory(tmp, mp) -> Identity:
    """Broker 1 moves orders-0 into its second log dir: the -future copy reached offset 40 of 100."""
    return Identity(
        [
            replica(1),
            replica(2),
            replica(1, kind="future", log_dir="/data/b1b", leo=40, directory_id=OTHER_DIR),
        ],
        metadata(),
    )


@silent("KA607", "KA608")
def no_future_or_delete_directory(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2)], metadata())


@fire("KA608")
def delete_directory(tmp, mp) -> Identity:
    """A deleted replica of the old incarnation awaiting removal beside the new live one."""
    return Identity([replica(1), replica(2), replica(1, OLD_ID, kind="delete")], metadata())


@fire("KA609")
def no_kraft_metadata(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2)])


@silent("KA609")
def with_kraft_metadata(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2)], metadata())


@fire("KA610")
def assigned_to_the_other_log_dir(tmp, mp) -> Identity:
    """The metadata assigns broker 1's replica to its second log dir, but it lives in the first."""
    return Identity([replica(1), replica(2)], metadata(directories=[OTHER_DIR, DIR[2]]))


@silent("KA610")
def assigned_where_it_is(tmp, mp) -> Identity:
    return Identity([replica(1), replica(2)], metadata(directories=[DIR[1], DIR[2]]))


@silent("KA610")
def assignment_unknown(tmp, mp) -> Identity:
    """Reserved directory IDs (UNASSIGNED, LOST) name no log dir: nothing to compare."""
    return Identity(
        [replica(1), replica(2)], metadata(directories=["AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ"])
    )


@fire("KA611")
def one_broker_of_three(tmp, mp) -> Identity:
    """Only broker 1's log dir is among the inputs; the replica set is [1, 2, 3]: nothing is compared (an
    error)."""
    return Identity([replica(1)], metadata(recreated=False, replicas=(1, 2, 3)))


@fire("KA611")
def two_brokers_of_three(tmp, mp) -> Identity:
    """Brokers 1 and 2 are compared, broker 3 of the replica set [1, 2, 3] is missing (a warning)."""
    return Identity([replica(1), replica(2)], metadata(recreated=False, replicas=(1, 2, 3)))


@silent("KA611")
def no_replica_set_known(tmp, mp) -> Identity:
    """Without KRaft metadata the replica set is unknown (KA609 says so): nothing is called missing."""
    return Identity([replica(1)])
