"""silver.jobs transforms: pure DataFrame -> DataFrame functions."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.silver.validate import parse_and_validate

OUTLIER_TOLERANCE = 1.05


def validate_jobs(bronze: DataFrame) -> DataFrame:
    """Bronze rows of grid.jobs -> typed fields plus ``_reasons`` (empty when valid)."""
    return parse_and_validate(bronze, contract("jobs"))


def derive_job_columns(valid: DataFrame) -> DataFrame:
    """Add cpu_seconds, cores_wall_seconds, cpu_efficiency, is_outlier and week."""
    cpu = F.col("cpu_user_seconds") + F.col("cpu_system_seconds")
    alloc = F.col("wall_seconds") * F.col("cores")
    return (
        valid.withColumn("cpu_seconds", cpu)
        .withColumn("cores_wall_seconds", alloc)
        .withColumn("cpu_efficiency", F.try_divide(cpu, F.when(alloc > 0, alloc)))
        .withColumn("is_outlier", cpu > alloc * F.lit(OUTLIER_TOLERANCE))
        .withColumn("week", F.to_date(F.date_trunc("week", F.col("end_time"))))
    )


def latest_per_key(df: DataFrame, key: str) -> DataFrame:
    """Keep the newest record per key (by Kafka timestamp, then partition and offset).

    Re-sent records share the job_id key and so land in one partition in order.
    """
    order = Window.partitionBy(key).orderBy(
        F.col("_kafka_timestamp").desc(), F.col("_kafka_offset").desc()
    )
    return df.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")


def with_lineage(df: DataFrame, batch_id: str) -> DataFrame:
    return (
        df.withColumn("_kafka_partition", F.col("partition"))
        .withColumn("_kafka_offset", F.col("offset"))
        .withColumn("_kafka_timestamp", F.col("kafka_timestamp"))
        .withColumn("_batch_id", F.lit(batch_id))
        .withColumn("_refined_at", F.current_timestamp())
    )


def quarantine_rows(validated: DataFrame, batch_id: str) -> DataFrame:
    """Invalid records, verbatim, with every reason."""
    return validated.filter(F.size("_reasons") > 0).select(
        F.col("value").alias("raw"),
        F.col("_reasons").alias("reasons"),
        F.array_join("_reasons", "; ").alias("reason"),
        "topic",
        "partition",
        "offset",
        "kafka_timestamp",
        F.lit(batch_id).alias("batch_id"),
        F.current_timestamp().alias("quarantined_at"),
    )


def clean_rows(validated: DataFrame, batch_id: str) -> DataFrame:
    """Valid records with derived columns and lineage (duplicates not yet removed)."""
    valid = validated.filter(F.size("_reasons") == 0)
    return with_lineage(derive_job_columns(valid), batch_id)
