"""gold.site_efficiency_weekly: CPU efficiency per week, site and VO (ratios of sums)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


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
