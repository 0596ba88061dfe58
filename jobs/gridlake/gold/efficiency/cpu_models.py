"""gold.cpu_model_efficiency."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _success

# --------------------------------------------------------------------------------------------
# gold.cpu_model_efficiency
# --------------------------------------------------------------------------------------------


def cpu_model_efficiency(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (microarchitecture, cpu_model_norm, job_type)."""
    with_events = _success() & (F.col("events") > 0)
    per_event = F.when(with_events, F.col("cpu_seconds") / F.col("events"))
    hs23_per_event = per_event * F.col("hs23_per_core")
    agg = jobs.groupBy("microarchitecture", "cpu_model_norm", "job_type").agg(
        F.count(F.lit(1)).alias("jobs"),
        (F.sum("cores_wall_seconds") / 3600.0).alias("core_hours"),
        (F.sum("cpu_seconds") / 3600.0).alias("cpu_hours"),
        F.count(per_event).alias("jobs_with_events"),
        F.percentile_approx(per_event, [0.5, 0.9], 10000).alias("_pct"),
        F.percentile_approx(hs23_per_event, 0.5, 10000).alias("median_hs23_seconds_per_event"),
    )
    return agg.select(
        "microarchitecture",
        "cpu_model_norm",
        "job_type",
        "jobs",
        "core_hours",
        "cpu_hours",
        F.try_divide(
            F.col("cpu_hours"), F.when(F.col("core_hours") > 0, F.col("core_hours"))
        ).alias("cpu_efficiency"),
        "jobs_with_events",
        F.col("_pct")[0].alias("median_cpu_seconds_per_event"),
        F.col("_pct")[1].alias("p90_cpu_seconds_per_event"),
        "median_hs23_seconds_per_event",
    )
