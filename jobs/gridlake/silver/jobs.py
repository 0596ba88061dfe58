"""silver.jobs transforms: pure DataFrame -> DataFrame functions."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.contracts import contract
from gridlake.reference.cpu_models import with_cpu_info
from gridlake.reference.failure_causes import cause_column
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


def with_benchmark(jobs: DataFrame, cpu_reference: DataFrame | None = None) -> DataFrame:
    """Add vendor, microarchitecture, cpu_match, hs23_per_core, hs23_source, hs23_core_hours.

    HS23 per core comes from the job's declared benchmark when it has one (an HS06 figure is
    taken 1:1: HEPscore23 was scaled to equal HS06 on the reference machines at the switch),
    else from the CPU-model reference table (exact model matches only; a family rule gives the
    microarchitecture but never a benchmark figure).
    """
    out = with_cpu_info(jobs, "cpu_model", cpu_reference)
    declared = F.col("benchmark_per_core").isNotNull() & F.col("benchmark_type").isin(
        "hs23", "hs06"
    )
    hs23 = F.when(declared, F.col("benchmark_per_core")).otherwise(F.col("reference_hs23_per_core"))
    source = F.when(declared, F.concat(F.lit("declared-"), F.col("benchmark_type"))).when(
        F.col("reference_hs23_per_core").isNotNull(), F.lit("reference")
    )
    return (
        out.withColumn("hs23_per_core", hs23)
        .withColumn("hs23_source", source)
        .withColumn("hs23_core_hours", hs23 * F.col("cores_wall_seconds") / 3600.0)
    )


def clean_rows(
    validated: DataFrame, batch_id: str, cpu_reference: DataFrame | None = None
) -> DataFrame:
    """Valid records with derived columns, the failure cause by the shipped rules
    (gridlake.reference.failure_causes) and lineage (duplicates not yet removed)."""
    derived = with_benchmark(derive_job_columns(valid_rows(validated)), cpu_reference)
    derived = derived.withColumn("failure_cause", cause_column())
    return with_lineage(derived, batch_id)
