"""KA6xx (divergence, leader epochs, leaders) and KA7xx (high watermark, truncation loss): the cross-replica
checks of ``kafka-auditor audit``. They are computed by Spark jobs (``auditor.spark.compare`` and the
per-partition rules of ``auditor.replication``), so they are declared here without a check function.
"""

from __future__ import annotations

from auditor.findings import Severity
from auditor.rules.registry import declare

DIVERGENCE = declare(
    "KA601",
    "replication.divergence",
    Severity.ERROR,
    "Two replicas of a partition hold different data at the same offset",
    """
    What it finds: for a pair of replicas, the first offset inside their common range [max(log start
    offsets), min(log end offsets)) where they disagree: a batch missing on one side, different batch
    boundaries, a different CRC, or the same CRC with a different partitionLeaderEpoch (the CRC does not cover
    it). Compacted partitions are compared record by record (offset, key, value, headers); an offset present
    on one replica only is benign below the other's cleaner offset. Error when the offset is below one of the
    two checkpointed high watermarks (committed data differs), warning above both (uncommitted tails, which
    Kafka truncates).
    Why it matters: followers copy the leader's batches byte for byte, so two in-sync replicas never differ.
    A difference means one replica kept data the other truncated or never had: an unclean leader election,
    a leader crash with acks=1 data, HW-based truncation (pre-KIP-101) or a Kafka bug (KAFKA-6361,
    KAFKA-6880, KAFKA-7164). Whatever the follower holds from this offset on will be truncated when it
    follows the current leader.
    What to do: look at KA710/KA711 for what is lost, and at the epoch timeline of the partition; before
    restarting brokers, export the records the current leader lacks (``--export-lost``).
    References: KIP-101, KIP-279, KIP-320, KAFKA-1211, KAFKA-6361, KAFKA-6880, spec §17.6.
    """,
    scope="cluster",
)

EPOCH_TRUNCATION = declare(
    "KA602",
    "replication.epoch-truncation-mismatch",
    Severity.ERROR,
    "Kafka's epoch-based truncation point differs from the real divergence point",
    """
    What it finds: a follower for which the OffsetsForLeaderEpoch exchange with the current leader (run on
    the two leader-epoch caches exactly as the follower fetcher does, KIP-101/KIP-279) ends at an offset
    different from the first offset where the two logs really differ. Error when Kafka would truncate above
    the divergence (divergent data below the truncation point survives), info when below (it refetches
    identical data).
    Why it matters: epoch-based truncation is what keeps replicas consistent since Kafka 0.11; when the
    caches do not describe the logs (lost or stale leader-epoch-checkpoint, epochs missing after an unclean
    shutdown, KAFKA-7415 back-to-back elections), the follower keeps divergent data and replicas stay
    inconsistent for good, silently.
    What to do: compare the leader-epoch-checkpoint files with the batches (``kafka-auditor scan``, KA1xx),
    and repair the follower by deleting its copy of the partition so it refetches everything.
    References: KIP-101, KIP-279, KAFKA-6361, KAFKA-7415, KAFKA-14704, spec §17.6.
    """,
    scope="cluster",
)

EPOCH_START = declare(
    "KA603",
    "replication.epoch-start-mismatch",
    Severity.WARNING,
    "Replicas disagree on the start offset of a leader epoch",
    """
    What it finds: a leader epoch present in the leader-epoch caches of several replicas with different start
    offsets (entries at or beyond a replica's log end offset and entries moved up to its log start offset are
    ignored: Kafka writes and trims them routinely).
    Why it matters: an epoch starts at one offset, the first one its leader wrote; two replicas that disagree
    have different data around that offset (spec §17.6 rule 6).
    What to do: read the epoch timeline of the partition in the report; the divergence finding (KA601) of
    the same partition says where the data differs.
    References: KIP-101, KAFKA-6361, KAFKA-7164, spec §17.5, §17.6.
    """,
    scope="cluster",
)

UNKNOWN_EPOCH = declare(
    "KA604",
    "replication.epoch-unknown-to-leader",
    Severity.WARNING,
    "A replica holds data written in a leader epoch the current leader never had",
    """
    What it finds: batches on a follower stamped with a partitionLeaderEpoch that is neither in the current
    leader's leader-epoch cache nor on any of its batches.
    Why it matters: the leader of that epoch wrote data no other replica of the current lineage copied (an
    acks=1 tail of a crashed leader, a zombie leader): the follower will truncate it away.
    What to do: check whether those records were acknowledged (acks=1 producers got a success); export them
    with ``--export-lost`` if they matter.
    References: KIP-101, KIP-279, KAFKA-6361, KAFKA-6880.
    """,
    scope="cluster",
)

UNCLEAN = declare(
    "KA620",
    "replication.unclean-election",
    Severity.WARNING,
    "The KRaft metadata records an unclean leader election",
    """
    What it finds: a PartitionChangeRecord that made a replica outside the previous ISR the leader, or that
    set leaderRecoveryState to 1 (RECOVERING, KIP-704).
    Why it matters: an unclean leader may lack committed records; everything the other replicas hold above
    its log end offset is truncated when they follow it. It explains a divergence and a truncation loss.
    What to do: see KA710 for the committed records this cost and export them; keep
    unclean.leader.election.enable off where durability matters.
    References: KIP-704, KIP-966, spec §17.6.
    """,
    scope="cluster",
)

OFFLINE = declare(
    "KA621",
    "replication.no-current-leader",
    Severity.INFO,
    "The partition has no leader in the KRaft metadata; the last known leader is the reference",
    """
    What it finds: a partition whose latest KRaft state has leader -1 (every replica was down or shut down
    when the copies were taken); the last leader it had is used as the reference replica.
    Why it matters: the reference decides what counts as lost; after a clean shutdown of every broker this
    is normal.
    What to do: nothing, unless the last leader's copy is known to be damaged.
    References: spec §14, §17.6.
    """,
    scope="cluster",
)

LEADER_ABSENT = declare(
    "KA622",
    "replication.leader-not-in-inputs",
    Severity.WARNING,
    "The KRaft leader's copy of the partition is not among the inputs",
    """
    What it finds: the KRaft metadata names a leader whose log directory was not given to the audit; the
    replica with the highest latest leader epoch, then the highest log end offset, is used instead.
    Why it matters: findings are relative to the reference replica; without the real leader they describe
    what the most advanced copy at hand lacks, not what Kafka will keep.
    What to do: add the leader's log directory (or its extract) to the audit.
    References: spec §17.6.
    """,
    scope="cluster",
)

INFERRED = declare(
    "KA623",
    "replication.leader-inferred",
    Severity.INFO,
    "No KRaft metadata: leaders are inferred from the replicas",
    """
    What it finds: the inputs of a cluster include no ``__cluster_metadata`` log, so the current leader of
    every partition is inferred: highest latest leader epoch, then highest log end offset, then lowest
    broker id.
    Why it matters: the inference picks the replica Kafka would most likely keep, but an unclean election or
    a controller decision can differ.
    What to do: add a controller's or broker's metadata log directory to the audit for exact leaders.
    References: spec §14, §17.6.
    """,
    scope="cluster",
)

REPLICA_LAG = declare(
    "KA630",
    "replication.replica-lag",
    Severity.INFO,
    "A follower is behind the current leader (its log is a prefix of the leader's)",
    """
    What it finds: a follower whose log end offset is below the current leader's while its log is a prefix of
    the leader's (no divergence, KA601): the records, bytes and batches the leader holds from the follower's
    log end offset on, the leader epoch at that offset, and whether the KRaft metadata has the follower in
    the ISR. Warning when the metadata has it out of the ISR, or when the leader's newest batch is more than
    replica.lag.time.max.ms (Kafka's default, 30 s) newer than the first batch the follower lacks (batch max
    timestamps: CreateTime unless the topic uses LogAppendTime, so approximate); info otherwise (a copy of a
    running cluster always shows followers a few batches behind). Not reported for a replica whose log end
    offset is unknown (KA691).
    Why it matters: nothing is lost, the follower catches up by fetching; but a follower out of the ISR does
    not count towards min.insync.replicas, and if the leader fails now an unclean election of this follower
    would lose these records (they would become KA710). A follower far behind after a crash (SIGKILL,
    power loss) is the usual explanation of a shrunk ISR.
    What to do: nothing if the broker is running and the lag shrinks; otherwise check the follower's fetcher
    (replica fetcher threads, network, disk) and keep unclean.leader.election.enable off while it is out of
    the ISR.
    References: KIP-16 (ISR by time, replica.lag.time.max.ms), KIP-537 (30 s default), KIP-966, spec §17.1.
    """,
    scope="cluster",
)

UNREADABLE = declare(
    "KA690",
    "replication.replica-unreadable",
    Severity.WARNING,
    "A replica could not be read completely",
    """
    What it finds: a partition replica whose leader-epoch-checkpoint, partition.metadata or (compacted
    partitions) record contents could not be read while extracting it for the audit. Unreadable segments
    are KA691.
    Why it matters: the comparison of that replica is based on what could be read only.
    What to do: run ``kafka-auditor scan`` on that log directory for the exact file and byte position.
    References: none (auditor behaviour).
    """,
    scope="cluster",
)

INCOMPLETE = declare(
    "KA691",
    "replication.replica-incomplete",
    Severity.ERROR,
    "Part of a replica's log could not be read; it is compared outside that part only",
    """
    What it finds: a partition replica whose batches could not be read from some offset on: a segment that is
    not a regular file (a directory, FIFO, socket or device named like a segment), that cannot be opened or
    read (permission denied, an I/O error), whose entries do not parse, or a segment that is not the last and
    stops early (a corrupt or torn entry before the next segment's base offset). The finding names the file
    and why, and the offsets from the first unreadable one to the next readable segment (or to the end of the
    log, when the last segment is unreadable: the log end offset is then unknown, at least the base offset
    of that segment). The audit exits with status 2.
    Why it matters: the comparisons skip that span on this replica: no divergence (KA601), no loss (KA710,
    KA711) and no epoch finding (KA604) is derived from it, a replica whose log end offset is unknown gets no
    high-watermark check that needs it (KA701, KA702 as leader), no truncation point (KA602) and no lag
    (KA630). Records there may be committed and held nowhere else. Kafka itself stops on such a log: an I/O
    error on a segment takes the whole log directory offline (KafkaStorageException), and recovery truncates
    at an entry it cannot read and deletes the later segments.
    What to do: copy the file with a tool that reports read errors (ddrescue for a failing disk), fix its type
    or permissions on the copy, and audit the copy; ``kafka-auditor scan`` of the log directory gives the byte
    position. Until then, do not let this replica lead.
    References: KAFKA-4763 (log dir failure handling, KIP-112), KIP-112, spec §17.1, §17.3.
    """,
    scope="cluster",
)

HW_ABOVE_LEO = declare(
    "KA701",
    "replication.hw-above-own-leo",
    Severity.ERROR,
    "A replica's checkpointed high watermark is above its own log end offset",
    """
    What it finds: a replica whose replication-offset-checkpoint high watermark is above the log end offset
    of its files (the next offset after the last complete batch).
    Why it matters: the high watermark is the committed offset consumers could read up to; this replica
    once knew that offsets below it were committed, but it no longer holds them (lost unflushed tail, torn
    write, stale checkpoint after a disk problem). Kafka clamps the HW at load and the evidence disappears.
    What to do: find the replica that still holds those offsets (KA710) and make sure it leads.
    References: KIP-101, KAFKA-7128, KAFKA-2143, KAFKA-9087, spec §17.1.
    """,
    scope="cluster",
)

HW_ABOVE_LEADER_LEO = declare(
    "KA702",
    "replication.hw-above-leader-leo",
    Severity.ERROR,
    "A replica's high watermark is above the current leader's log end offset",
    """
    What it finds: a follower whose checkpointed high watermark is above the log end offset of the current
    leader.
    Why it matters: every offset below a high watermark was committed (in the ISR and visible to consumers);
    the leader lacks part of it, so committed records are missing from the copy Kafka will keep and serve.
    What to do: see KA710 for the records and the replica still holding them; export them before that
    replica truncates (``--export-lost``), and investigate how the leader was elected (KA620).
    References: KIP-101, KIP-966, KAFKA-7128, spec §17.1, §17.6.
    """,
    scope="cluster",
)

HW_BELOW_LOG_START = declare(
    "KA703",
    "replication.hw-below-log-start",
    Severity.WARNING,
    "A replica's checkpointed high watermark is below its log start offset",
    """
    What it finds: a high watermark checkpoint below the replica's log start offset.
    Why it matters: Kafka clamps it up at load (benign), but it shows a stale checkpoint or a log start that
    moved without the HW following, e.g. a fully truncated and restarted log (KAFKA-9491).
    What to do: usually nothing; compare with the other replicas' high watermarks.
    References: KAFKA-9491, spec §17.1.
    """,
    scope="cluster",
)

FOLLOWER_HW = declare(
    "KA704",
    "replication.follower-hw-above-leader",
    Severity.WARNING,
    "A follower's high watermark is above the current leader's high watermark",
    """
    What it finds: a follower whose checkpointed high watermark is higher than the leader's.
    Why it matters: followers learn the high watermark from the leader, so theirs trails; a higher one means
    the leader changed to a replica that had not seen the same commit point (an unclean or fast failover),
    or the leader lost data.
    What to do: check KA702/KA710 of the same partition.
    References: KIP-101, KAFKA-7128, spec §17.1.
    """,
    scope="cluster",
)

COMMITTED_LOSS = declare(
    "KA710",
    "replication.committed-loss",
    Severity.CRITICAL,
    "Committed records held by a follower are absent from or different on the current leader",
    """
    What it finds: records on a follower, in batches that differ from the leader's batch at the same base
    offset (or that the leader lacks), below the highest high watermark checkpointed by a replica holding
    that same batch: they were committed. Counted in records and bytes, with the replica still holding them.
    Why it matters: when the follower fetches from the current leader it truncates to the divergence point
    (OffsetsForLeaderEpoch) and these committed, acknowledged records are gone for good.
    What to do: before restarting the follower, export the records with ``--export-lost DIR`` (JSONL and
    Parquet) and produce them again if the application needs them.
    References: KIP-101, KIP-279, KAFKA-1211, KAFKA-7128, spec §17.6.
    """,
    scope="cluster",
)

UNCOMMITTED_TAIL = declare(
    "KA711",
    "replication.divergent-uncommitted-tail",
    Severity.WARNING,
    "A follower holds a divergent tail above every high watermark",
    """
    What it finds: batches on a follower that differ from the leader's (or that the leader lacks) at or
    above the high watermarks of the replicas holding them.
    Why it matters: this is what truncation is for; the records were never committed, but acks=1 producers
    may have been told they were written.
    What to do: check whether acks=1 producers wrote them; export them with ``--export-lost`` if needed.
    References: KIP-101, spec §17.6.
    """,
    scope="cluster",
)

CODES = tuple(
    r.code
    for r in (
        DIVERGENCE,
        EPOCH_TRUNCATION,
        EPOCH_START,
        UNKNOWN_EPOCH,
        UNCLEAN,
        OFFLINE,
        LEADER_ABSENT,
        INFERRED,
        REPLICA_LAG,
        UNREADABLE,
        INCOMPLETE,
        HW_ABOVE_LEO,
        HW_ABOVE_LEADER_LEO,
        HW_BELOW_LOG_START,
        FOLLOWER_HW,
        COMMITTED_LOSS,
        UNCOMMITTED_TAIL,
    )
)
