"""bronze -> silver for every input: validate, quarantine, gate, MERGE (the edge around transforms).

Each input reads its bronze table incrementally (a Delta stream with availableNow and its own
checkpoint). Each micro-batch:

1. row-level rules (from the JSON Schema contract) split records into valid and quarantined;
2. valid records are reduced to the newest per key and checked by the table's
   great_expectations suite, and the batch as a whole by the quarantine-share breaker; a failed
   check raises before anything of the batch is written (the checkpoint does not advance, so the
   batch is retried once the cause is fixed);
3. quarantined records are appended to ``silver.quarantine_<input>``; valid ones are MERGEd into
   the silver table(s) on their key, a matched row updated only by a newer record;
4. ``silver.batch_audit`` records bronze_rows = clean_rows + duplicate_rows + quarantined_rows,
   and ``silver.quality_results`` every check's outcome.

Appends carry Delta's idempotent-writer options (txnAppId, txnVersion = stream batch number), so
a batch replayed after a crash writes nothing twice; the MERGEs are idempotent by construction.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.quality import CheckResult, QualityGateError, run_checks
from gridlake.settings import Settings, get_settings
from gridlake.silver import jobs as jobs_tx
from gridlake.silver import network as net_tx
from gridlake.silver import nodes as nodes_tx
from gridlake.silver.common import (
    latest_per_key,
    quarantine_rows,
    valid_rows,
    with_content_hash,
    with_lineage,
)
from gridlake.silver.validate import parse_and_validate
from gridlake.tables import (
    BATCH_AUDIT,
    BRONZE,
    QUALITY_RESULTS,
    QUARANTINE_ACCOUNTING_SUMMARIES,
    QUARANTINE_JOBS,
    QUARANTINE_NETWORK,
    QUARANTINE_NODES,
    SILVER_ACCOUNTING_SUMMARIES,
    SILVER_JOB_NODE_FEATURES,
    SILVER_JOBS,
    SILVER_NETWORK,
    SILVER_NODE_DISK_SAMPLES,
    SILVER_NODE_SAMPLES,
    Table,
)

log = logging.getLogger(__name__)

APP_ID = "gridlake-refine"
# Batch-level breaker: a batch with more than this share quarantined is refused whole (a broken
# producer, not bad luck). Small batches are exempt: a handful of bad records is not a trend.
MAX_QUARANTINE_SHARE = float(os.environ.get("GRIDLAKE_MAX_QUARANTINE_SHARE", "0.5"))
BREAKER_MIN_ROWS = 100


@dataclass(frozen=True)
class Output:
    """One silver table a batch is MERGEd into: how to derive its rows from the clean batch."""

    table: Table
    keys: tuple[str, ...]
    rows: Callable[[DataFrame], DataFrame] = lambda df: df


@dataclass(frozen=True)
class RefineSpec:
    input: str
    validate: Callable[[DataFrame], DataFrame]
    clean: Callable[[SparkSession, DataFrame, str, Settings], DataFrame]
    keys: tuple[str, ...]
    outputs: tuple[Output, ...]
    quarantine: Table

    @property
    def main(self) -> Table:
        return self.outputs[0].table


def _clean_jobs(spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    from gridlake.cpu_models import reference_table

    return jobs_tx.clean_rows(v, batch, reference_table(spark))


def _clean_nodes(_spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    return nodes_tx.clean_node_rows(v, batch)


def _clean_summaries(_spark: SparkSession, v: DataFrame, batch: str, _s: Settings) -> DataFrame:
    alloc = F.col("wall_duration_seconds") * F.coalesce(F.col("processors"), F.lit(1))
    rows = (
        valid_rows(v)
        .withColumn("core_wall_seconds", alloc.cast("double"))
        .withColumn(
            "cpu_efficiency", F.try_divide(F.col("cpu_duration_seconds"), F.when(alloc > 0, alloc))
        )
    )
    return with_lineage(rows, batch)


def _clean_network(spark: SparkSession, v: DataFrame, batch: str, s: Settings) -> DataFrame:
    known = spark.read.format("delta").load(SILVER_NETWORK.path(s))
    directory = net_tx.site_directory(net_tx.valid_rows(v), known)
    return net_tx.clean_network_rows(v, batch, directory)


SPECS: dict[str, RefineSpec] = {
    "jobs": RefineSpec(
        "jobs",
        jobs_tx.validate_jobs,
        _clean_jobs,
        ("job_id",),
        (Output(SILVER_JOBS, ("job_id",)),),
        QUARANTINE_JOBS,
    ),
    "nodes": RefineSpec(
        "nodes",
        nodes_tx.validate_nodes,
        _clean_nodes,
        nodes_tx.NODE_KEYS,
        (
            Output(SILVER_NODE_SAMPLES, nodes_tx.NODE_KEYS),
            Output(SILVER_NODE_DISK_SAMPLES, nodes_tx.DISK_KEYS, nodes_tx.explode_disks),
        ),
        QUARANTINE_NODES,
    ),
    "accounting_summaries": RefineSpec(
        "accounting_summaries",
        lambda df: parse_and_validate(df, contract("accounting_summaries")),
        _clean_summaries,
        ("summary_key",),
        (Output(SILVER_ACCOUNTING_SUMMARIES, ("summary_key",)),),
        QUARANTINE_ACCOUNTING_SUMMARIES,
    ),
    "network": RefineSpec(
        "network",
        net_tx.validate_network,
        _clean_network,
        net_tx.NETWORK_KEYS,
        (Output(SILVER_NETWORK, net_tx.NETWORK_KEYS),),
        QUARANTINE_NETWORK,
    ),
}


@dataclass
class RefineStats:
    input: str = ""
    batches: int = 0
    bronze_rows: int = 0
    clean_rows: int = 0
    duplicate_rows: int = 0
    quarantined_rows: int = 0
    audit: list[dict[str, object]] = field(default_factory=list)


def _merge(
    spark: SparkSession, out: Output, rows: DataFrame, settings: Settings
) -> tuple[int, int]:
    target = DeltaTable.forPath(spark, out.table.path(settings))
    on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in out.keys)
    # Partition pruning: only the target partitions the batch touches are read, so the cost of
    # a batch does not grow with history. The batch's distinct partition values are few (dates
    # or weeks). For silver.jobs the partition (week) derives from end_time, which is not part of
    # the key: a re-sent record whose corrected end_time moves it to another ISO week would be
    # inserted there; `gridlake maintain` reports such job_ids (see README, known limits).
    for col in out.table.partition_by:
        values = [r[0] for r in rows.select(col).distinct().collect() if r[0] is not None]
        if values:
            literals = ", ".join(f"DATE'{v.isoformat()}'" for v in sorted(values))
            on += f" AND t.`{col}` IN ({literals})"
    # A matched row changes only for a newer record with different content: a re-sent copy (or
    # a replayed batch) is absorbed without touching the row.
    newer = (
        "(s._kafka_timestamp > t._kafka_timestamp OR (s._kafka_timestamp = t._kafka_timestamp"
        " AND s._kafka_offset > t._kafka_offset)) AND NOT (s._content_hash <=> t._content_hash)"
    )
    (
        target.alias("t")
        .merge(rows.alias("s"), on)
        .whenMatchedUpdateAll(condition=newer)
        .whenNotMatchedInsertAll()
        .execute()
    )
    row = target.history(1).select("operation", "operationMetrics").first()
    if row is None or row["operation"] != "MERGE":
        return 0, 0
    m = row["operationMetrics"] or {}
    return int(m.get("numTargetRowsInserted", 0)), int(m.get("numTargetRowsUpdated", 0))


def _append(df: DataFrame, table: Table, app: str, version: int, settings: Settings) -> None:
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app)
        .option("txnVersion", version)
        .save(table.path(settings))
    )


def _record_checks(
    spark: SparkSession,
    results: list[CheckResult],
    spec: RefineSpec,
    batch_id: str,
    batch_num: int,
    settings: Settings,
) -> None:
    if not results:
        return
    rows = [
        (
            batch_id,
            spec.main.full_name,
            r.check.kind,
            r.check.column,
            r.check.severity,
            r.success,
            r.detail,
        )
        for r in results
    ]
    schema = (
        "batch_id string, table_name string, check_kind string, check_column string, "
        "severity string, success boolean, detail string"
    )
    df = spark.createDataFrame(rows, schema).withColumn("checked_at", F.current_timestamp())
    _append(QUALITY_RESULTS.conform(df), QUALITY_RESULTS, f"{APP_ID}-{spec.input}-quality",
            batch_num, settings)  # fmt: skip


def process_batch(
    spark: SparkSession,
    spec: RefineSpec,
    bronze: DataFrame,
    batch_num: int,
    settings: Settings,
    stats: RefineStats,
) -> None:
    """Refine one micro-batch of bronze rows (see the module docstring)."""
    batch_id = f"{spec.input}-{batch_num}"
    validated = spec.validate(bronze).persist()
    try:
        bronze_rows = validated.count()
        candidates = spec.clean(spark, validated, batch_id, settings)
        clean = latest_per_key(candidates, spec.keys).persist()
        valid_count = candidates.count()
        clean_rows = clean.count()
        quarantined = bronze_rows - valid_count

        # Gate: the table's checks, then the batch-level breaker. Nothing written yet.
        results = run_checks(spec.main, clean)
        _record_checks(spark, results, spec, batch_id, batch_num, settings)
        failed = [r for r in results if not r.success and r.check.severity == "fail"]
        if failed:
            detail = "; ".join(f"{r.check.kind}({r.check.column}) {r.detail}" for r in failed)
            raise QualityGateError(f"quality gate failed for {spec.main.full_name}: {detail}")
        share = quarantined / bronze_rows if bronze_rows else 0.0
        if bronze_rows >= BREAKER_MIN_ROWS and share > MAX_QUARANTINE_SHARE:
            raise QualityGateError(
                f"quality gate failed for {spec.main.full_name}: {quarantined} of {bronze_rows} "
                f"records ({share:.0%}) would be quarantined, above the limit "
                f"{MAX_QUARANTINE_SHARE:.0%} (GRIDLAKE_MAX_QUARANTINE_SHARE); see "
                f"{spec.quarantine.full_name} reasons by re-running with a higher limit"
            )

        q = spec.quarantine.conform(quarantine_rows(validated, batch_id))
        _append(q, spec.quarantine, f"{APP_ID}-{spec.input}-quarantine", batch_num, settings)
        inserted = updated = 0
        for n, out in enumerate(spec.outputs):
            derived = out.rows(clean)
            content = [c for c in out.table.column_names if not c.startswith("_")]
            rows = out.table.conform(with_content_hash(derived, content))
            ins, upd = _merge(spark, out, rows, settings)
            if n == 0:
                inserted, updated = ins, upd
        audit = {
            "batch_id": batch_id,
            "input": spec.input,
            "bronze_rows": bronze_rows,
            "clean_rows": clean_rows,
            "duplicate_rows": valid_count - clean_rows,
            "quarantined_rows": quarantined,
            "inserted_rows": inserted,
            "updated_rows": updated,
        }
        audit_df = spark.createDataFrame([audit]).withColumn("finished_at", F.current_timestamp())
        _append(BATCH_AUDIT.conform(audit_df), BATCH_AUDIT, f"{APP_ID}-{spec.input}-audit",
                batch_num, settings)  # fmt: skip
        stats.batches += 1
        stats.bronze_rows += bronze_rows
        stats.clean_rows += clean_rows
        stats.duplicate_rows += valid_count - clean_rows
        stats.quarantined_rows += quarantined
        stats.audit.append(audit)
        log.info("refine %s: %s", batch_id, audit)
    finally:
        validated.unpersist()


def refine(spark: SparkSession, input_name: str, settings: Settings | None = None) -> RefineStats:
    """Refine everything new in bronze.<input>; returns the reconciliation of this run."""
    settings = settings or get_settings()
    spec = SPECS[input_name]
    for t in (BRONZE[input_name], *(o.table for o in spec.outputs), spec.quarantine,
              BATCH_AUDIT, QUALITY_RESULTS):  # fmt: skip
        t.ensure(spark, settings)
    stats = RefineStats(input=input_name)
    stream = (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", "64")
        .load(BRONZE[input_name].path(settings))
    )
    query = (
        stream.writeStream.foreachBatch(
            lambda df, n: process_batch(spark, spec, df, n, settings, stats)
        )
        .option("checkpointLocation", f"{settings.checkpoint_root}/silver_{input_name}")
        .queryName(f"silver_{input_name}")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return stats


def refine_jobs(spark: SparkSession, settings: Settings | None = None) -> RefineStats:
    return refine(spark, "jobs", settings)


def refresh_job_node_features(
    spark: SparkSession, batch_ids: list[str], settings: Settings | None = None
) -> list[str]:
    """Recompute silver.job_node_features for the weeks touched by the given refine batches.

    A week is touched when a job of it, or a node sample that jobs of it (or of the next week)
    could cover, was written by one of the batches. Only those weeks are rewritten
    (``replaceWhere``), so the cost follows the new data, not the history.
    """
    import datetime as dt

    from gridlake.silver.features import job_node_features

    settings = settings or get_settings()
    SILVER_JOB_NODE_FEATURES.ensure(spark, settings)
    if not batch_ids:
        return []
    # On a fresh warehouse the first refine (nodes, before jobs) finds no silver.jobs yet: the
    # join then has an empty side rather than failing after the node samples were committed.
    for table in (SILVER_JOBS, SILVER_NODE_SAMPLES, SILVER_NODE_DISK_SAMPLES):
        table.ensure(spark, settings)
    read = lambda t: spark.read.format("delta").load(t.path(settings))  # noqa: E731
    jobs, nodes, disks = (
        read(SILVER_JOBS),
        read(SILVER_NODE_SAMPLES),
        read(SILVER_NODE_DISK_SAMPLES),
    )
    touched = jobs.filter(F.col("_batch_id").isin(batch_ids)).select("week")
    sample_weeks = nodes.filter(F.col("_batch_id").isin(batch_ids)).select(
        F.to_date(F.date_trunc("week", "ts")).alias("week")
    )
    # Jobs last at most days: samples of week W can belong to jobs ending in W or W + 1.
    following = sample_weeks.select(F.date_add("week", 7).alias("week"))
    weeks = sorted(
        r.week for r in touched.union(sample_weeks).union(following).distinct().collect()
    )  # bounded: one row per week
    if not weeks:
        return []
    lo = min(weeks) - dt.timedelta(days=14)
    hi = max(weeks) + dt.timedelta(days=8)
    out = job_node_features(
        jobs.filter(F.col("week").isin(weeks)),
        nodes.filter(F.col("sample_date").between(lo, hi)),
        disks.filter(F.col("sample_date").between(lo, hi)),
    )
    in_weeks = ", ".join(f"DATE'{w.isoformat()}'" for w in weeks)
    (
        SILVER_JOB_NODE_FEATURES.conform(out)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", f"week IN ({in_weeks})")
        .save(SILVER_JOB_NODE_FEATURES.path(settings))
    )
    return [w.isoformat() for w in weeks]
