"""gold.site_efficiency_weekly: CPU efficiency per week, site and VO (ratios of sums)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.tabledef import Check, Column, Table

GOLD_SITE_EFFICIENCY_WEEKLY = Table(
    database="gold",
    name="site_efficiency_weekly",
    grain="one row per week, site and vo.",
    description=(
        "CPU efficiency per site, VO and ISO week (ratios of sums over every job in silver, "
        "outliers included)."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week of the jobs' end_time (UTC)"),
        Column("site", "STRING", "Grid site"),
        Column("vo", "STRING", "Virtual organisation"),
        Column("jobs", "BIGINT", "Job attempts that ended in the week"),
        Column("failed_jobs", "BIGINT", "Attempts with status failed"),
        Column("outlier_jobs", "BIGINT", "Attempts flagged is_outlier (CPU > wall x cores x 1.05)"),
        Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "sum(cpu_user_seconds + cpu_system_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
        Column(
            "good_cpu_over_all_wall",
            "DOUBLE",
            "CPU hours of successful attempts / core-hours of all attempts (ATLAS definition)",
        ),
        Column("wasted_core_hours", "DOUBLE", "Core-hours of failed attempts"),
    ),
    checks=(
        Check("not_null", "week"),
        Check("not_null", "site"),
        Check("between", "jobs", {"min_value": 1}),
    ),
)


def site_efficiency_weekly(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (week, site, vo). Every job counts, outliers included."""
    failed = F.col("status") == "failed"
    success = F.col("status") == "success"
    agg = jobs.groupBy("week", "site", "vo").agg(
        F.count(F.lit(1)).alias("jobs"),
        F.count(F.when(failed, 1)).alias("failed_jobs"),
        F.count(F.when(F.col("is_outlier"), 1)).alias("outlier_jobs"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("core_hours"),
        (F.sum("cpu_seconds") / 3600.0).alias("cpu_hours"),
        (F.coalesce(F.sum(F.when(success, F.col("cpu_seconds"))), F.lit(0.0)) / 3600.0).alias(
            "_good_cpu_hours"
        ),
        (F.coalesce(F.sum(F.when(failed, F.col("cores_wall_seconds"))), F.lit(0.0)) / 3600.0).alias(
            "wasted_core_hours"
        ),
    )
    core_hours = F.when(F.col("core_hours") > 0, F.col("core_hours"))
    return agg.select(
        "week",
        "site",
        "vo",
        "jobs",
        "failed_jobs",
        "outlier_jobs",
        "core_hours",
        "cpu_hours",
        F.try_divide(F.col("cpu_hours"), core_hours).alias("cpu_efficiency"),
        F.try_divide(F.col("_good_cpu_hours"), core_hours).alias("good_cpu_over_all_wall"),
        "wasted_core_hours",
    )
