"""``kafka-auditor audit``: the replicas of every partition compared across brokers, on Spark.

Same report options, rule selection (``--select``/``--ignore``/``--explain``/``--list-rules``, over the
``replicas``, ``lag``, ``loss``, ``txn``, ``groups`` and ``cluster`` scopes) and exit codes as ``scan``
(:mod:`auditor.cli.report_options`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from auditor.cli.listing import absolute_path, paths_argument
from auditor.cli.messages import fail, fail_all, warn
from auditor.cli.report_options import ReportOptions, report_options
from auditor.cli.spark_options import checked_master, master_option, run_on_spark
from auditor.layout.relocate import SegmentRoots
from auditor.report.columns import AUDIT_COLUMNS
from auditor.report.model import Report
from auditor.rules.registry import AUDIT_SCOPES, EVERY_COMMAND

ROOTS_HELP = (
    "Broker and controller log directories (meta.properties), folders holding several of them, and/or "
    "extract directories written by `kafka-auditor extract` on each broker. Read-only."
)


def partition_rows(result) -> list[dict[str, Any]]:
    """One report row per replica (camelCase, like ``scan``'s), with its epoch ranges when it diverged; the
    names of ``--save``'s ``replicas`` table (``auditor.spark.audit.saved_table``)."""

    rows = []
    for r in sorted(result.replicas, key=lambda r: (r["cluster"], r["topic"], r["partition"], r["broker"])):
        key = (r["cluster"], r["topic"], r["partition"])
        spans = [
            {k: e[k] for k in ("epoch", "first", "last", "records", "bytes", "batches")}
            for e in result.timelines.get(key, [])
            if e["broker"] == r["broker"]
        ]
        rows.append(
            {
                "cluster": r["cluster"],
                "topic": r["topic"],
                "partition": r["partition"],
                "partitionKey": f"{r['topic']}-{r['partition']}",
                "broker": r["broker"],
                "logDir": r["log_dir"],
                "role": "leader" if r["is_leader"] else "follower",
                "leader": r["leader"],
                "leaderSource": r["leader_source"],
                "logEndOffset": r["leo"],
                # what the files hold; above logEndOffset when recovery would cut a torn or corrupt tail
                "logEndOffsetOnDisk": r.get("leo_on_disk"),
                "highWatermark": r["hw"],
                "logStartOffset": r["log_start"],
                "recoveryPoint": r["recovery_point"],
                "cleanerOffset": r["cleaner_offset"],
                "latestEpoch": r["latest_epoch"],
                "cleanShutdown": r["clean_shutdown"],
                "compacted": r["compacted"],
                "tail": r["tail_state"],
                "tailBytes": r["tail_bytes"],
                "divergence": r["divergence"],
                "truncationOffset": r["truncation_offset"],
                "lostRecords": r["lost_records"],
                # records the leader holds past this follower's LEO (KA630; null: not a lagging follower)
                "lagRecords": r.get("lag_records"),
                # first offset that could not be read (KA691), up to unreadableTo (null: the end of the log,
                # and logEndOffset is then only a lower bound: logEndOffsetKnown false)
                "unreadableFrom": r.get("unreadable_from"),
                "unreadableTo": r.get("unreadable_to"),
                "logEndOffsetKnown": r.get("leo_known", True),
                "unreadable": r.get("unreadable"),
                "epochs": [[e["epoch"], e["start_offset"]] for e in r["epochs"] or []],
                # the partition's state in the KRaft metadata (null: no metadata), named as --save's replicas
                "kraftLeader": r["kraft_leader"],
                "kraftLeaderEpoch": r["kraft_leader_epoch"],
                "kraftIsr": None if r["kraft_isr"] is None else list(r["kraft_isr"]),
                "kraftLeaderRecoveryState": r["kraft_leader_recovery_state"],
                **({"timeline": spans} if spans else {}),
            }
        )
    return rows


def consequences(result, findings) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report sections beside the findings (JSON-ready) and the views the text report draws: the KRaft
    timeline of every partition with a finding, which replica to elect, the transactions open on the
    leaders, the consumer groups' committed offsets."""
    from auditor.kafka.timeline import audit_timelines
    from auditor.report.election import election_json
    from auditor.report.groups import groups_section
    from auditor.report.timeline import timeline_json
    from auditor.report.transactions import transactions_json

    keys = {
        (f.evidence.get("cluster") or "", f.topic, f.partition)
        for f in findings
        if f.topic is not None and f.partition is not None
    }
    ranges = [g for rows_ in result.timelines.values() for g in rows_]
    ranges += list(getattr(result, "epoch_ranges", []))
    timelines = audit_timelines(result.metadata, result.replicas, ranges, keys) if result.metadata else {}
    order = sorted(timelines)
    sections = {
        "timelines": [
            {"cluster": k[0], "topic": k[1], "partition": k[2], **timeline_json(timelines[k])} for k in order
        ],
        "elections": election_json(result.elections),
        "transactions": transactions_json(result.transactions),
        "groups": groups_section(result.groups),
    }
    views = {
        "timelines": {k: timelines[k] for k in order},
        "elections": result.elections,
        "transactions": result.transactions,
        "groups": result.groups,
    }
    return sections, views


def build_report(result, selection, inputs, options: ReportOptions) -> Report:
    """The :class:`Report` of an audit: the selected rules' findings, one partition row per replica, and the
    consequences (:func:`consequences`)."""
    stats = dict(result.stats)
    if result.exported is not None:
        stats["exportedRecords"] = result.exported["records"]
        stats["exportedFiles"] = [result.exported["jsonl"], result.exported["parquet"]]
    findings = sorted((f for f in result.findings if f.code in selection), key=lambda f: f.sort_key())
    from auditor.report.verdicts import audit_verdicts, link_same_facts

    link_same_facts(findings)  # one fact, one primary finding: the others link to it
    sections, views = consequences(result, findings)

    rows = partition_rows(result)
    exported = result.exported["jsonl"] if result.exported is not None else None
    verdicts, consistent = audit_verdicts(
        findings, rows, sections["elections"], [s.path for s in inputs.sources], exported
    )
    sections = {"verdicts": verdicts, **sections}
    stats["consistentPartitions"] = consistent
    return options.report(
        "audit",
        selection,
        AUDIT_COLUMNS,
        findings=findings,
        sections=sections,
        views=views,
        incomplete=bool(result.problems) or any(f.code in EVERY_COMMAND for f in findings),
        partitions=rows,
        inputs=[{"kind": s.kind, "path": s.path} for s in inputs.sources],
        stats=stats,
        errors=result.problems,
    )


@report_options(lambda: AUDIT_SCOPES)
def audit_command(
    options: ReportOptions,
    roots: list[Path] | None = paths_argument("ROOT...", ROOTS_HELP),
    master: str | None = master_option(),
    save: Path | None = typer.Option(
        None, "--save", help="Also write the findings and intermediate tables as Parquet under DIR."
    ),
    export_lost: Path | None = typer.Option(
        None,
        "--export-lost",
        help="Write the lost committed data records (offset, timestamp, key, value, headers, producer id and "
        "epoch, base sequence, transactional or not; never aborted records or markers) as "
        "DIR/lost-records.jsonl and DIR/lost-records.parquet, read from a replica still holding them.",
    ),
    segments_root: list[str] | None = typer.Option(
        None,
        "--segments-root",
        metavar="[BROKER:]FROM=TO",
        help="Where the segments of extracts are on this host, for --export-lost: a log dir an extract "
        "recorded at FROM (or below it) is read at TO; BROKER: limits it to that broker's log dirs. "
        "Repeatable, the first match wins.",
    ),
    verify_crc: bool = typer.Option(
        False,
        "--verify-crc",
        help="Check the CRC of every batch, also below the recovery point of a cleanly shut down log (which "
        "Kafka trusts and the audit then reads header by header); `scan` checks every byte anyway.",
    ),
) -> None:
    """Compare the replicas of every partition across brokers, on Spark: divergence (and where Kafka's
    epoch-based truncation would cut), leader-epoch history, high-watermark violations, the committed
    records truncation will destroy, and the consequences: lost transaction markers and hanging
    transactions, consumer groups that read lost data, the KRaft timeline and which replica to elect.

    Exit status: 0 clean, 1 when a finding reaches --fail-on, 2 for usage errors or unreadable input.
    """
    # pre-checks first, before Spark loads: a refusal takes about a second
    if not roots:
        raise fail("missing ROOT (log directories or extracts); see `kafka-auditor audit --help`")
    selection = options.selection()
    spark_master = checked_master(master)
    try:
        relocated = SegmentRoots.parse(segments_root)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if relocated.roots and export_lost is None:
        raise fail(
            "--segments-root says where the segments of extracts are for --export-lost: add --export-lost DIR"
        )
    # every path absolute before anything reaches an executor (they run in their own working directory)
    save, export_lost = absolute_path(save), absolute_path(export_lost)
    options = replace(options, output=absolute_path(options.output))
    with options.stages() as stages:
        _audit(options, selection, spark_master, roots, save, (export_lost, relocated), stages, verify_crc)


def _audit(
    options: ReportOptions, selection, spark_master, roots, save, export, stages, verify_crc: bool
) -> None:
    """The audit of ``roots`` after the pre-checks of the options, told to the progress display; ``export``:
    the ``--export-lost`` directory (or None) and the ``--segments-root`` mappings."""
    export_lost, relocated = export
    from auditor.report.output import enclosing
    from auditor.spark.inputs import check_inputs, discover

    with stages.stage("discovering the inputs", unit="inputs") as stage:
        inputs = discover(roots)
        problems = inputs.problems or check_inputs(inputs)
        stage.update(len(inputs.sources), len(inputs.sources))
    if problems:
        stages.close()
        raise fail_all(problems)
    for line in inputs.skipped:
        warn(f"{line} (skipped: a log dir inside it is not audited)")
    evidence = [s.path for s in inputs.raw] + [os.path.abspath(r) for r in roots if Path(r).is_dir()]
    problem = options.check_outputs(evidence)
    if problem:
        raise fail(problem)
    for option, path in (("--save", save), ("--export-lost", export_lost)):
        if path is not None and enclosing(path, evidence):
            raise fail(f"{option} {path} is inside an audited directory; write it elsewhere")
    if export_lost is not None and inputs.parquet:
        from auditor.spark.inputs import unreadable_segments

        missing = unreadable_segments(inputs, relocated)
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise fail(
                f"--export-lost reads the lost records from the segments, and the log dir {missing[0]}{more} "
                "is not readable here: say where it is with --segments-root [BROKER:]FROM=TO, audit where "
                "the segments are, or audit without --export-lost"
            )

    from auditor.spark.audit import run_audit
    from auditor.spark.inputs import PARQUET_WEIGHT, input_bytes

    size = input_bytes(inputs, PARQUET_WEIGHT)
    result = run_on_spark(
        spark_master,
        lambda spark: run_audit(
            spark,
            inputs,
            save=save,
            export_lost=export_lost,
            stages=stages,
            verify_crc=verify_crc,
            segments_root=relocated if relocated.roots else None,
        ),
        stages,
        options.verbose,
        input_bytes=size,
    )
    options.write(build_report(result, selection, inputs, options), stages)
