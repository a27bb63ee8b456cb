"""The metadata rows each partition's rules see in ``audit`` (``pass_rows.metadata_for``): its partition
records and the min.insync.replicas / unclean.leader.election.enable configs of its topic and cluster."""

from __future__ import annotations

from auditor.observe import rows


def _meta(**kw) -> dict:
    row = {f.name: None for f in rows.METADATA}
    return {**row, "cluster": "c", "node": 100, "log_dir": "/d", "end_offset": 10, "timestamp": 1, **kw}


def test_config_rows_reach_the_partitions_they_apply_to():
    from auditor.spark.pass_rows import metadata_for, metadata_index

    metadata = [
        _meta(seq=0, record_type="PARTITION_RECORD", topic="a", partition=0, leader=1, isr=[1]),
        _meta(seq=1, record_type="CONFIG_RECORD", topic="a", config_resource_type=2, config_resource="a",
              config_name="min.insync.replicas", config_value="2"),
        _meta(seq=2, record_type="CONFIG_RECORD", topic="a", config_resource_type=2, config_resource="a",
              config_name="segment.bytes", config_value="100"),
        _meta(seq=3, record_type="CONFIG_RECORD", config_resource_type=4, config_resource="",
              config_name="unclean.leader.election.enable", config_value="true"),
        _meta(seq=4, record_type="CONFIG_RECORD", topic="b", config_resource_type=2, config_resource="b",
              config_name="min.insync.replicas", config_value="3"),
    ]  # fmt: skip
    index = metadata_index(metadata)
    seen = sorted(
        (r["topic"], r["partition"], r["seq"])
        for c, t, p in [("c", "a", 0), ("c", "a", 1), ("c", "b", 0)]
        for r in metadata_for(index, c, t, p)
    )
    # a's partition record, a's min.insync.replicas on both its partitions, b's on b-0, the cluster-wide
    # unclean.leader.election.enable on every partition; segment.bytes is not followed
    assert seen == [("a", 0, 0), ("a", 0, 1), ("a", 0, 3), ("a", 1, 1), ("a", 1, 3), ("b", 0, 3), ("b", 0, 4)]
