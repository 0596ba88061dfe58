"""bronze -> silver for jobs: validate, quarantine, gate, MERGE. The edge around the transforms.

Reads bronze.jobs incrementally (a Delta stream with availableNow and a checkpoint). Each
micro-batch: invalid records -> silver.quarantine_jobs (with reasons); valid records, newest per
job_id -> quality gate -> MERGE into silver.jobs (a re-sent record updates only when newer).
Appends carry Delta's idempotent-writer options (txnAppId, txnVersion) so a replayed batch after
a crash writes nothing twice; the MERGE is idempotent by construction. Every batch leaves a row in
silver.refine_audit: bronze_rows = clean_rows + duplicate_rows + quarantined_rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.quality import gate
from gridlake.settings import Settings, get_settings
from gridlake.silver import jobs as jobs_tx
from gridlake.tables import BRONZE, QUARANTINE_JOBS, REFINE_AUDIT, SILVER_JOBS

log = logging.getLogger(__name__)

APP_ID = "gridlake-refine-jobs"


@dataclass
class RefineStats:
    batches: int = 0
    bronze_rows: int = 0
    clean_rows: int = 0
    duplicate_rows: int = 0
    quarantined_rows: int = 0
    audit: list[dict[str, object]] = field(default_factory=list)


def _merge_metrics(spark: SparkSession, path: str) -> tuple[int, int]:
    last = DeltaTable.forPath(spark, path).history(1).select("operation", "operationMetrics")
    row = last.first()
    if row is None or row["operation"] != "MERGE":
        return 0, 0
    m = row["operationMetrics"] or {}
    return int(m.get("numTargetRowsInserted", 0)), int(m.get("numTargetRowsUpdated", 0))


def _process_batch(
    spark: SparkSession, bronze: DataFrame, batch_num: int, settings: Settings, stats: RefineStats
) -> None:
    batch_id = f"jobs-{batch_num}"
    validated = jobs_tx.validate_jobs(bronze).persist()
    try:
        bronze_rows = validated.count()
        quarantine = QUARANTINE_JOBS.conform(jobs_tx.quarantine_rows(validated, batch_id))
        candidates = jobs_tx.clean_rows(validated, batch_id)
        clean = SILVER_JOBS.conform(jobs_tx.latest_per_key(candidates, "job_id")).persist()
        valid_rows = candidates.count()
        clean_rows = clean.count()
        quarantined = bronze_rows - valid_rows

        gate(SILVER_JOBS, clean)  # raises before anything of this batch is written

        (
            quarantine.write.format("delta")
            .mode("append")
            .option("txnAppId", APP_ID + "-quarantine")
            .option("txnVersion", batch_num)
            .save(QUARANTINE_JOBS.path(settings))
        )
        target = DeltaTable.forPath(spark, SILVER_JOBS.path(settings))
        newer = (
            "s._kafka_timestamp > t._kafka_timestamp OR (s._kafka_timestamp = t._kafka_timestamp"
            " AND s._kafka_offset > t._kafka_offset)"
        )
        (
            target.alias("t")
            .merge(clean.alias("s"), "t.job_id = s.job_id")
            .whenMatchedUpdateAll(condition=newer)
            .whenNotMatchedInsertAll()
            .execute()
        )
        inserted, updated = _merge_metrics(spark, SILVER_JOBS.path(settings))
        audit = {
            "batch_id": batch_id,
            "input": "jobs",
            "bronze_rows": bronze_rows,
            "clean_rows": clean_rows,
            "duplicate_rows": valid_rows - clean_rows,
            "quarantined_rows": quarantined,
            "inserted_rows": inserted,
            "updated_rows": updated,
        }
        audit_df = spark.createDataFrame([audit]).withColumn("finished_at", F.current_timestamp())
        (
            REFINE_AUDIT.conform(audit_df)
            .write.format("delta")
            .mode("append")
            .option("txnAppId", APP_ID + "-audit")
            .option("txnVersion", batch_num)
            .save(REFINE_AUDIT.path(settings))
        )
        stats.batches += 1
        stats.bronze_rows += bronze_rows
        stats.clean_rows += clean_rows
        stats.duplicate_rows += valid_rows - clean_rows
        stats.quarantined_rows += quarantined
        stats.audit.append(audit)
        log.info("refine %s: %s", batch_id, audit)
    finally:
        validated.unpersist()


def refine_jobs(spark: SparkSession, settings: Settings | None = None) -> RefineStats:
    """Refine everything new in bronze.jobs; returns the reconciliation of this run."""
    settings = settings or get_settings()
    for t in (BRONZE["jobs"], SILVER_JOBS, QUARANTINE_JOBS, REFINE_AUDIT):
        t.ensure(spark, settings)
    stats = RefineStats()
    stream = (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", "64")
        .load(BRONZE["jobs"].path(settings))
    )
    query = (
        stream.writeStream.foreachBatch(lambda df, n: _process_batch(spark, df, n, settings, stats))
        .option("checkpointLocation", f"{settings.checkpoint_root}/silver_jobs")
        .queryName("silver_jobs")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return stats
