"""silver.jobs transforms: pure DataFrame -> DataFrame functions."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.silver.common import latest_per_key, quarantine_rows, valid_rows, with_lineage
from gridlake.silver.validate import parse_and_validate

__all__ = ["clean_rows", "derive_job_columns", "latest_per_key", "quarantine_rows", "validate_jobs"]

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


def clean_rows(validated: DataFrame, batch_id: str) -> DataFrame:
    """Valid records with derived columns and lineage (duplicates not yet removed)."""
    return with_lineage(derive_job_columns(valid_rows(validated)), batch_id)
